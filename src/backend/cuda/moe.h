/* moe.h: the CUDA backend's mixture-of-experts ops (backend.h's weight_upload_n,
 * moe_route, moe_gate_up, moe_down, moe_combine, moe_takes): the launchers of moe.cu and the
 * op functions of moe_ops.c that cuda.c puts in its table. C linkage; internal to
 * backend/cuda.
 *
 * Every launch has a size fixed by (T, k, E) and the weights' shapes, and reads the work it
 * does (which experts got tokens, how many) from device memory, so a recorded decode step
 * replays whatever the routing was.
 *   route and group are one launch of one block (1024 threads): the grouping needs every
 *   token's choices, which the block has after a barrier.
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
 *     multiplies gate and up together and writes silu(g) * u. Experts with more than
 *     max_n places are left to mma. The shared expert can ride along as one more group
 *     (struct hy_cuda_moe_sh, both GEMVs), so a decode step's MoE layer has no launches of
 *     its own for it.
 *   mmvq (moe_mmvq.cu): the same products outside the batch-invariant mode, Q8_0, Q4_0
 *     and Q4_G128 experts from activations quantized to int8 once (qmmvq.h's layout and
 *     bound: integer dot products, as matmul uses qmmvq), bf16 ones from float32 x: blocks
 *     (slot, 16 rows), a warp 4 rows, its lanes 16-byte pieces of them (4 or 8 loads in
 *     flight a lane), up to 4 places at once; each weight byte read once for all of an
 *     expert's places.
 *   mma (moe_mma.cu): the experts with at least min_n places, as tensor-core tiles of 64
 *     W rows x 64 places (grid: slot, W row tiles, place tiles; blocks of experts with
 *     fewer places, or past their expert's places, exit). x and the weights are rounded
 *     to bf16 (quant blocks dequantized d * q exactly, then rounded: qmma.cu's rounding),
 *     products summed in float32 by mma.m16n8k16: a dot's error within
 *     (u_x + u_w + (cols + 32)·2^-23)·Σ|x w|, u = 2^-8 for a bf16 rounding (u_w = 0 for
 *     bf16 weights). A place's result then depends on its group's size (GEMV or mma), so
 *     the batch-invariant mode keeps the GEMV for all (moe_ops.c).
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
/* An expert's places the GEMV takes at most when the grouped GEMM runs too: at more, a
 * 64 x 64 tile's tensor-core products beat re-reading the weights a warp a row. */
#define HY_CUDA_MOE_GEMV_MAX 8

/* The shared expert as one more group of the GEMVs (the routing's `shared`, moe_ops.c):
 * matrix e of the stacks, places p0 .. p0 + n - 1 (after the routed ones), gate_up's input
 * for place p the token p - p0, down's the place itself; e < 0: none. Its blocks are the
 * grid's last column of slots. */
struct hy_cuda_moe_sh {
    int e, p0, n;
};

#ifdef __CUDACC__
/* The group of block column blockIdx.x of a grouped GEMV: the shared expert's (last
 * column), or active expert slot blockIdx.x's with at most max_n places; false: none. */
static __device__ __forceinline__ bool hy_moe_group_of(const int32_t *off, const int32_t *act,
                                                       int max_n, struct hy_cuda_moe_sh sh,
                                                       int *e, int *p0, int *n)
{
    if (sh.e >= 0 && blockIdx.x == gridDim.x - 1) {
        *e = sh.e, *p0 = sh.p0, *n = sh.n;
        return true;
    }
    if ((int)blockIdx.x >= act[0])
        return false;
    *e = act[1 + blockIdx.x];
    *p0 = off[*e];
    *n = off[*e + 1] - *p0;
    return *n <= max_n; /* larger groups: the grouped GEMM (moe_mma.cu) */
}
#endif

/* Routes T tokens and groups the pairs (route, then group, above) in one launch. */
void hy_cuda_moe_route(cudaStream_t st, int32_t *ids, float *w, const float *logits,
                       const float *bias, int T, int E, int k, float scale, int32_t *off,
                       int32_t *rows, int32_t *sel, int32_t *act);
/* out[p, :] for every place p of the active experts with at most max_n places: gate_up
 * (w1: the up matrices): input x[rows[p]], else x[p]; each expert's matrix at w0 + e *
 * stride. */
void hy_cuda_moe_gemv(cudaStream_t st, float *out, const float *x, const void *w0,
                      const void *w1, size_t stride, int code, int64_t n_rows, int64_t cols,
                      bool gate_up, const int32_t *off, const int32_t *rows, const int32_t *act,
                      int slots, int max_n, struct hy_cuda_moe_sh sh);
/* Whether moe_mmvq takes matrices of type code with cols columns at this stride (a multiple
 * of 16): bf16 (cols a multiple of 8), Q8_0, Q4_0, Q4_G128 (a multiple of 32 and the block). */
bool hy_cuda_moe_mmvq_fits(int code, int64_t cols, size_t stride);
/* The products of hy_cuda_moe_gemv with more loads in flight: x holds n_in input rows of
 * cols (16-byte aligned), for quantized experts as int8 (hy_cuda_mmvq_quantize, qmmvq.h's
 * layout and bound), for bf16 ones as float32 (the GEMV's bound); place p's input is row
 * in_row[p] (gate_up: the routing's rows) or p (in_row NULL); w1 NULL: no up matrices
 * (down). max_places: the most places an expert can have (T). A (row, place) result does
 * not depend on the expert's other places. */
void hy_cuda_moe_mmvq(cudaStream_t st, float *out, const void *x, int n_in,
                      const int32_t *in_row, const void *w0, const void *w1, size_t stride,
                      int code, int64_t n_rows, int64_t cols, const int32_t *off,
                      const int32_t *act, int slots, int max_n, int max_places,
                      struct hy_cuda_moe_sh sh);
/* Whether mma takes matrices of n_rows x cols: cols a multiple of 64. */
bool hy_cuda_moe_mma_fits(int64_t n_rows, int64_t cols);
/* The same products for the experts with at least min_n places, on the tensor cores; an
 * expert has at most max_places places (T). x, w0, w1 and stride 16-byte aligned. */
void hy_cuda_moe_mma(cudaStream_t st, float *out, const float *x, const void *w0,
                     const void *w1, size_t stride, int code, int64_t n_rows, int64_t cols,
                     bool gate_up, const int32_t *off, const int32_t *rows, const int32_t *act,
                     int slots, int max_places, int min_n);
void hy_cuda_moe_combine(cudaStream_t st, float *out, const float *acc, const float *y,
                         const int32_t *sel, const float *w, int T, int k, int64_t d);

#ifdef __cplusplus
}
#endif

#endif
