/* api_libre.c: LibreTranslate's API (its README and /docs), for the tools that speak it:
 * POST /translate {q: a string or an array of strings, source: a code or "auto", target,
 * format: "text" | "html", alternatives: 0..LT_MAX_ALTERNATIVES (more translations, sampled
 * at temperature 1 with other seeds; only those that differ are listed), api_key, and
 * hymt's glossary_id (a glossary of /v1/glossaries, as on DeepL's route)} as JSON or as a
 * form, answered {"translatedText": ..., "detectedLanguage": {"confidence", "language"}
 * (source auto only), "alternatives": [...] (when asked)}, with arrays of those for an
 * array q; GET /languages [{code, name, targets}]. Errors are LibreTranslate's
 * {"error": "..."} (400 for a bad request or a field it does not have, 403 for a missing or
 * wrong key, 415 for multipart, 429, 500, 503).
 * The translation itself is /api/translate's job (tr.h, compat.h). */
#include "server/compat.h"

#include "core/json.h"
#include "core/utf8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LT_MAX_TEXTS 128        /* strings in one q array, as /api/translate's texts */
#define LT_MAX_ALTERNATIVES 3   /* extra translations sampled (compat.h) */
#define LT_LANG_MAX 64

struct lt {
    struct hy_compat c;
    bool array;      /* q was an array: so is every answer field */
    bool detect;     /* source was auto: detectedLanguage */
    int n_alt;
};

static void lt_free(void *ctx)
{
    struct lt *l = ctx;
    hy_compat_free(&l->c);
    free(l);
}

/* detectedLanguage of text i: the language its translation started from (the first of its
 * runs that detection decided), with the confidence POST /detect gives that language for
 * the whole text (0-100, one decimal); 0 with language null when detection abstained. */
static json_t *detected(const struct lt *l, const struct hy_lang *src, size_t i)
{
    struct hy_lang_guess g[HY_LANG_GUESS_MAX];
    size_t n = hy_lang_detect_ranked(l->c.buf + l->c.off[i], l->c.len[i], g, HY_LANG_GUESS_MAX);
    double conf = 0;
    if (!src && n)
        src = g[0].lang;
    for (size_t k = 0; src && k < n; k++)
        if (g[k].lang == src)
            conf = round(g[k].confidence * 10) / 10;
    return json_pack("{s:f,s:o}", "confidence", conf, "language",
                     src ? json_string(src->code) : json_null());
}

/* Distinct translations of text i other than the first variant's. */
static json_t *alternatives(const struct lt *l, const char *const *outs, const size_t *lens,
                            size_t i, const char *main, size_t main_len)
{
    json_t *a = json_array();
    for (int v = 1; v <= l->n_alt; v++) {
        char *s = NULL;
        size_t n = 0;
        struct hy_err err = {{0}};
        if (hy_compat_result(&l->c, outs, lens, i, v, &s, &n, &err) == HY_OK &&
            !(n == main_len && !memcmp(s, main, n))) {
            bool dup = false;
            for (size_t j = 0; j < json_array_size(a); j++) {
                json_t *x = json_array_get(a, j);
                dup = dup || (json_string_length(x) == n && !memcmp(json_string_value(x), s, n));
            }
            if (!dup)
                json_array_append_new(a, json_stringn(s, n));
        }
        free(s);
    }
    return a;
}

static void answer(struct hy_http_req *req, void *ctx, const char *const *outs,
                   const size_t *lens, const struct hy_lang *const *srcs, size_t n_items)
{
    struct lt *l = ctx;
    (void)n_items;
    json_t *texts = json_array(), *langs = json_array(), *alts = json_array();
    for (size_t i = 0; i < l->c.n_texts; i++) {
        char *s = NULL;
        size_t n = 0;
        struct hy_err err = {{0}};
        if (hy_compat_result(&l->c, outs, lens, i, 0, &s, &n, &err)) {
            json_decref(texts), json_decref(langs), json_decref(alts);
            hy_http_error(req, 500, "translation_failed", "%s", err.msg);
            return;
        }
        json_array_append_new(texts, json_stringn(s, n));
        json_array_append_new(langs, detected(l, n_items ? hy_compat_source(&l->c, srcs, i) : NULL, i));
        json_array_append_new(alts, alternatives(l, outs, lens, i, s, n));
        free(s);
    }
    json_t *j = json_object();
    json_object_set_new(j, "translatedText", l->array ? texts : json_incref(json_array_get(texts, 0)));
    if (l->detect)
        json_object_set_new(j, "detectedLanguage",
                            l->array ? json_incref(langs) : json_incref(json_array_get(langs, 0)));
    if (l->n_alt)
        json_object_set_new(j, "alternatives",
                            l->array ? json_incref(alts) : json_incref(json_array_get(alts, 0)));
    if (!l->array)
        json_decref(texts);
    json_decref(langs);
    json_decref(alts);
    hy_http_json(req, 200, j);
}

/* A language field: a code or name (LibreTranslate's "zt" is Traditional Chinese);
 * "auto" for the source gives NULL. Answers 400 and returns false when unknown. */
static bool lang_field(struct hy_http_req *req, json_t *body, const char *key, bool source,
                       const struct hy_lang **out)
{
    json_t *v = json_object_get(body, key);
    *out = NULL;
    if (!v || json_is_null(v) || (json_is_string(v) && !json_string_length(v)))
        return source || !hy_http_error(req, 400, "missing_parameter",
                                        "Invalid request: missing %s parameter", key);
    const char *name = json_string_value(v);
    if (!json_is_string(v) || json_string_length(v) >= LT_LANG_MAX)
        return !hy_http_error(req, 400, "invalid_parameter", "%s: a language code is required",
                              key);
    if (source && !strcmp(name, "auto"))
        return true;
    *out = hy_lang_find(!strcmp(name, "zt") ? "zh-Hant" : name);
    return *out || !hy_http_error(req, 400, "unknown_language", "%s is not supported", name);
}

/* An integer that a form sends as a string. */
static bool int_field(json_t *body, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v))
        return true;
    char *end = NULL;
    long long x = json_is_integer(v) ? json_integer_value(v)
                  : json_is_string(v) ? strtoll(json_string_value(v), &end, 10)
                                      : lo - 1;
    if (end && (end == json_string_value(v) || *end))
        x = lo - 1;
    *out = x;
    return x >= lo && x <= hi;
}

static size_t count_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* q as an array of UTF-8 strings (a string becomes an array of one); NULL after a 400. */
static json_t *q_field(struct hy_http_req *req, json_t *body, bool *array)
{
    json_t *q = json_object_get(body, "q");
    *array = json_is_array(q);
    if (!q || json_is_null(q))
        return hy_http_error(req, 400, "missing_parameter", "Invalid request: missing q parameter"),
               NULL;
    json_t *list = *array ? json_incref(q) : json_pack("[O]", q);
    size_t n = json_array_size(list), chars = 0;
    const char *why = n < 1 || n > LT_MAX_TEXTS ? "q: 1 to 128 strings are required" : NULL;
    for (size_t i = 0; !why && i < n; i++) {
        json_t *s = json_array_get(list, i);
        if (!json_is_string(s))
            why = "q: a string or an array of strings is required";
        else
            chars += count_chars(json_string_value(s), json_string_length(s));
    }
    if (!why && chars > req->srv->cfg.max_chars) {
        hy_http_error(req, 400, "text_too_long",
                      "Invalid request: request (%zu) exceeds text limit (%zu)", chars,
                      req->srv->cfg.max_chars);
        json_decref(list);
        return NULL;
    }
    if (why) {
        hy_http_error(req, 400, "invalid_parameter", "Invalid request: %s", why);
        json_decref(list);
        return NULL;
    }
    return list;
}

/* Every field is LibreTranslate's; another is a 400 naming it, never ignored. */
static bool known_fields(struct hy_http_req *req, json_t *body)
{
    static const char *const known[] = {"q",           "source",  "target",     "format",
                                        "alternatives", "api_key", "glossary_id"};
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        size_t i = 0;
        while (i < sizeof known / sizeof known[0] && strcmp(known[i], key))
            i++;
        if (i == sizeof known / sizeof known[0])
            return !hy_http_error(req, 400, "unsupported_parameter",
                                  "Invalid request: %s is not a parameter hymt supports", key);
    }
    return true;
}

/* glossary_id (hymt's, as DeepL's: a glossary of /v1/glossaries for the request's pair,
 * whose source language it names when source is auto) into job->glossary; answers 400 and
 * returns false (job then holds none). */
static bool glossary_field(struct hy_http_req *req, json_t *body, struct hy_tr_job *job)
{
    json_t *id = json_object_get(body, "glossary_id");
    struct hy_gstore *gs = req->srv->cfg.glossaries;
    struct hy_err err = {{0}};
    if (!id || json_is_null(id) || (json_is_string(id) && !json_string_length(id)))
        return true;
    if (!json_is_string(id))
        return !hy_http_error(req, 400, "invalid_parameter", "glossary_id: a string is required");
    if (!gs || hy_gstore_acquire(gs, json_string_value(id), &job->glossary, &err))
        return !hy_http_error(req, 400, "glossary_not_found", "glossary_id: %s",
                              gs ? err.msg : "this server keeps no glossaries");
    const struct hy_gstore_info *g = hy_gstore_info(job->glossary);
    const struct hy_lang *src = hy_lang_find(g->src);
    if (hy_lang_find(g->tgt) != job->tgt || (job->src && job->src != src)) {
        hy_http_error(req, 400, "glossary_language_mismatch",
                      "glossary %s is for %s -> %s, the request is %s -> %s", g->id, g->src,
                      g->tgt, job->src ? job->src->code : "auto", job->tgt->code);
        hy_gstore_release(job->glossary);
        job->glossary = NULL;
        return false;
    }
    job->src = src; /* no detection needed */
    return true;
}

/* Reads the fields into l and job; answers 4xx and returns NULL (q list) on a bad one
 * (job then holds no glossary). */
static json_t *parse(struct hy_http_req *req, json_t *body, struct lt *l, struct hy_tr_job *job,
                     enum hy_format *fmt)
{
    json_t *key = json_object_get(body, "api_key");
    if (!hy_http_authorize(req, json_is_string(key) ? json_string_value(key) : NULL, 403,
                           "invalid_api_key", "Invalid API key"))
        return NULL;
    if (!known_fields(req, body))
        return NULL;
    json_t *format = json_object_get(body, "format");
    const char *fs = json_is_string(format) ? json_string_value(format) : "text";
    *fmt = !strcmp(fs, "html") ? HY_FORMAT_HTML : HY_FORMAT_TEXT;
    if (format && !json_is_null(format) && strcmp(fs, "text") && strcmp(fs, "html"))
        return hy_http_error(req, 400, "invalid_parameter", "%s format is not supported",
                             json_is_string(format) ? fs : "this"),
               NULL;
    int64_t alt = 0;
    if (!int_field(body, "alternatives", 0, LT_MAX_ALTERNATIVES, &alt))
        return hy_http_error(req, 400, "invalid_parameter",
                             "alternatives: an integer from 0 to %d (translations sampled at "
                             "temperature 1) is supported",
                             LT_MAX_ALTERNATIVES),
               NULL;
    l->n_alt = (int)alt;
    json_t *src = json_object_get(body, "source");
    l->detect = !src || json_is_null(src) || (json_is_string(src) && !strcmp(json_string_value(src), "auto"));
    if (!lang_field(req, body, "source", true, &job->src) ||
        !lang_field(req, body, "target", false, &job->tgt) || !glossary_field(req, body, job))
        return NULL;
    json_t *q = q_field(req, body, &l->array);
    if (!q) {
        hy_gstore_release(job->glossary);
        job->glossary = NULL;
    }
    return q;
}

bool hy_api_libre_translate(struct hy_http_req *req)
{
    json_t *body = hy_http_body_params(req);
    if (!body)
        return true;
    struct lt *l = calloc(1, sizeof *l);
    struct hy_tr_job job = {0};
    enum hy_format fmt = HY_FORMAT_TEXT;
    json_t *q = l ? parse(req, body, l, &job, &fmt) : NULL;
    json_decref(body);
    if (!l)
        return hy_http_error(req, 500, "out_of_memory", "out of memory");
    if (!q) {
        free(l);
        return true;
    }
    struct hy_server *s = req->srv;
    uint64_t seed = atomic_fetch_add(&s->next_id, 1) * 0x9E3779B97F4A7C15ull;
    struct hy_err err = {{0}};
    struct hy_sampler_params sp = s->prompt.sampling; /* the model's defaults */
    sp.seed = seed;
    hy_status st = hy_compat_plan(&l->c, q, fmt, 1 + l->n_alt, &sp, &err);
    json_decref(q);
    if (st) {
        hy_gstore_release(job.glossary);
        lt_free(l);
        return hy_http_error(req, st == HY_E_NOMEM ? 500 : 400, "invalid_parameter",
                             "Invalid request: %s", err.msg);
    }
    job.sampling = sp;
    job.answer = answer;
    job.ctx = l;
    job.ctx_free = lt_free;
    hy_compat_job(&l->c, &job);
    return hy_tr_start(req, &job);
}

bool hy_api_libre_languages(struct hy_http_req *req)
{
    /* the model's languages; each one's targets are all the others */
    json_t *list = json_array();
    for (size_t i = 0; i < hy_lang_count(); i++) {
        const struct hy_lang *l = hy_lang_at(i);
        if (!hy_compat_model_has(req->srv, l))
            continue;
        json_t *targets = json_array();
        for (size_t j = 0; j < hy_lang_count(); j++)
            if (j != i && hy_compat_model_has(req->srv, hy_lang_at(j)))
                json_array_append_new(targets, json_string(hy_lang_at(j)->code));
        json_array_append_new(list, json_pack("{s:s,s:s,s:o}", "code", l->code, "name",
                                              l->name_en, "targets", targets));
    }
    return hy_http_json(req, 200, list);
}
