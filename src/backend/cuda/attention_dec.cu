/* attention_dec.cu: attention of decode rows (one query row a tile) over the paged KV pool,
 * for head sizes 64 and 128 and query groups of 1, 2, 4 or 8 heads a KV head (cuda_impl.h).
 * A block takes one (tile, KV head, split-K share) with the G query heads of the group, so
 * each K/V row of the share is read once for the whole group. Its 4 warps take 8 keys at a
 * time each: four lanes a key, each lane 8 of every 32 dimensions (16-byte loads; the four
 * lanes of a key read 64 contiguous bytes), the group's G scores summed over the four lanes
 * by two shuffles. The warp's online softmax (running max and sum per head, float32, in
 * the log2 domain: q is scaled by scale * log2(e)) is updated once per 8 keys, the 8 x G
 * probabilities go through shared memory, and for P·V each lane owns hd/32 consecutive
 * dimensions of the output of every head and reads them of the 8 V rows (a 256-byte row a
 * key for hd 128). The warps' states are merged through shared memory, as attention.cu's
 * kernel does, and a split row's share is written in attention.cu's partial layout for its
 * merge kernel. Split-K shares and their bounds are attention.cu's (the same S and j0..j1).
 * Compared with attention.cu's kernel (a warp a key, 5 shuffles per head and key), the
 * keys of a warp are in flight together and a shuffle serves 8 keys.
 * Arithmetic: float32 throughout; K/V widened exactly from bf16. */
#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/kv_elem.cuh"

#include <math.h>

#define DEC_WARPS 4
#define DEC_KEYS 8        /* keys a warp takes at a time: four lanes a key */
#define DEC_SPLIT_KEYS 64 /* attention.cu's ATT_SPLIT_KEYS: the same shares */

struct dec_args {
    float *out;
    const float *q;
    const void *k_pool, *v_pool;
    const int32_t *info, *blocks;
    float *part;
    int bs, n_head, n_kv, hd, smax;
    float qscale; /* scale * log2(e) */
};

/* Eight consecutive pool elements as floats (16-byte aligned for bf16, 32 for float). */
__device__ __forceinline__ void ld8(float (&f)[8], const __nv_bfloat16 *p)
{
    const uint4 u = __ldg((const uint4 *)p);
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}
__device__ __forceinline__ void ld8(float (&f)[8], const float *p)
{
    const float4 a = __ldg((const float4 *)p), b = __ldg((const float4 *)p + 1);
    f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}

/* N consecutive pool elements (N = 2 or 4; aligned to N elements) as floats. */
template <int N>
__device__ __forceinline__ void ldn(float (&f)[N], const __nv_bfloat16 *p)
{
    if constexpr (N == 4) {
        const float4 v = kv_ld4(p);
        f[0] = v.x, f[1] = v.y, f[2] = v.z, f[3] = v.w;
    } else {
        const uint32_t u = __ldg((const unsigned int *)p);
        f[0] = __uint_as_float(u << 16), f[1] = __uint_as_float(u & 0xffff0000u);
    }
}
template <int N>
__device__ __forceinline__ void ldn(float (&f)[N], const float *p)
{
    if constexpr (N == 4) {
        const float4 v = __ldg((const float4 *)p);
        f[0] = v.x, f[1] = v.y, f[2] = v.z, f[3] = v.w;
    } else {
        const float2 v = __ldg((const float2 *)p);
        f[0] = v.x, f[1] = v.y;
    }
}

template <int G, int HD, typename KV>
__global__ void __launch_bounds__(DEC_WARPS * 32) attention_dec_kernel(struct dec_args a)
{
    constexpr int NC = HD / 32, OD = HD / 32; /* 32-dim chunks; output dims a lane owns */
    __shared__ __align__(16) float qs[G][HD];
    __shared__ float ps[DEC_WARPS][DEC_KEYS][G];
    __shared__ float sm_m[DEC_WARPS][G], sm_l[DEC_WARPS][G];
    __shared__ __align__(16) float sm_acc[DEC_WARPS][G][HD];
    const int tile = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, kq = lane >> 2, sub = lane & 3;
    const int row = a.info[4 * tile], n_all = a.info[4 * tile + 2];
    const int32_t *bt = a.blocks + a.info[4 * tile + 3];
    int S = (n_all + DEC_SPLIT_KEYS - 1) / DEC_SPLIT_KEYS;
    S = S < 1 ? 1 : S > a.smax ? a.smax : S;
    if (split >= S) /* the whole block: before any barrier */
        return;
    const int j0 = (int)((int64_t)n_all * split / S), j1 = (int)((int64_t)n_all * (split + 1) / S);
    const int h0 = kvh * G;
    for (int x = threadIdx.x; x < G * HD; x += DEC_WARPS * 32)
        qs[x / HD][x % HD] = a.q[((int64_t)row * a.n_head + h0) * HD + x] * a.qscale;
    __syncthreads();

    const int64_t kv_stride = (int64_t)a.n_kv * HD, ko = (int64_t)kvh * HD;
    float m[G], l[G], acc[G][OD];
#pragma unroll
    for (int g = 0; g < G; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < OD; e++)
            acc[g][e] = 0.0f;
    }
    for (int base = j0 + warp * DEC_KEYS; base < j1; base += DEC_WARPS * DEC_KEYS) {
        /* scores: lane (kq, sub) takes key base + kq, dims c*32 + sub*8 .. +7 */
        const int j = base + kq;
        float s[G];
#pragma unroll
        for (int g = 0; g < G; g++)
            s[g] = 0.0f;
        if (j < j1) {
            const KV *kr = (const KV *)a.k_pool +
                           ((int64_t)bt[j / a.bs] * a.bs + j % a.bs) * kv_stride + ko + sub * 8;
            float kx[NC][8];
#pragma unroll
            for (int c = 0; c < NC; c++)
                ld8(kx[c], kr + c * 32);
#pragma unroll
            for (int c = 0; c < NC; c++)
#pragma unroll
                for (int g = 0; g < G; g++) {
                    const float4 q0 = *(const float4 *)&qs[g][c * 32 + sub * 8];
                    const float4 q1 = *(const float4 *)&qs[g][c * 32 + sub * 8 + 4];
                    s[g] += q0.x * kx[c][0] + q0.y * kx[c][1] + q0.z * kx[c][2] + q0.w * kx[c][3] +
                            q1.x * kx[c][4] + q1.y * kx[c][5] + q1.z * kx[c][6] + q1.w * kx[c][7];
                }
        }
#pragma unroll
        for (int g = 0; g < G; g++) {
            s[g] += __shfl_xor_sync(0xffffffffu, s[g], 1);
            s[g] += __shfl_xor_sync(0xffffffffu, s[g], 2);
            if (j >= j1)
                s[g] = -INFINITY;
        }
        /* the warp's softmax over its 8 keys: max and sum across the key groups */
        float corr[G];
#pragma unroll
        for (int g = 0; g < G; g++) {
            float mx = s[g];
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
            const float mn = fmaxf(m[g], mx); /* finite: key base < j1 is real */
            corr[g] = exp2f(m[g] - mn);       /* 0 on the first keys (m = -inf) */
            const float p = exp2f(s[g] - mn); /* 0 for the keys past j1 */
            float ls = p;
            ls += __shfl_xor_sync(0xffffffffu, ls, 4);
            ls += __shfl_xor_sync(0xffffffffu, ls, 8);
            ls += __shfl_xor_sync(0xffffffffu, ls, 16);
            l[g] = l[g] * corr[g] + ls;
            m[g] = mn;
            if (sub == 0)
                ps[warp][kq][g] = p;
        }
        __syncwarp();
        /* P·V: lane owns dims lane*OD .. +OD-1 of every head */
        float vx[DEC_KEYS][OD];
#pragma unroll
        for (int k = 0; k < DEC_KEYS; k++) {
            const int jj = base + k;
            if (jj < j1)
                ldn<OD>(vx[k], (const KV *)a.v_pool +
                                   ((int64_t)bt[jj / a.bs] * a.bs + jj % a.bs) * kv_stride + ko +
                                   lane * OD);
            else
#pragma unroll
                for (int e = 0; e < OD; e++)
                    vx[k][e] = 0.0f;
        }
#pragma unroll
        for (int g = 0; g < G; g++)
#pragma unroll
            for (int e = 0; e < OD; e++) {
                float v = acc[g][e] * corr[g];
#pragma unroll
                for (int k = 0; k < DEC_KEYS; k++)
                    v += ps[warp][k][g] * vx[k][e];
                acc[g][e] = v;
            }
        __syncwarp(); /* ps is rewritten by the next keys */
    }
#pragma unroll
    for (int g = 0; g < G; g++) {
        if (lane == 0) {
            sm_m[warp][g] = m[g];
            sm_l[warp][g] = l[g];
        }
#pragma unroll
        for (int e = 0; e < OD; e++)
            sm_acc[warp][g][lane * OD + e] = acc[g][e];
    }
    __syncthreads();
    for (int x = threadIdx.x; x < G * HD; x += DEC_WARPS * 32) {
        const int g = x / HD, d = x % HD;
        float M = -INFINITY;
        for (int w = 0; w < DEC_WARPS; w++)
            M = fmaxf(M, sm_m[w][g]);
        float L = 0.0f, o = 0.0f;
        for (int w = 0; w < DEC_WARPS; w++) {
            const float f = sm_l[w][g] > 0.0f ? exp2f(sm_m[w][g] - M) : 0.0f; /* no key: nothing */
            L += sm_l[w][g] * f;
            o += sm_acc[w][g][d] * f;
        }
        const int64_t qrow = (int64_t)row * a.n_head + h0 + g;
        if (S == 1) {
            a.out[qrow * HD + d] = o / L;
        } else { /* attention.cu's share layout, its max in the natural-log domain */
            float *p = a.part + (((int64_t)tile * a.n_head + h0 + g) * a.smax + split) * (HD + 2);
            p[2 + d] = o;
            if (d == 0) {
                p[0] = M * 0.6931471805599453f;
                p[1] = L;
            }
        }
    }
}

extern "C" bool hy_cuda_attention_dec_ok(int n_head, int n_kv, int hd)
{
    const int G = n_head / n_kv;
    return (hd == 64 || hd == 128) && (G == 1 || G == 2 || G == 4 || G == 8);
}

template <int G, int HD>
static void launch_dec(cudaStream_t st, const struct dec_args *a, int tiles, bool bf16)
{
    const dim3 grid((unsigned)tiles, (unsigned)a->n_kv, (unsigned)a->smax);
    if (bf16)
        attention_dec_kernel<G, HD, __nv_bfloat16><<<grid, DEC_WARPS * 32, 0, st>>>(*a);
    else
        attention_dec_kernel<G, HD, float><<<grid, DEC_WARPS * 32, 0, st>>>(*a);
    HY_CUDA_CHECK_LAUNCH();
}

template <int HD>
static void launch_g(cudaStream_t st, const struct dec_args *a, int tiles, bool bf16, int G)
{
    switch (G) {
    case 1: launch_dec<1, HD>(st, a, tiles, bf16); break;
    case 2: launch_dec<2, HD>(st, a, tiles, bf16); break;
    case 4: launch_dec<4, HD>(st, a, tiles, bf16); break;
    default: launch_dec<8, HD>(st, a, tiles, bf16); break;
    }
}

extern "C" void hy_cuda_attention_dec(cudaStream_t st, float *out, const float *q,
                                      const void *k_pool, const void *v_pool, bool bf16, int bs,
                                      const int32_t *info, const int32_t *blocks, int tiles,
                                      int smax, float *part, int n_head, int n_kv, int hd,
                                      float scale)
{
    if (tiles <= 0)
        return;
    if (!hy_cuda_attention_dec_ok(n_head, n_kv, hd))
        hy_cuda_fail(__FILE__, __LINE__, "hy_cuda_attention_dec_ok", "decode attention shape");
    struct dec_args a = {out, q, k_pool, v_pool, info, blocks, part, bs, n_head, n_kv, hd,
                         smax < 1 ? 1 : smax, scale * 1.4426950408889634f};
    const int G = n_head / n_kv;
    if (hd == 64)
        launch_g<64>(st, &a, tiles, bf16, G);
    else
        launch_g<128>(st, &a, tiles, bf16, G);
    if (a.smax > 1)
        hy_cuda_attention_merge(st, out, part, info, tiles, n_head, a.smax, hd);
}
