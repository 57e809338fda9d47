/* load_quant.c: fp8 checkpoints and --quant fp8, dequantized to BF16 at load (contract in
 * load_quant.h; GPTQ in load_gptq.c). */
#include "model/load_quant.h"
#include "model/load_gptq.h"

#include "backend/backend.h"
#include "core/fp8.h"
#include "core/log.h"
#include "core/threads.h"
#include "formats/quant_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUFFIX_W ".weight"
#define TAG_CODES "@fp8"  /* "<linear>.weight@fp8": the e4m3 codes */
#define TAG_SCALE "@f32"  /* "<linear>.weight_scale@f32", "<linear>.input_scale@f32",
                          * "<linear>.weight_scale_inv@f32" (kept block scales) */
#define LIST_MAX 8        /* names listed in the summary line */

static const char *const proj_suffix[7] = {
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
    "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

static bool is_float(enum hy_dtype t)
{
    return t == HY_DTYPE_F32 || t == HY_DTYPE_BF16 || t == HY_DTYPE_F16;
}

/* ---- dequantization over rows ---- */

/* The scales of one fp8 tensor as blocks: weight (r, c) takes scale[(r / br) * nbc + c / bc].
 * Per tensor: one block of the whole matrix; per output channel: br = 1, bc = cols. */
struct deq_scales {
    const float *scale;
    int64_t br, bc, nbc;
};

static struct deq_scales scales_rows(const float *scale, int64_t n_scale, int64_t rows,
                                     int64_t cols)
{
    if (n_scale == 1)
        return (struct deq_scales){scale, rows > 0 ? rows : 1, cols > 0 ? cols : 1, 1};
    return (struct deq_scales){scale, 1, cols > 0 ? cols : 1, 1};
}

struct deq_job {
    const uint8_t *codes; /* [rows, cols] */
    struct deq_scales sc;
    int64_t cols;
    uint16_t *out;        /* bf16 [rows, cols] */
    float lut[256];
};

static void deq_rows(void *ctx, int64_t r0, int64_t r1, int tid)
{
    (void)tid;
    const struct deq_job *j = ctx;
    for (int64_t r = r0; r < r1; r++) {
        const float *srow = j->sc.scale + (r / j->sc.br) * j->sc.nbc;
        const uint8_t *c = j->codes + r * j->cols;
        uint16_t *o = j->out + r * j->cols;
        for (int64_t k0 = 0; k0 < j->cols; k0 += j->sc.bc) {
            const float s = srow[k0 / j->sc.bc];
            const int64_t k1 = k0 + j->sc.bc < j->cols ? k0 + j->sc.bc : j->cols;
            for (int64_t k = k0; k < k1; k++)
                o[k] = hy_f32_to_bf16(j->lut[c[k]] * s);
        }
    }
}

/* A BF16 [rows, cols] copy of codes * scale, owned by the set, put under `name`. */
static hy_status put_dequant(struct hy_st *st, struct hy_pool *pool, const char *name, int file,
                             const uint8_t *codes, struct deq_scales sc, int64_t rows,
                             int64_t cols, struct hy_err *err)
{
    struct deq_job j = {codes, sc, cols, NULL, {0}};
    j.out = malloc((size_t)(rows * cols > 0 ? rows * cols : 1) * 2);
    if (!j.out)
        return hy_err_set(err, HY_E_NOMEM, "out of memory dequantizing %s", name);
    hy_fp8_e4m3_table(j.lut);
    hy_pool_for(pool, rows, 16, deq_rows, &j);
    int64_t shape[2] = {rows, cols};
    return hy_st_put(st, name, file, HY_DTYPE_BF16, 2, shape, j.out, true, err);
}

/* Puts a float32 copy of a small tensor under `name` + TAG_SCALE. */
static hy_status put_f32(struct hy_st *st, const char *name, int file, const float *v, int64_t n,
                         struct hy_err *err)
{
    char key[HY_ST_MAX_NAME + 8];
    snprintf(key, sizeof key, "%s" TAG_SCALE, name);
    float *copy = malloc((size_t)n * sizeof *copy);
    if (!copy)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    memcpy(copy, v, (size_t)n * sizeof *copy);
    return hy_st_put(st, key, file, HY_DTYPE_F32, 1, &n, copy, true, err);
}

/* ---- fp8 checkpoints ---- */

/* Reads a scale tensor into float32 (malloc'ed *out) after checking its dtype and values. */
static hy_status read_scale(const struct hy_st *st, const struct hy_st_tensor *t, bool positive,
                            float **out, struct hy_err *err)
{
    const char *file = hy_st_file_path(st, t->file);
    if (!is_float(t->dtype))
        return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is %s; a scale must be F32, BF16 or "
                          "F16", file, t->name, hy_dtype_name(t->dtype));
    float *v = malloc((size_t)(t->n_elems > 0 ? t->n_elems : 1) * sizeof *v);
    if (!v)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_dtype_to_f32(v, t->data, t->dtype, (size_t)t->n_elems);
    for (int64_t i = 0; i < t->n_elems; i++)
        if (!isfinite(v[i]) || v[i] < 0 || (positive && v[i] == 0)) {
            hy_status s = hy_err_set(err, HY_E_FORMAT, "%s: tensor %s[%lld] is %g; scales must "
                                     "be finite and %s", file, t->name, (long long)i, v[i],
                                     positive ? "> 0" : ">= 0");
            free(v);
            return s;
        }
    *out = v;
    return HY_OK;
}

static void shape_str(const struct hy_st_tensor *t, char *buf, size_t cap)
{
    char *p = buf;
    *p = 0;
    for (int d = 0; d < t->n_dims && p < buf + cap; d++)
        p += snprintf(p, (size_t)(buf + cap - p), "%s%lld", d ? "," : "", (long long)t->shape[d]);
}

struct fp8_stats {
    int n_fp8, n_block, n_tensor, n_channel, n_input, n_kept;
};

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The weight scale of fp8 tensor t (<base>.weight): with block scales (q->block_rows) the
 * F32/BF16/F16 <base>.weight_scale_inv [ceil(rows/br), ceil(cols/bc)], else <base>.weight_scale
 * per tensor or per output channel. Its values are read into *scale (malloc'ed, finite,
 * >= 0) and *sc describes how they cover the matrix. */
static hy_status weight_scale(const struct hy_st *st, const struct hy_quant_config *q,
                              const struct hy_st_tensor *t, const char *base, float **scale,
                              struct deq_scales *sc, struct hy_err *err)
{
    const char *file = hy_st_file_path(st, t->file);
    const int64_t rows = t->shape[0], cols = t->shape[1];
    const bool blocks = q->block_rows > 0;
    char key[HY_ST_MAX_NAME + 32], other[HY_ST_MAX_NAME + 32], shp[96];
    snprintf(key, sizeof key, "%s.weight_scale%s", base, blocks ? "_inv" : "");
    snprintf(other, sizeof other, "%s.weight_scale%s", base, blocks ? "" : "_inv");
    const struct hy_st_tensor *ws = hy_st_find_stored(st, key);
    if (!ws && hy_st_find_stored(st, other))
        return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is F8_E4M3 with %s, but %s: expected "
                          "%s", file, t->name, other, blocks ? "quantization_config has "
                          "weight_block_size (block scales)" : "quantization_config has no "
                          "weight_block_size (block scales need one)", key);
    if (!ws)
        return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is F8_E4M3 but %s is missing", file,
                          t->name, key);
    shape_str(ws, shp, sizeof shp);
    const char *wfile = hy_st_file_path(st, ws->file);
    if (blocks) {
        const int64_t br = q->block_rows, bc = q->block_cols;
        const int64_t nbr = ceil_div(rows, br), nbc = ceil_div(cols, bc);
        if (ws->n_dims != 2 || ws->shape[0] != nbr || ws->shape[1] != nbc)
            return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s has shape [%s]; expected [%lld,%lld]"
                              " (weight [%lld,%lld] in %lldx%lld blocks)", wfile, key, shp,
                              (long long)nbr, (long long)nbc, (long long)rows, (long long)cols,
                              (long long)br, (long long)bc);
        *sc = (struct deq_scales){NULL, br, bc, nbc};
    } else {
        bool per_tensor = ws->n_elems == 1 && ws->n_dims <= 2;
        bool per_channel = ws->n_elems == rows && rows > 1 &&
                           (ws->n_dims == 1 || (ws->n_dims == 2 && ws->shape[1] == 1));
        if (!per_tensor && !per_channel)
            return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s has shape [%s]; expected [] or [1] "
                              "(per tensor) or [%lld] / [%lld,1] (per output channel)", wfile, key,
                              shp, (long long)rows, (long long)rows);
        *sc = scales_rows(NULL, ws->n_elems, rows, cols);
    }
    hy_status s = read_scale(st, ws, false, scale, err);
    sc->scale = *scale;
    return s;
}

/* The static input scale of <base>, when stored (*in_scale malloc'ed) or required. */
static hy_status input_scale(const struct hy_st *st, const struct hy_quant_config *q,
                             const struct hy_st_tensor *t, const char *base, float **in_scale,
                             struct hy_err *err)
{
    char key[HY_ST_MAX_NAME + 16], shp[96];
    snprintf(key, sizeof key, "%s.input_scale", base);
    const struct hy_st_tensor *is = hy_st_find_stored(st, key);
    if (is && is->n_elems != 1) {
        shape_str(is, shp, sizeof shp);
        return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s has shape [%s]; a static input scale "
                          "is one value", hy_st_file_path(st, is->file), key, shp);
    }
    if (is)
        return read_scale(st, is, true, in_scale, err);
    if (q->act_static)
        return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is missing: quantization_config has "
                          "static input activations", hy_st_file_path(st, t->file), key);
    return HY_OK;
}

/* Whether the block-scaled fp8 weight `name` [rows, cols] stays fp8 for a backend that
 * keeps HY_DTYPE_F8_B128 (load_quant.h): a decoder layer's projection in 128x128 blocks
 * with cols a multiple of HY_F8_B128_COLS. */
static bool keeps_blocks(const struct hy_quant_config *q, bool keep, const char *name,
                         int64_t cols)
{
    return keep && q->block_rows == HY_F8_B128_BLOCK && q->block_cols == HY_F8_B128_BLOCK &&
           cols % HY_F8_B128_COLS == 0 && !strncmp(name, "model.layers.", 13) &&
           ends_with(name, "_proj" SUFFIX_W);
}

/* Puts the F8_B128 form of `name` (backend.h struct hy_f8b_src: the mapped codes and
 * scale, which the set owns from here on, also on failure). */
static hy_status put_kept(struct hy_st *st, const char *name, int file, const uint8_t *codes,
                          float *scale, int64_t rows, int64_t cols, struct hy_err *err)
{
    struct hy_f8b_src *src = malloc(sizeof *src);
    if (!src) {
        free(scale);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    *src = (struct hy_f8b_src){codes, scale};
    char key[HY_ST_MAX_NAME + 16];
    const int64_t n = ceil_div(rows, HY_F8_B128_BLOCK) * ceil_div(cols, HY_F8_B128_BLOCK);
    snprintf(key, sizeof key, "%s_scale_inv" TAG_SCALE, name);
    hy_status s = hy_st_put(st, key, file, HY_DTYPE_F32, 1, &n, scale, true, err);
    int64_t shape[2] = {rows, cols};
    if (s)
        free(src);
    else
        s = hy_st_put(st, name, file, HY_DTYPE_F8_B128, 2, shape, src, true, err);
    return s;
}

/* One F8_E4M3 tensor `name` (a copy: puts move tensors). Block-scaled weights are
 * dequantized, or, where keeps_blocks, left as stored with their float32 scales put beside
 * them (hy_load_quant_block_scale); the per-row fp8 view (weight_upload_fp8) is not made
 * for them. */
static hy_status fp8_one(struct hy_st *st, struct hy_pool *pool, const struct hy_quant_config *q,
                         bool keep, const char *name, struct fp8_stats *stats,
                         struct hy_err *err)
{
    const struct hy_st_tensor *t = hy_st_find_stored(st, name);
    char base[HY_ST_MAX_NAME], key[HY_ST_MAX_NAME + 16], shp[96];
    if (!ends_with(name, SUFFIX_W) || t->n_dims != 2) {
        shape_str(t, shp, sizeof shp);
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: tensor %s is F8_E4M3 with shape [%s]; only "
                          "2-D <linear>.weight tensors are read as fp8",
                          hy_st_file_path(st, t->file), name, shp);
    }
    snprintf(base, sizeof base, "%.*s", (int)(strlen(name) - strlen(SUFFIX_W)), name);
    const int64_t rows = t->shape[0], cols = t->shape[1];
    const uint8_t *codes = t->data;
    const int fi = t->file;
    float *scale = NULL, *in_scale = NULL;
    struct deq_scales sc;
    const bool blocks = q->block_rows > 0;
    hy_status s = weight_scale(st, q, t, base, &scale, &sc, err);
    if (!s)
        s = input_scale(st, q, t, base, &in_scale, err);
    if (!s && hy_quant_config_ignored(q, base, true))
        HY_LOGW("%s is stored as fp8 although the quantization config ignores it: loading it "
                "as fp8", base);
    const int64_t n_scale = blocks ? 0 : sc.br == 1 ? rows : 1;
    /* the float32 scales and the codes stay reachable (hy_load_quant_fp8_view) */
    if (!s && !blocks) {
        snprintf(key, sizeof key, "%s.weight_scale", base);
        s = put_f32(st, key, fi, scale, n_scale, err);
        snprintf(key, sizeof key, "%s.input_scale", base);
        if (!s && in_scale)
            s = put_f32(st, key, fi, in_scale, 1, err);
        snprintf(key, sizeof key, "%s" TAG_CODES, name);
        int64_t shape[2] = {rows, cols};
        if (!s)
            s = hy_st_put(st, key, fi, HY_DTYPE_F8_E4M3, 2, shape, (void *)codes, false, err);
    }
    const bool kept = !s && blocks && keeps_blocks(q, keep, name, cols);
    if (kept) {
        s = put_kept(st, name, fi, codes, scale, rows, cols, err);
        scale = NULL; /* the set's from the put on */
    } else if (!s) {
        s = put_dequant(st, pool, name, fi, codes, sc, rows, cols, err);
    }
    if (!s) {
        stats->n_kept += kept;
        stats->n_fp8++;
        stats->n_block += blocks;
        stats->n_tensor += n_scale == 1;
        stats->n_channel += n_scale > 1;
        stats->n_input += in_scale != NULL;
    }
    free(scale);
    free(in_scale);
    return s;
}

/* Names of stored tensors with a given dtype or suffix (copied: puts move tensors). */
static char (*collect(const struct hy_st *st, bool (*pick)(const struct hy_st_tensor *),
                      size_t *n))[HY_ST_MAX_NAME]
{
    size_t total = hy_st_count(st), k = 0;
    char(*names)[HY_ST_MAX_NAME] = malloc((total ? total : 1) * sizeof *names);
    if (!names)
        return NULL;
    for (size_t i = 0; i < total; i++)
        if (pick(hy_st_at(st, i)))
            memcpy(names[k++], hy_st_at(st, i)->name, HY_ST_MAX_NAME);
    *n = k;
    return names;
}

static bool pick_f8(const struct hy_st_tensor *t) { return t->dtype == HY_DTYPE_F8_E4M3; }

/* The projections of layer l as released: q/k/v/o, then the dense MLP's gate/up/down, or
 * (hy_v3 MoE layers) the shared expert's and each expert's. */
static int n_projs(const struct hy_config *cfg, int l)
{
    return cfg->layer_moe[l] ? 7 + 3 * (int)cfg->num_experts : 7;
}

static void proj_base(const struct hy_config *cfg, int l, int k, char *buf, size_t cap)
{
    static const char *const mlp[3] = {"gate_proj", "up_proj", "down_proj"};
    if (k < 4 || !cfg->layer_moe[l])
        snprintf(buf, cap, "model.layers.%d.%s", l, proj_suffix[k]);
    else if (k < 7)
        snprintf(buf, cap, "model.layers.%d.mlp.shared_mlp.%s", l, mlp[k - 4]);
    else
        snprintf(buf, cap, "model.layers.%d.mlp.experts.%d.%s", l, (k - 7) / 3, mlp[(k - 7) % 3]);
}

/* Every scale tensor belongs to an fp8 weight read with that kind of scale; counts the
 * k_scale/v_scale and the input_scale of non-fp8 weights (both ignored) and logs them. */
static hy_status fp8_check_scales(const struct hy_st *st, const struct hy_quant_config *q,
                                  struct hy_err *err)
{
    int n_kv = 0, n_orphan_in = 0;
    char base[HY_ST_MAX_NAME], w[HY_ST_MAX_NAME + 8];
    for (size_t i = 0; i < hy_st_count(st); i++) {
        const struct hy_st_tensor *t = hy_st_at(st, i);
        if (ends_with(t->name, ".k_scale") || ends_with(t->name, ".v_scale")) {
            n_kv++;
            continue;
        }
        const char *suf = ends_with(t->name, ".weight_scale_inv") ? ".weight_scale_inv"
                          : ends_with(t->name, ".weight_scale")   ? ".weight_scale"
                          : ends_with(t->name, ".input_scale")    ? ".input_scale"
                                                                  : NULL;
        if (!suf)
            continue;
        snprintf(base, sizeof base, "%.*s", (int)(strlen(t->name) - strlen(suf)), t->name);
        snprintf(w, sizeof w, "%s.weight", base);
        const struct hy_st_tensor *wt = hy_st_find_stored(st, w);
        const bool inv = !strcmp(suf, ".weight_scale_inv");
        if (wt && wt->dtype == HY_DTYPE_F8_E4M3 && suf[1] == 'w' && inv != (q->block_rows > 0))
            return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is one scale too many: %s is read "
                              "with %s", hy_st_file_path(st, t->file), t->name, w,
                              inv ? "weight_scale (no weight_block_size in the config)"
                                  : "weight_scale_inv (block scales)");
        if (wt && wt->dtype == HY_DTYPE_F8_E4M3)
            continue;
        if (suf[1] == 'w')
            return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is present but %s is %s, not "
                              "F8_E4M3", hy_st_file_path(st, t->file), t->name, w,
                              wt ? hy_dtype_name(wt->dtype) : "missing");
        n_orphan_in++;
    }
    if (n_kv)
        HY_LOGI("fp8: ignoring %d k_scale/v_scale tensors: the KV cache stays float32", n_kv);
    if (n_orphan_in)
        HY_LOGW("fp8: ignoring %d input_scale tensors whose weight is not fp8", n_orphan_in);
    if (q->kv_cache_scheme)
        HY_LOGI("fp8: the config's KV cache quantization is not used: the KV cache stays float32");
    return HY_OK;
}

/* Checks the tensors around the fp8 weights and logs the summary. */
static hy_status fp8_check_rest(const struct hy_st *st, const struct hy_config *cfg,
                                const struct hy_quant_config *q, const struct fp8_stats *fs,
                                struct hy_err *err)
{
    char base[HY_ST_MAX_NAME], w[HY_ST_MAX_NAME + 8];
    hy_status s = fp8_check_scales(st, q, err);
    if (s)
        return s;
    /* projections kept as stored, listed; warn where the config expected fp8 */
    char list[LIST_MAX * 48 + 16] = "";
    int n_kept = 0;
    for (int l = 0; l < cfg->num_hidden_layers; l++)
        for (int k = 0; k < n_projs(cfg, l); k++) {
            proj_base(cfg, l, k, base, sizeof base);
            snprintf(w, sizeof w, "%s.weight", base);
            const struct hy_st_tensor *t = hy_st_find_stored(st, w);
            if (!t || t->dtype == HY_DTYPE_F8_E4M3)
                continue;
            if (n_kept < LIST_MAX)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         n_kept ? ", " : "", base + strlen("model."));
            n_kept++;
            if (q->method == HY_QUANT_FP8 && !hy_quant_config_ignored(q, base, true))
                HY_LOGW("%s is stored as %s but the quantization config does not ignore it: "
                        "loading it as stored", base, hy_dtype_name(t->dtype));
        }
    char blk[48] = "";
    if (fs->n_block)
        snprintf(blk, sizeof blk, "%d in %dx%d blocks, ", fs->n_block, q->block_rows,
                 q->block_cols);
    HY_LOGI("fp8 checkpoint (%s): %d linears fp8 (%s%d per-tensor, %d per-channel scales, %d "
            "with static input scales), %d kept fp8 for the backend, the rest dequantized to "
            "bf16 for the CPU kernels; %d projections kept as stored%s%s%s",
            q->source[0] ? q->source : "no quantization_config", fs->n_fp8, blk, fs->n_tensor,
            fs->n_channel, fs->n_input, fs->n_kept, n_kept, n_kept ? ": " : "", list,
            n_kept > LIST_MAX ? ", ..." : "");
    return HY_OK;
}

static hy_status fp8_checkpoint(struct hy_st *st, struct hy_pool *pool, const struct hy_config *cfg,
                                const struct hy_quant_config *q, bool keep, struct hy_err *err)
{
    size_t n = 0;
    char(*names)[HY_ST_MAX_NAME] = collect(st, pick_f8, &n);
    if (!names)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (n && q->method == HY_QUANT_NONE)
        HY_LOGW("the checkpoint stores F8_E4M3 tensors but has no quantization config: reading "
                "them as fp8 with their weight_scale tensors");
    struct fp8_stats fs = {0};
    hy_status s = HY_OK;
    for (size_t i = 0; i < n && !s; i++)
        s = fp8_one(st, pool, q, keep, names[i], &fs, err);
    free(names);
    if (!s && q->method == HY_QUANT_FP8 && fs.n_fp8 == 0)
        HY_LOGW("the quantization config says fp8 but no tensor is F8_E4M3: loading as stored");
    if (!s && fs.n_fp8)
        s = fp8_check_rest(st, cfg, q, &fs, err);
    return s;
}

/* ---- --quant fp8 ---- */

struct quant_job {
    const struct hy_st_tensor *t;
    float *rows;     /* [threads, cols] */
    float *amax;     /* [rows] */
    const float *scale;
    int64_t n_scale;
    uint8_t *codes;
};

/* Row r of the job's tensor as float32 in thread tid's row buffer. */
static float *job_row(const struct quant_job *j, int64_t r, int tid)
{
    const int64_t cols = j->t->shape[1];
    float *row = j->rows + (size_t)tid * (size_t)cols;
    size_t rb = (size_t)cols * hy_dtype_size(j->t->dtype);
    hy_dtype_to_f32(row, (const unsigned char *)j->t->data + (size_t)r * rb, j->t->dtype,
                    (size_t)cols);
    return row;
}

static void amax_rows(void *ctx, int64_t r0, int64_t r1, int tid)
{
    const struct quant_job *j = ctx;
    const int64_t cols = j->t->shape[1];
    for (int64_t r = r0; r < r1; r++) {
        const float *row = job_row(j, r, tid);
        float m = 0;
        for (int64_t c = 0; c < cols; c++)
            m = fabsf(row[c]) > m ? fabsf(row[c]) : m;
        j->amax[r] = m;
    }
}

static void code_rows(void *ctx, int64_t r0, int64_t r1, int tid)
{
    const struct quant_job *j = ctx;
    const int64_t cols = j->t->shape[1];
    for (int64_t r = r0; r < r1; r++) {
        const float *row = job_row(j, r, tid);
        float s = j->scale[j->n_scale == 1 ? 0 : r];
        for (int64_t c = 0; c < cols; c++) {
            float v = row[c] / s;
            v = v > HY_FP8_E4M3_MAX ? HY_FP8_E4M3_MAX : v < -HY_FP8_E4M3_MAX ? -HY_FP8_E4M3_MAX : v;
            j->codes[r * cols + c] = hy_fp8_e4m3_from_f32(v);
        }
    }
}

/* scale = amax / 448 (1 where amax is 0, so codes are 0). */
static float scale_of(float amax) { return amax > 0 ? amax / HY_FP8_E4M3_MAX : 1.0f; }

static hy_status quant_one(struct hy_st *st, struct hy_pool *pool, const char *name,
                           bool per_channel, float *rows_buf, struct hy_err *err)
{
    const struct hy_st_tensor *t = hy_st_find_stored(st, name);
    if (!t)
        return HY_OK; /* the binder names what is missing */
    if (t->n_dims != 2 || !is_float(t->dtype))
        return hy_err_set(err, HY_E_UNSUPPORTED, "--quant fp8: tensor %s is %s with %d dims "
                          "(a 2-D float weight is needed)", name, hy_dtype_name(t->dtype),
                          t->n_dims);
    const int64_t rows = t->shape[0], cols = t->shape[1];
    const int fi = t->file;
    struct quant_job j = {t, rows_buf, NULL, NULL, per_channel ? rows : 1, NULL};
    j.amax = malloc((size_t)(rows > 0 ? rows : 1) * sizeof(float));
    j.codes = malloc((size_t)(rows * cols > 0 ? rows * cols : 1));
    if (!j.amax || !j.codes) {
        free(j.amax);
        free(j.codes);
        return hy_err_set(err, HY_E_NOMEM, "out of memory quantizing %s", name);
    }
    hy_pool_for(pool, rows, 16, amax_rows, &j);
    if (per_channel) {
        for (int64_t r = 0; r < rows; r++)
            j.amax[r] = scale_of(j.amax[r]);
    } else {
        float m = 0;
        for (int64_t r = 0; r < rows; r++)
            m = j.amax[r] > m ? j.amax[r] : m;
        j.amax[0] = scale_of(m);
    }
    j.scale = j.amax;
    hy_pool_for(pool, rows, 16, code_rows, &j);
    char key[HY_ST_MAX_NAME + 16], sname[HY_ST_MAX_NAME + 16];
    snprintf(key, sizeof key, "%s" TAG_CODES, name);
    int64_t shape[2] = {rows, cols};
    /* the codes are owned by the set from this put on (also when it fails) */
    hy_status s = hy_st_put(st, key, fi, HY_DTYPE_F8_E4M3, 2, shape, j.codes, true, err);
    snprintf(sname, sizeof sname, "%.*s_scale", (int)strlen(name), name);
    if (!s)
        s = put_f32(st, sname, fi, j.amax, j.n_scale, err);
    if (!s)
        s = put_dequant(st, pool, name, fi, j.codes, scales_rows(j.amax, j.n_scale, rows, cols),
                        rows, cols, err);
    free(j.amax);
    return s;
}

static hy_status quantize_fp8(struct hy_st *st, struct hy_pool *pool, const struct hy_config *cfg,
                              bool per_channel, struct hy_err *err)
{
    char name[HY_ST_MAX_NAME];
    int64_t maxc = 1;
    for (int l = 0; l < cfg->num_hidden_layers; l++)
        for (int k = 0; k < 7; k++) {
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, proj_suffix[k]);
            const struct hy_st_tensor *t = hy_st_find_stored(st, name);
            if (t && t->n_dims == 2 && t->shape[1] > maxc)
                maxc = t->shape[1];
        }
    float *rows_buf = malloc((size_t)hy_pool_size(pool) * (size_t)maxc * sizeof(float));
    if (!rows_buf)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_status s = HY_OK;
    int n = 0;
    for (int l = 0; l < cfg->num_hidden_layers && !s; l++)
        for (int k = 0; k < 7 && !s; k++) {
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, proj_suffix[k]);
            n += hy_st_find_stored(st, name) != NULL;
            s = quant_one(st, pool, name, per_channel, rows_buf, err);
        }
    free(rows_buf);
    if (!s)
        HY_LOGI("--quant fp8: %d projections quantized to float8 e4m3 with per-%s scales "
                "(max|w|/448), dequantized to bf16 for the CPU kernels; embeddings, lm_head and "
                "norms as stored", n, per_channel ? "channel" : "tensor");
    return s;
}

/* ---- entry points ---- */

hy_status hy_load_quant_prepare(struct hy_st *st, const char *dir, const struct hy_config *cfg,
                                enum hy_dtype quant, bool per_channel, bool keep_blocks,
                                struct hy_err *err)
{
    struct hy_quant_config q;
    hy_status s = hy_quant_config_load(&q, dir, err);
    if (s)
        return s;
    bool has_f8 = false;
    for (size_t i = 0; i < hy_st_count(st) && !has_f8; i++)
        has_f8 = hy_st_at(st, i)->dtype == HY_DTYPE_F8_E4M3;
    if (cfg->arch == HY_ARCH_HYV3 && (q.method == HY_QUANT_GPTQ || hy_st_int_count(st)))
        s = hy_err_set(err, HY_E_UNSUPPORTED, "hy_v3: GPTQ checkpoints are not supported (fp8 and "
                       "bf16 ones are; --quant q8|q4 quantizes at load)");
    if (!s)
        s = hy_load_gptq_prepare(st, cfg, &q, quant, err); /* nothing without GPTQ tensors */
    if (!s && quant == HY_DTYPE_F8_E4M3 && (has_f8 || q.method == HY_QUANT_FP8)) {
        HY_LOGI("--quant fp8: the checkpoint is fp8 already");
        quant = HY_DTYPE_F32;
    }
    struct hy_pool *pool = NULL;
    if (!s && (has_f8 || quant == HY_DTYPE_F8_E4M3) && hy_pool_create(&pool, 0, NULL) != HY_OK)
        pool = NULL; /* dequantize on this thread alone */
    if (!s && (has_f8 || q.method == HY_QUANT_FP8))
        s = fp8_checkpoint(st, pool, cfg, &q, keep_blocks && quant == HY_DTYPE_F32, err);
    if (!s && quant == HY_DTYPE_F8_E4M3)
        s = quantize_fp8(st, pool, cfg, per_channel, err);
    hy_pool_destroy(pool);
    hy_quant_config_free(&q);
    return s;
}

bool hy_load_quant_fp8_view(const struct hy_st *st, const char *weight_name,
                            struct hy_load_quant_view *v)
{
    char key[HY_ST_MAX_NAME + 32], base[HY_ST_MAX_NAME];
    memset(v, 0, sizeof *v);
    if (!ends_with(weight_name, SUFFIX_W) || strlen(weight_name) >= HY_ST_MAX_NAME)
        return false;
    snprintf(key, sizeof key, "%s" TAG_CODES, weight_name);
    const struct hy_st_tensor *c = hy_st_find(st, key);
    snprintf(key, sizeof key, "%s_scale" TAG_SCALE, weight_name);
    const struct hy_st_tensor *s = hy_st_find(st, key);
    if (!c || !s)
        return false;
    snprintf(base, sizeof base, "%.*s", (int)(strlen(weight_name) - strlen(SUFFIX_W)), weight_name);
    snprintf(key, sizeof key, "%s.input_scale" TAG_SCALE, base);
    const struct hy_st_tensor *in = hy_st_find(st, key);
    v->codes = c->data;
    v->rows = c->shape[0];
    v->cols = c->shape[1];
    v->scale = s->data;
    v->n_scale = s->n_elems;
    if (in)
        memcpy(&v->input_scale, in->data, sizeof v->input_scale);
    return true;
}
