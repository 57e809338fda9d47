/* fp8mm.cu: matmul with fp8 (e4m3) weight matrices in the layout of fp8mm.h, which has the
 * contract.
 *
 * T <= 8 input rows: a weight-streaming GEMV shaped as qmatmul.cu's: a block owns R
 * consecutive output rows (4 for T <= 4, 8 above); its threads split each row's codes in
 * 16-byte pieces (16 weights; thread i takes pieces i, i + blockDim, ...), loaded once with
 * L1 no-allocate; x (float32) through the read-only path, one load serving R rows. A piece
 * is taken a 4-byte word (4 codes) at a time, decoded exactly to float32 and multiplied
 * with x into float32 sums; the row's scale multiplies the sum once at the end. Warp
 * shuffles, then shared memory, sum a row's parts.
 *
 * Decoding e4m3 -> float32 exactly, two codes at a time: on sm_89+ `cvt.rn.f16x2.e4m3x2`
 * (fp16 holds every e4m3 value); elsewhere by moving bits: a code s.eeee.mmm becomes the
 * fp16 s.0eeee.mmm0000000, whose value is the code's divided by 2^8 (exponent bias 15 vs
 * 7; subnormal codes, exponent 0, land on fp16 subnormals with the same relation), and
 * fp16 -> float32 is exact; the 2^8 goes into the row's scale (exact: a power of two). The
 * NaN codes (0x7f, 0xff) decode to +-480 there instead of NaN (weights have none).
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
#include "backend/cuda/gemv_util.cuh"
extern "C" {
#include "core/log.h"
}

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdlib.h>
#include <string.h>

#define F8_MAX_T 8
#define F8_MAX_THREADS 256
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

/* ---- decoding ---- */

/* What a decoded value must be multiplied by to be the code's value. */
static __device__ __forceinline__ float f8_dec_scale(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    return 1.0f;
#else
    return 256.0f;
#endif
}

/* Codes in bytes 0 and 1 (lo) or 2 and 3 (hi) of u as two floats (times f8_dec_scale). */
template <int HI> static __device__ __forceinline__ float2 f8_pair(uint32_t u)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    const unsigned short p = (unsigned short)(HI ? u >> 16 : u & 0xffffu);
    uint32_t h;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"(p));
#else
    /* each code into the high byte of a 16-bit lane, then sign kept, the rest one bit down */
    const uint32_t w = __byte_perm(u, 0, HI ? 0x3424 : 0x1404);
    const uint32_t h = (w & 0x80008000u) | ((w >> 1) & 0x3F803F80u);
#endif
    return __half22float2(*(const __half2 *)&h);
}

static __device__ __forceinline__ void f8_word(uint32_t u, float *w)
{
    const float2 a = f8_pair<0>(u), b = f8_pair<1>(u);
    w[0] = a.x;
    w[1] = a.y;
    w[2] = b.x;
    w[3] = b.y;
}

/* ---- T <= 8: the GEMV ---- */

/* out[t, row] = the row's sum times its scale and the decoding's (epi of gemv_reduce_store). */
struct f8_row_scale {
    const float *ws;
    __device__ __forceinline__ float operator()(float s, int row) const
    {
        return s * (ws[row] * f8_dec_scale());
    }
};

template <int NT, int R>
__global__ void __launch_bounds__(F8_MAX_THREADS, 1)
    f8_gemv_kernel(float *out, const float *x, const unsigned char *wq, const float *ws, int rows,
                   int cols)
{
    const int row0 = blockIdx.x * R;
    const int n16 = cols / 16;
    const uint4 *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        wr[r] = (const uint4 *)(wq + (int64_t)gemv_row(row0, r, rows) * cols);
    float acc[R][NT];
    gemv_zero(acc);
#pragma unroll(NT <= 2 ? 2 : 1)
    for (int k = threadIdx.x; k < n16; k += blockDim.x) {
        uint4 v[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            v[r] = ld_stream(wr[r] + k);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float wf[R][4];
#pragma unroll
            for (int r = 0; r < R; r++)
                f8_word(i == 0 ? v[r].x : i == 1 ? v[r].y : i == 2 ? v[r].z : v[r].w, wf[r]);
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const float4 a = __ldg((const float4 *)(x + (int64_t)t * cols + 16 * k + 4 * i));
#pragma unroll
                for (int r = 0; r < R; r++) {
                    float p = acc[r][t];
                    p = fmaf(wf[r][0], a.x, p);
                    p = fmaf(wf[r][1], a.y, p);
                    p = fmaf(wf[r][2], a.z, p);
                    acc[r][t] = fmaf(wf[r][3], a.w, p);
                }
            }
        }
    }
    /* blockDim.x >= 64 >= R * NT */
    gemv_reduce_store<F8_MAX_THREADS / 32>(acc, out, row0, rows, blockDim.x >> 5, f8_row_scale{ws});
}

template <int NT>
static void f8_gemv(cudaStream_t st, float *out, const float *x, const unsigned char *wq,
                    const float *ws, int64_t rows, int64_t cols)
{
    constexpr int R = NT <= 4 ? 4 : 8;
    const int64_t n16 = cols / 16;
    const unsigned threads = n16 >= 256 ? 256 : n16 >= 128 ? 128 : 64;
    const unsigned blocks = (unsigned)((rows + R - 1) / R);
    f8_gemv_kernel<NT, R><<<blocks, threads, 0, st>>>(out, x, wq, ws, (int)rows, (int)cols);
    HY_CUDA_CHECK_LAUNCH();
}

static void f8_gemv_t(cudaStream_t st, float *out, const float *x, const unsigned char *wq,
                      const float *ws, int64_t rows, int64_t cols, int T)
{
    switch (T) {
    case 1: f8_gemv<1>(st, out, x, wq, ws, rows, cols); break;
    case 2: f8_gemv<2>(st, out, x, wq, ws, rows, cols); break;
    case 3: f8_gemv<3>(st, out, x, wq, ws, rows, cols); break;
    case 4: f8_gemv<4>(st, out, x, wq, ws, rows, cols); break;
    case 5: f8_gemv<5>(st, out, x, wq, ws, rows, cols); break;
    case 6: f8_gemv<6>(st, out, x, wq, ws, rows, cols); break;
    case 7: f8_gemv<7>(st, out, x, wq, ws, rows, cols); break;
    default: f8_gemv<8>(st, out, x, wq, ws, rows, cols); break;
    }
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

/* The weight as f8_dequant reads it. */
struct f8_weight {
    const unsigned char *wq;
    const float *ws;
    int64_t cols;
};

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
        f8_gemv_t(st, out, x, wq, ws, rows, cols, T);
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
