/* qk_unit.cuh: the work units of the float32-activation GEMVs of GGUF's Q4_K and Q6_K
 * matrices (qlayout_k.h's layouts): qmatmul_k.cu's dense GEMV and moe_mmvq.cu's grouped one
 * take a row in units and add a unit's products with these functions, so a unit is the
 * same operations in both (qmatmul_k.cu says why the units are cut as they are). CUDA C++
 * only; internal to backend/cuda.
 *   Q4_K unit k (cols / 32 a row): piece p = k & 7 of super-block sb = k >> 3, the 16 quant
 *     bytes at 144 sb + 16 + 16 p of the row; 32 weights, columns q4k_unit_col(k) + b (low
 *     nibbles) and + 32 + b (high), b < 16; scales from the block's 16-byte header at 144 sb.
 *   Q6_K unit k (cols / 64 a row): half h = (k >> 1) & 1, l0 = 16 (k & 1) of super-block
 *     k >> 2: ql[64h + l0 ..], ql[64h + 32 + l0 ..] and qh[32h + l0 ..] (16 bytes each);
 *     64 weights, columns q6k_unit_col(k) + 32 g + b (g < 4, b < 16).
 * qk_unit (one overload a type) adds unit k of R rows of M matrices (M = 2: gate_up's gate
 * and up, which share the loads of x) times NT input rows x[t] to acc0 (and acc1). */
#ifndef HY_BACKEND_CUDA_QK_UNIT_CUH
#define HY_BACKEND_CUDA_QK_UNIT_CUH

#include "backend/cuda/gemv_util.cuh"
#include "backend/cuda/qlayout_k.h"

#include <cuda_fp16.h>
#include <stdint.h>

#define KG_F23 8388608.0f    /* 2^23: a Q4_K nibble q */
#define KG_F23_Q6 8388640.0f /* 2^23 + 32: a Q6_K 6-bit q, minus 32 */

static __device__ __forceinline__ float k_h2f(uint32_t h)
{
    return __half2float(__ushort_as_half((unsigned short)(h & 0xffffu)));
}

static __device__ __forceinline__ uint32_t k_word(const uint4 &v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/* The 4 bytes of u (each < 2^8) as floats, minus (bias - 2^23). */
static __device__ __forceinline__ void k_bytes4(uint32_t u, float bias, float *w)
{
    w[0] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7440u)) - bias;
    w[1] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7441u)) - bias;
    w[2] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7442u)) - bias;
    w[3] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7443u)) - bias;
}

/* Scale and min of sub-block j < 8 from a Q4_K header h (h.x: d, dmin; h.y, h.z, h.w: the
 * 12 packed bytes s[0..11]), as core/quant.h's hy_q4_k_scale_min. */
static __device__ __forceinline__ void q4k_scale_min(const uint4 &h, int j, int *sc, int *m)
{
    if (j < 4) {
        const int s = 8 * j;
        *sc = (int)((h.y >> s) & 63u);
        *m = (int)((h.z >> s) & 63u);
    } else {
        const int s = 8 * (j - 4);
        *sc = (int)(((h.w >> s) & 15u) | ((h.y >> (s + 6)) & 3u) << 4);
        *m = (int)(((h.w >> (s + 4)) & 15u) | ((h.z >> (s + 6)) & 3u) << 4);
    }
}

/* Q6_K scale byte k (< 4) of a word: int8 -> int. */
static __device__ __forceinline__ float q6k_sc(uint32_t s, int byte)
{
    int v = (int)((s >> (8 * byte)) & 0xffu);
    return (float)(v - ((v & 0x80) << 1));
}

/* acc += ds0 * (w[0..3] . a) + ds1 * (w[4..7] . b), each dot a chain of fmas from w[0] * a.x. */
static __device__ __forceinline__ float k_dot2(const float *w, float4 a, float4 b, float ds0,
                                               float ds1, float acc)
{
    float p0 = w[0] * a.x, p1 = w[4] * b.x;
    p0 = fmaf(w[1], a.y, p0);
    p1 = fmaf(w[5], b.y, p1);
    p0 = fmaf(w[2], a.z, p0);
    p1 = fmaf(w[6], b.z, p1);
    p0 = fmaf(w[3], a.w, p0);
    p1 = fmaf(w[7], b.w, p1);
    acc = fmaf(ds0, p0, acc);
    return fmaf(ds1, p1, acc);
}

/* Q4_K: unit k's first column, and the byte offsets in its row of its header and quants. */
static __device__ __forceinline__ int q4k_unit_col(int k)
{
    const int p = k & 7;
    return (k >> 3) * HY_QK_SUPER + 64 * (p >> 1) + 16 * (p & 1);
}
static __device__ __forceinline__ int q4k_unit_head(int k)
{
    return (k >> 3) * HY_QK_Q4K_BYTES;
}
static __device__ __forceinline__ int q4k_unit_quants(int k)
{
    return (k >> 3) * HY_QK_Q4K_BYTES + HY_QK_Q4K_HEAD + 16 * (k & 7);
}

/* ds = d*sc and dm = dmin*m of unit k's two sub-blocks (0: its low nibbles, 1: its high),
 * exact: 11-bit times 6-bit integers. */
struct q4k_sc {
    float ds0, dm0, ds1, dm1;
};

static __device__ __forceinline__ q4k_sc q4k_unit_scales(const uint4 &h, int k)
{
    const int i = (k & 7) >> 1;
    const float d = k_h2f(h.x), dmin = k_h2f(h.x >> 16);
    q4k_sc s;
    int sc, m;
    q4k_scale_min(h, 2 * i, &sc, &m);
    s.ds0 = d * (float)sc;
    s.dm0 = dmin * (float)m;
    q4k_scale_min(h, 2 * i + 1, &sc, &m);
    s.ds1 = d * (float)sc;
    s.dm1 = dmin * (float)m;
    return s;
}

/* Per 4-byte word and input row: acc += ds0 * Σ(q x)_low + ds1 * Σ(q x)_high; per unit,
 * Σx of each half (shared by the R rows and M matrices), then acc -= dm * Σx. */
template <int M, int R, int NT>
static __device__ __forceinline__ void qk_unit(float (&acc0)[R][NT], float (&acc1)[R][NT],
                                               const uint4 (&v0)[R], const uint4 (&v1)[R],
                                               const q4k_sc (&s0)[R], const q4k_sc (&s1)[R],
                                               const float *const (&x)[NT], int k)
{
    const int c0 = q4k_unit_col(k);
    float sx0[NT], sx1[NT];
#pragma unroll
    for (int t = 0; t < NT; t++)
        sx0[t] = sx1[t] = 0.0f;
#pragma unroll
    for (int wd = 0; wd < 4; wd++) {
        float wf[M][R][8];
#pragma unroll
        for (int m = 0; m < M; m++)
#pragma unroll
            for (int r = 0; r < R; r++) {
                const uint32_t u = k_word(m ? v1[r] : v0[r], wd);
                k_bytes4(u & 0x0F0F0F0Fu, KG_F23, wf[m][r]);
                k_bytes4((u >> 4) & 0x0F0F0F0Fu, KG_F23, wf[m][r] + 4);
            }
#pragma unroll
        for (int t = 0; t < NT; t++) {
            const float *xw = x[t] + c0 + 4 * wd;
            const float4 a = __ldg((const float4 *)xw), b = __ldg((const float4 *)(xw + 32));
            sx0[t] += (a.x + a.y) + (a.z + a.w);
            sx1[t] += (b.x + b.y) + (b.z + b.w);
#pragma unroll
            for (int r = 0; r < R; r++) {
                acc0[r][t] = k_dot2(wf[0][r], a, b, s0[r].ds0, s0[r].ds1, acc0[r][t]);
                if (M == 2)
                    acc1[r][t] = k_dot2(wf[M - 1][r], a, b, s1[r].ds0, s1[r].ds1, acc1[r][t]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < NT; t++) {
            acc0[r][t] = fmaf(-s0[r].dm0, sx0[t], acc0[r][t]);
            acc0[r][t] = fmaf(-s0[r].dm1, sx1[t], acc0[r][t]);
            if (M == 2) {
                acc1[r][t] = fmaf(-s1[r].dm0, sx0[t], acc1[r][t]);
                acc1[r][t] = fmaf(-s1[r].dm1, sx1[t], acc1[r][t]);
            }
        }
}

/* Q6_K: unit k's first column. */
static __device__ __forceinline__ int q6k_unit_col(int k)
{
    return (k >> 2) * HY_QK_SUPER + 128 * ((k >> 1) & 1) + 16 * (k & 1);
}

/* A Q6_K unit's quants: ql of groups 0 and 2 (a), of 1 and 3 (b), their qh (h). */
struct q6k_q {
    uint4 a, b, h;
};

/* Unit k's quants; q: the row's quant bytes (192 a super-block, 16-byte aligned). */
static __device__ __forceinline__ q6k_q q6k_unit_load(const unsigned char *q, int k)
{
    const int h = (k >> 1) & 1, l0 = 16 * (k & 1);
    q += (k >> 2) * HY_QK_Q6K_QBYTES;
    q6k_q v;
    v.a = ld_stream(q + 64 * h + l0);
    v.b = ld_stream(q + 64 * h + 32 + l0);
    v.h = ld_stream(q + 128 + 32 * h + l0);
    return v;
}

/* d*sc of unit k's four groups of 16 (exact: an 11-bit times an 8-bit integer). */
struct q6k_ds {
    float ds[4];
};

/* sc: the row's int8 scales (16 a super-block), d: its fp16 d. */
static __device__ __forceinline__ q6k_ds q6k_unit_scales(const unsigned char *sc,
                                                         const unsigned short *d, int k)
{
    const int sb = k >> 2, h = (k >> 1) & 1, o = k & 1;
    const uint2 s = __ldg((const uint2 *)(sc + sb * HY_QK_Q6K_NSC + 8 * h));
    const float df = k_h2f(__ldg(d + sb));
    q6k_ds r;
    r.ds[0] = df * q6k_sc(s.x, o);     /* sc[8h + o]     */
    r.ds[1] = df * q6k_sc(s.x, o + 2); /* sc[8h + o + 2] */
    r.ds[2] = df * q6k_sc(s.y, o);     /* sc[8h + o + 4] */
    r.ds[3] = df * q6k_sc(s.y, o + 2); /* sc[8h + o + 6] */
    return r;
}

/* Word wd of groups 2g and 2g + 1 as 8 floats q - 32 (exact). */
static __device__ __forceinline__ void q6k_words(const q6k_q &v, int wd, int g, float *wf)
{
    const uint32_t a = k_word(v.a, wd), b = k_word(v.b, wd), hq = k_word(v.h, wd);
    uint32_t q0, q1;
    if (g == 0) { /* ql low nibbles | qh bits 0-1 (k = 0), 2-3 (k = 1) */
        q0 = (a & 0x0F0F0F0Fu) | ((hq << 4) & 0x30303030u);
        q1 = (b & 0x0F0F0F0Fu) | ((hq << 2) & 0x30303030u);
    } else { /* high nibbles | bits 4-5 (k = 2), 6-7 (k = 3) */
        q0 = ((a >> 4) & 0x0F0F0F0Fu) | (hq & 0x30303030u);
        q1 = ((b >> 4) & 0x0F0F0F0Fu) | ((hq >> 2) & 0x30303030u);
    }
    k_bytes4(q0, KG_F23_Q6, wf);
    k_bytes4(q1, KG_F23_Q6, wf + 4);
}

/* Per word, pair of groups and input row: acc += (d*sc) * Σ(q x) of each group's 4. */
template <int M, int R, int NT>
static __device__ __forceinline__ void qk_unit(float (&acc0)[R][NT], float (&acc1)[R][NT],
                                               const q6k_q (&v0)[R], const q6k_q (&v1)[R],
                                               const q6k_ds (&s0)[R], const q6k_ds (&s1)[R],
                                               const float *const (&x)[NT], int k)
{
    const int c0 = q6k_unit_col(k);
#pragma unroll
    for (int wd = 0; wd < 4; wd++)
#pragma unroll
        for (int g = 0; g < 2; g++) {
            float wf[M][R][8];
#pragma unroll
            for (int m = 0; m < M; m++)
#pragma unroll
                for (int r = 0; r < R; r++)
                    q6k_words(m ? v1[r] : v0[r], wd, g, wf[m][r]);
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const float *xw = x[t] + c0 + 64 * g + 4 * wd;
                const float4 a = __ldg((const float4 *)xw), b = __ldg((const float4 *)(xw + 32));
#pragma unroll
                for (int r = 0; r < R; r++) {
                    acc0[r][t] = k_dot2(wf[0][r], a, b, s0[r].ds[2 * g], s0[r].ds[2 * g + 1],
                                        acc0[r][t]);
                    if (M == 2)
                        acc1[r][t] = k_dot2(wf[M - 1][r], a, b, s1[r].ds[2 * g],
                                            s1[r].ds[2 * g + 1], acc1[r][t]);
                }
            }
        }
}

#endif
