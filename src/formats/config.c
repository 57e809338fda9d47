#include "formats/config.h"
#include "formats/config_hyv3.h"

#include "core/json.h"
#include "core/log.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define MODEL_TYPE "hunyuan_v1_dense"
/* architectures[0] values hymt runs (the MT, Chimera, fp8 and GPTQ releases all say this) */
static const char *const ARCHITECTURES[] = {"HunYuanDenseV1ForCausalLM"};
#define N_ARCHITECTURES (sizeof ARCHITECTURES / sizeof ARCHITECTURES[0])
/* The smallest context that holds a translation: the prompt's fixed part (control tokens
 * and the instruction) is about 20 tokens, so 64 positions leave room for one short sentence
 * and its answer. Every released checkpoint has 32768 (GGUF files up to 262144). */
#define MIN_MAX_POS 64
#define MODEL_TYPE_HYV3 "hy_v3"
#define ARCHITECTURE_HYV3 "HYV3ForCausalLM"
#define DEFAULT_MAX_POS 2048 /* transformers' HunYuanDenseV1Config defaults */
#define DEFAULT_EPS 1e-5
#define DEFAULT_THETA 10000.0
#define PATH_CAP 4096

/* ---- reading ---- */

static bool has(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return v && !json_is_null(v);
}

/* Integer fields are read for their type here and range-checked in hy_config_validate. */
static hy_status read_dims(struct hy_config *c, const json_t *o, struct hy_err *err)
{
    static const struct {
        const char *key;
        size_t off;
        bool required;
    } f[] = {
        {"vocab_size", offsetof(struct hy_config, vocab_size), true},
        {"hidden_size", offsetof(struct hy_config, hidden_size), true},
        {"intermediate_size", offsetof(struct hy_config, intermediate_size), true},
        {"num_hidden_layers", offsetof(struct hy_config, num_hidden_layers), true},
        {"num_attention_heads", offsetof(struct hy_config, num_attention_heads), true},
        {"num_key_value_heads", offsetof(struct hy_config, num_key_value_heads), false},
        {"org_vocab_size", offsetof(struct hy_config, org_vocab_size), false},
        {"max_position_embeddings", offsetof(struct hy_config, max_position_embeddings), false},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        int64_t *dst = (int64_t *)((char *)c + f[i].off);
        hy_status s = hy_json_get_int(o, f[i].key, f[i].required, INT64_MIN, INT64_MAX, dst, err);
        if (s != HY_OK)
            return s;
    }
    if (!has(o, "num_key_value_heads")) /* hy_v3: HYV3Config's default */
        c->num_key_value_heads = c->arch == HY_ARCH_HYV3 ? 8 : c->num_attention_heads;
    if (!has(o, "org_vocab_size"))
        c->org_vocab_size = c->vocab_size;
    return HY_OK;
}

/* head_dim, else attention_head_dim, else hidden_size / num_attention_heads. */
static hy_status read_head_dim(struct hy_config *c, const json_t *o, struct hy_err *err)
{
    int64_t hd = 0, ahd = 0;
    hy_status s = hy_json_get_int(o, "head_dim", false, INT64_MIN, INT64_MAX, &hd, err);
    if (s == HY_OK)
        s = hy_json_get_int(o, "attention_head_dim", false, INT64_MIN, INT64_MAX, &ahd, err);
    if (s != HY_OK)
        return s;
    bool h = has(o, "head_dim"), a = has(o, "attention_head_dim");
    if (h && a && hd != ahd)
        return hy_err_set(err, HY_E_FORMAT,
                          "head_dim %" PRId64 " and attention_head_dim %" PRId64 " disagree", hd,
                          ahd);
    if (h || a) {
        c->head_dim = h ? hd : ahd;
        return HY_OK;
    }
    if (c->arch == HY_ARCH_HYV3) { /* HYV3Config's default, not hidden / heads */
        c->head_dim = 128;
        return HY_OK;
    }
    int64_t heads = c->num_attention_heads;
    if (heads > 0 && c->hidden_size % heads != 0)
        return hy_err_set(err, HY_E_FORMAT,
                          "head_dim is absent and hidden_size %" PRId64
                          " is not divisible by num_attention_heads %" PRId64,
                          c->hidden_size, heads);
    c->head_dim = heads > 0 ? c->hidden_size / heads : 0;
    return HY_OK;
}

/* Special token ids; -1 (or absent, or null) means none. eos_token_id: int or list. */
static hy_status read_tokens(struct hy_config *c, const json_t *o, struct hy_err *err)
{
    const char *keys[4] = {"bos_token_id", "pad_token_id", "sep_token_id", "eod_token_id"};
    int64_t *dst[4] = {&c->bos_token_id, &c->pad_token_id, &c->sep_token_id, &c->eod_token_id};
    for (int i = 0; i < 4; i++) {
        hy_status s = hy_json_get_int(o, keys[i], false, -1, INT64_MAX, dst[i], err);
        if (s != HY_OK)
            return s;
    }
    const json_t *eos = json_object_get(o, "eos_token_id");
    if (!eos || json_is_null(eos))
        return HY_OK;
    if (json_is_integer(eos)) {
        int64_t id = -1;
        hy_status s = hy_json_get_int(o, "eos_token_id", true, -1, INT64_MAX, &id, err);
        if (s == HY_OK && id >= 0) {
            c->eos_token_id[0] = id;
            c->n_eos = 1;
        }
        return s;
    }
    if (!json_is_array(eos))
        return hy_err_set(err, HY_E_FORMAT,
                          "key 'eos_token_id': expected an integer or a list, got %s",
                          hy_json_type_name(eos));
    if (json_array_size(eos) > HY_CONFIG_MAX_EOS)
        return hy_err_set(err, HY_E_RANGE, "key 'eos_token_id': %zu ids, at most %d",
                          json_array_size(eos), HY_CONFIG_MAX_EOS);
    size_t i;
    const json_t *v;
    json_array_foreach (eos, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return hy_err_set(err, HY_E_FORMAT, "key 'eos_token_id': item %zu is not a token id",
                              i);
        c->eos_token_id[c->n_eos++] = (int64_t)json_integer_value(v);
    }
    return HY_OK;
}

static hy_status read_strings(struct hy_config *c, const json_t *o, struct hy_err *err)
{
    hy_status s = hy_json_get_str(o, "model_type", false, c->model_type, sizeof c->model_type, err);
    if (s == HY_OK)
        s = hy_json_get_str(o, "hidden_act", false, c->hidden_act, sizeof c->hidden_act, err);
    if (s == HY_OK) /* older files say torch_dtype, newer ones dtype */
        s = hy_json_get_str(o, "torch_dtype", false, c->torch_dtype, sizeof c->torch_dtype, err);
    if (s == HY_OK)
        s = hy_json_get_str(o, "dtype", false, c->torch_dtype, sizeof c->torch_dtype, err);
    if (s != HY_OK)
        return s;
    const json_t *arch = json_object_get(o, "architectures");
    if (!arch || json_is_null(arch))
        return HY_OK;
    if (!json_is_array(arch))
        return hy_err_set(err, HY_E_FORMAT, "key 'architectures': expected a list, got %s",
                          hy_json_type_name(arch));
    const json_t *a0 = json_array_get(arch, 0);
    if (!a0)
        return HY_OK;
    if (!json_is_string(a0) || json_string_length(a0) >= sizeof c->architecture)
        return hy_err_set(err, HY_E_FORMAT, "key 'architectures': item 0 is not a short string");
    memcpy(c->architecture, json_string_value(a0), json_string_length(a0) + 1);
    return HY_OK;
}

static hy_status read_flags(struct hy_config *c, const json_t *o, struct hy_err *err)
{
    const char *keys[5] = {"tie_word_embeddings", "use_qk_norm", "use_cla", "attention_bias",
                           "mlp_bias"};
    bool *dst[5] = {&c->tie_word_embeddings, &c->use_qk_norm, &c->use_cla, &c->attention_bias,
                    &c->mlp_bias};
    for (int i = 0; i < 5; i++) {
        hy_status s = hy_json_get_bool(o, keys[i], false, dst[i], err);
        if (s != HY_OK)
            return s;
    }
    return hy_json_get_real(o, "rms_norm_eps", false, -DBL_MAX, DBL_MAX, &c->rms_norm_eps, err);
}

/* rope_scaling (legacy) or rope_parameters (newer transformers, with rope_theta inside).
 * "type" and "rope_type" are both accepted; when both are given they must agree. */
static hy_status read_rope_obj(struct hy_config *c, const json_t *o, const char *key,
                               struct hy_err *err)
{
    const json_t *r = json_object_get(o, key);
    if (!r || json_is_null(r))
        return HY_OK;
    if (!json_is_object(r))
        return hy_err_set(err, HY_E_FORMAT, "key '%s': expected an object or null, got %s", key,
                          hy_json_type_name(r));
    char t1[32] = "", t2[32] = "";
    hy_status s = hy_json_get_str(r, "type", false, t1, sizeof t1, err);
    if (s == HY_OK)
        s = hy_json_get_str(r, "rope_type", false, t2, sizeof t2, err);
    if (s == HY_OK && t1[0] && t2[0] && strcmp(t1, t2))
        s = hy_err_set(err, HY_E_FORMAT, "'type' %s and 'rope_type' %s disagree", t1, t2);
    if (s == HY_OK && (t1[0] || t2[0]))
        memcpy(c->rope_type, t2[0] ? t2 : t1, sizeof c->rope_type);
    if (s == HY_OK)
        s = hy_json_get_real(r, "alpha", false, -DBL_MAX, DBL_MAX, &c->rope_alpha, err);
    if (s == HY_OK)
        s = hy_json_get_real(r, "factor", false, -DBL_MAX, DBL_MAX, &c->rope_factor, err);
    if (s == HY_OK)
        s = hy_json_get_real(r, "rope_theta", false, -DBL_MAX, DBL_MAX, &c->rope_theta, err);
    if (s != HY_OK)
        hy_err_prefix(err, "%s", key);
    return s;
}

static hy_status read_rope(struct hy_config *c, const json_t *o, struct hy_err *err)
{
    hy_status s = hy_json_get_real(o, "rope_theta", false, -DBL_MAX, DBL_MAX, &c->rope_theta, err);
    if (s == HY_OK)
        s = read_rope_obj(c, o, "rope_scaling", err);
    if (s == HY_OK) /* the newer form wins where both are present */
        s = read_rope_obj(c, o, "rope_parameters", err);
    return s;
}

static void set_defaults(struct hy_config *c)
{
    memset(c, 0, sizeof *c);
    c->max_position_embeddings = DEFAULT_MAX_POS;
    c->rms_norm_eps = DEFAULT_EPS;
    c->rope_theta = DEFAULT_THETA;
    c->rope_factor = 1.0;
    snprintf(c->rope_type, sizeof c->rope_type, "default");
    snprintf(c->hidden_act, sizeof c->hidden_act, "silu");
    c->use_qk_norm = true;
    c->bos_token_id = c->pad_token_id = c->sep_token_id = c->eod_token_id = -1;
}

static hy_status check_model_type(const struct hy_config *c, const char *what, struct hy_err *err)
{
    bool hyv3 = !strcmp(c->model_type, MODEL_TYPE_HYV3);
    if ((c->model_type[0] && strcmp(c->model_type, MODEL_TYPE) && !hyv3) ||
        hyv3 != (c->arch == HY_ARCH_HYV3))
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "%s: model_type '%s' is not supported (want " MODEL_TYPE " or "
                          MODEL_TYPE_HYV3 ")", what, c->model_type);
    return HY_OK;
}

/* An unknown architecture is another model's file (or a typo): refused, not ignored. */
static hy_status check_architecture(const struct hy_config *c, const char *what,
                                    struct hy_err *err)
{
    if (!c->architecture[0])
        return HY_OK; /* absent: model_type and the tensors decide */
    if (c->arch == HY_ARCH_HYV3) /* model_type hy_v3 takes its own class only */
        return strcmp(c->architecture, ARCHITECTURE_HYV3)
                   ? hy_err_set(err, HY_E_UNSUPPORTED, "%s: architectures '%s' is not "
                                "supported with model_type hy_v3 (want " ARCHITECTURE_HYV3 ")",
                                what, c->architecture)
                   : HY_OK;
    for (size_t i = 0; i < N_ARCHITECTURES; i++)
        if (!strcmp(c->architecture, ARCHITECTURES[i]))
            return HY_OK;
    char list[256] = "";
    size_t at = 0;
    for (size_t i = 0; i < N_ARCHITECTURES && at < sizeof list; i++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "",
                               ARCHITECTURES[i]);
    return hy_err_set(err, HY_E_UNSUPPORTED,
                      "%s: architectures '%s' is not supported (supported: %s)", what,
                      c->architecture, list);
}

/* Fills *cfg only on success. */
static hy_status from_json(struct hy_config *cfg, const json_t *o, const char *what,
                           struct hy_err *err)
{
    if (!json_is_object(o))
        return hy_err_set(err, HY_E_FORMAT, "%s: expected a JSON object, got %s", what,
                          hy_json_type_name(o));
    struct hy_config c;
    set_defaults(&c);
    hy_status s = read_strings(&c, o, err);
    if (s == HY_OK && !strcmp(c.model_type, MODEL_TYPE_HYV3))
        hy_config_hyv3_defaults(&c);
    if (s == HY_OK) { /* before the dims, so that another model's file says what it is */
        s = check_model_type(&c, what, err);
        if (s == HY_OK)
            s = check_architecture(&c, what, err);
        if (s != HY_OK)
            return s;
    }
    if (s == HY_OK)
        s = read_dims(&c, o, err);
    if (s == HY_OK)
        s = read_head_dim(&c, o, err);
    if (s == HY_OK)
        s = read_tokens(&c, o, err);
    if (s == HY_OK)
        s = read_flags(&c, o, err);
    if (s == HY_OK)
        s = read_rope(&c, o, err);
    if (s == HY_OK && c.arch == HY_ARCH_HYV3)
        s = hy_config_hyv3_read(&c, o, err);
    if (s != HY_OK) {
        hy_err_prefix(err, "%s", what);
        return s;
    }
    s = hy_config_validate(&c, what, err);
    if (s == HY_OK)
        *cfg = c;
    return s;
}

hy_status hy_config_parse(struct hy_config *cfg, const char *json, size_t len, const char *what,
                          struct hy_err *err)
{
    json_t *root;
    hy_status s = hy_json_parse(&root, json, len, what, err);
    if (s != HY_OK)
        return s;
    s = from_json(cfg, root, what, err);
    json_decref(root);
    return s;
}

hy_status hy_config_load(struct hy_config *cfg, const char *path, struct hy_err *err)
{
    char buf[PATH_CAP];
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        int n = snprintf(buf, sizeof buf, "%s/config.json", path);
        if (n < 0 || n >= (int)sizeof buf)
            return hy_err_set(err, HY_E_RANGE, "%s: path too long", path);
        path = buf;
    }
    json_t *root;
    hy_status s = hy_json_load_file(&root, path, HY_CONFIG_MAX_BYTES, err);
    if (s != HY_OK)
        return s;
    s = from_json(cfg, root, path, err);
    json_decref(root);
    return s;
}

/* ---- validation ---- */

static hy_status check_int(int64_t v, int64_t lo, int64_t hi, const char *key, const char *what,
                           struct hy_err *err)
{
    if (v < lo || v > hi)
        return hy_err_set(err, HY_E_RANGE,
                          "%s: %s %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]", what, key, v,
                          lo, hi);
    return HY_OK;
}

static hy_status check_dims(const struct hy_config *c, const char *what, struct hy_err *err)
{
    const struct {
        const char *key;
        int64_t v, lo, hi;
    } f[] = {
        {"vocab_size", c->vocab_size, 1, 1 << 24},
        {"org_vocab_size", c->org_vocab_size, 1, 1 << 24},
        {"hidden_size", c->hidden_size, 1, 65536},
        {"intermediate_size", c->intermediate_size, 1, 1 << 20},
        {"num_hidden_layers", c->num_hidden_layers, 1, HY_CONFIG_MAX_LAYERS},
        {"num_attention_heads", c->num_attention_heads, 1, 1024},
        {"num_key_value_heads", c->num_key_value_heads, 1, c->num_attention_heads},
        {"head_dim", c->head_dim, 2, 1024},
        {"max_position_embeddings", c->max_position_embeddings, MIN_MAX_POS, 1 << 24},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        hy_status s = check_int(f[i].v, f[i].lo, f[i].hi, f[i].key, what, err);
        if (s != HY_OK)
            return s;
    }
    if (c->num_attention_heads % c->num_key_value_heads)
        return hy_err_set(err, HY_E_RANGE,
                          "%s: num_key_value_heads %" PRId64
                          " does not divide num_attention_heads %" PRId64,
                          what, c->num_key_value_heads, c->num_attention_heads);
    if (c->head_dim % 2)
        return hy_err_set(err, HY_E_RANGE, "%s: head_dim %" PRId64 " is odd (RoPE pairs values)",
                          what, c->head_dim);
    if (!(c->rms_norm_eps > 0 && c->rms_norm_eps < 1))
        return hy_err_set(err, HY_E_RANGE, "%s: rms_norm_eps %g is outside (0, 1)", what,
                          c->rms_norm_eps);
    return HY_OK;
}

static hy_status check_features(const struct hy_config *c, const char *what, struct hy_err *err)
{
    hy_status s = check_model_type(c, what, err);
    if (s == HY_OK)
        s = check_architecture(c, what, err);
    if (s != HY_OK)
        return s;
    if (strcmp(c->hidden_act, "silu"))
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: hidden_act '%s' is not supported (want silu)",
                          what, c->hidden_act);
    const char *keys[3] = {"use_cla", "attention_bias", "mlp_bias"};
    const bool on[3] = {c->use_cla, c->attention_bias, c->mlp_bias};
    for (int i = 0; i < 3; i++)
        if (on[i])
            return hy_err_set(err, HY_E_UNSUPPORTED, "%s: %s true is not supported", what, keys[i]);
    return HY_OK;
}

static hy_status check_tokens(const struct hy_config *c, const char *what, struct hy_err *err)
{
    const char *keys[4] = {"bos_token_id", "pad_token_id", "sep_token_id", "eod_token_id"};
    const int64_t ids[4] = {c->bos_token_id, c->pad_token_id, c->sep_token_id, c->eod_token_id};
    for (int i = 0; i < 4; i++) {
        hy_status s = check_int(ids[i], -1, c->vocab_size - 1, keys[i], what, err);
        if (s != HY_OK)
            return s;
    }
    if (c->n_eos < 0 || c->n_eos > HY_CONFIG_MAX_EOS)
        return hy_err_set(err, HY_E_RANGE, "%s: %d eos ids, at most %d", what, c->n_eos,
                          HY_CONFIG_MAX_EOS);
    for (int i = 0; i < c->n_eos; i++) {
        hy_status s =
            check_int(c->eos_token_id[i], 0, c->vocab_size - 1, "eos_token_id", what, err);
        if (s != HY_OK)
            return s;
    }
    return HY_OK;
}

/* Effective base (model doc 3.3), as transformers: the NTK-alpha base applies when the rope
 * type is "dynamic" and alpha is set; factor, beta_* and mscale are ignored everywhere. */
static hy_status set_rope_base(struct hy_config *c, const char *what, struct hy_err *err)
{
    if (!c->rope_type[0])
        snprintf(c->rope_type, sizeof c->rope_type, "default");
    if (strcmp(c->rope_type, "default") && strcmp(c->rope_type, "dynamic"))
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: rope type '%s' is not supported", what,
                          c->rope_type);
    /* a base below 1 would make every frequency more than a radian a token (inv_freq > 1) */
    if (!(c->rope_theta >= 1 && isfinite(c->rope_theta)))
        return hy_err_set(err, HY_E_RANGE, "%s: rope_theta %g must be >= 1", what, c->rope_theta);
    if (!(c->rope_alpha >= 0 && isfinite(c->rope_alpha)))
        return hy_err_set(err, HY_E_RANGE, "%s: rope alpha %g must be >= 0", what, c->rope_alpha);
    if (!(c->rope_factor > 0 && isfinite(c->rope_factor)))
        return hy_err_set(err, HY_E_RANGE, "%s: rope factor %g must be > 0", what, c->rope_factor);
    c->rope_base = c->rope_theta;
    bool dynamic = !strcmp(c->rope_type, "dynamic");
    if (c->rope_alpha > 0 && !dynamic)
        HY_LOGW("%s: rope alpha %g ignored: rope type is '%s', not 'dynamic'", what, c->rope_alpha,
                c->rope_type);
    if (c->rope_alpha > 0 && dynamic) {
        if (c->head_dim <= 2)
            return hy_err_set(err, HY_E_RANGE,
                              "%s: head_dim %" PRId64 " is too small for rope alpha", what,
                              c->head_dim);
        double d = (double)c->head_dim;
        c->rope_base = c->rope_theta * pow(c->rope_alpha, d / (d - 2));
    }
    if (!(c->rope_base >= 1 && isfinite(c->rope_base) && c->rope_base <= FLT_MAX))
        return hy_err_set(err, HY_E_RANGE, "%s: effective rope base %g is out of range [1, %g]",
                          what, c->rope_base, (double)FLT_MAX);
    return HY_OK;
}

hy_status hy_config_validate(struct hy_config *cfg, const char *what, struct hy_err *err)
{
    hy_status s = check_features(cfg, what, err);
    if (s == HY_OK)
        s = check_dims(cfg, what, err);
    if (s == HY_OK)
        s = check_tokens(cfg, what, err);
    if (s == HY_OK)
        s = set_rope_base(cfg, what, err);
    if (s == HY_OK && cfg->arch == HY_ARCH_HYV3)
        s = hy_config_hyv3_check(cfg, what, err);
    return s;
}

void hy_config_inv_freq(const struct hy_config *cfg, float *inv_freq)
{
    HY_ASSERT(cfg->head_dim >= 2 && cfg->head_dim % 2 == 0 && cfg->rope_base > 0);
    double d = (double)cfg->head_dim;
    for (int64_t i = 0; i < cfg->head_dim / 2; i++)
        inv_freq[i] = (float)(1.0 / pow(cfg->rope_base, (double)(2 * i) / d));
}
