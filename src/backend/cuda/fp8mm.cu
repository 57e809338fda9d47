/* fp8mm.cu: matmul with fp8 (e4m3) weight matrices in the layout of fp8mm.h, which has the
 * contract.
 *
 * T <= 8 input rows: fp8_gemv.cuh's weight-streaming GEMV with a scale per row (the row's
 * float32 sums times its scale once at the end), and its exact e4m3 decoding.
 *
 * T > 8: fp8 activations through cuBLASLt (sm_89+), or the chunked dequantize (fp8mm.h).
 * The fp8 GEMM: per chunk of rows of x, amax (skipped when the weight has a static input
 * scale; atomicMax on the float bits, which order like unsigned integers for values >= 0)
 * into a device float zeroed by a memset, then x / scale to e4m3 into xbf, the GEMM
 * outᵀ[rows, n] = A(e4m3 [cols, rows] col-major, op T)ᵀ... i.e. out[t, r] = Σ_c xq[t, c]
 * code[r, c] in float32 (the TN form fp8 kernels require: m = rows, n = T, k = cols,
 * lda = ldb = cols, ldd = rows), and a kernel multiplying each out[t, r] by scale[r] times
 * the x scale (the per-row weight scale is not a cuBLASLt scalar). Error: x̂ = xs·e4m3(x/xs)
 * differs from x by at most 2^-4·|x| (3 mantissa bits, nearest) or, below the normal
 * range (|x| < 2^-6·xs), 2^-10·xs; no saturation (xs >= max|x|/448, or a static scale
 * the checkpoint calibrated: values beyond 448·xs saturate, as in the reference W8A8
 * math). Products of two e4m3 values are exact; the tensor cores sum in float32 with
 * cuBLASLt's periodic promotion (FAST_ACCUM off). So |out - exact| <= 2^-4·S +
 * 2^-10·xs·Σ|w| + accumulation (cuda_fp8_test states the bound it checks). */
#include "backend/cuda/fp8mm.h"
#include "backend/cuda/fp8_gemv.cuh"
extern "C" {
#include "core/log.h"
}

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdlib.h>
#include <string.h>

#define F8_PLANS 64 /* cuBLASLt plans kept, by (rows, cols, n) */

static size_t scales_at(int64_t rows, int64_t cols)
{
    return ((size_t)(rows * cols) + 15) & ~(size_t)15;
}

extern "C" size_t hy_cuda_fp8_bytes(int64_t rows, int64_t cols)
{
    return (scales_at(rows, cols) + (size_t)(rows + 1) * sizeof(float) + 15) & ~(size_t)15;
}

extern "C" void hy_cuda_fp8_pack(void *dst, const uint8_t *codes, const float *scale,
                                 int64_t n_scale, float input_scale, int64_t rows, int64_t cols)
{
    unsigned char *d = (unsigned char *)dst;
    const size_t at = scales_at(rows, cols), n = (size_t)(rows * cols);
    memset(d, 0, hy_cuda_fp8_bytes(rows, cols));
    memcpy(d, codes, n);
    float *s = (float *)(d + at);
    for (int64_t r = 0; r < rows; r++)
        s[r] = scale[n_scale == 1 ? 0 : r];
    s[rows] = input_scale;
}

/* ---- T > 8, fp8 activations ---- */

/* The scale of x: the weight's static input scale, else amax / 448 (1 for an all-zero x). */
static __device__ __forceinline__ float f8_x_scale(const float *in_scale, const unsigned *amax)
{
    const float s = *in_scale;
    if (s > 0.0f)
        return s;
    const float a = __uint_as_float(*amax);
    return a > 0.0f ? a / 448.0f : 1.0f;
}

__global__ void f8_amax_kernel(unsigned *amax, const float *in_scale, const float4 *x, int64_t n4)
{
    __shared__ float red[32];
    if (*in_scale > 0.0f)
        return; /* static: nothing to measure */
    float m = 0.0f;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float4 v = x[i];
        m = fmaxf(m, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < (int)(blockDim.x >> 5); i++)
            m = fmaxf(m, red[i]);
        atomicMax(amax, __float_as_uint(m)); /* m >= 0: its bits order as the values */
    }
}

/* q[i] = e4m3(x[i] / xs), nearest even, saturating at 448; 4 values a thread. */
__global__ void f8_quant_kernel(uint32_t *q, const float4 *x, int64_t n4, const float *in_scale,
                                const unsigned *amax)
{
    const float s = f8_x_scale(in_scale, amax);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float4 v = x[i];
        const float f[4] = {v.x / s, v.y / s, v.z / s, v.w / s};
        uint32_t p = 0;
#pragma unroll
        for (int j = 0; j < 4; j++)
            p |= (uint32_t)__nv_cvt_float_to_fp8(f[j], __NV_SATFINITE, __NV_E4M3) << (8 * j);
        q[i] = p;
    }
}

/* out[t, r] *= scale[r] * xs for the n = T*rows outputs of a chunk. */
__global__ void f8_scale_rows_kernel(float *out, const float *ws, int64_t rows, int64_t n,
                                     const float *in_scale, const unsigned *amax)
{
    const float xs = f8_x_scale(in_scale, amax);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] *= ws[i % rows] * xs;
}

struct f8_plan {
    int64_t rows, cols, n;
    bool ok; /* a heuristic answered: the GEMM runs */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
};

struct hy_cuda_fp8 {
    cublasLtHandle_t lt;
    void *ws; /* the backend's cuBLAS workspace (same stream: never used at once) */
    size_t ws_bytes;
    bool has_gemm;
    unsigned *amax; /* device [1] */
    struct f8_plan plans[F8_PLANS];
    int n_plans, next;
};

static void plan_free(struct f8_plan *p)
{
    if (p->op)
        cublasLtMatmulDescDestroy(p->op);
    if (p->a)
        cublasLtMatrixLayoutDestroy(p->a);
    if (p->b)
        cublasLtMatrixLayoutDestroy(p->b);
    if (p->d)
        cublasLtMatrixLayoutDestroy(p->d);
    memset(p, 0, sizeof *p);
}

/* Descriptors and an algorithm for out = (x codes)(W codes)ᵀ; p->ok false when cuBLASLt
 * has none for this shape (logged; the caller falls back to bf16 activations). */
static void plan_make(struct hy_cuda_fp8 *f, struct f8_plan *p, int64_t rows, int64_t cols,
                      int64_t n)
{
    memset(p, 0, sizeof *p);
    p->rows = rows, p->cols = cols, p->n = n;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const int8_t fast = 0; /* full float32 accumulation */
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int found = 0, step = 0;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
#define F8_TRY(call) (st == CUBLAS_STATUS_SUCCESS && (step++, st = (call)) == CUBLAS_STATUS_SUCCESS)
    F8_TRY(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    F8_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    F8_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    F8_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                          sizeof fast));
    F8_TRY(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_8F_E4M3, (uint64_t)cols, (uint64_t)rows, cols));
    F8_TRY(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_8F_E4M3, (uint64_t)cols, (uint64_t)n, cols));
    F8_TRY(cublasLtMatrixLayoutCreate(&p->d, CUDA_R_32F, (uint64_t)rows, (uint64_t)n, rows));
    F8_TRY(cublasLtMatmulPreferenceCreate(&pref));
    F8_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &f->ws_bytes, sizeof f->ws_bytes));
    F8_TRY(cublasLtMatmulAlgoGetHeuristic(f->lt, p->op, p->a, p->b, p->d, p->d, pref, 1, &res,
                                          &found));
#undef F8_TRY
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    p->ok = st == CUBLAS_STATUS_SUCCESS && found > 0;
    if (p->ok)
        p->algo = res.algo;
    else
        HY_LOGW("cuda: cuBLASLt has no fp8 GEMM for %lld x %lld x %lld (step %d: %s, %d found): "
                "bf16 activations there", (long long)rows, (long long)n, (long long)cols, step,
                cublasGetStatusString(st), found);
}

static const struct f8_plan *plan_get(struct hy_cuda_fp8 *f, int64_t rows, int64_t cols,
                                      int64_t n)
{
    for (int i = 0; i < f->n_plans; i++) {
        const struct f8_plan *p = &f->plans[i];
        if (p->rows == rows && p->cols == cols && p->n == n)
            return p;
    }
    struct f8_plan *p;
    if (f->n_plans < F8_PLANS) {
        p = &f->plans[f->n_plans++];
    } else { /* full: replace round-robin */
        p = &f->plans[f->next];
        f->next = (f->next + 1) % F8_PLANS;
        plan_free(p);
    }
    plan_make(f, p, rows, cols, n);
    return p;
}

extern "C" struct hy_cuda_fp8 *hy_cuda_fp8_create(int device, void *blas_ws, size_t blas_ws_bytes)
{
    struct hy_cuda_fp8 *f = (struct hy_cuda_fp8 *)calloc(1, sizeof *f);
    cudaDeviceProp prop;
    if (!f)
        return NULL;
    f->ws = blas_ws;
    f->ws_bytes = blas_ws_bytes;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
        cudaMalloc((void **)&f->amax, sizeof *f->amax) != cudaSuccess) {
        (void)cudaGetLastError();
        free(f);
        return NULL;
    }
    f->has_gemm = prop.major * 10 + prop.minor >= 89;
    if (cublasLtCreate(&f->lt) != CUBLAS_STATUS_SUCCESS) {
        f->lt = NULL;
        f->has_gemm = false; /* the dequantize path needs no cuBLASLt */
    }
    return f;
}

extern "C" void hy_cuda_fp8_destroy(struct hy_cuda_fp8 *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n_plans; i++)
        plan_free(&f->plans[i]);
    if (f->lt)
        HY_CUBLAS_CHECK(cublasLtDestroy(f->lt));
    HY_CUDA_CHECK(cudaFree(f->amax));
    free(f);
}

extern "C" bool hy_cuda_fp8_has_gemm(const struct hy_cuda_fp8 *f)
{
    return f && f->has_gemm;
}

static unsigned grid_for(int64_t n, unsigned threads)
{
    const int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

/* The fp8-activation GEMM over chunks of rows of x; false (nothing done) when cuBLASLt has
 * no plan for a chunk's shape. */
static bool f8_gemm(struct hy_cuda_fp8 *f, cudaStream_t st, float *out, const float *x,
                    const unsigned char *wq, const float *ws, int64_t rows, int64_t cols, int T,
                    uint8_t *xq, size_t xq_bytes)
{
    const float *in_scale = ws + rows;
    const float alpha = 1.0f, beta = 0.0f;
    int64_t tchunk = (int64_t)(xq_bytes / (size_t)cols);
    if (tchunk > T)
        tchunk = T;
    if (tchunk < 1)
        return false;
    /* plans first: a shape cuBLASLt refuses takes the fallback before any work is queued */
    const int64_t last = T % tchunk ? T % tchunk : tchunk;
    if (!plan_get(f, rows, cols, tchunk)->ok || !plan_get(f, rows, cols, last)->ok)
        return false;
    for (int64_t t0 = 0; t0 < T; t0 += tchunk) {
        const int64_t n = T - t0 < tchunk ? T - t0 : tchunk, n4 = n * cols / 4;
        const struct f8_plan *p = plan_get(f, rows, cols, n);
        if (!p->ok) /* made again after the cache replaced it: cuBLASLt changed its mind */
            hy_cuda_fail(__FILE__, __LINE__, "plan_get(...)->ok", "fp8 GEMM plan lost");
        HY_CUDA_CHECK(cudaMemsetAsync(f->amax, 0, sizeof *f->amax, st));
        f8_amax_kernel<<<grid_for(n4, 256), 256, 0, st>>>(f->amax, in_scale,
                                                          (const float4 *)(x + t0 * cols), n4);
        HY_CUDA_CHECK_LAUNCH();
        f8_quant_kernel<<<grid_for(n4, 256), 256, 0, st>>>((uint32_t *)xq,
                                                           (const float4 *)(x + t0 * cols), n4,
                                                           in_scale, f->amax);
        HY_CUDA_CHECK_LAUNCH();
        float *o = out + t0 * rows;
        HY_CUBLAS_CHECK(cublasLtMatmul(f->lt, p->op, &alpha, wq, p->a, xq, p->b, &beta, o, p->d,
                                       o, p->d, &p->algo, f->ws, f->ws_bytes, st));
        f8_scale_rows_kernel<<<grid_for(n * rows, 256), 256, 0, st>>>(o, ws, rows, n * rows,
                                                                      in_scale, f->amax);
        HY_CUDA_CHECK_LAUNCH();
    }
    return true;
}

/* ---- T > 8, bf16 activations: the chunked dequantize ---- */

/* dst[0 .. nr_pad*cols) = rows r0 .. r0+nr-1 of W as bf16 (rows past nr: 0), V elements a
 * thread (V = 8 needs cols % 8 == 0). */
template <int V>
__global__ void f8_dequant_bf16_kernel(uint16_t *dst, const unsigned char *wq, const float *ws,
                                       int64_t r0, int64_t nr, int64_t nv, int64_t cols)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= nv)
        return;
    const int64_t e = i * V, r = e / cols;
#pragma unroll
    for (int j = 0; j < V; j++) {
        float v = 0.0f;
        if (r < nr) {
            const uint32_t code = wq[(r0 + r) * cols + e % cols + j];
            v = f8_pair<0>(code).x * f8_dec_scale() * ws[r0 + r]; /* exact, then one rounding */
        }
        dst[e + j] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
    }
}

/* hy_cuda_dequant_fn for fp8: 8 elements a thread where cols % 8 == 0, else 1. */
static void f8_dequant(cudaStream_t st, uint16_t *dst, const void *w, int64_t r0, int64_t nr,
                       int64_t nr_pad)
{
    const struct f8_weight *fw = (const struct f8_weight *)w;
    const int v = fw->cols % 8 == 0 ? 8 : 1;
    const int64_t nv = nr_pad * fw->cols / v;
    const unsigned blocks = (unsigned)((nv + 255) / 256);
    if (v == 8)
        f8_dequant_bf16_kernel<8><<<blocks, 256, 0, st>>>(dst, fw->wq, fw->ws, r0, nr, nv,
                                                          fw->cols);
    else
        f8_dequant_bf16_kernel<1><<<blocks, 256, 0, st>>>(dst, fw->wq, fw->ws, r0, nr, nv,
                                                          fw->cols);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" bool hy_cuda_matmul_fp8(struct hy_cuda_fp8 *f, cudaStream_t st, cublasHandle_t blas,
                                   float *out, const float *x, const void *w, int64_t rows,
                                   int64_t cols, int T, enum hy_cuda_fp8_mode mode, bool x_ready,
                                   const struct hy_cuda_mm_scratch *s)
{
    if (!f || rows < 1 || cols < 1 || T < 1)
        hy_cuda_fail(__FILE__, __LINE__, "f && rows, cols, T >= 1", "bad fp8 matmul call");
    const unsigned char *wq = (const unsigned char *)w;
    const float *ws = (const float *)(wq + scales_at(rows, cols));
    const bool aligned16 = cols % 16 == 0 && !((uintptr_t)w & 15);
    if (T <= F8_MAX_T && aligned16 && !((uintptr_t)x & 15)) {
        f8_gemv_t<F8_ROW>(st, out, x, wq, ws, rows, cols, T);
        return false;
    }
    if (mode == HY_CUDA_FP8_GEMM && f->has_gemm && aligned16 && rows % 16 == 0 &&
        !((uintptr_t)x & 15) && !((uintptr_t)out & 15) &&
        f8_gemm(f, st, out, x, wq, ws, rows, cols, T, (uint8_t *)s->xbf, s->xbf_cap * 2))
        return false; /* xbf holds codes now */
    const struct f8_weight fw = {wq, ws, cols};
    return hy_cuda_dequant_mm(st, blas, out, x, rows, cols, T, x_ready, s, f8_dequant, &fw,
                              "fp8 matmul scratch too small");
}
