/* cuda_test_util.h: helpers shared by the CUDA backend's op tests (include after test.h):
 * random numbers (ops_test_util.h's xorshift), random quantized weights and their double
 * reference, the error/bound comparison of the quantized-matmul tests, one matmul through
 * a backend or through hy_cuda_matmul_q with its own scratch, one embedding lookup.
 * Backend level only (the model-level comparison is tests/cuda/cuda_model_util.h).
 * Header-only, static functions: each test is one executable. Buffers a helper takes are
 * the caller's; a helper frees what it allocates. */
#ifndef HY_BACKEND_CUDA_TEST_UTIL_H
#define HY_BACKEND_CUDA_TEST_UTIL_H

#include "backend/cpu/ops_test_util.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/qmatmul.h"
#include "core/fp8.h"
#include "core/quant.h"
#include "test.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A block type as the quantized-matmul tests take it: its name, the host dtype, the CUDA
 * backend's code (qmatmul.h) and its block of columns. CT_QTYPE(Q8_0, 32) spells one. */
struct ct_qtype {
    const char *name;
    enum hy_dtype dt;
    int qt;
    int block;
};
#define CT_QTYPE(T, block) {#T, HY_DTYPE_##T, HY_CUDA_##T, block}

/* Uniform in [-1, 1), never exactly 0: the top 24 bits of the next value. */
static inline float rng_unit(struct rng *r)
{
    return (float)((rng_next(r) >> 40) + 0.5) / (float)(1 << 23) - 1.0f;
}

/* A random rows x cols weight quantized to dt on the host (block layout, malloc'ed). Row r
 * is scaled by 2^(r%7 - 3); with spread > 0 also each block of `spread` columns by
 * 2^((r + c/spread)%5 - 2). Scaling by powers of two is exact, so the values do not depend
 * on how the factors are applied. */
static inline void *ct_make_qweight(struct rng *rg, enum hy_dtype dt, int64_t rows, int64_t cols,
                                    int spread)
{
    size_t rb = hy_dtype_row_bytes(dt, cols);
    unsigned char *w = malloc(rb * (size_t)rows);
    float *row = malloc((size_t)cols * sizeof *row);
    HY_ASSERT(w && row);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) {
            int e = (int)(r % 7) - 3;
            if (spread > 0)
                e += (int)((r + c / spread) % 5) - 2;
            row[c] = ldexpf(rng_unit(rg), e);
        }
        hy_dtype_from_f32(w + (size_t)r * rb, row, dt, (size_t)cols);
    }
    free(row);
    return w;
}

/* |w| of each element of a host row, as the test bounds it (a hook of ct_reference). */
typedef void (*ct_abs_row_fn)(float *dst, const unsigned char *row, enum hy_dtype dt,
                              int64_t cols);

/* A random fp8 weight: codes with a float32 scale per block of br x bc weights (max|block|
 * / 448: per row br = 1, bc = cols; per tensor br = rows, bc = cols; block-scaled fp8
 * HY_DTYPE_F8_B128 br = bc = 128, the last blocks shorter); rows scaled over 2^-3..2^3 and
 * column blocks over 2^0..2^2 more, never zero; deq the values it stands for (float32
 * e4m3(code) * scale). src: the host form an F8_B128 weight_upload takes (backend.h). */
struct ct_fp8w {
    uint8_t *codes; /* [rows, cols] */
    float *scale;   /* [n_scale] = [ceil(rows/br), ceil(cols/bc)] */
    float *deq;     /* [rows, cols] e4m3(code) * scale */
    int64_t rows, cols, n_scale, br, bc;
    struct hy_f8b_src src;
};

/* Fills codes [rows, cols], scale [ceil(rows/br) * ceil(cols/bc)] and deq [rows, cols]
 * (the caller's) as ct_fp8w describes; v: scratch of rows*cols floats. */
static inline void ct_fp8w_fill(struct rng *rg, int64_t rows, int64_t cols, int64_t br,
                                int64_t bc, uint8_t *codes, float *scale, float *deq, float *v)
{
    const int64_t nbc = (cols + bc - 1) / bc, nbr = (rows + br - 1) / br;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            v[r * cols + c] = ldexpf(rng_unit(rg), (int)(r % 7) - 3 + (int)((c / bc) % 3));
    for (int64_t i = 0; i < nbr * nbc; i++) {
        const int64_t r0 = i / nbc * br, c0 = i % nbc * bc;
        float m = 0;
        for (int64_t r = r0; r < rows && r < r0 + br; r++)
            for (int64_t c = c0; c < cols && c < c0 + bc; c++)
                m = fmaxf(m, fabsf(v[r * cols + c]));
        scale[i] = m / HY_FP8_E4M3_MAX;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            const float s = scale[r / br * nbc + c / bc];
            codes[r * cols + c] = hy_fp8_e4m3_from_f32(v[r * cols + c] / s);
            deq[r * cols + c] = hy_fp8_e4m3_to_f32(codes[r * cols + c]) * s;
        }
}

static inline void ct_fp8w_make_blocks(struct ct_fp8w *w, struct rng *rg, int64_t rows,
                                       int64_t cols, int64_t br, int64_t bc)
{
    w->rows = rows, w->cols = cols, w->br = br, w->bc = bc;
    w->n_scale = (rows + br - 1) / br * ((cols + bc - 1) / bc);
    float *v = malloc((size_t)(rows * cols) * sizeof *v);
    w->codes = malloc((size_t)(rows * cols));
    w->scale = malloc((size_t)w->n_scale * sizeof *w->scale);
    w->deq = malloc((size_t)(rows * cols) * sizeof *w->deq);
    HY_ASSERT(v && w->codes && w->scale && w->deq);
    ct_fp8w_fill(rg, rows, cols, br, bc, w->codes, w->scale, w->deq, v);
    w->src = (struct hy_f8b_src){w->codes, w->scale};
    free(v);
}

static inline void ct_fp8w_make(struct ct_fp8w *w, struct rng *rg, int64_t rows, int64_t cols,
                                bool per_row)
{
    ct_fp8w_make_blocks(w, rg, rows, cols, per_row ? 1 : rows, cols);
}

static inline void ct_fp8w_free(struct ct_fp8w *w)
{
    free(w->codes);
    free(w->scale);
    free(w->deq);
}

/* |d sc q| + |dmin m| of each element of a Q4_K row (the parts its GEMV sums apart); |w|
 * for any other dtype (a ct_abs_row_fn). */
static inline void ct_abs_parts(float *dst, const unsigned char *row, enum hy_dtype dt,
                                int64_t cols)
{
    hy_dtype_to_f32(dst, row, dt, (size_t)cols);
    if (dt != HY_DTYPE_Q4_K) {
        for (int64_t c = 0; c < cols; c++)
            dst[c] = fabsf(dst[c]);
        return;
    }
    for (int64_t b = 0; b < cols / HY_QK_K; b++) {
        struct hy_q4_k_block blk;
        memcpy(&blk, row + (size_t)b * sizeof blk, sizeof blk);
        float d = hy_f16_to_f32(blk.d), dmin = hy_f16_to_f32(blk.dmin);
        for (int j = 0; j < 8; j++) {
            int sc, m;
            hy_q4_k_scale_min(j, blk.scales, &sc, &m);
            for (int l = 0; l < 32; l++) {
                int q = (blk.qs[32 * (j / 2) + l] >> (4 * (j & 1))) & 15;
                dst[b * HY_QK_K + 32 * j + l] = fabsf(d * (float)sc * (float)q) + fabsf(dmin * (float)m);
            }
        }
    }
}

/* ref[t*rows + r] = Σ_c x w (double, each row dequantized once by the host dequantizer
 * hy_ref_matmul uses element by element: too slow for the large cases, so cases with
 * rows·cols·T <= check_max check that the two agree exactly) and s = S = Σ_c |x w|; when
 * abs_row is given, also sp = Σ_c |x|·abs_row(w) (sp may be NULL otherwise). */
static inline void ct_reference(const struct hy_weight *hw, const float *x, int T, float *ref,
                                double *s, double *sp, ct_abs_row_fn abs_row, int64_t check_max)
{
    float *wrow = malloc((size_t)hw->cols * sizeof *wrow);
    float *prow = abs_row ? malloc((size_t)hw->cols * sizeof *prow) : NULL;
    HY_ASSERT(wrow && (prow || !abs_row));
    size_t rb = hy_dtype_row_bytes(hw->dtype, hw->cols);
    for (int64_t r = 0; r < hw->rows; r++) {
        const unsigned char *src = (const unsigned char *)hw->data + (size_t)r * rb;
        hy_dtype_to_f32(wrow, src, hw->dtype, (size_t)hw->cols);
        if (abs_row)
            abs_row(prow, src, hw->dtype, hw->cols);
        for (int t = 0; t < T; t++) {
            const float *xt = x + (int64_t)t * hw->cols;
            double a = 0, sa = 0, sb = 0;
            for (int64_t c = 0; c < hw->cols; c++) {
                a += (double)xt[c] * wrow[c];
                sa += fabs((double)xt[c] * wrow[c]);
                if (abs_row)
                    sb += fabs((double)xt[c]) * prow[c];
            }
            ref[(int64_t)t * hw->rows + r] = (float)a;
            s[(int64_t)t * hw->rows + r] = sa;
            if (abs_row)
                sp[(int64_t)t * hw->rows + r] = sb;
        }
    }
    free(wrow);
    free(prow);
    if (hw->rows * hw->cols * T <= check_max) {
        float *want = malloc((size_t)(hw->rows * T) * sizeof *want);
        hy_ref_matmul(want, x, hw, T);
        CHECKF(memcmp(want, ref, (size_t)(hw->rows * T) * sizeof *want) == 0,
               "the test's reference equals hy_ref_matmul (%s %lldx%lld)",
               hy_dtype_name(hw->dtype), (long long)hw->rows, (long long)hw->cols);
        free(want);
    }
}

/* The elements of got (n = T x rows) outside (rel + ulps·U)·S[i] + 1e-30 of ref, U = 2^-24;
 * prints the first 5. *worst = this call's largest error/bound (infinite for NaN). */
static inline int ct_compare(const char *what, const float *got, const float *ref,
                             const double *S, int64_t rows, int64_t n, double rel, double ulps,
                             double *worst)
{
    int bad = 0;
    double wl = 0;
    for (int64_t i = 0; i < n; i++) {
        double bound = (rel + ulps * U32) * S[i] + 1e-30;
        double err = fabs((double)got[i] - ref[i]);
        if (!(err <= bound)) {
            if (bad < 5)
                fprintf(stderr,
                        "  %s: out[t=%lld][row=%lld]: got %.9g want %.9g err %.3g bound %.3g\n",
                        what, (long long)(i / rows), (long long)(i % rows), got[i], ref[i], err,
                        bound);
            bad++;
        }
        double r = isnan(err) ? INFINITY : err / bound;
        wl = r > wl ? r : wl;
    }
    *worst = wl;
    return bad;
}

/* out = x · dwᵀ through the backend (dw uploaded): x [T, cols] copied to a device buffer at
 * xoff floats past an allocation's start, got [T, rows] poisoned with NaN on the device
 * first, then downloaded. */
static inline void ct_backend_matmul(struct hy_backend *be, const struct hy_weight *dw,
                                     const float *x, int T, int xoff, float *got)
{
    const int64_t nx = (int64_t)T * dw->cols, no = (int64_t)T * dw->rows;
    float *dx = be->i->alloc(be, (size_t)(nx + xoff) * sizeof(float));
    float *dout = be->i->alloc(be, (size_t)no * sizeof(float));
    HY_ASSERT(dx && dout);
    for (int64_t i = 0; i < no; i++)
        got[i] = NAN;
    be->i->upload(be, dout, got, (size_t)no * sizeof(float));
    be->i->upload(be, dx + xoff, x, (size_t)nx * sizeof(float));
    be->i->matmul(be, dout, dx + xoff, dw, T);
    be->i->download(be, got, dout, (size_t)no * sizeof(float));
    be->i->free(be, dx);
    be->i->free(be, dout);
}

/* hy_cuda_matmul_q on a stream, handle and scratch of its own (xbf_cap, wbf_cap bf16 and
 * cbuf_cap float32 elements: tiny ones exercise the chunking): packed (qbytes, split
 * layout) times x [T, cols] into got [T, rows] (poisoned with NaN first). Returns what the
 * launcher returned (xbf holds x). */
static inline bool ct_matmul_q(const void *packed, size_t qbytes, int qt, int64_t rows,
                               int64_t cols, int T, const float *x, float *got, size_t xbf_cap,
                               size_t wbf_cap, size_t cbuf_cap)
{
    const int64_t nx = (int64_t)T * cols, no = (int64_t)T * rows;
    for (int64_t i = 0; i < no; i++)
        got[i] = NAN;
    cudaStream_t st;
    cublasHandle_t blas;
    void *dw, *dx, *dout, *xbf, *wbf, *cbuf;
    HY_CUDA_CHECK(cudaStreamCreate(&st));
    HY_CUBLAS_CHECK(cublasCreate(&blas));
    HY_CUBLAS_CHECK(cublasSetStream(blas, st));
    HY_CUDA_CHECK(cudaMalloc(&dw, qbytes));
    HY_CUDA_CHECK(cudaMalloc(&dx, (size_t)nx * sizeof(float)));
    HY_CUDA_CHECK(cudaMalloc(&dout, (size_t)no * sizeof(float)));
    HY_CUDA_CHECK(cudaMalloc(&xbf, xbf_cap * 2));
    HY_CUDA_CHECK(cudaMalloc(&wbf, wbf_cap * 2));
    HY_CUDA_CHECK(cudaMalloc(&cbuf, cbuf_cap * 4));
    HY_CUDA_CHECK(cudaMemcpy(dw, packed, qbytes, cudaMemcpyHostToDevice));
    HY_CUDA_CHECK(cudaMemcpy(dx, x, (size_t)nx * sizeof(float), cudaMemcpyHostToDevice));
    HY_CUDA_CHECK(cudaMemcpy(dout, got, (size_t)no * sizeof(float), cudaMemcpyHostToDevice));
    const struct hy_cuda_mm_scratch s = {xbf, xbf_cap, wbf, wbf_cap, cbuf, cbuf_cap};
    bool holds = hy_cuda_matmul_q(st, blas, dout, dx, dw, qt, rows, cols, T, false, &s);
    HY_CUDA_CHECK(cudaStreamSynchronize(st));
    HY_CUDA_CHECK(cudaMemcpy(got, dout, (size_t)no * sizeof(float), cudaMemcpyDeviceToHost));
    cudaFree(dw);
    cudaFree(dx);
    cudaFree(dout);
    cudaFree(xbf);
    cudaFree(wbf);
    cudaFree(cbuf);
    cublasDestroy(blas);
    cudaStreamDestroy(st);
    return holds;
}

/* qmmvq.h's bound on |out - Σ_c w x| for the int8-activation GEMV of a Q8_0 / Q4_0 /
 * Q4_G128 weight (host block layout: fp16 d, then the quants), in two parts per output
 * [t*rows + r]: quant = Σ_c |w_c|·amax_b(c)/254·(1 + 2^-20) (the int8 rounding of x) and
 * flt = (cols/4 + 64)·U·Σ_c |d_w,c|·24·(|x_c| + amax_b(c)/254) (the float32 roundings),
 * amax_b the largest |x| of the activation block of 32 columns holding c. */
static inline void ct_mmvq_bound(const struct hy_weight *hw, const float *x, int T,
                                 double *quant, double *flt)
{
    const int64_t rows = hw->rows, cols = hw->cols, B = hy_dtype_block_elems(hw->dtype);
    const size_t rb = hy_dtype_row_bytes(hw->dtype, cols), bb = hy_dtype_row_bytes(hw->dtype, B);
    float *w = malloc((size_t)cols * sizeof *w), *amax = malloc((size_t)(T * cols / 32) * sizeof *amax);
    double *dw = malloc((size_t)cols * sizeof *dw);
    HY_ASSERT(w && amax && dw && cols % 32 == 0 && cols % B == 0);
    for (int64_t i = 0; i < T * cols / 32; i++) {
        float m = 0;
        for (int j = 0; j < 32; j++)
            m = fmaxf(m, fabsf(x[i * 32 + j]));
        amax[i] = m;
    }
    for (int64_t r = 0; r < rows; r++) {
        const unsigned char *src = (const unsigned char *)hw->data + (size_t)r * rb;
        hy_dtype_to_f32(w, src, hw->dtype, (size_t)cols);
        for (int64_t c = 0; c < cols; c++) {
            uint16_t h;
            memcpy(&h, src + (size_t)(c / B) * bb, 2);
            dw[c] = fabs((double)hy_f16_to_f32(h));
        }
        for (int t = 0; t < T; t++) {
            const float *xt = x + (int64_t)t * cols;
            const float *at = amax + (int64_t)t * (cols / 32);
            double e = 0, f = 0;
            for (int64_t c = 0; c < cols; c++) {
                const double a = at[c / 32] / 254.0;
                e += fabs((double)w[c]) * a;
                f += dw[c] * 24.0 * (fabs((double)xt[c]) + a);
            }
            quant[(int64_t)t * rows + r] = e * (1 + 0x1p-20);
            flt[(int64_t)t * rows + r] = ((double)cols / 4 + 64) * U32 * f + 1e-30;
        }
    }
    free(w);
    free(amax);
    free(dw);
}

/* embed through the backend of a 77 x cols table of type dt (GGUF token tables) against
 * hy_ref_embed: every value the same bits (the output poisoned with NaN first). */
static inline void ct_embed_case(struct hy_backend *be, struct rng *rg, enum hy_dtype dt,
                                 int64_t cols)
{
    struct hy_err err = {{0}};
    const int64_t rows = 77;
    const int T = 5;
    const int32_t ids[5] = {0, 76, 13, 13, 40};
    void *hq = ct_make_qweight(rg, dt, rows, cols, 0);
    struct hy_weight hw = {dt, rows, cols, hq}, dw = hw;
    CHECKF(be->i->weight_upload(be, &dw, &err) == HY_OK, "%s", err.msg);
    float *want = malloc((size_t)(T * cols) * sizeof *want);
    float *got = malloc((size_t)(T * cols) * sizeof *got);
    HY_ASSERT(want && got);
    for (int64_t i = 0; i < T * cols; i++)
        got[i] = NAN;
    hy_ref_embed(want, &hw, ids, T);
    float *dout = be->i->alloc(be, (size_t)(T * cols) * sizeof(float));
    be->i->upload(be, dout, got, (size_t)(T * cols) * sizeof(float));
    be->i->embed(be, dout, &dw, ids, T);
    be->i->download(be, got, dout, (size_t)(T * cols) * sizeof(float));
    int bad = 0;
    for (int64_t i = 0; i < T * cols; i++)
        bad += memcmp(&got[i], &want[i], sizeof got[i]) != 0;
    CHECKF(bad == 0, "embed %s: %d of %lld values differ", hy_dtype_name(dt), bad,
           (long long)(T * cols));
    be->i->free(be, dout);
    be->i->free(be, (void *)dw.data);
    free(hq);
    free(want);
    free(got);
}

/* n floats of host memory h copied into a fresh device buffer. */
static inline float *dput(struct hy_backend *be, const float *h, int64_t n)
{
    float *d = be->i->alloc(be, (size_t)n * sizeof(float));
    HY_ASSERT(d);
    be->i->upload(be, d, h, (size_t)n * sizeof(float));
    return d;
}

static inline void dget(struct hy_backend *be, float *h, const float *d, int64_t n)
{
    be->i->download(be, h, d, (size_t)n * sizeof(float));
}

/* A device buffer of n floats filled with NaN. */
static inline float *dnan(struct hy_backend *be, int64_t n)
{
    float *h = fmalloc(n);
    for (int64_t i = 0; i < n; i++)
        h[i] = NAN;
    float *d = dput(be, h, n);
    free(h);
    return d;
}

/* The KV pool's element type on this backend. */
static inline enum hy_dtype kvt(struct hy_backend *be)
{
    return be->i->kv_dtype ? be->i->kv_dtype(be) : HY_DTYPE_F32;
}

/* h[0..n) as a pool of the backend's KV dtype holds them (bf16: rounded to nearest even,
 * in place), uploaded in that dtype. */
static inline void *kvput(struct hy_backend *be, float *h, int64_t n)
{
    const size_t es = hy_dtype_size(kvt(be));
    void *t = malloc((size_t)n * es), *d = be->i->alloc(be, (size_t)n * es);
    HY_ASSERT(t && d);
    hy_dtype_from_f32(t, h, kvt(be), (size_t)n);
    hy_dtype_to_f32(h, t, kvt(be), (size_t)n);
    be->i->upload(be, d, t, (size_t)n * es);
    free(t);
    return d;
}

static inline void kvget(struct hy_backend *be, float *h, const void *d, int64_t n)
{
    const size_t es = hy_dtype_size(kvt(be));
    void *t = malloc((size_t)n * es);
    HY_ASSERT(t);
    be->i->download(be, t, d, (size_t)n * es);
    hy_dtype_to_f32(h, t, kvt(be), (size_t)n);
    free(t);
}

static inline void *kvnan(struct hy_backend *be, int64_t n)
{
    float *h = fmalloc(n);
    for (int64_t i = 0; i < n; i++)
        h[i] = NAN;
    void *d = kvput(be, h, n);
    free(h);
    return d;
}

#endif
