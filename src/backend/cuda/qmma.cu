/* qmma.cu: the tensor-core matmul for quantized weights (contract in qmma.h).
 *
 * The product is computed transposed, outᵀ[rows, T] = W · xᵀ, as m16n8k16 bf16 mma.sync
 * tiles: A (16 x 16) is 16 rows of W dequantized in registers, B (16 x 8) 8 input rows of x
 * from shared memory, C float32 in registers.
 *
 * Tiles. A block of 128 threads (4 warps) owns 128 W rows x 64 input rows; warp w owns W
 * rows 32w .. 32w+31 of the tile (two m16 tiles) against all 64 input rows (eight n8
 * tiles): 64 float32 accumulators a thread. The K loop steps 128 columns at a time. Per
 * step the block stages x's 64 x 128 bf16 tile in shared memory with cp.async (two stages:
 * the next step's tile and W quants load while this one computes), and each thread loads
 * its W quants straight into registers, 16 bytes a load, each byte once per block.
 *
 * Fragment mapping. In an m16n8k16 mma, lane (g = lane / 4, t = lane % 4) holds A elements
 * of rows g and g+8 at k slots {2t, 2t+1, 2t+8, 2t+9}, and B elements of column g at the
 * same k slots (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type").
 * The k slots of one mma may stand for any 16 columns of x and W, as long as A and B use
 * the same assignment, and that assignment depends on t only. So lane t of a row group
 * takes, in each 128-column step, 32 columns whose quants are in its own 16-byte load(s):
 *   Q8_0:    loads at byte 16t and 64+16t of the row's 128-byte step: columns 16t..16t+15
 *            and 64+16t..64+16t+15 (blocks t/2 and 2 + t/2 of the step);
 *   Q4_0:    block t of the step's four (16 bytes): columns 32t..32t+31 (low nibbles are
 *            columns 32t+j, high nibbles 32t+16+j);
 *   Q4_G128: bytes 16t..16t+15 of the row's 64-byte block: columns 16t+j (low nibbles)
 *            and 64+16t+j (high nibbles).
 * These 32 columns come in four runs of 8 consecutive columns, "pairs" p = 0..3 (column
 * qmma_col below); pair p feeds mma k-steps 2p and 2p+1: its columns c..c+3 go to slots
 * {2t, 2t+1, 2t+8, 2t+9} of k-step 2p, c+4..c+7 to those of k-step 2p+1. The B fragments
 * of a pair are then one 16-byte shared-memory load (x columns c..c+7 of input row g).
 *
 * Shared memory: x's tile is [64 input rows][16 units of 8 columns], unit u of row n
 * stored at unit qmma_swz(n, u) = u ^ ((u >> 2) & 2) ^ (n & 1) of the row, so that the 8
 * lanes of a quarter warp (rows n, n+1; t = 0..3) read 8 different 16-byte bank groups
 * for every type's column pattern (the cp.async writes of 8 consecutive units of a row
 * stay conflict-free too). The mapping, swizzle, staging and stores were checked against a
 * host model of the 32 lanes and the PTX fragment layout (every weight and x element used
 * once at the right k, A and B slots agreeing, no bank conflicts) before any GPU run.
 *
 * Dequantization: a quant becomes an exact float (byte placed in the mantissa of 2^23, one
 * subtraction), times d (exact in float32), rounded to bf16 (nearest even) in pairs.
 * Block-scaled fp8 (fp8b.h, code HY_CUDA_MOE_FP8B) takes Q8_0's byte mapping (its codes lie
 * where Q8_0's quants do) with one float32 scale a step (a 128-column step is one block
 * column): codes decoded exactly (fp8_gemv.cuh), times the scale in float32 (one
 * rounding: the host dequantizer's value), rounded to bf16. */
#include "backend/cuda/qmma.h"
#include "backend/cuda/fp8_gemv.cuh"
#include "backend/cuda/fp8b.h"
#include "backend/cuda/gemv_util.cuh"
#include "backend/cuda/qmatmul.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define QMMA_THREADS 128
#define QMMA_STAGES 2
#define QMMA_UNITS (HY_QMMA_K / 8) /* 16-byte units of x a tile row */
#define QMMA_MAX_SPLITS 8
#define QMMA_MIN_STEPS 4 /* K steps a split at least */
/* Blocks an SM at least (a register cap: 3 -> 168, 2 -> 255 registers a thread); Q8_0's
 * double-buffered quants (64 registers) do not fit 168 without spilling. ptxas (CUDA 13,
 * sm_80/sm_90): Q8_0 243-248 registers, no spills; the 4-bit types 168 with 16-56 bytes
 * spilled (-DQMMA_MINB4=2 lifts the cap, to try on the GPU). */
#ifndef QMMA_MINB4
#define QMMA_MINB4 3
#endif
#define QMMA_MINB(qt) ((qt) == HY_CUDA_Q8_0 || (qt) == HY_CUDA_MOE_FP8B ? 2 : QMMA_MINB4)

/* B: elements a block; RB: quant bytes of a row a 128-column step; LD: 16-byte loads a
 * row a step; NS: scales a row a step a thread needs. */
template <int QT> struct qmma_t;
template <> struct qmma_t<HY_CUDA_Q8_0> {
    static constexpr int B = 32, RB = 128, LD = 2, NS = 2;
};
template <> struct qmma_t<HY_CUDA_Q4_0> {
    static constexpr int B = 32, RB = 64, LD = 1, NS = 1;
};
template <> struct qmma_t<HY_CUDA_Q4_G128> {
    static constexpr int B = 128, RB = 64, LD = 1, NS = 1;
};
/* block-scaled fp8 (fp8b.h): codes where Q8_0 has its quants, one float32 scale a 128 x
 * 128 block (a step's columns lie in one) */
template <> struct qmma_t<HY_CUDA_MOE_FP8B> {
    static constexpr int B = 128, RB = 128, LD = 2, NS = 1;
};

/* First column (within the step) of lane t's pair p: 8 consecutive columns. */
template <int QT> static __device__ __forceinline__ int qmma_col(int t, int p)
{
    return QT == HY_CUDA_Q4_0 ? 32 * t + 8 * p : 64 * (p >> 1) + 16 * t + 8 * (p & 1);
}

/* Block (within the row) of lane t's scale i in step k. */
template <int QT> static __device__ __forceinline__ int qmma_blk(int k, int t, int i)
{
    /* Q4_G128, FP8B: one block a step (FP8B: from its row block's first, qmma_kernel) */
    return QT == HY_CUDA_Q8_0 ? 4 * k + 2 * i + (t >> 1) : QT == HY_CUDA_Q4_0 ? 4 * k + t : k;
}

static __device__ __forceinline__ int qmma_swz(int n, int u)
{
    return u ^ ((u >> 2) & 2) ^ (n & 1);
}

/* 16 bytes global -> shared, bypassing L1; n_src 0 writes zeros (rows past T). */
static __device__ __forceinline__ void qmma_cp16(void *dst, const void *src, int n_src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(n_src));
}

static __device__ __forceinline__ uint32_t qmma_word(const uint4 &v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/* 2^23 + byte K of u, as a float. */
template <int K> static __device__ __forceinline__ float qmma_byte(uint32_t u)
{
    return __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7440u | K));
}

/* (bf16(a), bf16(b)) in one register, a in the low half (the lower k slot). */
static __device__ __forceinline__ uint32_t qmma_pack(float a, float b)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t *>(&h);
}

/* The 4 quants of word u (int8: bytes; 4-bit: nibbles already masked to bytes) times d,
 * as two bf16 pairs: r[0] = columns (c, c+1), r[1] = (c+2, c+3). */
template <bool I8>
static __device__ __forceinline__ void qmma_deq4(uint32_t u, float d, uint32_t *r)
{
    const float z = I8 ? 8388736.0f : 8388616.0f; /* 2^23 + zero point (128, 8) */
    if (I8)
        u ^= 0x80808080u; /* int8 q -> q + 128 */
    r[0] = qmma_pack(d * (qmma_byte<0>(u) - z), d * (qmma_byte<1>(u) - z));
    r[1] = qmma_pack(d * (qmma_byte<2>(u) - z), d * (qmma_byte<3>(u) - z));
}

/* Pair p of a row: its 8 weights as 4 bf16 pairs, r[0..1] columns c..c+3 (k-step 2p),
 * r[2..3] columns c+4..c+7 (k-step 2p+1). q: the row's loads this step, d: its scales. */
template <int QT, int P>
static __device__ __forceinline__ void qmma_deq_pair(const uint4 *q, const float *d, uint32_t *r)
{
    if (QT == HY_CUDA_MOE_FP8B) { /* as Q8_0's bytes; e4m3 decoded exactly, d times it */
        float f[8];
        f8_word(qmma_word(q[P >> 1], 2 * (P & 1)), f);
        f8_word(qmma_word(q[P >> 1], 2 * (P & 1) + 1), f + 4);
#pragma unroll
        for (int i = 0; i < 4; i++)
            r[i] = qmma_pack(d[0] * f[2 * i], d[0] * f[2 * i + 1]);
    } else if (QT == HY_CUDA_Q8_0) { /* load P/2, words 2(P%2), 2(P%2)+1 */
        qmma_deq4<true>(qmma_word(q[P >> 1], 2 * (P & 1)), d[P >> 1], r);
        qmma_deq4<true>(qmma_word(q[P >> 1], 2 * (P & 1) + 1), d[P >> 1], r + 2);
    } else { /* words 2(P%2), 2(P%2)+1; low nibbles for P < 2, high for P >= 2 */
        const int sh = (P >> 1) * 4;
        qmma_deq4<false>((qmma_word(q[0], 2 * (P & 1)) >> sh) & 0x0F0F0F0Fu, d[0], r);
        qmma_deq4<false>((qmma_word(q[0], 2 * (P & 1) + 1) >> sh) & 0x0F0F0F0Fu, d[0], r + 2);
    }
}

static __device__ __forceinline__ void qmma_mma(float *c, const uint32_t *a, uint32_t b0,
                                                uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* The W rows a thread owns: [m16 tile j][h: row g (0) or g+8 (1)]: byte offset of the
 * row's quants plus 16t, index of its first scale (32 bits: hy_cuda_qmma_fits keeps the
 * matrix under 4 GiB; 64-bit pointers would cost 32 registers). */
struct qmma_rows {
    const unsigned char *wq;
    const uint16_t *ws;
    uint32_t q[2][2], s[2][2];
};
struct qmma_wregs {
    uint4 q[2][2][2]; /* [j][h][load] (Q8_0 uses 2 loads, the 4-bit types 1) */
    float d[2][2][2]; /* [j][h][scale] */
};

template <int QT>
static __device__ __forceinline__ void qmma_load_w(qmma_wregs &w, const qmma_rows &rw, int k, int t)
{
    typedef qmma_t<QT> Q;
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
#pragma unroll
            for (int l = 0; l < Q::LD; l++)
                w.q[j][h][l] = ld_stream(rw.wq + rw.q[j][h] + (uint32_t)(k * Q::RB + 64 * l));
#pragma unroll
            for (int i = 0; i < Q::NS; i++)
                w.d[j][h][i] =
                    QT == HY_CUDA_MOE_FP8B /* float32, the decoding's factor in it */
                        ? __ldg((const float *)rw.ws + rw.s[j][h] + (uint32_t)k) * f8_dec_scale()
                        : __half2float(__ushort_as_half(
                              __ldg(rw.ws + rw.s[j][h] + (uint32_t)qmma_blk<QT>(k, t, i))));
        }
}

/* Stages x's tile for step k (columns 128k ..) into xs: 64 rows x 16 units, 8 a thread. */
static __device__ __forceinline__ void qmma_stage_x(uint4 *xs, const uint16_t *xbf, int t0, int T,
                                                    int cols, int k)
{
#pragma unroll
    for (int i = 0; i < HY_QMMA_T * QMMA_UNITS / QMMA_THREADS; i++) {
        const int idx = threadIdx.x + QMMA_THREADS * i, n = idx / QMMA_UNITS, u = idx % QMMA_UNITS;
        const bool in = t0 + n < T;
        const uint16_t *src = xbf + (in ? (int64_t)(t0 + n) * cols + HY_QMMA_K * k + 8 * u : 0);
        qmma_cp16(xs + n * QMMA_UNITS + qmma_swz(n, u), src, in ? 16 : 0);
    }
    asm volatile("cp.async.commit_group;");
}

/* One pair p of every k step: dequantize the thread's 4 rows, then 8 n-tiles x 2 m-tiles
 * x 2 k-steps of mma. */
template <int QT, int P>
static __device__ __forceinline__ void qmma_pair(float (*acc)[8][4], const qmma_wregs &w,
                                                 const uint4 *xs, int g, int t)
{
    uint32_t a[2][2][4]; /* [j][k-step 2P + s][A register] */
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            uint32_t r[4];
            qmma_deq_pair<QT, P>(w.q[j][h], w.d[j][h], r);
            /* A registers: {row g slots 2t,2t+1; row g+8 same; row g slots 2t+8,2t+9;
             * row g+8 same} */
            a[j][0][h] = r[0];
            a[j][0][2 + h] = r[1];
            a[j][1][h] = r[2];
            a[j][1][2 + h] = r[3];
        }
    const int u = qmma_col<QT>(t, P) / 8;
    const uint4 *xr = xs + g * QMMA_UNITS + qmma_swz(g, u); /* n = 8 nt + g: same n & 1 */
#pragma unroll
    for (int nt = 0; nt < HY_QMMA_T / 8; nt++) {
        const uint4 b = xr[nt * 8 * QMMA_UNITS];
#pragma unroll
        for (int j = 0; j < 2; j++) {
            qmma_mma(acc[j][nt], a[j][0], b.x, b.y);
            qmma_mma(acc[j][nt], a[j][1], b.z, b.w);
        }
    }
}

/* grid (row tiles, T tiles, splits); split z takes steps [z * steps, (z + 1) * steps) and
 * writes out + z * T * rows. */
template <int QT>
__global__ void __launch_bounds__(QMMA_THREADS, QMMA_MINB(QT))
    qmma_kernel(float *out, const uint16_t *xbf, const unsigned char *wq, const uint16_t *ws,
                int rows, int cols, int T, int steps)
{
    typedef qmma_t<QT> Q;
    __shared__ uint4 xs[QMMA_STAGES][HY_QMMA_T * QMMA_UNITS]; /* 2 x 16 KiB */
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int nsteps = cols / HY_QMMA_K;
    const int k0 = blockIdx.z * steps, k1 = min(k0 + steps, nsteps);
    const int t0 = blockIdx.y * HY_QMMA_T;
    const int r0 = blockIdx.x * HY_QMMA_ROWS + (threadIdx.x >> 5) * 32 + g;
    const uint32_t row_bytes = (uint32_t)(cols / HY_QMMA_K * Q::RB), nblk = (uint32_t)(cols / Q::B);
    qmma_rows rw;
    rw.wq = wq;
    rw.ws = ws;
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = min(r0 + 16 * j + 8 * h, rows - 1); /* past the end: not stored */
            rw.q[j][h] = (uint32_t)r * row_bytes + 16 * t;
            rw.s[j][h] = QT == HY_CUDA_MOE_FP8B ? (uint32_t)(r / F8_BLOCK) * nblk
                                                : (uint32_t)r * nblk;
        }
    float acc[2][8][4];
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[j][nt][i] = 0.0f;

    qmma_wregs cur, nxt;
    qmma_stage_x(xs[0], xbf, t0, T, cols, k0);
    qmma_load_w<QT>(cur, rw, k0, t);
#pragma unroll 1
    for (int k = k0; k < k1; k++) {
        const int s = (k - k0) & 1;
        if (k + 1 < k1) {
            qmma_stage_x(xs[s ^ 1], xbf, t0, T, cols, k + 1);
            qmma_load_w<QT>(nxt, rw, k + 1, t);
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads(); /* step k's x tile is in xs[s] for every thread */
        qmma_pair<QT, 0>(acc, cur, xs[s], g, t);
        qmma_pair<QT, 1>(acc, cur, xs[s], g, t);
        qmma_pair<QT, 2>(acc, cur, xs[s], g, t);
        qmma_pair<QT, 3>(acc, cur, xs[s], g, t);
        __syncthreads(); /* xs[s] is refilled in the next step */
        if (k + 1 < k1)
            cur = nxt;
    }

    /* C fragment: c0, c1 at (row g, columns 2t, 2t+1), c2, c3 at row g+8; rows are W
     * rows, columns input rows */
    float *o = out + (int64_t)blockIdx.z * T * rows;
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int r = r0 + 16 * j + 8 * (i >> 1), n = t0 + 8 * nt + 2 * t + (i & 1);
                if (r < rows && n < T)
                    o[(int64_t)n * rows + r] = acc[j][nt][i];
            }
}

/* out[i] = sum over z < splits of part[z * n + i], in z order. */
__global__ void qmma_sum_kernel(float *out, const float *part, int64_t n, int splits)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float s = part[i];
    for (int z = 1; z < splits; z++)
        s += part[z * n + i];
    out[i] = s;
}

/* A matrix's device bytes (qt: qmatmul.h's, or block-scaled fp8's). */
static size_t qmma_bytes(int qt, int64_t rows, int64_t cols)
{
    return qt == HY_CUDA_MOE_FP8B ? hy_cuda_fp8b_bytes(rows, cols)
                                  : hy_cuda_q_bytes(qt, rows, cols);
}

extern "C" bool hy_cuda_qmma_fits(int qt, int64_t rows, int64_t cols, const void *w)
{
    return (qt == HY_CUDA_Q8_0 || qt == HY_CUDA_Q4_0 || qt == HY_CUDA_Q4_G128 ||
            qt == HY_CUDA_MOE_FP8B) &&
           rows >= 1 && cols >= HY_QMMA_K && cols % HY_QMMA_K == 0 && rows <= INT32_MAX &&
           cols <= INT32_MAX && qmma_bytes(qt, rows, cols) < ((size_t)1 << 32) &&
           !((uintptr_t)w & 15);
}

extern "C" int hy_cuda_qmma_splits(int64_t rows, int64_t cols, int T, size_t part_cap, int n_sm)
{
    const int64_t tiles =
        (rows + HY_QMMA_ROWS - 1) / HY_QMMA_ROWS * ((T + HY_QMMA_T - 1) / HY_QMMA_T);
    int64_t s = (2 * (int64_t)n_sm + tiles - 1) / tiles;
    if (s > QMMA_MAX_SPLITS)
        s = QMMA_MAX_SPLITS;
    if (s > cols / HY_QMMA_K / QMMA_MIN_STEPS)
        s = cols / HY_QMMA_K / QMMA_MIN_STEPS;
    if (s > 1 && (size_t)s * (size_t)T * (size_t)rows > part_cap)
        s = (int64_t)(part_cap / ((size_t)T * (size_t)rows));
    return s < 1 ? 1 : (int)s;
}

extern "C" void hy_cuda_qmma(cudaStream_t st, float *out, const uint16_t *xbf, const void *w,
                             int qt, int64_t rows, int64_t cols, int T, int splits, float *part)
{
    if (!hy_cuda_qmma_fits(qt, rows, cols, w) || T < 1 || splits < 1 || (splits > 1 && !part))
        hy_cuda_fail(__FILE__, __LINE__, "hy_cuda_qmma_fits && T, splits >= 1", "bad qmma call");
    const int nsteps = (int)(cols / HY_QMMA_K);
    const int steps = (nsteps + splits - 1) / (splits < nsteps ? splits : nsteps);
    const int nz = (nsteps + steps - 1) / steps; /* splits actually used, none empty */
    const unsigned char *wq = (const unsigned char *)w;
    const bool f8 = qt == HY_CUDA_MOE_FP8B; /* its float32 scales, passed as the fp16 ones */
    const size_t nb = f8 ? 0 : (size_t)(rows * (cols / hy_cuda_q_block(qt)));
    const uint16_t *ws = (const uint16_t *)(wq + (f8 ? f8b_scales_at(rows, cols)
                                                     : hy_cuda_q_bytes(qt, rows, cols) - 2 * nb));
    const dim3 grid((unsigned)((rows + HY_QMMA_ROWS - 1) / HY_QMMA_ROWS),
                    (unsigned)((T + HY_QMMA_T - 1) / HY_QMMA_T), (unsigned)nz);
    float *dst = nz > 1 ? part : out;
    if (qt == HY_CUDA_Q8_0)
        qmma_kernel<HY_CUDA_Q8_0>
            <<<grid, QMMA_THREADS, 0, st>>>(dst, xbf, wq, ws, (int)rows, (int)cols, T, steps);
    else if (qt == HY_CUDA_Q4_0)
        qmma_kernel<HY_CUDA_Q4_0>
            <<<grid, QMMA_THREADS, 0, st>>>(dst, xbf, wq, ws, (int)rows, (int)cols, T, steps);
    else if (f8)
        qmma_kernel<HY_CUDA_MOE_FP8B>
            <<<grid, QMMA_THREADS, 0, st>>>(dst, xbf, wq, ws, (int)rows, (int)cols, T, steps);
    else
        qmma_kernel<HY_CUDA_Q4_G128>
            <<<grid, QMMA_THREADS, 0, st>>>(dst, xbf, wq, ws, (int)rows, (int)cols, T, steps);
    HY_CUDA_CHECK_LAUNCH();
    if (nz > 1) {
        const int64_t n = (int64_t)T * rows;
        qmma_sum_kernel<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(out, part, n, nz);
        HY_CUDA_CHECK_LAUNCH();
    }
}

extern "C" bool hy_cuda_matmul_qmma(cudaStream_t st, float *out, const float *x, const void *w,
                                    int qt, int64_t rows, int64_t cols, int T, bool x_ready,
                                    const struct hy_cuda_mm_scratch *s)
{
    uint16_t *xbf = s->xbf;
    float *part = s->cbuf;
    const size_t xbf_cap = s->xbf_cap, part_cap = s->cbuf_cap;
    int dev = 0, n_sm = 0;
    HY_CUDA_CHECK(cudaGetDevice(&dev));
    HY_CUDA_CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
    int64_t tchunk = (int64_t)(xbf_cap / (size_t)cols);
    if (tchunk > T)
        tchunk = T;
    if (tchunk < 1)
        hy_cuda_fail(__FILE__, __LINE__, "xbf_cap >= cols", "qmma scratch too small");
    for (int64_t t0 = 0; t0 < T; t0 += tchunk) {
        const int n = (int)(T - t0 < tchunk ? T - t0 : tchunk);
        if (!x_ready || tchunk < T) /* x_ready: xbf holds x already (one chunk) */
            hy_cuda_f32_to_bf16(st, xbf, x + t0 * cols, n * cols);
        const int splits = part ? hy_cuda_qmma_splits(rows, cols, n, part_cap, n_sm) : 1;
        hy_cuda_qmma(st, out + t0 * rows, xbf, w, qt, rows, cols, n, splits, part);
    }
    return tchunk >= T;
}
