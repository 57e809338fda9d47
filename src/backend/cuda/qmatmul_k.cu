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
 * Warp shuffles then shared memory sum a row's parts. 256, 128 or 64 threads a block, as
 * many as a row has units (a 4096-wide row: 128 Q4_K units, 64 Q6_K units); for T <= 2 the
 * launch bound asks for two blocks an SM (128 registers, no spills at sm_90).
 *
 * Row dequantization (the chunked T > 8 path of hy_cuda_matmul_q) and embedding: a thread
 * takes 8 consecutive elements of a row, which lie in one sub-block, and computes them as
 * the host dequantizer does (Q4_K: ds*q exact, then one rounding of - dm). */
#include "backend/cuda/gemv_util.cuh"
#include "backend/cuda/qlayout_k.h"
#include "backend/cuda/qmatmul_k.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define KG_MAX_THREADS 256
#define KG_F23 8388608.0f      /* 2^23: a Q4_K nibble q */
#define KG_F23_Q6 8388640.0f   /* 2^23 + 32: a Q6_K 6-bit q, minus 32 */

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
    float acc[R][NT];
    gemv_zero(acc);
    for (int k = threadIdx.x; k < nunits; k += blockDim.x) {
        const int sb = k >> 3, p = k & 7, i = p >> 1;
        uint4 v[R];
        float ds0[R], dm0[R], ds1[R], dm1[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            v[r] = ld_stream(wr[r] + sb * HY_QK_Q4K_BYTES + HY_QK_Q4K_HEAD + 16 * p);
#pragma unroll
        for (int r = 0; r < R; r++) {
            const uint4 h = __ldg((const uint4 *)(wr[r] + sb * HY_QK_Q4K_BYTES));
            const float d = k_h2f(h.x), dmin = k_h2f(h.x >> 16);
            int sc, m;
            q4k_scale_min(h, 2 * i, &sc, &m);
            ds0[r] = d * (float)sc;
            dm0[r] = dmin * (float)m;
            q4k_scale_min(h, 2 * i + 1, &sc, &m);
            ds1[r] = d * (float)sc;
            dm1[r] = dmin * (float)m;
        }
        const int c0 = sb * HY_QK_SUPER + 64 * i + 16 * (p & 1);
        float sx0[NT], sx1[NT];
#pragma unroll
        for (int t = 0; t < NT; t++)
            sx0[t] = sx1[t] = 0.0f;
#pragma unroll
        for (int wd = 0; wd < 4; wd++) {
            float wf[R][8];
#pragma unroll
            for (int r = 0; r < R; r++) {
                const uint32_t u = k_word(v[r], wd);
                k_bytes4(u & 0x0F0F0F0Fu, KG_F23, wf[r]);
                k_bytes4((u >> 4) & 0x0F0F0F0Fu, KG_F23, wf[r] + 4);
            }
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const float *xt = x + (int64_t)t * cols + c0 + 4 * wd;
                const float4 a = __ldg((const float4 *)xt), b = __ldg((const float4 *)(xt + 32));
                sx0[t] += (a.x + a.y) + (a.z + a.w);
                sx1[t] += (b.x + b.y) + (b.z + b.w);
#pragma unroll
                for (int r = 0; r < R; r++)
                    acc[r][t] = k_dot2(wf[r], a, b, ds0[r], ds1[r], acc[r][t]);
            }
        }
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int t = 0; t < NT; t++) {
                acc[r][t] = fmaf(-dm0[r], sx0[t], acc[r][t]);
                acc[r][t] = fmaf(-dm1[r], sx1[t], acc[r][t]);
            }
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
    float acc[R][NT];
    gemv_zero(acc);
    for (int k = threadIdx.x; k < nunits; k += blockDim.x) {
        const int sb = k >> 2, h = (k >> 1) & 1, o = k & 1, l0 = 16 * o;
        uint4 va[R], vb[R], vh[R];
        float ds[R][4];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const unsigned char *q = w + (rb[r] + sb) * HY_QK_Q6K_QBYTES;
            va[r] = ld_stream(q + 64 * h + l0);
            vb[r] = ld_stream(q + 64 * h + 32 + l0);
            vh[r] = ld_stream(q + 128 + 32 * h + l0);
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
            const uint2 s =
                __ldg((const uint2 *)(scales + (rb[r] + sb) * HY_QK_Q6K_NSC + 8 * h));
            const float d = k_h2f(__ldg(dd + rb[r] + sb));
            ds[r][0] = d * q6k_sc(s.x, o);     /* sc[8h + o]     */
            ds[r][1] = d * q6k_sc(s.x, o + 2); /* sc[8h + o + 2] */
            ds[r][2] = d * q6k_sc(s.y, o);     /* sc[8h + o + 4] */
            ds[r][3] = d * q6k_sc(s.y, o + 2); /* sc[8h + o + 6] */
        }
        const int cb = sb * HY_QK_SUPER + 128 * h + l0;
#pragma unroll
        for (int wd = 0; wd < 4; wd++)
#pragma unroll
            for (int g = 0; g < 2; g++) { /* groups 2g and 2g + 1 */
                float wf[R][8];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const uint32_t a = k_word(va[r], wd), b = k_word(vb[r], wd),
                                   hq = k_word(vh[r], wd);
                    uint32_t q0, q1;
                    if (g == 0) { /* ql low nibbles | qh bits 0-1 (k = 0), 2-3 (k = 1) */
                        q0 = (a & 0x0F0F0F0Fu) | ((hq << 4) & 0x30303030u);
                        q1 = (b & 0x0F0F0F0Fu) | ((hq << 2) & 0x30303030u);
                    } else { /* high nibbles | bits 4-5 (k = 2), 6-7 (k = 3) */
                        q0 = ((a >> 4) & 0x0F0F0F0Fu) | (hq & 0x30303030u);
                        q1 = ((b >> 4) & 0x0F0F0F0Fu) | ((hq >> 2) & 0x30303030u);
                    }
                    k_bytes4(q0, KG_F23_Q6, wf[r]);
                    k_bytes4(q1, KG_F23_Q6, wf[r] + 4);
                }
#pragma unroll
                for (int t = 0; t < NT; t++) {
                    const float *xt = x + (int64_t)t * cols + cb + 64 * g + 4 * wd;
                    const float4 a = __ldg((const float4 *)xt),
                                 b = __ldg((const float4 *)(xt + 32));
#pragma unroll
                    for (int r = 0; r < R; r++)
                        acc[r][t] = k_dot2(wf[r], a, b, ds[r][2 * g], ds[r][2 * g + 1], acc[r][t]);
                }
            }
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
