/* release_test.c: once every weight is in backend memory (a backend with weight_upload),
 * the loader gives the mapped checkpoint's pages back to the kernel (load.c,
 * hy_fmap_release). A stand-in device backend (the CPU backend's ops, with a weight_upload
 * that copies each weight into its own memory, dtype kept) loads tiny-dense18: the
 * resident size of the model file's mapping (/proc/self/smaps) must be 0 kB after the
 * load, where the plain CPU backend, which reads the mapping, holds all of it; the two
 * models give the same logits bit for bit, and the released mapping still reads the same
 * bytes (paged in again). */
#include "backend/cpu/cpu.h"
#include "formats/safetensors.h"
#include "model/hunyuan.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct hy_backend_i dev_iface; /* the CPU ops, weight_upload added */

static hy_status copy_upload(struct hy_backend *be, struct hy_weight *w, struct hy_err *err)
{
    const size_t bytes = (size_t)(w->rows * w->cols / hy_dtype_block_elems(w->dtype)) *
                         hy_dtype_size(w->dtype);
    void *p = be->i->alloc(be, bytes);
    if (!p)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    memcpy(p, w->data, bytes);
    w->data = p;
    return HY_OK;
}

/* Resident kB of every mapping of a file whose path ends with `tail`; -1 when none. */
static long mapped_rss_kb(const char *tail)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[4352];
    long kb = -1;
    bool in = false;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        size_t n = strcspn(line, "\n");
        line[n] = 0;
        long v;
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) /* a mapping's header line */
            in = n >= strlen(tail) && !strcmp(line + n - strlen(tail), tail);
        else if (in && sscanf(line, "Rss: %ld kB", &v) == 1)
            kb = (kb < 0 ? 0 : kb) + v;
    }
    fclose(f);
    return kb;
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

int main(void)
{
    const char *tail = "/tiny-dense18/model.safetensors";
    char dir[4096], file[4200];
    test_path(dir, sizeof dir, "HYMT_SRC", "tests/data/tiny-dense18");
    snprintf(file, sizeof file, "%s/model.safetensors", dir);
    struct stat sb;
    CHECK(stat(file, &sb) == 0 && sb.st_size > 64 * 1024);
    struct hy_backend *cpu = NULL, *dev = NULL;
    struct hy_err err = {{0}};
    CHECKF(hy_cpu_backend_create(&cpu, 1, &err) == HY_OK &&
               hy_cpu_backend_create(&dev, 1, &err) == HY_OK, "%s", err.msg);
    if (!cpu || !dev)
        return test_result();
    dev_iface = *dev->i;
    dev_iface.weight_upload = copy_upload;
    dev->i = &dev_iface;

    struct hy_model *md = NULL, *mc = NULL;
    CHECKF(hy_model_load(&md, dir, dev, &err) == HY_OK, "%s", err.msg);
    const long released = mapped_rss_kb(tail);
    CHECKF(md && md->weights_uploaded, "the stand-in device backend got the weights");
    CHECKF(released == 0, "after the upload the checkpoint mapping holds %ld kB (want 0)",
           released);
    CHECKF(hy_model_load(&mc, dir, cpu, &err) == HY_OK, "%s", err.msg);
    const long held = mapped_rss_kb(tail); /* both mappings: the CPU model's is populated */
    CHECKF(held >= (long)(sb.st_size / 1024) - 4, "the CPU model's mapping holds %ld kB of "
           "a %lld-byte file", held, (long long)sb.st_size);
    fprintf(stderr, "model.safetensors (%lld bytes) resident: %ld kB after an upload, %ld kB "
            "with the CPU model's mapping too\n", (long long)sb.st_size, released, held);
    if (md && mc) {
        const int64_t V = mc->cfg.vocab_size;
        float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
        HY_ASSERT(a && b);
        forward(md, a);
        forward(mc, b);
        CHECK(memcmp(a, b, (size_t)V * sizeof *a) == 0);
        bool nonzero = false;
        for (int64_t i = 0; i < V; i++)
            nonzero |= a[i] != 0;
        CHECK(nonzero);
        /* the released mapping reads the same bytes as the copy (paged in again) */
        const struct hy_st_tensor *t = hy_st_find(md->st, "model.embed_tokens.weight");
        CHECK(t && md->tok_embd.data != t->data &&
              memcmp(md->tok_embd.data, t->data, (size_t)t->nbytes) == 0);
        free(a);
        free(b);
    }
    hy_model_destroy(md);
    hy_model_destroy(mc);
    cpu->i->destroy(cpu);
    dev->i = &dev_iface; /* destroy through the CPU's own op, copied */
    dev->i->destroy(dev);
    return test_result();
}
