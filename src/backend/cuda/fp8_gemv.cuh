/* fp8_gemv.cuh: e4m3 decoding and the weight-streaming fp8 GEMV (T <= 8 input rows) that
 * fp8mm.cu (a float32 scale per row) and fp8b.cu (a float32 scale per 128x128 block)
 * share; moe_fp8.cu and moe_mma.cu take the decoding. CUDA C++ only; internal to
 * backend/cuda.
 *
 * Decoding e4m3 -> float32 exactly, two codes at a time: on sm_89+ `cvt.rn.f16x2.e4m3x2`
 * (fp16 holds every e4m3 value); elsewhere by moving bits: a code s.eeee.mmm becomes the
 * fp16 s.0eeee.mmm0000000, whose value is the code's divided by 2^8 (exponent bias 15 vs
 * 7; subnormal codes, exponent 0, land on fp16 subnormals with the same relation), and
 * fp16 -> float32 is exact; the 2^8 goes into a scale (f8_dec_scale: exact, a power of
 * two). The NaN codes (0x7f, 0xff) decode to +-480 there instead of NaN (weights have
 * none).
 *
 * The GEMV: a block owns R consecutive output rows (4 for T <= 4, 8 above); its threads
 * split each row's codes in 16-byte pieces (16 weights; thread i takes pieces i, i +
 * blockDim, ...), loaded once with L1 no-allocate, R loads in flight; x (float32) through
 * the read-only path, one load serving R rows. A piece is taken a 4-byte word (4 codes) at
 * a time, decoded exactly to float32 and multiplied with x into float32 sums. Per row
 * (F8_ROW), the sums run over the whole row and the row's scale multiplies them once at
 * the end. Per block (F8_BLK), a piece lies in one 128-column block and the block's R rows
 * in one 128-row block (R divides 128), so one scale, loaded once a piece, multiplies the
 * piece's decoded weights (one float32 rounding each: the value the host dequantizer
 * computes before its bf16 rounding) before their products. Warp shuffles, then shared
 * memory, sum a row's parts (gemv_reduce_store). */
#ifndef HY_BACKEND_CUDA_FP8_GEMV_CUH
#define HY_BACKEND_CUDA_FP8_GEMV_CUH

#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/gemv_util.cuh"

#include <cuda_fp16.h>
#include <stdint.h>

#define F8_MAX_T 8
#define F8_MAX_THREADS 256
#define F8_BLOCK 128 /* rows and columns one scale covers (F8_BLK) */

enum f8_scaling { F8_ROW = 0, F8_BLK = 1 };

/* An fp8 weight as a chunked dequantize (hy_cuda_dequant_fn) of fp8mm.cu or fp8b.cu reads
 * it: codes, scales (per row or per block), in-features. */
struct f8_weight {
    const unsigned char *wq;
    const float *ws;
    int64_t cols;
};

/* fp8b.h's layout: where a rows x cols matrix's scales start, and their columns. */
static __host__ __device__ __forceinline__ size_t f8b_scales_at(int64_t rows, int64_t cols)
{
    return ((size_t)(rows * cols) + 15) & ~(size_t)15;
}
static __host__ __device__ __forceinline__ int64_t f8b_nbc(int64_t cols)
{
    return (cols + F8_BLOCK - 1) / F8_BLOCK;
}

/* What a decoded value must be multiplied by to be the code's value. */
static __device__ __forceinline__ float f8_dec_scale(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    return 1.0f;
#else
    return 256.0f;
#endif
}

/* Codes in bytes 0 and 1 (lo) or 2 and 3 (hi) of u as two floats (times f8_dec_scale). */
template <int HI> static __device__ __forceinline__ float2 f8_pair(uint32_t u)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    const unsigned short p = (unsigned short)(HI ? u >> 16 : u & 0xffffu);
    uint32_t h;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"(p));
#else
    /* each code into the high byte of a 16-bit lane, then sign kept, the rest one bit down */
    const uint32_t w = __byte_perm(u, 0, HI ? 0x3424 : 0x1404);
    const uint32_t h = (w & 0x80008000u) | ((w >> 1) & 0x3F803F80u);
#endif
    return __half22float2(*(const __half2 *)&h);
}

/* The 4 codes of u, byte 0 first, as floats (times f8_dec_scale). */
static __device__ __forceinline__ void f8_word(uint32_t u, float *w)
{
    const float2 a = f8_pair<0>(u), b = f8_pair<1>(u);
    w[0] = a.x;
    w[1] = a.y;
    w[2] = b.x;
    w[3] = b.y;
}

/* sum[r][t] += the products of piece k (16 codes, v[r]) of each row, times s when SC is
 * F8_BLK, with x rows t < NT. */
template <int NT, int R, int SC>
static __device__ __forceinline__ void f8_piece(float (&sum)[R][NT], const uint4 (&v)[R],
                                                const float *x, int cols, int k, float s)
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float wf[R][4];
#pragma unroll
        for (int r = 0; r < R; r++) {
            f8_word(i == 0 ? v[r].x : i == 1 ? v[r].y : i == 2 ? v[r].z : v[r].w, wf[r]);
            if (SC == F8_BLK)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    wf[r][j] *= s;
        }
#pragma unroll
        for (int t = 0; t < NT; t++) {
            const float4 a = __ldg((const float4 *)(x + (int64_t)t * cols + 16 * k + 4 * i));
#pragma unroll
            for (int r = 0; r < R; r++) {
                float p = sum[r][t];
                p = fmaf(wf[r][0], a.x, p);
                p = fmaf(wf[r][1], a.y, p);
                p = fmaf(wf[r][2], a.z, p);
                sum[r][t] = fmaf(wf[r][3], a.w, p);
            }
        }
    }
}

/* out[t, row] = the row's sum times its scale (F8_ROW: ws[row]) and the decoding's. */
template <int SC> struct f8_epi {
    const float *ws;
    __device__ __forceinline__ float operator()(float s, int row) const
    {
        return s * ((SC == F8_ROW ? ws[row] : 1.0f) * f8_dec_scale());
    }
};

/* ws: F8_ROW float32 [rows]; F8_BLK float32 [ceil(rows/128), ceil(cols/128)]. cols % 16
 * == 0; wq, x 16-byte aligned. */
template <int NT, int R, int SC>
__global__ void __launch_bounds__(F8_MAX_THREADS, 1)
    f8_gemv_kernel(float *out, const float *x, const unsigned char *wq, const float *ws, int rows,
                   int cols)
{
    const int row0 = blockIdx.x * R;
    const int n16 = cols / 16;
    const uint4 *wr[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        wr[r] = (const uint4 *)(wq + (int64_t)gemv_row(row0, r, rows) * cols);
    /* F8_BLK: the scales of the block's rows (rows past the end read the last row, which
     * lies in the same 128-row block) */
    const float *bs = SC == F8_BLK ? ws + (int64_t)(row0 / F8_BLOCK) * f8b_nbc(cols) : ws;
    float acc[R][NT];
    gemv_zero(acc);
#pragma unroll(NT <= 2 ? 2 : 1)
    for (int k = threadIdx.x; k < n16; k += blockDim.x) {
        uint4 v[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            v[r] = ld_stream(wr[r] + k);
        f8_piece<NT, R, SC>(acc, v, x, cols, k, SC == F8_BLK ? __ldg(bs + k / 8) : 1.0f);
    }
    /* blockDim.x >= 64 >= R * NT */
    gemv_reduce_store<F8_MAX_THREADS / 32>(acc, out, row0, rows, blockDim.x >> 5,
                                           f8_epi<SC>{ws});
}

template <int NT, int SC>
static void f8_gemv(cudaStream_t st, float *out, const float *x, const unsigned char *wq,
                    const float *ws, int64_t rows, int64_t cols)
{
    constexpr int R = NT <= 4 ? 4 : 8;
    static_assert(F8_BLOCK % R == 0, "a block's rows must share a 128-row block");
    const int64_t n16 = cols / 16;
    const unsigned threads = n16 >= 256 ? 256 : n16 >= 128 ? 128 : 64;
    const unsigned blocks = (unsigned)((rows + R - 1) / R);
    f8_gemv_kernel<NT, R, SC><<<blocks, threads, 0, st>>>(out, x, wq, ws, (int)rows, (int)cols);
    HY_CUDA_CHECK_LAUNCH();
}

/* out[T, rows] = x[T, cols] · Wᵀ for 1 <= T <= 8 (scaling SC, ws as f8_gemv_kernel). */
template <int SC>
static void f8_gemv_t(cudaStream_t st, float *out, const float *x, const unsigned char *wq,
                      const float *ws, int64_t rows, int64_t cols, int T)
{
    switch (T) {
    case 1: f8_gemv<1, SC>(st, out, x, wq, ws, rows, cols); break;
    case 2: f8_gemv<2, SC>(st, out, x, wq, ws, rows, cols); break;
    case 3: f8_gemv<3, SC>(st, out, x, wq, ws, rows, cols); break;
    case 4: f8_gemv<4, SC>(st, out, x, wq, ws, rows, cols); break;
    case 5: f8_gemv<5, SC>(st, out, x, wq, ws, rows, cols); break;
    case 6: f8_gemv<6, SC>(st, out, x, wq, ws, rows, cols); break;
    case 7: f8_gemv<7, SC>(st, out, x, wq, ws, rows, cols); break;
    default: f8_gemv<8, SC>(st, out, x, wq, ws, rows, cols); break;
    }
}

#endif
