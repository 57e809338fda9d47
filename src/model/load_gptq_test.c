/* load_gptq_test.c: GPTQ-Int4 checkpoints (model doc 6.2) made here from the tiny bf16
 * checkpoint tests/data/tiny-mqa (2 layers, hidden 64, intermediate 128), on the CPU.
 *
 * The generator quantizes every projection the way AutoGPTQ does (and
 * tests/gptq/make_gptq_checkpoint.py does with PyTorch): per group and output column,
 * asymmetric: xmin = min(x, 0), xmax = max(x, 0), scale = fp16((xmax - xmin) / 15), zero =
 * round(-xmin / scale); symmetric: scale = fp16(2 max|x| / 15), zero = 8; q = clamp(round(x /
 * scale) + zero, 0, 15). With desc_act the input rows are visited in a fixed permutation and
 * g_idx[perm[k]] = k / group_size. Packing: qweight [in/8, out] with row 8r+j in bits 4j.. of
 * row r, qzeros [G, out/8] with column 8c+j in bits 4j.. of column c, storing zero - 1 (v1)
 * or zero (v2). The safetensors file is written here (the library's writer has no integer
 * dtypes).
 * Checks:
 *  - every projection the model binds equals bf16(scale * (q - zero)) bit for bit, from the
 *    generator's own q / zero / scale (before packing): sym g32 v1 without g_idx, asym g64
 *    desc_act v1 with BF16 scales, asym one group (group_size -1) v2 with g_idx = i / g;
 *  - the logits (9 prompt positions + 23 greedy steps) are identical bit for bit to those of
 *    a bf16 checkpoint holding those dequantized values (same weights, same kernels);
 *  - against the original bf16 model: mean cosine over the 32 positions >= 0.95 and every
 *    position >= 0.90 (measured: 0.9732 / 0.9463 sym g32, 0.9706 / 0.9369 asym g64 desc_act,
 *    0.9727 / 0.9487 asym one group v2). Why: 4-bit steps of range/15 leave ~7% RMS weight
 *    error (e4m3: ~2.5-3%, cosine 0.9957 in load_quant_test); this tiny random model amplifies
 *    weight noise ~3.5x into its logits, so ~25% logit error, cosine ~0.97. A wrong nibble,
 *    zero or group mapping gives unrelated weights (cosine far below 0.9); the exact checks
 *    above are what prove the loading, these bound the format's loss;
 *  - a hand-made one-group linear whose expected weights are written out by hand: a wrong
 *    nibble order, a missing or extra zero offset, or an unmasked v1 zero changes them;
 *  - malformed checkpoints: each an error naming the tensor, nothing leaked (ASan). */
#include "backend/cpu/cpu.h"
#include "core/json.h"
#include "model/hunyuan.h"
#include "model/load_quant.h"
#include "test.h"
#include "logits_util.h"
#include "ckpt_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N_PROMPT 9
#define N_STEPS 24

static const int32_t ids[N_PROMPT] = {305, 3, 77, 250, 12, 319, 8, 8, 130};

static char root[64], src_dir[4096];

/* dir with src_dir's config (or `{}` when bare) plus quantization_config qc. */
static void ckpt_write(const struct ckpt *c, const char *dir, const char *qc, bool bare)
{
    ck_write(c, dir, bare ? NULL : src_dir, qc, NULL);
}

static float bf16_at(const struct ck_tensor *t, int64_t i)
{
    uint16_t b;
    memcpy(&b, t->data + 2 * i, 2);
    return hy_bf16_to_f32(b);
}

static void put_u32(struct ck_tensor *t, int64_t i, uint32_t v) { memcpy(t->data + 4 * i, &v, 4); }
static uint32_t get_u32(const struct ck_tensor *t, int64_t i)
{
    uint32_t v;
    memcpy(&v, t->data + 4 * i, 4);
    return v;
}

/* ---- the generator ---- */

struct scheme {
    int group;       /* -1: one group */
    bool sym, desc_act, v2, bf16_scales, store_gidx;
};

/* Replaces projection `base` of c by its GPTQ tensors; the bf16 weight the loader must make
 * goes to deq (same name). */
static void gptq_one(struct ckpt *c, struct ckpt *deq, const char *base, struct scheme sc,
                     unsigned seed)
{
    char name[HY_ST_MAX_NAME + 16];
    snprintf(name, sizeof name, "%s.weight", base);
    struct ck_tensor *w = ck_find(c, name), *d = ck_find(deq, name);
    HY_ASSERT(w && d && !strcmp(w->dtype, "BF16") && w->nd == 2);
    const int64_t out = w->shape[0], in = w->shape[1];
    const int64_t gs = sc.group < 0 ? in : sc.group, G = in / gs;
    int32_t *perm = malloc((size_t)in * 4), *gidx = malloc((size_t)in * 4);
    int *q = malloc((size_t)(in * out) * sizeof *q), *zero = malloc((size_t)(G * out) * sizeof *zero);
    float *scale = malloc((size_t)(G * out) * sizeof *scale);
    HY_ASSERT(perm && gidx && q && zero && scale);
    for (int64_t i = 0; i < in; i++)
        perm[i] = (int32_t)i;
    for (int64_t i = in - 1; sc.desc_act && i > 0; i--) { /* a fixed shuffle (LCG) */
        seed = seed * 1103515245u + 12345u;
        int64_t k = (int64_t)((seed >> 8) % (unsigned)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[k];
        perm[k] = t;
    }
    for (int64_t k = 0; k < in; k++)
        gidx[perm[k]] = (int32_t)(k / gs);
    for (int64_t g = 0; g < G; g++)
        for (int64_t o = 0; o < out; o++) {
            float lo = 0, hi = 0;
            for (int64_t i = 0; i < in; i++)
                if (gidx[i] == g) {
                    float x = bf16_at(w, o * in + i);
                    lo = fminf(lo, x);
                    hi = fmaxf(hi, x);
                }
            float s;
            int z;
            if (sc.sym) {
                float m = fmaxf(-lo, hi);
                s = 2 * m / 15;
                z = 8;
            } else {
                s = (hi - lo) / 15;
                z = (int)nearbyintf(-lo / (s > 0 ? s : 1));
            }
            if (s == 0)
                s = 1;
            /* the scale as stored */
            s = sc.bf16_scales ? hy_bf16_to_f32(hy_f32_to_bf16(s)) : hy_f16_to_f32(hy_f32_to_f16(s));
            scale[g * out + o] = s;
            zero[g * out + o] = z;
            for (int64_t i = 0; i < in; i++)
                if (gidx[i] == g) {
                    int v = (int)nearbyintf(bf16_at(w, o * in + i) / s) + z;
                    v = v < 0 ? 0 : v > 15 ? 15 : v;
                    q[i * out + o] = v;
                    uint16_t b = hy_f32_to_bf16(s * (float)(v - z));
                    memcpy(d->data + 2 * (o * in + i), &b, 2);
                }
        }
    ck_drop(c, name);
    snprintf(name, sizeof name, "%s.qweight", base);
    struct ck_tensor *qw = ck_add(c, name, "I32", 2, (int64_t[]){in / 8, out});
    for (int64_t r = 0; r < in / 8; r++)
        for (int64_t o = 0; o < out; o++) {
            uint32_t v = 0;
            for (int j = 0; j < 8; j++)
                v |= (uint32_t)q[(8 * r + j) * out + o] << (4 * j);
            put_u32(qw, r * out + o, v);
        }
    snprintf(name, sizeof name, "%s.qzeros", base);
    struct ck_tensor *qz = ck_add(c, name, "I32", 2, (int64_t[]){G, out / 8});
    for (int64_t g = 0; g < G; g++)
        for (int64_t o = 0; o < out; o++) {
            uint32_t z = (uint32_t)(zero[g * out + o] - (sc.v2 ? 0 : 1)) & 15u;
            put_u32(qz, g * (out / 8) + o / 8, get_u32(qz, g * (out / 8) + o / 8) |
                                                   z << (4 * (o % 8)));
        }
    snprintf(name, sizeof name, "%s.scales", base);
    struct ck_tensor *st = ck_add(c, name, sc.bf16_scales ? "BF16" : "F16", 2, (int64_t[]){G, out});
    hy_dtype_from_f32(st->data, scale, sc.bf16_scales ? HY_DTYPE_BF16 : HY_DTYPE_F16,
                      (size_t)(G * out));
    if (sc.store_gidx || sc.desc_act) {
        snprintf(name, sizeof name, "%s.g_idx", base);
        memcpy(ck_add(c, name, "I32", 1, &in)->data, gidx, (size_t)in * 4);
    }
    free(perm);
    free(gidx);
    free(q);
    free(zero);
    free(scale);
}

static void make_gptq(const struct ckpt *src, struct ckpt *out, struct ckpt *deq, struct scheme sc)
{
    ck_copy(out, src);
    ck_copy(deq, src);
    char base[HY_ST_MAX_NAME];
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 7; k++) {
            snprintf(base, sizeof base, "model.layers.%d.%s", l, ck_projs[k]);
            gptq_one(out, deq, base, sc, (unsigned)(l * 7 + k + 1));
        }
}

static void qc_text(char *buf, size_t cap, struct scheme sc)
{
    snprintf(buf, cap, "{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": %d, "
             "\"desc_act\": %s, \"sym\": %s, \"checkpoint_format\": \"%s\"}", sc.group,
             sc.desc_act ? "true" : "false", sc.sym ? "true" : "false", sc.v2 ? "gptq_v2" : "gptq");
}

/* ---- model checks ---- */

static struct hy_backend *be;

/* a and b identical (exact) or close by cosine (logits_util.h), over the prompt and
 * N_STEPS greedy steps of a. */
static void compare(const struct hy_model *a, const struct hy_model *b, bool exact,
                    double min_mean, double min_pos, const char *what)
{
    tu_compare(a, b, ids, N_PROMPT, N_STEPS, exact, min_mean, min_pos, what);
}

static void test_scheme(const struct ckpt *src, struct scheme sc, const char *tag,
                        double min_mean, double min_pos)
{
    struct ckpt g = {0}, deq = {0};
    char dir[256], ddir[256], qc[256], what[160];
    make_gptq(src, &g, &deq, sc);
    qc_text(qc, sizeof qc, sc);
    snprintf(dir, sizeof dir, "%s/%s", root, tag);
    snprintf(ddir, sizeof ddir, "%s/%s-deq", root, tag);
    ckpt_write(&g, dir, qc, false);
    ckpt_write(&deq, ddir, NULL, false);
    struct hy_model *m = ck_load(be, dir, HY_DTYPE_F32), *d = ck_load(be, ddir, HY_DTYPE_F32),
                    *b = ck_load(be, src_dir, HY_DTYPE_F32);
    if (m) {
        ck_check_weights(m, &deq, tag, "bf16(scale * (q - zero))");
        CHECK(m->lm_head.data == m->tok_embd.data); /* tied, embedding as stored */
    }
    snprintf(what, sizeof what, "GPTQ %s vs its dequantized bf16 checkpoint", tag);
    compare(m, d, true, 0, 0, what);
    snprintf(what, sizeof what, "GPTQ %s vs the original bf16", tag);
    compare(b, m, false, min_mean, min_pos, what);
    hy_model_destroy(m);
    hy_model_destroy(d);
    hy_model_destroy(b);
    ck_free(&g);
    ck_free(&deq);
}

/* ---- the hand-made linear ---- */

/* One group, in = 16, out = 8, v1 zeros, F16 scales. q[i][o] = (i + 3o) % 16, so packed row r
 * of column o holds nibbles (8r + 3o + j) % 16 for j = 0..7 (j = 0 lowest). Stored zeros
 * (zero - 1) per column: 7, 0, 15, 3, 7, 7, 14, 1 -> zeros 8, 1, 0, 4, 8, 8, 15, 2. Scales
 * 0.5 * (o + 1). */
static void test_handmade(void)
{
    struct ckpt c = {0};
    static const uint32_t qw[2][8] = {
        {0x76543210u, 0xA9876543u, 0xDCBA9876u, 0x0FEDCBA9u, 0x3210FEDCu, 0x6543210Fu,
         0x98765432u, 0xCBA98765u},
        {0xFEDCBA98u, 0x210FEDCBu, 0x543210FEu, 0x87654321u, 0xBA987654u,
         0xEDCBA987u, 0x10FEDCBAu, 0x43210FEDu}};
    struct ck_tensor *t = ck_add(&c, "lin.qweight", "I32", 2, (int64_t[]){2, 8});
    for (int r = 0; r < 2; r++)
        for (int o = 0; o < 8; o++)
            put_u32(t, r * 8 + o, qw[r][o]);
    put_u32(ck_add(&c, "lin.qzeros", "I32", 2, (int64_t[]){1, 1}), 0, 0x1E773F07u);
    t = ck_add(&c, "lin.scales", "F16", 2, (int64_t[]){1, 8});
    for (int o = 0; o < 8; o++) {
        uint16_t h = hy_f32_to_f16(0.5f * (float)(o + 1));
        memcpy(t->data + 2 * o, &h, 2);
    }
    char dir[256];
    snprintf(dir, sizeof dir, "%s/handmade", root);
    ckpt_write(&c, dir, "{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": -1, "
                        "\"desc_act\": false, \"sym\": false}", true);
    struct hy_st *st = NULL;
    struct hy_config cfg = {0};
    struct hy_err e = {{0}};
    CHECKF(hy_st_open(&st, dir, &e) == HY_OK, "%s", e.msg);
    if (!st)
        return;
    CHECKF(hy_load_quant_prepare(st, dir, &cfg, HY_DTYPE_F32, false, false, &e) == HY_OK, "%s",
           e.msg);
    const struct hy_st_tensor *w = hy_st_find(st, "lin.weight");
    CHECK(w && w->dtype == HY_DTYPE_BF16 && w->n_dims == 2 && w->shape[0] == 8 &&
          w->shape[1] == 16);
    /* expected w[o][i] = 0.5 (o + 1) ((i + 3o) % 16 - zero[o]), written out for some */
    static const struct {
        int o, i;
        float w;
    } want[] = {
        {0, 0, -4.0f},   /* 0.5 * (0 - 8): zero = stored 7 + 1 */
        {0, 1, -3.5f},   /* nibble 1 (bits 4..7) of row 0 is input 1 */
        {0, 8, 0.0f},    /* input 8 is nibble 0 of packed row 1: 0.5 * (8 - 8) */
        {0, 15, 3.5f},   /* 0.5 * (15 - 8) */
        {1, 0, 2.0f},    /* 1.0 * (3 - 1): column 1 is nibble 1 of qzeros */
        {1, 13, -1.0f},  /* (13 + 3) % 16 = 0: 1.0 * (0 - 1) */
        {2, 0, 9.0f},    /* stored 15: zero (15 + 1) mod 16 = 0: 1.5 * (6 - 0) */
        {2, 9, 22.5f},   /* 1.5 * (15 - 0) */
        {3, 2, 14.0f},   /* 2.0 * (11 - 4) */
        {6, 5, -28.0f},  /* 3.5 * (7 - 15) */
        {7, 7, 40.0f},   /* 4.0 * (12 - 2) */
    };
    for (size_t k = 0; w && k < sizeof want / sizeof want[0]; k++) {
        uint16_t b;
        memcpy(&b, (const unsigned char *)w->data + 2 * (want[k].o * 16 + want[k].i), 2);
        CHECKF(hy_bf16_to_f32(b) == want[k].w, "handmade w[%d][%d] = %g, want %g", want[k].o,
               want[k].i, hy_bf16_to_f32(b), want[k].w);
    }
    for (int o = 0; w && o < 8; o++) /* and all of them by the formula */
        for (int i = 0; i < 16; i++) {
            static const int zero[8] = {8, 1, 0, 4, 8, 8, 15, 2};
            float x = 0.5f * (float)(o + 1) * (float)((i + 3 * o) % 16 - zero[o]);
            uint16_t b;
            memcpy(&b, (const unsigned char *)w->data + 2 * (o * 16 + i), 2);
            CHECKF(hy_bf16_to_f32(b) == x, "handmade w[%d][%d] = %g, want %g", o, i,
                   hy_bf16_to_f32(b), x);
        }
    hy_st_close(st);
    ck_free(&c);
}

/* ---- malformed checkpoints ---- */

#define L0 "model.layers.0.self_attn.q_proj"

static void expect_bad(const struct ckpt *c, const char *qc, const char *name, hy_status want,
                       const char *what, enum hy_dtype quant, int line)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/bad-%d", root, line);
    ckpt_write(c, dir, qc, false);
    ck_expect_load_error(be, dir, quant, want, name, what, line);
}

static void retype(struct ckpt *c, const char *name, const char *dt, int nd, const int64_t *shape)
{
    ck_drop(c, name);
    struct ck_tensor *t = ck_add(c, name, dt, nd, shape);
    memset(t->data, 0, t->nbytes);
}

static void test_bad(const struct ckpt *src)
{
    struct ckpt base = {0}, deq = {0}, c = {0};
    struct scheme sc = {32, false, true, false, false, true};
    char qc[256], qc48[256];
    make_gptq(src, &base, &deq, sc);
    qc_text(qc, sizeof qc, sc);
    sc.group = 48;
    qc_text(qc48, sizeof qc48, sc);
#define CASE(mutate, qcfg, name, st, what, quant)                                                 \
    do {                                                                                           \
        ck_copy(&c, &base);                                                                      \
        mutate;                                                                                    \
        expect_bad(&c, qcfg, name, st, what, quant, __LINE__);                                     \
        ck_free(&c);                                                                             \
    } while (0)
    const enum hy_dtype F = HY_DTYPE_F32;
    CASE((void)0, qc, NULL, HY_E_UNSUPPORTED, "--quant fp8 does not apply", HY_DTYPE_F8_E4M3);
    CASE(ck_drop(&c, L0 ".qweight"); ck_drop(&c, L0 ".qzeros"); ck_drop(&c, L0 ".scales");
         ck_drop(&c, L0 ".g_idx"), qc, "missing tensor " L0 ".weight", HY_E_FORMAT, "", F);
    CASE((void)0, qc48, "in-features of model.layers.0.mlp.down_proj.qweight", HY_E_FORMAT,
         "group_size 48 does not divide the 128", F); /* the first in name order */
    CASE(retype(&c, L0 ".qweight", "U8", 2, (int64_t[]){32, 64}), qc, L0 ".qweight",
         HY_E_FORMAT, "is U8 [32,64]; expected I32 [in/8, out]", F);
    CASE(retype(&c, L0 ".qweight", "I32", 2, (int64_t[]){8, 60}), qc, L0 ".qweight",
         HY_E_FORMAT, "out a multiple of 8", F);
    CASE(retype(&c, L0 ".qzeros", "I32", 2, (int64_t[]){2, 7}), qc, L0 ".qzeros", HY_E_FORMAT,
         "expected I32 [2,32]", F);
    CASE(retype(&c, L0 ".qzeros", "F32", 2, (int64_t[]){2, 32}), qc, L0 ".qzeros", HY_E_FORMAT,
         "GPTQ stores it as I32", F);
    CASE(ck_drop(&c, L0 ".qzeros"), qc, L0 ".qzeros", HY_E_FORMAT, "is missing", F);
    CASE(ck_drop(&c, L0 ".scales"), qc, L0 ".scales", HY_E_FORMAT, "is missing", F);
    CASE(retype(&c, L0 ".scales", "F16", 2, (int64_t[]){1, 256}), qc, L0 ".scales", HY_E_FORMAT,
         "expected F16, BF16 or F32 [2,256]", F);
    CASE(retype(&c, L0 ".scales", "U8", 2, (int64_t[]){2, 256}), qc, L0 ".scales (U8)",
         HY_E_UNSUPPORTED, "is not part of a GPTQ linear", F);
    CASE(memset(ck_find(&c, L0 ".scales")->data + 6, 0xff, 2), qc, L0 ".scales[0][3]",
         HY_E_FORMAT, "finite", F); /* F16 0xffff: NaN */
    CASE(ck_drop(&c, L0 ".g_idx"), qc, L0 ".g_idx", HY_E_FORMAT, "desc_act needs it", F);
    CASE(put_u32(ck_find(&c, L0 ".g_idx"), 5, 2), qc, L0 ".g_idx[5]", HY_E_FORMAT,
         "is 2, outside [0, 2)", F);
    CASE(put_u32(ck_find(&c, L0 ".g_idx"), 63, 0xffffffffu), qc, L0 ".g_idx[63]", HY_E_FORMAT,
         "is -1", F);
    CASE(retype(&c, L0 ".g_idx", "I32", 1, (int64_t[]){32}), qc, L0 ".g_idx", HY_E_FORMAT,
         "expected I32 [64]", F);
    CASE(ck_drop(&c, L0 ".qweight"), qc, L0 ".g_idx", HY_E_FORMAT, "has no " L0 ".qweight", F);
    CASE(ck_add(&c, L0 ".weight", "BF16", 2, (int64_t[]){64, 64}), qc, L0 ".weight", HY_E_FORMAT,
         "is stored beside", F);
    CASE(ck_add(&c, "model.extra", "I32", 1, (int64_t[]){4}), qc, "model.extra", HY_E_UNSUPPORTED,
         "not part of a GPTQ linear", F);
    CASE(memset(ck_add(&c, L0 ".bias", "F16", 1, (int64_t[]){64})->data + 2, 0x3c, 1), qc,
         L0 ".bias", HY_E_UNSUPPORTED, "not all zeros", F);
#undef CASE
    /* a zero bias is ignored; the model still loads */
    ck_copy(&c, &base);
    ck_add(&c, L0 ".bias", "F16", 1, (int64_t[]){64});
    char dir[256];
    snprintf(dir, sizeof dir, "%s/zero-bias", root);
    ckpt_write(&c, dir, qc, false);
    struct hy_model *m = ck_load(be, dir, HY_DTYPE_F32);
    if (m)
        ck_check_weights(m, &deq, "zero bias", "bf16(scale * (q - zero))");
    hy_model_destroy(m);
    ck_free(&c);
    /* no quantization config: read as v1 with the group size from the scales (a warning) */
    snprintf(dir, sizeof dir, "%s/no-config", root);
    ckpt_write(&base, dir, NULL, false);
    m = ck_load(be, dir, HY_DTYPE_F32);
    if (m)
        ck_check_weights(m, &deq, "no quantization config", "bf16(scale * (q - zero))");
    hy_model_destroy(m);
    ck_free(&base);
    ck_free(&deq);
}

int main(void)
{
    struct ckpt src = {0};
    if (!ck_begin(root, sizeof root, "/tmp/hymt-gptq-XXXXXX", src_dir, sizeof src_dir, &be, &src))
        return 1;
    test_handmade();
    if (be) {
        test_scheme(&src, (struct scheme){32, true, false, false, false, false}, "sym-g32-v1",
                    0.95, 0.9);
        test_scheme(&src, (struct scheme){64, false, true, false, true, true},
                    "asym-g64-descact-bf16", 0.95, 0.9);
        test_scheme(&src, (struct scheme){-1, false, false, true, false, true}, "asym-g-1-v2",
                    0.95, 0.9);
        test_bad(&src);
        be->i->destroy(be);
    }
    ck_free(&src);
    CHECK(test_rmtree(root) == 0);
    return test_result();
}
