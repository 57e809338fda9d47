/* matmul_bench.cu: times the decode matmul (hy_cuda_matmul_bf16, T <= 8) alone on the 7B
 * shapes and prints the weight bytes streamed per second. Built by hand on the GPU
 * machine (bench/gpu_decode.sh):
 *   nvcc -O3 -arch=sm_90 -I. -Isrc -DMATMUL_SRC='"src/backend/cuda/matmul.cu"' \
 *       bench/matmul_bench.cu -lcublas -o /tmp/mmb
 * MATMUL_SRC may name another version of matmul.cu (to compare kernels). */
#include <stdio.h>
#include <stdlib.h>
#include "backend/cuda/cuda_impl.h"
#include MATMUL_SRC

extern "C" void hy_cuda_fail(const char *file, int line, const char *expr, const char *what)
{
    fprintf(stderr, "%s:%d: CUDA error: %s (%s)\n", file, line, what, expr);
    abort();
}
extern "C" void hy_cuda_f32_to_bf16(cudaStream_t st, uint16_t *dst, const float *src, int64_t n)
{
    (void)st, (void)dst, (void)src, (void)n;
    abort(); /* T <= 8 never gets here */
}

int main(void)
{
    static const int64_t shapes[][2] = {{6144, 4096}, {14336, 4096}, {4096, 4096},
                                        {4096, 14336}, {128167, 4096}};
    int64_t maxw = 128167 * 4096;
    uint16_t *w;
    float *x, *out;
    HY_CUDA_CHECK(cudaMalloc(&w, maxw * 2));
    HY_CUDA_CHECK(cudaMalloc(&x, 8 * 14336 * 4));
    HY_CUDA_CHECK(cudaMalloc(&out, 8 * 128167 * 4));
    HY_CUDA_CHECK(cudaMemset(w, 0x3f, maxw * 2));
    HY_CUDA_CHECK(cudaMemset(x, 0x3f, 8 * 14336 * 4));
    const struct hy_cuda_mm_scratch none = {}; /* T <= 8: the GEMV needs no scratch */
    cudaStream_t st;
    HY_CUDA_CHECK(cudaStreamCreate(&st));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int T = 1; T <= 8; T *= 2) {
        double tb = 0, tt = 0;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int64_t rows = shapes[s][0], cols = shapes[s][1];
            /* rotate over several copies' worth of the buffer so L2 (50 MB) holds none */
            int64_t n = rows * cols, ncopies = maxw / n;
            const int iters = 60;
            for (int i = 0; i < 3; i++)
                hy_cuda_matmul_bf16(st, NULL, out, x, w + (i % ncopies) * n, rows, cols, T, false,
                                    false, &none);
            cudaEventRecord(e0, st);
            for (int i = 0; i < iters; i++)
                hy_cuda_matmul_bf16(st, NULL, out, x, w + (i % ncopies) * n, rows, cols, T, false,
                                    false, &none);
            cudaEventRecord(e1, st);
            HY_CUDA_CHECK(cudaEventSynchronize(e1));
            float ms;
            cudaEventElapsedTime(&ms, e0, e1);
            double us = ms * 1e3 / iters, gbs = n * 2 / (us * 1e3);
            printf("T=%d rows=%6lld cols=%5lld: %7.1f us  %6.0f GB/s\n", T, (long long)rows,
                   (long long)cols, us, gbs);
            tb += n * 2;
            tt += us;
        }
        printf("T=%d all shapes: %.0f GB/s\n", T, tb / (tt * 1e3));
    }
    return 0;
}
