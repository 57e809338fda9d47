/* matmul.cu: out = x · Wᵀ with W bf16 on the device. Decode-sized inputs (T <= 8 rows)
 * go through a weight-streaming kernel that keeps x in float32 (below). Larger T (prefill)
 * goes through cuBLAS: x is rounded to bf16 (nearest even) into a scratch, then one
 * bf16 x bf16 GEMM with float32 accumulation and output (CUBLAS_COMPUTE_32F). So a row's
 * result depends on the path by the bf16 rounding of x (relative 2^-9 per term): a row
 * batched with others into a prefill-sized call differs from the row alone by that much.
 * (Rounding x in the decode kernel too was tried on the H200, 2026-11-30: batched and
 * alone then agreed better, but the f16 tiny checkpoint's logits moved from 0.016 to
 * 0.021 of max |logit| against the CPU, past the 2e-2 limit.)
 * Row-major out[T, rows] is column-major outᵀ [rows, T], so the cuBLAS call is
 * outᵀ = W(col-major [cols, rows])ᵀ · xᵀ(col-major [cols, T]). Inputs larger than the
 * scratch go in chunks of whole rows. */
#include "backend/cuda/cuda_impl.h"

#define GEMV_MAX_T 8
#define GEMV_WARPS 8

/* Decode-sized products (T <= GEMV_MAX_T): one warp per output row reads the row's bf16
 * weights once, 16 bytes per lane per load, and multiplies them with the T float32 input
 * rows (no rounding of x: bf16 x fp32 products, float32 sums), so the weights stream
 * through at memory speed. Needs cols % 8 == 0 and 16-byte aligned x and W. */
template <int NT>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
    gemv_kernel(float *out, const float *x, const uint16_t *w, int rows, int cols)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5);
    if (row >= rows)
        return;
    const uint4 *wr = (const uint4 *)(w + (int64_t)row * cols);
    const int n8 = cols / 8;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++)
        acc[t] = 0.0f;
#pragma unroll 4
    for (int k = lane; k < n8; k += 32) {
        uint4 v = __ldg(wr + k);
        float wf[8];
        wf[0] = __uint_as_float(v.x << 16);
        wf[1] = __uint_as_float(v.x & 0xffff0000u);
        wf[2] = __uint_as_float(v.y << 16);
        wf[3] = __uint_as_float(v.y & 0xffff0000u);
        wf[4] = __uint_as_float(v.z << 16);
        wf[5] = __uint_as_float(v.z & 0xffff0000u);
        wf[6] = __uint_as_float(v.w << 16);
        wf[7] = __uint_as_float(v.w & 0xffff0000u);
#pragma unroll
        for (int t = 0; t < NT; t++) {
            const float4 *xp = (const float4 *)(x + (int64_t)t * cols) + 2 * k;
            float4 a = xp[0], b = xp[1];
            acc[t] += wf[0] * a.x + wf[1] * a.y + wf[2] * a.z + wf[3] * a.w + wf[4] * b.x +
                      wf[5] * b.y + wf[6] * b.z + wf[7] * b.w;
        }
    }
#pragma unroll
    for (int t = 0; t < NT; t++) {
        float a = acc[t];
        for (int o = 16; o > 0; o >>= 1)
            a += __shfl_xor_sync(0xffffffffu, a, o);
        if (lane == 0)
            out[(int64_t)t * rows + row] = a;
    }
}

template <int NT>
static void gemv(cudaStream_t st, float *out, const float *x, const uint16_t *w, int64_t rows,
                 int64_t cols)
{
    unsigned blocks = (unsigned)((rows + GEMV_WARPS - 1) / GEMV_WARPS);
    gemv_kernel<NT><<<blocks, GEMV_WARPS * 32, 0, st>>>(out, x, w, (int)rows, (int)cols);
    HY_CUDA_CHECK_LAUNCH();
}

static bool gemv_try(cudaStream_t st, float *out, const float *x, const uint16_t *w,
                     int64_t rows, int64_t cols, int T)
{
    if (T > GEMV_MAX_T || cols % 8 != 0 || ((uintptr_t)x & 15) || ((uintptr_t)w & 15))
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

extern "C" void hy_cuda_matmul_bf16(cudaStream_t st, cublasHandle_t blas, float *out,
                                    const float *x, const uint16_t *w, int64_t rows,
                                    int64_t cols, int T, uint16_t *xbf, size_t xbf_cap)
{
    const float alpha = 1.0f, beta = 0.0f;
    if (gemv_try(st, out, x, w, rows, cols, T))
        return;
    int64_t chunk = (int64_t)(xbf_cap / (size_t)cols);
    if (chunk < 1)
        hy_cuda_fail(__FILE__, __LINE__, "xbf_cap >= cols", "matmul scratch smaller than a row");
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        int64_t n = T - t0 < chunk ? T - t0 : chunk;
        hy_cuda_f32_to_bf16(st, xbf, x + t0 * cols, n * cols);
        HY_CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, (int)n, (int)cols,
                                     &alpha, w, CUDA_R_16BF, (int)cols, xbf, CUDA_R_16BF,
                                     (int)cols, &beta, out + t0 * rows, CUDA_R_32F, (int)rows,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
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
