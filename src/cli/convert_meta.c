/* convert_meta.c: the metadata `hymt convert` writes: the hunyuan-dense.* model keys and the
 * tokenizer.ggml.* keys, as llama.cpp's convert_hf_to_gguf.py (HunYuanModel, TextModel,
 * get_vocab_base, gguf.SpecialVocab) writes them for a HunYuanDenseV1 checkpoint with a
 * tokenizer.json (model doc 3.6). */
#include "cli/convert.h"

#include "core/json.h"
#include "tokenizer/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARCH "hunyuan-dense"

/* llama.cpp's LlamaFileType for general.file_type. */
uint32_t hy_convert_file_type(enum hy_convert_type t)
{
    static const uint32_t ft[] = {0, 1, 32, 7, 2, 15, 18}; /* LlamaFileType */
    return ft[t];
}

hy_status hy_convert_model_meta(struct hy_gguf_w *w, const struct hy_config *c, const char *name,
                                enum hy_convert_type type, struct hy_err *err)
{
    /* HunYuanModel: with a "dynamic" (NTK-alpha) rope the effective base is written, scaling
     * "none", and 256k contexts; hymt's config already holds the effective base. */
    bool dynamic = c->rope_alpha > 0 && !strcmp(c->rope_type, "dynamic");
    uint32_t ctx = dynamic ? 262144u : (uint32_t)c->max_position_embeddings;
    hy_status s = hy_gguf_w_str(w, "general.architecture", ARCH, err);
    if (!s) s = hy_gguf_w_str(w, "general.name", name, err);
    if (!s) s = hy_gguf_w_u32(w, ARCH ".block_count", (uint32_t)c->num_hidden_layers, err);
    if (!s) s = hy_gguf_w_u32(w, ARCH ".context_length", ctx, err);
    if (!s) s = hy_gguf_w_u32(w, ARCH ".embedding_length", (uint32_t)c->hidden_size, err);
    if (!s) s = hy_gguf_w_u32(w, ARCH ".feed_forward_length", (uint32_t)c->intermediate_size, err);
    if (!s) s = hy_gguf_w_u32(w, ARCH ".attention.head_count", (uint32_t)c->num_attention_heads, err);
    if (!s) s = hy_gguf_w_u32(w, ARCH ".attention.head_count_kv", (uint32_t)c->num_key_value_heads, err);
    if (!s) s = hy_gguf_w_f32(w, ARCH ".rope.freq_base", (float)c->rope_base, err);
    if (!s) s = hy_gguf_w_f32(w, ARCH ".attention.layer_norm_rms_epsilon", (float)c->rms_norm_eps, err);
    if (!s) s = hy_gguf_w_u32(w, ARCH ".attention.key_length", (uint32_t)c->head_dim, err);
    if (!s) s = hy_gguf_w_u32(w, ARCH ".attention.value_length", (uint32_t)c->head_dim, err);
    if (!s) s = hy_gguf_w_u32(w, ARCH ".rope.dimension_count", (uint32_t)c->head_dim, err);
    if (!s) s = hy_gguf_w_u32(w, "general.file_type", hy_convert_file_type(type), err);
    if (!s && type >= HY_CONVERT_Q8_0)
        s = hy_gguf_w_u32(w, "general.quantization_version", 2, err);
    if (!s && dynamic) {
        s = hy_gguf_w_str(w, ARCH ".rope.scaling.type", "none", err);
        if (!s) s = hy_gguf_w_f32(w, ARCH ".rope.scaling.factor", 1.0f, err);
        if (!s) s = hy_gguf_w_u32(w, ARCH ".rope.scaling.original_context_length", 262144u, err);
    }
    /* the exact base: f32 loses enough of it to move RoPE frequencies (load_gguf.h) */
    if (!s)
        s = hy_gguf_w_f64(w, "hymt.rope.freq_base", c->rope_base, err);
    return s;
}

/* ---- tokenizer ---- */

enum { TT_NORMAL = 1, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5 };

/* llama.cpp's does_token_look_special, for the forms Hunyuan tokens take. */
static bool looks_special(const char *s)
{
    size_t n = strlen(s);
    if (n >= 4 && !strncmp(s, "<|", 2) && !strcmp(s + n - 2, "|>"))
        return true;
    return n >= 8 && !strncmp(s, "<\xef\xbd\x9c", 4) && !strcmp(s + n - 4, "\xef\xbd\x9c>");
}

/* A token string of tokenizer_config.json (a string or {"content": ...}) as an id, or -1. */
static int64_t config_token(const struct hy_tok *tok, const json_t *tc, const char *key)
{
    const json_t *v = json_object_get(tc, key);
    if (json_is_object(v))
        v = json_object_get(v, "content");
    return json_is_string(v) ? hy_tok_find(tok, json_string_value(v)) : -1;
}

static hy_status special_ids(struct hy_gguf_w *w, const struct hy_convert_src *src,
                             const struct hy_tok *tok, struct hy_err *err)
{
    const struct hy_config *c = src->cfg;
    const json_t *tc = src->tok_config;
    /* SpecialVocab: tokenizer_config.json's token strings first, config.json's ids after */
    int64_t bos = config_token(tok, tc, "bos_token"), eos = config_token(tok, tc, "eos_token");
    int64_t pad = config_token(tok, tc, "pad_token"), sep = config_token(tok, tc, "sep_token");
    if (bos < 0) bos = c->bos_token_id;
    if (eos < 0 && c->n_eos > 0) eos = c->eos_token_id[0];
    if (pad < 0) pad = c->pad_token_id;
    if (sep < 0) sep = c->sep_token_id;
    /* HunYuanModel._fix_special_tokens: eos = the config's eod; eot = the first of
     * generation_config's eos list when it has two or more */
    if (c->eod_token_id >= 0)
        eos = c->eod_token_id;
    int64_t eot = -1;
    const json_t *ge = json_object_get(src->gen_config, "eos_token_id");
    if (json_is_array(ge) && json_array_size(ge) >= 2 && json_is_integer(json_array_get(ge, 0)))
        eot = json_integer_value(json_array_get(ge, 0));
    const struct {
        const char *key;
        int64_t id;
    } ids[] = {{"tokenizer.ggml.bos_token_id", bos},       {"tokenizer.ggml.eos_token_id", eos},
               {"tokenizer.ggml.seperator_token_id", sep}, {"tokenizer.ggml.padding_token_id", pad},
               {"tokenizer.ggml.eot_token_id", eot}};
    hy_status s = HY_OK;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0] && !s; i++)
        if (ids[i].id >= 0 && ids[i].id < c->vocab_size)
            s = hy_gguf_w_u32(w, ids[i].key, (uint32_t)ids[i].id, err);
    const char *flags[2] = {"add_bos_token", "add_eos_token"};
    for (int i = 0; i < 2 && !s; i++) {
        const json_t *v = json_object_get(tc, flags[i]);
        char key[64];
        snprintf(key, sizeof key, "tokenizer.ggml.%s", flags[i]);
        if (json_is_boolean(v))
            s = hy_gguf_w_bool(w, key, json_is_true(v), err);
    }
    return s;
}

/* tokens[i] / types[i] for every id below the config's vocab_size (get_vocab_base). */
static hy_status vocab_arrays(const struct hy_convert_src *src, const struct hy_tok *tok,
                              const char **tokens, int32_t *types, char *pads, struct hy_err *err)
{
    int64_t n = src->cfg->vocab_size;
    for (int64_t i = 0; i < n; i++)
        tokens[i] = NULL;
    const json_t *vocab = json_object_get(json_object_get(src->tok_json, "model"), "vocab");
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)vocab, key, val)
    {
        int64_t id = json_integer_value(val);
        if (id < 0 || id >= n)
            return hy_err_set(err, HY_E_FORMAT, "tokenizer.json: token '%.40s' has id %lld, not "
                              "below the config's vocab_size %lld", key, (long long)id, (long long)n);
        tokens[id] = key;
        types[id] = TT_NORMAL;
    }
    const json_t *added = json_object_get(src->tok_json, "added_tokens");
    for (size_t k = 0; k < json_array_size(added); k++) {
        const json_t *e = json_array_get(added, k);
        const char *content = json_string_value(json_object_get(e, "content"));
        int32_t id = content && *content ? hy_tok_find(tok, content) : -1;
        if (id < 0)
            continue;
        if (id >= n)
            return hy_err_set(err, HY_E_FORMAT, "tokenizer.json: added token '%.40s' has id %d, "
                              "not below the config's vocab_size %lld", content, id, (long long)n);
        tokens[id] = content;
        types[id] = json_is_true(json_object_get(e, "special")) || looks_special(content)
                        ? TT_CONTROL : TT_USER;
    }
    for (int64_t i = 0; i < n; i++)
        if (!tokens[i]) {
            char *p = pads + i * 32;
            snprintf(p, 32, "[PAD%lld]", (long long)i);
            tokens[i] = p;
            types[i] = TT_UNUSED;
        }
    return HY_OK;
}

static hy_status merges_array(struct hy_gguf_w *w, const json_t *merges, struct hy_err *err)
{
    size_t n = json_array_size(merges);
    char **m = calloc(n ? n : 1, sizeof *m);
    if (!m)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_status s = HY_OK;
    for (size_t i = 0; i < n && !s; i++) {
        const json_t *e = json_array_get(merges, i);
        if (json_is_string(e))
            m[i] = strdup(json_string_value(e));
        else if (json_is_array(e) && json_array_size(e) == 2) {
            const char *a = json_string_value(json_array_get(e, 0));
            const char *b = json_string_value(json_array_get(e, 1));
            size_t len = (a ? strlen(a) : 0) + (b ? strlen(b) : 0) + 2;
            if (a && b && (m[i] = malloc(len)))
                snprintf(m[i], len, "%s %s", a, b);
        }
        if (!m[i])
            s = hy_err_set(err, HY_E_FORMAT, "tokenizer.json: model.merges[%zu] is malformed or "
                           "out of memory", i);
    }
    if (!s)
        s = hy_gguf_w_arr_str(w, "tokenizer.ggml.merges", (const char *const *)m, NULL, n, err);
    for (size_t i = 0; i < n; i++)
        free(m[i]);
    free(m);
    return s;
}

hy_status hy_convert_tokenizer_meta(struct hy_gguf_w *w, const struct hy_convert_src *src,
                                    const struct hy_tok *tok, struct hy_err *err)
{
    const char *pre = hy_tok_gguf_pre_of(src->tok_json);
    if (!pre)
        return hy_err_set(err, HY_E_UNSUPPORTED, "tokenizer.json: its normalizer/pre_tokenizer "
                          "is neither llama.cpp's \"hunyuan\" (NFC + the 7B regex) nor "
                          "\"hunyuan-dense\" pipeline, so a GGUF cannot carry it faithfully");
    const json_t *model = json_object_get(src->tok_json, "model");
    if (json_is_true(json_object_get(model, "ignore_merges")))
        return hy_err_set(err, HY_E_UNSUPPORTED, "tokenizer.json: ignore_merges true has no GGUF "
                          "form for this pre-tokenizer");
    size_t n = (size_t)src->cfg->vocab_size;
    const char **tokens = malloc(n * sizeof *tokens);
    int32_t *types = malloc(n * sizeof *types);
    char *pads = malloc(n * 32);
    hy_status s = tokens && types && pads ? HY_OK : hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (!s)
        s = vocab_arrays(src, tok, tokens, types, pads, err);
    if (!s) s = hy_gguf_w_str(w, "tokenizer.ggml.model", "gpt2", err);
    if (!s) s = hy_gguf_w_str(w, "tokenizer.ggml.pre", pre, err);
    if (!s) s = hy_gguf_w_arr_str(w, "tokenizer.ggml.tokens", tokens, NULL, n, err);
    if (!s) s = hy_gguf_w_arr_i32(w, "tokenizer.ggml.token_type", types, n, err);
    if (!s) s = merges_array(w, json_object_get(model, "merges"), err);
    if (!s) s = special_ids(w, src, tok, err);
    if (!s && src->chat_template)
        s = hy_gguf_w_str(w, "tokenizer.chat_template", src->chat_template, err);
    free(tokens);
    free(types);
    free(pads);
    return s;
}
