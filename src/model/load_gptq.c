/* load_gptq.c: GPTQ-Int4 checkpoints (AngelSlim GPTQQuantLinear / AutoGPTQ layout, model doc
 * 6.2) dequantized to BF16 at load (contract in load_quant.h). */
#include "model/load_quant.h"
#include "model/load_gptq.h"

#include "core/log.h"
#include "core/threads.h"
#include "formats/quant_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUF_QW ".qweight"
#define OUT_CHUNK 64 /* output columns a thread unpacks per pass over the packed rows */

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

static void shape_str(int n_dims, const int64_t *shape, char *buf, size_t cap)
{
    char *p = buf;
    *p = 0;
    for (int d = 0; d < n_dims && p < buf + cap; d++)
        p += snprintf(p, (size_t)(buf + cap - p), "%s%lld", d ? "," : "", (long long)shape[d]);
}

/* One linear's tensors, checked, in the forms the dequantizer reads. */
struct gptq_linear {
    const struct hy_st_itensor *qw, *qz;
    int64_t in, out, groups;
    int32_t *g;      /* [in] group of each input row */
    float *scale;    /* [groups, out] */
    int8_t *zero;    /* [groups, out]: the zero point itself (v1: stored + 1 mod 16), 0..15 */
    uint16_t *w;     /* bf16 [out, in], the result */
};

static void linear_free(struct gptq_linear *l)
{
    free(l->g);
    free(l->scale);
    free(l->zero);
    free(l->w);
}

/* w[o][i] = bf16(scale[g][o] * (q[i][o] - zero[g][o])), g = g_idx[i], for the output
 * columns of chunks [c0, c1): each packed row's OUT_CHUNK words (whole cache lines) are read
 * once, and each output row gets 8 consecutive values from them. */
static void deq_cols(void *ctx, int64_t c0, int64_t c1, int tid)
{
    (void)tid;
    const struct gptq_linear *l = ctx;
    const int64_t out = l->out, in = l->in;
    const unsigned char *qw = l->qw->data;
    for (int64_t o0 = c0 * OUT_CHUNK; o0 < c1 * OUT_CHUNK && o0 < out; o0 += OUT_CHUNK) {
        int64_t n = out - o0 < OUT_CHUNK ? out - o0 : OUT_CHUNK;
        for (int64_t r = 0; r < in / 8; r++) {
            uint32_t packed[OUT_CHUNK];
            memcpy(packed, qw + ((size_t)r * (size_t)out + (size_t)o0) * 4, (size_t)n * 4);
            const int32_t *g = l->g + 8 * r;
            for (int64_t k = 0; k < n; k++) {
                const int64_t o = o0 + k;
                uint16_t *w = l->w + o * in + 8 * r;
                for (int j = 0; j < 8; j++) {
                    int q = (int)(packed[k] >> (4 * j) & 15u);
                    int64_t gi = g[j] * out + o;
                    w[j] = hy_f32_to_bf16(l->scale[gi] * (float)(q - l->zero[gi]));
                }
            }
        }
    }
}

static const struct hy_st_itensor *need_int(const struct hy_st *st, const char *base,
                                            const char *suf, int64_t d0, int64_t d1,
                                            const char *why, struct hy_err *err)
{
    char name[HY_ST_MAX_NAME + 16], shp[96];
    snprintf(name, sizeof name, "%s%s", base, suf);
    const struct hy_st_itensor *t = hy_st_find_int(st, name);
    if (!t) {
        const struct hy_st_tensor *f = hy_st_find_stored(st, name);
        if (f)
            hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is %s; GPTQ stores it as I32",
                       hy_st_file_path(st, f->file), name, hy_dtype_name(f->dtype));
        else
            hy_err_set(err, HY_E_FORMAT, "GPTQ tensor %s is missing (beside %s%s)", name, base,
                       SUF_QW);
        return NULL;
    }
    bool ok = t->type == HY_ST_I32 && t->n_dims == (d1 < 0 ? 1 : 2) && t->shape[0] == d0 &&
              (d1 < 0 || t->shape[1] == d1);
    if (!ok) {
        shape_str(t->n_dims, t->shape, shp, sizeof shp);
        if (d1 < 0)
            hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is %s [%s]; expected I32 [%lld] (%s)",
                       hy_st_file_path(st, t->file), name, hy_st_int_type_name(t->type), shp,
                       (long long)d0, why);
        else
            hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is %s [%s]; expected I32 [%lld,%lld] "
                       "(%s)", hy_st_file_path(st, t->file), name, hy_st_int_type_name(t->type),
                       shp, (long long)d0, (long long)d1, why);
        return NULL;
    }
    return t;
}

/* Reads and checks everything of linear `base` but the packed weights. */
static hy_status linear_read(const struct hy_st *st, const struct hy_quant_config *q,
                             const char *base, struct gptq_linear *l, struct hy_err *err)
{
    char name[HY_ST_MAX_NAME + 16], shp[96];
    snprintf(name, sizeof name, "%s" SUF_QW, base);
    const struct hy_st_itensor *qw = hy_st_find_int(st, name);
    const char *file = hy_st_file_path(st, qw->file);
    if (qw->type != HY_ST_I32 || qw->n_dims != 2 || qw->shape[0] < 1 || qw->shape[1] < 8 ||
        qw->shape[1] % 8 || qw->shape[0] > INT32_MAX / 8) {
        shape_str(qw->n_dims, qw->shape, shp, sizeof shp);
        return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is %s [%s]; expected I32 [in/8, out] "
                          "with out a multiple of 8", file, name, hy_st_int_type_name(qw->type),
                          shp);
    }
    l->qw = qw;
    l->in = 8 * qw->shape[0];
    l->out = qw->shape[1];
    /* groups: from the config, or (no config) from the stored scales */
    snprintf(name, sizeof name, "%s.scales", base);
    const struct hy_st_tensor *sc = hy_st_find_stored(st, name);
    int64_t gs = q->method == HY_QUANT_GPTQ ? q->group_size
                 : sc && sc->n_dims == 2 && sc->shape[0] > 0 && l->in % sc->shape[0] == 0
                     ? l->in / sc->shape[0]
                     : l->in;
    if (gs < 0)
        gs = l->in;
    if (gs == 0 || l->in % gs)
        return hy_err_set(err, HY_E_FORMAT, "%s: group_size %lld does not divide the %lld "
                          "in-features of %s" SUF_QW, file, (long long)gs, (long long)l->in, base);
    l->groups = l->in / gs;
    if (!sc)
        return hy_err_set(err, HY_E_FORMAT, "GPTQ tensor %s is missing (beside %s" SUF_QW ")",
                          name, base);
    if ((sc->dtype != HY_DTYPE_F16 && sc->dtype != HY_DTYPE_BF16 && sc->dtype != HY_DTYPE_F32) ||
        sc->n_dims != 2 || sc->shape[0] != l->groups || sc->shape[1] != l->out) {
        shape_str(sc->n_dims, sc->shape, shp, sizeof shp);
        return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is %s [%s]; expected F16, BF16 or "
                          "F32 [%lld,%lld] (groups, out-features)", hy_st_file_path(st, sc->file),
                          name, hy_dtype_name(sc->dtype), shp, (long long)l->groups,
                          (long long)l->out);
    }
    l->qz = need_int(st, base, ".qzeros", l->groups, l->out / 8, "groups, out-features/8", err);
    if (!l->qz)
        return HY_E_FORMAT;
    char gname[HY_ST_MAX_NAME + 16];
    snprintf(gname, sizeof gname, "%s.g_idx", base);
    const struct hy_st_itensor *gi = NULL;
    if (hy_st_find_int(st, gname) || hy_st_find_stored(st, gname)) {
        gi = need_int(st, base, ".g_idx", l->in, -1, "in-features", err);
        if (!gi)
            return HY_E_FORMAT;
    } else if (q->desc_act) {
        return hy_err_set(err, HY_E_FORMAT, "GPTQ tensor %s is missing: desc_act needs it", gname);
    }
    l->g = malloc((size_t)l->in * sizeof *l->g);
    l->scale = malloc((size_t)(l->groups * l->out) * sizeof *l->scale);
    l->zero = malloc((size_t)(l->groups * l->out));
    if (!l->g || !l->scale || !l->zero)
        return hy_err_set(err, HY_E_NOMEM, "out of memory reading %s", base);
    for (int64_t i = 0; i < l->in; i++) {
        l->g[i] = gi ? hy_st_i32(gi, i) : (int32_t)(i / gs);
        if (l->g[i] < 0 || l->g[i] >= l->groups)
            return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s[%lld] is %d, outside [0, %lld) "
                              "(the groups)", hy_st_file_path(st, gi->file), gname, (long long)i,
                              (int)l->g[i], (long long)l->groups);
    }
    hy_dtype_to_f32(l->scale, sc->data, sc->dtype, (size_t)(l->groups * l->out));
    for (int64_t k = 0; k < l->groups * l->out; k++)
        if (!isfinite(l->scale[k]))
            return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s[%lld][%lld] is %g; scales must be "
                              "finite", hy_st_file_path(st, sc->file), name,
                              (long long)(k / l->out), (long long)(k % l->out), l->scale[k]);
    const bool minus_one = q->method != HY_QUANT_GPTQ || q->zero_minus_one;
    for (int64_t g = 0; g < l->groups; g++)
        for (int64_t o = 0; o < l->out; o++) {
            uint32_t p = (uint32_t)hy_st_i32(l->qz, g * (l->out / 8) + o / 8);
            p = (p >> (4 * (o % 8))) + (minus_one ? 1u : 0u);
            l->zero[g * l->out + o] = (int8_t)(p & 15u);
        }
    return HY_OK;
}

/* Everything named <base>.bias, .weight beside a qweight: a bias must be all zeros (the
 * projections have none), a float weight is a conflict. */
static hy_status check_extra(const struct hy_st *st, const char *base, bool *zero_bias,
                             struct hy_err *err)
{
    char name[HY_ST_MAX_NAME + 16];
    snprintf(name, sizeof name, "%s.weight", base);
    const struct hy_st_tensor *t = hy_st_find_stored(st, name);
    if (t)
        return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s is stored beside %s" SUF_QW "; a GPTQ "
                          "linear has only qweight, qzeros, scales, g_idx (and bias)",
                          hy_st_file_path(st, t->file), name, base);
    snprintf(name, sizeof name, "%s.bias", base);
    t = hy_st_find_stored(st, name);
    *zero_bias = false;
    if (!t)
        return HY_OK;
    float v = 0;
    for (int64_t i = 0; i < t->n_elems && v == 0; i++)
        hy_dtype_to_f32(&v, (const unsigned char *)t->data + (size_t)i * hy_dtype_size(t->dtype),
                        t->dtype, 1);
    if (v != 0 || hy_dtype_block_elems(t->dtype) != 1)
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: tensor %s is not all zeros; the "
                          "HunYuanDenseV1 projections have no bias", hy_st_file_path(st, t->file),
                          name);
    *zero_bias = true;
    return HY_OK;
}

/* Stray GPTQ tensors (qzeros / g_idx / scales without a qweight) are errors. */
static hy_status check_strays(const struct hy_st *st, struct hy_err *err)
{
    static const char *const sufs[3] = {".qzeros", ".g_idx", ".scales"};
    char qw[HY_ST_MAX_NAME + 16];
    size_t n_int = hy_st_int_count(st), n = n_int + hy_st_count(st);
    for (size_t i = 0; i < n; i++) {
        const char *name = i < n_int ? hy_st_int_at(st, i)->name : hy_st_at(st, i - n_int)->name;
        int file = i < n_int ? hy_st_int_at(st, i)->file : hy_st_at(st, i - n_int)->file;
        for (int k = 0; k < 3; k++)
            if (ends_with(name, sufs[k])) {
                snprintf(qw, sizeof qw, "%.*s" SUF_QW, (int)(strlen(name) - strlen(sufs[k])),
                         name);
                if (!hy_st_find_int(st, qw))
                    return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s has no %s beside it",
                                      hy_st_file_path(st, file), name, qw);
            }
        if (i < n_int && !ends_with(name, SUF_QW) && !ends_with(name, ".qzeros") &&
            !ends_with(name, ".g_idx"))
            return hy_err_set(err, HY_E_UNSUPPORTED, "%s: integer tensor %s (%s) is not part of "
                              "a GPTQ linear", hy_st_file_path(st, file), name,
                              hy_st_int_type_name(hy_st_int_at(st, i)->type));
    }
    return HY_OK;
}

hy_status hy_load_gptq_prepare(struct hy_st *st, const struct hy_config *cfg,
                               const struct hy_quant_config *q, enum hy_dtype quant,
                               struct hy_err *err)
{
    (void)cfg;
    size_t n_int = hy_st_int_count(st), n_qw = 0;
    for (size_t i = 0; i < n_int; i++)
        n_qw += ends_with(hy_st_int_at(st, i)->name, SUF_QW);
    if (n_qw == 0 && q->method != HY_QUANT_GPTQ && n_int == 0)
        return HY_OK;
    if (quant == HY_DTYPE_F8_E4M3)
        return hy_err_set(err, HY_E_UNSUPPORTED, "--quant fp8 does not apply to a GPTQ "
                          "checkpoint (it is 4-bit already): load it without --quant");
    hy_status s = check_strays(st, err);
    if (s)
        return s;
    if (n_qw == 0)
        return hy_err_set(err, HY_E_FORMAT, "quantization_config says gptq but no tensor is a "
                          "<linear>" SUF_QW);
    if (q->method != HY_QUANT_GPTQ)
        HY_LOGW("the checkpoint stores GPTQ .qweight tensors but has no gptq quantization "
                "config: reading them as 4-bit GPTQ v1 (zeros stored minus one), group size "
                "from the scales");
    struct hy_pool *pool = NULL;
    if (hy_pool_create(&pool, 0, NULL) != HY_OK)
        pool = NULL; /* dequantize on this thread alone */
    char base[HY_ST_MAX_NAME], wname[HY_ST_MAX_NAME + 8];
    int n_done = 0, n_bias = 0, n_gidx = 0;
    int64_t gs_seen = 0;
    for (size_t i = 0; i < n_int && !s; i++) {
        const char *name = hy_st_int_at(st, i)->name;
        if (!ends_with(name, SUF_QW))
            continue;
        snprintf(base, sizeof base, "%.*s", (int)(strlen(name) - strlen(SUF_QW)), name);
        struct gptq_linear l = {0};
        bool zb = false;
        s = check_extra(st, base, &zb, err);
        if (!s)
            s = linear_read(st, q, base, &l, err);
        if (!s) {
            l.w = malloc((size_t)(l.out * l.in) * 2);
            if (!l.w)
                s = hy_err_set(err, HY_E_NOMEM, "out of memory dequantizing %s", base);
        }
        if (!s) {
            hy_pool_for(pool, (l.out + OUT_CHUNK - 1) / OUT_CHUNK, 4, deq_cols, &l);
            snprintf(wname, sizeof wname, "%s.weight", base);
            int64_t shape[2] = {l.out, l.in};
            s = hy_st_put(st, wname, l.qw->file, HY_DTYPE_BF16, 2, shape, l.w, true, err);
            l.w = NULL; /* the set owns it now (also when the put failed) */
            n_done++;
            n_bias += zb;
            snprintf(wname, sizeof wname, "%s.g_idx", base);
            n_gidx += hy_st_find_int(st, wname) != NULL;
            gs_seen = l.in / l.groups;
        }
        linear_free(&l);
    }
    hy_pool_destroy(pool);
    if (!s)
        HY_LOGI("GPTQ checkpoint: %d linears 4-bit (group size %lld%s, %s zeros, %d with g_idx%s, "
                "%d zero biases ignored), dequantized to bf16 for the kernels",
                n_done, (long long)(q->method == HY_QUANT_GPTQ ? q->group_size : gs_seen),
                q->method == HY_QUANT_GPTQ && q->group_size < 0 ? ": one group" : "",
                q->method == HY_QUANT_GPTQ && !q->zero_minus_one ? "v2" : "v1 (minus one)",
                n_gidx, q->desc_act ? ", desc_act" : "", n_bias);
    return s;
}
