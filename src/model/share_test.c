/* share_test.c: a second model loaded beside a first one shares every weight whose
 * checkpoint tensor is identical (hy_model_opts.share_from, model/share.h). tiny-mqa
 * loaded twice shares all 25 slots, on the CPU backend (the first model's mapped file)
 * and on a stand-in device backend (the CPU ops with a counting weight_upload: no upload
 * at all for the second model); a copy of tiny-mqa with one byte of one tensor changed,
 * at a place the sampled hash does not read, shares all but that slot (the full compare
 * caught it) and gives other logits. Freeing the second model before the first frees
 * nothing twice (ASan). */
#include "backend/cpu/cpu.h"
#include "formats/safetensors.h"
#include "model/hunyuan.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct hy_backend_i dev_iface; /* the CPU ops, weight_upload added */
static int n_uploads;

static hy_status copy_upload(struct hy_backend *be, struct hy_weight *w, struct hy_err *err)
{
    const size_t bytes = hy_dtype_row_bytes(w->dtype, w->cols) * (size_t)w->rows;
    void *p = be->i->alloc(be, bytes);
    if (!p)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    memcpy(p, w->data, bytes);
    w->data = p;
    n_uploads++;
    return HY_OK;
}

static void forward(const struct hy_model *m, float *logits)
{
    static const int32_t ids[7] = {305, 3, 77, 250, 12, 319, 8};
    struct hy_ctx *c = NULL;
    struct hy_err err = {{0}};
    CHECKF(hy_ctx_create(&c, m, 16, 7, &err) == HY_OK &&
               hy_model_forward(c, ids, 7, false, logits, &err) == HY_OK, "%s", err.msg);
    hy_ctx_destroy(c);
}

static hy_status load(struct hy_model **m, const char *dir, struct hy_backend *be,
                      const struct hy_model *from)
{
    struct hy_model_opts o = {.share_from = from};
    struct hy_err err = {{0}};
    hy_status st = hy_model_load_opts(m, dir, be, &o, &err);
    CHECKF(st == HY_OK, "%s", err.msg);
    return st;
}

static bool same_logits(const struct hy_model *a, const struct hy_model *b)
{
    const int64_t V = a->cfg.vocab_size;
    float *x = calloc((size_t)V, sizeof *x), *y = calloc((size_t)V, sizeof *y);
    HY_ASSERT(x && y);
    forward(a, x);
    forward(b, y);
    bool nonzero = false;
    for (int64_t i = 0; i < V; i++)
        nonzero |= x[i] != 0;
    CHECK(nonzero);
    bool same = memcmp(x, y, (size_t)V * sizeof *x) == 0;
    free(x);
    free(y);
    return same;
}

/* Copies config.json and model.safetensors of src into dst, with one byte of tensor
 * `name` flipped at offset `at` of its data. */
static void changed_copy(const char *src, const char *dst, const char *name, size_t at)
{
    char a[4200], b[4200];
    mkdir(dst, 0755);
    const char *files[] = {"config.json", "model.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/%s", src, files[i]);
        snprintf(b, sizeof b, "%s/%s", dst, files[i]);
        FILE *f = fopen(a, "rb"), *g = fopen(b, "wb");
        HY_ASSERT(f && g);
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            HY_ASSERT(fwrite(buf, 1, n, g) == n);
        fclose(f);
        fclose(g);
    }
    struct hy_st *st = NULL;
    struct hy_err err = {{0}};
    HY_ASSERT(hy_st_open(&st, src, &err) == HY_OK);
    const struct hy_st_tensor *t = hy_st_find(st, name);
    HY_ASSERT(t && at < t->nbytes);
    /* the tensor's offset in the file: find its first 64 bytes (random weights: unique) */
    snprintf(a, sizeof a, "%s/model.safetensors", src);
    FILE *f = fopen(a, "rb");
    HY_ASSERT(f);
    static char whole[1 << 20];
    size_t len = fread(whole, 1, sizeof whole, f);
    fclose(f);
    char *hit = memmem(whole, len, t->data, 64);
    HY_ASSERT(hit && !memmem(hit + 1, len - (size_t)(hit + 1 - whole), t->data, 64));
    long off = (long)(hit - whole) + (long)at;
    hy_st_close(st);
    FILE *g = fopen(b, "r+b");
    HY_ASSERT(g && fseek(g, off, SEEK_SET) == 0);
    int c = fgetc(g);
    HY_ASSERT(c != EOF && fseek(g, off, SEEK_SET) == 0);
    fputc(c ^ 0x40, g);
    fclose(g);
}

int main(void)
{
    char dir[4096], other[4096];
    test_path(dir, sizeof dir, "HYMT_SRC", "tests/data/tiny-mqa");
    test_path(other, sizeof other, "HYMT_BIN", "share_test_model");
    struct hy_backend *cpu = NULL, *dev1 = NULL, *dev2 = NULL;
    struct hy_err err = {{0}};
    CHECKF(hy_cpu_backend_create(&cpu, 1, &err) == HY_OK &&
               hy_cpu_backend_create(&dev1, 1, &err) == HY_OK &&
               hy_cpu_backend_create(&dev2, 1, &err) == HY_OK, "%s", err.msg);
    if (!cpu || !dev1 || !dev2)
        return test_result();
    dev_iface = *dev1->i;
    dev_iface.weight_upload = copy_upload;
    const struct hy_backend_i *cpu_iface = dev1->i;
    dev1->i = dev2->i = &dev_iface;

    /* CPU: the second model points into the first one's mapped file */
    struct hy_model *a = NULL, *b = NULL;
    if (!load(&a, dir, cpu, NULL) && !load(&b, dir, cpu, a)) {
        CHECKF(a->n_shared == 0 && b->n_slots == 3 + 11 * 2 && b->n_shared == b->n_slots,
               "%d of %d shared", b->n_shared, b->n_slots);
        CHECK(b->layers[1].w_down.data == a->layers[1].w_down.data &&
              b->tok_embd.data == a->tok_embd.data && b->lm_head.data == a->tok_embd.data);
        CHECK(b->shared_bytes > 300000); /* the whole 327,680 bytes of bf16 weights */
        CHECK(same_logits(a, b));
    }
    hy_model_destroy(b);
    hy_model_destroy(a);

    /* a device backend: the second model uploads nothing */
    a = b = NULL;
    if (!load(&a, dir, dev1, NULL)) {
        int first = n_uploads;
        CHECK(a->weights_uploaded && first == 2 + 11 * 2); /* tied head: one copy */
        if (!load(&b, dir, dev2, a)) {
            CHECKF(n_uploads == first, "%d uploads for the second model", n_uploads - first);
            CHECK(b->n_shared == b->n_slots && b->tok_embd.data == a->tok_embd.data);
            CHECK(same_logits(a, b));
        }
    }
    hy_model_destroy(b);
    hy_model_destroy(a);

    /* one byte differs, outside the sampled pieces (16 KiB tensor: 0-4 KiB, 6-8 KiB and
     * 12-16 KiB are sampled): only the full compare sees it */
    changed_copy(dir, other, "model.layers.0.mlp.up_proj.weight", 5000);
    a = b = NULL;
    if (!load(&a, dir, cpu, NULL) && !load(&b, other, cpu, a)) {
        CHECKF(b->n_shared == b->n_slots - 1, "%d of %d shared", b->n_shared, b->n_slots);
        CHECK(b->layers[0].w_up.data != a->layers[0].w_up.data &&
              b->layers[0].w_gate.data == a->layers[0].w_gate.data);
        CHECK(!same_logits(a, b));
    }
    hy_model_destroy(b);
    hy_model_destroy(a);
    /* a different quantization shares nothing */
    a = b = NULL;
    struct hy_model_opts q8 = {.quant = HY_DTYPE_Q8_0};
    if (!load(&a, dir, cpu, NULL)) {
        q8.share_from = a;
        CHECKF(hy_model_load_opts(&b, dir, cpu, &q8, &err) == HY_OK, "%s", err.msg);
        CHECK(b && b->n_shared == 0);
    }
    hy_model_destroy(b);
    hy_model_destroy(a);

    test_rmtree(other);
    cpu->i->destroy(cpu);
    dev1->i = dev2->i = cpu_iface;
    dev1->i->destroy(dev1);
    dev2->i->destroy(dev2);
    return test_result();
}
