/* backend.h: the op set the forward pass runs on, as a table of function pointers.
 * A backend owns its memory and threads; the model holds a struct hy_backend * and calls
 * ops through it. Pointers passed to ops point into backend memory (host memory for the
 * CPU backend; device memory for CUDA). Ops never allocate and cannot fail: shapes are
 * validated at load time, and a broken invariant is a bug (HY_ASSERT).
 * Engine thread only: a backend is not safe to call from two threads at once.
 * Layouts: every matrix is row-major; a weight is [rows = out features, cols = in features]
 * like torch's nn.Linear.weight, so matmul computes out = x · Wᵀ. */
#ifndef HY_BACKEND_BACKEND_H
#define HY_BACKEND_BACKEND_H

#include "core/dtype.h"
#include "core/status.h"

#include <stdbool.h>
#include <stdint.h>

/* A weight matrix (or vector when rows == 1) in its stored dtype. */
struct hy_weight {
    enum hy_dtype dtype;
    int64_t rows;     /* out features (or 1 for a vector) */
    int64_t cols;     /* in features (or the vector length) */
    const void *data; /* rows*cols elements, backend memory (mmapped file for CPU);
                       * HY_DTYPE_F8_B128 before weight_upload: a struct hy_f8b_src */
};

/* The host form of an HY_DTYPE_F8_B128 weight (core/dtype.h) that weight_upload and
 * weight_upload_n take: hy_weight.data points at one (the loader's, owned by the
 * safetensors set). w[r][c] = e4m3(codes[r*cols + c]) * scale[(r/128) * ceil(cols/128) +
 * c/128]. */
struct hy_f8b_src {
    const uint8_t *codes; /* [rows, cols] float8 e4m3fn, host (the mapped file) */
    const float *scale;   /* [ceil(rows/128), ceil(cols/128)] float32, host */
};

/* One sequence's share of a batched attention call over the paged KV pool. */
struct hy_attn_seq {
    int row;               /* first row of its tokens in q / out */
    int n_tokens;          /* its new tokens: rows row .. row+n_tokens-1 */
    int pos0;              /* position of its first new token; token t attends to 0..pos0+t */
    const int32_t *blocks; /* block table, host memory: block i holds positions i*bs .. i*bs+bs-1 */
};

/* A sampling candidate: a logit and its id (struct of two 32-bit words). */
struct hy_cand {
    float val;
    int32_t id;
};

/* A mixture-of-experts layer's routing on the backend (moe_route writes it; backend memory,
 * sized for P = T*k routed pairs and E experts): ids[t*k + j] and w[t*k + j] the expert
 * and weight of token t's j-th choice (best first, as hy_moe_route), and the pairs grouped by
 * expert as backend/cpu/moe.h's hy_moe_group groups them (expert e's places off[e] ..
 * off[e+1]-1, its tokens ascending): rows[p] the token of place p, sel[t*k + j] the place of
 * token t's j-th choice, act[0] the number of experts with tokens and act[1 ..] those
 * experts ascending. xq (may be NULL) is scratch the grouped ops may use for activations in
 * another form (the CUDA backend: int8 for quantized experts); the caller sizes it with
 * hy_moe_xq_bytes and the backend neither reads it before writing nor keeps it. shared
 * (set by the caller, T <= HY_MOE_SHARED_MAX_T only): the stacks passed to moe_gate_up and
 * moe_down hold the shared expert as matrix E, after the E routed ones, and those ops
 * compute it too, as places P .. P + T - 1 of token 0 .. T - 1 (act and y then have P + T
 * rows), so a decode step's shared expert costs no launches of its own. */
#define HY_MOE_SHARED_MAX_T 8
struct hy_moe_route {
    int32_t *ids;  /* [P] */
    int32_t *off;  /* [E + 1] */
    int32_t *rows; /* [P] */
    int32_t *sel;  /* [P] */
    int32_t *act;  /* [E + 1] */
    float *w;      /* [P] */
    void *xq;      /* [hy_moe_xq_bytes(T, k, d, F)] bytes, or NULL */
    bool shared;   /* host: the shared expert rides along (above) */
};

/* Bytes of hy_moe_route.xq for T tokens, k choices, hidden size d, expert width F: int8
 * values of the larger of the gate/up input [T, d] and the down input [T*k + T, F] (the
 * shared expert's rows included), with a float32 scale and a sum a 32 and a 16 of them. */
static inline size_t hy_moe_xq_bytes(int64_t T, int64_t k, int64_t d, int64_t F)
{
    const size_t a = (size_t)(T * d), b = (size_t)(T * (k + 1) * F), n = a > b ? a : b;
    return n + n / 8 + n / 4 + 64;
}

struct hy_backend;

struct hy_backend_i {
    const char *name;
    void (*destroy)(struct hy_backend *be);

    /* Memory for activations and caches, taken at start-up only. NULL on failure. */
    void *(*alloc)(struct hy_backend *be, size_t bytes);
    void (*free)(struct hy_backend *be, void *p);
    /* Copies between host and backend memory (plain memcpy on CPU). */
    void (*upload)(struct hy_backend *be, void *dst, const void *src, size_t bytes);
    void (*download)(struct hy_backend *be, void *dst, const void *src, size_t bytes);

    /* out[t,:] = table[ids[t], :] as float32; out is [T, cols]. ids are in range. */
    void (*embed)(struct hy_backend *be, float *out, const struct hy_weight *table,
                  const int32_t *ids, int T);
    /* out[r,:] = w * x[r,:] / sqrt(mean(x[r,:]^2) + eps) for r < rows; w has d elements.
     * out may equal x. */
    void (*rmsnorm)(struct hy_backend *be, float *out, const float *x, const struct hy_weight *w,
                    int64_t rows, int64_t d, float eps);
    /* out[t, r] = sum_c x[t, c] * W[r, c]; out is [T, W.rows], x is [T, W.cols].
     * out must not overlap x. */
    void (*matmul)(struct hy_backend *be, float *out, const float *x, const struct hy_weight *w,
                   int T);
    /* NeoX rotate-half RoPE in place on x [T, n_heads, hd]: for i < hd/2,
     * θ = pos[t]·inv_freq[i]; (x[i], x[i+hd/2]) ← (x[i]cosθ − x[i+hd/2]sinθ, x[i+hd/2]cosθ + x[i]sinθ).
     * inv_freq has hd/2 entries (backend memory). pos is host memory. */
    void (*rope)(struct hy_backend *be, float *x, const int32_t *pos, int T, int n_heads, int hd,
                 const float *inv_freq);
    /* Causal GQA attention for a batch of sequences over the paged KV pool.
     * k_pool, v_pool: [n_blocks*bs, n_kv*hd] elements of the backend's KV dtype (kv_dtype);
     * position p of a sequence lives in pool row
     * blocks[p/bs]*bs + p%bs, and positions 0..pos0+n_tokens-1 must have been stored.
     * q, out: [rows, n_head*hd]; query head h uses KV head h/(n_head/n_kv).
     * Scores are q·k·scale, softmax in float32. */
    void (*attention)(struct hy_backend *be, float *out, const float *q, const void *k_pool,
                      const void *v_pool, int bs, const struct hy_attn_seq *seqs, int n_seqs,
                      int n_head, int n_kv, int hd, float scale);
    /* pool[slots[t], :] = rows[t, :] for t < T, converted to the KV dtype (kv_dtype); rows
     * is [T, cols] float32; slots is host memory. */
    void (*kv_store)(struct hy_backend *be, void *pool, const float *rows, const int32_t *slots,
                     int T, int64_t cols);
    /* dst[i, :] = src[idx[i], :] for i < n (cols floats per row); idx is host memory. */
    void (*copy_rows)(struct hy_backend *be, float *dst, const float *src, const int32_t *idx,
                      int n, int64_t cols);
    /* out[i] = silu(gate[i]) * up[i], silu(z) = z / (1 + exp(-z)). out may equal gate. */
    void (*silu_mul)(struct hy_backend *be, float *out, const float *gate, const float *up,
                     int64_t n);
    /* x[i] += y[i]. */
    void (*add)(struct hy_backend *be, float *x, const float *y, int64_t n);

    /* (optional) Copies weight *w (data in host memory, e.g. the mmapped file) into backend
     * memory once, at load, in the dtype the backend computes with, and points w->data and
     * w->dtype at the copy; free it with free(be, w->data). On failure *w is unchanged.
     * NULL (the CPU backends): the ops read weights where they lie. A dtype that
     * weight_keeps names stays that dtype, in a layout of the backend's own. */
    hy_status (*weight_upload)(struct hy_backend *be, struct hy_weight *w, struct hy_err *err);
    /* (optional) Whether weight_upload takes matrices of dtype dt that no host code reads
     * (HY_DTYPE_F8_B128) and keeps them in that dtype for matmul, and for the grouped MoE
     * ops where moe_takes(dt) too. NULL: none (the loader then dequantizes them). */
    bool (*weight_keeps)(enum hy_dtype dt);
    /* (optional) Copies an fp8 weight into backend memory once, at load, keeping it fp8:
     * codes (host, float8 e4m3fn, [w->rows, w->cols] row-major), scale (host, n_scale
     * float32: 1 per tensor or w->rows per output row; weight = e4m3(code) * scale) and
     * input_scale (the checkpoint's static activation scale; 0 when there is none). On
     * success w->dtype is HY_DTYPE_F8_E4M3 and w->data the backend's copy, in a layout of
     * its own that only its ops read (matmul; not embed); free it with free(be, w->data).
     * On failure *w is unchanged. NULL (the CPU backends): fp8 checkpoints run dequantized
     * to bf16 (model/load_quant.h). */
    hy_status (*weight_upload_fp8)(struct hy_backend *be, struct hy_weight *w,
                                   const uint8_t *codes, const float *scale, int64_t n_scale,
                                   float input_scale, struct hy_err *err);
    /* (optional) The middle of the attention block in one op, equal to: rope(q), rope(k)
     * (n_head and n_kv heads), then when qn and kn are not NULL rmsnorm of every head of q
     * and k (hd values, weights qn and kn), then kv_store of k and v at slots into k_pool
     * and v_pool; norm_first (qn, kn set): the norms before RoPE instead (hy_v3's order).
     * q is updated in place; k is left as it was. pos, slots: host memory. */
    void (*rope_norm_store)(struct hy_backend *be, float *q, const float *k, const float *v,
                            const int32_t *pos, const int32_t *slots, int T, int n_head, int n_kv,
                            int hd, const float *inv_freq, const struct hy_weight *qn,
                            const struct hy_weight *kn, float eps, bool norm_first,
                            void *k_pool, void *v_pool);
    /* (optional) x[r,:] += y[r,:], then out[r,:] = rmsnorm(x[r,:]) * w (as rmsnorm) for
     * r < rows: a residual add fused with the next norm. out may equal y. */
    void (*add_rmsnorm)(struct hy_backend *be, float *out, float *x, const float *y,
                        const struct hy_weight *w, int64_t rows, int64_t d, float eps);
    /* (optional) The k best logits of each row of logits [rows, vocab]: cand[r*k + j] for
     * j < k, by value descending then id ascending, NaN counted as -inf; cand and logits
     * are backend memory, scratch (topk_scratch_bytes) too. 1 <= k <= max_topk(vocab).
     * Lets the sampler take k candidates per row instead of the whole row. */
    void (*topk)(struct hy_backend *be, struct hy_cand *cand, const float *logits, int rows,
                 int64_t vocab, int k, void *scratch);
    int (*max_topk)(int64_t vocab);
    size_t (*topk_scratch_bytes)(int64_t vocab, int rows, int k);
    /* (optional) Recorded steps (CUDA graphs). step_begin(be, owner, key, max_blocks) opens
     * a step whose op calls (their order, sizes and backend pointers) are a function of
     * (owner, key) alone, and in which an attention call's sequences have at most
     * max_blocks blocks each; step_end(be) closes it. The first step with an (owner, key)
     * runs and is recorded; later ones replay the recording: their op calls only take in
     * this step's host index arrays, and the work is launched at step_end. upload/download
     * are not allowed inside a step. Returns false (nothing opened; run the ops as usual)
     * when the backend cannot record this step. step_forget(be, owner) drops owner's
     * recordings (before the memory they use is freed). */
    bool (*step_begin)(struct hy_backend *be, const void *owner, int key, int max_blocks);
    void (*step_end)(struct hy_backend *be);
    void (*step_forget)(struct hy_backend *be, const void *owner);
    /* (optional) Device memory in bytes: used and total, for /metrics. NULL on the CPU. */
    void (*mem_info)(struct hy_backend *be, uint64_t *used, uint64_t *total);
    /* (optional) The element type of the KV pool that kv_store, rope_norm_store and
     * attention take, fixed at creation: HY_DTYPE_F32 or HY_DTYPE_BF16 (rows rounded to
     * nearest even when stored, widened exactly when read; the arithmetic stays float32).
     * NULL: HY_DTYPE_F32. hy_kvstore sizes its pool by it. */
    enum hy_dtype (*kv_dtype)(const struct hy_backend *be);
    /* (optional) Batch-invariant numerics, set at start-up (before the first recorded
     * step): on, every op computes a row's result by the same arithmetic whatever else the
     * call holds (how many rows, which sequences, prefill or decode), so a sequence's logits
     * are the same bits alone or batched, under any schedule. Slower. HY_E_NOMEM when its
     * scratch cannot be had. NULL: the backend does not offer it. */
    hy_status (*set_batch_invariant)(struct hy_backend *be, bool on, struct hy_err *err);
    /* (optional) Mixture-of-experts ops (hy_v3): moe_route .. moe_takes all or none, and
     * weight_upload_n with them on a backend with weight_upload. They take backend pointers
     * only (no host arrays), so a step using them can be recorded (step_begin).
     * weight_upload_n: weight_upload of n matrices of one dtype and shape into one
     * allocation, one after another: ws[i].data = ws[0].data + i * (one matrix's bytes in
     * the backend's layout, rounded up to its alignment); free it with free(be,
     * ws[0].data). On failure nothing is changed. On such a backend the grouped ops below
     * take expert matrices uploaded this way (and may read expert e at that offset from
     * expert 0's data); on a host-memory backend (no weight_upload) gate, up and down are
     * arrays of E weights of one dtype and shape, expert e's at gate[e], lying anywhere.
     * moe_route: from router logits [T, E] (float32) and the selection bias [E], routes as
     * hy_moe_route (sigmoid scores, the k best of score + bias, equal ones to the lower
     * index, weights the unbiased scores renormalised times scale) and groups into *r
     * (struct hy_moe_route). 1 <= k <= E <= 1024.
     * moe_gate_up: for every place p of an expert e with tokens, act[p, :] =
     * silu(x[rows[p]] · gate_eᵀ) * (x[rows[p]] · up_eᵀ): act is [T*k, gate->rows], x is
     * [T, gate->cols]; gate and up point at expert 0 of their E matrices (above).
     * moe_down: y[p, :] = act[p, :] · down_eᵀ, y is [T*k, down->rows].
     * moe_combine: out[t, :] = acc[t, :] + sum over j < k of w[t*k+j] * y[sel[t*k+j], :],
     * j ascending; out may equal acc. d columns.
     * moe_takes: whether the grouped ops take matrices of dtype dt (as weight_upload
     * leaves them). */
    hy_status (*weight_upload_n)(struct hy_backend *be, struct hy_weight *ws, int n,
                                 struct hy_err *err);
    void (*moe_route)(struct hy_backend *be, const struct hy_moe_route *r, const float *logits,
                      const float *bias, int T, int E, int k, float scale);
    void (*moe_gate_up)(struct hy_backend *be, float *act, const float *x,
                        const struct hy_weight *gate, const struct hy_weight *up, int E,
                        const struct hy_moe_route *r, int T, int k);
    void (*moe_down)(struct hy_backend *be, float *y, const float *act,
                     const struct hy_weight *down, int E, const struct hy_moe_route *r, int T,
                     int k);
    void (*moe_combine)(struct hy_backend *be, float *out, const float *acc, const float *y,
                        const struct hy_moe_route *r, int T, int k, int64_t d);
    bool (*moe_takes)(enum hy_dtype dt);
    /* (optional) Moves n (2..4) uploaded weights of one dtype and cols into one allocation,
     * one after another in the order given, so that matmul_n / matmul_glu can take them in
     * one product; each ws[i]->data then points into it, and free(be, ws[i]->data) of all n
     * releases it (the last one frees it). false: nothing changed (a dtype or padding it
     * does not fuse, or no memory); the weights then work as before, one product each. */
    bool (*weight_fuse)(struct hy_backend *be, struct hy_weight *const *ws, int n);
    /* (optional) outs[i] = x · ws[i]ᵀ for i < n (n <= 4; the ws share cols), as n matmul
     * calls up to float rounding; one product when the weights were fused. No out overlaps
     * x. */
    void (*matmul_n)(struct hy_backend *be, float *const *outs, const float *x,
                     const struct hy_weight *const *ws, int n, int T);
    /* (optional) out = silu(x · gateᵀ) * (x · upᵀ), as matmul, matmul, silu_mul up to float
     * rounding; tmp ([T, up.rows]) is the op's to overwrite. out, tmp and x do not overlap. */
    void (*matmul_glu)(struct hy_backend *be, float *out, float *tmp, const float *x,
                       const struct hy_weight *gate, const struct hy_weight *up, int T);
};

struct hy_backend {
    const struct hy_backend_i *i;
    void *ctx; /* backend private state */
};

#endif
