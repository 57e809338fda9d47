/* dequant_mm.cu: the chunked dequantize + cuBLAS matmul shared by the weight types that have
 * no kernel of their own for a call (quantized blocks above 8 rows where the tensor-core
 * kernel does not fit, fp8 with bf16 activations). The type only decides how a chunk of
 * rows becomes bf16 (the caller's `dequant`); chunking, the bf16 x bf16 GEMM (float32
 * accumulation, CUBLAS_COMPUTE_32F) and the padded output are here.
 * Row-major out[T, rows] is column-major outᵀ [rows, T], so each call is
 * outᵀ[r0.., t0..] = Wchunk(col-major [cols, nr_pad])ᵀ · xᵀ(col-major [cols, n]). A chunk's
 * row count is a multiple of 8 (cuBLAS's fast kernels want it); when rows is too, chunks go
 * straight into out, else through cbuf and a 2-D copy of the nr real rows. */
#include "backend/cuda/cuda_impl.h"

extern "C" bool hy_cuda_dequant_mm(cudaStream_t st, cublasHandle_t blas, float *out,
                                   const float *x, int64_t rows, int64_t cols, int T,
                                   bool x_ready, const struct hy_cuda_mm_scratch *s,
                                   hy_cuda_dequant_fn dequant, const void *w, const char *what)
{
    const float alpha = 1.0f, beta = 0.0f;
    const bool direct = rows % 8 == 0; /* chunks of whole multiples of 8 rows, straight to out */
    int64_t tchunk = (int64_t)(s->xbf_cap / (size_t)cols);
    if (tchunk > T)
        tchunk = T;
    if (!direct && (size_t)tchunk * 8 > s->cbuf_cap)
        tchunk = (int64_t)(s->cbuf_cap / 8);
    int64_t rchunk = (int64_t)(s->wbf_cap / (size_t)cols);
    if (!direct && tchunk > 0 && (int64_t)(s->cbuf_cap / (size_t)tchunk) < rchunk)
        rchunk = (int64_t)(s->cbuf_cap / (size_t)tchunk);
    rchunk &= ~(int64_t)7;
    if (rchunk > ((rows + 7) & ~(int64_t)7))
        rchunk = (rows + 7) & ~(int64_t)7;
    if (tchunk < 1 || rchunk < 8 || !s->wbf || (!direct && !s->cbuf))
        hy_cuda_fail(__FILE__, __LINE__, "xbf_cap >= cols && wbf_cap >= 8 * cols", what);
    for (int64_t t0 = 0; t0 < T; t0 += tchunk) {
        const int64_t n = T - t0 < tchunk ? T - t0 : tchunk;
        if (!x_ready || tchunk < T) /* x_ready: xbf holds x already (one chunk) */
            hy_cuda_f32_to_bf16(st, s->xbf, x + t0 * cols, n * cols);
        for (int64_t r0 = 0; r0 < rows; r0 += rchunk) {
            const int64_t nr = rows - r0 < rchunk ? rows - r0 : rchunk;
            const int64_t nr_pad = (nr + 7) & ~(int64_t)7; /* == nr when direct */
            dequant(st, s->wbf, w, r0, nr, nr_pad);
            HY_CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)nr_pad, (int)n,
                                         (int)cols, &alpha, s->wbf, CUDA_R_16BF, (int)cols,
                                         s->xbf, CUDA_R_16BF, (int)cols, &beta,
                                         direct ? out + t0 * rows + r0 : s->cbuf, CUDA_R_32F,
                                         direct ? (int)rows : (int)nr_pad, CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT));
            if (!direct)
                HY_CUDA_CHECK(cudaMemcpy2DAsync(out + t0 * rows + r0,
                                                (size_t)rows * sizeof(float), s->cbuf,
                                                (size_t)nr_pad * sizeof(float),
                                                (size_t)nr * sizeof(float), (size_t)n,
                                                cudaMemcpyDeviceToDevice, st));
        }
    }
    return tchunk >= T;
}
