/* rope.cu: NeoX rotate-half RoPE in place, one thread per rotated pair. The angle is
 * float32 pos * inv_freq as in the reference; cosf/sinf are CUDA's accurate versions
 * (2 ulp, full range reduction: no fast-math), so large positions stay exact enough. */
#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/kv_elem.cuh"

#define ROPE_THREADS 256

/* One rotated pair: (a c - b s, b c + a s), each product and the sum rounded on its own
 * (no contraction into an fma, which the compiler may otherwise choose differently in each
 * kernel): the fused kernel below rotates exactly as rope_kernel does. */
static __device__ __forceinline__ void rope_pair(float a, float b, float c, float s, float *oa,
                                                 float *ob)
{
    *oa = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    *ob = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
}

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
        rope_pair(v[i], v[i + half], c, s, &v[i], &v[i + half]);
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

/* The attention block's middle in one kernel: one warp per (token, head) of q (heads
 * 0..n_head-1) and of k (n_head..n_head+n_kv-1). RoPE as rope_kernel; then, with a norm
 * weight, RMSNorm over the head's hd values (float32 sum of squares over the warp), or the
 * norm first and then RoPE (norm_first: hy_v3's order); q
 * is written to q (in place, or from a fused product's rows), k to its pool row, and the
 * k warps copy the v row too (pool elements KV: float, or bf16 rounded to nearest even).
 * a.kc / a.vc: also the raw k and v rows there (the fused product's split). */
#define RNS_PAIRS 4 /* pairs per lane: hd <= 256 */
template <typename KV>
__global__ void rope_norm_store_kernel(float *q, struct hy_cuda_qkv_src a, const int32_t *pos,
                                       const int32_t *slots, int T, int n_head, int n_kv, int hd,
                                       const float *inv_freq, const float *qn, const float *kn,
                                       float eps, bool norm_first, KV *k_pool, KV *v_pool)
{
    const int64_t wid = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31, heads = n_head + n_kv, half = hd / 2;
    if (wid >= (int64_t)T * heads)
        return;
    const int t = (int)(wid / heads), j = (int)(wid % heads);
    const bool is_q = j < n_head;
    const int64_t kvd = (int64_t)n_kv * hd, kh = (int64_t)(j - n_head) * hd;
    const float *src = is_q ? a.q + t * a.q_ld + (int64_t)j * hd : a.k + t * a.k_ld + kh;
    const float *w = is_q ? qn : kn;
    float a0[RNS_PAIRS], b0[RNS_PAIRS], cs[RNS_PAIRS], sn[RNS_PAIRS], ss = 0.0f;
#pragma unroll
    for (int c = 0; c < RNS_PAIRS; c++) {
        int i = c * 32 + lane;
        a0[c] = b0[c] = cs[c] = sn[c] = 0.0f;
        if (i < half) {
            float theta = (float)pos[t] * inv_freq[i];
            float x0 = src[i], x1 = src[i + half];
            cs[c] = cosf(theta), sn[c] = sinf(theta);
            if (!is_q && a.kc) {
                a.kc[t * kvd + kh + i] = x0;
                a.kc[t * kvd + kh + i + half] = x1;
            }
            a0[c] = x0, b0[c] = x1;
            if (!norm_first)
                rope_pair(x0, x1, cs[c], sn[c], &a0[c], &b0[c]);
            ss += a0[c] * a0[c] + b0[c] * b0[c];
        }
    }
    if (w) {
        for (int o = 16; o > 0; o >>= 1)
            ss += __shfl_xor_sync(0xffffffffu, ss, o);
        const float inv = 1.0f / sqrtf(ss / (float)hd + eps);
#pragma unroll
        for (int c = 0; c < RNS_PAIRS; c++) {
            int i = c * 32 + lane;
            if (i < half) {
                a0[c] = w[i] * (a0[c] * inv);
                b0[c] = w[i + half] * (b0[c] * inv);
            }
        }
    }
    if (norm_first) /* hy_v3: the norm's output rotated */
#pragma unroll
        for (int c = 0; c < RNS_PAIRS; c++)
            rope_pair(a0[c], b0[c], cs[c], sn[c], &a0[c], &b0[c]);
    if (is_q) {
        float *dst = q + ((int64_t)t * n_head + j) * hd;
#pragma unroll
        for (int c = 0; c < RNS_PAIRS; c++) {
            int i = c * 32 + lane;
            if (i < half) {
                dst[i] = a0[c];
                dst[i + half] = b0[c];
            }
        }
        return;
    }
    KV *dst = k_pool + (int64_t)slots[t] * kvd + kh;
#pragma unroll
    for (int c = 0; c < RNS_PAIRS; c++) {
        int i = c * 32 + lane;
        if (i < half) {
            kv_st(dst + i, a0[c]);
            kv_st(dst + i + half, b0[c]);
        }
    }
    const float *vs = a.v + t * a.v_ld + kh;
    KV *vd = v_pool + (int64_t)slots[t] * kvd + kh;
    for (int i = lane; i < hd; i += 32) {
        const float x = vs[i];
        kv_st(vd + i, x);
        if (a.vc)
            a.vc[t * kvd + kh + i] = x;
    }
}

extern "C" void hy_cuda_rope_norm_store_src(cudaStream_t st, float *q,
                                            const struct hy_cuda_qkv_src *a, const int32_t *pos,
                                            const int32_t *slots, int T, int n_head, int n_kv,
                                            int hd, const float *inv_freq, const float *qn,
                                            const float *kn, float eps, bool norm_first,
                                            void *k_pool, void *v_pool, bool bf16)
{
    int64_t warps = (int64_t)T * (n_head + n_kv);
    if (warps <= 0)
        return;
    const int per = ROPE_THREADS / 32;
    const unsigned grid = (unsigned)((warps + per - 1) / per);
    if (bf16)
        rope_norm_store_kernel<<<grid, ROPE_THREADS, 0, st>>>(
            q, *a, pos, slots, T, n_head, n_kv, hd, inv_freq, qn, kn, eps, norm_first,
            (__nv_bfloat16 *)k_pool, (__nv_bfloat16 *)v_pool);
    else
        rope_norm_store_kernel<<<grid, ROPE_THREADS, 0, st>>>(
            q, *a, pos, slots, T, n_head, n_kv, hd, inv_freq, qn, kn, eps, norm_first,
            (float *)k_pool, (float *)v_pool);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_rope_norm_store(cudaStream_t st, float *q, const float *k, const float *v,
                                        const int32_t *pos, const int32_t *slots, int T,
                                        int n_head, int n_kv, int hd, const float *inv_freq,
                                        const float *qn, const float *kn, float eps,
                                        bool norm_first, void *k_pool, void *v_pool, bool bf16)
{
    const int64_t kvd = (int64_t)n_kv * hd;
    const struct hy_cuda_qkv_src a = {q, k, v, (int64_t)n_head * hd, kvd, kvd, NULL, NULL};
    hy_cuda_rope_norm_store_src(st, q, &a, pos, slots, T, n_head, n_kv, hd, inv_freq, qn, kn,
                                eps, norm_first, k_pool, v_pool, bf16);
}
