/* state.h: the memory the forward pass runs in (state.c): the paged KV storage (struct
 * hy_kvstore, rows reached through block tables the engine keeps) and the step scratch
 * (struct hy_scratch, activations for the largest step). Both are sized at creation on the
 * model's backend and never grow; the forward pass (hunyuan.h) never allocates. Engine
 * thread only. Errors: HY_E_NOMEM (host or backend memory), HY_E_RANGE for sizes out of
 * range; on failure nothing stays allocated. */
#ifndef HY_MODEL_STATE_H
#define HY_MODEL_STATE_H

#include "backend/backend.h"
#include "core/dtype.h"
#include "model/dump.h"

#include <stdint.h>

struct hy_model;
struct hy_batch_seq;
struct hy_moe_scratch;

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

#endif
