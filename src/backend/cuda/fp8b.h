/* fp8b.h: block-scaled fp8 matrices (core/dtype.h HY_DTYPE_F8_B128: e4m3fn codes, a float32
 * scale per 128x128 block) kept in fp8 on the CUDA backend: their device layout and upload
 * (fp8b.cu), the dense matmul (fp8b.cu) and the grouped expert GEMV (moe_fp8.cu; the
 * grouped tensor-core GEMM is moe_mma.cu's, code HY_CUDA_MOE_FP8B). C linkage; included by
 * cuda.c, moe_ops.c and the .cu files (which cannot include core/dtype.h: C11
 * _Static_assert), so the dtype's constants are repeated here and checked for C.
 *
 * Layout of a rows x cols matrix (cols % 16 == 0; hy_cuda_fp8b_bytes bytes, one
 * allocation): the codes, row-major, one byte a weight (row r at r*cols, 16-byte aligned);
 * from the next multiple of 16 bytes, the float32 scales [ceil(rows/128), ceil(cols/128)]
 * row-major. Value of element (r, c): e4m3(code) * scale[r/128][c/128], as the host
 * dequantizer computes it before its bf16 rounding.
 *
 * Matmul out[T, rows] = x[T, cols] · Wᵀ (float32 x and out, device):
 * - T <= 8, x 16-byte aligned (decode): fp8_gemv.cuh's GEMV, codes decoded exactly and
 *   multiplied by their block's scale in float32 (the dequantized weight, one rounding),
 *   products and sums in float32: within (cols + 32)·2^-24·S of the exact product with the
 *   dequantized weights, S = Σ_c |x_c w_c| (a term passes 1 scaling, 1 product, at most
 *   cols/16 + 3 sums in its thread and 13 in the reduction: fewer than cols + 32
 *   roundings).
 * - Otherwise, cols % 128 == 0: qmma.h's tensor-core kernel, W's codes read once a tile
 *   and dequantized in registers to bf16 (float32 e4m3·scale rounded to nearest even: the
 *   host loader's value), x rounded to bf16, float32 sums; other shapes: the same values
 *   dequantized into the scratch wbf a chunk of rows at a time and multiplied by cuBLAS
 *   (hy_cuda_dequant_mm). Both within (2^-8 + (cols + 4)·2^-24)·S (qmma.h, qmatmul.h).
 * The grouped expert GEMV (hy_cuda_moe_fp8b_gemv) has moe.h's contract for one code: a
 * warp a row, its lanes taking 16-byte pieces, every place of an expert (8 a pass) against
 * one read of the row; a 16-column piece's exact products summed in float32, then added
 * times its block's scale (a term passes 1 product, 15 piece sums, 1 scaling, cols/512 + 1
 * row sums and 5 shuffle sums: the same bound), independent of the other places. Ops never
 * allocate. */
#ifndef HY_BACKEND_CUDA_FP8B_H
#define HY_BACKEND_CUDA_FP8B_H

#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/moe.h"
#ifndef __cplusplus
#include "core/dtype.h"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HY_CUDA_FP8B_BLOCK 128 /* = HY_F8_B128_BLOCK */
#define HY_CUDA_FP8B_COLS 16   /* = HY_F8_B128_COLS: cols is a multiple */
#ifndef __cplusplus /* checked where C includes it */
_Static_assert(HY_CUDA_FP8B_BLOCK == HY_F8_B128_BLOCK && HY_CUDA_FP8B_COLS == HY_F8_B128_COLS,
               "fp8b.h repeats core/dtype.h's F8_B128 constants");
#endif

/* Device bytes of a rows x cols matrix in the layout above (a multiple of 16). */
size_t hy_cuda_fp8b_bytes(int64_t rows, int64_t cols);
/* Copies codes (host, rows*cols bytes) and scale (host, float32 [ceil(rows/128),
 * ceil(cols/128)]) into the layout at dst (device, hy_cuda_fp8b_bytes bytes) on st and
 * waits for the copies (the sources may be pageable, e.g. the mapped file). */
void hy_cuda_fp8b_upload(cudaStream_t st, void *dst, const uint8_t *codes, const float *scale,
                         int64_t rows, int64_t cols);
/* out[T, rows] = x[T, cols] · Wᵀ, W in the layout above (paths above); s: the backend's
 * scratch. Returns true when s->xbf holds x rounded to bf16 afterwards (as
 * hy_cuda_matmul_bf16); x_ready: xbf holds it already. */
bool hy_cuda_matmul_fp8b(cudaStream_t st, cublasHandle_t blas, float *out, const float *x,
                         const void *w, int64_t rows, int64_t cols, int T, bool x_ready,
                         const struct hy_cuda_mm_scratch *s);
/* moe.h's hy_cuda_moe_gemv (the shared expert's group sh included) for a stack of
 * matrices in the layout above (n_rows x cols each, at w0 + e * stride; stride and the
 * pointers 16-byte aligned; x 16-byte aligned). */
void hy_cuda_moe_fp8b_gemv(cudaStream_t st, float *out, const float *x, const void *w0,
                           const void *w1, size_t stride, int64_t n_rows, int64_t cols,
                           bool gate_up, const int32_t *off, const int32_t *rows,
                           const int32_t *act, int slots, int max_n,
                           struct hy_cuda_moe_sh sh);

#ifdef __cplusplus
}
#endif

#endif
