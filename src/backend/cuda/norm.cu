/* norm.cu: RMSNorm, one block per row. The sum of squares is float32: each thread sums
 * d/NORM_THREADS squares in order, then a tree over the block, so the relative error of
 * the mean is about (d/128 + 8) float32 ulps (the reference sums in double). */
#include "backend/cuda/cuda_impl.h"

#define NORM_THREADS 128

__global__ void rmsnorm_kernel(float *out, const float *x, const float *w, int64_t d, float eps)
{
    __shared__ float part[NORM_THREADS / 32];
    const float *xr = x + (int64_t)blockIdx.x * d;
    float *yr = out + (int64_t)blockIdx.x * d;
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += NORM_THREADS)
        ss += xr[i] * xr[i];
    for (int o = 16; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = ss;
    __syncthreads(); /* every x read above happens before any write below (out may be x) */
    ss = 0.0f;
    for (int i = 0; i < NORM_THREADS / 32; i++)
        ss += part[i];
    float inv = 1.0f / sqrtf(ss / (float)d + eps);
    for (int64_t i = threadIdx.x; i < d; i += NORM_THREADS)
        yr[i] = w[i] * (xr[i] * inv);
}

extern "C" void hy_cuda_rmsnorm(cudaStream_t st, float *out, const float *x, const float *w,
                                int64_t rows, int64_t d, float eps)
{
    if (rows <= 0)
        return;
    rmsnorm_kernel<<<(unsigned)rows, NORM_THREADS, 0, st>>>(out, x, w, d, eps);
    HY_CUDA_CHECK_LAUNCH();
}
