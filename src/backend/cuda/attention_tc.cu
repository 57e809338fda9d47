/* attention_tc.cu: causal attention of prefill tiles on the tensor cores (cuda_impl.h).
 * A block takes up to 64 consecutive query rows of one sequence and one query head; its 4
 * warps own 16 rows each. Keys go in tiles of 64: K and V rows of the tile are gathered
 * through the block table into shared memory as bf16 (the bf16 pool's bytes as they are; a
 * float32 pool rounded to nearest even), each warp computes its 16 x 64 scores with
 * mma.m16n8k16 (bf16 in, float32 accumulate), masks the keys past each row's position,
 * updates its rows' online softmax (running max and sum in float32, in the log2 domain: q
 * is scaled by scale * log2(e) before rounding), and adds P·V into its 16 x hd float32
 * output, P rounded to bf16 straight from the score registers (the accumulator layout of
 * two 8-key score tiles is the A layout of one 16-key step) and V's fragments read with
 * ldmatrix.trans from the row-major tile. The sum l adds the rounded p, so the output is a
 * weighted mean of V rows with exactly the weights P·V used.
 * Precision: q and p rounded to bf16 (relative 2^-9 each), k and v exact from a bf16
 * pool (2^-9 from a float32 one): a score moves by at most ~2^-8 · scale · Σ_d |q_d k_d|,
 * the output by that times max |v| plus ~2^-8 relative; the CUDA-core kernel
 * (attention.cu) is the float32 one.
 * Fragment layouts (PTX ISA, mma.m16n8k16 .bf16; a register holds two elements, the lower
 * column in the low half): lane = 4g + t; A (16x16, row): a0 (g, 2t..), a1 (g+8, 2t..),
 * a2 (g, 2t+8..), a3 (g+8, 2t+8..); B (16x8, col): b0 (k 2t.., n g), b1 (k 2t+8.., n g);
 * C (16x8): c0 c1 (g, 2t and 2t+1), c2 c3 (g+8, 2t and 2t+1).
 * Shared rows are padded by 8 bf16 (16 bytes), so the fragment loads of a warp and the
 * eight row addresses of each ldmatrix hit 32 distinct banks. */
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

/* Two floats as bf16 (nearest even), x in the low half. */
__device__ __forceinline__ uint32_t pack_bf16(float x, float y)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
    return *(uint32_t *)&v;
}

__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Four 8x8 bf16 tiles, transposed: lane l gives the address of row l % 8 of tile l / 8. */
__device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], const void *p)
{
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

/* Eight consecutive pool elements as bf16 (16 bytes; 16-byte aligned for bf16, 32 for float). */
__device__ __forceinline__ uint4 kv_ld8(const __nv_bfloat16 *p) { return __ldg((const uint4 *)p); }
__device__ __forceinline__ uint4 kv_ld8(const float *p)
{
    const float4 a = __ldg((const float4 *)p), b = __ldg((const float4 *)p + 1);
    return make_uint4(pack_bf16(a.x, a.y), pack_bf16(a.z, a.w), pack_bf16(b.x, b.y),
                      pack_bf16(b.z, b.w));
}

template <int HD, typename KV>
__global__ void __launch_bounds__(128) attention_tc_kernel(struct tc_args a)
{
    constexpr int KS = HD + 8, NK = HD / 16, NO = HD / 8;
    __shared__ __align__(16) __nv_bfloat16 Ks[TC_KEYS * KS], Vs[TC_KEYS * KS];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    /* the last tiles of a sequence see the most keys: started first, they do not trail */
    const int tile = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, kvh = h / (a.n_head / a.n_kv);
    const int row0 = a.info[4 * tile], nr = a.info[4 * tile + 1], n0 = a.info[4 * tile + 2];
    const int32_t *bt = a.blocks + a.info[4 * tile + 3];
    const int64_t qstride = (int64_t)a.n_head * HD, kv_stride = (int64_t)a.n_kv * HD;
    const int r_lo = warp * 16 + g, r_hi = r_lo + 8; /* this thread's two rows in the tile */

    uint32_t qa[NK][4];
    {
        const float *q_lo = a.q + (int64_t)(row0 + r_lo) * qstride + (int64_t)h * HD + 2 * t;
        const float *q_hi = a.q + (int64_t)(row0 + r_hi) * qstride + (int64_t)h * HD + 2 * t;
        const bool lo = r_lo < nr, hi = r_hi < nr;
#pragma unroll
        for (int kk = 0; kk < NK; kk++) {
            const int c = kk * 16;
            const float2 z = make_float2(0.0f, 0.0f);
            float2 l0 = lo ? *(const float2 *)(q_lo + c) : z, l1 = lo ? *(const float2 *)(q_lo + c + 8) : z;
            float2 h0 = hi ? *(const float2 *)(q_hi + c) : z, h1 = hi ? *(const float2 *)(q_hi + c + 8) : z;
            qa[kk][0] = pack_bf16(l0.x * a.qscale, l0.y * a.qscale);
            qa[kk][1] = pack_bf16(h0.x * a.qscale, h0.y * a.qscale);
            qa[kk][2] = pack_bf16(l1.x * a.qscale, l1.y * a.qscale);
            qa[kk][3] = pack_bf16(h1.x * a.qscale, h1.y * a.qscale);
        }
    }
    float o[NO][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < NO; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    const int n_keys = n0 + nr - 1; /* keys the tile's last row sees */
    const int lim_lo = n0 + r_lo, lim_hi = n0 + r_hi; /* row i sees keys < n0 + i */
    const int w_keys = n0 + (warp * 16 + 15 < nr ? warp * 16 + 15 : nr - 1); /* this warp's last row's */
    for (int k0 = 0; k0 < n_keys; k0 += TC_KEYS) {
        __syncthreads(); /* the previous tile's K and V are no longer read */
        for (int i = threadIdx.x; i < TC_KEYS * HD / 8; i += 128) {
            const int kr = i / (HD / 8), d = (i % (HD / 8)) * 8, j = k0 + kr;
            uint4 kv = make_uint4(0, 0, 0, 0), vv = kv;
            if (j < n_keys) {
                const int64_t row =
                    ((int64_t)bt[j / a.bs] * a.bs + j % a.bs) * kv_stride + (int64_t)kvh * HD + d;
                kv = kv_ld8((const KV *)a.k_pool + row);
                vv = kv_ld8((const KV *)a.v_pool + row);
            }
            *(uint4 *)(Ks + kr * KS + d) = kv;
            *(uint4 *)(Vs + kr * KS + d) = vv;
        }
        __syncthreads();
        if (warp * 16 >= nr || k0 >= w_keys) /* no row of this warp sees a key of the tile */
            continue;
        float s[TC_KEYS / 8][4];
#pragma unroll
        for (int n = 0; n < TC_KEYS / 8; n++) {
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
            const __nv_bfloat16 *kp = Ks + (n * 8 + g) * KS + 2 * t;
#pragma unroll
            for (int kk = 0; kk < NK; kk++)
                mma16816(s[n], qa[kk], *(const uint32_t *)(kp + kk * 16),
                         *(const uint32_t *)(kp + kk * 16 + 8));
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
        for (int n = 0; n < NO; n++) {
            o[n][0] *= corr[0], o[n][1] *= corr[0];
            o[n][2] *= corr[1], o[n][3] *= corr[1];
        }
#pragma unroll
        for (int kk = 0; kk < TC_KEYS / 16; kk++) {
            uint32_t pa[4];
#pragma unroll
            for (int half = 0; half < 2; half++) { /* score tiles 2kk, 2kk + 1 */
                float *sv = s[2 * kk + half];
                float p[4];
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float mr = m[e >> 1];
                    p[e] = mr == -INFINITY ? 0.0f : exp2f(sv[e] - mr);
                }
                pa[2 * half] = pack_bf16(p[0], p[1]);
                pa[2 * half + 1] = pack_bf16(p[2], p[3]);
                /* l sums the rounded weights */
                const __nv_bfloat162 lo = *(const __nv_bfloat162 *)&pa[2 * half];
                const __nv_bfloat162 hi = *(const __nv_bfloat162 *)&pa[2 * half + 1];
                l[0] += __low2float(lo) + __high2float(lo);
                l[1] += __low2float(hi) + __high2float(hi);
            }
            /* lane l: row (l % 8) + 8 * ((l / 8) % 2) of the 16 keys, columns of tile n, n + 1 */
            const __nv_bfloat16 *vrow = Vs + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * KS +
                                        (lane >> 4) * 8;
#pragma unroll
            for (int n = 0; n < NO; n += 2) {
                uint32_t b[4];
                ldsm_x4_t(b, vrow + n * 8);
                mma16816(o[n], pa, b[0], b[1]);
                mma16816(o[n + 1], pa, b[2], b[3]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
#pragma unroll
    for (int n = 0; n < NO; n++)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
            const int r = e < 2 ? r_lo : r_hi;
            if (r < nr)
                *(float2 *)(a.out + (int64_t)(row0 + r) * qstride + (int64_t)h * HD + n * 8 + 2 * t) =
                    make_float2(o[n][e] / l[e >> 1], o[n][e + 1] / l[e >> 1]);
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

extern "C" cudaError_t hy_cuda_attention_tc_setup(void)
{
    return cudaSuccess; /* static shared memory (34 KiB at hd 128) */
}

template <int HD>
static void launch_tc(cudaStream_t st, const struct tc_args *a, int tiles, bool bf16)
{
    const dim3 grid((unsigned)tiles, (unsigned)a->n_head);
    if (bf16)
        attention_tc_kernel<HD, __nv_bfloat16><<<grid, 128, 0, st>>>(*a);
    else
        attention_tc_kernel<HD, float><<<grid, 128, 0, st>>>(*a);
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
