/* qmmvq.h: decode GEMV (T <= 8 input rows) of Q8_0, Q4_0 and Q4_G128 matrices (the split
 * device layout of qmatmul.h) against activations quantized to int8 (qmmvq.cu), the
 * approach of llama.cpp's MMVQ kernels: x is quantized once per input (matmuls in a row
 * with the same x share it), and the weights' packed quants are multiplied with the int8
 * activations by integer dot products (dp4a), so a weight costs well under one
 * instruction instead of a float conversion and a multiply-add. C linkage; internal to
 * backend/cuda (cuda.c decides when it is used; the tests and bench/qmatmul_bench.cu call
 * it directly).
 *
 * Activations ("xq", hy_cuda_mmvq_x_bytes bytes, 16-byte aligned): for each input row t
 * and each block of 32 columns b, d = max|x| / 127 over the block (float32) and
 * q_c = round-to-nearest-even(x_c * (127 / max|x|)) as int8 (0 and d = 0 for an all-zero
 * block), so |x_c - d·q_c| <= d/2 (+ the roundings of 127/max|x| and of the product: below
 * 2^-22·max|x|). Stored: all q (row-major [T, cols]), then the d ([T, cols/32] float32),
 * then d · Σq over each half-block of 16 columns ([T, cols/16] float32: the 4-bit types'
 * zero point, -8 · that, is taken off once a 16 columns instead of once a weight).
 *
 * Precision: out[t, r] = Σ_c w_c · d_b(c) · q_c with w the dequantized weight; the
 * integer dot products of 16 (Q8_0) or 32 (4-bit) weights are exact, then scaled and
 * summed in float32. Against the exact product with x:
 *   |out - Σ w x| <= Σ_c |w_c| · max|x|_b(c) / 254 · (1 + 2^-20)      (the int8 rounding)
 *                  + (cols/4 + 64) · 2^-24 · Σ_c |d_w,c| · 24 · |x_c| (float32 roundings),
 * d_w the weight's block scale, 24 >= |q_w| + 8 the largest intermediate a weight's term
 * passes through (4-bit: the dot with the unsigned nibble and the zero point apart). */
#ifndef HY_BACKEND_CUDA_QMMVQ_H
#define HY_BACKEND_CUDA_QMMVQ_H

#include "backend/cuda/cuda_impl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HY_CUDA_MMVQ_MAX_T 8
#define HY_CUDA_MMVQ_MAX_COLS 32768 /* the xq scratch cuda.c keeps holds 8 rows of this */

/* Bytes of the quantized activations of T rows of cols (cols % 32 == 0). */
size_t hy_cuda_mmvq_x_bytes(int T, int64_t cols);
/* Whether hy_cuda_mmvq takes this product: qt Q8_0, Q4_0 or Q4_G128, 1 <= T <= 8,
 * cols % 32 == 0 and <= HY_CUDA_MMVQ_MAX_COLS, w 16-byte aligned. */
bool hy_cuda_mmvq_fits(int qt, int64_t rows, int64_t cols, int T, const void *w);
/* xq (device, hy_cuda_mmvq_x_bytes(T, cols), 16-byte aligned) = x [T, cols] (device,
 * float32, any alignment) quantized as above. */
void hy_cuda_mmvq_quantize(cudaStream_t st, void *xq, const float *x, int T, int64_t cols);
/* out[T, rows] = x · Wᵀ from the quantized x (xq of T rows of cols) and W (split layout).
 * R: output rows a thread block (2, 4 or 8; 0 picks the measured best of the type and T);
 * the results do not depend on it (a thread's columns and the reduction order do not). */
void hy_cuda_mmvq(cudaStream_t st, float *out, const void *xq, const void *w, int qt,
                  int64_t rows, int64_t cols, int T, int R);

#ifdef __cplusplus
}
#endif

#endif
