/* matmul.cu: out = x · Wᵀ with W bf16 on the device. Decode-sized inputs (T <= 2 rows, or
 * up to 8 for matrices of at most 4096 x 4096: gemv_wins) go through a weight-streaming
 * kernel that keeps x in float32 (below). Larger T (prefill)
 * goes through cuBLAS: x is rounded to bf16 (nearest even) into a scratch, then one
 * bf16 x bf16 GEMM with float32 accumulation and output (CUBLAS_COMPUTE_32F). So a row's
 * result depends on the path by the bf16 rounding of x (relative 2^-9 per term): a row
 * batched with others into a prefill-sized call differs from the row alone by that much.
 * The decode kernel does not round x: batched and alone would then agree better, but the
 * f16 tiny checkpoint's logits would move past cuda_model_test's 2e-2 limit against the
 * CPU (figures in bench/RESULTS.md, "Figures moved out of code comments").
 * Row-major out[T, rows] is column-major outᵀ [rows, T], so the cuBLAS call is
 * outᵀ = W(col-major [cols, rows])ᵀ · xᵀ(col-major [cols, T]). Inputs larger than the
 * scratch go in chunks of whole rows. */
#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/gemv_util.cuh"

#include <cuda_bf16.h>

#ifndef GEMV_MAX_T
#define GEMV_MAX_T 8 /* bench/cuda_matmul.cu compiles a copy with 0: cuBLAS only */
#endif
#define GEMV_THREADS 256
#ifndef GEMV_R_BIG
#define GEMV_R_BIG 8 /* rows per block for T >= 5 */
#endif
#ifndef GEMV_MINB
#define GEMV_MINB 1 /* min blocks per SM (a register cap; 2 spills at R = 8) */
#endif

/* Decode-sized products (T <= GEMV_MAX_T): one block of GEMV_THREADS threads owns R
 * consecutive output rows; its threads split the columns (thread i takes the 8-column
 * groups i, i + 256, ...), read each weight row once, 16 bytes (8 bf16) per load with L1
 * no-allocate (the weights stream through; x stays in L1), and multiply them with the T
 * float32 input rows (no rounding of x: bf16 x fp32 products, float32 sums). A thread
 * keeps R x T partial sums; warp shuffles, then shared memory, sum them over the block.
 * Each x element loaded serves R rows, so x's traffic is T/R times the weights' bytes x 2
 * (float32 vs bf16), and the grid (rows / R blocks) fills the SMs down to rows = 4096.
 * Needs cols % 8 == 0 and 16-byte aligned x and W. */
__device__ __forceinline__ float dot8(float acc, uint4 v, float4 a, float4 b)
{
    acc = fmaf(__uint_as_float(v.x << 16), a.x, acc);
    acc = fmaf(__uint_as_float(v.x & 0xffff0000u), a.y, acc);
    acc = fmaf(__uint_as_float(v.y << 16), a.z, acc);
    acc = fmaf(__uint_as_float(v.y & 0xffff0000u), a.w, acc);
    acc = fmaf(__uint_as_float(v.z << 16), b.x, acc);
    acc = fmaf(__uint_as_float(v.z & 0xffff0000u), b.y, acc);
    acc = fmaf(__uint_as_float(v.w << 16), b.z, acc);
    acc = fmaf(__uint_as_float(v.w & 0xffff0000u), b.w, acc);
    return acc;
}

template <int NT, int R>
__global__ void __launch_bounds__(GEMV_THREADS, GEMV_MINB)
    gemv_kernel(float *out, const float *x, const uint16_t *w, int rows, int cols)
{
    const int row0 = blockIdx.x * R;
    const int n8 = cols / 8;
    const uint4 *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        wr[r] = (const uint4 *)(w + (int64_t)gemv_row(row0, r, rows) * cols);
    float acc[R][NT];
    gemv_zero(acc);
#pragma unroll(NT <= 2 ? 2 : 1)
    for (int k = threadIdx.x; k < n8; k += GEMV_THREADS) {
        uint4 v[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            v[r] = ld_stream(wr[r] + k);
#pragma unroll
        for (int t = 0; t < NT; t++) {
            const float4 *xp = (const float4 *)(x + (int64_t)t * cols) + 2 * k;
            float4 a = __ldg(xp), b = __ldg(xp + 1);
#pragma unroll
            for (int r = 0; r < R; r++)
                acc[r][t] = dot8(acc[r][t], v[r], a, b);
        }
    }
    gemv_reduce_store<GEMV_THREADS / 32>(acc, out, row0, rows, GEMV_THREADS / 32, gemv_plain());
}

/* 4 rows a block for T <= 4, 8 above: x's L1/L2 traffic per weight byte halves, at up to
 * 254 registers (one block per SM, no spills; capped at 128 registers 8 rows spill). Each
 * choice is the faster of the two at its T (bench/matmul_bench.cu; bench/RESULTS.md). */
template <int NT>
static void gemv(cudaStream_t st, float *out, const float *x, const uint16_t *w, int64_t rows,
                 int64_t cols)
{
    constexpr int R = NT <= 4 ? 4 : GEMV_R_BIG;
    unsigned blocks = (unsigned)((rows + R - 1) / R);
    gemv_kernel<NT, R><<<blocks, GEMV_THREADS, 0, st>>>(out, x, w, (int)rows, (int)cols);
    HY_CUDA_CHECK_LAUNCH();
}

/* Where the GEMV beats cuBLAS (bench/cuda_matmul.cu times the two; the table is in
 * bench/RESULTS.md): up to 2 rows always, up to GEMV_MAX_T for matrices of at most
 * 4096 x 4096 (q, k, v, o), cuBLAS for the rest. */
static bool gemv_wins(int64_t rows, int64_t cols, int T)
{
    return T <= 2 || (T <= GEMV_MAX_T && rows * cols <= (int64_t)4096 * 4096);
}

static bool gemv_try(cudaStream_t st, float *out, const float *x, const uint16_t *w,
                     int64_t rows, int64_t cols, int T)
{
    if (T > GEMV_MAX_T || !gemv_wins(rows, cols, T) || cols % 8 != 0 || ((uintptr_t)x & 15) ||
        ((uintptr_t)w & 15))
        return false;
    switch (T) {
    case 1: gemv<1>(st, out, x, w, rows, cols); break;
    case 2: gemv<2>(st, out, x, w, rows, cols); break;
    case 3: gemv<3>(st, out, x, w, rows, cols); break;
    case 4: gemv<4>(st, out, x, w, rows, cols); break;
    case 5: gemv<5>(st, out, x, w, rows, cols); break;
    case 6: gemv<6>(st, out, x, w, rows, cols); break;
    case 7: gemv<7>(st, out, x, w, rows, cols); break;
    default: gemv<8>(st, out, x, w, rows, cols); break;
    }
    return true;
}

/* An output row count that is not a multiple of 8 (the vocabulary: 128167) makes cuBLAS
 * fall back to a slow pre-Hopper kernel (a fraction of the bandwidth for the 7B head; an
 * aligned leading dimension of C alone does not avoid it: bench/RESULTS.md). When
 * W's allocation has zero rows up to a multiple of 8 (padded: weight_upload does that),
 * the product runs over the padded rows into `cbuf` and is copied out compactly. */
extern "C" bool hy_cuda_matmul_bf16(cudaStream_t st, cublasHandle_t blas, float *out,
                                    const float *x, const uint16_t *w, int64_t rows,
                                    int64_t cols, int T, bool w_padded, bool x_ready,
                                    const struct hy_cuda_mm_scratch *s)
{
    const float alpha = 1.0f, beta = 0.0f;
    if (gemv_try(st, out, x, w, rows, cols, T))
        return false;
    uint16_t *xbf = s->xbf;
    float *cbuf = s->cbuf;
    const size_t xbf_cap = s->xbf_cap, cbuf_cap = s->cbuf_cap;
    const int64_t ldc = (rows + 7) & ~(int64_t)7;
    const bool padded = ldc != rows && w_padded && cbuf && (size_t)ldc <= cbuf_cap;
    int64_t chunk = (int64_t)(xbf_cap / (size_t)cols);
    if (padded && (int64_t)(cbuf_cap / (size_t)ldc) < chunk)
        chunk = (int64_t)(cbuf_cap / (size_t)ldc);
    if (chunk < 1)
        hy_cuda_fail(__FILE__, __LINE__, "xbf_cap >= cols", "matmul scratch smaller than a row");
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        int64_t n = T - t0 < chunk ? T - t0 : chunk;
        if (!x_ready || chunk < T) /* x_ready: xbf holds x already (one chunk) */
            hy_cuda_f32_to_bf16(st, xbf, x + t0 * cols, n * cols);
        HY_CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N,
                                     padded ? (int)ldc : (int)rows, (int)n, (int)cols,
                                     &alpha, w, CUDA_R_16BF, (int)cols, xbf, CUDA_R_16BF,
                                     (int)cols, &beta, padded ? cbuf : out + t0 * rows,
                                     CUDA_R_32F, padded ? (int)ldc : (int)rows,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        if (padded)
            HY_CUDA_CHECK(cudaMemcpy2DAsync(out + t0 * rows, (size_t)rows * sizeof(float), cbuf,
                                            (size_t)ldc * sizeof(float),
                                            (size_t)rows * sizeof(float), (size_t)n,
                                            cudaMemcpyDeviceToDevice, st));
    }
    return chunk >= T;
}

/* A float32 weight (a one-row matrix: weight_upload keeps rows == 1 in float32): plain
 * float32 SGEMM, no rounding (the default math mode does not use TF32). */
extern "C" void hy_cuda_matmul_f32(cudaStream_t st, cublasHandle_t blas, float *out,
                                   const float *x, const float *w, int64_t rows, int64_t cols,
                                   int T)
{
    const float alpha = 1.0f, beta = 0.0f;
    (void)st; /* the handle is bound to the stream */
    HY_CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, T, (int)cols, &alpha,
                                w, (int)cols, x, (int)cols, &beta, out, (int)rows));
}

/* Fused products (hy_cuda_matmul_bf16_fused): the chunk's [m, R] outputs in cbuf go to their
 * n destinations; column c of a row belongs to the weight i with end[i-1] <= c < end[i]. */
#define FUSED_MAX 4
#define FUSED_THREADS 256
struct fused_split {
    float *out[FUSED_MAX];
    int64_t end[FUSED_MAX]; /* running sums of the rows */
    int n;
    int64_t R;
};

static __global__ void fused_split_kernel(struct fused_split a, const float *buf, int64_t m)
{
    for (int64_t t = blockIdx.y; t < m; t += gridDim.y) /* a row of the chunk */
        for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < a.R;
             c += (int64_t)gridDim.x * blockDim.x) {
            int64_t lo = 0, hi = a.end[0];
            float *o = a.out[0];
#pragma unroll
            for (int k = 1; k < FUSED_MAX; k++)
                if (k < a.n && c >= hi) {
                    lo = hi;
                    hi = a.end[k];
                    o = a.out[k];
                }
            o[t * (hi - lo) + (c - lo)] = buf[t * a.R + c];
        }
}

/* out[t, j] = silu(buf[t, j]) * buf[t, F + j]: silu_mul's expression, on the fused halves;
 * with obf, also its bf16 rounding (nearest even, as hy_cuda_f32_to_bf16) there */
static __global__ void fused_glu_kernel(float *out, __nv_bfloat16 *obf, const float *buf,
                                        int64_t F, int64_t m)
{
    for (int64_t t = blockIdx.y; t < m; t += gridDim.y)
        for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < F;
             j += (int64_t)gridDim.x * blockDim.x) {
            const float g = buf[t * 2 * F + j];
            const float o = g / (1.0f + expf(-g)) * buf[t * 2 * F + F + j];
            out[t * F + j] = o;
            if (obf)
                obf[t * F + j] = __float2bfloat16_rn(o);
        }
}

/* A row of the chunk a grid row (at most 65535; more take turns), its columns across x. */
static dim3 fused_grid(int64_t cols, int64_t m)
{
    int64_t bx = (cols + FUSED_THREADS - 1) / FUSED_THREADS;
    return dim3((unsigned)(bx < 1 ? 1 : bx > 1024 ? 1024 : bx), (unsigned)(m > 65535 ? 65535 : m));
}

extern "C" bool hy_cuda_matmul_bf16_fused(cudaStream_t st, cublasHandle_t blas,
                                          float *const *outs, const float *x, const uint16_t *w,
                                          const int64_t *rows, int n, int64_t cols, int T,
                                          bool glu, bool x_ready, bool *xbf_holds_x,
                                          bool *xbf_holds_out,
                                          const struct hy_cuda_mm_scratch *s)
{
    if (n < 2 || n > FUSED_MAX || T <= GEMV_MAX_T || (glu && (n != 2 || rows[0] != rows[1])))
        return false;
    struct fused_split a = {};
    int64_t R = 0;
    for (int i = 0; i < n; i++) {
        R += rows[i];
        a.out[i] = outs[i];
        a.end[i] = R;
    }
    a.n = n, a.R = R;
    const int64_t chunk = (int64_t)(s->cbuf_cap / (size_t)R);
    if (chunk < 1 || R > INT32_MAX)
        return false;
    bool held = false;
    /* glu in one chunk: its output rounded to bf16 into xbf too, after the GEMM has read x
     * there, so the down projection that takes it next need not convert it */
    const bool obf = glu && chunk >= T && (size_t)T * (size_t)rows[0] <= s->xbf_cap;
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        const int64_t m = T - t0 < chunk ? T - t0 : chunk;
        /* past GEMV_MAX_T rows hy_cuda_matmul_bf16 is one cuBLAS GEMM (a chunk of x) */
        held = hy_cuda_matmul_bf16(st, blas, s->cbuf, x + t0 * cols, w, R, cols, (int)m, false,
                                   x_ready && chunk >= T, s) && chunk >= T;
        if (glu) {
            fused_glu_kernel<<<fused_grid(rows[0], m), FUSED_THREADS, 0, st>>>(
                outs[0] + t0 * rows[0], obf ? (__nv_bfloat16 *)s->xbf : NULL, s->cbuf, rows[0],
                m);
        } else {
            struct fused_split b = a;
            for (int i = 0; i < n; i++)
                b.out[i] = outs[i] + t0 * rows[i];
            fused_split_kernel<<<fused_grid(R, m), FUSED_THREADS, 0, st>>>(b, s->cbuf, m);
        }
        HY_CUDA_CHECK_LAUNCH();
    }
    *xbf_holds_x = held && !obf;
    *xbf_holds_out = obf;
    return true;
}
