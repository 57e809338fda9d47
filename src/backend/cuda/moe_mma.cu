/* moe_mma.cu: the grouped tensor-core GEMM of the expert products (moe.h has the contract).
 *
 * A block owns 64 W rows (outputs) of one expert against up to 64 of the expert's places
 * and computes outᵀ = W · xᵀ with mma.m16n8k16 (bf16 in, float32 accumulate): A is 16 W
 * rows, B 8 places, both read from shared memory, C in registers. 4 warps: warp w takes W
 * rows 32 (w & 1) .. +31 (two m16 tiles) and places 32 (w >> 1) .. +31 (four n8 tiles).
 *
 * Each 64-column step stages both operands in shared memory as bf16, [row][64 columns +
 * 8 of padding] (36 words a row: the 8 row groups g of a fragment load fall on 8
 * different 4-bank groups): x's float32 rows (gathered through rows[] for gate_up) rounded
 * to nearest even, and W as bf16 (copied) or dequantized, d * q exact in float32 and then
 * rounded to nearest even (as qmma.cu; block-scaled fp8: e4m3 · scale rounded once in
 * float32, then to bf16). The next step's global loads are issued into
 * registers before this step's products, so they are in flight while the tensor cores
 * run.
 *
 * Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"), lane
 * (g = lane / 4, t = lane % 4): A registers {row g, k 2t..2t+1}, {row g+8, same},
 * {row g, k 2t+8..2t+9}, {row g+8, same}; B {k 2t..2t+1, column g}, {k 2t+8..2t+9, column
 * g}; C c0, c1 at (row g, columns 2t, 2t+1), c2, c3 at row g+8. A W row's and a place's
 * shared row both hold columns in order, so a 32-bit load at (row, k) gives the pair (k,
 * k+1) with k in the low half, as the instruction wants.
 *
 * Grid (slots, W row tiles, place tiles): slot s < act[0] takes expert act[1 + s]; a block
 * whose expert has fewer than min_n places exits (the GEMV takes those); place tile z
 * takes places 64 z, 64 (z + gridDim.z), ... of its expert (an expert has at most T
 * places: each token picks an expert once). */
#include "backend/cuda/fp8_gemv.cuh"
#include "backend/cuda/moe.h"
#include "backend/cuda/qmatmul.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define MM_THREADS 128
#define MM_M 64          /* W rows a block */
#define MM_N 64          /* places a tile */
#define MM_K 64          /* columns a step */
#define MM_LD (MM_K + 8) /* bf16 a shared row */
#define MM_ZMAX 8        /* place tiles of a launch at most */

/* B: elements a quant block, QB: its quant bytes, NIB: 4-bit (byte j holds element j,
 * low nibble, and j + B/2, high), F8: block-scaled e4m3 (fp8b.h's layout: codes as Q8_0's
 * bytes, a float32 scale per 128 x 128 block) */
template <int CODE> struct mm_t;
template <> struct mm_t<HY_CUDA_MOE_BF16> {
    static constexpr int B = 8, QB = 16, NIB = 0, F8 = 0;
};
template <> struct mm_t<HY_CUDA_Q8_0> {
    static constexpr int B = 32, QB = 32, NIB = 0, F8 = 0;
};
template <> struct mm_t<HY_CUDA_Q4_0> {
    static constexpr int B = 32, QB = 16, NIB = 1, F8 = 0;
};
template <> struct mm_t<HY_CUDA_Q4_G128> {
    static constexpr int B = 128, QB = 64, NIB = 1, F8 = 0;
};
template <> struct mm_t<HY_CUDA_MOE_FP8B> {
    static constexpr int B = F8_BLOCK, QB = F8_BLOCK, NIB = 0, F8 = 1;
};

/* A thread's part of a W tile step: 4 pieces of 8 columns, piece j at tile row
 * (tid + 128 j) / 8, columns 8 ((tid + 128 j) % 8). bf16: v the 8 values; quantized: v.x,
 * v.y the 8 quant bytes, v.z the nibble's shift (0 or 4), d the block's scale. */
struct mm_wregs {
    uint4 v[4];
    float d[4];
};
/* A thread's part of an x tile step: 8 float4, j at tile row (tid + 128 j) / 16, columns
 * 4 ((tid + 128 j) % 16). */
struct mm_xregs {
    float4 v[8];
};

template <int CODE>
static __device__ __forceinline__ void mm_load_w(mm_wregs &w, const unsigned char *wm,
                                                 int n_rows, int cols, int r0, int k)
{
    typedef mm_t<CODE> Q;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int idx = threadIdx.x + MM_THREADS * j, r = r0 + (idx >> 3);
        const int c = k * MM_K + 8 * (idx & 7);
        if (r >= n_rows) { /* not stored; zeros keep the products finite */
            w.v[j] = make_uint4(0u, 0u, 0u, 0u);
            w.d[j] = 0.0f;
            continue;
        }
        if (CODE == HY_CUDA_MOE_BF16) {
            w.v[j] = __ldg((const uint4 *)(wm + ((size_t)r * (size_t)cols + (size_t)c) * 2));
            continue;
        }
        const size_t nbr = (size_t)(cols / Q::B), b = (size_t)r * nbr + (size_t)(c / Q::B);
        const int cc = c % Q::B;
        const size_t at = Q::NIB ? b * Q::QB + (size_t)(cc % (Q::B / 2))
                                 : (size_t)r * (size_t)cols + (size_t)c;
        const uint2 q = __ldg((const uint2 *)(wm + at));
        w.v[j] = make_uint4(q.x, q.y, Q::NIB && cc >= Q::B / 2 ? 4u : 0u, 0u);
        const size_t sc = ((size_t)n_rows * nbr * Q::QB + 15) & ~(size_t)15;
        if (Q::F8) /* cols may end in a short block; the decoding's factor (a power of two) */
            w.d[j] = __ldg((const float *)(wm + f8b_scales_at(n_rows, cols)) +
                           (r / Q::B) * f8b_nbc(cols) + c / Q::B) *
                     f8_dec_scale();
        else
            w.d[j] = __half2float(__ushort_as_half(__ldg((const uint16_t *)(wm + sc) + b)));
    }
}

static __device__ __forceinline__ uint32_t mm_pack(float a, float b)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b); /* a in the low half */
    return *reinterpret_cast<uint32_t *>(&h);
}

template <int CODE>
static __device__ __forceinline__ void mm_store_w(uint16_t *ws, const mm_wregs &w)
{
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int idx = threadIdx.x + MM_THREADS * j;
        uint4 o = w.v[j];
        if (CODE != HY_CUDA_MOE_BF16) {
            float f[8], e[8];
            if (mm_t<CODE>::F8) {
                f8_word(w.v[j].x, e);
                f8_word(w.v[j].y, e + 4);
            }
#pragma unroll
            for (int b = 0; b < 8; b++) {
                const uint32_t word = b < 4 ? w.v[j].x : w.v[j].y;
                const uint32_t byte = word >> (8 * (b & 3)) & 0xffu;
                f[b] = mm_t<CODE>::F8    ? e[b]
                       : mm_t<CODE>::NIB ? (float)((int)(byte >> w.v[j].z & 15u) - 8)
                                         : (float)(int8_t)byte;
                /* exact: an fp16 scale times at most 8 bits; fp8: one float32 rounding */
                f[b] *= w.d[j];
            }
            o = make_uint4(mm_pack(f[0], f[1]), mm_pack(f[2], f[3]), mm_pack(f[4], f[5]),
                           mm_pack(f[6], f[7]));
        }
        *(uint4 *)(ws + (idx >> 3) * MM_LD + 8 * (idx & 7)) = o;
    }
}

/* Places p0 .. p0 + pn - 1 (tile rows past pn read as 0); gate_up reads x row rows[p]. */
static __device__ __forceinline__ void mm_load_x(mm_xregs &x, const float *xb,
                                                 const int32_t *rows, int p0, int pn, int cols,
                                                 int k)
{
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int idx = threadIdx.x + MM_THREADS * j, n = idx >> 4;
        if (n >= pn) {
            x.v[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            continue;
        }
        const int64_t src = rows ? __ldg(rows + p0 + n) : p0 + n;
        x.v[j] = __ldg((const float4 *)(xb + src * cols + k * MM_K + 4 * (idx & 15)));
    }
}

static __device__ __forceinline__ void mm_store_x(uint16_t *xs, const mm_xregs &x)
{
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int idx = threadIdx.x + MM_THREADS * j;
        const float4 v = x.v[j];
        *(uint2 *)(xs + (idx >> 4) * MM_LD + 4 * (idx & 15)) =
            make_uint2(mm_pack(v.x, v.y), mm_pack(v.z, v.w));
    }
}

static __device__ __forceinline__ uint32_t mm_ld32(const uint16_t *p)
{
    return *(const uint32_t *)p;
}

static __device__ __forceinline__ void mm_mma(float *c, const uint32_t *a, uint32_t b0,
                                              uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* The warp's products of one staged step: W rows wm .. wm+31, places wn .. wn+31. */
static __device__ __forceinline__ void mm_step(float (*acc)[4][4], const uint16_t *ws,
                                               const uint16_t *xs, int wm, int wn, int g, int t)
{
#pragma unroll
    for (int kk = 0; kk < MM_K; kk += 16) {
        uint32_t b[4][2];
#pragma unroll
        for (int nt = 0; nt < 4; nt++) {
            const uint16_t *xp = xs + (wn + 8 * nt + g) * MM_LD + kk + 2 * t;
            b[nt][0] = mm_ld32(xp);
            b[nt][1] = mm_ld32(xp + 8);
        }
#pragma unroll
        for (int mt = 0; mt < 2; mt++) {
            const uint16_t *wp = ws + (wm + 16 * mt + g) * MM_LD + kk + 2 * t;
            const uint32_t a[4] = {mm_ld32(wp), mm_ld32(wp + 8 * MM_LD), mm_ld32(wp + 8),
                                   mm_ld32(wp + 8 * MM_LD + 8)};
#pragma unroll
            for (int nt = 0; nt < 4; nt++)
                mm_mma(acc[mt][nt], a, b[nt][0], b[nt][1]);
        }
    }
}

template <int CODE, bool GU>
__global__ void __launch_bounds__(MM_THREADS)
    mm_kernel(float *out, const float *x, const unsigned char *w0, const unsigned char *w1,
              size_t stride, int n_rows, int cols, const int32_t *off, const int32_t *rows,
              const int32_t *act, int min_n)
{
    __shared__ __align__(16) uint16_t xs[MM_N * MM_LD];
    __shared__ __align__(16) uint16_t gs[MM_M * MM_LD];
    __shared__ __align__(16) uint16_t us[GU ? MM_M * MM_LD : 8];
    if ((int)blockIdx.x >= act[0])
        return;
    const int e = act[1 + blockIdx.x], pb = off[e], n = off[e + 1] - pb;
    if (n < min_n)
        return;
    const unsigned char *wg = w0 + (size_t)e * stride, *wu = GU ? w1 + (size_t)e * stride : w0;
    const int r0 = blockIdx.y * MM_M, nk = cols / MM_K;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int wm = (warp & 1) * 32, wn = (warp >> 1) * 32;
    for (int z = blockIdx.z; z * MM_N < n; z += gridDim.z) {
        const int p0 = pb + z * MM_N, pn = min(MM_N, n - z * MM_N);
        float ag[2][4][4] = {}, au[2][4][4] = {};
        mm_xregs xr;
        mm_wregs gr, ur;
        mm_load_x(xr, x, GU ? rows : NULL, p0, pn, cols, 0);
        mm_load_w<CODE>(gr, wg, n_rows, cols, r0, 0);
        if (GU)
            mm_load_w<CODE>(ur, wu, n_rows, cols, r0, 0);
#pragma unroll 1
        for (int k = 0; k < nk; k++) {
            __syncthreads(); /* the previous step's (or tile's) products are done */
            mm_store_x(xs, xr);
            mm_store_w<CODE>(gs, gr);
            if (GU)
                mm_store_w<CODE>(us, ur);
            __syncthreads();
            if (k + 1 < nk) {
                mm_load_x(xr, x, GU ? rows : NULL, p0, pn, cols, k + 1);
                mm_load_w<CODE>(gr, wg, n_rows, cols, r0, k + 1);
                if (GU)
                    mm_load_w<CODE>(ur, wu, n_rows, cols, r0, k + 1);
            }
            mm_step(ag, gs, xs, wm, wn, g, t);
            if (GU)
                mm_step(au, us, xs, wm, wn, g, t);
        }
#pragma unroll
        for (int mt = 0; mt < 2; mt++)
#pragma unroll
            for (int nt = 0; nt < 4; nt++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int r = r0 + wm + 16 * mt + g + 8 * (i >> 1);
                    const int pl = wn + 8 * nt + 2 * t + (i & 1);
                    if (r >= n_rows || pl >= pn)
                        continue;
                    float v = ag[mt][nt][i];
                    if (GU)
                        v = v / (1.0f + expf(-v)) * au[mt][nt][i];
                    out[(int64_t)(p0 + pl) * n_rows + r] = v;
                }
    }
}

extern "C" bool hy_cuda_moe_mma_fits(int64_t n_rows, int64_t cols)
{
    return cols >= MM_K && cols % MM_K == 0 && cols <= INT32_MAX && n_rows >= 1 &&
           n_rows <= INT32_MAX;
}

template <int CODE>
static void mm(cudaStream_t st, float *out, const float *x, const void *w0, const void *w1,
               size_t stride, int64_t n_rows, int64_t cols, bool gate_up, const int32_t *off,
               const int32_t *rows, const int32_t *act, int slots, int max_places, int min_n)
{
    const int ztiles = (max_places + MM_N - 1) / MM_N;
    const dim3 grid((unsigned)slots, (unsigned)((n_rows + MM_M - 1) / MM_M),
                    (unsigned)(ztiles < MM_ZMAX ? ztiles : MM_ZMAX));
    const unsigned char *g = (const unsigned char *)w0, *u = (const unsigned char *)w1;
    if (gate_up)
        mm_kernel<CODE, true><<<grid, MM_THREADS, 0, st>>>(
            out, x, g, u, stride, (int)n_rows, (int)cols, off, rows, act, min_n);
    else
        mm_kernel<CODE, false><<<grid, MM_THREADS, 0, st>>>(
            out, x, g, NULL, stride, (int)n_rows, (int)cols, off, rows, act, min_n);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_moe_mma(cudaStream_t st, float *out, const float *x, const void *w0,
                                const void *w1, size_t stride, int code, int64_t n_rows,
                                int64_t cols, bool gate_up, const int32_t *off,
                                const int32_t *rows, const int32_t *act, int slots,
                                int max_places, int min_n)
{
    if (slots <= 0 || max_places < min_n)
        return;
    if (!hy_cuda_moe_mma_fits(n_rows, cols) || ((uintptr_t)x & 15) || ((uintptr_t)w0 & 15) ||
        (gate_up && ((uintptr_t)w1 & 15)) || stride % 16)
        hy_cuda_fail(__FILE__, __LINE__, "hy_cuda_moe_mma_fits", "bad grouped GEMM call");
    switch (code) {
    case HY_CUDA_MOE_BF16:
        mm<HY_CUDA_MOE_BF16>(st, out, x, w0, w1, stride, n_rows, cols, gate_up, off, rows, act,
                             slots, max_places, min_n);
        break;
    case HY_CUDA_Q8_0:
        mm<HY_CUDA_Q8_0>(st, out, x, w0, w1, stride, n_rows, cols, gate_up, off, rows, act,
                         slots, max_places, min_n);
        break;
    case HY_CUDA_Q4_0:
        mm<HY_CUDA_Q4_0>(st, out, x, w0, w1, stride, n_rows, cols, gate_up, off, rows, act,
                         slots, max_places, min_n);
        break;
    case HY_CUDA_Q4_G128:
        mm<HY_CUDA_Q4_G128>(st, out, x, w0, w1, stride, n_rows, cols, gate_up, off, rows, act,
                            slots, max_places, min_n);
        break;
    case HY_CUDA_MOE_FP8B:
        mm<HY_CUDA_MOE_FP8B>(st, out, x, w0, w1, stride, n_rows, cols, gate_up, off, rows, act,
                             slots, max_places, min_n);
        break;
    default:
        hy_cuda_fail(__FILE__, __LINE__, "hy_cuda_moe_mma", "weight type not taken");
    }
}
