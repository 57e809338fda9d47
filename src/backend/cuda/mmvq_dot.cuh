/* mmvq_dot.cuh: the arithmetic of the int8-activation GEMVs (qmmvq.cu's dense one and
 * moe_mmvq.cu's grouped one), written once so both give the same bits for the same piece.
 * CUDA C++ only; internal to backend/cuda. qmmvq.h has the activation layout and the
 * precision bound.
 *
 * A weight row is read as 16-byte pieces of its quant bytes (qmatmul.h's split layout);
 * piece k lies in one weight block and pairs with 16 (Q8_0) or 2 x 16 (4-bit) int8
 * activations of one input row. Q8_0: the 4 words of the piece dp4a'd with the 4 words of
 * x. 4-bit: a word's low nibbles (u & 0x0F0F0F0F) and high nibbles ((u >> 4) & 0x0F0F0F0F)
 * are unsigned 0..15, dp4a'd with the x of the low and of the high elements; the zero
 * point 8 is taken off with the half-blocks' d·Σq (the s part of the activations). Q4_0
 * piece k is block k, elements j and j + 16 of byte j, one x block (32 columns); Q4_G128
 * piece k is quarter k & 3 of block k >> 2, elements 16(k&3) + i and 64 + 16(k&3) + i, two
 * x blocks. */
#ifndef HY_BACKEND_CUDA_MMVQ_DOT_CUH
#define HY_BACKEND_CUDA_MMVQ_DOT_CUH

#include "backend/cuda/qmatmul.h"

#include <cuda_fp16.h>
#include <stdint.h>

/* QT's elements a block (B) and quant bytes a block (QB). */
template <int QT> struct mv_traits;
template <> struct mv_traits<HY_CUDA_Q8_0> {
    static constexpr int B = 32, QB = 32;
};
template <> struct mv_traits<HY_CUDA_Q4_0> {
    static constexpr int B = 32, QB = 16;
};
template <> struct mv_traits<HY_CUDA_Q4_G128> {
    static constexpr int B = 128, QB = 64;
};

static __device__ __forceinline__ float mv_h2f(uint16_t h)
{
    return __half2float(__ushort_as_half(h));
}

static __device__ __forceinline__ int mv_dot4(const uint4 w, const int4 x, int acc)
{
    acc = __dp4a((int)w.x, x.x, acc);
    acc = __dp4a((int)w.y, x.y, acc);
    acc = __dp4a((int)w.z, x.z, acc);
    return __dp4a((int)w.w, x.w, acc);
}

/* The three parts of xq (qmmvq.h): quants, block scales, half-block sums. */
struct mv_x {
    const int8_t *q;
    const float *d, *s;
};

static __host__ __device__ mv_x mv_parts(const void *xq, int T, int cols)
{
    const size_t nq = ((size_t)T * (size_t)cols + 15) & ~(size_t)15;
    const size_t nd = ((size_t)T * (size_t)(cols / 32) * 4 + 15) & ~(size_t)15;
    const char *p = (const char *)xq;
    mv_x x = {(const int8_t *)p, (const float *)(p + nq), (const float *)(p + nq + nd)};
    return x;
}

/* The weight block of piece k. */
template <int QT> static __device__ __forceinline__ int mv_block(int k)
{
    return QT == HY_CUDA_Q8_0 ? k >> 1 : QT == HY_CUDA_Q4_0 ? k : k >> 2;
}

/* A piece's weights as dp4a operands: Q8_0 as loaded (lo); 4-bit its low and high nibbles. */
struct mv_w {
    uint4 lo, hi;
};

template <int QT> static __device__ __forceinline__ mv_w mv_split(const uint4 v)
{
    mv_w w;
    if (QT == HY_CUDA_Q8_0) {
        w.lo = v;
        w.hi = v;
    } else {
        w.lo = make_uint4(v.x & 0x0F0F0F0Fu, v.y & 0x0F0F0F0Fu, v.z & 0x0F0F0F0Fu,
                          v.w & 0x0F0F0F0Fu);
        w.hi = make_uint4((v.x >> 4) & 0x0F0F0F0Fu, (v.y >> 4) & 0x0F0F0F0Fu,
                          (v.z >> 4) & 0x0F0F0F0Fu, (v.w >> 4) & 0x0F0F0F0Fu);
    }
    return w;
}

/* The activations piece k of one input row pairs with: int8 values of the low (al) and
 * high (ah) elements, their blocks' scales, and the zero point's 8·(d·Σq) (4-bit). */
struct mv_xp {
    int4 al, ah;
    float dl, dh, z;
};

/* xq, xd, xs: the row's quants [cols], scales [cols/32], half-block sums [cols/16]. */
template <int QT>
static __device__ __forceinline__ mv_xp mv_load_x(const int8_t *xq, const float *xd,
                                                  const float *xs, int k)
{
    mv_xp x;
    if (QT == HY_CUDA_Q8_0) {
        x.al = __ldg((const int4 *)(xq + 16 * k));
        x.ah = x.al;
        x.dl = __ldg(xd + (k >> 1));
        x.dh = x.dl;
        x.z = 0.0f;
        return x;
    }
    /* columns of the low elements (lo) and of the high ones (lo + hi) */
    const int lo = QT == HY_CUDA_Q4_0 ? 32 * k : 128 * (k >> 2) + 16 * (k & 3);
    const int hi = QT == HY_CUDA_Q4_0 ? 16 : 64;
    x.al = __ldg((const int4 *)(xq + lo));
    x.ah = __ldg((const int4 *)(xq + lo + hi));
    x.dl = __ldg(xd + (lo >> 5));
    x.dh = __ldg(xd + ((lo + hi) >> 5));
    x.z = 8.0f * (__ldg(xs + (lo >> 4)) + __ldg(xs + ((lo + hi) >> 4)));
    return x;
}

/* acc + dw · (the piece's weights · its activations), dw the weight block's scale. */
template <int QT>
static __device__ __forceinline__ float mv_fma(float acc, float dw, const mv_w &w,
                                               const mv_xp &x)
{
    if (QT == HY_CUDA_Q8_0)
        return fmaf(dw * x.dl, (float)mv_dot4(w.lo, x.al, 0), acc);
    float p;
    if (QT == HY_CUDA_Q4_0) /* one x block: dl == dh */
        p = x.dl * (float)mv_dot4(w.hi, x.ah, mv_dot4(w.lo, x.al, 0));
    else
        p = fmaf(x.dh, (float)mv_dot4(w.hi, x.ah, 0), x.dl * (float)mv_dot4(w.lo, x.al, 0));
    return fmaf(dw, p - x.z, acc);
}

#endif
