/* attention_tc.cu: causal attention of prefill tiles on the tensor cores (cuda_impl.h).
 * A block takes up to 64 consecutive query rows of one sequence and one query head; its 4
 * warps own 16 rows each. Keys go in tiles of 64: K and V rows of the tile are gathered
 * through the block table into shared memory (rounded to tf32), each warp computes its
 * 16 x 64 scores with mma.m16n8k8 (tf32 in, float32 accumulate), masks the keys past each
 * row's position, updates its rows' online softmax (running max and sum in float32, in
 * the log2 domain: q is scaled by scale * log2(e) before rounding), writes the
 * probabilities (tf32) to shared memory and adds P·V into its 16 x hd float32 output.
 * The pool's elements are float or bf16 (template KV: kv_elem.cuh); bf16 widens to tf32
 * exactly (8 significant bits of 11).
 * Precision: q, k, v and p rounded to tf32 (10-bit mantissa, relative 2^-11 each): a
 * score moves by at most ~2^-10 · scale · Σ_d |q_d k_d|, the output by that times max |v|
 * plus 2^-10 relative; the CUDA-core kernel (attention.cu) is the float32 one.
 * Fragment layouts (PTX ISA, mma.m16n8k8 .tf32): lane = 4g + t; A (16x8, row): a0 (g, t),
 * a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); B (8x8, col): b0 (k t, n g), b1 (k t+4, n g);
 * C (16x8): c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1).
 * Shared rows are padded by 4 floats, so the fragment loads hit 32 distinct banks. */
#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/kv_elem.cuh"

#include <math.h>

#define TC_ROWS 64 /* query rows a block */
#define TC_KEYS 64 /* keys a tile */

struct tc_args {
    float *out;
    const float *q;
    const void *k_pool, *v_pool;  /* KV elements */
    const int32_t *info, *blocks; /* info: 4 per tile (row0, rows, n0, table offset) */
    int bs, n_head, n_kv, hd;
    float qscale; /* scale * log2(e) */
};

__device__ __forceinline__ uint32_t tf32(float f)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
    return r;
}

__device__ __forceinline__ void mma1688(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                        uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <int HD, typename KV>
__global__ void __launch_bounds__(128) attention_tc_kernel(struct tc_args a)
{
    constexpr int KS = HD + 4, PS = TC_KEYS + 4, NK = HD / 8;
    extern __shared__ float sm[];
    float *Ks = sm, *Vs = sm + TC_KEYS * KS;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    float *Ps = Vs + TC_KEYS * KS + warp * 16 * PS;
    const int tile = blockIdx.x, h = blockIdx.y, kvh = h / (a.n_head / a.n_kv);
    const int row0 = a.info[4 * tile], nr = a.info[4 * tile + 1], n0 = a.info[4 * tile + 2];
    const int32_t *bt = a.blocks + a.info[4 * tile + 3];
    const int64_t qstride = (int64_t)a.n_head * HD, kv_stride = (int64_t)a.n_kv * HD;
    const int r_lo = warp * 16 + g, r_hi = r_lo + 8; /* this thread's two rows in the tile */

    uint32_t qa[NK][4];
#pragma unroll
    for (int kk = 0; kk < NK; kk++) {
        const float *q_lo = a.q + (int64_t)(row0 + r_lo) * qstride + (int64_t)h * HD + kk * 8;
        const float *q_hi = a.q + (int64_t)(row0 + r_hi) * qstride + (int64_t)h * HD + kk * 8;
        qa[kk][0] = tf32(r_lo < nr ? q_lo[t] * a.qscale : 0.0f);
        qa[kk][1] = tf32(r_hi < nr ? q_hi[t] * a.qscale : 0.0f);
        qa[kk][2] = tf32(r_lo < nr ? q_lo[t + 4] * a.qscale : 0.0f);
        qa[kk][3] = tf32(r_hi < nr ? q_hi[t + 4] * a.qscale : 0.0f);
    }
    float o[NK][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < NK; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    const int n_keys = n0 + nr - 1; /* keys the tile's last row sees */
    const int lim_lo = n0 + r_lo, lim_hi = n0 + r_hi; /* row i sees keys < n0 + i */
    for (int k0 = 0; k0 < n_keys; k0 += TC_KEYS) {
        __syncthreads(); /* the previous tile's K and V are no longer read */
        for (int i = threadIdx.x; i < TC_KEYS * HD / 4; i += 128) {
            const int kr = i / (HD / 4), d = (i % (HD / 4)) * 4, j = k0 + kr;
            float4 kv = make_float4(0.0f, 0.0f, 0.0f, 0.0f), vv = kv;
            if (j < n_keys) {
                const int64_t row =
                    ((int64_t)bt[j / a.bs] * a.bs + j % a.bs) * kv_stride + (int64_t)kvh * HD + d;
                kv = kv_ld4((const KV *)a.k_pool + row);
                vv = kv_ld4((const KV *)a.v_pool + row);
            }
            float *kd = Ks + kr * KS + d, *vd = Vs + kr * KS + d;
            kd[0] = __uint_as_float(tf32(kv.x)), kd[1] = __uint_as_float(tf32(kv.y));
            kd[2] = __uint_as_float(tf32(kv.z)), kd[3] = __uint_as_float(tf32(kv.w));
            vd[0] = __uint_as_float(tf32(vv.x)), vd[1] = __uint_as_float(tf32(vv.y));
            vd[2] = __uint_as_float(tf32(vv.z)), vd[3] = __uint_as_float(tf32(vv.w));
        }
        __syncthreads();
        if (warp * 16 >= nr) /* no rows of this warp in the tile (no barrier until the top) */
            continue;
        float s[TC_KEYS / 8][4];
#pragma unroll
        for (int n = 0; n < TC_KEYS / 8; n++) {
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < NK; kk++) {
                const float *kp = Ks + (n * 8 + g) * KS + kk * 8 + t;
                mma1688(s[n], qa[kk][0], qa[kk][1], qa[kk][2], qa[kk][3],
                        __float_as_uint(kp[0]), __float_as_uint(kp[4]));
            }
        }
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int n = 0; n < TC_KEYS / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int j = k0 + n * 8 + 2 * t + (e & 1);
                if (j >= (e < 2 ? lim_lo : lim_hi))
                    s[n][e] = -INFINITY;
                mx[e >> 1] = fmaxf(mx[e >> 1], s[n][e]);
            }
        float corr[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float mn = fmaxf(m[r], mx[r]);
            /* a row with no key yet in this tile keeps m = -inf: nothing to scale */
            corr[r] = mn == -INFINITY ? 1.0f : exp2f(m[r] - mn);
            m[r] = mn;
            l[r] *= corr[r];
        }
#pragma unroll
        for (int n = 0; n < NK; n++) {
            o[n][0] *= corr[0], o[n][1] *= corr[0];
            o[n][2] *= corr[1], o[n][3] *= corr[1];
        }
#pragma unroll
        for (int n = 0; n < TC_KEYS / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float mr = m[e >> 1];
                const float p = mr == -INFINITY ? 0.0f : exp2f(s[n][e] - mr);
                l[e >> 1] += p;
                Ps[((e >> 1) * 8 + g) * PS + n * 8 + 2 * t + (e & 1)] = __uint_as_float(tf32(p));
            }
        __syncwarp();
#pragma unroll
        for (int kk = 0; kk < TC_KEYS / 8; kk++) {
            const float *pp = Ps + g * PS + kk * 8 + t;
            const uint32_t a0 = __float_as_uint(pp[0]), a1 = __float_as_uint(pp[8 * PS]);
            const uint32_t a2 = __float_as_uint(pp[4]), a3 = __float_as_uint(pp[8 * PS + 4]);
#pragma unroll
            for (int n = 0; n < NK; n++) {
                const float *vp = Vs + (kk * 8 + t) * KS + n * 8 + g;
                mma1688(o[n], a0, a1, a2, a3, __float_as_uint(vp[0]), __float_as_uint(vp[4 * KS]));
            }
        }
        __syncwarp(); /* Ps is rewritten by the next tile */
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
#pragma unroll
    for (int n = 0; n < NK; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = e < 2 ? r_lo : r_hi;
            if (r < nr)
                a.out[(int64_t)(row0 + r) * qstride + (int64_t)h * HD + n * 8 + 2 * t + (e & 1)] =
                    o[n][e] / l[e >> 1];
        }
}

extern "C" bool hy_cuda_attention_tc_ok(int hd)
{
    return hd == 64 || hd == 128;
}

extern "C" int hy_cuda_attention_tc_rows(void)
{
    return TC_ROWS;
}

template <int HD>
static size_t tc_smem(void)
{
    return (size_t)(2 * TC_KEYS * (HD + 4) + 4 * 16 * (TC_KEYS + 4)) * sizeof(float);
}

template <int HD, typename KV>
static cudaError_t tc_setup(void)
{
    return cudaFuncSetAttribute(attention_tc_kernel<HD, KV>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, (int)tc_smem<HD>());
}

extern "C" cudaError_t hy_cuda_attention_tc_setup(void)
{
    cudaError_t e = tc_setup<64, float>();
    if (e == cudaSuccess)
        e = tc_setup<128, float>();
    if (e == cudaSuccess)
        e = tc_setup<64, __nv_bfloat16>();
    if (e == cudaSuccess)
        e = tc_setup<128, __nv_bfloat16>();
    return e;
}

template <int HD>
static void launch_tc(cudaStream_t st, const struct tc_args *a, int tiles, bool bf16)
{
    const dim3 grid((unsigned)tiles, (unsigned)a->n_head);
    if (bf16)
        attention_tc_kernel<HD, __nv_bfloat16><<<grid, 128, tc_smem<HD>(), st>>>(*a);
    else
        attention_tc_kernel<HD, float><<<grid, 128, tc_smem<HD>(), st>>>(*a);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_attention_tc(cudaStream_t st, float *out, const float *q,
                                     const void *k_pool, const void *v_pool, bool bf16, int bs,
                                     const int32_t *info, const int32_t *blocks, int tiles,
                                     int n_head, int n_kv, int hd, float scale)
{
    if (tiles <= 0)
        return;
    struct tc_args a = {out, q, k_pool, v_pool, info, blocks, bs, n_head, n_kv, hd,
                        scale * 1.4426950408889634f};
    if (hd == 64)
        launch_tc<64>(st, &a, tiles, bf16);
    else if (hd == 128)
        launch_tc<128>(st, &a, tiles, bf16);
    else
        hy_cuda_fail(__FILE__, __LINE__, "hd == 64 || hd == 128", "attention_tc head size");
}
