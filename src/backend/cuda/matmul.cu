/* matmul.cu: out = x · Wᵀ through cuBLAS: x (float32) is rounded to bf16 into a scratch,
 * then one bf16 x bf16 GEMM with float32 accumulation and float32 output
 * (CUBLAS_COMPUTE_32F). Row-major out[T, rows] is column-major outᵀ [rows, T], so the
 * call is outᵀ = W(col-major [cols, rows])ᵀ · xᵀ(col-major [cols, T]). Inputs larger than
 * the scratch go in chunks of whole rows of x. */
#include "backend/cuda/cuda_impl.h"

extern "C" void hy_cuda_matmul_bf16(cudaStream_t st, cublasHandle_t blas, float *out,
                                    const float *x, const uint16_t *w, int64_t rows,
                                    int64_t cols, int T, uint16_t *xbf, size_t xbf_cap)
{
    const float alpha = 1.0f, beta = 0.0f;
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
