/* qmma.h: the tensor-core matmul for weight-only quantized matrices (qmma.cu):
 * out[T, rows] = x[T, cols] · Wᵀ with W in qmatmul.h's split layout (Q8_0, Q4_0, Q4_G128)
 * or block-scaled fp8 in fp8b.h's (qt HY_CUDA_MOE_FP8B: e4m3 · its block's float32 scale,
 * rounded once in float32, then to bf16),
 * for more input rows than the GEMV takes (T > 8: decode batches and prefill). W's quants
 * are read from global memory once per 128-row x 64-input-row tile, dequantized in
 * registers and fed to mma.sync (bf16 in, float32 accumulation); no bf16 copy of W is
 * written. C linkage; included by qmatmul.cu, the test and the bench. Launchers enqueue on
 * `st`, never synchronize or allocate, and check the launch (HY_CUDA_CHECK_LAUNCH).
 *
 * Precision: as qmatmul.h's chunked path, element for element: x rounded to bf16 (nearest
 * even), each weight d * q computed in float32 (exact: an 11-bit d times an 8-bit q) and
 * rounded to bf16 (nearest even), exact bf16 products, float32 sums (the tensor cores'
 * order; with a K split, the parts are summed in split order, so a result does not depend
 * on the launch). */
#ifndef HY_BACKEND_CUDA_QMMA_H
#define HY_BACKEND_CUDA_QMMA_H

#include "backend/cuda/cuda_impl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tile of the kernel: W rows, input rows, columns (K) a step. */
#define HY_QMMA_ROWS 128
#define HY_QMMA_T 64
#define HY_QMMA_K 128

/* Whether hy_cuda_qmma takes this matrix: qt one of the four types, cols a multiple of
 * HY_QMMA_K, w 16-byte aligned, the matrix under 4 GiB (32-bit offsets). Any rows >= 1
 * (a partial last tile reads its missing rows from the last row and does not store them). */
bool hy_cuda_qmma_fits(int qt, int64_t rows, int64_t cols, const void *w);

/* K splits hy_cuda_matmul_qmma uses: 1 when the tiles alone give every one of the n_sm SMs
 * two blocks; else enough (at most 8, each split at least 4 steps of HY_QMMA_K) that they
 * do, within part_cap floats of partial outputs (splits * T * rows). */
int hy_cuda_qmma_splits(int64_t rows, int64_t cols, int T, size_t part_cap, int n_sm);

/* out[T, rows] = xbf[T, cols] · Wᵀ: xbf bf16 on the device (cols % 8 == 0 rows, 16-byte
 * aligned), W as hy_cuda_qmma_fits allows. splits >= 1 (more than cols / HY_QMMA_K counts
 * as that many); splits > 1 writes the partial products into part (splits * T * rows
 * floats, not overlapping out) and adds them into out in a second kernel. */
void hy_cuda_qmma(cudaStream_t st, float *out, const uint16_t *xbf, const void *w, int qt,
                  int64_t rows, int64_t cols, int T, int splits, float *part);

/* The launcher hy_cuda_matmul_q uses for T > 8 when hy_cuda_qmma_fits: x (float32) is
 * rounded into s->xbf in chunks of whole rows (unless x_ready: xbf holds all of x
 * already), each chunk multiplied by hy_cuda_qmma with hy_cuda_qmma_splits' split (the
 * parts in s->cbuf, which may be NULL: no split). Returns true when xbf holds all of x
 * afterwards. */
bool hy_cuda_matmul_qmma(cudaStream_t st, float *out, const float *x, const void *w, int qt,
                         int64_t rows, int64_t cols, int T, bool x_ready,
                         const struct hy_cuda_mm_scratch *s);

#ifdef __cplusplus
}
#endif

#endif
