/* weights.h: a decoder layer's weights and the table of its tensors (names in a
 * transformers checkpoint and in a GGUF file, shapes from the config), which the loaders
 * of both formats and `hymt convert` share; and the binders src/model/'s loaders use. The
 * weights point into the mapped checkpoint or into backend memory the model owns
 * (hunyuan.h); nothing here allocates but hy_model_bind_layers (m->layers). Load-time only. */
#ifndef HY_MODEL_WEIGHTS_H
#define HY_MODEL_WEIGHTS_H

#include "backend/backend.h"
#include "formats/config.h"

#include <stdint.h>

struct hy_moe_weights;
struct hy_model;
struct hy_st;
struct hy_gguf;

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

/* For the loaders of src/model/: binds tensor `name` of st to *w with the shape (rows, cols)
 * the config needs (rows 0: a vector of cols); HY_E_FORMAT naming the file and tensor. */
hy_status hy_model_bind_st(struct hy_weight *w, const struct hy_st *st, const char *name,
                           int64_t rows, int64_t cols, struct hy_err *err);
/* For the dense loaders: allocates m->layers and binds every decoder layer's tensors
 * (hy_layer_tensors) from the safetensors set st by their transformers names or, when st
 * is NULL, from the GGUF file g by their GGUF names; adds their elements to m->n_params.
 * On failure what was set is freed by hy_model_destroy. */
hy_status hy_model_bind_layers(struct hy_model *m, const struct hy_st *st,
                               const struct hy_gguf *g, struct hy_err *err);

#endif
