/* make_fp8.c: block-scaled fp8 projections for `hymt make-test-model --fp8` (make_fp8.h). */
#include "cli/make_fp8.h"
#include "cli/make_weights.h"

#include "core/fp8.h"
#include "core/threads.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUF_W "_proj.weight"
#define SUF_S "_scale_inv"

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

static bool is_proj(const struct hy_st_wtensor *t)
{
    return t->n_dims == 2 && ends_with(t->name, SUF_W);
}

size_t cli_mk_fp8_count(const struct hy_st_wtensor *t, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += is_proj(&t[i]);
    return k;
}

static int64_t nblocks(int64_t x) { return (x + CLI_MK_FP8_BLOCK - 1) / CLI_MK_FP8_BLOCK; }

bool cli_mk_fp8_list(struct hy_st_wtensor *t, char (*names)[HY_ST_MAX_NAME], size_t *n,
                     size_t cap)
{
    const size_t n0 = *n, n1 = n0 + cli_mk_fp8_count(t, n0);
    if (n1 > cap)
        return false;
    struct hy_st_wtensor *ot = malloc((n0 ? n0 : 1) * sizeof *ot);
    char(*on)[HY_ST_MAX_NAME] = malloc((n0 ? n0 : 1) * sizeof *on);
    if (!ot || !on) {
        free(ot);
        free(on);
        return false;
    }
    memcpy(ot, t, n0 * sizeof *ot);
    memcpy(on, names, n0 * sizeof *on);
    for (size_t i = 0; i < n0; i++) /* names[] is rewritten below: read the copies */
        ot[i].name = on[i];
    size_t k = 0;
    for (size_t i = 0; i < n0; i++) {
        t[k] = ot[i];
        memcpy(names[k], on[i], HY_ST_MAX_NAME);
        t[k].name = names[k];
        if (!is_proj(&ot[i])) {
            k++;
            continue;
        }
        t[k].dtype = HY_DTYPE_F8_E4M3;
        k++;
        t[k] = ot[i];
        snprintf(names[k], HY_ST_MAX_NAME, "%.*s" SUF_S, HY_ST_MAX_NAME - 16, on[i]);
        t[k].name = names[k];
        t[k].dtype = HY_DTYPE_F32;
        t[k].shape[0] = nblocks(ot[i].shape[0]);
        t[k].shape[1] = nblocks(ot[i].shape[1]);
        k++;
    }
    *n = k;
    free(ot);
    free(on);
    return true;
}

/* The weight w's values as the unquantized checkpoint holds them (src), in float32 (*out,
 * malloc'ed), and its block scales (*scale, malloc'ed). */
static hy_status weight_values(struct hy_pool *pool, const struct hy_st_wtensor *w, uint64_t seed,
                               int64_t hidden, enum hy_dtype src, float **out, float **scale,
                               struct hy_err *err)
{
    const int64_t rows = w->shape[0], cols = w->shape[1], nbc = nblocks(cols);
    const size_t n = (size_t)(rows * cols), ns = (size_t)(nblocks(rows) * nbc);
    struct hy_st_wtensor u = *w;
    u.dtype = src;
    char name[HY_ST_MAX_NAME];
    snprintf(name, sizeof name, "%s", w->name);
    u.name = name;
    float *v = malloc((n ? n : 1) * sizeof *v), *s = calloc(ns ? ns : 1, sizeof *s);
    void *raw = malloc((n ? n : 1) * hy_dtype_size(src));
    if (!v || !s || !raw) {
        free(v);
        free(s);
        free(raw);
        return hy_err_set(err, HY_E_NOMEM, "out of memory quantizing %s", w->name);
    }
    cli_mk_fill(pool, &u, seed, hidden, raw, n * hy_dtype_size(src));
    hy_dtype_to_f32(v, raw, src, n);
    free(raw);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            float *b = &s[(r / CLI_MK_FP8_BLOCK) * nbc + c / CLI_MK_FP8_BLOCK];
            *b = fmaxf(*b, fabsf(v[r * cols + c]));
        }
    for (size_t i = 0; i < ns; i++)
        s[i] = s[i] > 0 ? s[i] / HY_FP8_E4M3_MAX : 1.0f;
    *out = v;
    *scale = s;
    return HY_OK;
}

struct encode_job {
    const float *v, *s;
    uint8_t *codes;
    int64_t cols, nbc;
};

static void encode_rows(void *ctx, int64_t r0, int64_t r1, int tid)
{
    (void)tid;
    const struct encode_job *j = ctx;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t c = 0; c < j->cols; c++) {
            float x = j->v[r * j->cols + c] /
                      j->s[(r / CLI_MK_FP8_BLOCK) * j->nbc + c / CLI_MK_FP8_BLOCK];
            x = fminf(fmaxf(x, -HY_FP8_E4M3_MAX), HY_FP8_E4M3_MAX);
            j->codes[r * j->cols + c] = hy_fp8_e4m3_from_f32(x);
        }
}

hy_status cli_mk_fp8_fill(struct hy_pool *pool, const struct hy_st_wtensor *t, size_t i,
                          uint64_t seed, int64_t hidden, enum hy_dtype src, void *buf,
                          size_t nbytes, bool *done, struct hy_err *err)
{
    const struct hy_st_wtensor *e = &t[i];
    *done = (e->dtype == HY_DTYPE_F8_E4M3 && is_proj(e)) ||
            (i > 0 && e->dtype == HY_DTYPE_F32 && ends_with(e->name, SUF_W SUF_S) &&
             t[i - 1].dtype == HY_DTYPE_F8_E4M3);
    if (!*done)
        return HY_OK;
    const struct hy_st_wtensor *w = e->dtype == HY_DTYPE_F8_E4M3 ? e : &t[i - 1];
    float *v = NULL, *s = NULL;
    hy_status st = weight_values(pool, w, seed, hidden, src, &v, &s, err);
    if (st)
        return st;
    const int64_t rows = w->shape[0], cols = w->shape[1], nbc = nblocks(cols);
    if (e == w) {
        HY_ASSERT(nbytes == (size_t)(rows * cols));
        struct encode_job j = {v, s, buf, cols, nbc};
        hy_pool_for(pool, rows, 16, encode_rows, &j);
    } else {
        HY_ASSERT(nbytes == (size_t)(nblocks(rows) * nbc) * sizeof(float));
        memcpy(buf, s, nbytes);
    }
    free(v);
    free(s);
    return HY_OK;
}

json_t *cli_mk_fp8_config(void)
{
    return json_pack("{s:s, s:s, s:s, s:[i, i], s:[s]}", "quant_method", "fp8",
                     "activation_scheme", "dynamic", "fmt", "e4m3", "weight_block_size",
                     CLI_MK_FP8_BLOCK, CLI_MK_FP8_BLOCK, "modules_to_not_convert", "lm_head");
}
