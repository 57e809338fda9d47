/* moe.h: the CUDA backend's mixture-of-experts ops (backend.h's weight_upload_n,
 * moe_route, moe_gate_up, moe_down, moe_combine, moe_takes): the launchers of moe.cu and the
 * op functions of moe_ops.c that cuda.c puts in its table. C linkage; internal to
 * backend/cuda.
 *
 * Every launch has a size fixed by (T, k, E) and the weights' shapes, and reads the work it
 * does (which experts got tokens, how many) from device memory, so a recorded decode step
 * replays whatever the routing was.
 *   route: one warp a token: the k best of sigmoid(logit) + bias by k warp-wide argmax
 *     rounds under hy_moe_route's order (larger first, NaN below every number, equal ones
 *     to the lower index); lane 0 then sums the k unbiased scores in choice order and
 *     divides, as the CPU does.
 *   group: one block, a thread an expert: it counts its pairs, a block-wide scan gives the
 *     offsets, and it writes its places in pair order (tokens ascending): hy_moe_group's
 *     result exactly.
 *   gemv: blocks (slot, 8 output rows), slot s < act[0] taking expert act[1 + s]; a warp a
 *     row, its lanes splitting the row (8 bf16 or one quant block at a time), 4 of the
 *     expert's places at a time, float32 sums (a lane's, then the warp's xor shuffles: a
 *     place's result does not depend on which other places the expert has). gate_up
 *     multiplies gate and up together and writes silu(g) * u.
 *   combine: a block a token; its k choices added to acc in the order of their places
 *     (experts ascending: the CPU's order), each as one rounded product and one rounded
 *     add (no FMA), so the same y give the CPU's bits. */
#ifndef HY_BACKEND_CUDA_MOE_H
#define HY_BACKEND_CUDA_MOE_H

#include "backend/cuda/cuda_impl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HY_CUDA_MOE_MAX_E 1024
#define HY_CUDA_MOE_MAX_K 64
#define HY_CUDA_MOE_BF16 (-1) /* the weight code of bf16 matrices; else a qmatmul.h type */
#define HY_CUDA_MOE_ALIGN 256 /* the stride of weight_upload_n's matrices is a multiple */

void hy_cuda_moe_route(cudaStream_t st, int32_t *ids, float *w, const float *logits,
                       const float *bias, int T, int E, int k, float scale);
void hy_cuda_moe_group(cudaStream_t st, const int32_t *ids, int P, int E, int k, int32_t *off,
                       int32_t *rows, int32_t *sel, int32_t *act);
/* out[p, :] for every place p of the active experts: gate_up (w1: the up matrices): input
 * x[rows[p]], else x[p]; each expert's matrix at w0 + e * stride. */
void hy_cuda_moe_gemv(cudaStream_t st, float *out, const float *x, const void *w0,
                      const void *w1, size_t stride, int code, int64_t n_rows, int64_t cols,
                      bool gate_up, const int32_t *off, const int32_t *rows, const int32_t *act,
                      int slots);
void hy_cuda_moe_combine(cudaStream_t st, float *out, const float *acc, const float *y,
                         const int32_t *sel, const float *w, int T, int k, int64_t d);

#ifdef __cplusplus
}
#endif

#endif
