/* qmatmul_k.cu: GEMV, row dequantization and embedding lookup for GGUF's Q4_K and Q6_K
 * matrices in the device layouts of qlayout_k.h (qmatmul_k.h has the launchers, qmatmul.h
 * the contract). Values are llama.cpp's: Q4_K d*sc*q - dmin*m (6-bit packed sc, m per
 * sub-block of 32), Q6_K d*sc*(q-32) (int8 sc per sub-block of 16).
 *
 * GEMV (T <= 8), in the style of qmatmul.cu's qgemv_kernel: a thread block owns R rows
 * and its threads stride over each row's work units; each weight byte is loaded once with
 * a 16-byte L1-no-allocate load, x (float32) through the read-only path, one x load
 * serving the R rows. Quants become floats without an int->float conversion (PRMT puts a
 * byte into the mantissa of 2^23, one FADD takes 2^23 and the zero point off: exact).
 *  - Q4_K unit: 16 of a super-block's 128 quant bytes (piece p = 0..7; pair i = p/2 of
 *    sub-blocks 2i (low nibbles) and 2i+1 (high) share bytes 32i..32i+31), 32 weights:
 *    columns c0 + b (low) and c0 + 32 + b (high), c0 = 64i + 16(p&1), b < 16. The block's
 *    16-byte header comes through L1 (__ldg: the 8 threads of a block share it) and gives
 *    ds = d*sc and dm = dmin*m of the two sub-blocks (exact: 11-bit times 6-bit integers).
 *    Per 4-byte word and input row: acc += ds_lo * sum(q*x)_lo + ds_hi * sum(q*x)_hi; per
 *    unit, sum(x) of each half (shared by the R rows) and acc -= dm * sum(x): llama.cpp's
 *    value summed, without a multiply a weight for the min. R = 4 for T <= 4, else 8.
 *  - Q6_K unit: 64 weights of one half h of a super-block, l = l0 .. l0+15 (l0 = 0, 16):
 *    ql[64h + l0 ..] (16 bytes), ql[64h + 32 + l0 ..] (16) and qh[32h + l0 ..] (16); a warp's
 *    32 units cover 8 whole blocks, and each of the three loads uses whole 32-byte sectors.
 *    The four sub-blocks of 16 (columns 128h + l0 + 32k, k < 4) have scales
 *    sc[8h + l0/16 + 2k], taken from one 8-byte load. Per word, half-word of groups and
 *    input row: acc += (d*sc_k) * sum(q*x) (d*sc_k*q is exact in float32). R = 4 (three
 *    16-byte loads a row in flight).
 * A unit's loads and arithmetic are qk_unit.cuh's (moe_mmvq.cu's grouped GEMV of Q4_K and
 * Q6_K experts uses the same). Warp shuffles then shared memory sum a row's parts. 256, 128 or 64 threads a block, as
 * many as a row has units (a 4096-wide row: 128 Q4_K units, 64 Q6_K units); for T <= 2 the
 * launch bound asks for two blocks an SM (128 registers, no spills at sm_90).
 *
 * Row dequantization (the chunked T > 8 path of hy_cuda_matmul_q) and embedding: a thread
 * takes 8 consecutive elements of a row, which lie in one sub-block, and computes them as
 * the host dequantizer does (Q4_K: ds*q exact, then one rounding of - dm). */
#include "backend/cuda/qk_unit.cuh"
#include "backend/cuda/qmatmul_k.h"

#include <cuda_bf16.h>

#define KG_MAX_THREADS 256

/* Sums each row's parts (acc of every thread) and writes out[t, row0 + r]. */
template <int R, int NT>
static __device__ __forceinline__ void k_reduce_store(const float (&acc)[R][NT], float *out,
                                                      int row0, int rows)
{
    /* blockDim.x >= 64 >= R * NT */
    gemv_reduce_store<KG_MAX_THREADS / 32>(acc, out, row0, rows, blockDim.x >> 5, gemv_plain());
}

template <int NT, int R>
__global__ void __launch_bounds__(KG_MAX_THREADS, NT <= 2 ? 2 : 1)
    q4k_gemv_kernel(float *out, const float *x, const unsigned char *w, int rows, int cols)
{
    const int row0 = blockIdx.x * R, nsb = cols / HY_QK_SUPER, nunits = nsb * 8;
    const unsigned char *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        wr[r] = w + (int64_t)gemv_row(row0, r, rows) * nsb * HY_QK_Q4K_BYTES;
    const float *xt[NT]; /* the input rows */
#pragma unroll
    for (int t = 0; t < NT; t++)
        xt[t] = x + (int64_t)t * cols;
    float acc[R][NT];
    gemv_zero(acc);
    for (int k = threadIdx.x; k < nunits; k += blockDim.x) {
        uint4 v[R];
        q4k_sc sc[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            v[r] = ld_stream(wr[r] + q4k_unit_quants(k));
#pragma unroll
        for (int r = 0; r < R; r++)
            sc[r] = q4k_unit_scales(__ldg((const uint4 *)(wr[r] + q4k_unit_head(k))), k);
        qk_unit<1>(acc, acc, v, v, sc, sc, xt, k);
    }
    k_reduce_store<R, NT>(acc, out, row0, rows);
}

#define Q6K_R 4

template <int NT>
__global__ void __launch_bounds__(KG_MAX_THREADS, NT <= 2 ? 2 : 1)
    q6k_gemv_kernel(float *out, const float *x, const unsigned char *w, int rows, int cols)
{
    constexpr int R = Q6K_R;
    const int row0 = blockIdx.x * R, nsb = cols / HY_QK_SUPER, nunits = nsb * 4;
    const size_t nb = (size_t)rows * (size_t)nsb;
    const unsigned char *scales = w + hy_qk_q6k_scales_at(nb);
    const unsigned short *dd = (const unsigned short *)(w + hy_qk_q6k_d_at(nb));
    int64_t rb[R]; /* the row's first super-block */
#pragma unroll
    for (int r = 0; r < R; r++)
        rb[r] = (int64_t)gemv_row(row0, r, rows) * nsb;
    const float *xt[NT]; /* the input rows */
#pragma unroll
    for (int t = 0; t < NT; t++)
        xt[t] = x + (int64_t)t * cols;
    float acc[R][NT];
    gemv_zero(acc);
    for (int k = threadIdx.x; k < nunits; k += blockDim.x) {
        q6k_q v[R];
        q6k_ds sc[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            v[r] = q6k_unit_load(w + rb[r] * HY_QK_Q6K_QBYTES, k);
#pragma unroll
        for (int r = 0; r < R; r++)
            sc[r] = q6k_unit_scales(scales + rb[r] * HY_QK_Q6K_NSC, dd + rb[r], k);
        qk_unit<1>(acc, acc, v, v, sc, sc, xt, k);
    }
    k_reduce_store<R, NT>(acc, out, row0, rows);
}

static unsigned k_threads(int64_t units)
{
    return units >= 256 ? 256 : units >= 128 ? 128 : 64;
}

template <int NT>
static void qk_gemv(cudaStream_t st, float *out, const float *x, const unsigned char *w, int qt,
                    int64_t rows, int64_t cols)
{
    if (qt == HY_CUDA_Q4_K) {
        constexpr int R = NT <= 4 ? 4 : 8;
        const unsigned blocks = (unsigned)((rows + R - 1) / R);
        q4k_gemv_kernel<NT, R><<<blocks, k_threads(cols / 32), 0, st>>>(out, x, w, (int)rows,
                                                                         (int)cols);
    } else {
        const unsigned blocks = (unsigned)((rows + Q6K_R - 1) / Q6K_R);
        q6k_gemv_kernel<NT><<<blocks, k_threads(cols / 64), 0, st>>>(out, x, w, (int)rows,
                                                                      (int)cols);
    }
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_qk_gemv(cudaStream_t st, float *out, const float *x, const void *w,
                                int qt, int64_t rows, int64_t cols, int T)
{
    const unsigned char *wb = (const unsigned char *)w;
    switch (T) {
    case 1: qk_gemv<1>(st, out, x, wb, qt, rows, cols); break;
    case 2: qk_gemv<2>(st, out, x, wb, qt, rows, cols); break;
    case 3: qk_gemv<3>(st, out, x, wb, qt, rows, cols); break;
    case 4: qk_gemv<4>(st, out, x, wb, qt, rows, cols); break;
    case 5: qk_gemv<5>(st, out, x, wb, qt, rows, cols); break;
    case 6: qk_gemv<6>(st, out, x, wb, qt, rows, cols); break;
    case 7: qk_gemv<7>(st, out, x, wb, qt, rows, cols); break;
    default: qk_gemv<8>(st, out, x, wb, qt, rows, cols); break;
    }
}

/* Elements c .. c+7 (c % 8 == 0) of row `row` of a rows x cols matrix, float32 bit for bit
 * as hy_q4_k_dequantize_row / hy_q6_k_dequantize_row: Q4_K ds*q - dm (ds*q exact, one
 * rounding), Q6_K (d*sc)*(q-32) (exact). */
template <bool Q6>
static __device__ __forceinline__ void k_elems8(const unsigned char *w, int64_t rows,
                                                int64_t row, int c, int cols, float *y)
{
    const int64_t b = row * (cols / HY_QK_SUPER) + c / HY_QK_SUPER;
    const int e = c % HY_QK_SUPER;
    if (!Q6) {
        const unsigned char *blk = w + b * HY_QK_Q4K_BYTES;
        const uint4 h = __ldg((const uint4 *)blk);
        const int j = e / 32;
        int sc, m;
        q4k_scale_min(h, j, &sc, &m);
        const float ds = __fmul_rn(k_h2f(h.x), (float)sc), dm = __fmul_rn(k_h2f(h.x >> 16), (float)m);
        const uint2 q = __ldg((const uint2 *)(blk + HY_QK_Q4K_HEAD + 32 * (j >> 1) + e % 32));
        const int shift = 4 * (j & 1);
#pragma unroll
        for (int n = 0; n < 8; n++) {
            const uint32_t byte = ((n < 4 ? q.x : q.y) >> (8 * (n & 3))) & 0xffu;
            y[n] = __fsub_rn(__fmul_rn(ds, (float)((byte >> shift) & 15u)), dm);
        }
    } else {
        const size_t nb = (size_t)rows * (size_t)(cols / HY_QK_SUPER);
        const int h = e >> 7, k = (e & 127) >> 5, l = e & 31;
        const unsigned char *q = w + b * HY_QK_Q6K_QBYTES;
        const uint2 ql = __ldg((const uint2 *)(q + 64 * h + 32 * (k & 1) + l));
        const uint2 qh = __ldg((const uint2 *)(q + 128 + 32 * h + l));
        const int sc = (int)(signed char)w[hy_qk_q6k_scales_at(nb) + b * HY_QK_Q6K_NSC + 8 * h +
                                           l / 16 + 2 * k];
        const float d = k_h2f(*(const unsigned short *)(w + hy_qk_q6k_d_at(nb) + 2 * b));
        const float ds = __fmul_rn(d, (float)sc);
        const int lo_shift = 4 * (k >> 1), hi_shift = 2 * k;
#pragma unroll
        for (int n = 0; n < 8; n++) {
            const int s = 8 * (n & 3);
            const uint32_t lo = ((n < 4 ? ql.x : ql.y) >> s >> lo_shift) & 15u;
            const uint32_t hi = ((n < 4 ? qh.x : qh.y) >> s >> hi_shift) & 3u;
            y[n] = __fmul_rn(ds, (float)((int)(lo | hi << 4) - 32));
        }
    }
}

static __device__ __forceinline__ uint32_t k_bf16_pair(float a, float b)
{
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(a)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(b)) << 16;
}

template <bool Q6>
__global__ void qk_dequant_bf16_kernel(uint16_t *dst, const unsigned char *w, int64_t rows,
                                       int64_t r0, int64_t nr, int64_t n8, int cols)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n8)
        return;
    const int64_t e = i * 8, r = e / cols;
    float y[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    if (r < nr)
        k_elems8<Q6>(w, rows, r0 + r, (int)(e % cols), cols, y);
    *(uint4 *)(dst + e) = make_uint4(k_bf16_pair(y[0], y[1]), k_bf16_pair(y[2], y[3]),
                                     k_bf16_pair(y[4], y[5]), k_bf16_pair(y[6], y[7]));
}

template <bool Q6>
__global__ void qk_embed_kernel(float *out, const unsigned char *w, int64_t rows,
                                const int32_t *ids, int64_t n8, int cols)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n8)
        return;
    const int64_t e = i * 8;
    float y[8];
    k_elems8<Q6>(w, rows, ids[e / cols], (int)(e % cols), cols, y);
#pragma unroll
    for (int n = 0; n < 8; n++)
        out[e + n] = y[n];
}

extern "C" void hy_cuda_qk_dequant_bf16(cudaStream_t st, uint16_t *dst, const void *w, int qt,
                                        int64_t rows, int64_t cols, int64_t r0, int64_t nr,
                                        int64_t nr_pad)
{
    const int64_t n8 = nr_pad * cols / 8;
    const unsigned blocks = (unsigned)((n8 + 255) / 256);
    const unsigned char *wb = (const unsigned char *)w;
    if (qt == HY_CUDA_Q4_K)
        qk_dequant_bf16_kernel<false><<<blocks, 256, 0, st>>>(dst, wb, rows, r0, nr, n8, (int)cols);
    else
        qk_dequant_bf16_kernel<true><<<blocks, 256, 0, st>>>(dst, wb, rows, r0, nr, n8, (int)cols);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_qk_embed(cudaStream_t st, float *out, const void *table, int qt,
                                 int64_t rows, int64_t cols, const int32_t *ids, int T)
{
    const int64_t n8 = (int64_t)T * cols / 8;
    if (n8 <= 0)
        return;
    const unsigned blocks = (unsigned)((n8 + 255) / 256);
    const unsigned char *wb = (const unsigned char *)table;
    if (qt == HY_CUDA_Q4_K)
        qk_embed_kernel<false><<<blocks, 256, 0, st>>>(out, wb, rows, ids, n8, (int)cols);
    else
        qk_embed_kernel<true><<<blocks, 256, 0, st>>>(out, wb, rows, ids, n8, (int)cols);
    HY_CUDA_CHECK_LAUNCH();
}
