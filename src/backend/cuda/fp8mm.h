/* fp8mm.h: fp8 (float8 e4m3fn) weight matrices kept in fp8 on the CUDA backend (fp8mm.cu):
 * their device layout, the host packer, the matmul, and the state the matmul needs (a
 * cuBLASLt handle, a plan cache, a few device floats). C linkage; included by cuda.c and
 * the .cu (which cannot include core/dtype.h: C11 _Static_assert).
 *
 * Layout of a rows x cols matrix (hy_cuda_fp8_bytes bytes, one allocation): the codes,
 * row-major, one byte a weight (row r at r*cols); from the next multiple of 16 bytes,
 * float32 scale[rows] (a per-tensor scale repeated on every row), then one float32, the
 * static input scale (0: none, the activation scale is computed per call). Value of
 * element (r, c): e4m3(code) * scale[r], exactly as the host dequantizer before its bf16
 * rounding.
 *
 * Matmul out[T, rows] = x[T, cols] · Wᵀ (float32 x and out, device):
 * - T <= 8, cols % 16 == 0, x and W 16-byte aligned (decode): a weight-streaming GEMV;
 *   codes become float exactly in registers (sm_89+: cvt.rn.f16x2.e4m3x2; else bit moves
 *   into an fp16 and its exact float32 conversion), multiplied with float32 x, float32
 *   sums, times the row's scale at the end. Within (cols + 32)·2^-24·S of the exact
 *   product with the dequantized weights, S = Σ_c |x_c w_c|.
 * - Larger T, mode HY_CUDA_FP8_GEMM, an sm_89+ device, rows and cols multiples of 16 and
 *   out 16-byte aligned: x is quantized to e4m3 (per call, chunk of rows of x: scale =
 *   the static input scale, else max|x| / 448 computed on the device, no host sync;
 *   x / scale rounded to nearest even, saturating at 448), multiplied by cuBLASLt's fp8
 *   tensor-core GEMM (TN, float32 output), then out[t, r] *= scale[r] * x scale. Each x
 *   value carries a relative error up to 2^-4 (plus 2^-10 of the x scale below the e4m3
 *   normal range): the result is within about 2^-4·S of the exact product (fp8mm.cu and
 *   cuda_fp8_test derive the bound), the accuracy of W8A8 as the fp8 checkpoints were
 *   calibrated for.
 * - Otherwise (mode HY_CUDA_FP8_DEQUANT, sm_80/86, shapes cuBLASLt's fp8 kernels do not
 *   take): rows of W are dequantized to bf16 (float32 e4m3*scale rounded to nearest even,
 *   the same value the host loader makes) into the scratch wbf a chunk at a time and
 *   multiplied by cuBLAS with x rounded to bf16 (as qmatmul.h's large-T path): within
 *   (2^-8 + (cols + 4)·2^-24)·S of the product with the dequantized (unrounded) weights.
 * Ops never allocate: xbf (>= cols bf16 elements: also holds the e4m3 codes of x, 2 a
 * element), wbf (>= 8 rows of W in bf16) and cbuf come from the backend's fixed scratch. */
#ifndef HY_BACKEND_CUDA_FP8MM_H
#define HY_BACKEND_CUDA_FP8MM_H

#include "backend/cuda/cuda_impl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How inputs of more than 8 rows are multiplied. */
enum hy_cuda_fp8_mode {
    HY_CUDA_FP8_GEMM = 0,    /* fp8 activations, cuBLASLt fp8 GEMM where the device and
                              * shape allow it, else as DEQUANT */
    HY_CUDA_FP8_DEQUANT = 1, /* bf16 activations against weights dequantized in chunks */
};

/* Device bytes of a rows x cols matrix in the layout above (a multiple of 16). */
size_t hy_cuda_fp8_bytes(int64_t rows, int64_t cols);
/* Packs codes (host, rows*cols bytes), scale (host, n_scale floats: 1 = per tensor, or
 * rows) and the static input scale (0: none) into the layout above at dst (host,
 * hy_cuda_fp8_bytes bytes; the gap is zeroed). */
void hy_cuda_fp8_pack(void *dst, const uint8_t *codes, const float *scale, int64_t n_scale,
                      float input_scale, int64_t rows, int64_t cols);

/* The matmul state of one backend (created with it or at the first fp8 weight; engine
 * thread only). NULL from create when cuBLASLt cannot start; every call needs a state. */
struct hy_cuda_fp8;
struct hy_cuda_fp8 *hy_cuda_fp8_create(int device, void *blas_ws, size_t blas_ws_bytes);
void hy_cuda_fp8_destroy(struct hy_cuda_fp8 *f); /* accepts NULL; syncs nothing */
/* Whether the device has fp8 tensor cores (sm_89 and up): the GEMM mode can be used. */
bool hy_cuda_fp8_has_gemm(const struct hy_cuda_fp8 *f);

/* out[T, rows] = x[T, cols] · Wᵀ, W in the layout above on the device (paths above).
 * s: the backend's scratch (cuda_impl.h). Returns true when s->xbf holds x rounded to bf16
 * afterwards (as hy_cuda_matmul_bf16; only the DEQUANT path leaves it so); x_ready: xbf
 * holds it already. */
bool hy_cuda_matmul_fp8(struct hy_cuda_fp8 *f, cudaStream_t st, cublasHandle_t blas, float *out,
                        const float *x, const void *w, int64_t rows, int64_t cols, int T,
                        enum hy_cuda_fp8_mode mode, bool x_ready,
                        const struct hy_cuda_mm_scratch *s);

#ifdef __cplusplus
}
#endif

#endif
