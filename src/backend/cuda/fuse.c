/* fuse.c: fused projections of the CUDA backend (backend.h: weight_fuse, matmul_n,
 * matmul_glu). A layer's q/k/v (and gate/up) read the same input; at 9 rows and more each
 * is a cuBLAS GEMM, and the small ones (k and v: 1024 x 4096 for the 7B) run far below the
 * copy bandwidth (split-K, a few blocks; bench/RESULTS.md). Laid out one after another in
 * one allocation they are one GEMM of the summed rows, whose output a small kernel splits
 * (or, for gate/up, combines with silu: silu_mul's work, with no extra pass). q/k/v's
 * output is left unsplit for rope_norm_store, which reads the three from its rows (any
 * other op splits it first: hy_cuda_ctx).
 * Up to 8 rows (the decode GEMVs, per row and already at the bandwidth), in batch-invariant
 * mode, and for anything but bf16 matrices (quantized, fp8, padded) the ops are the
 * separate matmuls, so those results are the same bits as without fusing; but q/k/v of 1
 * or 2 rows is one GEMV over the summed rows, left unsplit likewise: a GEMV row's sum is
 * the same bits whatever rows the launch has (gemv_util.cuh), so this saves two launches
 * a layer of a small decode step and changes no bit. */
#include "backend/cuda/cuda_ctx.h"

#include <stdlib.h>

static int group_of(const struct cuda_ctx *c, const void *p)
{
    for (int i = 0; i < c->n_fused; i++)
        if ((const char *)p >= c->fused[i].base &&
            (const char *)p < c->fused[i].base + c->fused[i].bytes)
            return i;
    return -1;
}

bool hy_cuda_fused_free(struct cuda_ctx *c, void *p)
{
    int g = group_of(c, p);
    if (g < 0)
        return false;
    if (--c->fused[g].refs == 0) {
        HY_CUDA_CHECK(cudaFree(c->fused[g].base));
        c->fused[g] = c->fused[--c->n_fused];
    }
    return true;
}

static bool is_padded(const struct cuda_ctx *c, const void *p)
{
    for (int i = 0; i < c->n_padded; i++)
        if (c->padded[i] == p)
            return true;
    return false;
}

bool hy_cuda_weight_fuse(struct hy_backend *be, struct hy_weight *const *ws, int n)
{
    struct cuda_ctx *c = hy_cuda_ctx(be);
    if (n < 2 || n > 4 || c->mode != STEP_NONE)
        return false;
    size_t bytes = 0;
    for (int i = 0; i < n; i++) {
        const struct hy_weight *w = ws[i];
        if (w->dtype != HY_DTYPE_BF16 || w->rows <= 1 || w->cols != ws[0]->cols || !w->data ||
            is_padded(c, w->data) || group_of(c, w->data) >= 0)
            return false;
        bytes += (size_t)(w->rows * w->cols) * 2;
    }
    if (c->n_fused == c->fused_cap) {
        int cap = c->fused_cap ? 2 * c->fused_cap : 64;
        struct hy_cuda_fused *f = realloc(c->fused, (size_t)cap * sizeof *f);
        if (!f)
            return false;
        c->fused = f, c->fused_cap = cap;
    }
    char *base = NULL;
    if (cudaMalloc((void **)&base, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* out of memory: the weights stay apart */
        return false;
    }
    c->xbf_x = NULL;
    c->xq_x = NULL;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t b = (size_t)(ws[i]->rows * ws[i]->cols) * 2;
        HY_CUDA_CHECK(cudaMemcpyAsync(base + at, ws[i]->data, b, cudaMemcpyDeviceToDevice,
                                      c->stream));
        at += b;
    }
    HY_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    at = 0;
    for (int i = 0; i < n; i++) {
        be->i->free(be, (void *)ws[i]->data);
        ws[i]->data = base + at;
        at += (size_t)(ws[i]->rows * ws[i]->cols) * 2;
    }
    c->fused[c->n_fused++] = (struct hy_cuda_fused){base, bytes, n};
    return true;
}

/* Whether ws[0..n-1] are bf16 matrices of one cols, one after another in memory. */
static bool adjacent(const struct hy_weight *const *ws, int n, int64_t *rows)
{
    for (int i = 0; i < n; i++) {
        if (ws[i]->dtype != HY_DTYPE_BF16 || ws[i]->rows <= 1 || ws[i]->cols != ws[0]->cols)
            return false;
        if (i > 0 && (const char *)ws[i]->data !=
                         (const char *)ws[i - 1]->data + ws[i - 1]->rows * ws[i - 1]->cols * 2)
            return false;
        rows[i] = ws[i]->rows;
    }
    return true;
}

void hy_cuda_split_flush(struct cuda_ctx *c)
{
    const int T = c->split_T;
    const int64_t R = c->split_rows[0] + c->split_rows[1] + c->split_rows[2];
    c->split_T = 0;
    for (int i = 0, at = 0; i < 3; at += (int)c->split_rows[i++])
        HY_CUDA_CHECK(cudaMemcpy2DAsync(c->split_out[i], (size_t)c->split_rows[i] * sizeof(float),
                                        c->cbuf + at, (size_t)R * sizeof(float),
                                        (size_t)c->split_rows[i] * sizeof(float), (size_t)T,
                                        cudaMemcpyDeviceToDevice, c->stream));
}

bool hy_cuda_split_take(struct cuda_ctx *c, struct hy_cuda_qkv_src *a, const float *q,
                        const float *k, const float *v, int T, int64_t qd, int64_t kvd)
{
    if (!c->split_T || c->split_T != T || c->split_out[0] != q || c->split_out[1] != k ||
        c->split_out[2] != v || c->split_rows[0] != qd || c->split_rows[1] != kvd ||
        c->split_rows[2] != kvd)
        return false;
    const int64_t R = qd + 2 * kvd;
    *a = (struct hy_cuda_qkv_src){c->cbuf, c->cbuf + qd, c->cbuf + qd + kvd, R, R, R,
                                  c->split_out[1], c->split_out[2]};
    c->split_T = 0;
    return true;
}

/* q/k/v past the GEMV rows (or at 1 or 2 rows where the GEMV takes them: unsplit_gemv), in
 * one piece of cbuf: the product alone, its split left to rope_norm_store (which reads the
 * rows in place, saving a kernel and a pass) or to the next op. Returns whether xbf holds
 * x afterwards. */
static bool unsplit(struct cuda_ctx *c, float *const *outs, const float *x, const uint16_t *w,
                    const int64_t *rows, int64_t cols, int T, bool ready,
                    const struct hy_cuda_mm_scratch *s)
{
    const int64_t R = rows[0] + rows[1] + rows[2];
    const bool held = hy_cuda_matmul_bf16(c->stream, c->blas, c->cbuf, x, w, R, cols, T, false,
                                          ready, s);
    for (int i = 0; i < 3; i++)
        c->split_out[i] = outs[i], c->split_rows[i] = rows[i];
    c->split_T = T;
    return held;
}

/* Whether hy_cuda_matmul_bf16 takes T rows by its GEMV for any of the weights (matmul.cu:
 * always at 1 or 2 rows, given 8-column groups and 16-byte aligned x and weights; the
 * members of a fused allocation are then aligned as its start). */
static bool unsplit_gemv(const float *x, const void *w, int64_t cols, int T)
{
    return T >= 1 && T <= 2 && cols % 8 == 0 && !((uintptr_t)x & 15) && !((uintptr_t)w & 15);
}

/* One fused product when it applies (not batch-invariant, adjacent bf16 weights, past the
 * GEMV rows); false: nothing done. */
static bool fused(struct cuda_ctx *c, float *const *outs, const float *x,
                  const struct hy_weight *const *ws, int n, int T, bool glu)
{
    int64_t rows[4];
    if (c->invariant || n < 2 || n > 4 || !adjacent(ws, n, rows))
        return false;
    const struct hy_cuda_mm_scratch s = {c->xbf, c->xbf_cap, c->wbf, c->wbf_cap, c->cbuf,
                                         c->cbuf_cap};
    const int64_t cols = ws[0]->cols;
    bool ready = c->xbf_x == x && c->xbf_T == T && c->xbf_cols == cols, held = false, o = false;
    const int64_t R = rows[0] + rows[1] + (n > 2 ? rows[2] : 0);
    if (!glu && n == 3 && (T > HY_CUDA_GEMV_ROWS || unsplit_gemv(x, ws[0]->data, cols, T)) &&
        R <= INT32_MAX &&
        (size_t)T * (size_t)R <= c->cbuf_cap)
        held = unsplit(c, outs, x, ws[0]->data, rows, cols, T, ready, &s);
    else if (!hy_cuda_matmul_bf16_fused(c->stream, c->blas, outs, x, ws[0]->data, rows, n, cols,
                                        T, glu, ready, &held, &o, &s))
        return false;
    c->xbf_x = held ? x : NULL;
    c->xbf_T = T, c->xbf_cols = cols;
    for (int i = 0; i < (glu ? 1 : n); i++) { /* an output over an input xbf / xq hold */
        const float *b = outs[i], *e = outs[i] + (int64_t)T * rows[i];
        if (c->xbf_x && b < c->xbf_x + (int64_t)c->xbf_T * c->xbf_cols && c->xbf_x < e)
            c->xbf_x = NULL;
        if (c->xq_x && b < c->xq_x + (int64_t)c->xq_T * c->xq_cols && c->xq_x < e)
            c->xq_x = NULL;
    }
    if (o) /* xbf holds the glu output now, for the down projection next */
        c->xbf_x = outs[0], c->xbf_cols = rows[0];
    return true;
}

void hy_cuda_matmul_n(struct hy_backend *be, float *const *outs, const float *x,
                      const struct hy_weight *const *ws, int n, int T)
{
    struct cuda_ctx *c = hy_cuda_ctx(be);
    HY_ASSERT(n >= 1 && n <= 4);
    if (T <= 0)
        return;
    if (hy_cuda_replaying(c)) { /* the recording made the same choices */
        c->xbf_x = NULL;
        c->xq_x = NULL;
        return;
    }
    if (!fused(c, outs, x, ws, n, T, false))
        for (int i = 0; i < n; i++)
            be->i->matmul(be, outs[i], x, ws[i], T);
}

void hy_cuda_matmul_glu(struct hy_backend *be, float *out, float *tmp, const float *x,
                        const struct hy_weight *gate, const struct hy_weight *up, int T)
{
    struct cuda_ctx *c = hy_cuda_ctx(be);
    if (T <= 0)
        return;
    if (hy_cuda_replaying(c)) {
        c->xbf_x = NULL;
        c->xq_x = NULL;
        return;
    }
    const struct hy_weight *ws[2] = {gate, up};
    float *outs[2] = {out, tmp};
    if (fused(c, outs, x, ws, 2, T, true))
        return;
    be->i->matmul(be, out, x, gate, T);
    be->i->matmul(be, tmp, x, up, T);
    be->i->silu_mul(be, out, out, tmp, T * gate->rows);
}
