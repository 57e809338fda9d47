/* moe_mmvq.cu: the grouped GEMV of the experts outside the batch-invariant mode: quantized
 * ones from int8 activations (mmvq_dot.cuh's arithmetic, shared with the dense qmmvq.cu),
 * bf16 ones from float32 x (moe.h has the contract).
 *
 * Grid (slot, row tile): slot s < act[0] takes expert act[1 + s]; a block is GM_WARPS
 * warps, each owning R consecutive rows of that expert's matrix (gate and up together for
 * gate_up). A warp's lanes take the rows' 16-byte pieces in turn (piece k = lane, lane +
 * 32, ...), so each weight byte is read once, with R (2R for gate_up) independent 16-byte
 * loads in flight a lane, and multiplied with up to NT of the expert's places at once (all
 * of them at a decode step: an expert has at most T places); more places go round again in
 * groups of NT. A (row, place) sum is the lane's pieces in order, then the warp's xor
 * shuffles 16, 8, 4, 2, 1: the same bits whichever other places the expert has. */
#include "backend/cuda/gemv_util.cuh"
#include "backend/cuda/mmvq_dot.cuh"
#include "backend/cuda/moe.h"
#include "backend/cuda/qmmvq.h"

#define GM_WARPS 4
#define GM_R 4

/* How a kernel of type QT reads its inputs: the int8 activations of qmmvq.h for the quant
 * types (mmvq_dot.cuh's arithmetic), float32 x for bf16 weights (8 of them a piece). */
struct gm_in {
    mv_x q;          /* quantized x (quant types) */
    const float *xf; /* float32 x (bf16) */
    int cols;
};

template <int QT> struct gm_pol {
    typedef mv_w W;
    typedef mv_xp XP;
    struct X {
        const int8_t *q;
        const float *d, *s;
    };
    static __device__ __forceinline__ int pieces(int cols)
    {
        return cols / mv_traits<QT>::B * mv_traits<QT>::QB / 16;
    }
    static __device__ __forceinline__ int blocks(int cols) { return cols / mv_traits<QT>::B; }
    static __device__ __forceinline__ size_t qbytes(int n_rows, int cols)
    {
        return ((size_t)n_rows * pieces(cols) * 16 + 15) & ~(size_t)15;
    }
    static __device__ __forceinline__ X row(const gm_in &in, int r)
    {
        X x = {in.q.q + (int64_t)r * in.cols, in.q.d + (int64_t)r * (in.cols / 32),
               in.q.s + (int64_t)r * (in.cols / 16)};
        return x;
    }
    static __device__ __forceinline__ W split(uint4 v) { return mv_split<QT>(v); }
    static __device__ __forceinline__ float scale(const unsigned char *m, size_t qb, int nblk,
                                                  int r, int k)
    {
        return mv_h2f(__ldg((const uint16_t *)(m + qb) + (size_t)r * nblk + mv_block<QT>(k)));
    }
    static __device__ __forceinline__ XP load(const X &x, int k)
    {
        return mv_load_x<QT>(x.q, x.d, x.s, k);
    }
    static __device__ __forceinline__ float fma(float acc, float d, const W &w, const XP &x)
    {
        return mv_fma<QT>(acc, d, w, x);
    }
};

template <> struct gm_pol<HY_CUDA_MOE_BF16> {
    typedef uint4 W;
    struct XP {
        float4 a, b;
    };
    struct X {
        const float *f;
    };
    static __device__ __forceinline__ int pieces(int cols) { return cols / 8; }
    static __device__ __forceinline__ int blocks(int) { return 0; }
    static __device__ __forceinline__ size_t qbytes(int, int) { return 0; }
    static __device__ __forceinline__ X row(const gm_in &in, int r)
    {
        X x = {in.xf + (int64_t)r * in.cols};
        return x;
    }
    static __device__ __forceinline__ W split(uint4 v) { return v; }
    static __device__ __forceinline__ float scale(const unsigned char *, size_t, int, int, int)
    {
        return 1.0f;
    }
    static __device__ __forceinline__ XP load(const X &x, int k)
    {
        XP p = {__ldg((const float4 *)(x.f + 8 * k)), __ldg((const float4 *)(x.f + 8 * k + 4))};
        return p;
    }
    /* acc + the 8 products, in order (bf16 to float32 exactly: the bits shifted up) */
    static __device__ __forceinline__ float fma(float acc, float, const W &w, const XP &x)
    {
        const float v[8] = {__uint_as_float(w.x << 16), __uint_as_float(w.x & 0xffff0000u),
                            __uint_as_float(w.y << 16), __uint_as_float(w.y & 0xffff0000u),
                            __uint_as_float(w.z << 16), __uint_as_float(w.z & 0xffff0000u),
                            __uint_as_float(w.w << 16), __uint_as_float(w.w & 0xffff0000u)};
        acc = fmaf(v[0], x.a.x, acc);
        acc = fmaf(v[1], x.a.y, acc);
        acc = fmaf(v[2], x.a.z, acc);
        acc = fmaf(v[3], x.a.w, acc);
        acc = fmaf(v[4], x.b.x, acc);
        acc = fmaf(v[5], x.b.y, acc);
        acc = fmaf(v[6], x.b.z, acc);
        return fmaf(v[7], x.b.w, acc);
    }
};

template <int QT, int NT, bool GU>
__global__ void __launch_bounds__(32 * GM_WARPS)
    gm_kernel(float *out, gm_in in, const int32_t *in_row, const unsigned char *w0,
              const unsigned char *w1, size_t stride, int n_rows, const int32_t *off,
              const int32_t *act, int max_n, hy_cuda_moe_sh sh)
{
    typedef gm_pol<QT> P;
    int e, p0, n;
    const int lane = threadIdx.x & 31;
    const int row0 = ((int)blockIdx.y * GM_WARPS + (threadIdx.x >> 5)) * GM_R;
    if (!hy_moe_group_of(off, act, max_n, sh, &e, &p0, &n) || row0 >= n_rows)
        return;
    const bool shared = sh.e >= 0 && blockIdx.x == gridDim.x - 1;
    const int n16 = P::pieces(in.cols), nblk = P::blocks(in.cols);
    const size_t qb = P::qbytes(n_rows, in.cols);
    const unsigned char *g = w0 + (size_t)e * stride, *u = GU ? w1 + (size_t)e * stride : g;
    const uint4 *wg[GM_R], *wu[GM_R];
#pragma unroll
    for (int r = 0; r < GM_R; r++) {
        const int rr = gemv_row(row0, r, n_rows);
        wg[r] = (const uint4 *)g + (size_t)rr * n16;
        wu[r] = (const uint4 *)u + (size_t)rr * n16;
    }
    for (int i0 = 0; i0 < n; i0 += NT) {
        const int nt = n - i0 < NT ? n - i0 : NT;
        typename P::X xr[NT];
#pragma unroll
        for (int t = 0; t < NT; t++) { /* past nt: the last place again (read, not stored) */
            const int p = p0 + i0 + (t < nt ? t : nt - 1);
            xr[t] = P::row(in, in_row ? (shared ? p - p0 : in_row[p]) : p);
        }
        float a[GM_R][NT], b[GM_R][NT];
        gemv_zero(a);
        gemv_zero(b);
        for (int k = lane; k < n16; k += 32) {
            typename P::W w[GM_R], v[GM_R];
            float d[GM_R], dv[GM_R];
#pragma unroll
            for (int r = 0; r < GM_R; r++) {
                w[r] = P::split(ld_stream(wg[r] + k));
                if (GU)
                    v[r] = P::split(ld_stream(wu[r] + k));
            }
#pragma unroll
            for (int r = 0; r < GM_R; r++) {
                const int rr = gemv_row(row0, r, n_rows);
                d[r] = P::scale(g, qb, nblk, rr, k);
                dv[r] = GU ? P::scale(u, qb, nblk, rr, k) : 0.0f;
            }
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const typename P::XP xp = P::load(xr[t], k);
#pragma unroll
                for (int r = 0; r < GM_R; r++) {
                    a[r][t] = P::fma(a[r][t], d[r], w[r], xp);
                    if (GU)
                        b[r][t] = P::fma(b[r][t], dv[r], v[r], xp);
                }
            }
        }
#pragma unroll
        for (int r = 0; r < GM_R; r++)
#pragma unroll
            for (int t = 0; t < NT; t++) {
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) {
                    a[r][t] += __shfl_xor_sync(0xffffffffu, a[r][t], o);
                    if (GU)
                        b[r][t] += __shfl_xor_sync(0xffffffffu, b[r][t], o);
                }
                float y = a[r][t];
                if (GU)
                    y = y / (1.0f + expf(-y)) * b[r][t];
                if (lane == (r * NT + t) % 32 && t < nt && row0 + r < n_rows)
                    out[(int64_t)(p0 + i0 + t) * n_rows + row0 + r] = y;
            }
    }
}

extern "C" bool hy_cuda_moe_mmvq_fits(int code, int64_t cols, size_t stride)
{
    if (cols < 32 || cols > INT32_MAX / 2 || stride % 16)
        return false;
    if (code == HY_CUDA_MOE_BF16)
        return cols % 8 == 0;
    return (code == HY_CUDA_Q8_0 || code == HY_CUDA_Q4_0 || code == HY_CUDA_Q4_G128) &&
           cols % hy_cuda_q_block(code) == 0 && cols % 32 == 0;
}

template <int QT, int NT>
static void gm_launch(cudaStream_t st, float *out, const gm_in &in, const int32_t *in_row,
                      const void *w0, const void *w1, size_t stride, int64_t n_rows,
                      const int32_t *off, const int32_t *act, int slots, int max_n,
                      hy_cuda_moe_sh sh)
{
    const dim3 grid((unsigned)(slots + (sh.e >= 0)),
                    (unsigned)((n_rows + GM_WARPS * GM_R - 1) / (GM_WARPS * GM_R)));
    const unsigned char *g = (const unsigned char *)w0, *u = (const unsigned char *)w1;
    if (w1)
        gm_kernel<QT, NT, true><<<grid, 32 * GM_WARPS, 0, st>>>(out, in, in_row, g, u, stride,
                                                                (int)n_rows, off, act, max_n, sh);
    else
        gm_kernel<QT, NT, false><<<grid, 32 * GM_WARPS, 0, st>>>(out, in, in_row, g, g, stride,
                                                                 (int)n_rows, off, act, max_n, sh);
    HY_CUDA_CHECK_LAUNCH();
}

/* NT: the places multiplied together, as many as an expert can have (at most T), up to 4:
 * a decode step of one sequence has 1, a 64-sequence step 2-6 an expert (those with more
 * than 4 read their weights a second time, from L2). */
template <int QT>
static void gm_nt(cudaStream_t st, float *out, const gm_in &in, const int32_t *in_row,
                  const void *w0, const void *w1, size_t stride, int64_t n_rows,
                  const int32_t *off, const int32_t *act, int slots, int max_n, int max_places,
                  hy_cuda_moe_sh sh)
{
    const int most = max_places < max_n ? max_places : max_n;
    if (most <= 1)
        gm_launch<QT, 1>(st, out, in, in_row, w0, w1, stride, n_rows, off, act, slots, max_n, sh);
    else if (most == 2)
        gm_launch<QT, 2>(st, out, in, in_row, w0, w1, stride, n_rows, off, act, slots, max_n, sh);
    else
        gm_launch<QT, 4>(st, out, in, in_row, w0, w1, stride, n_rows, off, act, slots, max_n, sh);
}

extern "C" void hy_cuda_moe_mmvq(cudaStream_t st, float *out, const void *x, int n_in,
                                 const int32_t *in_row, const void *w0, const void *w1,
                                 size_t stride, int code, int64_t n_rows, int64_t cols,
                                 const int32_t *off, const int32_t *act, int slots, int max_n,
                                 int max_places, hy_cuda_moe_sh sh)
{
    if (slots <= 0 && sh.e < 0)
        return;
    if (!hy_cuda_moe_mmvq_fits(code, cols, stride) || ((uintptr_t)x & 15) ||
        ((uintptr_t)w0 & 15) || ((uintptr_t)w1 & 15))
        hy_cuda_fail(__FILE__, __LINE__, "hy_cuda_moe_mmvq_fits", "bad grouped mmvq shape");
    gm_in in = {mv_parts(x, n_in, (int)cols), (const float *)x, (int)cols};
    if (code == HY_CUDA_MOE_BF16)
        gm_nt<HY_CUDA_MOE_BF16>(st, out, in, in_row, w0, w1, stride, n_rows, off, act, slots,
                                max_n, max_places, sh);
    else if (code == HY_CUDA_Q8_0)
        gm_nt<HY_CUDA_Q8_0>(st, out, in, in_row, w0, w1, stride, n_rows, off, act, slots, max_n,
                            max_places, sh);
    else if (code == HY_CUDA_Q4_0)
        gm_nt<HY_CUDA_Q4_0>(st, out, in, in_row, w0, w1, stride, n_rows, off, act, slots, max_n,
                            max_places, sh);
    else
        gm_nt<HY_CUDA_Q4_G128>(st, out, in, in_row, w0, w1, stride, n_rows, off, act, slots,
                               max_n, max_places, sh);
}
