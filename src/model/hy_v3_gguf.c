/* hy_v3_gguf.c: a hy_v3 model from a GGUF file in llama.cpp's "hy_v3" layout (its
 * conversion/hunyuan.py HYV3Model and src/models/hy-v3.cpp): the hy_v3.expert_* keys, and the
 * tensors blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_q_norm, attn_k_norm, attn_output,
 * ffn_norm}, dense layers blk.N.ffn_{gate,up,down}, MoE layers (those with
 * blk.N.ffn_gate_inp) blk.N.ffn_gate_inp [E, hidden], blk.N.exp_probs_b [E] (the selection
 * bias; ".bias" suffixed accepted too), the stacked experts blk.N.ffn_{gate,up}_exps
 * (ne {hidden, F, E}; or one blk.N.ffn_gate_up_exps, ne {hidden, 2F, E}, gate rows first)
 * and blk.N.ffn_down_exps (ne {F, hidden, E}), the shared expert blk.N.ffn_{gate,up,down}_shexp.
 * Each expert is a slice of its stack, bound in place. load_gguf.h has the contract. */
#include "model/hy_v3.h"
#include "model/load_gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define A "hy_v3."

static hy_status get_u(const struct hy_gguf *g, const char *key, bool required, int64_t *out,
                       struct hy_err *err)
{
    uint64_t v = (uint64_t)*out;
    hy_status s = hy_gguf_get_uint(g, key, required, &v, err);
    if (!s && v > (1u << 30))
        s = hy_err_set(err, HY_E_RANGE, "%s: %s = %llu is too large", hy_gguf_path(g), key,
                       (unsigned long long)v);
    if (!s)
        *out = (int64_t)v;
    return s;
}

static bool has_tensor(const struct hy_gguf *g, const char *fmt, int i)
{
    char name[HY_GGUF_MAX_NAME];
    snprintf(name, sizeof name, fmt, i);
    return hy_gguf_find_tensor(g, name) != NULL;
}

hy_status hy_load_gguf_hyv3_config(struct hy_config *c, const struct hy_gguf *g, struct hy_err *err)
{
    int64_t fs = -1, gating = 2;
    bool norm = true;
    double scale = 1.0; /* absent: no scaling, as llama.cpp */
    hy_status s = get_u(g, A "expert_count", true, &c->num_experts, err);
    if (!s)
        s = get_u(g, A "expert_used_count", true, &c->num_experts_per_tok, err);
    if (!s)
        s = get_u(g, A "expert_feed_forward_length", true, &c->moe_intermediate_size, err);
    if (!s)
        s = get_u(g, A "expert_shared_feed_forward_length", false, &fs, err);
    if (!s)
        s = get_u(g, A "expert_gating_func", false, &gating, err);
    if (!s)
        s = hy_gguf_get_bool(g, A "expert_weights_norm", false, &norm, err);
    if (!s)
        s = hy_gguf_get_real(g, A "expert_weights_scale", false, &scale, err);
    if (s)
        return s;
    if (gating != 2 || !norm) /* llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID */
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: hy_v3 with expert_gating_func %lld, "
                          "expert_weights_norm %d is not supported (2 = sigmoid, true)",
                          hy_gguf_path(g), (long long)gating, norm);
    const int64_t fe = c->moe_intermediate_size;
    if (fs < 0)
        fs = fe;
    if (fe < 1 || fs % fe)
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: expert_shared_feed_forward_length %lld is "
                          "not a multiple of expert_feed_forward_length %lld", hy_gguf_path(g),
                          (long long)fs, (long long)fe);
    c->num_shared_experts = fs / fe;
    c->router_scaling_factor = scale;
    c->n_moe_layers = 0;
    c->moe_expert_bias = false;
    for (int i = 0; i < c->num_hidden_layers && i < HY_CONFIG_MAX_LAYERS; i++) {
        c->layer_moe[i] = has_tensor(g, "blk.%d.ffn_gate_inp.weight", i);
        c->n_moe_layers += c->layer_moe[i];
        if (c->layer_moe[i] && (has_tensor(g, "blk.%d.exp_probs_b", i) ||
                                has_tensor(g, "blk.%d.exp_probs_b.bias", i)))
            c->moe_expert_bias = true;
    }
    return HY_OK;
}

static hy_status bindf(struct hy_weight *w, const struct hy_gguf *g, int64_t rows, int64_t cols,
                       const char *fmt, int i, struct hy_err *err)
{
    char name[HY_GGUF_MAX_NAME];
    snprintf(name, sizeof name, fmt, i);
    return hy_load_gguf_bind(w, g, name, rows, cols, err);
}

/* w[e] = rows row0 .. row0+rows-1 of expert e's [stack_rows, cols] slab of tensor fmt. */
static hy_status bind_stack(struct hy_weight *w, const struct hy_gguf *g, const char *fmt, int i,
                            int64_t E, int64_t stack_rows, int64_t row0, int64_t rows,
                            int64_t cols, struct hy_err *err)
{
    char name[HY_GGUF_MAX_NAME];
    snprintf(name, sizeof name, fmt, i);
    const struct hy_gguf_tensor *t = hy_gguf_find_tensor(g, name);
    if (!t)
        return hy_err_set(err, HY_E_FORMAT, "%s: missing tensor %s", hy_gguf_path(g), name);
    if (t->n_dims != 3 || t->ne[0] != (uint64_t)cols || t->ne[1] != (uint64_t)stack_rows ||
        t->ne[2] != (uint64_t)E)
        return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s: the metadata needs ne [%lld,%lld,%lld]",
                          hy_gguf_path(g), name, (long long)cols, (long long)stack_rows,
                          (long long)E);
    int dt = hy_ggml_to_dtype(t->ggml_type);
    if (dt < 0)
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: tensor %s has type %s, which hymt does not "
                          "read", hy_gguf_path(g), name, hy_ggml_type_name(t->ggml_type));
    const size_t rb = hy_dtype_row_bytes((enum hy_dtype)dt, cols);
    for (int64_t e = 0; e < E; e++)
        w[e] = (struct hy_weight){(enum hy_dtype)dt, rows, cols,
                                  (const char *)t->data + (size_t)(e * stack_rows + row0) * rb};
    return HY_OK;
}

static hy_status bind_bias(struct hy_moe_weights *mw, const struct hy_gguf *g,
                           const struct hy_config *c, int i, struct hy_err *err)
{
    const int64_t E = c->num_experts;
    mw->bias = calloc((size_t)E, sizeof *mw->bias);
    if (!mw->bias)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (!c->moe_expert_bias)
        return HY_OK;
    struct hy_weight b;
    bool plain = has_tensor(g, "blk.%d.exp_probs_b", i);
    hy_status s = bindf(&b, g, 0, E, plain ? "blk.%d.exp_probs_b" : "blk.%d.exp_probs_b.bias", i,
                        err);
    if (!s && b.dtype != HY_DTYPE_F32 && b.dtype != HY_DTYPE_F16 && b.dtype != HY_DTYPE_BF16)
        s = hy_err_set(err, HY_E_UNSUPPORTED, "%s: blk.%d.exp_probs_b is %s (want F32)",
                       hy_gguf_path(g), i, hy_dtype_name(b.dtype));
    if (!s)
        hy_dtype_to_f32(mw->bias, b.data, b.dtype, (size_t)E);
    return s;
}

static hy_status bind_moe(struct hy_moe_weights *mw, const struct hy_gguf *g,
                          const struct hy_config *c, int i, struct hy_err *err)
{
    const int64_t d = c->hidden_size, f = c->moe_intermediate_size, E = c->num_experts;
    const int64_t fs = f * c->num_shared_experts;
    hy_status s = bindf(&mw->router, g, E, d, "blk.%d.ffn_gate_inp.weight", i, err);
    if (!s)
        s = bind_bias(mw, g, c, i, err);
    if (!s && has_tensor(g, "blk.%d.ffn_gate_up_exps.weight", i)) {
        s = bind_stack(mw->gate, g, "blk.%d.ffn_gate_up_exps.weight", i, E, 2 * f, 0, f, d, err);
        if (!s)
            s = bind_stack(mw->up, g, "blk.%d.ffn_gate_up_exps.weight", i, E, 2 * f, f, f, d, err);
    } else if (!s) {
        s = bind_stack(mw->gate, g, "blk.%d.ffn_gate_exps.weight", i, E, f, 0, f, d, err);
        if (!s)
            s = bind_stack(mw->up, g, "blk.%d.ffn_up_exps.weight", i, E, f, 0, f, d, err);
    }
    if (!s)
        s = bind_stack(mw->down, g, "blk.%d.ffn_down_exps.weight", i, E, d, 0, d, f, err);
    if (!s)
        s = bindf(&mw->sh_gate, g, fs, d, "blk.%d.ffn_gate_shexp.weight", i, err);
    if (!s)
        s = bindf(&mw->sh_up, g, fs, d, "blk.%d.ffn_up_shexp.weight", i, err);
    if (!s)
        s = bindf(&mw->sh_down, g, d, fs, "blk.%d.ffn_down_shexp.weight", i, err);
    return s;
}

static hy_status bind_layers(struct hy_model *m, struct hy_err *err)
{
    const struct hy_config *c = &m->cfg;
    const struct hy_gguf *g = m->gguf;
    const size_t E = (size_t)c->num_experts;
    m->layers = calloc((size_t)c->num_hidden_layers, sizeof *m->layers);
    m->moe = calloc((size_t)c->n_moe_layers + 1, sizeof *m->moe);
    if (!m->layers || !m->moe)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for %lld layers",
                          (long long)c->num_hidden_layers);
    hy_status s = HY_OK;
    for (int i = 0, j = 0; !s && i < c->num_hidden_layers; i++) {
        struct hy_layer_weights *l = &m->layers[i];
        if ((s = hy_v3_bind_attn(l, NULL, g, c, i, err)))
            break;
        if (!c->layer_moe[i]) {
            s = bindf(&l->w_gate, g, c->intermediate_size, c->hidden_size,
                      "blk.%d.ffn_gate.weight", i, err);
            if (!s)
                s = bindf(&l->w_up, g, c->intermediate_size, c->hidden_size,
                          "blk.%d.ffn_up.weight", i, err);
            if (!s)
                s = bindf(&l->w_down, g, c->hidden_size, c->intermediate_size,
                          "blk.%d.ffn_down.weight", i, err);
            continue;
        }
        struct hy_moe_weights *mw = &m->moe[j++];
        mw->gate = calloc(3 * E, sizeof *mw->gate);
        if (!mw->gate) {
            s = hy_err_set(err, HY_E_NOMEM, "out of memory");
            break;
        }
        mw->up = mw->gate + E;
        mw->down = mw->gate + 2 * E;
        l->moe = mw;
        s = bind_moe(mw, g, c, i, err);
    }
    return s;
}

hy_status hy_load_gguf_hyv3_bind(struct hy_model *m, struct hy_err *err)
{
    const struct hy_config *c = &m->cfg;
    const struct hy_gguf *g = m->gguf;
    hy_status s =
        hy_load_gguf_bind(&m->tok_embd, g, "token_embd.weight", c->vocab_size, c->hidden_size, err);
    if (!s)
        s = hy_load_gguf_bind(&m->out_norm, g, "output_norm.weight", 0, c->hidden_size, err);
    if (!s && c->tie_word_embeddings)
        m->lm_head = m->tok_embd;
    else if (!s)
        s = hy_load_gguf_bind(&m->lm_head, g, "output.weight", c->vocab_size, c->hidden_size, err);
    if (!s)
        s = bind_layers(m, err);
    if (!s)
        hy_v3_count_params(m);
    return s;
}
