/* gemv_util.cuh: device pieces shared by the weight-streaming GEMV kernels (matmul.cu,
 * qmatmul.cu, qmatmul_k.cu, fp8mm.cu) and qmma.cu's weight loads. CUDA C++ only; internal
 * to backend/cuda. A GEMV block owns R consecutive output rows against NT input rows; each
 * of its threads keeps acc[R][NT] partial sums over the columns it took.
 * gemv_reduce_store sums them in one fixed order: xor shuffles 16, 8, 4, 2, 1 in each warp,
 * then the warps' sums 0, 1, ... added to 0.0f in that order. An (r, t) sum is thus the
 * same bits whatever R and NT are, given the same columns a thread (the batch-invariant
 * mode and the bit-reproducibility tests rely on it). */
#ifndef HY_BACKEND_CUDA_GEMV_UTIL_CUH
#define HY_BACKEND_CUDA_GEMV_UTIL_CUH

#include <stdint.h>

/* 16 bytes from global memory (16-byte aligned), read-only, not kept in L1: weights are
 * read once and would push x out of L1. */
static __device__ __forceinline__ uint4 ld_stream(const void *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

template <int R, int NT> static __device__ __forceinline__ void gemv_zero(float (&acc)[R][NT])
{
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < NT; t++)
            acc[r][t] = 0.0f;
}

/* The row a block's r-th row reads: past the end, the last row again (read, not stored). */
static __device__ __forceinline__ int gemv_row(int row0, int r, int rows)
{
    return row0 + r < rows ? row0 + r : rows - 1;
}

/* out[t, row] = s, the row's sum unchanged (epi of gemv_reduce_store). */
struct gemv_plain {
    __device__ __forceinline__ float operator()(float s, int) const { return s; }
};

/* Sums acc over the block (nwarps = blockDim.x / 32 <= MAXW warps, R * NT <= blockDim.x)
 * and writes out[t * rows + row0 + r] = epi(sum, row0 + r) for the rows below `rows`.
 * Every thread of the block must call it (it has a __syncthreads). */
template <int MAXW, int R, int NT, class Epi>
static __device__ __forceinline__ void gemv_reduce_store(const float (&acc)[R][NT], float *out,
                                                         int row0, int rows, int nwarps, Epi epi)
{
    __shared__ float red[MAXW][R * NT];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < NT; t++) {
            float a = acc[r][t];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                a += __shfl_xor_sync(0xffffffffu, a, o);
            if (lane == 0)
                red[warp][r * NT + t] = a;
        }
    __syncthreads();
    if (threadIdx.x < R * NT) {
        const int r = threadIdx.x / NT, t = threadIdx.x % NT;
        float s = 0.0f;
        for (int i = 0; i < nwarps; i++)
            s += red[i][threadIdx.x];
        if (row0 + r < rows)
            out[(int64_t)t * rows + row0 + r] = epi(s, row0 + r);
    }
}

#endif
