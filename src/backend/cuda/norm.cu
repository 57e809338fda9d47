/* norm.cu: RMSNorm. The sum of squares is float32 (the reference sums in double): each
 * thread sums its own elements in order, then a shuffle tree over the warp and a sum over
 * the warps, so the relative error of the mean is about (d/threads + 10) float32 ulps.
 * Three kernels by shape, all loading each x element once into registers before any
 * write (out may be x):
 * - short rows (d <= 512, d % 4 == 0, 16-byte aligned): a warp per row, float4 loads;
 * - long rows (d <= NORM_THREADS * 4 * NORM_VEC, same alignment): a block per row, every
 *   thread's float4s loaded at once (a decode step's 1 x 4096 norm is latency-bound: a
 *   strided loop would wait for each load in turn);
 * - anything else: a block per row with a strided loop (reads x twice).
 * The first two can also write out rounded to bf16 (nearest even, as hy_cuda_f32_to_bf16)
 * into obf, or quantized to int8 as hy_cuda_mmvq_quantize does (qmmvq.h's layout, the same
 * bits: the 8 lanes that hold a 32-column block find its max by shuffles) into xq: the
 * matmul that takes out next then finds its operand ready and skips the conversion kernel
 * (cuda.c). */
#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/mmvq_dot.cuh"

#include <cuda_bf16.h>

#define NORM_THREADS 256
#define NORM_VEC 8 /* float4s per thread of the long-row kernel: d <= 8192 */
#define WARP_VEC 4 /* float4s per lane of the short-row kernel: d <= 512 */

/* w * (v * inv), element by element, in the reference's order */
__device__ __forceinline__ float4 scaled(float4 v, float4 g, float inv)
{
    return make_float4(g.x * (v.x * inv), g.y * (v.y * inv), g.z * (v.z * inv), g.w * (v.w * inv));
}

/* o stored at float4 i of out, and when obf, its bf16 rounding at elements 4i..4i+3 of obf
 * (8-byte aligned) */
__device__ __forceinline__ void put(float4 *out, __nv_bfloat16 *obf, int64_t i, float4 o)
{
    out[i] = o;
    if (obf) {
        __nv_bfloat162 *p = (__nv_bfloat162 *)(obf + 4 * i);
        p[0] = __floats2bfloat162_rn(o.x, o.y);
        p[1] = __floats2bfloat162_rn(o.z, o.w);
    }
}

/* float4 i of a row's output, o, into the int8 activations q of that row (valid: i is in
 * the row). Every lane of the warp calls it: lanes 8j .. 8j + 7 hold the float4s of one
 * 32-column block (i % 8 == lane % 8 in both kernels below). */
__device__ __forceinline__ void put_q(const mv_x &q, int64_t row, int n4, int i, float4 o,
                                      bool valid)
{
    float m = fmaxf(fmaxf(fabsf(o.x), fabsf(o.y)), fmaxf(fabsf(o.z), fabsf(o.w)));
#pragma unroll
    for (int k = 1; k < 8; k <<= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, k));
    const float dq = m / 127.0f, id = m > 0.0f ? 127.0f / m : 0.0f;
    const int a = __float2int_rn(o.x * id), b = __float2int_rn(o.y * id);
    const int c = __float2int_rn(o.z * id), e = __float2int_rn(o.w * id);
    int sum = a + b + c + e;
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (!valid)
        return;
    const int64_t at = row * 4 * (int64_t)n4 + 4 * (int64_t)i; /* the row's first column: 4 n4 */
    *(uint32_t *)(q.q + at) = (uint32_t)(a & 255) | (uint32_t)(b & 255) << 8 |
                              (uint32_t)(c & 255) << 16 | (uint32_t)(e & 255) << 24;
    if ((i & 7) == 0)
        ((float *)q.d)[at >> 5] = dq;
    if ((i & 3) == 0)
        ((float *)q.s)[at >> 4] = dq * (float)sum;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* With ADD, x += y first (x written back); out may equal y. */
template <bool ADD>
__global__ void rmsnorm_warp_kernel(float4 *out, __nv_bfloat16 *obf, mv_x xq, float4 *x,
                                    const float4 *y, const float4 *w, int64_t rows, int n4,
                                    float eps)
{
    const int64_t row = (int64_t)blockIdx.x * (NORM_THREADS / 32) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (row >= rows)
        return;
    float4 v[WARP_VEC];
    float ss = 0.0f;
#pragma unroll
    for (int c = 0; c < WARP_VEC; c++) {
        int i = c * 32 + lane;
        v[c] = i < n4 ? x[row * n4 + i] : make_float4(0, 0, 0, 0);
        if (ADD && i < n4) {
            float4 b = y[row * n4 + i];
            v[c].x += b.x, v[c].y += b.y, v[c].z += b.z, v[c].w += b.w;
            x[row * n4 + i] = v[c];
        }
        ss += v[c].x * v[c].x + v[c].y * v[c].y + v[c].z * v[c].z + v[c].w * v[c].w;
    }
    ss = warp_sum(ss);
    const float inv = 1.0f / sqrtf(ss / (float)(4 * n4) + eps);
#pragma unroll
    for (int c = 0; c < WARP_VEC; c++) {
        int i = c * 32 + lane;
        const float4 o = i < n4 ? scaled(v[c], w[i], inv) : make_float4(0, 0, 0, 0);
        if (i < n4)
            put(out, obf, row * n4 + i, o);
        if (xq.q && c * 32 < n4) /* the whole warp, or none of it */
            put_q(xq, row, n4, i, o, i < n4);
    }
}

template <bool ADD>
__global__ void __launch_bounds__(NORM_THREADS)
    rmsnorm_vec_kernel(float4 *out, __nv_bfloat16 *obf, mv_x xq, float4 *x, const float4 *y,
                       const float4 *w, int n4, float eps)
{
    __shared__ float part[NORM_THREADS / 32];
    float4 *xr = x + (int64_t)blockIdx.x * n4;
    const float4 *br = ADD ? y + (int64_t)blockIdx.x * n4 : NULL;
    float4 *yr = out + (int64_t)blockIdx.x * n4;
    __nv_bfloat16 *br16 = obf ? obf + (int64_t)blockIdx.x * 4 * n4 : NULL;
    float4 v[NORM_VEC];
    float ss = 0.0f;
#pragma unroll
    for (int c = 0; c < NORM_VEC; c++) {
        int i = c * NORM_THREADS + threadIdx.x;
        v[c] = i < n4 ? xr[i] : make_float4(0, 0, 0, 0);
        if (ADD && i < n4) {
            float4 b = br[i];
            v[c].x += b.x, v[c].y += b.y, v[c].z += b.z, v[c].w += b.w;
            xr[i] = v[c];
        }
        ss += v[c].x * v[c].x + v[c].y * v[c].y + v[c].z * v[c].z + v[c].w * v[c].w;
    }
    ss = warp_sum(ss);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = ss;
    __syncthreads();
    ss = 0.0f;
#pragma unroll
    for (int i = 0; i < NORM_THREADS / 32; i++)
        ss += part[i];
    const float inv = 1.0f / sqrtf(ss / (float)(4 * n4) + eps);
#pragma unroll
    for (int c = 0; c < NORM_VEC; c++) {
        int i = c * NORM_THREADS + threadIdx.x;
        const float4 o = i < n4 ? scaled(v[c], w[i], inv) : make_float4(0, 0, 0, 0);
        if (i < n4)
            put(yr, br16, i, o);
        if (xq.q && c * NORM_THREADS < n4) /* every thread of the block, or none */
            put_q(xq, blockIdx.x, n4, i, o, i < n4);
    }
}

__global__ void rmsnorm_kernel(float *out, const float *x, const float *w, int64_t d, float eps)
{
    __shared__ float part[NORM_THREADS / 32];
    const float *xr = x + (int64_t)blockIdx.x * d;
    float *yr = out + (int64_t)blockIdx.x * d;
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += NORM_THREADS)
        ss += xr[i] * xr[i];
    ss = warp_sum(ss);
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

/* Launches the kernel for the shape; y != NULL: x += y first; o.bf, o.xq: out's bf16
 * rounding, its int8 quantization there too (xq: d % 32 == 0 only). Returns false when only
 * the strided kernel fits (which takes no y and writes neither). */
static bool launch_vec(cudaStream_t st, float *out, struct hy_cuda_norm_out o, float *x,
                       const float *y, const float *w, int64_t rows, int64_t d, float eps)
{
    const bool vec = d % 4 == 0 &&
                     !(((uintptr_t)out | (uintptr_t)x | (uintptr_t)y | (uintptr_t)w) & 15);
    float4 *o4 = (float4 *)out, *x4 = (float4 *)x;
    const float4 *y4 = (const float4 *)y, *w4 = (const float4 *)w;
    __nv_bfloat16 *b = (__nv_bfloat16 *)o.bf;
    mv_x q = {NULL, NULL, NULL};
    if (o.xq)
        q = mv_parts(o.xq, (int)rows, (int)d);
    if (vec && d <= 4 * 32 * WARP_VEC) {
        const unsigned per = NORM_THREADS / 32, blocks = (unsigned)((rows + per - 1) / per);
        if (y)
            rmsnorm_warp_kernel<true><<<blocks, NORM_THREADS, 0, st>>>(o4, b, q, x4, y4, w4, rows,
                                                                        (int)(d / 4), eps);
        else
            rmsnorm_warp_kernel<false><<<blocks, NORM_THREADS, 0, st>>>(o4, b, q, x4, y4, w4, rows,
                                                                         (int)(d / 4), eps);
    } else if (vec && d <= 4 * NORM_THREADS * NORM_VEC) {
        if (y)
            rmsnorm_vec_kernel<true><<<(unsigned)rows, NORM_THREADS, 0, st>>>(o4, b, q, x4, y4, w4,
                                                                               (int)(d / 4), eps);
        else
            rmsnorm_vec_kernel<false><<<(unsigned)rows, NORM_THREADS, 0, st>>>(o4, b, q, x4, y4, w4,
                                                                                (int)(d / 4), eps);
    } else {
        return false;
    }
    HY_CUDA_CHECK_LAUNCH();
    return true;
}

/* What launch_vec wrote beside out (HY_CUDA_NORM_*). */
static int wrote(struct hy_cuda_norm_out o)
{
    return (o.bf ? HY_CUDA_NORM_BF : 0) | (o.xq ? HY_CUDA_NORM_XQ : 0);
}

/* o with what a kernel cannot take dropped (the kernel's choice never depends on o). */
static struct hy_cuda_norm_out usable(struct hy_cuda_norm_out o, int64_t d)
{
    if ((uintptr_t)o.bf & 7)
        o.bf = NULL;
    if (((uintptr_t)o.xq & 15) || d % 32)
        o.xq = NULL;
    return o;
}

extern "C" int hy_cuda_rmsnorm(cudaStream_t st, float *out, struct hy_cuda_norm_out o,
                               const float *x, const float *w, int64_t rows, int64_t d,
                               float eps)
{
    if (rows <= 0)
        return 0;
    o = usable(o, d);
    if (launch_vec(st, out, o, (float *)x, NULL, w, rows, d, eps))
        return wrote(o); /* (x is only read without y) */
    rmsnorm_kernel<<<(unsigned)rows, NORM_THREADS, 0, st>>>(out, x, w, d, eps);
    HY_CUDA_CHECK_LAUNCH();
    return 0;
}

extern "C" int hy_cuda_add_rmsnorm(cudaStream_t st, float *out, struct hy_cuda_norm_out o,
                                   float *x, const float *y, const float *w, int64_t rows,
                                   int64_t d, float eps)
{
    if (rows <= 0)
        return 0;
    o = usable(o, d);
    if (launch_vec(st, out, o, x, y, w, rows, d, eps))
        return wrote(o);
    hy_cuda_add(st, x, y, rows * d);
    rmsnorm_kernel<<<(unsigned)rows, NORM_THREADS, 0, st>>>(out, x, w, d, eps);
    HY_CUDA_CHECK_LAUNCH();
    return 0;
}
