/* moe_fp8.cu: the grouped expert GEMV for block-scaled fp8 stacks (fp8b.h has the contract,
 * moe.h the grouped ops' one).
 *
 * Grid (slot, W rows / MF_WARPS): slot s < act[0] takes expert act[1 + s], and the last
 * column the shared expert when it rides along (moe.h hy_moe_group_of); a warp takes one
 * W row (of gate and up together for gate_up) and up to MF_NT of the expert's places a
 * pass, so an expert with at most MF_NT places (every decode step's) reads its rows once.
 * Lane l takes the row's 16-byte pieces l, l + 32, ... (16 codes in one 128-column block;
 * two pieces in flight a matrix, gate's and up's loaded together): decoded exactly
 * (fp8_gemv.cuh), multiplied with each place's 16 x values (one load for both matrices)
 * into a float32 piece sum, which is added to the place's sum times the piece's scale. Xor
 * shuffles sum the lanes; lane 0 writes. A place's arithmetic does
 * not depend on how many places its expert has (the batch-invariant mode relies on it). */
#include "backend/cuda/fp8_gemv.cuh"
#include "backend/cuda/fp8b.h"
#include "backend/cuda/moe.h"

#define MF_WARPS 8 /* W rows a block: a warp a row */
#define MF_NT 8    /* places a pass */

/* acc[m][t] += row r of matrix m < NM (gate, and up for gate_up: both rows' pieces loaded
 * together, each x load serving both) · place t's x row xr[t], t < nt, over a lane's
 * pieces; then the warp's sums (xor shuffles: every lane holds them). */
template <int NM>
static __device__ __forceinline__ void mf_rows(float (&acc)[NM][MF_NT],
                                               const unsigned char *const (&wm)[NM],
                                               const float *const (&bs)[NM], int cols, int r,
                                               const float *const (&xr)[MF_NT], int nt)
{
    const int n16 = cols / 16;
#pragma unroll 2
    for (int k = threadIdx.x & 31; k < n16; k += 32) {
        uint4 v[NM];
#pragma unroll
        for (int m = 0; m < NM; m++)
            v[m] = ld_stream((const uint4 *)(wm[m] + (size_t)r * (size_t)cols) + k);
        float w[NM][16], s[NM];
#pragma unroll
        for (int m = 0; m < NM; m++) {
            f8_word(v[m].x, w[m]);
            f8_word(v[m].y, w[m] + 4);
            f8_word(v[m].z, w[m] + 8);
            f8_word(v[m].w, w[m] + 12);
            s[m] = __ldg(bs[m] + k / (F8_BLOCK / 16));
        }
#pragma unroll
        for (int t = 0; t < MF_NT; t++) {
            if (t >= nt) /* the same for the whole warp */
                break;
            const float4 *x = (const float4 *)(xr[t] + 16 * k);
            float p[NM];
#pragma unroll
            for (int m = 0; m < NM; m++)
                p[m] = 0.0f;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float4 a = __ldg(x + i);
#pragma unroll
                for (int m = 0; m < NM; m++) {
                    p[m] = fmaf(w[m][4 * i], a.x, p[m]);
                    p[m] = fmaf(w[m][4 * i + 1], a.y, p[m]);
                    p[m] = fmaf(w[m][4 * i + 2], a.z, p[m]);
                    p[m] = fmaf(w[m][4 * i + 3], a.w, p[m]);
                }
            }
#pragma unroll
            for (int m = 0; m < NM; m++)
                acc[m][t] = fmaf(s[m], p[m], acc[m][t]);
        }
    }
#pragma unroll
    for (int m = 0; m < NM; m++)
#pragma unroll
        for (int t = 0; t < MF_NT; t++)
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                acc[m][t] += __shfl_xor_sync(0xffffffffu, acc[m][t], o);
}

template <bool GU>
__global__ void __launch_bounds__(32 * MF_WARPS)
    mf_gemv_kernel(float *out, const float *x, const unsigned char *w0, const unsigned char *w1,
                   size_t stride, int n_rows, int cols, const int32_t *off, const int32_t *rows,
                   const int32_t *act, int max_n, hy_cuda_moe_sh sh)
{
    int e, p0, n;
    const int r = blockIdx.y * MF_WARPS + (threadIdx.x >> 5);
    if (!hy_moe_group_of(off, act, max_n, sh, &e, &p0, &n) || r >= n_rows)
        return;
    const bool shared = sh.e >= 0 && blockIdx.x == gridDim.x - 1; /* input: token p - p0 */
    const size_t sat = f8b_scales_at(n_rows, cols);
    const int64_t srow = (int64_t)(r / F8_BLOCK) * f8b_nbc(cols);
    constexpr int NM = GU ? 2 : 1;
    const unsigned char *wm[NM];
    const float *bs[NM];
#pragma unroll
    for (int m = 0; m < NM; m++) {
        wm[m] = (m ? w1 : w0) + (size_t)e * stride;
        bs[m] = (const float *)(wm[m] + sat) + srow;
    }
    for (int i0 = 0; i0 < n; i0 += MF_NT) {
        const int nt = n - i0 < MF_NT ? n - i0 : MF_NT;
        const float *xr[MF_NT];
#pragma unroll
        for (int t = 0; t < MF_NT; t++) {
            const int p = p0 + i0 + (t < nt ? t : nt - 1);
            xr[t] = x + (int64_t)(GU ? (shared ? p - p0 : rows[p]) : p) * cols;
        }
        float a[NM][MF_NT] = {};
        mf_rows<NM>(a, wm, bs, cols, r, xr, nt);
        if ((threadIdx.x & 31) == 0)
            for (int t = 0; t < nt; t++) {
                float v = a[0][t] * f8_dec_scale();
                if (GU)
                    v = v / (1.0f + expf(-v)) * (a[NM - 1][t] * f8_dec_scale());
                out[(int64_t)(p0 + i0 + t) * n_rows + r] = v;
            }
    }
}

extern "C" void hy_cuda_moe_fp8b_gemv(cudaStream_t st, float *out, const float *x, const void *w0,
                                      const void *w1, size_t stride, int64_t n_rows,
                                      int64_t cols, bool gate_up, const int32_t *off,
                                      const int32_t *rows, const int32_t *act, int slots,
                                      int max_n, struct hy_cuda_moe_sh sh)
{
    if (slots <= 0 && sh.e < 0)
        return;
    if (cols < HY_CUDA_FP8B_COLS || cols % HY_CUDA_FP8B_COLS || cols > INT32_MAX ||
        n_rows > INT32_MAX || ((uintptr_t)x & 15) || ((uintptr_t)w0 & 15) || stride % 16 ||
        (gate_up && ((uintptr_t)w1 & 15)))
        hy_cuda_fail(__FILE__, __LINE__, "hy_cuda_moe_fp8b_gemv", "bad fp8b expert GEMV call");
    const dim3 grid((unsigned)(slots + (sh.e >= 0)),
                    (unsigned)((n_rows + MF_WARPS - 1) / MF_WARPS));
    const unsigned char *g = (const unsigned char *)w0, *u = (const unsigned char *)w1;
    if (gate_up)
        mf_gemv_kernel<true><<<grid, 32 * MF_WARPS, 0, st>>>(out, x, g, u, stride, (int)n_rows,
                                                            (int)cols, off, rows, act, max_n, sh);
    else
        mf_gemv_kernel<false><<<grid, 32 * MF_WARPS, 0, st>>>(out, x, g, NULL, stride,
                                                             (int)n_rows, (int)cols, off, rows,
                                                             act, max_n, sh);
    HY_CUDA_CHECK_LAUNCH();
}
