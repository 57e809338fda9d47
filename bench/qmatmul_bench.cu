/* qmatmul_bench.cu: times the quantized matmul (hy_cuda_matmul_q, qmatmul.h) alone on the
 * 7B shapes for Q8_0, Q4_G128 and Q4_0 and prints the weight bytes (device layout: quants
 * and scales) streamed per second; T <= 8 is the register-dequantizing GEMV, larger T the
 * tensor-core kernel of qmma.cu (bench/qmma_bench.cu compares it with the chunked path).
 * Built and run by hand on the GPU machine, from the repository root:
 *   nvcc -O3 -arch=sm_90 -Isrc bench/qmatmul_bench.cu src/backend/cuda/qmatmul.cu \
 *       src/backend/cuda/qmatmul_k.cu src/backend/cuda/qmma.cu \
 *       src/backend/cuda/dequant_mm.cu src/backend/cuda/elementwise.cu -lcublas \
 *       -o /tmp/qmb && /tmp/qmb */
#include <stdio.h>
#include <stdlib.h>
#include "backend/cuda/qmatmul.h"

extern "C" void hy_cuda_fail(const char *file, int line, const char *expr, const char *what)
{
    fprintf(stderr, "%s:%d: CUDA error: %s (%s)\n", file, line, what, expr);
    abort();
}

int main(void)
{
    static const int64_t shapes[][2] = {{4096, 4096}, {14336, 4096}, {4096, 14336},
                                        {6144, 4096}, {128167, 4096}};
    static const int Ts[] = {1, 2, 4, 8, 16, 64};
    static const struct { const char *name; int qt; } types[] = {
        {"Q8_0", HY_CUDA_Q8_0}, {"Q4_G128", HY_CUDA_Q4_G128}, {"Q4_0", HY_CUDA_Q4_0}};
    const size_t maxw = hy_cuda_q_bytes(HY_CUDA_Q8_0, 128167, 4096) * 3; /* > L2 (50 MB) x 2 */
    const size_t xbf_cap = (size_t)32 << 20, wbf_cap = (size_t)16 << 20, cbuf_cap = (size_t)16 << 20;
    unsigned char *w;
    float *x, *out, *cbuf;
    uint16_t *xbf, *wbf;
    HY_CUDA_CHECK(cudaMalloc(&w, maxw));
    HY_CUDA_CHECK(cudaMalloc(&x, 64 * 14336 * 4));
    HY_CUDA_CHECK(cudaMalloc(&out, (size_t)64 * 128167 * 4));
    HY_CUDA_CHECK(cudaMalloc(&xbf, xbf_cap * 2));
    HY_CUDA_CHECK(cudaMalloc(&wbf, wbf_cap * 2));
    HY_CUDA_CHECK(cudaMalloc(&cbuf, cbuf_cap * 4));
    HY_CUDA_CHECK(cudaMemset(w, 0x3a, maxw)); /* fp16 scales 0x3a3a ~ 0.78 */
    HY_CUDA_CHECK(cudaMemset(x, 0x3f, 64 * 14336 * 4));
    const struct hy_cuda_mm_scratch scratch = {xbf, xbf_cap, wbf, wbf_cap, cbuf, cbuf_cap};
    cudaStream_t st;
    cublasHandle_t blas;
    HY_CUDA_CHECK(cudaStreamCreate(&st));
    HY_CUBLAS_CHECK(cublasCreate(&blas));
    HY_CUBLAS_CHECK(cublasSetStream(blas, st));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (size_t ty = 0; ty < sizeof types / sizeof types[0]; ty++)
        for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++) {
            const int T = Ts[ti];
            double tb = 0, tt = 0;
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                int64_t rows = shapes[s][0], cols = shapes[s][1];
                size_t n = hy_cuda_q_bytes(types[ty].qt, rows, cols);
                size_t stride = (n + 255) & ~(size_t)255, ncopies = maxw / stride;
                const int iters = T > 8 ? 10 : 60;
                for (int i = 0; i < 3; i++)
                    hy_cuda_matmul_q(st, blas, out, x, w + (i % ncopies) * stride, types[ty].qt,
                                     rows, cols, T, false, &scratch);
                cudaEventRecord(e0, st);
                for (int i = 0; i < iters; i++)
                    hy_cuda_matmul_q(st, blas, out, x, w + (i % ncopies) * stride, types[ty].qt,
                                     rows, cols, T, false, &scratch);
                cudaEventRecord(e1, st);
                HY_CUDA_CHECK(cudaEventSynchronize(e1));
                float ms;
                cudaEventElapsedTime(&ms, e0, e1);
                double us = ms * 1e3 / iters, gbs = (double)n / (us * 1e3);
                printf("%-7s T=%2d rows=%6lld cols=%5lld: %8.1f us  %6.0f GB/s\n", types[ty].name,
                       T, (long long)rows, (long long)cols, us, gbs);
                tb += (double)n;
                tt += us;
            }
            printf("%-7s T=%2d all shapes: %.0f GB/s\n", types[ty].name, T, tb / (tt * 1e3));
        }
    return 0;
}
