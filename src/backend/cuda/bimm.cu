/* bimm.cu: the batch-invariant bf16 matmul, out[T, rows] = x[T, cols] · Wᵀ (cuda_impl.h).
 *
 * The rule every launch follows, whatever T is and wherever a token sits in x: the columns
 * are cut into 32-column chunks c = 0 .. C-1 (C = ceil(cols / 32); past cols, W and x read
 * as 0) and the chunks into S segments, segment s holding chunks [s*C/S, (s+1)*C/S), S a
 * function of (rows, cols) alone (hy_cuda_bimm_segments). A segment's partial sum P_s is a
 * chain of tensor-core products mma.m16n8k16 (bf16 in, float32 accumulate) starting from 0:
 * for each chunk in order, four products, x's high part then its low part for the chunk's
 * first 16 columns, then the same for the last 16 (x = hi + lo, both bf16 rounded to
 * nearest even: hi = bf16(x), lo = bf16(x - hi), so x keeps 16 significant bits, not 8).
 * Then out = ((P_0 + P_1) + P_2) + ... in float32. The mma instruction computes each output
 * element from its own row of W, its own token's x and its accumulator only, so a token's
 * result is a function of its own x row: the same bits in any batch, alone or with any
 * others, in a decode step or a prefill chunk.
 *
 * Fragment mapping: a warp owns 16 W rows and 8 tokens an n-tile; lane (g = lane/4,
 * t = lane%4) loads 8 consecutive columns 32c + 8t .. +7 of W rows g and g+8 (16-byte loads)
 * and of token g's x, and feeds the first four to the first product, the last four to the
 * second. The product's k index 2t+e (e = 0, 1) is column 32c + 8t + e (+4 in the second)
 * and k index 8+2t+e is column 32c + 8t + 2 + e: A and B use the same permutation of the
 * chunk's columns, so each product sums 16 distinct columns, each once.
 *
 * Launches: first x is split once into its hi and lo parts, stored in the order the lanes
 * read them (xs: per token, chunk and t, the 8 bf16 of hi then the 8 of lo, 32 bytes), in
 * the scratch `xs` (inputs larger than it go in chunks of whole tokens). T <= 64 (decode
 * steps): grid (row blocks, 1, S), a block of 4 warps takes 64 W rows, up to 64 tokens and
 * one segment; S > 1 writes P_s into `part` and a second kernel adds them in order. T > 64:
 * grid (row blocks, token blocks of 64); each warp walks the S segments itself, adding P_s
 * to its running sum in the same order. Both write each output once. A warp issues the
 * loads of several chunks (8 for one n-tile) before their products. */
#include "backend/cuda/cuda_impl.h"

#include <cuda_bf16.h>

#define BI_WARPS 4
#define BI_ROWS (16 * BI_WARPS) /* W rows a block */
#define BI_TOK 64               /* tokens a block (8 n-tiles) */
#define BI_SMAX 16
#define BI_TARGET 2048 /* 16-row tiles x segments a small-T launch aims for */

/* Segments of a rows x cols matrix: enough that rows/16 x S warps fill the GPU at T = 1,
 * at most BI_SMAX, each at least 4 chunks long. Depends on the shape alone. */
extern "C" int hy_cuda_bimm_segments(int64_t rows, int64_t cols)
{
    const int64_t tiles = (rows + 15) / 16, chunks = (cols + 31) / 32;
    int s = 1;
    while (s < BI_SMAX && tiles * s * 2 <= BI_TARGET && chunks / (s * 2) >= 4)
        s *= 2;
    return s;
}

extern "C" size_t hy_cuda_bimm_part_floats(int64_t rows, int64_t cols)
{
    const int s = hy_cuda_bimm_segments(rows, cols);
    return s > 1 ? (size_t)s * BI_TOK * (size_t)rows : 0;
}

__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* (x0, x1) as bf16 pairs hi and lo (x = hi + lo to 16 bits), low half first. */
__device__ __forceinline__ void split2(float x0, float x1, uint32_t &hi, uint32_t &lo)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
    float2 hf = __bfloat1622float2(h);
    __nv_bfloat162 l = __floats2bfloat162_rn(x0 - hf.x, x1 - hf.y);
    hi = *reinterpret_cast<uint32_t *>(&h);
    lo = *reinterpret_cast<uint32_t *>(&l);
}

struct bi_args {
    float *out, *part;
    const uint4 *xs; /* the split x: [T][C][4 lanes][hi, lo] */
    const uint16_t *w;
    int64_t rows, cols;
    int T, S, C;
    bool wvec; /* 16-byte loads of W allowed: cols % 8 == 0 and W aligned */
};

/* Eight bf16 of W row `row` (clamped into the matrix) from column col, 0 past cols. */
__device__ __forceinline__ uint4 load_w(const struct bi_args &a, int64_t row, int64_t col)
{
    row = row < a.rows ? row : a.rows - 1;
    const uint16_t *p = a.w + row * a.cols + col;
    if (a.wvec && col + 8 <= a.cols) {
        uint4 v;
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
        return v;
    }
    uint32_t e[8];
#pragma unroll
    for (int i = 0; i < 8; i++)
        e[i] = col + i < a.cols ? p[i] : 0u;
    return make_uint4(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << 16, e[6] | e[7] << 16);
}

/* xs for tokens [0, T) of x [T, cols]: thread (tok, c, t) writes 2 uint4 (hi, lo) for
 * columns 32c + 8t .. +7 (0 past cols). */
__global__ void bimm_split(uint4 *xs, const float *x, int T, int64_t cols, int C, bool xvec)
{
    const int64_t n = (int64_t)T * C * 4;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t tok = i / (4 * C), c = i / 4 % C, t = i % 4;
        const int64_t col = c * 32 + 8 * t;
        const float *p = x + tok * cols + col;
        float v[8];
        if (xvec && col + 8 <= cols) {
            float4 u = __ldg((const float4 *)p), w = __ldg((const float4 *)p + 1);
            v[0] = u.x, v[1] = u.y, v[2] = u.z, v[3] = u.w;
            v[4] = w.x, v[5] = w.y, v[6] = w.z, v[7] = w.w;
        } else {
#pragma unroll
            for (int e = 0; e < 8; e++)
                v[e] = col + e < cols ? p[e] : 0.0f;
        }
        uint4 h, l;
        split2(v[0], v[1], h.x, l.x);
        split2(v[2], v[3], h.y, l.y);
        split2(v[4], v[5], h.z, l.z);
        split2(v[6], v[7], h.w, l.w);
        xs[2 * i] = h;
        xs[2 * i + 1] = l;
    }
}

/* Token tok's split x for chunk c, lane part t; 0 for tok >= T. */
__device__ __forceinline__ void load_xs(const struct bi_args &a, int tok, int c, int t, uint4 &h,
                                        uint4 &l)
{
    if (tok >= a.T) {
        h = l = make_uint4(0u, 0u, 0u, 0u);
        return;
    }
    const uint4 *p = a.xs + (((int64_t)tok * a.C + c) * 4 + t) * 2;
    h = __ldg(p);
    l = __ldg(p + 1);
}

/* P_s for the warp's 16 rows from r0 and NT n-tiles of tokens from t0, into acc. */
template <int NT>
__device__ __forceinline__ void segment(const struct bi_args &a, int s, int64_t r0, int t0,
                                        float (&acc)[NT][4])
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int c0 = (int)((int64_t)a.C * s / a.S), c1 = (int)((int64_t)a.C * (s + 1) / a.S);
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            acc[j][e] = 0.0f;
    /* D chunks' loads are issued before their products: more bytes in flight a warp where
     * few tokens leave registers free (NT = 1: 8 chunks, 16 registers each) */
    constexpr int D = NT == 1 ? 8 : NT == 2 ? 4 : NT == 4 ? 2 : 1;
    for (int cb = c0; cb < c1; cb += D) {
        uint4 wa[D], wb[D], xh[D][NT], xl[D][NT];
#pragma unroll
        for (int d = 0; d < D; d++) {
            const int c = cb + d < c1 ? cb + d : c1 - 1; /* past the segment: reread, unused */
            wa[d] = load_w(a, r0 + g, (int64_t)c * 32 + 8 * t);
            wb[d] = load_w(a, r0 + g + 8, (int64_t)c * 32 + 8 * t);
#pragma unroll
            for (int j = 0; j < NT; j++)
                load_xs(a, t0 + 8 * j + g, c, t, xh[d][j], xl[d][j]);
        }
#pragma unroll
        for (int d = 0; d < D; d++) {
            if (cb + d >= c1)
                break;
#pragma unroll
            for (int j = 0; j < NT; j++) {
                const uint4 h = xh[d][j], l = xl[d][j];
                mma16816(acc[j], wa[d].x, wb[d].x, wa[d].y, wb[d].y, h.x, h.y);
                mma16816(acc[j], wa[d].x, wb[d].x, wa[d].y, wb[d].y, l.x, l.y);
                mma16816(acc[j], wa[d].z, wb[d].z, wa[d].w, wb[d].w, h.z, h.w);
                mma16816(acc[j], wa[d].z, wb[d].z, wa[d].w, wb[d].w, l.z, l.w);
            }
        }
    }
}

/* Writes the warp's tile: acc[j] holds (row g, tokens 2t, 2t+1) and (row g+8, the same). */
template <int NT>
__device__ __forceinline__ void store(float *dst, int64_t rows, int T, int64_t r0, int t0,
                                      const float (&acc)[NT][4])
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int64_t row = r0 + g + (e >> 1) * 8;
            const int tok = t0 + 8 * j + 2 * t + (e & 1);
            if (row < rows && tok < T)
                dst[(int64_t)tok * rows + row] = acc[j][e];
        }
}

/* T <= 64: one segment (blockIdx.z) of 64 rows for every token. */
template <int NT>
__global__ void __launch_bounds__(BI_WARPS * 32) bimm_small(struct bi_args a)
{
    const int64_t r0 = (int64_t)blockIdx.x * BI_ROWS + (threadIdx.x >> 5) * 16;
    if (r0 >= a.rows)
        return;
    float acc[NT][4];
    segment<NT>(a, (int)blockIdx.z, r0, 0, acc);
    store<NT>(a.S > 1 ? a.part + (int64_t)blockIdx.z * a.T * a.rows : a.out, a.rows, a.T, r0, 0,
              acc);
}

/* out = ((P_0 + P_1) + ...) from part [S][T][rows]. */
__global__ void bimm_sum(float *out, const float *part, int64_t n, int S)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float r = part[i];
        for (int s = 1; s < S; s++)
            r = __fadd_rn(r, part[(int64_t)s * n + i]);
        out[i] = r;
    }
}

/* T > 64: 64 rows x 64 tokens, every segment in turn. */
__global__ void __launch_bounds__(BI_WARPS * 32) bimm_large(struct bi_args a)
{
    const int64_t r0 = (int64_t)blockIdx.x * BI_ROWS + (threadIdx.x >> 5) * 16;
    const int t0 = (int)blockIdx.y * BI_TOK;
    if (r0 >= a.rows)
        return;
    float sum[8][4], acc[8][4];
    for (int s = 0; s < a.S; s++) {
        segment<8>(a, s, r0, t0, acc);
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                sum[j][e] = s == 0 ? acc[j][e] : __fadd_rn(sum[j][e], acc[j][e]);
    }
    store<8>(a.out, a.rows, a.T, r0, t0, sum);
}

/* One launch for T <= 64 tokens (xs split already). */
static void bimm_small_launch(cudaStream_t st, const struct bi_args &a, float *out, unsigned rb,
                              size_t part_cap)
{
    if (a.S > 1 && (size_t)a.S * (size_t)a.T * (size_t)a.rows > part_cap)
        hy_cuda_fail(__FILE__, __LINE__, "S * T * rows <= part_cap", "bimm scratch too small");
    const dim3 grid(rb, 1, (unsigned)a.S);
    if (a.T <= 8)
        bimm_small<1><<<grid, BI_WARPS * 32, 0, st>>>(a);
    else if (a.T <= 16)
        bimm_small<2><<<grid, BI_WARPS * 32, 0, st>>>(a);
    else if (a.T <= 32)
        bimm_small<4><<<grid, BI_WARPS * 32, 0, st>>>(a);
    else
        bimm_small<8><<<grid, BI_WARPS * 32, 0, st>>>(a);
    HY_CUDA_CHECK_LAUNCH();
    if (a.S > 1) {
        const int64_t n = (int64_t)a.T * a.rows;
        const unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
        bimm_sum<<<blocks, 256, 0, st>>>(out, a.part, n, a.S);
        HY_CUDA_CHECK_LAUNCH();
    }
}

extern "C" void hy_cuda_bimm(cudaStream_t st, float *out, const float *x, const uint16_t *w,
                             int64_t rows, int64_t cols, int T, void *xs, size_t xs_bytes,
                             float *part, size_t part_cap)
{
    if (T <= 0 || rows <= 0)
        return;
    struct bi_args a;
    a.part = part;
    a.xs = (const uint4 *)xs;
    a.w = w;
    a.rows = rows;
    a.cols = cols;
    a.S = hy_cuda_bimm_segments(rows, cols);
    a.C = (int)((cols + 31) / 32);
    a.wvec = cols % 8 == 0 && ((uintptr_t)w & 15) == 0;
    const bool xvec = cols % 4 == 0 && ((uintptr_t)x & 15) == 0;
    const unsigned rb = (unsigned)((rows + BI_ROWS - 1) / BI_ROWS);
    const int64_t tok_bytes = (int64_t)a.C * 128; /* a token's split x */
    int64_t chunk = (int64_t)(xs_bytes / (size_t)tok_bytes);
    if (chunk < BI_TOK && chunk < T)
        hy_cuda_fail(__FILE__, __LINE__, "xs_bytes >= 64 tokens", "bimm x scratch too small");
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        a.T = (int)(T - t0 < chunk ? T - t0 : chunk);
        a.out = out + t0 * rows;
        const int64_t n = (int64_t)a.T * a.C * 4;
        const unsigned sb = (unsigned)((n + 255) / 256 < 8192 ? (n + 255) / 256 : 8192);
        bimm_split<<<sb, 256, 0, st>>>((uint4 *)xs, x + t0 * cols, a.T, cols, a.C, xvec);
        HY_CUDA_CHECK_LAUNCH();
        if (a.T > BI_TOK) {
            bimm_large<<<dim3(rb, (unsigned)((a.T + BI_TOK - 1) / BI_TOK)), BI_WARPS * 32, 0,
                         st>>>(a);
            HY_CUDA_CHECK_LAUNCH();
        } else {
            bimm_small_launch(st, a, a.out, rb, part_cap);
        }
    }
}
