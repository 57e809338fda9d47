/* api_translate_req.c: the body of POST /api/translate read into its job (tr_int.h): the
 * text or texts, the languages, sampling and limits, Hy-MT2's instruction fields and the
 * Chimera ensemble; api_translate_ext.c reads the glossary, context, format and tm fields.
 * Every field is checked here, before anything reaches the engine. */
#include "server/tr_int.h"

#include "core/json.h"
#include "server/gen.h"

#include <stdlib.h>
#include <string.h>

#define TR_LANG_MAX 64

/* A language field: a code or name; "auto" (source only) gives NULL. Answers 400 listing
 * the valid codes when unknown. */
static bool parse_lang(struct hy_http_req *req, json_t *body, const char *key, const char *alias,
                       bool source, const struct hy_lang **out)
{
    char name[TR_LANG_MAX] = "";
    struct hy_err err = {{0}};
    const char *used = json_object_get(body, key) ? key : alias;
    if (hy_json_get_str(body, used, !source, name, sizeof name, &err)) {
        hy_http_error(req, 400, source ? "invalid_parameter" : "missing_target_lang", "%s%s",
                             err.msg, source ? "" : " (the language to translate into)");
        return false;
    }
    *out = NULL;
    if (source && (!name[0] || !strcmp(name, "auto")))
        return true;
    if (!(*out = hy_lang_find(name))) {
        size_t n = hy_lang_list(NULL, 0) + 1; /* the whole list, however long the table */
        char *list = malloc(n);
        if (list)
            hy_lang_list(list, n);
        hy_http_error(req, 400, "unknown_language", "%s: unknown language '%s'; valid: %s%s", used,
                      name, list ? list : "(out of memory listing them)", source ? ", auto" : "");
        free(list);
        return false;
    }
    return true;
}

static size_t count_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n\f\v", s[i]))
            return false;
    return true;
}

/* The texts to translate (`text`, or `texts` for a batch) into t->text and t->items;
 * answers 4xx and returns false on a bad request. */
static bool parse_texts(struct hy_http_req *req, json_t *body, struct tr *t)
{
    struct hy_server *s = req->srv;
    json_t *text = json_object_get(body, "text"), *texts = json_object_get(body, "texts");
    t->batch = texts && !json_is_null(texts);
    if (t->batch && text && !json_is_null(text))
        return hy_http_error(req, 400, "invalid_parameter", "give text or texts, not both"), false;
    size_t n = t->batch ? json_array_size(texts) : 1, bytes = 0, chars = 0;
    if (t->batch && (!json_is_array(texts) || n < 1 || n > TR_MAX_TEXTS))
        return hy_http_error(req, 400, "invalid_parameter",
                             "texts: an array of 1 to %d strings is required", TR_MAX_TEXTS),
               false;
    for (size_t i = 0; i < n; i++) {
        json_t *x = t->batch ? json_array_get(texts, i) : text;
        char name[32] = "text";
        if (t->batch)
            snprintf(name, sizeof name, "texts[%zu]", i);
        if (!json_is_string(x))
            return hy_http_error(req, 400, "missing_text", "%s: a string is required", name),
                   false;
        if (blank(json_string_value(x), json_string_length(x)))
            return hy_http_error(req, 400, "empty_text", "%s is empty", name), false;
        bytes += json_string_length(x) + 1;
        chars += count_chars(json_string_value(x), json_string_length(x));
    }
    if (chars > s->cfg.max_chars)
        return hy_http_error(req, 413, "text_too_long", "%s %zu characters; the limit is %zu",
                             t->batch ? "texts are" : "text is", chars, s->cfg.max_chars),
               false;
    t->text = malloc(bytes);
    t->items = calloc(n, sizeof *t->items);
    if (!t->text || !t->items)
        return hy_http_error(req, 500, "out_of_memory", "out of memory"), false;
    t->n_items = n;
    for (size_t i = 0, off = 0; i < n; i++) {
        json_t *x = t->batch ? json_array_get(texts, i) : text;
        struct tr_item *it = &t->items[i];
        it->t = t;
        it->off = off;
        it->len = json_string_length(x);
        memcpy(t->text + off, json_string_value(x), it->len + 1);
        off += it->len + 1;
    }
    return true;
}

/* "ensemble" (2..6, with --chimera) and "candidates"; answers 400 and returns false when
 * they are wrong. null, 0 and false ask for nothing (clients send defaults). */
static bool parse_ensemble(struct hy_http_req *req, json_t *body, struct tr *t)
{
    struct hy_server *s = req->srv;
    struct hy_err err = {{0}};
    json_t *k = json_object_get(body, "ensemble");
    int64_t n = 0;
    if (k && !json_is_null(k) && !(json_is_integer(k) && json_integer_value(k) == 0) &&
        hy_json_get_int(body, "ensemble", false, HY_DOC_MIN_ENSEMBLE, HY_DOC_MAX_ENSEMBLE, &n,
                        &err))
        return hy_http_error(req, 400, "invalid_parameter", "%s (candidates fused by Chimera)",
                             err.msg), false;
    if (n && !s->chimera)
        return hy_http_error(req, 400, "ensemble_unavailable", "ensemble: this server has no "
                             "Chimera model (start it with --chimera MODEL)"), false;
    if (hy_json_get_bool(body, "candidates", false, &t->want_cands, &err))
        return hy_http_error(req, 400, "invalid_parameter", "%s", err.msg), false;
    if (t->want_cands && !n)
        return hy_http_error(req, 400, "invalid_parameter", "candidates: needs \"ensemble\""),
               false;
    t->o.ensemble = (int)n;
    t->o.chimera = n ? s->chimera : NULL;
    t->o.chimera_tok = n ? s->chimera_tok : NULL;
    return true;
}

/* A copy of string field v (a string, or absent/null: NULL) at *at in t->instr_buf. */
static const char *instr_str(struct tr *t, const json_t *v, size_t *at)
{
    if (!json_is_string(v))
        return NULL;
    char *p = t->instr_buf + *at;
    memcpy(p, json_string_value(v), json_string_length(v) + 1);
    *at += json_string_length(v) + 1;
    return p;
}

/* Hy-MT2's instruction fields into t->instr (copied: the body goes before the document);
 * answers 400 and returns false on a bad or unsupported one. */
static bool parse_instr(struct hy_http_req *req, json_t *body, struct tr *t)
{
    json_t *style = json_object_get(body, "style"), *fmt = json_object_get(body, "data_format");
    json_t *prefs = json_object_get(body, "preferences");
    struct hy_err err = {{0}};
    const char *bad = (style && !json_is_null(style) && !json_is_string(style)) ? "style"
                      : (fmt && !json_is_null(fmt) && !json_is_string(fmt))   ? "data_format"
                      : (prefs && !json_is_null(prefs) && !json_is_array(prefs))
                          ? "preferences"
                          : NULL;
    size_t n = json_array_size(prefs), bytes = json_string_length(style) +
                                               json_string_length(fmt) + 2;
    for (size_t i = 0; !bad && i < n; i++) {
        if (!json_is_string(json_array_get(prefs, i)))
            bad = "preferences";
        bytes += json_string_length(json_array_get(prefs, i)) + 1;
    }
    if (bad)
        return hy_http_error(req, 400, "invalid_parameter", "%s: %s", bad,
                             strcmp(bad, "preferences") ? "a string is required"
                                                        : "an array of strings is required"),
               false;
    if (n > HY_PROMPT_MAX_PREFS)
        return hy_http_error(req, 400, "invalid_parameter", "preferences: %zu, at most %d", n,
                             HY_PROMPT_MAX_PREFS),
               false;
    hy_status st = hy_json_get_bool(body, "delimiters", false, &t->instr.delimiters, &err);
    if (st)
        return hy_http_error(req, 400, "invalid_parameter", "%s", err.msg), false;
    if (!(t->instr_buf = malloc(bytes)))
        return hy_http_error(req, 500, "out_of_memory", "out of memory"), false;
    size_t at = 0;
    t->instr.style = instr_str(t, style, &at);
    t->instr.data_format = instr_str(t, fmt, &at);
    for (size_t i = 0; i < n; i++)
        t->prefs[i] = instr_str(t, json_array_get(prefs, i), &at);
    t->instr.prefs = t->prefs;
    t->instr.n_prefs = n;
    st = hy_prompt_instr_check(req->srv->prompt.kind.gen, &t->instr, &err);
    if (st)
        return hy_http_error(req, 400, st == HY_E_UNSUPPORTED ? "unsupported_by_model"
                                                              : "invalid_parameter",
                             "%s", err.msg),
               false;
    t->o.instr = &t->instr;
    return true;
}

bool hy_tr_parse(struct hy_http_req *req, json_t *body, struct tr *t)
{
    struct hy_server *s = req->srv;
    struct hy_err err = {{0}};
    int64_t max_new = 0;
    t->o.sampling = s->prompt.sampling; /* the model's defaults (prompt_detect.h) */
    uint64_t seed = atomic_fetch_add(&s->next_id, 1) * 0x9E3779B97F4A7C15ull;
    if (!parse_texts(req, body, t) || !parse_instr(req, body, t))
        return false;
    if (!parse_lang(req, body, "target_lang", "tgt", false, &t->o.tgt) ||
        !parse_lang(req, body, "source_lang", "src", true, &t->o.src))
        return false;
    hy_status st = hy_json_get_bool(body, "stream", false, &t->stream, &err);
    if (!st && t->stream && t->batch)
        st = hy_err_set(&err, HY_E_INVAL, "stream: not supported with texts (a batch is "
                                          "answered whole)");
    bool keep_lines = false; /* one output line per input line (--keep-lines) */
    if (!st)
        st = hy_json_get_bool(body, "keep_lines", false, &keep_lines, &err);
    t->o.keep_lines = keep_lines;
    if (!st)
        st = hy_json_get_int(body, "max_tokens", false, 1,
                             hy_engine_get_params(s->engine)->max_seq_tokens, &max_new, &err);
    if (!st)
        st = hy_gen_parse_sampling(body, &t->o.sampling, seed, &err);
    if (st)
        return hy_http_error(req, 400, "invalid_parameter", "%s", err.msg), false;
    t->o.max_new_tokens = (int)max_new;
    if (!parse_ensemble(req, body, t))
        return false;
    return hy_api_ext_parse(req, body, &t->x, &t->o);
}
