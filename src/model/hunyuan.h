/* hunyuan.h: a HunYuanDenseV1 model (config + weights on a backend) and its forward pass.
 * hy_model_load reads DIR/config.json and the safetensors checkpoint, checks every tensor
 * the config needs is present with the right shape and a supported dtype, and keeps the
 * weights where they lie (mmapped for the CPU backend). A tied config with a stored
 * lm_head.weight uses embed_tokens when the two are equal and lm_head.weight when they
 * differ, as transformers 5.17 does (model doc 3.5 says others always use embed_tokens).
 * A struct hy_ctx holds one sequence's KV cache and the scratch for up to max_tokens tokens
 * per call, all allocated at creation; hy_model_forward never allocates.
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
};

struct hy_model {
    struct hy_config cfg;
    struct hy_backend *be;           /* borrowed; outlives the model */
    struct hy_st *st;                /* owned: the mapped checkpoint files */
    struct hy_weight tok_embd;       /* [vocab, hidden] */
    struct hy_weight out_norm;       /* [hidden] model.norm */
    struct hy_weight lm_head;        /* [vocab, hidden]; = tok_embd when tied */
    struct hy_layer_weights *layers; /* [n_layers] */
    float *inv_freq;                 /* [hd/2] RoPE inverse frequencies, backend memory */
    bool lm_head_stored;             /* tied config and lm_head.weight stored anyway */
    bool lm_head_equal;              /* ... equal to embed_tokens bit for bit (then unused) */
    int64_t n_params;                /* parameters used by the forward pass */
};

/* Optional per-layer tensor dump for debugging numerics: called with each named
 * intermediate ("attn_norm", "q_rope", "q_norm", "attn_out", "ffn_out", "x", ...);
 * data is backend memory, [rows, cols]. layer is -1 outside the layer loop. */
typedef void (*hy_dump_fn)(void *ctx, const char *name, int layer, const float *data, int64_t rows,
                           int64_t cols);

struct hy_ctx {
    const struct hy_model *m;
    int n_ctx;      /* KV capacity in tokens */
    int max_tokens; /* tokens per forward call */
    int pos;        /* tokens already in the cache */
    /* KV cache, backend memory: per layer [n_ctx, n_kv*hd] (K after RoPE and QK-norm) */
    float **k_cache, **v_cache;
    /* scratch, backend memory, sized for max_tokens */
    float *x;      /* [T, hidden] residual stream */
    float *h;      /* [T, hidden] normed input */
    float *q;      /* [T, n_head*hd] */
    float *att;    /* [T, n_head*hd] */
    float *gate;   /* [T, ffn] */
    float *up;     /* [T, ffn] */
    float *logits; /* [T, vocab] */
    int32_t *pos_ids; /* host [max_tokens] */
    hy_dump_fn dump;
    void *dump_ctx;
};

hy_status hy_model_load(struct hy_model **out, const char *dir, struct hy_backend *be,
                        struct hy_err *err);
void hy_model_destroy(struct hy_model *m); /* accepts NULL */

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
