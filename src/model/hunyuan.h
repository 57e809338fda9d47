/* hunyuan.h: a HunYuanDenseV1 or hy_v3 model (config + weights on a backend) and the forward
 * pass they share (hy_v3's own parts, the mixture of experts: model/hy_v3.h). The model's
 * API; its parts have their own headers, included here: weights.h (the weight structs and
 * the tensor table the loaders bind by), state.h (the paged KV storage and the step
 * scratch the forward pass runs in), dump.h (the debugging hook for named intermediates).
 * hy_model_load reads DIR/config.json and the safetensors checkpoint, checks every tensor
 * the config needs is present with the right shape and a supported dtype, and keeps the
 * weights where they lie (mmapped for the CPU backend). A tied config with a stored
 * lm_head.weight uses embed_tokens when the two are equal and lm_head.weight when they
 * differ, as transformers 5.17 does (model doc 3.5 says others always use embed_tokens).
 * The forward pass is batched over sequences and reads K/V from a paged pool
 * (struct hy_kvstore) through per-sequence block tables; a struct hy_ctx wraps one
 * sequence with private blocks. Storage and scratch are allocated at creation; the
 * forward pass never allocates.
 * Engine thread only (the backend is single-threaded from the caller's side).
 * Errors: HY_E_IO / HY_E_FORMAT / HY_E_UNSUPPORTED naming the file or tensor at load;
 * HY_E_RANGE from forward when the context or token budget would overflow or an id is out
 * of the vocabulary, and then the context is unchanged. */
#ifndef HY_MODEL_HUNYUAN_H
#define HY_MODEL_HUNYUAN_H

#include "backend/backend.h"
#include "formats/config.h"
#include "model/dump.h"
#include "model/state.h"
#include "model/weights.h"

#include <stdbool.h>
#include <stdint.h>

struct hy_v3_dev;

struct hy_model {
    struct hy_config cfg;
    struct hy_backend *be;           /* borrowed; outlives the model */
    struct hy_st *st;                /* owned: the mapped checkpoint files */
    struct hy_gguf *gguf;            /* owned: the mapped GGUF file (then st is NULL) */
    struct hy_weight tok_embd;       /* [vocab, hidden] */
    struct hy_weight out_norm;       /* [hidden] model.norm */
    struct hy_weight lm_head;        /* [vocab, hidden]; = tok_embd when tied */
    struct hy_layer_weights *layers; /* [n_layers] */
    float *inv_freq;                 /* [hd/2] RoPE inverse frequencies, backend memory */
    bool lm_head_stored;             /* tied config and lm_head.weight stored anyway */
    bool lm_head_equal;              /* ... equal to embed_tokens bit for bit (then unused) */
    bool weights_uploaded;           /* weights copied by be->i->weight_upload (freed here) */
    bool weights_quantized;          /* projections quantized into backend memory (freed here) */
    bool embd_quantized;             /* tok_embd quantized into device memory (freed here) */
    int64_t weight_device_bytes;     /* device memory the weights took at load (mem_info), or 0 */
    int64_t n_params;                /* parameters used by the forward pass */
    int64_t n_active_params;         /* ... of which one token uses (= n_params when dense) */
    struct hy_moe_weights *moe;      /* hy_v3: [cfg.n_moe_layers], owned (hy_v3.c); else NULL */
    struct hy_v3_dev *v3dev;         /* hy_v3 on a device backend: its device buffers
                                      * (hy_v3_upload, freed by hy_v3_unbind); else NULL */
    /* Weight slots (tok_embd, out_norm, lm_head, then each layer's 11 in struct order) and
     * sharing them with another model (hy_model_opts.share_from). Dense safetensors
     * models only; otherwise bound is NULL and nothing is shared. */
    int n_slots;                     /* 3 + 11 x layers */
    struct hy_weight *bound;         /* [n_slots] each weight as bound to the checkpoint,
                                      * before quantization or upload (mapped file) */
    bool *shared;                    /* [n_slots] taken from share_from (not freed here) */
    int n_shared;                    /* slots shared */
    int64_t shared_bytes;            /* checkpoint bytes of the shared slots */
    enum hy_dtype quant;             /* the load-time quantization asked for */
};

/* One sequence's part of a batched step. */
struct hy_batch_seq {
    const int32_t *ids;    /* n_tokens new token ids (host memory) */
    int n_tokens;          /* >= 1 */
    int pos0;              /* position of the first new token (= tokens already cached) */
    const int32_t *blocks; /* block table covering positions 0 .. pos0+n_tokens-1 */
    int n_logits;          /* logits wanted for the last n_logits new tokens (0..n_tokens) */
};

/* A single sequence with its own private KV blocks: for `hymt generate`, tests and tools
 * that run one sequence. Built on the batched, paged forward pass. */
struct hy_ctx {
    const struct hy_model *m;
    int n_ctx;      /* KV capacity in tokens */
    int max_tokens; /* tokens per forward call */
    int pos;        /* tokens already in the cache */
    struct hy_kvstore *kv;
    struct hy_scratch *s;
    int32_t *blocks; /* identity block table [n_blocks] */
    hy_dump_fn dump; /* copied into the scratch at each call */
    void *dump_ctx;
};

hy_status hy_model_load(struct hy_model **out, const char *dir, struct hy_backend *be,
                        struct hy_err *err);
/* Load options. A zeroed struct loads the weights as stored (hy_model_load). */
struct hy_model_opts {
    /* HY_DTYPE_Q8_0, Q4_G128 (--quant q4; Q4_0 for weights whose in-features are not a
     * multiple of 128), Q4_0, Q4_K, Q6_K: every 2-D projection (q/k/v/o, gate/up/down) and
     * the head (a quantized copy of the embedding when tied) are quantized at load into
     * backend memory; the embedding table and the norms stay as stored. In-features must be
     * multiples of the type's block. On a backend with weight_upload (CUDA) each is
     * quantized on the host and uploaded (all five stay quantized on CUDA).
     * HY_DTYPE_F8_E4M3: per-tensor fp8 (model/load_quant.h), dequantized to bf16 at load,
     * or kept fp8 on a backend with weight_upload_fp8 (CUDA), as the projections of fp8
     * checkpoints are. 0 (HY_DTYPE_F32): as stored; other values are refused. */
    enum hy_dtype quant;
    /* Optional, borrowed: a model already loaded on a backend of the same kind with the
     * same options and the same quant (a second engine's model beside the first, as
     * --chimera loads). A weight whose checkpoint tensor equals share_from's at the same
     * slot (dtype and shape, a hash of sampled pages, then every byte compared) is not
     * loaded again: it points at share_from's copy (device memory, quantized buffer or
     * mapped file), which share_from keeps owning; so share_from must outlive this model
     * (destroy this one first). Weights an fp8 upload keeps in fp8 are not shared. A
     * different backend kind or quant shares nothing (logged). */
    const struct hy_model *share_from;
};
hy_status hy_model_load_opts(struct hy_model **out, const char *dir, struct hy_backend *be,
                             const struct hy_model_opts *opts, struct hy_err *err);
void hy_model_destroy(struct hy_model *m); /* accepts NULL */

/* Runs one batched step: every sequence's new tokens go through the model together; their
 * K/V rows are written to the pool through their block tables, attention reads the pool.
 * Writes float32 logits to host memory `logits` (may be NULL when no sequence wants any):
 * the n_logits rows of each sequence in order, [sum of n_logits, vocab].
 * HY_E_RANGE, with nothing changed, when the step has more tokens or sequences than the
 * scratch, an id is outside the vocabulary, or n_tokens/n_logits/pos0 are out of range.
 * Block tables are the caller's (the engine's): they must cover every position used. */
hy_status hy_model_forward_batch(const struct hy_model *m, struct hy_kvstore *kv,
                                 struct hy_scratch *s, const struct hy_batch_seq *seqs, int n_seqs,
                                 float *logits, struct hy_err *err);

/* Like hy_model_forward_batch, but the logits stay in backend memory and the s->topk_k
 * best of each wanted row (struct hy_cand, best first, NaN as -inf) go to host memory
 * cand [sum of n_logits, topk_k]. Needs s->topk_k > 0 and n_logits <= 1 per sequence.
 * When the backend records steps and s->graph_max_blocks > 0, a step of decode tokens
 * only (n_tokens = n_logits = 1) is padded to the next power of two (at most
 * s->max_seqs) with rows on the pool's padding block and replayed from a recording. */
hy_status hy_model_forward_batch_topk(const struct hy_model *m, struct hy_kvstore *kv,
                                      struct hy_scratch *s, const struct hy_batch_seq *seqs,
                                      int n_seqs, struct hy_cand *cand, struct hy_err *err);
/* Downloads row `row` (< the number of wanted rows) of the last step's logits, [vocab]. */
void hy_model_logits_row(const struct hy_model *m, const struct hy_scratch *s, int row,
                         float *dst);

hy_status hy_ctx_create(struct hy_ctx **out, const struct hy_model *m, int n_ctx, int max_tokens,
                        struct hy_err *err);
void hy_ctx_destroy(struct hy_ctx *c); /* accepts NULL */
void hy_ctx_reset(struct hy_ctx *c);   /* forget the cached tokens */

/* Runs T tokens at positions c->pos .. c->pos+T-1, appends their K/V to the cache and
 * writes float32 logits to host memory `logits`: [T, vocab] when all_logits, else only the
 * last position's [vocab]. logits may be NULL to skip the head. */
hy_status hy_model_forward(struct hy_ctx *c, const int32_t *ids, int T, bool all_logits,
                           float *logits, struct hy_err *err);

#endif
