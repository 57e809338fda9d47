/* load_gguf.c: config and weights from a GGUF file (load_gguf.h has the contract). */
#include "model/load_gguf.h"

#include "formats/config_hyv3.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARCH "hunyuan-dense"
#define ARCH_HYV3 "hy_v3" /* llama.cpp's LLM_ARCH_HY_V3; hy_v3_gguf.c has its parts */

/* A per-model dimension: a scalar, or an array whose elements are all equal (llama.cpp
 * accepts per-layer arrays for some keys; hymt runs uniform layers only). */
static hy_status get_dim(const struct hy_gguf *g, const char *key, bool required, int64_t *out,
                         struct hy_err *err)
{
    const struct hy_gguf_kv *kv = hy_gguf_find_kv(g, key);
    if (kv && kv->type == HY_GGUF_ARRAY) {
        if (kv->arr_n == 0 || kv->arr_type == HY_GGUF_STRING || kv->arr_type == HY_GGUF_F32 ||
            kv->arr_type == HY_GGUF_F64 || kv->arr_type == HY_GGUF_BOOL)
            return hy_err_set(err, HY_E_FORMAT, "%s: %s must be an integer or an array of them",
                              hy_gguf_path(g), key);
        for (uint64_t i = 1; i < kv->arr_n; i++)
            if (hy_gguf_arr_int(kv, i) != hy_gguf_arr_int(kv, 0))
                return hy_err_set(err, HY_E_UNSUPPORTED, "%s: %s differs between layers (hymt "
                                  "runs uniform layers)", hy_gguf_path(g), key);
        *out = hy_gguf_arr_int(kv, 0);
        return HY_OK;
    }
    if (!kv && !required) /* absent: *out keeps its default (which may be -1) */
        return HY_OK;
    uint64_t v = 0;
    hy_status s = hy_gguf_get_uint(g, key, required, &v, err);
    if (s)
        return s;
    if (v > INT32_MAX)
        return hy_err_set(err, HY_E_RANGE, "%s: %s = %llu is too large", hy_gguf_path(g), key,
                          (unsigned long long)v);
    *out = (int64_t)v;
    return HY_OK;
}

/* An optional token id key: -1 when absent. */
static hy_status get_token(const struct hy_gguf *g, const char *key, int64_t *out,
                           struct hy_err *err)
{
    uint64_t v = UINT64_MAX;
    hy_status s = hy_gguf_get_uint(g, key, false, &v, err);
    *out = s || v > INT32_MAX ? -1 : (int64_t)v;
    return s;
}

/* get_dim of key "<arch>.<suffix>". */
static hy_status get_arch_dim(const struct hy_gguf *g, const char *arch, const char *suffix,
                              bool required, int64_t *out, struct hy_err *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return get_dim(g, key, required, out, err);
}

static hy_status read_dims(struct hy_config *c, const struct hy_gguf *g, const char *arch,
                           struct hy_err *err)
{
    const struct {
        const char *key;
        int64_t *dst;
        bool required;
    } f[] = {
        {"block_count", &c->num_hidden_layers, true},
        {"embedding_length", &c->hidden_size, true},
        {"feed_forward_length", &c->intermediate_size, true},
        {"attention.head_count", &c->num_attention_heads, true},
        {"attention.head_count_kv", &c->num_key_value_heads, false},
        {"context_length", &c->max_position_embeddings, true},
    };
    c->num_key_value_heads = -1;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        hy_status s = get_arch_dim(g, arch, f[i].key, f[i].required, f[i].dst, err);
        if (s)
            return s;
    }
    if (c->num_key_value_heads < 0)
        c->num_key_value_heads = c->num_attention_heads;
    if (c->num_attention_heads < 1 || c->hidden_size < 1)
        return hy_err_set(err, HY_E_RANGE, "%s: head_count and embedding_length must be >= 1",
                          hy_gguf_path(g));
    int64_t kl = c->hidden_size / c->num_attention_heads, vl = -1, rot = -1;
    hy_status s = get_arch_dim(g, arch, "attention.key_length", false, &kl, err);
    if (!s)
        s = get_arch_dim(g, arch, "attention.value_length", false, &vl, err);
    if (!s)
        s = get_arch_dim(g, arch, "rope.dimension_count", false, &rot, err);
    if (s)
        return s;
    if ((vl >= 0 && vl != kl) || (rot >= 0 && rot != kl))
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: value_length %lld / rope.dimension_count "
                          "%lld differ from key_length %lld (hymt runs full-head RoPE, equal "
                          "K and V heads)", hy_gguf_path(g), (long long)vl, (long long)rot,
                          (long long)kl);
    c->head_dim = kl;
    return HY_OK;
}

/* rope.freq_base is the effective base (model doc 3.6): never scaled again, unless the file
 * says rope.scaling.alpha (as llama.cpp's loader does). */
static hy_status read_rope(struct hy_config *c, const struct hy_gguf *g, const char *arch,
                           struct hy_err *err)
{
    double base = c->rope_theta > 0 ? c->rope_theta : 10000.0, exact = 0.0, alpha = 0.0;
    char kb[128], ka[128];
    snprintf(kb, sizeof kb, "%s.rope.freq_base", arch);
    snprintf(ka, sizeof ka, "%s.rope.scaling.alpha", arch);
    hy_status s = hy_gguf_get_real(g, kb, false, &base, err);
    if (!s)
        s = hy_gguf_get_real(g, "hymt.rope.freq_base", false, &exact, err);
    if (!s)
        s = hy_gguf_get_real(g, ka, false, &alpha, err);
    if (s)
        return s;
    if (exact > 0 && (float)exact == (float)base)
        base = exact;
    c->rope_theta = base;
    snprintf(c->rope_type, sizeof c->rope_type, "%s", alpha > 0 ? "dynamic" : "default");
    c->rope_alpha = alpha;
    c->rope_factor = 1.0;
    return HY_OK;
}

static hy_status read_tokens(struct hy_config *c, const struct hy_gguf *g, struct hy_err *err)
{
    int64_t eos = -1, eot = -1;
    hy_status s = get_token(g, "tokenizer.ggml.bos_token_id", &c->bos_token_id, err);
    if (!s)
        s = get_token(g, "tokenizer.ggml.eos_token_id", &eos, err);
    if (!s)
        s = get_token(g, "tokenizer.ggml.eot_token_id", &eot, err);
    if (!s)
        s = get_token(g, "tokenizer.ggml.padding_token_id", &c->pad_token_id, err);
    if (!s)
        s = get_token(g, "tokenizer.ggml.seperator_token_id", &c->sep_token_id, err);
    if (s)
        return s;
    /* stop ids: the end-of-turn token first (llama.cpp's eot), then eos (the config's eod) */
    c->n_eos = 0;
    if (eot >= 0)
        c->eos_token_id[c->n_eos++] = eot;
    if (eos >= 0 && eos != eot)
        c->eos_token_id[c->n_eos++] = eos;
    c->eod_token_id = -1;
    return HY_OK;
}

hy_status hy_load_gguf_config(struct hy_config *cfg, const struct hy_gguf *g, struct hy_err *err)
{
    const char *arch;
    size_t len;
    hy_status s = hy_gguf_get_str(g, "general.architecture", true, &arch, &len, err);
    if (s)
        return s;
    const bool hyv3 = len == strlen(ARCH_HYV3) && !memcmp(arch, ARCH_HYV3, len);
    if (!hyv3 && (len != strlen(ARCH) || memcmp(arch, ARCH, len)))
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: general.architecture '%.*s' is not "
                          "supported (hymt runs %s and %s)", hy_gguf_path(g),
                          (int)(len > 40 ? 40 : len), arch, ARCH, ARCH_HYV3);
    const char *a = hyv3 ? ARCH_HYV3 : ARCH;
    struct hy_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.model_type, sizeof c.model_type, hyv3 ? "hy_v3" : "hunyuan_v1_dense");
    snprintf(c.architecture, sizeof c.architecture,
             hyv3 ? "HYV3ForCausalLM" : "HunYuanDenseV1ForCausalLM");
    snprintf(c.hidden_act, sizeof c.hidden_act, "silu");
    c.use_qk_norm = true;
    c.bos_token_id = c.pad_token_id = c.sep_token_id = c.eod_token_id = -1;
    if (hyv3)
        hy_config_hyv3_defaults(&c);
    double eps = 0;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", a);
    s = read_dims(&c, g, a, err);
    if (!s)
        s = hy_gguf_get_real(g, key, true, &eps, err);
    if (!s)
        s = read_rope(&c, g, a, err);
    if (!s)
        s = read_tokens(&c, g, err);
    if (!s && hyv3)
        s = hy_load_gguf_hyv3_config(&c, g, err);
    if (s)
        return s;
    c.rms_norm_eps = eps;
    const struct hy_gguf_tensor *emb = hy_gguf_find_tensor(g, "token_embd.weight");
    if (!emb || emb->n_dims != 2)
        return hy_err_set(err, HY_E_FORMAT, "%s: missing tensor token_embd.weight (2 dims)",
                          hy_gguf_path(g));
    c.vocab_size = c.org_vocab_size = emb->ne[1] > INT32_MAX ? -1 : (int64_t)emb->ne[1];
    c.tie_word_embeddings = hy_gguf_find_tensor(g, "output.weight") == NULL;
    uint64_t ft = 0;
    if (hy_gguf_get_uint(g, "general.file_type", false, &ft, NULL) == HY_OK)
        snprintf(c.torch_dtype, sizeof c.torch_dtype, "gguf file_type %llu",
                 (unsigned long long)ft);
    s = hy_config_validate(&c, hy_gguf_path(g), err);
    if (s)
        return s;
    *cfg = c;
    return HY_OK;
}

/* Binds tensor `name` of shape [rows, cols] (rows == 0: a vector of cols), in ggml order
 * ne = {cols, rows}. */
static hy_status bind(struct hy_weight *w, const struct hy_gguf *g, const char *name, int64_t rows,
                      int64_t cols, struct hy_err *err)
{
    return hy_load_gguf_bind(w, g, name, rows, cols, err);
}

hy_status hy_load_gguf_bind(struct hy_weight *w, const struct hy_gguf *g, const char *name,
                            int64_t rows, int64_t cols, struct hy_err *err)
{
    const struct hy_gguf_tensor *t = hy_gguf_find_tensor(g, name);
    if (!t)
        return hy_err_set(err, HY_E_FORMAT, "%s: missing tensor %s", hy_gguf_path(g), name);
    bool ok = rows == 0 ? (t->n_dims == 1 && t->ne[0] == (uint64_t)cols)
                        : (t->n_dims == 2 && t->ne[0] == (uint64_t)cols && t->ne[1] == (uint64_t)rows);
    if (!ok) {
        char got[96] = "", *p = got;
        for (int d = 0; d < t->n_dims; d++)
            p += snprintf(p, (size_t)(got + sizeof got - p), "%s%llu", d ? "," : "",
                          (unsigned long long)t->ne[d]);
        return hy_err_set(err, HY_E_FORMAT, "%s: tensor %s has ne [%s], the metadata needs "
                          "[%lld%s%lld] (ggml order: in-features first)", hy_gguf_path(g), name,
                          got, (long long)cols, rows ? "," : "", rows ? (long long)rows : 0LL);
    }
    int dt = hy_ggml_to_dtype(t->ggml_type);
    if (dt < 0)
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: tensor %s has type %s, which hymt does not "
                          "read yet (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)", hy_gguf_path(g), name,
                          hy_ggml_type_name(t->ggml_type));
    w->dtype = (enum hy_dtype)dt;
    w->rows = rows == 0 ? 1 : rows;
    w->cols = cols;
    w->data = t->data;
    return HY_OK;
}

hy_status hy_model_bind_gguf(struct hy_model *m, const char *path, struct hy_err *err)
{
    hy_status s = hy_gguf_open(&m->gguf, path, err);
    if (!s)
        s = hy_load_gguf_config(&m->cfg, m->gguf, err);
    if (s)
        return s;
    const struct hy_config *c = &m->cfg;
    const struct hy_gguf *g = m->gguf;
    if (c->arch == HY_ARCH_HYV3)
        return hy_load_gguf_hyv3_bind(m, err);
    s = bind(&m->tok_embd, g, "token_embd.weight", c->vocab_size, c->hidden_size, err);
    if (!s)
        s = bind(&m->out_norm, g, "output_norm.weight", 0, c->hidden_size, err);
    if (!s && c->tie_word_embeddings)
        m->lm_head = m->tok_embd;
    else if (!s)
        s = bind(&m->lm_head, g, "output.weight", c->vocab_size, c->hidden_size, err);
    if (s)
        return s;
    m->n_params = c->vocab_size * c->hidden_size * (c->tie_word_embeddings ? 1 : 2) + c->hidden_size;
    return hy_model_bind_layers(m, NULL, g, err);
}
