/* attention.cu: causal GQA attention over the paged KV pool, correct first.
 * One block of ATT_WARPS warps per (query row, query head). Each warp takes every
 * ATT_WARPS-th key: the score is a warp-wide dot product (lane i holds elements i, i+32,
 * ...), and the warp keeps an online softmax (running max m, denominator l, weighted sum of
 * V) in float32; the warps' partial results are then merged through shared memory.
 * Key j of the row's sequence lives in pool row blocks[j/bs]*bs + j%bs; no other pool row
 * is read. Not yet GQA-shared: each query head reads its KV head itself. */
#include "backend/cuda/cuda_impl.h"

#include <math.h>

#define ATT_WARPS 16
#define ATT_LANE_VALS 8 /* HY_CUDA_MAX_HEAD_DIM / 32 */

__global__ void __launch_bounds__(ATT_WARPS * 32)
    attention_kernel(float *out, const float *q, const float *k_pool, const float *v_pool, int bs,
                     const int32_t *info, const int32_t *blocks, int n_head, int n_kv, int hd,
                     float scale)
{
    __shared__ float sm_m[ATT_WARPS], sm_l[ATT_WARPS];
    __shared__ float sm_acc[ATT_WARPS][ATT_LANE_VALS * 32];
    const int r = blockIdx.x, h = blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t qo = ((int64_t)info[3 * r] * n_head + h) * hd;
    const int n = info[3 * r + 1];
    const int32_t *bt = blocks + info[3 * r + 2];
    const int64_t kv_stride = (int64_t)n_kv * hd;
    const int64_t ko = (int64_t)(h / (n_head / n_kv)) * hd;

    float qv[ATT_LANE_VALS], acc[ATT_LANE_VALS];
#pragma unroll
    for (int c = 0; c < ATT_LANE_VALS; c++) {
        int i = c * 32 + lane;
        qv[c] = i < hd ? q[qo + i] : 0.0f;
        acc[c] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int j = warp; j < n; j += ATT_WARPS) {
        int64_t row = ((int64_t)bt[j / bs] * bs + j % bs) * kv_stride + ko;
        const float *kr = k_pool + row, *vr = v_pool + row;
        float s = 0.0f;
#pragma unroll
        for (int c = 0; c < ATT_LANE_VALS; c++) {
            int i = c * 32 + lane;
            if (i < hd)
                s += qv[c] * kr[i];
        }
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        s *= scale;
        float mn = fmaxf(m, s);
        float corr = expf(m - mn), p = expf(s - mn); /* corr = 0 on the first key */
        l = l * corr + p;
#pragma unroll
        for (int c = 0; c < ATT_LANE_VALS; c++) {
            int i = c * 32 + lane;
            if (i < hd)
                acc[c] = acc[c] * corr + p * vr[i];
        }
        m = mn;
    }
    if (lane == 0) {
        sm_m[warp] = m;
        sm_l[warp] = l;
    }
#pragma unroll
    for (int c = 0; c < ATT_LANE_VALS; c++)
        sm_acc[warp][c * 32 + lane] = acc[c];
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < ATT_WARPS; w++)
        M = fmaxf(M, sm_m[w]);
    float L = 0.0f, f[ATT_WARPS];
#pragma unroll
    for (int w = 0; w < ATT_WARPS; w++) {
        f[w] = sm_l[w] > 0.0f ? expf(sm_m[w] - M) : 0.0f; /* a warp with no key adds nothing */
        L += sm_l[w] * f[w];
    }
    for (int i = threadIdx.x; i < hd; i += ATT_WARPS * 32) {
        float o = 0.0f;
#pragma unroll
        for (int w = 0; w < ATT_WARPS; w++)
            o += sm_acc[w][i] * f[w];
        out[qo + i] = o / L;
    }
}

extern "C" void hy_cuda_attention(cudaStream_t st, float *out, const float *q,
                                  const float *k_pool, const float *v_pool, int bs,
                                  const int32_t *info, const int32_t *blocks, int R, int n_head,
                                  int n_kv, int hd, float scale)
{
    if (R <= 0)
        return;
    dim3 grid((unsigned)R, (unsigned)n_head);
    attention_kernel<<<grid, ATT_WARPS * 32, 0, st>>>(out, q, k_pool, v_pool, bs, info, blocks,
                                                       n_head, n_kv, hd, scale);
    HY_CUDA_CHECK_LAUNCH();
}
