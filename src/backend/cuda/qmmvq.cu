/* qmmvq.cu: the int8-activation decode GEMV of qmmvq.h (which has the contract and the
 * bounds), for Q8_0, Q4_0 and Q4_G128 in qmatmul.h's split layout.
 *
 * Quantize: one thread a column, a warp a block of 32 columns: the warp's max |x| by
 * shuffles, each lane its q, lanes 0-15 and 16-31 sum their half's q.
 *
 * GEMV: as qmatmul.cu's register-dequantizing kernel, a thread block owns R consecutive
 * output rows and its threads take the rows' 16-byte pieces of quants in turn (piece k of
 * every row, then k + blockDim, ...), loaded once with L1 no-allocate; a piece's
 * activations (one 16-byte read-only load, two for the 4-bit types) serve the R rows. The
 * arithmetic of a piece is mmvq_dot.cuh's. The partial sums are reduced as in every GEMV
 * here (gemv_util.cuh, a fixed order). */
#include "backend/cuda/qmmvq.h"
#include "backend/cuda/gemv_util.cuh"
#include "backend/cuda/mmvq_dot.cuh"
#include "backend/cuda/qmatmul.h"

#include <cuda_fp16.h>

#define MV_MAX_THREADS 256

extern "C" size_t hy_cuda_mmvq_x_bytes(int T, int64_t cols)
{
    const size_t nq = ((size_t)T * (size_t)cols + 15) & ~(size_t)15;
    const size_t nd = ((size_t)T * (size_t)(cols / 32) * 4 + 15) & ~(size_t)15;
    return nq + nd + (size_t)T * (size_t)(cols / 16) * 4;
}

extern "C" bool hy_cuda_mmvq_fits(int qt, int64_t rows, int64_t cols, int T, const void *w)
{
    return (qt == HY_CUDA_Q8_0 || qt == HY_CUDA_Q4_0 || qt == HY_CUDA_Q4_G128) && rows >= 1 &&
           T >= 1 && T <= HY_CUDA_MMVQ_MAX_T && cols % hy_cuda_q_block(qt) == 0 &&
           cols % 32 == 0 && cols <= HY_CUDA_MMVQ_MAX_COLS && !((uintptr_t)w & 15);
}

/* blockDim.x 256 (whole warps), one thread a column of T x cols. */
__global__ void mv_quantize_kernel(int8_t *q, float *d, float *s, const float *x, int64_t n)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; /* warps never straddle n */
    if (i >= n)
        return;
    const float v = x[i];
    float m = fabsf(v);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float dq = m / 127.0f, id = m > 0.0f ? 127.0f / m : 0.0f;
    const int iq = __float2int_rn(v * id);
    q[i] = (int8_t)iq;
    int sum = iq;
#pragma unroll
    for (int o = 8; o > 0; o >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const int lane = threadIdx.x & 31;
    if (lane == 0)
        d[i >> 5] = dq;
    if ((lane & 15) == 0)
        s[i >> 4] = dq * (float)sum;
}

extern "C" void hy_cuda_mmvq_quantize(cudaStream_t st, void *xq, const float *x, int T,
                                      int64_t cols)
{
    const mv_x p = mv_parts(xq, T, (int)cols);
    const int64_t n = (int64_t)T * cols; /* a multiple of 32 */
    mv_quantize_kernel<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(
        (int8_t *)p.q, (float *)p.d, (float *)p.s, x, n);
    HY_CUDA_CHECK_LAUNCH();
}

template <int QT, int NT, int R>
__global__ void __launch_bounds__(MV_MAX_THREADS)
    mv_gemv_kernel(float *out, const int8_t *xq, const float *xd, const float *xs,
                   const unsigned char *wq, const uint16_t *ws, int rows, int cols)
{
    typedef mv_traits<QT> Q;
    const int row0 = blockIdx.x * R;
    const int nblk = cols / Q::B, n16 = nblk * Q::QB / 16;
    const int nd = cols / 32, ns = cols / 16;
    const uint4 *wr[R];
    const uint16_t *sr[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int rr = gemv_row(row0, r, rows);
        wr[r] = (const uint4 *)(wq + (int64_t)rr * nblk * Q::QB);
        sr[r] = ws + (int64_t)rr * nblk;
    }
    float acc[R][NT];
    gemv_zero(acc);
    for (int k = threadIdx.x; k < n16; k += blockDim.x) {
        mv_w w[R];
        float d[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            w[r] = mv_split<QT>(ld_stream(wr[r] + k));
#pragma unroll
        for (int r = 0; r < R; r++)
            d[r] = mv_h2f(__ldg(sr[r] + mv_block<QT>(k)));
#pragma unroll
        for (int t = 0; t < NT; t++) {
            const mv_xp x = mv_load_x<QT>(xq + (int64_t)t * cols, xd + (int64_t)t * nd,
                                          xs + (int64_t)t * ns, k);
#pragma unroll
            for (int r = 0; r < R; r++)
                acc[r][t] = mv_fma<QT>(acc[r][t], d[r], w[r], x);
        }
    }
    /* blockDim.x >= 64 >= R * NT */
    gemv_reduce_store<MV_MAX_THREADS / 32>(acc, out, row0, rows, blockDim.x >> 5, gemv_plain());
}

template <int QT, int NT, int R>
static void mv_launch(cudaStream_t st, float *out, const void *xq, const void *w, int64_t rows,
                      int64_t cols)
{
    typedef mv_traits<QT> Q;
    const int64_t n16 = cols / Q::B * Q::QB / 16;
    const unsigned threads = n16 >= 256 ? 256 : n16 >= 128 ? 128 : 64;
    const unsigned blocks = (unsigned)((rows + R - 1) / R);
    const unsigned char *wq = (const unsigned char *)w;
    const size_t nb = (size_t)(rows * (cols / Q::B));
    const uint16_t *ws = (const uint16_t *)(wq + ((nb * Q::QB + 15) & ~(size_t)15));
    const mv_x x = mv_parts(xq, NT, (int)cols);
    mv_gemv_kernel<QT, NT, R><<<blocks, threads, 0, st>>>(out, x.q, x.d, x.s, wq, ws, (int)rows,
                                                          (int)cols);
    HY_CUDA_CHECK_LAUNCH();
}

/* The default R of a type and T: the fastest over the 7B shapes in bench/mmvq_bench.cu
 * (bench/RESULTS.md has the table; T = 5..7 were not measured and take 4). */
static int mv_default_r(int qt, int T)
{
    static const signed char r[3][8] = {
        /* Q8_0 */ {4, 8, 8, 4, 4, 4, 4, 4},
        /* Q4_0 */ {8, 8, 4, 4, 4, 4, 4, 8},
        /* Q4_G128 */ {2, 4, 4, 4, 4, 4, 4, 8},
    };
    return r[qt == HY_CUDA_Q8_0 ? 0 : qt == HY_CUDA_Q4_0 ? 1 : 2][T - 1];
}

template <int QT, int NT>
static void mv_r(cudaStream_t st, float *out, const void *xq, const void *w, int64_t rows,
                 int64_t cols, int R)
{
    if (R == 0)
        R = mv_default_r(QT, NT);
    if (R == 2)
        mv_launch<QT, NT, 2>(st, out, xq, w, rows, cols);
    else if (R == 8)
        mv_launch<QT, NT, 8>(st, out, xq, w, rows, cols);
    else
        mv_launch<QT, NT, 4>(st, out, xq, w, rows, cols);
}

template <int QT>
static void mv_t(cudaStream_t st, float *out, const void *xq, const void *w, int64_t rows,
                 int64_t cols, int T, int R)
{
    switch (T) {
    case 1: mv_r<QT, 1>(st, out, xq, w, rows, cols, R); break;
    case 2: mv_r<QT, 2>(st, out, xq, w, rows, cols, R); break;
    case 3: mv_r<QT, 3>(st, out, xq, w, rows, cols, R); break;
    case 4: mv_r<QT, 4>(st, out, xq, w, rows, cols, R); break;
    case 5: mv_r<QT, 5>(st, out, xq, w, rows, cols, R); break;
    case 6: mv_r<QT, 6>(st, out, xq, w, rows, cols, R); break;
    case 7: mv_r<QT, 7>(st, out, xq, w, rows, cols, R); break;
    default: mv_r<QT, 8>(st, out, xq, w, rows, cols, R); break;
    }
}

extern "C" void hy_cuda_mmvq(cudaStream_t st, float *out, const void *xq, const void *w, int qt,
                             int64_t rows, int64_t cols, int T, int R)
{
    if (!hy_cuda_mmvq_fits(qt, rows, cols, T, w) || ((uintptr_t)xq & 15))
        hy_cuda_fail(__FILE__, __LINE__, "hy_cuda_mmvq_fits", "bad mmvq shape");
    if (qt == HY_CUDA_Q8_0)
        mv_t<HY_CUDA_Q8_0>(st, out, xq, w, rows, cols, T, R);
    else if (qt == HY_CUDA_Q4_0)
        mv_t<HY_CUDA_Q4_0>(st, out, xq, w, rows, cols, T, R);
    else
        mv_t<HY_CUDA_Q4_G128>(st, out, xq, w, rows, cols, T, R);
}
