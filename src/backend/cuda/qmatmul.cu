/* qmatmul.cu: matmul and embedding lookup with weight-only quantized matrices (Q8_0, Q4_0,
 * Q4_G128) in the split device layout of qmatmul.h, which has the contract. Q4_K and Q6_K
 * have kernels of their own (qmatmul_k.cu), called from here; the chunked path below is
 * shared.
 *
 * T <= 8 input rows: a weight-streaming GEMV in the style of matmul.cu's gemv_kernel. A
 * block owns R consecutive output rows (4 for T <= 4, 8 above); its threads split each
 * row's quant bytes in 16-byte pieces (thread i takes pieces i, i + blockDim, ...), loaded
 * once with L1 no-allocate; x (float32) comes through the read-only path (L1/L2), one load
 * serving R rows. Every 16-byte piece lies in one block, so it has one scale. A piece is
 * taken a 4-byte word at a time: the word's 4 (int8) or 8 (two nibbles a byte) quants
 * become floats without an int->float conversion (PRMT puts a byte into the mantissa of
 * 2^23, one FADD removes 2^23 and the zero point: exact), sum(q*x) over the word per input
 * row, then acc += d * that sum. Warp shuffles, then shared memory, sum a row's parts. The
 * block takes 256 threads when a row has >= 256 pieces, else 128 or 64 (a 4096-wide Q4 row
 * has 128), so that few threads idle.
 *
 * T > 8 (or x not 16-byte aligned), Q8_0, Q4_0 and Q4_G128 with cols % 128 == 0: the
 * tensor-core kernel of qmma.cu (hy_cuda_matmul_qmma; cbuf holds its K-split parts).
 * Other shapes and types (hy_cuda_matmul_q_chunked): chunked dequantize + cuBLAS
 * (hy_cuda_dequant_mm, shared with fp8mm.cu; this file gives it the dequantize): rows of
 * W are dequantized into the bf16 scratch wbf (whole multiples of 8 rows; rows past the
 * end are zeros), x is rounded to bf16 into xbf (chunks of whole rows), and
 * each pair is one bf16 GEMM with float32 accumulation (as matmul.cu; the same transposed
 * view: outᵀ[rows, T] = W · xᵀ). When rows % 8 != 0 (the vocabulary) a chunk's product goes
 * into cbuf with an aligned leading dimension and is copied out (matmul.cu says why). The
 * weights are read once per chunk of x plus the bf16 scratch written and read: about 2.5x
 * (Q8) to 5x (Q4) the bytes of the fused kernel this stands in for. */
#include "backend/cuda/qmatmul.h"
#include "backend/cuda/gemv_util.cuh"
#include "backend/cuda/qmma.h"
#include "backend/cuda/qlayout_k.h"
#include "backend/cuda/qmatmul_k.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <string.h>

#define QG_MAX_T 8
#define QG_MAX_THREADS 256

/* B: elements a block; QB: quant bytes a block; HI: offset of the high-nibble elements
 * from the low ones within a 4-bit block (0: int8, one element a byte). */
template <int QT> struct qtraits;
template <> struct qtraits<HY_CUDA_Q8_0> {
    static constexpr int B = 32, QB = 32, HI = 0;
};
template <> struct qtraits<HY_CUDA_Q4_0> {
    static constexpr int B = 32, QB = 16, HI = 16;
};
template <> struct qtraits<HY_CUDA_Q4_G128> {
    static constexpr int B = 128, QB = 64, HI = 64;
};

/* Q4_K, Q6_K: GGUF's super-block types (qmatmul_k.cu). */
static bool is_k(int qt)
{
    return qt == HY_CUDA_Q4_K || qt == HY_CUDA_Q6_K;
}

extern "C" int hy_cuda_q_block(int qt)
{
    return is_k(qt) ? HY_QK_SUPER : qt == HY_CUDA_Q4_G128 ? 128 : 32;
}

extern "C" int hy_cuda_q_block_qbytes(int qt)
{
    return qt == HY_CUDA_Q4_K   ? HY_QK_Q4K_BYTES - HY_QK_Q4K_HEAD
           : qt == HY_CUDA_Q6_K ? HY_QK_Q6K_QBYTES
           : qt == HY_CUDA_Q8_0 ? 32
           : qt == HY_CUDA_Q4_0 ? 16
                                : 64;
}

extern "C" int hy_cuda_q_block_bytes(int qt)
{
    return qt == HY_CUDA_Q4_K   ? HY_QK_Q4K_BYTES
           : qt == HY_CUDA_Q6_K ? HY_QK_Q6K_BYTES
                                : hy_cuda_q_block_qbytes(qt) + 2;
}

/* Offset of the scales in the split layout. */
static size_t scales_at(int qt, int64_t rows, int64_t cols)
{
    size_t nb = (size_t)(rows * (cols / hy_cuda_q_block(qt)));
    return (nb * (size_t)hy_cuda_q_block_qbytes(qt) + 15) & ~(size_t)15;
}

extern "C" size_t hy_cuda_q_bytes(int qt, int64_t rows, int64_t cols)
{
    if (is_k(qt))
        return hy_qk_bytes(qt == HY_CUDA_Q6_K, rows, cols);
    return scales_at(qt, rows, cols) + (size_t)(rows * (cols / hy_cuda_q_block(qt))) * 2;
}

extern "C" void hy_cuda_q_repack(void *dst, const void *src, int qt, int64_t rows, int64_t cols)
{
    if (is_k(qt)) {
        hy_qk_repack(dst, src, qt == HY_CUDA_Q6_K, rows, cols);
        return;
    }
    const size_t qb = (size_t)hy_cuda_q_block_qbytes(qt), bb = qb + 2; /* fp16 d, then quants */
    const size_t nb = (size_t)(rows * (cols / hy_cuda_q_block(qt))), at = scales_at(qt, rows, cols);
    unsigned char *q = (unsigned char *)dst, *s = q + at;
    const unsigned char *in = (const unsigned char *)src;
    memset(q + nb * qb, 0, at - nb * qb);
    for (size_t i = 0; i < nb; i++) {
        memcpy(q + i * qb, in + i * bb + 2, qb);
        memcpy(s + 2 * i, in + i * bb, 2);
    }
}

static __device__ __forceinline__ float q_h2f(uint16_t h)
{
    return __half2float(__ushort_as_half(h));
}

/* 2^23 + byte K of u, as a float: the byte in the low mantissa bits, exponent of 2^23. */
template <int K> static __device__ __forceinline__ float q_byte_f(uint32_t u)
{
    return __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7440u | K));
}

/* The word's quants as floats: Q8_0 4 (bytes in order), 4-bit 8 (low nibbles of bytes 0-3,
 * then high nibbles). Exact: the integers are below 2^8. */
template <int QT> static __device__ __forceinline__ void q_word(uint32_t u, float *w)
{
    if (QT == HY_CUDA_Q8_0) {
        u ^= 0x80808080u; /* int8 q -> q + 128 in [0, 255] */
        w[0] = q_byte_f<0>(u) - 8388736.0f; /* 2^23 + 128 */
        w[1] = q_byte_f<1>(u) - 8388736.0f;
        w[2] = q_byte_f<2>(u) - 8388736.0f;
        w[3] = q_byte_f<3>(u) - 8388736.0f;
    } else {
        uint32_t lo = u & 0x0F0F0F0Fu, hi = (u >> 4) & 0x0F0F0F0Fu;
        w[0] = q_byte_f<0>(lo) - 8388616.0f; /* 2^23 + 8: nibble - 8 */
        w[1] = q_byte_f<1>(lo) - 8388616.0f;
        w[2] = q_byte_f<2>(lo) - 8388616.0f;
        w[3] = q_byte_f<3>(lo) - 8388616.0f;
        w[4] = q_byte_f<0>(hi) - 8388616.0f;
        w[5] = q_byte_f<1>(hi) - 8388616.0f;
        w[6] = q_byte_f<2>(hi) - 8388616.0f;
        w[7] = q_byte_f<3>(hi) - 8388616.0f;
    }
}

/* Piece k (16 quant bytes) of a row: its block, and the column of its first element (the
 * low nibbles for 4-bit types; word i's start 4*i columns later, its high nibbles HI more). */
template <int QT> static __device__ __forceinline__ int q_piece_block(int k)
{
    return QT == HY_CUDA_Q8_0 ? k >> 1 : QT == HY_CUDA_Q4_0 ? k : k >> 2;
}
template <int QT> static __device__ __forceinline__ int q_piece_col(int k)
{
    return QT == HY_CUDA_Q8_0 ? 16 * k : QT == HY_CUDA_Q4_0 ? 32 * k : 128 * (k >> 2) + 16 * (k & 3);
}

template <int QT, int NT, int R>
__global__ void __launch_bounds__(QG_MAX_THREADS, 1)
    qgemv_kernel(float *out, const float *x, const unsigned char *wq, const uint16_t *ws,
                 int rows, int cols)
{
    typedef qtraits<QT> Q;
    constexpr int NW = Q::HI ? 8 : 4; /* quants a 4-byte word */
    const int row0 = blockIdx.x * R;
    const int nblk = cols / Q::B, n16 = nblk * Q::QB / 16;
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
#pragma unroll(NT <= 2 ? 2 : 1)
    for (int k = threadIdx.x; k < n16; k += blockDim.x) {
        uint4 v[R];
        float d[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            v[r] = ld_stream(wr[r] + k);
#pragma unroll
        for (int r = 0; r < R; r++)
            d[r] = q_h2f(__ldg(sr[r] + q_piece_block<QT>(k)));
        const int c0 = q_piece_col<QT>(k);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float wf[R][NW];
#pragma unroll
            for (int r = 0; r < R; r++)
                q_word<QT>(i == 0 ? v[r].x : i == 1 ? v[r].y : i == 2 ? v[r].z : v[r].w, wf[r]);
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const float *xt = x + (int64_t)t * cols + c0 + 4 * i;
                const float4 a = __ldg((const float4 *)xt);
                float4 b = a;
                if (Q::HI)
                    b = __ldg((const float4 *)(xt + Q::HI));
#pragma unroll
                for (int r = 0; r < R; r++) {
                    float p = wf[r][0] * a.x;
                    p = fmaf(wf[r][1], a.y, p);
                    p = fmaf(wf[r][2], a.z, p);
                    p = fmaf(wf[r][3], a.w, p);
                    if (Q::HI) {
                        p = fmaf(wf[r][NW - 4], b.x, p);
                        p = fmaf(wf[r][NW - 3], b.y, p);
                        p = fmaf(wf[r][NW - 2], b.z, p);
                        p = fmaf(wf[r][NW - 1], b.w, p);
                    }
                    acc[r][t] = fmaf(d[r], p, acc[r][t]);
                }
            }
        }
    }
    /* blockDim.x >= 64 >= R * NT */
    gemv_reduce_store<QG_MAX_THREADS / 32>(acc, out, row0, rows, blockDim.x >> 5, gemv_plain());
}

template <int QT, int NT>
static void qgemv(cudaStream_t st, float *out, const float *x, const void *w, int64_t rows,
                  int64_t cols)
{
    typedef qtraits<QT> Q;
    constexpr int R = NT <= 4 ? 4 : 8;
    const int64_t n16 = cols / Q::B * Q::QB / 16;
    const unsigned threads = n16 >= 256 ? 256 : n16 >= 128 ? 128 : 64;
    const unsigned blocks = (unsigned)((rows + R - 1) / R);
    const unsigned char *wq = (const unsigned char *)w;
    const uint16_t *ws = (const uint16_t *)(wq + scales_at(QT, rows, cols));
    qgemv_kernel<QT, NT, R><<<blocks, threads, 0, st>>>(out, x, wq, ws, (int)rows, (int)cols);
    HY_CUDA_CHECK_LAUNCH();
}

template <int QT>
static void qgemv_t(cudaStream_t st, float *out, const float *x, const void *w, int64_t rows,
                    int64_t cols, int T)
{
    switch (T) {
    case 1: qgemv<QT, 1>(st, out, x, w, rows, cols); break;
    case 2: qgemv<QT, 2>(st, out, x, w, rows, cols); break;
    case 3: qgemv<QT, 3>(st, out, x, w, rows, cols); break;
    case 4: qgemv<QT, 4>(st, out, x, w, rows, cols); break;
    case 5: qgemv<QT, 5>(st, out, x, w, rows, cols); break;
    case 6: qgemv<QT, 6>(st, out, x, w, rows, cols); break;
    case 7: qgemv<QT, 7>(st, out, x, w, rows, cols); break;
    default: qgemv<QT, 8>(st, out, x, w, rows, cols); break;
    }
}

/* Element (row, col) of W, d * q in float32 exactly as the host dequantizers. */
template <int QT>
static __device__ __forceinline__ float q_elem(const unsigned char *wq, const uint16_t *ws,
                                               int64_t row, int col, int cols)
{
    typedef qtraits<QT> Q;
    const int64_t b = row * (cols / Q::B) + col / Q::B;
    const int j = col % Q::B;
    const float d = q_h2f(ws[b]);
    const unsigned char *qs = wq + b * Q::QB;
    if (QT == HY_CUDA_Q8_0)
        return d * (float)(int8_t)qs[j];
    const int byte = qs[j % (Q::HI ? Q::HI : 1)];
    return d * (float)((j < Q::HI ? byte & 15 : byte >> 4) - 8);
}

static __device__ __forceinline__ uint32_t q_bf16_pair(float a, float b)
{
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(a)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(b)) << 16;
}

/* dst[0 .. n8*8) = rows r0 .. of W as bf16, 8 elements a thread; local rows >= nr are 0. */
template <int QT>
__global__ void q_dequant_bf16_kernel(uint16_t *dst, const unsigned char *wq, const uint16_t *ws,
                                      int64_t r0, int64_t nr, int64_t n8, int cols)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n8)
        return;
    const int64_t e = i * 8, r = e / cols;
    const int c = (int)(e % cols);
    uint32_t p[4];
#pragma unroll
    for (int h = 0; h < 4; h++) {
        float a = 0.0f, b = 0.0f;
        if (r < nr) {
            a = q_elem<QT>(wq, ws, r0 + r, c + 2 * h, cols);
            b = q_elem<QT>(wq, ws, r0 + r, c + 2 * h + 1, cols);
        }
        p[h] = q_bf16_pair(a, b);
    }
    *(uint4 *)(dst + e) = make_uint4(p[0], p[1], p[2], p[3]);
}

template <int QT>
__global__ void q_embed_kernel(float *out, const unsigned char *wq, const uint16_t *ws,
                               const int32_t *ids, int64_t n, int cols)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = q_elem<QT>(wq, ws, ids[i / cols], (int)(i % cols), cols);
}

static void q_dequant_bf16(cudaStream_t st, int qt, uint16_t *dst, const void *w, int64_t rows,
                           int64_t cols, int64_t r0, int64_t nr, int64_t nr_pad)
{
    if (is_k(qt)) {
        hy_cuda_qk_dequant_bf16(st, dst, w, qt, rows, cols, r0, nr, nr_pad);
        return;
    }
    const unsigned char *wq = (const unsigned char *)w;
    const uint16_t *ws = (const uint16_t *)(wq + scales_at(qt, rows, cols));
    const int64_t n8 = nr_pad * cols / 8;
    const unsigned blocks = (unsigned)((n8 + 255) / 256);
    if (qt == HY_CUDA_Q8_0)
        q_dequant_bf16_kernel<HY_CUDA_Q8_0><<<blocks, 256, 0, st>>>(dst, wq, ws, r0, nr, n8, (int)cols);
    else if (qt == HY_CUDA_Q4_0)
        q_dequant_bf16_kernel<HY_CUDA_Q4_0><<<blocks, 256, 0, st>>>(dst, wq, ws, r0, nr, n8, (int)cols);
    else
        q_dequant_bf16_kernel<HY_CUDA_Q4_G128><<<blocks, 256, 0, st>>>(dst, wq, ws, r0, nr, n8, (int)cols);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" bool hy_cuda_matmul_q(cudaStream_t st, cublasHandle_t blas, float *out,
                                 const float *x, const void *w, int qt, int64_t rows,
                                 int64_t cols, int T, bool x_ready,
                                 const struct hy_cuda_mm_scratch *s)
{
    if (cols % hy_cuda_q_block(qt) != 0 || rows < 1 || T < 1)
        hy_cuda_fail(__FILE__, __LINE__, "cols % B == 0 && rows, T >= 1", "bad qmatmul shape");
    if (T <= QG_MAX_T && !((uintptr_t)x & 15) && !((uintptr_t)w & 15)) {
        if (is_k(qt))
            hy_cuda_qk_gemv(st, out, x, w, qt, rows, cols, T);
        else if (qt == HY_CUDA_Q8_0)
            qgemv_t<HY_CUDA_Q8_0>(st, out, x, w, rows, cols, T);
        else if (qt == HY_CUDA_Q4_0)
            qgemv_t<HY_CUDA_Q4_0>(st, out, x, w, rows, cols, T);
        else
            qgemv_t<HY_CUDA_Q4_G128>(st, out, x, w, rows, cols, T);
        return false;
    }
    if (hy_cuda_qmma_fits(qt, rows, cols, w))
        return hy_cuda_matmul_qmma(st, out, x, w, qt, rows, cols, T, x_ready, s);
    return hy_cuda_matmul_q_chunked(st, blas, out, x, w, qt, rows, cols, T, x_ready, s);
}

/* The weight as q_dequant reads it. */
struct q_weight {
    const void *w;
    int qt;
    int64_t rows, cols;
};

/* hy_cuda_dequant_fn for the block types. */
static void q_dequant(cudaStream_t st, uint16_t *dst, const void *w, int64_t r0, int64_t nr,
                      int64_t nr_pad)
{
    const struct q_weight *q = (const struct q_weight *)w;
    q_dequant_bf16(st, q->qt, dst, q->w, q->rows, q->cols, r0, nr, nr_pad);
}

extern "C" bool hy_cuda_matmul_q_chunked(cudaStream_t st, cublasHandle_t blas, float *out,
                                         const float *x, const void *w, int qt, int64_t rows,
                                         int64_t cols, int T, bool x_ready,
                                         const struct hy_cuda_mm_scratch *s)
{
    const struct q_weight q = {w, qt, rows, cols};
    return hy_cuda_dequant_mm(st, blas, out, x, rows, cols, T, x_ready, s, q_dequant, &q,
                              "qmatmul scratch too small");
}

extern "C" void hy_cuda_embed_q(cudaStream_t st, float *out, const void *table, int qt,
                                int64_t rows, int64_t cols, const int32_t *ids, int T)
{
    const int64_t n = (int64_t)T * cols;
    if (n <= 0)
        return;
    if (is_k(qt)) {
        hy_cuda_qk_embed(st, out, table, qt, rows, cols, ids, T);
        return;
    }
    const unsigned char *wq = (const unsigned char *)table;
    const uint16_t *ws = (const uint16_t *)(wq + scales_at(qt, rows, cols));
    const unsigned blocks = (unsigned)((n + 255) / 256);
    if (qt == HY_CUDA_Q8_0)
        q_embed_kernel<HY_CUDA_Q8_0><<<blocks, 256, 0, st>>>(out, wq, ws, ids, n, (int)cols);
    else if (qt == HY_CUDA_Q4_0)
        q_embed_kernel<HY_CUDA_Q4_0><<<blocks, 256, 0, st>>>(out, wq, ws, ids, n, (int)cols);
    else
        q_embed_kernel<HY_CUDA_Q4_G128><<<blocks, 256, 0, st>>>(out, wq, ws, ids, n, (int)cols);
    HY_CUDA_CHECK_LAUNCH();
}
