/* api_deepl.c: DeepL's API v2 for its clients (deepl-node and the others; form or JSON
 * bodies, "Authorization: DeepL-Auth-Key KEY" or Bearer): POST /v2/translate {text: a string
 * or an array, target_lang, source_lang, tag_handling: "html" | "xml", formality, ...}
 * answered {"translations": [{"detected_source_language", "text"}]}; GET /v2/languages
 * (?type=source | target) [{language, name, supports_formality}]. Language codes are
 * DeepL's: upper case, with its target variants EN-US, EN-GB, PT-BR, PT-PT, ZH-HANS,
 * ZH-HANT mapped onto hymt's languages (a variant's spelling is the model's own choice:
 * en-US and en-GB both ask for English). Fields DeepL has that hymt cannot honour get a
 * 400 naming them; unknown fields too. Errors are DeepL's {"message": "..."} (400, 403,
 * 413, 429, 500, 503). glossary_id takes a glossary of /v1/glossaries (glossary_store.h)
 * and context DeepL's context text, both through HY-MT1.5's prompts (a 7b-style model
 * refuses them). The translation itself is /api/translate's job (tr.h, compat.h). */
#include "server/compat.h"

#include "core/json.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DL_MAX_TEXTS 50 /* DeepL's limit of texts per request */
#define DL_CODE_MAX 16

/* DeepL's target variants: the code and the language it asks for. */
static const struct {
    const char *code, *lang, *name;
} VARIANTS[] = {
    {"EN-GB", "en", "English (British)"},       {"EN-US", "en", "English (American)"},
    {"PT-BR", "pt", "Portuguese (Brazilian)"},  {"PT-PT", "pt", "Portuguese (European)"},
    {"ZH-HANS", "zh", "Chinese (simplified)"},
};

/* hymt's code in DeepL's spelling: upper case ("zh-Hant" -> "ZH-HANT"). */
static void deepl_code(const struct hy_lang *l, char *out)
{
    size_t i = 0;
    for (; l->code[i] && i < DL_CODE_MAX - 1; i++)
        out[i] = (char)toupper((unsigned char)l->code[i]);
    out[i] = '\0';
}

/* A DeepL code (any case): a language's own code, or for a target one of VARIANTS. */
static const struct hy_lang *deepl_lang(const char *s, bool target)
{
    char c[DL_CODE_MAX];
    for (size_t i = 0; i < hy_lang_count(); i++) {
        deepl_code(hy_lang_at(i), c);
        if (!strcasecmp(s, c))
            return hy_lang_at(i);
    }
    for (size_t i = 0; target && i < sizeof VARIANTS / sizeof VARIANTS[0]; i++)
        if (!strcasecmp(s, VARIANTS[i].code))
            return hy_lang_find(VARIANTS[i].lang);
    return NULL;
}

struct dl {
    struct hy_compat c;
    const struct hy_lang *src; /* given */
    bool billed;               /* show_billed_characters */
    char *context;             /* DeepL's context, copied out of the body */
};

static void dl_free(void *ctx)
{
    struct dl *d = ctx;
    hy_compat_free(&d->c);
    free(d->context);
    free(d);
}

static void answer(struct hy_http_req *req, void *ctx, const char *const *outs,
                   const size_t *lens, const struct hy_lang *const *srcs, size_t n_items)
{
    struct dl *d = ctx;
    json_t *list = json_array();
    for (size_t i = 0; i < d->c.n_texts; i++) {
        char *s = NULL, code[DL_CODE_MAX] = "UND"; /* undetermined: detection abstained */
        size_t n = 0;
        struct hy_err err = {{0}};
        if (hy_compat_result(&d->c, outs, lens, i, 0, &s, &n, &err)) {
            json_decref(list);
            hy_http_error(req, 500, "translation_failed", "%s", err.msg);
            return;
        }
        const struct hy_lang *src = d->src ? d->src
                                    : n_items ? hy_compat_source(&d->c, srcs, i)
                                              : NULL;
        if (src)
            deepl_code(src, code);
        json_t *t = json_pack("{s:s,s:s%}", "detected_source_language", code, "text", s, n);
        if (d->billed) {
            size_t chars = 0;
            for (size_t k = 0; k < d->c.len[i]; k++)
                chars += ((unsigned char)d->c.buf[d->c.off[i] + k] & 0xC0) != 0x80;
            json_object_set_new(t, "billed_characters", json_integer((json_int_t)chars));
        }
        json_array_append_new(list, t);
        free(s);
    }
    hy_http_json(req, 200, json_pack("{s:o}", "translations", list));
}

/* A string field or NULL (absent, null); *bad when present and not a string. */
static const char *str_field(json_t *body, const char *key, bool *bad)
{
    json_t *v = json_object_get(body, key);
    *bad = v && !json_is_null(v) && !json_is_string(v);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* True when v is one of the '|'-separated words of `ok` (absent and null count as ok). */
static bool one_of(json_t *v, const char *ok)
{
    if (!v || json_is_null(v))
        return true;
    if (json_is_boolean(v)) /* JSON clients send booleans for the "0"/"1" fields */
        return strstr(ok, json_is_true(v) ? "1" : "0") != NULL;
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    size_t n = strlen(s);
    for (const char *p = ok; *p;) {
        const char *e = strchr(p, '|');
        size_t m = e ? (size_t)(e - p) : strlen(p);
        if (m == n && !strncasecmp(p, s, n))
            return true;
        p += m + (e ? 1 : 0);
    }
    return false;
}

/* The fields hymt accepts, with the values it can honour ("" any), and why not otherwise;
 * every other field is refused by name. */
static bool check_fields(struct hy_http_req *req, json_t *body)
{
    static const struct {
        const char *key, *ok, *why;
    } fields[] = {
        {"text", "", ""},
        {"target_lang", "", ""},
        {"source_lang", "", ""},
        {"tag_handling", "html|xml", "only html and xml are supported"},
        {"formality", "default|prefer_less|prefer_more",
         "no language supports formality in hymt (prefer_less and prefer_more fall back)"},
        {"split_sentences", "1", "hymt always splits into sentences itself"},
        {"preserve_formatting", "0|1", "must be 0 or 1"},
        {"show_billed_characters", "0|1", "must be 0 or 1"},
        {"glossary_id", "", ""},
        {"context", "", ""},
        {"model_type", "-", "hymt runs one model"},
        {"outline_detection", "-", "not supported (no XML outline detection)"},
        {"non_splitting_tags", "-", "not supported"},
        {"splitting_tags", "-", "not supported"},
        {"ignore_tags", "-", "not supported"},
    };
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        size_t i = 0;
        while (i < sizeof fields / sizeof fields[0] && strcmp(fields[i].key, key))
            i++;
        if (i == sizeof fields / sizeof fields[0])
            return !hy_http_error(req, 400, "unsupported_parameter",
                                  "Parameter '%s' is not supported by hymt", key);
        bool empty = json_is_null(v) || (json_is_string(v) && !json_string_length(v));
        if (fields[i].ok[0] && !empty && !one_of(v, fields[i].ok))
            return !hy_http_error(req, 400, "unsupported_parameter", "Value for '%s' not "
                                  "supported: %s", key, fields[i].why);
    }
    return true;
}

/* text as an array of non-empty strings (a string: one); NULL after a 400 / 413. */
static json_t *texts(struct hy_http_req *req, json_t *body)
{
    json_t *t = json_object_get(body, "text");
    if (!t || json_is_null(t))
        return hy_http_error(req, 400, "missing_parameter", "Parameter 'text' not specified."),
               NULL;
    json_t *list = json_is_array(t) ? json_incref(t) : json_pack("[O]", t);
    size_t n = json_array_size(list), chars = 0;
    bool ok = n >= 1 && n <= DL_MAX_TEXTS;
    for (size_t i = 0; ok && i < n; i++) {
        json_t *s = json_array_get(list, i);
        ok = json_is_string(s);
        for (size_t k = 0; ok && k < json_string_length(s); k++)
            chars += ((unsigned char)json_string_value(s)[k] & 0xC0) != 0x80;
    }
    if (!ok)
        hy_http_error(req, 400, "invalid_parameter",
                      "Parameter 'text': 1 to %d strings are required", DL_MAX_TEXTS);
    else if (chars > req->srv->cfg.max_chars)
        hy_http_error(req, 413, "text_too_long", "Request size exceeds the limit: %zu "
                      "characters, the limit is %zu", chars, req->srv->cfg.max_chars);
    if (!ok || chars > req->srv->cfg.max_chars) {
        json_decref(list);
        return NULL;
    }
    return list;
}

/* glossary_id (the server's store, glossary_store.h: it must be for the request's pair and
 * names the source when none is given) and context into job; answers 4xx and returns
 * false (job then holds no glossary). */
static bool glossary_and_context(struct hy_http_req *req, json_t *body, struct dl *d,
                                 struct hy_tr_job *job)
{
    bool bad_g = false, bad_c = false;
    const char *gid = str_field(body, "glossary_id", &bad_g);
    const char *ctx = str_field(body, "context", &bad_c);
    struct hy_gstore *gs = req->srv->cfg.glossaries;
    struct hy_err err = {{0}};
    if (bad_g || bad_c)
        return !hy_http_error(req, 400, "invalid_parameter", "Value for '%s' not supported.",
                              bad_g ? "glossary_id" : "context");
    if (gid && gid[0] && (!gs || hy_gstore_acquire(gs, gid, &job->glossary, &err)))
        return !hy_http_error(req, 400, "glossary_not_found",
                              "Value for 'glossary_id' not supported: no such glossary.");
    if (job->glossary) {
        const struct hy_gstore_info *g = hy_gstore_info(job->glossary);
        const struct hy_lang *gsrc = hy_lang_find(g->src);
        if (hy_lang_find(g->tgt) != job->tgt || (d->src && d->src != gsrc)) {
            hy_gstore_release(job->glossary);
            job->glossary = NULL;
            return !hy_http_error(req, 400, "glossary_language_mismatch",
                                  "The glossary is for %s -> %s, not the requested pair.",
                                  g->src, g->tgt);
        }
        job->src = d->src = gsrc;
    }
    if (ctx && ctx[0]) {
        if (!(d->context = strdup(ctx))) {
            hy_gstore_release(job->glossary);
            job->glossary = NULL;
            return !hy_http_error(req, 500, "out_of_memory", "out of memory");
        }
        job->context = d->context;
        job->context_len = strlen(ctx);
    }
    return true;
}

/* Languages and tag handling into job / d / fmt; answers 400 and returns false. */
static bool parse(struct hy_http_req *req, json_t *body, struct dl *d, struct hy_tr_job *job,
                  enum hy_format *fmt)
{
    bool bad_t = false, bad_s = false, bad_h = false;
    const char *tl = str_field(body, "target_lang", &bad_t);
    const char *sl = str_field(body, "source_lang", &bad_s);
    const char *th = str_field(body, "tag_handling", &bad_h);
    if (!tl || !tl[0])
        return !hy_http_error(req, 400, "missing_parameter", "Parameter 'target_lang' not "
                              "specified.");
    if (bad_t || !(job->tgt = deepl_lang(tl, true)))
        return !hy_http_error(req, 400, "unknown_language", "Value for 'target_lang' not "
                              "supported.");
    if (bad_s || (sl && sl[0] && !(d->src = deepl_lang(sl, false))))
        return !hy_http_error(req, 400, "unknown_language", "Value for 'source_lang' not "
                              "supported.");
    job->src = d->src;
    if (!glossary_and_context(req, body, d, job))
        return false;
    *fmt = th && th[0] ? HY_FORMAT_HTML : HY_FORMAT_TEXT; /* xml: text nodes as in HTML */
    json_t *billed = json_object_get(body, "show_billed_characters");
    d->billed = json_is_true(billed) || (json_is_string(billed) && !strcmp(json_string_value(billed), "1"));
    return !bad_h;
}

bool hy_api_deepl_translate(struct hy_http_req *req)
{
    json_t *body = hy_http_body_params(req);
    if (!body)
        return true;
    struct dl *d = calloc(1, sizeof *d);
    struct hy_tr_job job = {0};
    enum hy_format fmt = HY_FORMAT_TEXT;
    json_t *list = NULL;
    if (!d)
        hy_http_error(req, 500, "out_of_memory", "out of memory");
    else if (check_fields(req, body) && parse(req, body, d, &job, &fmt))
        list = texts(req, body);
    json_decref(body);
    if (!list) {
        hy_gstore_release(job.glossary);
        if (d)
            free(d->context);
        free(d);
        return true;
    }
    uint64_t seed = atomic_fetch_add(&req->srv->next_id, 1) * 0x9E3779B97F4A7C15ull;
    struct hy_err err = {{0}};
    struct hy_sampler_params sp = req->srv->prompt.sampling; /* the model's defaults */
    sp.seed = seed;
    hy_status st = hy_compat_plan(&d->c, list, fmt, 1, &sp, &err);
    json_decref(list);
    if (st) {
        hy_gstore_release(job.glossary);
        dl_free(d);
        return hy_http_error(req, st == HY_E_NOMEM ? 500 : 400, "invalid_parameter", "%s",
                             err.msg);
    }
    job.sampling = sp;
    job.answer = answer;
    job.ctx = d;
    job.ctx_free = dl_free;
    hy_compat_job(&d->c, &job);
    return hy_tr_start(req, &job);
}

/* One /v2/languages entry. */
static json_t *entry(const char *code, const char *name, bool target)
{
    return target ? json_pack("{s:s,s:s,s:b}", "language", code, "name", name,
                              "supports_formality", false)
                  : json_pack("{s:s,s:s}", "language", code, "name", name);
}

bool hy_api_deepl_languages(struct hy_http_req *req)
{
    struct hy_err err = {{0}};
    json_t *q = req->query ? hy_http_form_parse(req->query, strlen(req->query), &err)
                           : json_object();
    if (!q)
        return hy_http_error(req, 400, "invalid_parameter", "%s", err.msg);
    json_t *type = json_object_get(q, "type");
    const char *ts = json_is_string(type) ? json_string_value(type) : "source";
    bool target = !strcasecmp(ts, "target");
    if (type && strcasecmp(ts, "source") && !target) {
        json_decref(q);
        return hy_http_error(req, 400, "invalid_parameter",
                             "Value for 'type' not supported: source or target");
    }
    json_decref(q);
    json_t *list = json_array();
    for (size_t i = 0; i < hy_lang_count(); i++) {
        const struct hy_lang *l = hy_lang_at(i);
        if (!hy_compat_model_has(req->srv, l))
            continue;
        char code[DL_CODE_MAX];
        deepl_code(l, code);
        bool split = target && (!strcmp(l->code, "en") || !strcmp(l->code, "pt") ||
                                !strcmp(l->code, "zh"));
        for (size_t v = 0; split && v < sizeof VARIANTS / sizeof VARIANTS[0]; v++)
            if (!strcmp(VARIANTS[v].lang, l->code))
                json_array_append_new(list, entry(VARIANTS[v].code, VARIANTS[v].name, true));
        if (!split || !strcmp(l->code, "zh")) /* ZH stays a target too, as DeepL lists it */
            json_array_append_new(list, entry(code, l->name_en, target));
    }
    return hy_http_json(req, 200, list);
}
