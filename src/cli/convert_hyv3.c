/* convert_hyv3.c: `hymt convert` for a hy_v3 checkpoint: one GGUF file laid out as
 * llama.cpp's conversion/hunyuan.py (HYV3Model) writes it and src/models/hy-v3.cpp reads it:
 * general.architecture "hy_v3", the common hy_v3.* keys (TextModel) plus
 * expert_feed_forward_length, expert_shared_feed_forward_length (width x shared experts),
 * expert_weights_norm, expert_weights_scale (router_scaling_factor) and expert_gating_func
 * 2 (sigmoid); tensors by the names model/hy_v3_gguf.c reads, each layer's experts stacked
 * into blk.N.ffn_{gate,up,down}_exps (expert-major), the selection bias as blk.N.exp_probs_b.
 * Types: convert_type.c. The sources come through a find callback, so `hymt make-test-model
 * --gguf` writes the same file from generated values as from a checkpoint's tensors. */
#include "cli/convert.h"

#include "core/log.h"
#include "formats/safetensors.h"
#include "model/hy_v3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define A "hy_v3"

struct v3plan {
    hy_convert_find_fn find;
    void *find_ctx;
    const struct hy_config *cfg;
    enum hy_convert_type type;
    struct hy_convert_item *it;
    int n;
    struct hy_convert_part *pool; /* the parts of every item */
    size_t n_pool;
};

static hy_status meta(struct hy_gguf_w *w, const struct hy_config *c, const char *name,
                      enum hy_convert_type type, struct hy_err *err)
{
    const struct {
        const char *key;
        int64_t v;
    } u[] = {
        {A ".block_count", c->num_hidden_layers},
        {A ".context_length", c->max_position_embeddings},
        {A ".embedding_length", c->hidden_size},
        {A ".feed_forward_length", c->intermediate_size},
        {A ".attention.head_count", c->num_attention_heads},
        {A ".attention.head_count_kv", c->num_key_value_heads},
        {A ".expert_count", c->num_experts},
        {A ".expert_used_count", c->num_experts_per_tok},
        {A ".attention.key_length", c->head_dim},
        {A ".attention.value_length", c->head_dim},
        {A ".expert_feed_forward_length", c->moe_intermediate_size},
        {A ".expert_shared_feed_forward_length", c->moe_intermediate_size * c->num_shared_experts},
        {A ".expert_gating_func", 2},
        {"general.file_type", hy_convert_file_type(type)},
    };
    hy_status s = hy_gguf_w_str(w, "general.architecture", A, err);
    if (!s)
        s = hy_gguf_w_str(w, "general.name", name, err);
    for (size_t i = 0; i < sizeof u / sizeof u[0] && !s; i++)
        s = hy_gguf_w_u32(w, u[i].key, (uint32_t)u[i].v, err);
    if (!s)
        s = hy_gguf_w_f32(w, A ".rope.freq_base", (float)c->rope_base, err);
    if (!s)
        s = hy_gguf_w_f32(w, A ".attention.layer_norm_rms_epsilon", (float)c->rms_norm_eps, err);
    if (!s)
        s = hy_gguf_w_bool(w, A ".expert_weights_norm", true, err);
    if (!s)
        s = hy_gguf_w_f32(w, A ".expert_weights_scale", (float)c->router_scaling_factor, err);
    if (!s && type >= HY_CONVERT_Q8_0)
        s = hy_gguf_w_u32(w, "general.quantization_version", 2, err);
    if (!s) /* the exact theta (load_gguf.h) */
        s = hy_gguf_w_f64(w, "hymt.rope.freq_base", c->rope_base, err);
    return s;
}

/* An item of n sources named by fmt (printf with layer i, then the source index e). */
static hy_status add(struct v3plan *p, const char *gguf, const char *fmt, int i, int n,
                     struct hy_err *err)
{
    struct hy_convert_item *it = &p->it[p->n];
    struct hy_convert_part *part = p->pool + p->n_pool;
    snprintf(it->name, sizeof it->name, gguf, i);
    for (int e = 0; e < n; e++) {
        char hf[HY_ST_MAX_NAME];
        snprintf(hf, sizeof hf, fmt, i, e);
        if (!p->find(p->find_ctx, hf, &part[e]))
            return hy_err_set(err, HY_E_FORMAT, "missing tensor %s", hf);
        if (part[e].n_dims < 1 || part[e].rows < 1 || part[e].cols < 1)
            return hy_err_set(err, HY_E_UNSUPPORTED, "tensor %s: convert reads 1-D or 2-D F32, "
                              "F16 or BF16 tensors", hf);
        if (e && (part[e].n_dims != part[0].n_dims || part[e].rows != part[0].rows ||
                  part[e].cols != part[0].cols))
            return hy_err_set(err, HY_E_FORMAT, "tensor %s: shape differs from expert 0's", hf);
    }
    p->n_pool += (size_t)n;
    it->parts = part;
    it->n_parts = n;
    it->ne[0] = (uint64_t)part[0].cols;
    it->ne[1] = (uint64_t)part[0].rows;
    it->ne[2] = (uint64_t)n;
    it->n_dims = n > 1 ? 3 : part[0].n_dims;
    it->type = hy_convert_tensor_type(p->type, it->name, it->n_dims, it->ne[0],
                                      (int)p->cfg->num_hidden_layers, p->cfg->tie_word_embeddings);
    p->n++;
    return HY_OK;
}

static hy_status plan_layer(struct v3plan *p, int i, struct hy_err *err)
{
    static const char *const dense[][2] = {
        {"blk.%d.ffn_gate.weight", "model.layers.%d.mlp.gate_proj.weight"},
        {"blk.%d.ffn_up.weight", "model.layers.%d.mlp.up_proj.weight"},
        {"blk.%d.ffn_down.weight", "model.layers.%d.mlp.down_proj.weight"},
    };
    static const char *const moe[][2] = {
        {"blk.%d.ffn_gate_inp.weight", "model.layers.%d.mlp.router.gate.weight"},
        {"blk.%d.ffn_gate_exps.weight", "model.layers.%d.mlp.experts.%d.gate_proj.weight"},
        {"blk.%d.ffn_up_exps.weight", "model.layers.%d.mlp.experts.%d.up_proj.weight"},
        {"blk.%d.ffn_down_exps.weight", "model.layers.%d.mlp.experts.%d.down_proj.weight"},
        {"blk.%d.ffn_gate_shexp.weight", "model.layers.%d.mlp.shared_mlp.gate_proj.weight"},
        {"blk.%d.ffn_up_shexp.weight", "model.layers.%d.mlp.shared_mlp.up_proj.weight"},
        {"blk.%d.ffn_down_shexp.weight", "model.layers.%d.mlp.shared_mlp.down_proj.weight"},
    };
    const int E = (int)p->cfg->num_experts;
    hy_status s = HY_OK;
    struct hy_layer_tensor attn[HY_V3_ATTN_TENSORS]; /* the loaders' table (hy_v3.h) */
    hy_v3_attn_tensors(p->cfg, NULL, attn);
    for (size_t k = 0; k < HY_V3_ATTN_TENSORS && !s; k++) {
        char gguf[64], hf[96];
        snprintf(gguf, sizeof gguf, "blk.%%d.%s.weight", attn[k].gguf);
        snprintf(hf, sizeof hf, "model.layers.%%d.%s.weight", attn[k].hf);
        s = add(p, gguf, hf, i, 1, err);
    }
    if (!p->cfg->layer_moe[i]) {
        for (size_t k = 0; k < sizeof dense / sizeof dense[0] && !s; k++)
            s = add(p, dense[k][0], dense[k][1], i, 1, err);
        return s;
    }
    for (size_t k = 0; k < sizeof moe / sizeof moe[0] && !s; k++)
        s = add(p, moe[k][0], moe[k][1], i, strstr(moe[k][0], "_exps") ? E : 1, err);
    if (!s && p->cfg->moe_expert_bias)
        s = add(p, "blk.%d.exp_probs_b", "model.layers.%d.mlp.expert_bias", i, 1, err);
    return s;
}

static hy_status make_plan(struct v3plan *p, struct hy_err *err)
{
    const struct hy_config *c = p->cfg;
    const size_t L = (size_t)c->num_hidden_layers;
    p->it = calloc(L * 19 + 3, sizeof *p->it);
    p->pool = calloc(L * (19 + 3 * (size_t)c->num_experts) + 3, sizeof *p->pool);
    if (!p->it || !p->pool)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_status s = add(p, "token_embd.weight", "model.embed_tokens.weight", 0, 1, err);
    if (!s)
        s = add(p, "output_norm.weight", "model.norm.weight", 0, 1, err);
    if (!s && !c->tie_word_embeddings)
        s = add(p, "output.weight", "lm_head.weight", 0, 1, err);
    for (int i = 0; i < (int)L && !s; i++)
        s = plan_layer(p, i, err);
    return s;
}

hy_status hy_convert_hyv3_gguf(const char *path, const char *name, hy_convert_find_fn find,
                               void *find_ctx, const struct hy_convert_src *src,
                               const struct hy_tok *tok, enum hy_convert_type type,
                               const char *who, int *n_tensors, struct hy_err *err)
{
    struct v3plan p = {find, find_ctx, src->cfg, type, NULL, 0, NULL, 0};
    hy_status s = make_plan(&p, err);
    if (!s)
        s = hy_convert_write_file(path, meta, name, src, tok, type, p.it, p.n, who, err);
    *n_tensors = p.n;
    free(p.it);
    free(p.pool);
    return s;
}

/* A checkpoint tensor as a part; one convert cannot read (other than 1-D or 2-D F32, F16
 * or BF16) comes back with n_dims 0, which add() refuses naming it. */
static bool find_st(void *ctx, const char *hf, struct hy_convert_part *out)
{
    const struct hy_st_tensor *t = hy_st_find(ctx, hf);
    if (!t)
        return false;
    bool ok = t->n_dims >= 1 && t->n_dims <= 2 &&
              (t->dtype == HY_DTYPE_F32 || t->dtype == HY_DTYPE_F16 || t->dtype == HY_DTYPE_BF16);
    *out = (struct hy_convert_part){t->dtype, ok ? t->n_dims : 0, t->n_dims == 2 ? t->shape[0] : 1,
                                    t->n_dims ? t->shape[t->n_dims - 1] : 0, t->data, {0, 0, 0}};
    return true;
}

hy_status hy_convert_hyv3(const char *path, const char *name, const struct hy_st *st,
                          const struct hy_convert_src *src, const struct hy_tok *tok,
                          enum hy_convert_type type, int *n_tensors, struct hy_err *err)
{
    return hy_convert_hyv3_gguf(path, name, find_st, (void *)st, src, tok, type, "hymt convert",
                                n_tensors, err);
}
