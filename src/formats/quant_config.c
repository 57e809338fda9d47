/* quant_config.c: quantization_config / hf_quant_config.json (contract in quant_config.h). */
#include "formats/quant_config.h"

#include "core/json.h"
#include "core/log.h"
#include "formats/config.h"

#include <fnmatch.h>
#include <oniguruma.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_PATTERN 512 /* bytes of one ignore entry */

enum ign_kind { IGN_EXACT, IGN_REGEX, IGN_GLOB, IGN_SUBSTR };

struct hy_quant_ignore {
    enum ign_kind kind;
    char *text; /* the entry as written, "re:" removed for IGN_REGEX */
    OnigRegex re;
};

/* Oniguruma's onig_new is not thread-safe while the library initialises (the tokenizer's
 * regex.c guards its calls the same way); this lock guards the library, not our data.
 * Matching (onig_match) is thread-safe. */
static pthread_mutex_t onig_lock = PTHREAD_MUTEX_INITIALIZER;

const char *hy_quant_config_method_name(enum hy_quant_method m)
{
    switch (m) {
    case HY_QUANT_FP8: return "fp8";
    case HY_QUANT_GPTQ: return "gptq";
    default: return "none";
    }
}

void hy_quant_config_free(struct hy_quant_config *q)
{
    for (int i = 0; i < q->n_ignore; i++) {
        free(q->ignore[i].text);
        if (q->ignore[i].re)
            onig_free(q->ignore[i].re);
    }
    free(q->ignore);
    memset(q, 0, sizeof *q);
}

static hy_status add_ignore(struct hy_quant_config *q, const json_t *v, enum ign_kind how,
                            const char *key, size_t idx, struct hy_err *err)
{
    if (!json_is_string(v))
        return hy_err_set(err, HY_E_FORMAT, "%s[%zu] must be a string, got %s", key, idx,
                          hy_json_type_name(v));
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (len == 0 || len > MAX_PATTERN)
        return hy_err_set(err, HY_E_RANGE, "%s[%zu] has %zu bytes (1 to %d)", key, idx, len,
                          MAX_PATTERN);
    if (q->n_ignore >= HY_QUANT_MAX_IGNORE)
        return hy_err_set(err, HY_E_RANGE, "more than %d ignore entries", HY_QUANT_MAX_IGNORE);
    if (q->n_ignore % 64 == 0) {
        void *p = realloc(q->ignore, (size_t)(q->n_ignore + 64) * sizeof *q->ignore);
        if (!p)
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        q->ignore = p;
    }
    struct hy_quant_ignore *e = &q->ignore[q->n_ignore];
    memset(e, 0, sizeof *e);
    bool re = how == IGN_EXACT && strncmp(s, "re:", 3) == 0;
    e->kind = re ? IGN_REGEX : how;
    e->text = strdup(re ? s + 3 : s);
    if (!e->text)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    q->n_ignore++; /* owned from here on, freed with q */
    if (!re)
        return HY_OK;
    OnigErrorInfo ei = {0};
    OnigEncoding enc = ONIG_ENCODING_UTF8;
    pthread_mutex_lock(&onig_lock);
    int r = onig_initialize(&enc, 1);
    if (r == ONIG_NORMAL)
        r = onig_new(&e->re, (const OnigUChar *)e->text,
                     (const OnigUChar *)e->text + strlen(e->text), ONIG_OPTION_NONE,
                     ONIG_ENCODING_UTF8, ONIG_SYNTAX_PYTHON, &ei);
    pthread_mutex_unlock(&onig_lock);
    if (r != ONIG_NORMAL) {
        OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, r, &ei);
        e->re = NULL;
        return hy_err_set(err, HY_E_FORMAT, "%s[%zu] '%.80s': bad regex: %s", key, idx, s,
                          (const char *)msg);
    }
    return HY_OK;
}

static hy_status add_ignore_list(struct hy_quant_config *q, const json_t *obj, const char *key,
                                 enum ign_kind how, struct hy_err *err)
{
    const json_t *a = json_object_get(obj, key);
    if (!a || json_is_null(a))
        return HY_OK;
    if (!json_is_array(a))
        return hy_err_set(err, HY_E_FORMAT, "%s must be an array, got %s", key,
                          hy_json_type_name(a));
    for (size_t i = 0; i < json_array_size(a); i++) {
        hy_status s = add_ignore(q, json_array_get(a, i), how, key, i, err);
        if (s)
            return s;
    }
    return HY_OK;
}

/* name with each run of digits replaced by "*", as transformers' FineGrainedFP8 matches
 * modules_to_not_convert ("model.layers.*.mlp.gate"). */
static void star_digits(const char *name, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < cap; p++) {
        bool digit = *p >= '0' && *p <= '9';
        if (!digit)
            out[k++] = *p;
        else if (p == name || p[-1] < '0' || p[-1] > '9')
            out[k++] = '*';
    }
    out[k] = 0;
}

bool hy_quant_config_ignored(const struct hy_quant_config *q, const char *name, bool is_linear)
{
    char starred[MAX_PATTERN * 2];
    star_digits(name, starred, sizeof starred);
    for (int i = 0; i < q->n_ignore; i++) {
        const struct hy_quant_ignore *e = &q->ignore[i];
        switch (e->kind) {
        case IGN_EXACT:
            if (!strcmp(e->text, name) || (is_linear && !strcmp(e->text, "Linear")))
                return true;
            break;
        case IGN_GLOB:
            if (fnmatch(e->text, name, 0) == 0)
                return true;
            break;
        case IGN_SUBSTR:
            if (strstr(name, e->text) || strstr(starred, e->text))
                return true;
            break;
        case IGN_REGEX: {
            const OnigUChar *s = (const OnigUChar *)name, *end = s + strlen(name);
            if (onig_match(e->re, s, end, s, NULL, ONIG_OPTION_NONE) >= 0)
                return true;
            break;
        }
        }
    }
    return false;
}

/* A {num_bits, type, strategy, dynamic, ...} scheme; "weights" or "input_activations". */
static hy_status check_scheme(const json_t *o, const char *key, char *strategy, size_t cap,
                              bool *dynamic, struct hy_err *err)
{
    if (!json_is_object(o))
        return hy_err_set(err, HY_E_FORMAT, "%s must be an object, got %s", key,
                          hy_json_type_name(o));
    int64_t bits = 0;
    char type[16] = "";
    hy_status s = hy_json_get_int(o, "num_bits", true, 1, 64, &bits, err);
    if (!s)
        s = hy_json_get_str(o, "type", true, type, sizeof type, err);
    if (!s)
        s = hy_json_get_str(o, "strategy", true, strategy, cap, err);
    if (!s)
        s = hy_json_get_bool(o, "dynamic", false, dynamic, err);
    if (s) {
        hy_err_prefix(err, "%s", key);
        return s;
    }
    if (bits != 8 || strcmp(type, "float") != 0)
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s: %lld-bit %s is not supported (8-bit "
                          "float, fp8 e4m3, is)", key, (long long)bits, type);
    return HY_OK;
}

static hy_status parse_group(struct hy_quant_config *q, const char *name, const json_t *g,
                             struct hy_err *err)
{
    if (!json_is_object(g))
        return hy_err_set(err, HY_E_FORMAT, "config_groups.%.32s must be an object, got %s",
                          name, hy_json_type_name(g));
    char strat[32] = "";
    bool dyn = false;
    const json_t *w = json_object_get(g, "weights");
    if (!w || json_is_null(w))
        return hy_err_set(err, HY_E_FORMAT, "config_groups.%.32s: missing 'weights'", name);
    hy_status s = check_scheme(w, "weights", strat, sizeof strat, &dyn, err);
    if (!s && dyn)
        s = hy_err_set(err, HY_E_UNSUPPORTED, "weights: dynamic weight quantization");
    if (!s && !strcmp(strat, "tensor"))
        q->w_per_tensor = true;
    else if (!s && !strcmp(strat, "channel"))
        q->w_per_channel = true;
    else if (!s)
        s = hy_err_set(err, HY_E_UNSUPPORTED, "weights: strategy '%.32s' (tensor and channel "
                       "are supported)", strat);
    const json_t *a = json_object_get(g, "input_activations");
    if (!s && a && !json_is_null(a)) {
        dyn = false;
        s = check_scheme(a, "input_activations", strat, sizeof strat, &dyn, err);
        if (!s && !dyn) {
            if (strcmp(strat, "tensor") != 0)
                s = hy_err_set(err, HY_E_UNSUPPORTED, "input_activations: static strategy "
                               "'%.32s' (tensor is supported)", strat);
            q->act_static = true;
        }
    }
    const json_t *o = json_object_get(g, "output_activations");
    if (!s && o && !json_is_null(o))
        s = hy_err_set(err, HY_E_UNSUPPORTED, "output_activations quantization");
    if (s)
        hy_err_prefix(err, "config_groups.%.32s", name);
    return s;
}

static hy_status parse_ct(struct hy_quant_config *q, const json_t *qc, struct hy_err *err)
{
    char fmt[48] = "";
    hy_status s = hy_json_get_str(qc, "format", false, fmt, sizeof fmt, err);
    if (s)
        return s;
    if (fmt[0] && strcmp(fmt, "naive-quantized") && strcmp(fmt, "float-quantized"))
        return hy_err_set(err, HY_E_UNSUPPORTED, "compressed-tensors format '%s' (naive-quantized "
                          "and float-quantized fp8 are supported)", fmt);
    const json_t *groups = json_object_get(qc, "config_groups");
    if (!json_is_object(groups) || json_object_size(groups) == 0)
        return hy_err_set(err, HY_E_FORMAT, "config_groups must be a non-empty object, got %s",
                          hy_json_type_name(groups));
    if (json_object_size(groups) > HY_QUANT_MAX_GROUPS)
        return hy_err_set(err, HY_E_RANGE, "config_groups has %zu groups (at most %d)",
                          json_object_size(groups), HY_QUANT_MAX_GROUPS);
    const char *k;
    const json_t *g;
    json_object_foreach ((json_t *)groups, k, g) {
        s = parse_group(q, k, g, err);
        if (s)
            return s;
    }
    const json_t *kv = json_object_get(qc, "kv_cache_scheme");
    q->kv_cache_scheme = kv && !json_is_null(kv);
    s = add_ignore_list(q, qc, "ignore", IGN_EXACT, err);
    if (!s)
        s = add_ignore_list(q, qc, "ignored_layers", IGN_EXACT, err);
    return s;
}

/* quant_method "fp8": transformers' FineGrainedFP8Config / vLLM's Fp8Config keys. */
static hy_status parse_fp8(struct hy_quant_config *q, const json_t *qc, struct hy_err *err)
{
    char act[16] = "dynamic", fmt[16] = "e4m3", sfmt[16] = "";
    hy_status s = hy_json_get_str(qc, "activation_scheme", false, act, sizeof act, err);
    if (!s)
        s = hy_json_get_str(qc, "fmt", false, fmt, sizeof fmt, err);
    if (!s)
        s = hy_json_get_str(qc, "scale_fmt", false, sfmt, sizeof sfmt, err);
    if (s)
        return s;
    if (strcmp(act, "dynamic") && strcmp(act, "static"))
        return hy_err_set(err, HY_E_UNSUPPORTED, "fp8 activation_scheme '%s' (dynamic and static "
                          "are supported)", act);
    if (strcmp(fmt, "e4m3"))
        return hy_err_set(err, HY_E_UNSUPPORTED, "fp8 fmt '%s' (e4m3 is supported)", fmt);
    if (sfmt[0] && strcmp(sfmt, "ue8m0"))
        return hy_err_set(err, HY_E_UNSUPPORTED, "fp8 scale_fmt '%s' (ue8m0 or none is "
                          "supported)", sfmt);
    q->act_static = !strcmp(act, "static");
    const json_t *b = json_object_get(qc, "weight_block_size");
    if (b && !json_is_null(b)) {
        if (!json_is_array(b) || json_array_size(b) != 2)
            return hy_err_set(err, HY_E_FORMAT, "weight_block_size must be [rows, cols], got %s",
                              json_is_array(b) ? "an array of another length"
                                               : hy_json_type_name(b));
        int dims[2];
        for (size_t i = 0; i < 2; i++) {
            const json_t *v = json_array_get(b, i);
            if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                json_integer_value(v) > 65536)
                return hy_err_set(err, HY_E_RANGE, "weight_block_size[%zu] must be an integer "
                                  "from 1 to 65536", i);
            dims[i] = (int)json_integer_value(v);
        }
        if (q->act_static)
            return hy_err_set(err, HY_E_UNSUPPORTED, "fp8 block scales (weight_block_size) "
                              "with static activations");
        q->block_rows = dims[0];
        q->block_cols = dims[1];
    } else {
        q->w_per_tensor = true; /* AutoFP8: one weight_scale a tensor */
    }
    s = add_ignore_list(q, qc, "modules_to_not_convert", IGN_SUBSTR, err);
    if (!s)
        s = add_ignore_list(q, qc, "ignored_layers", IGN_EXACT, err);
    json_t *head = s ? NULL : json_string("lm_head");
    if (!s && !head)
        s = hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (!s) /* transformers always leaves the head unconverted */
        s = add_ignore(q, head, IGN_SUBSTR, "lm_head", 0, err);
    json_decref(head);
    return s;
}

static hy_status parse_gptq(struct hy_quant_config *q, const json_t *qc, struct hy_err *err)
{
    int64_t bits = 0, gs = -1;
    bool desc = false, sym = true;
    char cf[16] = "gptq";
    hy_status s = hy_json_get_int(qc, "bits", true, 1, 64, &bits, err);
    if (!s)
        s = hy_json_get_int(qc, "group_size", false, -1, 1 << 20, &gs, err);
    if (!s)
        s = hy_json_get_bool(qc, "desc_act", false, &desc, err);
    if (!s)
        s = hy_json_get_bool(qc, "sym", false, &sym, err);
    if (!s)
        s = hy_json_get_str(qc, "checkpoint_format", false, cf, sizeof cf, err);
    if (s)
        return s;
    if (bits != 4)
        return hy_err_set(err, HY_E_UNSUPPORTED, "gptq with %lld bits (4 is supported)",
                          (long long)bits);
    if (gs == 0)
        return hy_err_set(err, HY_E_RANGE, "group_size 0 (-1 or a positive size)");
    if (strcmp(cf, "gptq") && strcmp(cf, "gptq_v2"))
        return hy_err_set(err, HY_E_UNSUPPORTED, "gptq checkpoint_format '%s' (gptq and gptq_v2 "
                          "are supported)", cf);
    q->bits = (int)bits;
    q->group_size = (int)gs;
    q->desc_act = desc;
    q->sym = sym;
    q->zero_minus_one = !strcmp(cf, "gptq");
    return HY_OK;
}

/* hf_quant_config.json: {"quantization": {"quant_algo", "exclude_modules", ...}}. */
static hy_status parse_hf(struct hy_quant_config *q, const json_t *root, struct hy_err *err)
{
    const json_t *qz = json_object_get(root, "quantization");
    if (!json_is_object(qz))
        return hy_err_set(err, HY_E_FORMAT, "'quantization' must be an object, got %s",
                          hy_json_type_name(qz));
    char algo[32] = "";
    hy_status s = hy_json_get_str(qz, "quant_algo", true, algo, sizeof algo, err);
    if (s)
        return s;
    if (strcmp(algo, "FP8") != 0)
        return hy_err_set(err, HY_E_UNSUPPORTED, "quant_algo '%s' (FP8 is supported)", algo);
    const json_t *kv = json_object_get(qz, "kv_cache_quant_algo");
    q->kv_cache_scheme |= kv && !json_is_null(kv);
    return add_ignore_list(q, qz, "exclude_modules", IGN_GLOB, err);
}

static hy_status parse_all(struct hy_quant_config *q, const json_t *cfg, const json_t *hf,
                           struct hy_err *err)
{
    if (!json_is_object(cfg))
        return hy_err_set(err, HY_E_FORMAT, "config must be a JSON object");
    const char *key = "quantization_config";
    const json_t *qc = json_object_get(cfg, key);
    if (!qc || json_is_null(qc)) {
        key = "compression_config"; /* older compressed-tensors releases */
        qc = json_object_get(cfg, key);
    }
    hy_status s = HY_OK;
    if (qc && !json_is_null(qc)) {
        char method[48] = "";
        if (!json_is_object(qc))
            s = hy_err_set(err, HY_E_FORMAT, "must be an object, got %s", hy_json_type_name(qc));
        if (!s)
            s = hy_json_get_str(qc, "quant_method", true, method, sizeof method, err);
        if (!s && !strcmp(method, "compressed-tensors")) {
            q->method = HY_QUANT_FP8;
            snprintf(q->source, sizeof q->source, "compressed-tensors");
            s = parse_ct(q, qc, err);
        } else if (!s && !strcmp(method, "fp8")) {
            q->method = HY_QUANT_FP8;
            snprintf(q->source, sizeof q->source, "fp8");
            s = parse_fp8(q, qc, err);
        } else if (!s && !strcmp(method, "gptq")) {
            q->method = HY_QUANT_GPTQ;
            snprintf(q->source, sizeof q->source, "gptq");
            s = parse_gptq(q, qc, err);
        } else if (!s) {
            s = hy_err_set(err, HY_E_UNSUPPORTED, "quant_method '%s' (compressed-tensors fp8, fp8 "
                           "and gptq are supported)", method);
        }
        if (s) {
            hy_err_prefix(err, "%s", key);
            return s;
        }
    }
    if (hf) {
        if (q->method == HY_QUANT_GPTQ)
            return HY_OK; /* not ours to read */
        if (!json_is_object(hf))
            return hy_err_set(err, HY_E_FORMAT, "hf_quant_config.json must be a JSON object");
        s = parse_hf(q, hf, err);
        if (s) {
            hy_err_prefix(err, "hf_quant_config.json");
            return s;
        }
        if (q->method == HY_QUANT_NONE) {
            q->method = HY_QUANT_FP8;
            q->w_per_tensor = q->w_per_channel = true; /* as stored */
            snprintf(q->source, sizeof q->source, "hf_quant_config");
        }
    }
    return HY_OK;
}

hy_status hy_quant_config_parse(struct hy_quant_config *q, const char *config_json,
                                const char *hf_json, const char *what, struct hy_err *err)
{
    memset(q, 0, sizeof *q);
    json_t *cfg = NULL, *hf = NULL;
    hy_status s = hy_json_parse(&cfg, config_json, strlen(config_json), what, err);
    if (!s && hf_json)
        s = hy_json_parse(&hf, hf_json, strlen(hf_json), "hf_quant_config.json", err);
    if (!s)
        s = parse_all(q, cfg, hf, err);
    if (s && cfg) /* a config.json that did not parse is already named */
        hy_err_prefix(err, "%s", what);
    json_decref(cfg);
    json_decref(hf);
    if (s)
        hy_quant_config_free(q);
    return s;
}

hy_status hy_quant_config_load(struct hy_quant_config *q, const char *dir, struct hy_err *err)
{
    memset(q, 0, sizeof *q);
    char path[4096], hpath[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    snprintf(hpath, sizeof hpath, "%s/hf_quant_config.json", dir);
    json_t *cfg = NULL, *hf = NULL;
    hy_status s = hy_json_load_file(&cfg, path, HY_CONFIG_MAX_BYTES, err);
    struct stat sb;
    if (!s && stat(hpath, &sb) == 0)
        s = hy_json_load_file(&hf, hpath, HY_CONFIG_MAX_BYTES, err);
    if (!s) {
        s = parse_all(q, cfg, hf, err);
        if (s)
            hy_err_prefix(err, "%s", dir);
    }
    json_decref(cfg);
    json_decref(hf);
    if (s)
        hy_quant_config_free(q);
    return s;
}
