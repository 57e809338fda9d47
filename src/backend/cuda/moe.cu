/* moe.cu: the mixture-of-experts kernels (moe.h has what each does and why). */
#include "backend/cuda/moe.h"
#include "backend/cuda/qmatmul.h"

#include <cuda_fp16.h>

#define GEMV_WARPS 8 /* output rows a block */
#define GEMV_NT 4    /* places multiplied together */

/* a beats b (backend/cpu/moe.c's order): larger, NaN below every number, equal to the
 * lower index. */
static __device__ __forceinline__ bool beats(float a, int ia, float b, int ib)
{
    if (isnan(a) || isnan(b))
        return !isnan(a) && isnan(b) ? true : isnan(a) && isnan(b) && ia < ib;
    return a > b || (a == b && ia < ib);
}

static __device__ __forceinline__ float sigm(float z)
{
    return 1.0f / (1.0f + expf(-z));
}

/* Token t's k choices and weights, by one warp (lane: the thread's). */
static __device__ void route_token(int32_t *ids, float *w, const float *logits,
                                   const float *bias, int t, int lane, int E, int k,
                                   float scale)
{
    const float *l = logits + (int64_t)t * E;
    uint32_t taken = 0; /* bit i: expert lane + 32 i chosen already */
    for (int j = 0; j < k; j++) {
        float bv = 0.0f;
        int bi = -1;
        for (int i = 0, e = lane; e < E; i++, e += 32) {
            if (taken >> i & 1)
                continue;
            const float s = sigm(l[e]);
            const float c = bias ? s + bias[e] : s;
            if (bi < 0 || beats(c, e, bv, bi))
                bv = c, bi = e;
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (oi >= 0 && (bi < 0 || beats(ov, oi, bv, bi)))
                bv = ov, bi = oi;
        }
        if ((bi & 31) == lane)
            taken |= 1u << (bi >> 5);
        if (lane == 0)
            ids[(int64_t)t * k + j] = bi;
    }
    if (lane != 0)
        return;
    int32_t *id = ids + (int64_t)t * k;
    float *wt = w + (int64_t)t * k, sum = 0.0f;
    for (int j = 0; j < k; j++) {
        wt[j] = sigm(l[id[j]]); /* the unbiased score */
        sum += wt[j];
    }
    for (int j = 0; j < k; j++)
        wt[j] = wt[j] / (sum + 1e-20f) * scale;
}

/* Exclusive scan of v over the block (blockDim.x a multiple of 32, <= 1024); the total in
 * *total. Every thread calls it. */
static __device__ int block_scan(int v, int *total)
{
    __shared__ int warp_sum[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    int x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o)
            x += y;
    }
    __syncthreads(); /* warp_sum may still be read by a previous call */
    if (lane == 31)
        warp_sum[warp] = x;
    __syncthreads();
    if (warp == 0) {
        int s = lane < nw ? warp_sum[lane] : 0;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o)
                s += y;
        }
        if (lane < nw)
            warp_sum[lane] = s; /* inclusive over warps */
    }
    __syncthreads();
    *total = warp_sum[nw - 1];
    return x - v + (warp > 0 ? warp_sum[warp - 1] : 0);
}

/* The grouping of the P pairs, by one block (blockDim.x >= E, a multiple of 32). */
static __device__ void group_pairs(const int32_t *ids, int P, int E, int k, int32_t *off,
                                   int32_t *rows, int32_t *sel, int32_t *act)
{
    const int e = threadIdx.x;
    int n = 0;
    if (e < E)
        for (int i = 0; i < P; i++)
            n += ids[i] == e;
    int total = 0, n_act = 0;
    int base = block_scan(n, &total);
    const int slot = block_scan(n > 0, &n_act);
    if (e >= E)
        return;
    off[e] = base;
    if (e == E - 1)
        off[E] = total;
    if (n > 0)
        act[1 + slot] = e;
    if (e == 0)
        act[0] = n_act;
    for (int i = 0; i < P && n > 0; i++)
        if (ids[i] == e) {
            rows[base] = i / k;
            sel[i] = base++;
            n--;
        }
}

/* Routing then grouping in one block: the grouping needs every token's choices, which a
 * block sees after its barrier (a decode step's MoE layer is then one launch shorter). */
__global__ void __launch_bounds__(1024)
    route_group_kernel(int32_t *ids, float *w, const float *logits, const float *bias, int T,
                       int E, int k, float scale, int32_t *off, int32_t *rows, int32_t *sel,
                       int32_t *act)
{
    const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    for (int t = threadIdx.x >> 5; t < T; t += nw)
        route_token(ids, w, logits, bias, t, lane, E, k, scale);
    __syncthreads(); /* ids of every token written, visible to the block */
    group_pairs(ids, T * k, E, k, off, rows, sel, act);
}

/* A unit of a row: 8 bf16 (16 bytes), or one quant block (qmatmul.h's split layout). */
template <int CODE> struct wtraits;
template <> struct wtraits<HY_CUDA_MOE_BF16> {
    static constexpr int B = 8, QB = 16, HI = 0;
};
template <> struct wtraits<HY_CUDA_Q8_0> {
    static constexpr int B = 32, QB = 32, HI = 0;
};
template <> struct wtraits<HY_CUDA_Q4_0> {
    static constexpr int B = 32, QB = 16, HI = 16;
};
template <> struct wtraits<HY_CUDA_Q4_G128> {
    static constexpr int B = 128, QB = 64, HI = 64;
};

static __device__ __forceinline__ float dot4(float4 a, const float *w)
{
    return a.x * w[0] + a.y * w[1] + a.z * w[2] + a.w * w[3];
}

/* The values of word u (4 bytes) of a block: Q8_0 4 int8; 4-bit: low nibbles (elements
 * 0-3 of the word), then high (elements HI + 0-3), each minus 8. */
template <int CODE> static __device__ __forceinline__ void unpack(uint32_t u, float *v)
{
#pragma unroll
    for (int b = 0; b < 4; b++) {
        const uint32_t byte = u >> (8 * b) & 0xffu;
        if (CODE == HY_CUDA_Q8_0) {
            v[b] = (float)(int8_t)byte;
        } else {
            v[b] = (float)((int)(byte & 15u) - 8);
            v[4 + b] = (float)((int)(byte >> 4) - 8);
        }
    }
}

/* acc[t] += row r's unit u (unscaled quants) · the matching values of place t's input row
 * xr[t], for t < nt. */
template <int CODE>
static __device__ __forceinline__ void unit_dot(const unsigned char *wm, int64_t cols, int64_t r,
                                                int64_t u, const float *const *xr, int nt,
                                                float *acc)
{
    using W = wtraits<CODE>;
    if (CODE == HY_CUDA_MOE_BF16) {
        const uint4 q = *(const uint4 *)(wm + ((size_t)r * (size_t)cols + (size_t)u * 8) * 2);
        const uint32_t h[4] = {q.x, q.y, q.z, q.w};
        float v[8];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[2 * i] = __uint_as_float(h[i] << 16);
            v[2 * i + 1] = __uint_as_float(h[i] & 0xffff0000u);
        }
#pragma unroll
        for (int t = 0; t < GEMV_NT; t++)
            if (t < nt) {
                const float4 *x = (const float4 *)(xr[t] + u * 8);
                acc[t] += dot4(x[0], v) + dot4(x[1], v + 4);
            }
        return;
    }
    const unsigned char *q = wm + (size_t)(r * (cols / W::B) + u) * W::QB;
#pragma unroll
    for (int wi = 0; wi < W::QB / 4; wi++) {
        const uint32_t word = *(const uint32_t *)(q + 4 * wi);
        float v[8];
        unpack<CODE>(word, v);
#pragma unroll
        for (int t = 0; t < GEMV_NT; t++)
            if (t < nt) {
                const float *x = xr[t] + u * W::B + 4 * wi;
                acc[t] += dot4(*(const float4 *)x, v);
                if (W::HI)
                    acc[t] += dot4(*(const float4 *)(x + W::HI), v + 4);
            }
    }
}

/* The scale of unit u of row r (1 for bf16). */
template <int CODE>
static __device__ __forceinline__ float unit_scale(const unsigned char *wm, int64_t n_rows,
                                                   int64_t cols, int64_t r, int64_t u)
{
    using W = wtraits<CODE>;
    if (CODE == HY_CUDA_MOE_BF16)
        return 1.0f;
    const int64_t nbr = cols / W::B, nb = n_rows * nbr;
    const size_t at = ((size_t)nb * W::QB + 15) & ~(size_t)15;
    const uint16_t h = ((const uint16_t *)(wm + at))[r * nbr + u];
    return __half2float(__ushort_as_half(h));
}

/* One warp's row r of one expert against up to GEMV_NT places: acc[t] = W[r] · xr[t]. */
template <int CODE>
static __device__ __forceinline__ void row_dot(const unsigned char *wm, int64_t n_rows,
                                               int64_t cols, int64_t r, const float *const *xr,
                                               int nt, float *acc)
{
    using W = wtraits<CODE>;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int t = 0; t < GEMV_NT; t++)
        acc[t] = 0.0f;
    for (int64_t u = lane; u < cols / W::B; u += 32) {
        float part[GEMV_NT];
#pragma unroll
        for (int t = 0; t < GEMV_NT; t++)
            part[t] = 0.0f;
        unit_dot<CODE>(wm, cols, r, u, xr, nt, part);
        const float d = unit_scale<CODE>(wm, n_rows, cols, r, u);
#pragma unroll
        for (int t = 0; t < GEMV_NT; t++)
            acc[t] += d * part[t];
    }
#pragma unroll
    for (int t = 0; t < GEMV_NT; t++)
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], o);
}

template <int CODE, bool GU>
__global__ void gemv_kernel(float *out, const float *x, const unsigned char *w0,
                            const unsigned char *w1, size_t stride, int64_t n_rows, int64_t cols,
                            const int32_t *off, const int32_t *rows, const int32_t *act,
                            int max_n, hy_cuda_moe_sh sh)
{
    int e, p0, n;
    const int64_t r = (int64_t)blockIdx.y * GEMV_WARPS + (threadIdx.x >> 5);
    if (!hy_moe_group_of(off, act, max_n, sh, &e, &p0, &n) || r >= n_rows)
        return;
    const bool shared = sh.e >= 0 && blockIdx.x == gridDim.x - 1;
    const unsigned char *g = w0 + (size_t)e * stride, *u = GU ? w1 + (size_t)e * stride : NULL;
    for (int i0 = 0; i0 < n; i0 += GEMV_NT) {
        const int nt = n - i0 < GEMV_NT ? n - i0 : GEMV_NT;
        const float *xr[GEMV_NT];
#pragma unroll
        for (int t = 0; t < GEMV_NT; t++) {
            const int p = p0 + i0 + (t < nt ? t : nt - 1);
            xr[t] = x + (int64_t)(GU ? (shared ? p - p0 : rows[p]) : p) * cols;
        }
        float a[GEMV_NT], b[GEMV_NT];
        row_dot<CODE>(g, n_rows, cols, r, xr, nt, a);
        if (GU)
            row_dot<CODE>(u, n_rows, cols, r, xr, nt, b);
        if ((threadIdx.x & 31) == 0)
            for (int t = 0; t < nt; t++) {
                float v = a[t];
                if (GU)
                    v = v / (1.0f + expf(-v)) * b[t];
                out[(int64_t)(p0 + i0 + t) * n_rows + r] = v;
            }
    }
}

__global__ void combine_kernel(float *out, const float *acc, const float *y, const int32_t *sel,
                               const float *w, int k, int64_t d)
{
    __shared__ int order[HY_CUDA_MOE_MAX_K];
    const int t = blockIdx.x;
    const int32_t *s = sel + (int64_t)t * k;
    if (threadIdx.x == 0) { /* the choices by place: experts ascending */
        for (int j = 0; j < k; j++) {
            int i = j;
            while (i > 0 && s[order[i - 1]] > s[j]) {
                order[i] = order[i - 1];
                i--;
            }
            order[i] = j;
        }
    }
    __syncthreads();
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
        float v = acc[(int64_t)t * d + c];
        for (int i = 0; i < k; i++) {
            const int j = order[i];
            v = __fadd_rn(v, __fmul_rn(w[(int64_t)t * k + j], y[(int64_t)s[j] * d + c]));
        }
        out[(int64_t)t * d + c] = v;
    }
}

extern "C" void hy_cuda_moe_route(cudaStream_t st, int32_t *ids, float *w, const float *logits,
                                  const float *bias, int T, int E, int k, float scale,
                                  int32_t *off, int32_t *rows, int32_t *sel, int32_t *act)
{
    if (T <= 0)
        return;
    route_group_kernel<<<1, 1024, 0, st>>>(ids, w, logits, bias, T, E, k, scale, off, rows, sel,
                                           act);
    HY_CUDA_CHECK_LAUNCH();
}

template <int CODE>
static void gemv(cudaStream_t st, float *out, const float *x, const void *w0, const void *w1,
                 size_t stride, int64_t n_rows, int64_t cols, bool gate_up, const int32_t *off,
                 const int32_t *rows, const int32_t *act, int slots, int max_n,
                 hy_cuda_moe_sh sh)
{
    const dim3 grid((unsigned)(slots + (sh.e >= 0)),
                    (unsigned)((n_rows + GEMV_WARPS - 1) / GEMV_WARPS));
    if (gate_up)
        gemv_kernel<CODE, true><<<grid, 32 * GEMV_WARPS, 0, st>>>(
            out, x, (const unsigned char *)w0, (const unsigned char *)w1, stride, n_rows, cols,
            off, rows, act, max_n, sh);
    else
        gemv_kernel<CODE, false><<<grid, 32 * GEMV_WARPS, 0, st>>>(
            out, x, (const unsigned char *)w0, NULL, stride, n_rows, cols, off, rows, act, max_n,
            sh);
    HY_CUDA_CHECK_LAUNCH();
}

extern "C" void hy_cuda_moe_gemv(cudaStream_t st, float *out, const float *x, const void *w0,
                                 const void *w1, size_t stride, int code, int64_t n_rows,
                                 int64_t cols, bool gate_up, const int32_t *off,
                                 const int32_t *rows, const int32_t *act, int slots,
                                 int max_n, hy_cuda_moe_sh sh)
{
    if (slots <= 0 && sh.e < 0)
        return;
    switch (code) {
    case HY_CUDA_MOE_BF16:
        gemv<HY_CUDA_MOE_BF16>(st, out, x, w0, w1, stride, n_rows, cols, gate_up, off, rows, act,
                               slots, max_n, sh);
        break;
    case HY_CUDA_Q8_0:
        gemv<HY_CUDA_Q8_0>(st, out, x, w0, w1, stride, n_rows, cols, gate_up, off, rows, act,
                           slots, max_n, sh);
        break;
    case HY_CUDA_Q4_0:
        gemv<HY_CUDA_Q4_0>(st, out, x, w0, w1, stride, n_rows, cols, gate_up, off, rows, act,
                           slots, max_n, sh);
        break;
    case HY_CUDA_Q4_G128:
        gemv<HY_CUDA_Q4_G128>(st, out, x, w0, w1, stride, n_rows, cols, gate_up, off, rows, act,
                              slots, max_n, sh);
        break;
    default:
        hy_cuda_fail(__FILE__, __LINE__, "hy_cuda_moe_gemv", "weight type not taken");
    }
}

extern "C" void hy_cuda_moe_combine(cudaStream_t st, float *out, const float *acc,
                                    const float *y, const int32_t *sel, const float *w, int T,
                                    int k, int64_t d)
{
    if (T <= 0)
        return;
    combine_kernel<<<T, 256, 0, st>>>(out, acc, y, sel, w, k, d);
    HY_CUDA_CHECK_LAUNCH();
}
