/* hunyuan.h: a HunYuanDenseV1 or hy_v3 model (config + weights on a backend) and the forward
 * pass they share (hy_v3's own parts, the mixture of experts: model/hy_v3.h).
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

#include <stdbool.h>
#include <stdint.h>

struct hy_moe_weights;

struct hy_layer_weights {
    struct hy_weight attn_norm; /* [hidden] input_layernorm */
    struct hy_weight wq;        /* [n_head*hd, hidden] */
    struct hy_weight wk;        /* [n_kv*hd, hidden] */
    struct hy_weight wv;        /* [n_kv*hd, hidden] */
    struct hy_weight q_norm;    /* [hd] query_layernorm, shared by all heads */
    struct hy_weight k_norm;    /* [hd] key_layernorm */
    struct hy_weight wo;        /* [hidden, n_head*hd] */
    struct hy_weight ffn_norm;  /* [hidden] post_attention_layernorm */
    struct hy_weight w_gate;    /* [ffn, hidden] */
    struct hy_weight w_up;      /* [ffn, hidden] */
    struct hy_weight w_down;    /* [hidden, ffn] */
    const struct hy_moe_weights *moe; /* hy_v3 MoE layer (then w_gate..w_down unset); else NULL */
};

/* The tensors of a decoder layer, in binding order: their names in a transformers
 * checkpoint ("model.layers.N.<hf>.weight") and in a GGUF file ("blk.N.<gguf>.weight",
 * model doc 3.4), their shape from the config (rows 0: a vector of cols elements), and
 * their slot in the layer given (w; NULL when none is). One table for the loaders of both
 * formats and for `hymt convert`. */
#define HY_LAYER_TENSORS 11
struct hy_layer_tensor {
    const char *hf, *gguf;
    int64_t rows, cols;
    struct hy_weight *w;
};
void hy_layer_tensors(const struct hy_config *c, struct hy_layer_weights *l,
                      struct hy_layer_tensor out[HY_LAYER_TENSORS]);

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
    int64_t weight_device_bytes;     /* device memory the weights took at load (mem_info), or 0 */
    int64_t n_params;                /* parameters used by the forward pass */
    int64_t n_active_params;         /* ... of which one token uses (= n_params when dense) */
    struct hy_moe_weights *moe;      /* hy_v3: [cfg.n_moe_layers], owned (hy_v3.c); else NULL */
};

/* Optional per-layer tensor dump for debugging numerics: called with each named
 * intermediate ("attn_norm", "q_rope", "q_norm", "attn_out", "ffn_out", "x", ...);
 * data is backend memory, [rows, cols]. layer is -1 outside the layer loop. */
typedef void (*hy_dump_fn)(void *ctx, const char *name, int layer, const float *data, int64_t rows,
                           int64_t cols);

/* The paged KV cache storage: n_blocks blocks of block_size token rows per layer, for K and
 * for V (K after RoPE and QK-norm), in the backend's KV dtype (kv_dtype op: float32, or
 * bf16 on CUDA, half the bytes a token). Block bookkeeping (which sequence owns which block)
 * lives in the engine; the model only reads and writes rows through block tables. */
struct hy_kvstore {
    int n_blocks, block_size;
    int64_t kvd;      /* n_kv * head_dim elements per row */
    enum hy_dtype dtype; /* of the elements: HY_DTYPE_F32 or HY_DTYPE_BF16 */
    int n_layers;
    void **k, **v;    /* [n_layers] backend memory, each [(n_blocks+1)*block_size, kvd] */
    struct hy_backend *be;
    /* Block n_blocks is never handed out: the padding rows of a recorded step write and
     * read it (pad_table is its one-entry block table). */
    int pad_block;
    int32_t pad_table[1];
};

/* One sequence's part of a batched step. */
struct hy_batch_seq {
    const int32_t *ids;    /* n_tokens new token ids (host memory) */
    int n_tokens;          /* >= 1 */
    int pos0;              /* position of the first new token (= tokens already cached) */
    const int32_t *blocks; /* block table covering positions 0 .. pos0+n_tokens-1 */
    int n_logits;          /* logits wanted for the last n_logits new tokens (0..n_tokens) */
};

/* Activation scratch for steps of up to max_tokens tokens over up to max_seqs sequences
 * and max_logits rows of logits, allocated once; hy_model_forward_batch never allocates. */
struct hy_scratch {
    int max_tokens, max_seqs, max_logits;
    float *x;      /* [T, hidden] residual stream */
    float *h;      /* [T, hidden] normed input / block outputs */
    float *q;      /* [T, n_head*hd] */
    float *k, *v;  /* [T, n_kv*hd] new keys and values before they go to the pool */
    float *att;    /* [T, n_head*hd] */
    float *gate;   /* [T, ffn] */
    float *up;     /* [T, ffn] */
    float *logits; /* [max_logits, vocab] */
    int32_t *ids, *pos, *slots, *rows; /* host [T]: packed ids, positions, pool rows, logit rows */
    struct hy_attn_seq *aseqs;          /* host [max_seqs] */
    /* Sampling candidates (backends with the topk op; else cand is NULL, topk_k 0). */
    int topk_k;                 /* candidates per row, <= HY_TOPK_K */
    struct hy_cand *cand;       /* backend [max_seqs, topk_k] */
    void *topk_scratch;         /* backend, the op's scratch */
    /* Recorded decode steps (backends with step_begin): 0 turns them off; else the block
     * table length every sequence of such a step stays within (the caller's longest
     * sequence / block_size). Set by the caller after creation. Recordings belong to the
     * scratch and hold the addresses of the model's weights and of the first kvstore a
     * recorded step used; steps with another kvstore are not recorded. */
    int graph_max_blocks;
    const struct hy_kvstore *graph_kv; /* the pool recorded steps use (set at the first) */
    struct hy_batch_seq *pad_seqs; /* host [max_seqs]: a decode step padded to its key */
    struct hy_moe_scratch *moe;    /* hy_v3's routing buffers (hy_v3.c); else NULL */
    hy_dump_fn dump;
    void *dump_ctx;
};

/* Most sampling candidates per row a step hands back (hy_model_forward_batch_topk). */
#define HY_TOPK_K 32

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
/* For the loaders of src/model/: binds tensor `name` of st to *w with the shape (rows, cols)
 * the config needs (rows 0: a vector of cols); HY_E_FORMAT naming the file and tensor. */
hy_status hy_model_bind_st(struct hy_weight *w, const struct hy_st *st, const char *name,
                           int64_t rows, int64_t cols, struct hy_err *err);
/* For the dense loaders: allocates m->layers and binds every decoder layer's tensors
 * (hy_layer_tensors) from the safetensors set st by their transformers names or, when st
 * is NULL, from the GGUF file g by their GGUF names; adds their elements to m->n_params.
 * On failure what was set is freed by hy_model_destroy. */
struct hy_gguf;
hy_status hy_model_bind_layers(struct hy_model *m, const struct hy_st *st,
                               const struct hy_gguf *g, struct hy_err *err);

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
};
hy_status hy_model_load_opts(struct hy_model **out, const char *dir, struct hy_backend *be,
                             const struct hy_model_opts *opts, struct hy_err *err);
void hy_model_destroy(struct hy_model *m); /* accepts NULL */

hy_status hy_kvstore_create(struct hy_kvstore **out, const struct hy_model *m, int n_blocks,
                           int block_size, struct hy_err *err);
void hy_kvstore_destroy(struct hy_kvstore *kv); /* accepts NULL */
/* Bytes one block of block_size tokens takes on m's backend (K and V of every layer), and
 * the bytes of a whole store (its padding block included). */
int64_t hy_kvstore_block_bytes(const struct hy_model *m, int block_size);
int64_t hy_kvstore_bytes(const struct hy_kvstore *kv);
/* max_logits: the most logit rows one step may want (1..max_tokens): an engine wants one a
 * sequence, a whole-prompt scorer one a token. The logits buffer is max_logits x vocab
 * floats (0.5 MiB a row for the 7B vocabulary). */
hy_status hy_scratch_create(struct hy_scratch **out, const struct hy_model *m, int max_tokens,
                            int max_seqs, int max_logits, struct hy_err *err);
void hy_scratch_destroy(struct hy_scratch *s, const struct hy_model *m); /* accepts NULL */

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
