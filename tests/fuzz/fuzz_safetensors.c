/* fuzz_safetensors.c: any bytes as a .safetensors file (hy_st_open_file). It opens or fails
 * with a message naming the file; an opened one has every tensor inside the file with a
 * size that matches its shape and dtype, and every byte of it is readable. */
#include "formats/safetensors.h"
#include "fuzz/fuzz_util.h"

static void touch(const void *p, size_t n)
{
    volatile unsigned char sink = 0;
    for (size_t i = 0; i < n; i += 64)
        sink ^= ((const unsigned char *)p)[i];
    if (n)
        sink ^= ((const unsigned char *)p)[n - 1];
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_file(data, size);
    struct hy_st *st = NULL;
    struct hy_err err = {{0}};
    if (hy_st_open_file(&st, path, &err) != HY_OK) {
        FZ_ERR_NAMES(err, path);
        return 0;
    }
    size_t total = 0;
    for (size_t i = 0; i < hy_st_count(st); i++) {
        const struct hy_st_tensor *t = hy_st_at(st, i);
        FZ_ASSERT(t->n_dims >= 0 && t->n_dims <= HY_ST_MAX_DIMS, "n_dims %d", t->n_dims);
        int64_t n = 1;
        for (int d = 0; d < t->n_dims; d++)
            n *= t->shape[d];
        FZ_ASSERT(n == t->n_elems && t->nbytes == (size_t)n * hy_dtype_size(t->dtype),
                  "%s: size does not match shape", t->name);
        touch(t->data, t->nbytes);
        total += t->nbytes;
    }
    for (size_t i = 0; i < hy_st_int_count(st); i++)
        touch(hy_st_int_at(st, i)->data, hy_st_int_at(st, i)->nbytes);
    FZ_ASSERT(total <= size, "tensors larger than the file");
    hy_st_close(st);
    return 0;
}
