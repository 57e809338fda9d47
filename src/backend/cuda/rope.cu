/* rope.cu: NeoX rotate-half RoPE in place, one thread per rotated pair. The angle is
 * float32 pos * inv_freq as in the reference; cosf/sinf are CUDA's accurate versions
 * (2 ulp, full range reduction: no fast-math), so large positions stay exact enough. */
#include "backend/cuda/cuda_impl.h"

#define ROPE_THREADS 256

__global__ void rope_kernel(float *x, const int32_t *pos, int64_t pairs, int n_heads, int half,
                            const float *inv_freq)
{
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < pairs;
         k += (int64_t)gridDim.x * blockDim.x) {
        int i = (int)(k % half);
        int64_t th = k / half; /* t * n_heads + h */
        float theta = (float)pos[th / n_heads] * inv_freq[i];
        float c = cosf(theta), s = sinf(theta);
        float *v = x + th * 2 * half;
        float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
    }
}

extern "C" void hy_cuda_rope(cudaStream_t st, float *x, const int32_t *pos, int T, int n_heads,
                             int hd, const float *inv_freq)
{
    int64_t pairs = (int64_t)T * n_heads * (hd / 2);
    if (pairs <= 0)
        return;
    int64_t blocks = (pairs + ROPE_THREADS - 1) / ROPE_THREADS;
    rope_kernel<<<(unsigned)(blocks > 65536 ? 65536 : blocks), ROPE_THREADS, 0, st>>>(
        x, pos, pairs, n_heads, hd / 2, inv_freq);
    HY_CUDA_CHECK_LAUNCH();
}
