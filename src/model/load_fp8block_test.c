/* load_fp8block_test.c: quant_method "fp8" checkpoints with block scales (transformers'
 * FineGrainedFP8, DeepSeek-V3's layout, the form the Hy-MT2-30B-A3B-FP8 repo's tags point
 * to), dense (tests/data/tiny-mqa) and hy_v3 (tests/data/tiny-hyv3), on the CPU.
 *
 * The checkpoints are made here from the bf16 ones: for each <x>_proj.weight W [out, in]
 * and block (i, j) of br x bc weights (the last row and column blocks shorter when out or
 * in is not a multiple), scale_inv[i][j] = max|W in the block| / 448 (1 where that is 0),
 * codes = e4m3(clamp(W / scale_inv, +-448)); weight F8_E4M3, weight_scale_inv F32
 * [ceil(out/br), ceil(in/bc)]; one projection left bf16 and named in modules_to_not_convert;
 * the router, the expert bias, norms and embeddings as stored. Checks:
 *  - every projection the loader made equals bf16(e4m3(code) * scale_inv[r/br][c/bc]),
 *    computed here weight by weight; the logits of the prompt and 24 greedy steps are
 *    identical bit for bit to those of a bf16 checkpoint holding those values (same weights,
 *    same kernels: anything but 0 is a loading bug), also both loaded with --quant q8
 *    (128x128); the data is not all zero;
 *  - 128x128 blocks (tiny-mqa's q_proj has 256 rows, o_proj 256 columns: two blocks and a
 *    64-wide tail the other way) and 48x40 blocks (tails in both directions everywhere),
 *    and a 300x260 tensor at 128x128 through hy_load_quant_prepare; quant_method "fp8"
 *    without a block size (AutoFP8: one weight_scale a tensor) read as per-tensor fp8;
 *  - against the original bf16 model (128x128). Dense: mean cosine >= 0.99, each position
 *    >= 0.98, top-1 agreement on >= 24 of the 32 positions (measured 0.9957, 0.987, 27/32).
 *    Why: e4m3 keeps 3 mantissa bits, so a weight moves by at most 1/16 of itself (round to
 *    nearest) and by about 2.5-3% RMS, independently; a block's scale only sets the exponent
 *    range, so block scales cannot do worse than the per-tensor scale load_quant_test bounds
 *    the same way (this random tiny model amplifies weight noise ~3.5x into its logits: ~10%
 *    logit error, cosine ~0.995; top-1 flips where its two best logits are closer than
 *    that). hy_v3: mean cosine >= 0.90, top-1 >= 18 of 32 (measured 0.944, 22/32), no
 *    per-position bound: the weight noise moves router scores far more than the gaps at
 *    the k-th biased score (3.2e-4 at the smallest in the goldens' 1764 token-layers), so
 *    some tokens pick another expert and their positions change wholesale (measured min
 *    0.58), as q4 does (hy_v3_test: mean 0.918). The exact comparison above is what proves
 *    the loading; these bound the format's loss;
 *  - bad files, each a one-line error naming the tensor: a missing weight_scale_inv, a wrong
 *    shape, dtype or value, weight_scale where block scales are configured (and the other
 *    way), one scale too many, a scale beside a bf16 weight, a 3-D fp8 tensor, a hy_v3
 *    expert's missing scale. */
#include "backend/cpu/cpu.h"
#include "core/fp8.h"
#include "model/hunyuan.h"
#include "model/load_quant.h"
#include "test.h"
#include "logits_util.h"
#include "ckpt_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_PROMPT 9
#define N_STEPS 24

static const int32_t ids[N_PROMPT] = {305, 3, 77, 250, 12, 319, 8, 8, 130};
static char root[64], mqa_dir[4096], hyv3_dir[4096];
static struct hy_backend *be;

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

static float at_f32(const struct ck_tensor *t, int64_t i)
{
    int d = hy_dtype_parse(t->dtype);
    HY_ASSERT(d >= 0);
    float f;
    hy_dtype_to_f32(&f, t->data + (size_t)i * hy_dtype_size((enum hy_dtype)d),
                    (enum hy_dtype)d, 1);
    return f;
}

/* W of c becomes fp8 codes + weight_scale_inv in br x bc blocks; deq gets the bf16 values
 * the loader must produce, computed weight by weight. */
static void block_quantize(struct ckpt *c, struct ckpt *deq, const char *wname, int64_t br,
                           int64_t bc)
{
    struct ck_tensor *w = ck_find(c, wname);
    HY_ASSERT(w && w->nd == 2);
    const int64_t rows = w->shape[0], cols = w->shape[1];
    const int64_t nbr = (rows + br - 1) / br, nbc = (cols + bc - 1) / bc;
    float *sc = calloc((size_t)(nbr * nbc), sizeof *sc);
    uint8_t *codes = malloc((size_t)(rows * cols));
    HY_ASSERT(sc && codes);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) {
            float *s = &sc[(r / br) * nbc + k / bc];
            *s = fmaxf(*s, fabsf(at_f32(w, r * cols + k)));
        }
    for (int64_t i = 0; i < nbr * nbc; i++)
        sc[i] = sc[i] > 0 ? sc[i] / 448.0f : 1.0f;
    struct ck_tensor *d = ck_find(deq, wname);
    HY_ASSERT(d && !strcmp(d->dtype, "BF16"));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) {
            float s = sc[(r / br) * nbc + k / bc];
            float v = fminf(fmaxf(at_f32(w, r * cols + k) / s, -448.0f), 448.0f);
            codes[r * cols + k] = hy_fp8_e4m3_from_f32(v);
            uint16_t b = hy_f32_to_bf16(hy_fp8_e4m3_to_f32(codes[r * cols + k]) * s);
            memcpy(d->data + 2 * (r * cols + k), &b, 2);
        }
    int64_t shape[2] = {rows, cols}, sshape[2] = {nbr, nbc};
    ck_drop(c, wname);
    memcpy(ck_add(c, wname, "F8_E4M3", 2, shape)->data, codes, (size_t)(rows * cols));
    char sname[HY_ST_MAX_NAME + 8];
    snprintf(sname, sizeof sname, "%.*s_scale_inv", (int)strlen(wname), wname);
    memcpy(ck_add(c, sname, "F32", 2, sshape)->data, sc, (size_t)(nbr * nbc) * sizeof *sc);
    free(sc);
    free(codes);
}

/* Every <x>_proj.weight of src but `keep` in fp8 blocks (into out), and the bf16 values the
 * loader must produce (into deq). */
static void make_fp8(const struct ckpt *src, const char *keep, int64_t br, int64_t bc,
                     struct ckpt *out, struct ckpt *deq)
{
    ck_copy(out, src);
    ck_copy(deq, src);
    for (int i = 0; i < src->n; i++) {
        const char *name = src->t[i].name;
        if (ends_with(name, "_proj.weight") && strncmp(name, keep, strlen(keep)))
            block_quantize(out, deq, name, br, bc);
    }
}

static void qc_text(char *buf, size_t cap, int br, int bc, const char *keep)
{
    snprintf(buf, cap, "{\"quant_method\": \"fp8\", \"activation_scheme\": \"dynamic\", \"fmt\": "
             "\"e4m3\", \"weight_block_size\": [%d, %d], \"modules_to_not_convert\": [\"%s\"]}",
             br, bc, keep);
}

/* Every <x>_proj.weight of m's set equals deq's tensor of that name (bf16, byte for byte). */
static void check_set(const struct hy_model *m, const struct ckpt *deq, const char *what)
{
    int bad = 0, n = 0, nonzero = 0;
    for (int i = 0; i < deq->n; i++) {
        const struct ck_tensor *d = &deq->t[i];
        if (!ends_with(d->name, "_proj.weight"))
            continue;
        const struct hy_st_tensor *t = hy_st_find(m->st, d->name);
        bool ok = t && t->dtype == HY_DTYPE_BF16 && t->nbytes == d->nbytes &&
                  !memcmp(t->data, d->data, d->nbytes);
        for (size_t k = 0; k < d->nbytes && !nonzero; k++)
            nonzero = d->data[k] != 0;
        if (!ok && bad++ < 3)
            fprintf(stderr, "%s: %s is not bf16(e4m3 * scale_inv)\n", what, d->name);
        n++;
    }
    CHECKF(bad == 0 && n > 0 && nonzero, "%s: %d of %d projections differ", what, bad, n);
}

/* b's logits against a's on a's greedy continuation: cosines (mean, each position) and top-1
 * agreement at least these. */
static void compare_loss(const struct hy_model *a, const struct hy_model *b, double min_mean,
                         double min_pos, int min_agree, const char *what)
{
    if (!a || !b)
        return;
    tu_compare(a, b, ids, N_PROMPT, N_STEPS, false, min_mean, min_pos, what);
    const int64_t V = a->cfg.vocab_size, npos = N_PROMPT + N_STEPS - 1;
    float *la = malloc((size_t)(npos * V) * 4), *lb = malloc((size_t)(npos * V) * 4);
    int32_t ga[N_STEPS], gb[N_STEPS];
    HY_ASSERT(la && lb);
    tu_run(a, ids, N_PROMPT, N_STEPS, la, NULL, ga);
    tu_run(b, ids, N_PROMPT, N_STEPS, lb, ga, gb);
    int agree = 0;
    for (int64_t p = 0; p < npos; p++)
        agree += tu_argmax(la + p * V, V) == tu_argmax(lb + p * V, V);
    CHECKF(agree >= min_agree, "%s: top-1 agrees on %d of %lld positions (< %d)", what, agree,
           (long long)npos, min_agree);
    free(la);
    free(lb);
}

/* One architecture at one block size: exact against the dequantized checkpoint, and (with
 * loss) the format's loss against the original. */
static void run_case(const char *src_dir, const char *keep, int br, int bc, bool loss,
                     const char *what)
{
    struct ckpt src = {0}, fp8 = {0}, deq = {0};
    char dir[256], ddir[256], qc[512];
    ck_read(&src, src_dir);
    make_fp8(&src, keep, br, bc, &fp8, &deq);
    qc_text(qc, sizeof qc, br, bc, keep);
    snprintf(dir, sizeof dir, "%s/%s-%dx%d", root, what, br, bc);
    snprintf(ddir, sizeof ddir, "%s/%s-%dx%d-deq", root, what, br, bc);
    ck_write(&fp8, dir, src_dir, qc, NULL);
    ck_write(&deq, ddir, src_dir, NULL, NULL);
    struct hy_model *m = ck_load(be, dir, HY_DTYPE_F32), *d = ck_load(be, ddir, HY_DTYPE_F32);
    if (m) {
        check_set(m, &deq, dir);
        struct hy_load_quant_view v; /* block scales: no per-row fp8 view for a device */
        int i = 0;
        while (i < fp8.n && strcmp(fp8.t[i].dtype, "F8_E4M3"))
            i++;
        CHECK(i < fp8.n && !hy_load_quant_fp8_view(m->st, fp8.t[i].name, &v));
    }
    tu_compare(m, d, ids, N_PROMPT, N_STEPS, true, 0, 0, dir);
    if (loss) { /* --quant q8 then applies as to the bf16 checkpoint: the same q8 model */
        struct hy_model *m8 = ck_load(be, dir, HY_DTYPE_Q8_0);
        struct hy_model *d8 = ck_load(be, ddir, HY_DTYPE_Q8_0);
        char w[300];
        snprintf(w, sizeof w, "%s --quant q8", dir);
        tu_compare(m8, d8, ids, N_PROMPT, N_STEPS, true, 0, 0, w);
        hy_model_destroy(m8);
        hy_model_destroy(d8);
    }
    if (loss) {
        struct hy_model *b = ck_load(be, src_dir, HY_DTYPE_F32);
        char w[160];
        snprintf(w, sizeof w, "%s fp8 %dx%d blocks vs bf16", what, br, bc);
        if (b && b->cfg.arch == HY_ARCH_HYV3)
            compare_loss(b, m, 0.90, -1.0, 18, w);
        else
            compare_loss(b, m, 0.99, 0.98, 24, w);
        hy_model_destroy(b);
    }
    hy_model_destroy(m);
    hy_model_destroy(d);
    ck_free(&src);
    ck_free(&fp8);
    ck_free(&deq);
}

/* quant_method "fp8" without weight_block_size (AutoFP8's form): one weight_scale a
 * tensor, read as the compressed-tensors per-tensor form, the fp8 view kept. */
static void test_autofp8(void)
{
    struct ckpt src = {0}, fp8 = {0}, deq = {0};
    char dir[256], sname[HY_ST_MAX_NAME];
    ck_read(&src, mqa_dir);
    make_fp8(&src, "none", 1 << 20, 1 << 20, &fp8, &deq); /* one block: the whole tensor */
    for (int i = 0; i < fp8.n; i++)
        if (ends_with(fp8.t[i].name, "_scale_inv")) {
            snprintf(sname, sizeof sname, "%.*s", (int)strlen(fp8.t[i].name) - 4, fp8.t[i].name);
            memcpy(fp8.t[i].name, sname, strlen(sname) + 1);
        }
    snprintf(dir, sizeof dir, "%s/autofp8", root);
    ck_write(&fp8, dir, mqa_dir, "{\"quant_method\": \"fp8\", \"activation_scheme\": \"dynamic\"}",
             NULL);
    struct hy_model *m = ck_load(be, dir, HY_DTYPE_F32);
    if (m) {
        check_set(m, &deq, dir);
        struct hy_load_quant_view v;
        CHECK(hy_load_quant_fp8_view(m->st, "model.layers.1.mlp.up_proj.weight", &v) &&
              v.n_scale == 1 && v.rows == 128 && v.cols == 64);
    }
    hy_model_destroy(m);
    ck_free(&src);
    ck_free(&fp8);
    ck_free(&deq);
}

/* c written as root/name (tiny-mqa's config, br x br blocks, lm_head kept) and opened with
 * hy_load_quant_prepare(quant, keep_blocks); NULL with a failed check. */
static struct hy_st *write_prepare(const struct ckpt *c, const char *name, int br,
                                   enum hy_dtype quant, bool keep_blocks)
{
    char dir[256], qc[512], path[4200];
    qc_text(qc, sizeof qc, br, br, "lm_head");
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    ck_write(c, dir, mqa_dir, qc, NULL);
    struct hy_st *st = NULL;
    struct hy_config cfg;
    struct hy_err e = {{0}};
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECKF(hy_config_load(&cfg, path, &e) == HY_OK, "%s", e.msg);
    CHECKF(hy_st_open(&st, dir, &e) == HY_OK, "%s", e.msg);
    if (st && hy_load_quant_prepare(st, dir, &cfg, quant, false, keep_blocks, &e) != HY_OK) {
        CHECKF(false, "%s: %s", name, e.msg);
        hy_st_close(st);
        st = NULL;
    }
    return st;
}

/* A 300 x 260 tensor at 128x128 (tails of 44 rows and 4 columns) through
 * hy_load_quant_prepare: the put tensor equals the weight-by-weight values. */
static void test_prepare_tails(void)
{
    struct ckpt c = {0}, deq = {0};
    ck_read(&c, mqa_dir);
    int64_t shape[2] = {300, 260};
    struct ck_tensor *w = ck_add(&c, "model.extra.weight", "BF16", 2, shape);
    uint32_t x = 12345;
    for (int64_t i = 0; i < 300 * 260; i++) { /* values over 2^-8 .. 2^4, both signs */
        x = x * 1664525u + 1013904223u;
        float v = ldexpf((float)(x >> 8) / 16777216.0f + 0.5f, (int)(x % 13) - 8);
        uint16_t b = hy_f32_to_bf16((x & 1) ? -v : v);
        memcpy(w->data + 2 * i, &b, 2);
    }
    ck_copy(&deq, &c);
    block_quantize(&c, &deq, "model.extra.weight", 128, 128);
    struct hy_st *st = write_prepare(&c, "extra", 128, HY_DTYPE_F32, false);
    if (st) {
        const struct hy_st_tensor *t = hy_st_find(st, "model.extra.weight");
        const struct ck_tensor *d = ck_find(&deq, "model.extra.weight");
        CHECK(t && t->dtype == HY_DTYPE_BF16 && t->nbytes == d->nbytes &&
              !memcmp(t->data, d->data, d->nbytes));
        const struct ck_tensor *s = ck_find(&c, "model.extra.weight_scale_inv");
        CHECK(s && s->shape[0] == 3 && s->shape[1] == 3 && at_f32(s, 0) != at_f32(s, 8));
        hy_st_close(st);
    }
    ck_free(&c);
    ck_free(&deq);
}

/* The extra projections of test_prepare_keep: kept where keep_blocks applies, or not
 * (columns off 16, no layer projection). Each has short last blocks both ways. */
static const char *const xnames[3] = {"model.layers.0.mlp.xa_proj.weight",
                                      "model.layers.0.mlp.xb_proj.weight",
                                      "model.extra_proj.weight"};

/* Every projection of src in the prepared set st: kept (keep, but for xnames 1 and 2) as
 * F8_B128 with the file's codes and scales (c's), bound as such; else deq's bf16. */
static void check_keep(struct hy_st *st, const struct ckpt *src, struct ckpt *c, struct ckpt *deq,
                       bool keep, const char *what)
{
    struct hy_err e = {{0}};
    int n_kept = 0, n_deq = 0;
    for (int i = 0; i < src->n; i++) {
        const char *name = src->t[i].name;
        if (!ends_with(name, "_proj.weight"))
            continue;
        const struct hy_st_tensor *t = hy_st_find(st, name), *f = hy_st_find_stored(st, name);
        const struct ck_tensor *d = ck_find(deq, name);
        char sname[HY_ST_MAX_NAME + 16];
        snprintf(sname, sizeof sname, "%s_scale_inv", name);
        const struct ck_tensor *fs = ck_find(c, sname);
        if (!keep || !strcmp(name, xnames[1]) || !strcmp(name, xnames[2])) {
            n_deq++;
            CHECKF(t && t->dtype == HY_DTYPE_BF16 && t->nbytes == d->nbytes &&
                       !memcmp(t->data, d->data, d->nbytes),
                   "%s: %s dequantized", what, name);
            continue;
        }
        n_kept++;
        const struct hy_f8b_src *k = t ? t->data : NULL;
        CHECKF(t && t->dtype == HY_DTYPE_F8_B128 && f && k && k->codes == f->data &&
                   t->shape[0] == f->shape[0] && t->shape[1] == f->shape[1] && fs &&
                   !memcmp(k->scale, fs->data, fs->nbytes),
               "%s: %s kept fp8 with the file's codes and scales", what, name);
        struct hy_weight w;
        CHECKF(f && hy_model_bind_st(&w, st, name, f->shape[0], f->shape[1], &e) == HY_OK &&
                   w.dtype == HY_DTYPE_F8_B128 && w.data == k,
               "%s: %s bound as F8_B128 (%s)", what, name, e.msg);
    }
    /* tiny-mqa's 14 projections (in-features 64, 128, 256) and the 3 extra ones */
    CHECKF(n_kept == (keep ? 15 : 0) && n_deq == 17 - n_kept, "%s: %d kept, %d dequantized",
           what, n_kept, n_deq);
}

/* keep_blocks (a backend that runs HY_DTYPE_F8_B128): 128x128 layer projections with
 * in-features a multiple of 16 stay fp8 as an F8_B128 tensor whose struct hy_f8b_src points
 * at the mapped codes and a float32 copy of the file's scales, and the binder binds that;
 * columns off 16, a tensor that is no layer projection, other block sizes and a --quant
 * q8 load are dequantized to bf16 as without it. */
static void test_prepare_keep(int br, enum hy_dtype quant)
{
    static const int64_t cols[3] = {208, 260, 208};
    struct ckpt src = {0}, c = {0}, deq = {0};
    ck_read(&src, mqa_dir);
    for (int i = 0; i < 3; i++) {
        int64_t shape[2] = {300, cols[i]};
        struct ck_tensor *w = ck_add(&src, xnames[i], "BF16", 2, shape);
        for (int64_t k = 0; k < 300 * cols[i]; k++) {
            uint16_t b = hy_f32_to_bf16(ldexpf((float)((k * 37 + i) % 201 - 100) / 64.0f + 0.01f,
                                               (int)(k % 9) - 4));
            memcpy(w->data + 2 * k, &b, 2);
        }
    }
    make_fp8(&src, "lm_head", br, br, &c, &deq);
    char what[64];
    snprintf(what, sizeof what, "keep%d-%s", br, hy_dtype_name(quant));
    struct hy_st *st = write_prepare(&c, what, br, quant, true);
    if (st)
        check_keep(st, &src, &c, &deq,
                   br == 128 && (quant == HY_DTYPE_F32 || quant == HY_DTYPE_F8_E4M3), what);
    hy_st_close(st);
    ck_free(&src);
    ck_free(&c);
    ck_free(&deq);
}

/* ---- bad files ---- */

#define Q0 "model.layers.0.self_attn.q_proj"
#define KEEP "model.layers.0.mlp.down_proj"

static void set_const(struct ckpt *c, const char *name, const char *dt, int nd,
                      const int64_t *shape, float v)
{
    if (ck_find(c, name))
        ck_drop(c, name);
    struct ck_tensor *t = ck_add(c, name, dt, nd, shape);
    int d = hy_dtype_parse(dt);
    if (d < 0) /* an integer spelling: leave the zeros */
        return;
    size_t es = hy_dtype_size((enum hy_dtype)d);
    for (size_t i = 0; i < t->nbytes / es; i++)
        hy_dtype_from_f32(t->data + i * es, &v, (enum hy_dtype)d, 1);
}

static void rename_tensor(struct ckpt *c, const char *from, const char *to)
{
    struct ck_tensor *t = ck_find(c, from);
    HY_ASSERT(t && strlen(to) < sizeof t->name);
    memcpy(t->name, to, strlen(to) + 1);
}

static void expect_bad(const struct ckpt *c, const char *src_dir, const char *qc,
                       const char *name, hy_status want, const char *what, int line)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/bad-%d", root, line);
    ck_write(c, dir, src_dir, qc, NULL);
    ck_expect_load_error(be, dir, HY_DTYPE_F32, want, name, what, line);
}

static void test_bad(void)
{
    struct ckpt src = {0}, base = {0}, deq = {0}, c = {0};
    char qc[512], qc64[512];
    ck_read(&src, mqa_dir);
    make_fp8(&src, KEEP, 128, 128, &base, &deq);
    qc_text(qc, sizeof qc, 128, 128, KEEP);
    qc_text(qc64, sizeof qc64, 64, 64, KEEP);
    const char *per_tensor = "{\"quant_method\": \"fp8\", \"activation_scheme\": \"dynamic\"}";
    const char *cdir = mqa_dir;
    int64_t s22[2] = {2, 2}, s2[1] = {2}, s21[2] = {2, 1}, s0[1] = {0}, s3d[3] = {2, 8, 64};
#define CASE(mutate, qcfg, name, st, what)                                                         \
    do {                                                                                           \
        ck_copy(&c, &base);                                                                        \
        mutate;                                                                                    \
        expect_bad(&c, cdir, qcfg, name, st, what, __LINE__);                                      \
        ck_free(&c);                                                                               \
    } while (0)
    CASE(ck_drop(&c, Q0 ".weight_scale_inv"), qc, Q0 ".weight_scale_inv", HY_E_FORMAT,
         "is missing");
    CASE(set_const(&c, Q0 ".weight_scale_inv", "F32", 2, s22, 0.01f), qc, Q0 ".weight_scale_inv",
         HY_E_FORMAT, "has shape [2,2]; expected [2,1]");
    CASE(set_const(&c, Q0 ".weight_scale_inv", "F32", 1, s2, 0.01f), qc, Q0 ".weight_scale_inv",
         HY_E_FORMAT, "has shape [2]; expected [2,1]");
    CASE((void)0, qc64, Q0 ".weight_scale_inv", HY_E_FORMAT, "expected [4,1] (weight [256,64] "
         "in 64x64 blocks)");
    CASE(set_const(&c, Q0 ".weight_scale_inv", "F8_E4M3", 2, s21, 0.5f), qc,
         Q0 ".weight_scale_inv", HY_E_FORMAT, "must be F32, BF16 or F16");
    CASE(set_const(&c, Q0 ".weight_scale_inv", "I32", 2, s21, 0), qc, Q0 ".weight_scale_inv",
         HY_E_UNSUPPORTED, "is not part of a GPTQ linear");
    CASE(set_const(&c, Q0 ".weight_scale_inv", "F32", 2, s21, NAN), qc, Q0 ".weight_scale_inv",
         HY_E_FORMAT, "finite");
    CASE(set_const(&c, Q0 ".weight_scale_inv", "BF16", 2, s21, -0.5f), qc,
         Q0 ".weight_scale_inv", HY_E_FORMAT, ">= 0");
    CASE(rename_tensor(&c, Q0 ".weight_scale_inv", Q0 ".weight_scale"), qc, Q0 ".weight_scale",
         HY_E_FORMAT, "has weight_block_size");
    CASE(set_const(&c, Q0 ".weight_scale", "F32", 0, s0, 0.01f), qc, Q0 ".weight_scale",
         HY_E_FORMAT, "one scale too many");
    CASE(set_const(&c, KEEP ".weight_scale_inv", "F32", 2, s21, 0.01f), qc,
         KEEP ".weight_scale_inv", HY_E_FORMAT, "is BF16, not F8_E4M3");
    CASE((void)0, per_tensor, Q0 ".weight_scale", HY_E_FORMAT, "no weight_block_size");
    CASE((void)0, NULL, Q0 ".weight_scale", HY_E_FORMAT, "no weight_block_size");
    CASE(set_const(&c, "model.layers.0.mlp.extra.weight", "F8_E4M3", 3, s3d, 1.0f), qc,
         "model.layers.0.mlp.extra.weight", HY_E_UNSUPPORTED, "only 2-D");
    ck_free(&base);
    ck_free(&deq);
    ck_free(&src);
    /* hy_v3: an expert's scale missing, a router scale where the router is bf16 */
    ck_read(&src, hyv3_dir);
    cdir = hyv3_dir;
    make_fp8(&src, "none", 128, 128, &base, &deq);
    qc_text(qc, sizeof qc, 128, 128, "mlp.router.gate");
    const char *ex = "model.layers.3.mlp.experts.7.down_proj.weight_scale_inv";
    CASE(ck_drop(&c, ex), qc, ex, HY_E_FORMAT, "is missing");
    CASE(set_const(&c, "model.layers.1.mlp.router.gate.weight_scale_inv", "F32", 2,
                   (int64_t[]){1, 1}, 1.0f), qc, "router.gate.weight_scale_inv", HY_E_FORMAT,
         "not F8_E4M3");
#undef CASE
    ck_free(&base);
    ck_free(&deq);
    ck_free(&src);
}

int main(void)
{
    struct ckpt src = {0};
    if (!ck_begin(root, sizeof root, "/tmp/hymt-fp8b-XXXXXX", mqa_dir, sizeof mqa_dir, &be,
                  &src))
        return 1;
    ck_free(&src);
    test_path(hyv3_dir, sizeof hyv3_dir, "HYMT_SRC", "tests/data/tiny-hyv3");
    if (be) {
        run_case(mqa_dir, "model.layers.0.mlp.down_proj", 128, 128, true, "dense");
        run_case(mqa_dir, "model.layers.0.mlp.down_proj", 48, 40, false, "dense");
        run_case(hyv3_dir, "model.layers.2.mlp.experts.5.up_proj", 128, 128, true, "hyv3");
        run_case(hyv3_dir, "model.layers.2.mlp.experts.5.up_proj", 48, 40, false, "hyv3");
        test_prepare_tails();
        test_prepare_keep(128, HY_DTYPE_F32);
        test_prepare_keep(128, HY_DTYPE_F8_E4M3);
        test_prepare_keep(128, HY_DTYPE_Q8_0);
        test_prepare_keep(48, HY_DTYPE_F32);
        test_autofp8();
        test_bad();
        be->i->destroy(be);
    }
    CHECK(test_rmtree(root) == 0);
    return test_result();
}
