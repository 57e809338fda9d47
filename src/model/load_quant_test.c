/* load_quant_test.c: fp8 checkpoints and --quant fp8 on the tiny bf16 checkpoint
 * tests/data/tiny-mqa (2 layers, hidden 64), on the CPU.
 *
 * The fp8 checkpoint is made here the way model doc 6.1 describes AngelSlim's (and
 * tests/fp8/make_fp8_checkpoint.py makes it with PyTorch): per projection scale =
 * max|W|/448 in float32, codes = e4m3(clamp(W/scale, +-448)), weight F8_E4M3 [out,in],
 * weight_scale F32 scalar, input_scale F32 scalar, k_scale/v_scale in layer 0, one linear
 * left bf16 on the ignore list, no stored lm_head; config.json gets the AngelSlim
 * quantization_config (ignored_layers) and hf_quant_config.json is written too.
 * Checks:
 *  - every projection the model binds equals bf16(e4m3(code) * scale) bit for bit, computed
 *    here from the generator's codes (the ignored one equals the source), and the fp8 view
 *    gives back the codes and scales;
 *  - the forward pass (9 prompt positions + 24 greedy steps) gives logits identical bit for
 *    bit to those of a bf16 checkpoint holding those dequantized values (same weights, same
 *    kernels: anything but 0 is a loading bug);
 *  - against the original bf16 model: mean cosine over the 32 positions >= 0.99 and every
 *    position >= 0.98 (measured: mean 0.9956, min 0.9872 for the checkpoint; 0.9957 / 0.9884
 *    for --quant fp8). Why these: e4m3 keeps 3 mantissa bits, so each weight moves by up to
 *    1/16 relative, about 2.5-3% RMS, independently. This tiny random model amplifies weight
 *    noise about 3.5x into its logits (Q8_0, whose weight error is ~0.5% RMS, gives cosine
 *    0.99983 there, a 1.8% logit error), so fp8 lands near a 10% logit error, cosine ~0.995,
 *    with single positions lower. A wrong scale, nibble or row order gives cosines below 0.9;
 *    the exact comparison above is what proves the loading, these bound the format's loss;
 *  - variants: per-channel BF16 scales [out,1], "ignore" with a re: entry, dynamic input
 *    activations (no input_scale), no quantization config at all;
 *  - --quant fp8 (per tensor through hy_model_load_opts, per channel through
 *    hy_load_quant_prepare): weights equal this test's own quantization, cosine >= 0.99;
 *  - malformed checkpoints: each an error naming the tensor, nothing leaked (ASan). */
#include "backend/cpu/cpu.h"
#include "core/fp8.h"
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
#define IGNORED "model.layers.0.mlp.down_proj"

static char root[64], src_dir[4096];

/* dir with src_dir's config plus quantization_config qc and hf_quant_config.json hf. */
static void ckpt_write(const struct ckpt *c, const char *dir, const char *qc, const char *hf)
{
    ck_write(c, dir, src_dir, qc, hf);
}

static enum hy_dtype dt_of(const struct ck_tensor *t)
{
    int d = hy_dtype_parse(t->dtype);
    HY_ASSERT(d >= 0);
    return (enum hy_dtype)d;
}

static float at_f32(const struct ck_tensor *t, int64_t i)
{
    float f;
    hy_dtype_to_f32(&f, t->data + (size_t)i * hy_dtype_size(dt_of(t)), dt_of(t), 1);
    return f;
}

/* The generator: projection `name` of c becomes fp8 with the given scale layout. The codes
 * and float32 scales are also returned in q (same names, for the checks). */
enum scale_form { SCALAR, ONE, CHANNEL_BF16 };

static void quantize(struct ckpt *c, struct ckpt *q, const char *base, enum scale_form form,
                     bool input_scale)
{
    char name[HY_ST_MAX_NAME];
    snprintf(name, sizeof name, "%s.weight", base);
    struct ck_tensor *w = ck_find(c, name);
    HY_ASSERT(w && w->nd == 2);
    const int64_t rows = w->shape[0], cols = w->shape[1];
    bool per_ch = form == CHANNEL_BF16;
    struct ck_tensor *codes = ck_add(q, name, "F8_E4M3", 2, w->shape);
    int64_t ns = per_ch ? rows : 1;
    struct ck_tensor *sc = ck_add(q, "scale", "F32", 1, &ns);
    float *s = (float *)sc->data, amax = 0;
    for (int64_t r = 0; r < rows; r++) {
        float m = 0;
        for (int64_t k = 0; k < cols; k++)
            m = fmaxf(m, fabsf(at_f32(w, r * cols + k)));
        if (per_ch) /* a bf16 scale, as the file stores it */
            s[r] = hy_bf16_to_f32(hy_f32_to_bf16(m / 448.0f));
        amax = fmaxf(amax, m);
    }
    if (!per_ch)
        s[0] = amax / 448.0f;
    snprintf(sc->name, sizeof sc->name, "%s.weight_scale", base);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) {
            float v = at_f32(w, r * cols + k) / s[per_ch ? r : 0];
            codes->data[r * cols + k] = hy_fp8_e4m3_from_f32(fminf(fmaxf(v, -448.0f), 448.0f));
        }
    ck_drop(c, name);
    memcpy(ck_add(c, name, "F8_E4M3", 2, codes->shape)->data, codes->data, codes->nbytes);
    snprintf(name, sizeof name, "%s.weight_scale", base);
    int64_t shp[2] = {rows, 1};
    if (form == SCALAR)
        memcpy(ck_add(c, name, "F32", 0, shp)->data, s, 4);
    else if (form == ONE)
        memcpy(ck_add(c, name, "F32", 1, (int64_t[]){1})->data, s, 4);
    else {
        struct ck_tensor *t = ck_add(c, name, "BF16", 2, shp);
        hy_dtype_from_f32(t->data, s, HY_DTYPE_BF16, (size_t)rows);
    }
    if (input_scale) {
        snprintf(name, sizeof name, "%s.input_scale", base);
        float v = 6.0f / 448.0f; /* a fixed activation range of +-6 */
        memcpy(ck_add(c, name, "F32", 0, shp)->data, &v, 4);
    }
}

static const char *ANGEL_QC =
    "{\"quant_method\": \"compressed-tensors\", \"format\": \"naive-quantized\", "
    "\"quantization_status\": \"compressed\", \"kv_cache_scheme\": null, \"ignored_layers\": "
    "[\"lm_head\", \"" IGNORED "\"], \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"],"
    " \"weights\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"tensor\", \"dynamic\": "
    "false}, \"input_activations\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": "
    "\"tensor\", \"dynamic\": false}}}}";
static const char *ANGEL_HF = "{\"quantization\": {\"exclude_modules\": [\"lm_head\", \"" IGNORED
                              "\"], \"kv_cache_quant_algo\": null, \"quant_algo\": \"FP8\"}}";

/* The AngelSlim-style checkpoint: src with every projection but IGNORED in fp8. */
static void make_angel(const struct ckpt *src, struct ckpt *out, struct ckpt *q)
{
    ck_copy(out, src);
    q->n = 0;
    char base[HY_ST_MAX_NAME];
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 7; k++) {
            snprintf(base, sizeof base, "model.layers.%d.%s", l, ck_projs[k]);
            if (strcmp(base, IGNORED))
                quantize(out, q, base, k % 2 ? ONE : SCALAR, true);
        }
    int64_t none[1] = {0};
    float kv = 0.02f;
    memcpy(ck_add(out, "model.layers.0.self_attn.k_scale", "F32", 0, none)->data, &kv, 4);
    memcpy(ck_add(out, "model.layers.0.self_attn.v_scale", "F32", 0, none)->data, &kv, 4);
}

/* bf16 weights the loader must produce: bf16(e4m3(code) * scale), from q. */
static void dequantized(const struct ckpt *src, const struct ckpt *q, struct ckpt *out)
{
    ck_copy(out, src);
    for (int i = 0; i < q->n; i += 2) {
        const struct ck_tensor *codes = &q->t[i], *sc = &q->t[i + 1];
        struct ck_tensor *w = ck_find(out, codes->name);
        HY_ASSERT(w && dt_of(w) == HY_DTYPE_BF16);
        const int64_t rows = codes->shape[0], cols = codes->shape[1];
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < cols; k++) {
                float s = ((const float *)sc->data)[sc->shape[0] == 1 ? 0 : r];
                uint16_t b = hy_f32_to_bf16(hy_fp8_e4m3_to_f32(codes->data[r * cols + k]) * s);
                memcpy(w->data + 2 * (r * cols + k), &b, 2);
            }
    }
}

/* ---- model checks ---- */

static struct hy_backend *be;

/* a and b identical (exact) or close by cosine (logits_util.h), over the prompt and
 * N_STEPS greedy steps of a. */
static void compare(const struct hy_model *a, const struct hy_model *b, bool exact,
                    const char *what)
{
    tu_compare(a, b, ids, N_PROMPT, N_STEPS, exact, 0.99, 0.98, what);
}

static void test_angel(const struct ckpt *src)
{
    struct ckpt fp8 = {0}, q = {0}, deq = {0};
    char dir[256], ddir[256];
    make_angel(src, &fp8, &q);
    dequantized(src, &q, &deq);
    snprintf(dir, sizeof dir, "%s/angel", root);
    snprintf(ddir, sizeof ddir, "%s/angel-deq", root);
    ckpt_write(&fp8, dir, ANGEL_QC, ANGEL_HF);
    ckpt_write(&deq, ddir, NULL, NULL);
    struct hy_model *m = ck_load(be, dir, HY_DTYPE_F32), *d = ck_load(be, ddir, HY_DTYPE_F32),
                    *b = ck_load(be, src_dir, HY_DTYPE_F32);
    if (m) {
        ck_check_weights(m, &deq, "angel", "bf16(e4m3 * scale)");
        /* the fp8 form is reachable: codes as stored, float32 scales, input scale */
        struct hy_load_quant_view v;
        const struct ck_tensor *codes = &q.t[0], *sc = &q.t[1];
        CHECK(hy_load_quant_fp8_view(m->st, codes->name, &v));
        CHECK(v.rows == codes->shape[0] && v.cols == codes->shape[1] && v.n_scale == 1);
        CHECK(v.codes && !memcmp(v.codes, codes->data, codes->nbytes));
        CHECK(v.scale && v.scale[0] == ((const float *)sc->data)[0]);
        CHECK(v.input_scale == 6.0f / 448.0f);
        CHECK(!hy_load_quant_fp8_view(m->st, IGNORED ".weight", &v));
        CHECK(hy_st_find_stored(m->st, codes->name)->dtype == HY_DTYPE_F8_E4M3);
        CHECK(m->lm_head.data == m->tok_embd.data); /* tied, nothing stored */
    }
    compare(m, d, true, "fp8 checkpoint vs its dequantized bf16 checkpoint");
    compare(b, m, false, "fp8 checkpoint vs the original bf16");
    hy_model_destroy(m);
    hy_model_destroy(d);
    hy_model_destroy(b);
    ck_free(&fp8);
    ck_free(&q);
    ck_free(&deq);
}

/* Per-channel bf16 scales [out,1], "ignore" with a re: entry, dynamic activations; and the
 * same tensors with no quantization config at all. */
static void test_variants(const struct ckpt *src)
{
    struct ckpt fp8 = {0}, q = {0}, deq = {0};
    ck_copy(&fp8, src);
    char base[HY_ST_MAX_NAME], dir[256];
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 7; k++) {
            snprintf(base, sizeof base, "model.layers.%d.%s", l, ck_projs[k]);
            if (!(l == 1 && k < 2)) /* layer 1 q/k stay bf16, matched by the regex */
                quantize(&fp8, &q, base, CHANNEL_BF16, false);
        }
    dequantized(src, &q, &deq);
    const char *qc =
        "{\"quant_method\": \"compressed-tensors\", \"format\": \"float-quantized\", \"ignore\": "
        "[\"re:.*layers\\\\.1\\\\.self_attn\\\\.[qk]_proj$\", \"lm_head\"], \"config_groups\": "
        "{\"g\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8, \"type\": \"float\", "
        "\"strategy\": \"channel\", \"dynamic\": false}, \"input_activations\": {\"num_bits\": 8, "
        "\"type\": \"float\", \"strategy\": \"token\", \"dynamic\": true}}}}";
    snprintf(dir, sizeof dir, "%s/channel", root);
    ckpt_write(&fp8, dir, qc, NULL);
    struct hy_model *m = ck_load(be, dir, HY_DTYPE_F32);
    if (m) {
        ck_check_weights(m, &deq, "per-channel", "bf16(e4m3 * scale)");
        struct hy_load_quant_view v;
        CHECK(hy_load_quant_fp8_view(m->st, q.t[0].name, &v) && v.n_scale == v.rows &&
              v.input_scale == 0 && !memcmp(v.scale, q.t[1].data, q.t[1].nbytes));
    }
    hy_model_destroy(m);
    snprintf(dir, sizeof dir, "%s/noconfig", root);
    ckpt_write(&fp8, dir, NULL, NULL); /* F8 tensors alone: read as fp8, with a warning */
    m = ck_load(be, dir, HY_DTYPE_F32);
    if (m)
        ck_check_weights(m, &deq, "no quantization config", "bf16(e4m3 * scale)");
    hy_model_destroy(m);
    ck_free(&fp8);
    ck_free(&q);
    ck_free(&deq);
}

/* --quant fp8: per tensor through the loader, per channel through hy_load_quant_prepare. */
static void test_quant_at_load(const struct ckpt *src)
{
    struct ckpt c = {0}, q = {0}, deq = {0};
    ck_copy(&c, src);
    char base[HY_ST_MAX_NAME];
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 7; k++) {
            snprintf(base, sizeof base, "model.layers.%d.%s", l, ck_projs[k]);
            quantize(&c, &q, base, SCALAR, false);
        }
    dequantized(src, &q, &deq);
    struct hy_model *m = ck_load(be, src_dir, HY_DTYPE_F8_E4M3), *b = ck_load(be, src_dir, HY_DTYPE_F32);
    if (m) {
        ck_check_weights(m, &deq, "--quant fp8", "bf16(e4m3 * scale)");
        struct hy_load_quant_view v;
        CHECK(hy_load_quant_fp8_view(m->st, q.t[2].name, &v) && v.n_scale == 1 &&
              v.scale[0] == ((const float *)q.t[3].data)[0] &&
              !memcmp(v.codes, q.t[2].data, q.t[2].nbytes));
        CHECK(m->tok_embd.dtype == HY_DTYPE_BF16 && m->layers[0].attn_norm.dtype ==
                                                        b->layers[0].attn_norm.dtype);
        CHECK(!memcmp(m->tok_embd.data, b->tok_embd.data, (size_t)(b->tok_embd.rows * 64 * 2)));
    }
    compare(b, m, false, "--quant fp8 (per tensor) vs bf16");
    hy_model_destroy(m);
    hy_model_destroy(b);
    /* per channel: the scales are max|row|/448 */
    struct hy_st *st = NULL;
    struct hy_config cfg;
    struct hy_err e = {{0}};
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", src_dir);
    CHECK(hy_config_load(&cfg, path, &e) == HY_OK);
    CHECK(hy_st_open(&st, src_dir, &e) == HY_OK);
    CHECKF(hy_load_quant_prepare(st, src_dir, &cfg, HY_DTYPE_F8_E4M3, true, false, &e) == HY_OK,
           "%s", e.msg);
    struct hy_load_quant_view v;
    const struct ck_tensor *w = ck_find((struct ckpt *)src, "model.layers.1.mlp.up_proj.weight");
    CHECK(hy_load_quant_fp8_view(st, w->name, &v) && v.n_scale == w->shape[0]);
    int bad = 0;
    for (int64_t r = 0; r < v.rows && v.scale; r++) {
        float mx = 0;
        for (int64_t k = 0; k < v.cols; k++)
            mx = fmaxf(mx, fabsf(at_f32(w, r * v.cols + k)));
        bad += v.scale[r] != mx / 448.0f;
        for (int64_t k = 0; k < v.cols; k++) {
            float x = fminf(fmaxf(at_f32(w, r * v.cols + k) / v.scale[r], -448.f), 448.f);
            bad += v.codes[r * v.cols + k] != hy_fp8_e4m3_from_f32(x);
        }
    }
    CHECKF(bad == 0, "per-channel --quant fp8: %d scales or codes differ", bad);
    const struct hy_st_tensor *t = hy_st_find(st, w->name);
    CHECK(t && t->dtype == HY_DTYPE_BF16 && t->data != hy_st_find_stored(st, w->name)->data);
    hy_st_close(st);
    ck_free(&c);
    ck_free(&q);
    ck_free(&deq);
}

/* ---- malformed checkpoints ---- */

static void expect_bad(const struct ckpt *c, const char *qc, const char *name, hy_status want,
                       const char *what, int line)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/bad-%d", root, line);
    ckpt_write(c, dir, qc, NULL);
    ck_expect_load_error(be, dir, HY_DTYPE_F32, want, name, what, line);
}

#define Q1 "model.layers.1.self_attn.q_proj"

static void set_f32(struct ckpt *c, const char *name, float v, enum hy_dtype dt, int nd,
                    const int64_t *shape)
{
    if (ck_find(c, name))
        ck_drop(c, name);
    struct ck_tensor *t = ck_add(c, name, hy_dtype_name(dt), nd, shape);
    for (size_t i = 0; i < t->nbytes / hy_dtype_size(dt); i++)
        hy_dtype_from_f32(t->data + i * hy_dtype_size(dt), &v, dt, 1);
}

static void test_bad(const struct ckpt *src)
{
    struct ckpt base = {0}, q = {0}, c = {0};
    make_angel(src, &base, &q);
    int64_t s3[1] = {3}, s0[1] = {0}, s2[2] = {2, 1};
#define CASE(mutate, qc, name, st, what)                                                           \
    do {                                                                                           \
        ck_copy(&c, &base);                                                                      \
        mutate;                                                                                    \
        expect_bad(&c, qc, name, st, what, __LINE__);                                              \
        ck_free(&c);                                                                             \
    } while (0)
    CASE(ck_drop(&c, Q1 ".weight_scale"), ANGEL_QC, Q1 ".weight_scale", HY_E_FORMAT, "is missing");
    CASE(set_f32(&c, Q1 ".weight_scale", 0.01f, HY_DTYPE_F32, 1, s3), ANGEL_QC,
         Q1 ".weight_scale", HY_E_FORMAT, "has shape [3]");
    CASE(set_f32(&c, Q1 ".weight_scale", 0.01f, HY_DTYPE_F32, 2, s2), ANGEL_QC,
         Q1 ".weight_scale", HY_E_FORMAT, "has shape [2,1]");
    CASE(set_f32(&c, Q1 ".weight_scale", -0.01f, HY_DTYPE_F32, 0, s0), ANGEL_QC,
         Q1 ".weight_scale", HY_E_FORMAT, "finite");
    CASE(set_f32(&c, Q1 ".weight_scale", NAN, HY_DTYPE_BF16, 0, s0), ANGEL_QC, Q1 ".weight_scale",
         HY_E_FORMAT, "finite");
    CASE(set_f32(&c, Q1 ".weight_scale", INFINITY, HY_DTYPE_F16, 0, s0), ANGEL_QC,
         Q1 ".weight_scale", HY_E_FORMAT, "finite");
    CASE(set_f32(&c, Q1 ".weight_scale", 1.0f, HY_DTYPE_F8_E4M3, 0, s0), ANGEL_QC,
         Q1 ".weight_scale", HY_E_FORMAT, "must be F32, BF16 or F16");
    CASE(ck_drop(&c, Q1 ".input_scale"), ANGEL_QC, Q1 ".input_scale", HY_E_FORMAT,
         "static input activations");
    CASE(set_f32(&c, Q1 ".input_scale", 0.0f, HY_DTYPE_F32, 0, s0), ANGEL_QC, Q1 ".input_scale",
         HY_E_FORMAT, "> 0");
    CASE(set_f32(&c, Q1 ".input_scale", 1.0f, HY_DTYPE_F32, 1, s3), ANGEL_QC, Q1 ".input_scale",
         HY_E_FORMAT, "one value");
    CASE(set_f32(&c, "model.norm.weight", 1.0f, HY_DTYPE_F8_E4M3, 1, (int64_t[]){64}), ANGEL_QC,
         "model.norm.weight", HY_E_UNSUPPORTED, "only 2-D <linear>.weight");
    CASE(set_f32(&c, IGNORED ".weight_scale", 1.0f, HY_DTYPE_F32, 0, s0), ANGEL_QC,
         IGNORED ".weight_scale", HY_E_FORMAT, "is BF16, not F8_E4M3");
    CASE((void)0, "{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"g\": "
                  "{\"weights\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\"}}}}",
         "quantization_config", HY_E_UNSUPPORTED, "strategy 'block'");
    CASE((void)0, "{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128}", NULL,
         HY_E_FORMAT, "says gptq but no tensor is a <linear>.qweight");
#undef CASE
    ck_free(&base);
    ck_free(&q);
}

int main(void)
{
    struct ckpt src = {0};
    if (!ck_begin(root, sizeof root, "/tmp/hymt-fp8-XXXXXX", src_dir, sizeof src_dir, &be, &src))
        return 1;
    if (be) {
        test_angel(&src);
        test_variants(&src);
        test_quant_at_load(&src);
        test_bad(&src);
        be->i->destroy(be);
    }
    ck_free(&src);
    CHECK(test_rmtree(root) == 0);
    return test_result();
}
