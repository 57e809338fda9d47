/* config_hyv3.c: the hy_v3 keys of config.json (config_hyv3.h has the contract). */
#include "formats/config_hyv3.h"

#include "core/json.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#define HYV3_THETA 11158840.0 /* HYV3Config.default_theta */
#define HYV3_MAX_POS 131072
#define HYV3_HEAD_DIM 128
#define HYV3_KV_HEADS 8
#define HYV3_TOPK 8
#define HYV3_SCALING 2.826
#define MAX_EXPERTS 4096

static bool has(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return v && !json_is_null(v);
}

void hy_config_hyv3_defaults(struct hy_config *c)
{
    c->arch = HY_ARCH_HYV3;
    c->qk_norm_before_rope = true;
    c->max_position_embeddings = HYV3_MAX_POS;
    c->rope_theta = HYV3_THETA;
    c->num_experts_per_tok = HYV3_TOPK;
    c->num_shared_experts = 1;
    c->router_scaling_factor = HYV3_SCALING;
    c->moe_expert_bias = true;
    c->enable_moe_fp32_combine = true;
}

/* A flag whose only supported value is true: absent is fine, false is refused. */
static hy_status need_true(const json_t *o, const char *key, const char *why, struct hy_err *err)
{
    bool v = true;
    hy_status s = hy_json_get_bool(o, key, false, &v, err);
    if (s == HY_OK && !v)
        s = hy_err_set(err, HY_E_UNSUPPORTED, "%s false is not supported (%s)", key, why);
    return s;
}

/* moe_intermediate_size (transformers) and expert_hidden_dim (Tencent, vLLM): synonyms. */
static hy_status read_width(struct hy_config *c, const json_t *o, struct hy_err *err)
{
    int64_t a = 0, b = 0;
    hy_status s = hy_json_get_int(o, "moe_intermediate_size", false, INT64_MIN, INT64_MAX, &a, err);
    if (s == HY_OK)
        s = hy_json_get_int(o, "expert_hidden_dim", false, INT64_MIN, INT64_MAX, &b, err);
    if (s != HY_OK)
        return s;
    bool ha = has(o, "moe_intermediate_size"), hb = has(o, "expert_hidden_dim");
    if (!ha && !hb)
        return hy_err_set(err, HY_E_NOTFOUND, "missing key 'moe_intermediate_size' (or "
                          "'expert_hidden_dim'): the width of an expert");
    if (ha && hb && a != b)
        return hy_err_set(err, HY_E_FORMAT, "moe_intermediate_size %" PRId64 " and "
                          "expert_hidden_dim %" PRId64 " disagree", a, b);
    c->moe_intermediate_size = ha ? a : b;
    return HY_OK;
}

/* mlp_layer_types (["dense", "sparse", ...], transformers) or first_k_dense_replace
 * (Tencent, vLLM); both present must agree; neither: layer 0 dense (HYV3Config).
 * transformers builds layer i from mlp_layer_types[i] only, and its length check
 * (PreTrainedConfig.validate_layer_type) never reaches mlp_layer_types for hy_v3, which has
 * no layer_types: a config whose num_hidden_layers was cut after loading keeps the longer
 * list, and save_pretrained writes it so. Such a list is read up to num_hidden_layers (the
 * rest must be strings, as its list[str] type asks); a shorter one fails in transformers
 * (index out of range building the layers) and is refused here. Within the layers only
 * "dense" and "sparse" are taken: transformers would build any other string as dense. */
static hy_status read_layer_types(struct hy_config *c, const json_t *o, struct hy_err *err)
{
    const int64_t L = c->num_hidden_layers;
    int64_t k = 1;
    hy_status s = hy_json_get_int(o, "first_k_dense_replace", false, 0, HY_CONFIG_MAX_LAYERS, &k,
                                  err);
    if (s != HY_OK || L < 1 || L > HY_CONFIG_MAX_LAYERS)
        return s; /* a layer count out of range is check_dims' error */
    if (k > L)
        return hy_err_set(err, HY_E_RANGE, "first_k_dense_replace %" PRId64 " is outside [0, %"
                          PRId64 "] (num_hidden_layers)", k, L);
    for (int64_t i = 0; i < L; i++)
        c->layer_moe[i] = i >= k;
    const json_t *t = json_object_get(o, "mlp_layer_types");
    if (!t || json_is_null(t))
        return HY_OK;
    if (!json_is_array(t) || (int64_t)json_array_size(t) < L)
        return hy_err_set(err, HY_E_FORMAT, "key 'mlp_layer_types': expected a list of at least "
                          "%" PRId64 " strings (one a layer)", L);
    for (size_t i = (size_t)L; i < json_array_size(t); i++)
        if (!json_is_string(json_array_get(t, i)))
            return hy_err_set(err, HY_E_FORMAT, "key 'mlp_layer_types': item %zu is not a string",
                              i);
    for (int64_t i = 0; i < L; i++) {
        const char *v = json_string_value(json_array_get(t, (size_t)i));
        if (!v || (strcmp(v, "dense") && strcmp(v, "sparse")))
            return hy_err_set(err, HY_E_FORMAT, "key 'mlp_layer_types': item %" PRId64 " is not "
                              "\"dense\" or \"sparse\"", i);
        unsigned char moe = !strcmp(v, "sparse");
        if (has(o, "first_k_dense_replace") && moe != c->layer_moe[i])
            return hy_err_set(err, HY_E_FORMAT, "mlp_layer_types and first_k_dense_replace %"
                              PRId64 " disagree at layer %" PRId64, k, i);
        c->layer_moe[i] = moe;
    }
    return HY_OK;
}

static hy_status read_moe(struct hy_config *c, const json_t *o, struct hy_err *err)
{
    const struct {
        const char *key;
        int64_t *dst;
        bool required;
    } f[] = {
        {"num_experts", &c->num_experts, true},
        {"num_experts_per_tok", &c->num_experts_per_tok, false},
        {"num_shared_experts", &c->num_shared_experts, false},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        hy_status s = hy_json_get_int(o, f[i].key, f[i].required, INT64_MIN, INT64_MAX, f[i].dst,
                                      err);
        if (s != HY_OK)
            return s;
    }
    hy_status s = hy_json_get_real(o, "router_scaling_factor", false, -DBL_MAX, DBL_MAX,
                                   &c->router_scaling_factor, err);
    if (s == HY_OK)
        s = hy_json_get_bool(o, "moe_router_enable_expert_bias", false, &c->moe_expert_bias, err);
    if (s == HY_OK)
        s = hy_json_get_bool(o, "enable_lm_head_fp32", false, &c->enable_lm_head_fp32, err);
    if (s == HY_OK)
        s = hy_json_get_bool(o, "enable_moe_fp32_combine", false, &c->enable_moe_fp32_combine,
                             err);
    if (s == HY_OK) /* transformers always renormalises and always uses sigmoid scores */
        s = need_true(o, "route_norm", "transformers always renormalises the top-k weights", err);
    if (s == HY_OK)
        s = need_true(o, "moe_router_use_sigmoid", "transformers always scores with a sigmoid",
                      err);
    if (s == HY_OK) /* transformers always norms q and k; vLLM would skip them */
        s = need_true(o, "qk_norm", "transformers always applies q_norm and k_norm", err);
    return s;
}

hy_status hy_config_hyv3_read(struct hy_config *c, const json_t *o, struct hy_err *err)
{
    hy_status s = read_width(c, o, err);
    if (s == HY_OK)
        s = read_moe(c, o, err);
    if (s == HY_OK)
        s = read_layer_types(c, o, err);
    c->n_moe_layers = 0;
    for (int64_t i = 0; s == HY_OK && i < c->num_hidden_layers && i < HY_CONFIG_MAX_LAYERS; i++)
        c->n_moe_layers += c->layer_moe[i] != 0;
    return s;
}

static hy_status range(int64_t v, int64_t lo, int64_t hi, const char *key, const char *what,
                       struct hy_err *err)
{
    if (v < lo || v > hi)
        return hy_err_set(err, HY_E_RANGE, "%s: %s %" PRId64 " is outside [%" PRId64 ", %" PRId64
                          "]", what, key, v, lo, hi);
    return HY_OK;
}

hy_status hy_config_hyv3_check(const struct hy_config *c, const char *what, struct hy_err *err)
{
    if (c->num_shared_experts == 0) /* transformers then builds a full-width MLP, vLLM none */
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: num_shared_experts 0 is not supported",
                          what);
    hy_status s = range(c->num_experts, 1, MAX_EXPERTS, "num_experts", what, err);
    if (s == HY_OK)
        s = range(c->num_experts_per_tok, 1,
                  c->num_experts < HY_CONFIG_MAX_TOPK ? c->num_experts : HY_CONFIG_MAX_TOPK,
                  "num_experts_per_tok", what, err);
    if (s == HY_OK)
        s = range(c->num_shared_experts, 1, 64, "num_shared_experts", what, err);
    if (s == HY_OK)
        s = range(c->moe_intermediate_size, 1, (1 << 20) / c->num_shared_experts,
                  "moe_intermediate_size", what, err);
    if (s != HY_OK)
        return s;
    if (!(c->router_scaling_factor > 0 && c->router_scaling_factor <= 1e6))
        return hy_err_set(err, HY_E_RANGE, "%s: router_scaling_factor %g is outside (0, 1e6]",
                          what, c->router_scaling_factor);
    if (strcmp(c->rope_type, "default") || c->rope_alpha != 0)
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: hy_v3 with rope type '%s' (alpha %g) is "
                          "not supported (the model uses the default rope with its theta)",
                          what, c->rope_type, c->rope_alpha);
    if (!c->use_qk_norm || !c->qk_norm_before_rope)
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: hy_v3 without QK-norm before RoPE", what);
    int64_t n = 0;
    for (int64_t i = 0; i < c->num_hidden_layers; i++)
        n += c->layer_moe[i] != 0;
    if (n != c->n_moe_layers)
        return hy_err_set(err, HY_E_RANGE, "%s: %" PRId64 " MoE layers marked, %" PRId64
                          " counted", what, n, c->n_moe_layers);
    return HY_OK;
}
