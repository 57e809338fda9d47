/* mmvq_bench.cu: the int8-activation decode GEMV (qmmvq.h) against the register-dequantizing
 * one (hy_cuda_matmul_q at T <= 8) on the Hunyuan-MT-7B shapes, Q8_0, Q4_0 and Q4_G128, and
 * the device's copy bandwidth (a 2 GiB device-to-device copy, bytes read + written) as the
 * yardstick. Prints per type, T and shape: us and weight GB/s (device layout: quants and
 * scales) of the old GEMV, of the new one with each R (rows a thread block; activations
 * already quantized) and of the quantize kernel alone. Weights rotate over copies > 2x L2.
 * Built with the CUDA backend (build/bench/mmvq_bench); bench/gpu_mmvq.sh runs it. */
#include <stdio.h>
#include <stdlib.h>
#include "backend/cuda/qmatmul.h"
#include "backend/cuda/qmmvq.h"

static cudaEvent_t e0, e1;

static float elapsed_us(int iters)
{
    float ms;
    HY_CUDA_CHECK(cudaEventSynchronize(e1));
    cudaEventElapsedTime(&ms, e0, e1);
    return ms * 1e3f / (float)iters;
}

int main(void)
{
    static const int64_t shapes[][2] = {{6144, 4096},  {4096, 4096},  {14336, 4096},
                                        {4096, 14336}, {1024, 4096}, {128167, 4096}};
    static const int Ts[] = {1, 2, 3, 4, 8};
    static const struct { const char *name; int qt; } types[] = {
        {"Q4_G128", HY_CUDA_Q4_G128}, {"Q4_0", HY_CUDA_Q4_0}, {"Q8_0", HY_CUDA_Q8_0}};
    const size_t maxw = hy_cuda_q_bytes(HY_CUDA_Q8_0, 128167, 4096) * 3; /* > L2 (50 MB) x 2 */
    unsigned char *w;
    float *x, *out;
    void *xq;
    HY_CUDA_CHECK(cudaMalloc(&w, maxw));
    HY_CUDA_CHECK(cudaMalloc(&x, 8 * 14336 * 4));
    HY_CUDA_CHECK(cudaMalloc(&out, (size_t)8 * 128167 * 4));
    HY_CUDA_CHECK(cudaMalloc(&xq, hy_cuda_mmvq_x_bytes(8, 14336)));
    HY_CUDA_CHECK(cudaMemset(w, 0x3a, maxw)); /* fp16 scales 0x3a3a ~ 0.78 */
    HY_CUDA_CHECK(cudaMemset(x, 0x3f, 8 * 14336 * 4));
    const struct hy_cuda_mm_scratch scratch = {NULL, 0, NULL, 0, NULL, 0};
    cudaStream_t st;
    HY_CUDA_CHECK(cudaStreamCreate(&st));
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    {
        const size_t n = (size_t)1 << 30;
        void *a, *b;
        HY_CUDA_CHECK(cudaMalloc(&a, n));
        HY_CUDA_CHECK(cudaMalloc(&b, n));
        cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, st);
        cudaEventRecord(e0, st);
        for (int i = 0; i < 10; i++)
            cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, st);
        cudaEventRecord(e1, st);
        const float us = elapsed_us(10);
        printf("copy bandwidth: %.0f GB/s (read + write of 1 GiB in %.0f us)\n",
               2.0 * n / (us * 1e3), us);
        cudaFree(a);
        cudaFree(b);
    }
    for (size_t ty = 0; ty < sizeof types / sizeof types[0]; ty++)
        for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++) {
            const int T = Ts[ti], qt = types[ty].qt;
            double tb = 0, t_old = 0, t_new[4] = {0, 0, 0, 0}, t_q = 0;
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                const int64_t rows = shapes[s][0], cols = shapes[s][1];
                const size_t n = hy_cuda_q_bytes(qt, rows, cols);
                const size_t stride = (n + 255) & ~(size_t)255, ncopies = maxw / stride;
                const int iters = rows > 100000 ? 20 : 100;
                hy_cuda_mmvq_quantize(st, xq, x, T, cols);
                for (int i = 0; i < 3; i++)
                    hy_cuda_matmul_q(st, NULL, out, x, w + (i % ncopies) * stride, qt, rows,
                                     cols, T, false, &scratch);
                cudaEventRecord(e0, st);
                for (int i = 0; i < iters; i++)
                    hy_cuda_matmul_q(st, NULL, out, x, w + (i % ncopies) * stride, qt, rows,
                                     cols, T, false, &scratch);
                cudaEventRecord(e1, st);
                const float us_old = elapsed_us(iters);
                float us_new[4];
                static const int Rs[4] = {0, 2, 4, 8};
                for (int ri = 0; ri < 4; ri++) {
                    for (int i = 0; i < 3; i++)
                        hy_cuda_mmvq(st, out, xq, w + (i % ncopies) * stride, qt, rows, cols, T,
                                     Rs[ri]);
                    cudaEventRecord(e0, st);
                    for (int i = 0; i < iters; i++)
                        hy_cuda_mmvq(st, out, xq, w + (i % ncopies) * stride, qt, rows, cols, T,
                                     Rs[ri]);
                    cudaEventRecord(e1, st);
                    us_new[ri] = elapsed_us(iters);
                    t_new[ri] += us_new[ri];
                }
                cudaEventRecord(e0, st);
                for (int i = 0; i < iters; i++)
                    hy_cuda_mmvq_quantize(st, xq, x, T, cols);
                cudaEventRecord(e1, st);
                const float us_q = elapsed_us(iters);
                printf("%-7s T=%d %6lldx%-5lld %6.1f MB: old %7.1f us %5.0f GB/s | mmvq R=def "
                       "%7.1f us %5.0f GB/s, R=2 %5.0f, R=4 %5.0f, R=8 %5.0f GB/s | quantize "
                       "%4.1f us\n",
                       types[ty].name, T, (long long)rows, (long long)cols, n / 1e6, us_old,
                       n / (us_old * 1e3), us_new[0], n / (us_new[0] * 1e3),
                       n / (us_new[1] * 1e3), n / (us_new[2] * 1e3), n / (us_new[3] * 1e3), us_q);
                tb += (double)n;
                t_old += us_old;
                t_q += us_q;
            }
            printf("%-7s T=%d all shapes: old %.0f GB/s; mmvq R=def %.0f, R=2 %.0f, R=4 %.0f, "
                   "R=8 %.0f GB/s; quantize %.1f us a shape\n",
                   types[ty].name, T, tb / (t_old * 1e3), tb / (t_new[0] * 1e3),
                   tb / (t_new[1] * 1e3), tb / (t_new[2] * 1e3), tb / (t_new[3] * 1e3),
                   t_q / (sizeof shapes / sizeof shapes[0]));
        }
    return 0;
}
