/* cuda_ctx.h: the CUDA backend's state, shared by its C files: cuda.c (the op table,
 * memory, weight upload, creation) and stage.c (the pinned staging ring that carries the
 * host index arrays ops take to the device, and recorded steps: CUDA graphs). C only;
 * internal to src/backend/cuda. */
#ifndef HY_BACKEND_CUDA_CTX_H
#define HY_BACKEND_CUDA_CTX_H

#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_impl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CUBLAS_WORKSPACE ((size_t)32 << 20) /* cuBLAS' recommendation for Hopper */
#define UPLOAD_CHUNK ((size_t)8 << 20)      /* elements converted on the host per copy */
#define STAGE_REUSE 8                        /* ring slots remembered for reuse */
#define ATT_PART_FLOATS ((size_t)8 << 20)   /* attention split-K shares (32 MiB) */
#define MATMUL_CBUF_FLOATS ((size_t)16 << 20) /* padded matmul outputs (64 MiB) */
#define MAX_PADDED 8
#define MAX_GRAPHS 64                        /* recorded steps kept (by owner and key) */

/* Inside a step (step_begin .. step_end): recording a CUDA graph, or replaying one. */
enum step_mode { STEP_NONE, STEP_RECORD, STEP_REPLAY };

struct cuda_ctx {
    int device, n_sm;
    char name[256];
    cudaStream_t stream;
    cublasHandle_t blas;
    void *blas_ws;      /* device [CUBLAS_WORKSPACE] bytes, so cuBLAS never allocates */
    int32_t *stage_h;   /* pinned ring [stage_cap] */
    int32_t *stage_d;   /* device mirror [stage_cap]: slot i is copied from stage_h[i] */
    size_t stage_cap, stage_head;
    /* Slots of the ring already sent this lap, for stage_find: a host array staged again
     * with the same contents (a step's positions / pool slots / block tables, which every
     * layer passes) reuses the device copy instead of another copy. A slot's host bytes stay
     * as they were sent until the ring wraps, which empties this list. */
    struct { size_t at, n; const void *src; } sent[STAGE_REUSE];
    int n_sent, sent_next;
    /* Recorded steps. Inside a step the ring starts at 0 and a host array is reused by its
     * address (src) instead of its contents, so that the ring offsets, and so the copies a
     * graph holds, depend on the op sequence alone. */
    enum step_mode mode;
    int step_max_blocks;
    struct { const void *owner; int key; cudaGraphExec_t exec; } graphs[MAX_GRAPHS];
    int n_graphs, graph_at;
    uint16_t *xbf;      /* device [xbf_cap] bf16 matmul input */
    float *att_part;    /* device [att_part_floats]: attention's split-K shares */
    float *cbuf;        /* device [cbuf_cap]: matmul outputs with an aligned leading dim */
    size_t cbuf_cap;
    const void *padded[MAX_PADDED]; /* uploaded matrices with zero rows up to a multiple of 8 */
    int n_padded;
    /* xbf holds x rounded to bf16 for (xbf_x, xbf_T, xbf_cols) while xbf_x is set: matmuls
     * in a row with the same input (q/k/v, gate/up) convert it once. Every other op, and a
     * matmul writing where x lies, forgets it. */
    const float *xbf_x;
    int xbf_T;
    int64_t xbf_cols;
    size_t att_part_floats;
    size_t xbf_cap;
    /* fp8mm: the fp8 matmul state (made by the first weight_upload_fp8) and how inputs of
     * more than 8 rows multiply (enum hy_cuda_fp8_mode, from hy_cuda_opts.fp8_act) */
    struct hy_cuda_fp8 *fp8;
    int fp8_mode;
    /* qmatmul: bf16 scratch for dequantized row chunks of quantized weights (prefill-sized
     * matmuls), allocated by the first quantized weight_upload */
    uint16_t *wbf;
    size_t wbf_cap;
    /* qmmvq: int8 activations of up to 8 rows of HY_CUDA_MMVQ_MAX_COLS (allocated with
     * wbf), holding x quantized for (xq_x, xq_T, xq_cols) while xq_x is set; forgotten as
     * xbf_x is. */
    void *xq;
    const float *xq_x;
    int xq_T;
    int64_t xq_cols;
    /* Batch-invariant numerics (set_batch_invariant): bf16 matmuls through bimm.cu with its
     * partial sums in bi_part [HY_CUDA_BIMM_PART_FLOATS], quantized ones as GEMVs of at most
     * 8 rows, attention one row a tile without split-K. */
    bool invariant;
    float *bi_part;
    bool kv_bf16; /* the KV pool's elements (kv_dtype op): bf16, else float32 */
    /* fuse.c: allocations that hold fused weights (weight_fuse), each freed when the last
     * of its refs members is */
    struct hy_cuda_fused { char *base; size_t bytes; int refs; } *fused;
    int n_fused, fused_cap;
    /* fuse.c: a fused q/k/v product left unsplit (split_T > 0): its [split_T, Σ split_rows]
     * output lies in cbuf. rope_norm_store with these outputs as its q, k, v reads it from
     * there; any other op splits it first (hy_cuda_ctx), as matmul_n would have. */
    float *split_out[3];
    int64_t split_rows[3];
    int split_T;
};

void hy_cuda_split_flush(struct cuda_ctx *c);

/* The backend's context, with its device made current for this host thread (the runtime's
 * device is per thread), and a fused product left unsplit split. */
static inline struct cuda_ctx *hy_cuda_ctx(struct hy_backend *be)
{
    struct cuda_ctx *c = be->ctx;
    HY_CUDA_CHECK(cudaSetDevice(c->device));
    if (c->split_T)
        hy_cuda_split_flush(c);
    return c;
}

/* Whether ops only take in their index arrays: a replayed step launches at step_end. */
static inline bool hy_cuda_replaying(const struct cuda_ctx *c)
{
    return c->mode == STEP_REPLAY;
}

/* fuse.c: the weight_fuse, matmul_n and matmul_glu ops; hy_cuda_fused_free takes p when it
 * lies in a fused allocation (and frees that with its last member), else returns false. */
bool hy_cuda_weight_fuse(struct hy_backend *be, struct hy_weight *const *ws, int n);
void hy_cuda_matmul_n(struct hy_backend *be, float *const *outs, const float *x,
                      const struct hy_weight *const *ws, int n, int T);
void hy_cuda_matmul_glu(struct hy_backend *be, float *out, float *tmp, const float *x,
                        const struct hy_weight *gate, const struct hy_weight *up, int T);
bool hy_cuda_fused_free(struct cuda_ctx *c, void *p);
/* norm_ops.c: the rmsnorm and add_rmsnorm ops (backend.h), which also leave their output in
 * bf16 or int8 for the next product where the shape allows (cuda.c's matmul takes it). */
void hy_cuda_op_rmsnorm(struct hy_backend *be, float *out, const float *x,
                        const struct hy_weight *w, int64_t rows, int64_t d, float eps);
void hy_cuda_op_add_rmsnorm(struct hy_backend *be, float *out, float *x, const float *y,
                            const struct hy_weight *w, int64_t rows, int64_t d, float eps);
/* fuse.c: whether the product left unsplit is q, k, v of these shapes; then a holds where
 * rope_norm_store reads them (and writes the raw k, v), and the product counts as split. */
bool hy_cuda_split_take(struct cuda_ctx *c, struct hy_cuda_qkv_src *a, const float *q,
                        const float *k, const float *v, int T, int64_t qd, int64_t kvd);

/* stage.c: the ring (see each function) and the step_begin / step_end / step_forget ops. */
int32_t *hy_cuda_stage_reserve(struct cuda_ctx *c, size_t n, const int32_t **dev);
void hy_cuda_stage_send(struct cuda_ctx *c, const int32_t *host, size_t n, const void *src);
const int32_t *hy_cuda_stage_find(const struct cuda_ctx *c, const int32_t *a, size_t n);
const int32_t *hy_cuda_stage(struct cuda_ctx *c, const int32_t *a, size_t n);
bool hy_cuda_step_begin(struct hy_backend *be, const void *owner, int key, int max_blocks);
void hy_cuda_step_end(struct hy_backend *be);
void hy_cuda_step_forget(struct hy_backend *be, const void *owner);

#endif
