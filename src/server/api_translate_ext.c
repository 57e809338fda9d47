/* api_translate_ext.c: glossary, glossary_id, context, format and tm on /api/translate,
 * the glossary also on /v1/documents (contract in api_ext.h). */
#include "server/api_ext.h"

#include "core/json.h"
#include "translate/prompt_ext.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

json_t *hy_api_glossary_info(const struct hy_gstore_info *g)
{
    char when[32];
    time_t t = (time_t)g->created;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    return json_pack("{s:s,s:s,s:s,s:s,s:I,s:s,s:b}", "glossary_id", g->id, "name", g->name,
                     "source_lang", g->src, "target_lang", g->tgt, "entry_count",
                     (json_int_t)g->entries, "creation_time", when, "ready", 1);
}

void hy_api_ext_free(struct hy_api_ext *x)
{
    hy_glossary_destroy(x->own);
    hy_gstore_release(x->ref);
    free(x->context);
    memset(x, 0, sizeof *x);
}

/* `glossary`: [{"source": "...", "target": "..."}, ...] into x->own (an empty list is
 * none). */
static bool inline_glossary(struct hy_http_req *req, json_t *list, struct hy_api_ext *x)
{
    size_t n = json_array_size(list);
    if (!json_is_array(list) || n > HY_API_GLOSSARY_MAX_TERMS)
        return hy_http_error(req, 400, "invalid_parameter",
                             "glossary: a list of at most %d {\"source\", \"target\"} objects "
                             "is required", HY_API_GLOSSARY_MAX_TERMS), false;
    if (!n)
        return true;
    struct hy_glossary_term *t = calloc(n, sizeof *t);
    if (!t)
        return hy_http_error(req, 500, "out_of_memory", "out of memory"), false;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(list, i), *s = json_object_get(e, "source"),
               *g = json_object_get(e, "target");
        if (!json_is_string(s) || !json_is_string(g)) {
            free(t);
            return hy_http_error(req, 400, "invalid_parameter",
                                 "glossary[%zu]: an object with the strings source and target "
                                 "is required", i), false;
        }
        t[i] = (struct hy_glossary_term){json_string_value(s), json_string_value(g),
                                         json_string_length(s), json_string_length(g)};
    }
    struct hy_err err = {{0}};
    hy_status st = hy_glossary_create(&x->own, &err);
    if (!st)
        st = hy_glossary_add_many(x->own, t, n, &err);
    free(t);
    if (st)
        return hy_http_error(req, st == HY_E_NOMEM ? 500 : 400, "invalid_glossary", "%s",
                             err.msg), false;
    return true;
}

/* `glossary_id`: a stored glossary for the request's languages. */
static bool stored_glossary(struct hy_http_req *req, json_t *id, struct hy_api_ext *x,
                            struct hy_doc_opts *o)
{
    struct hy_gstore *gs = req->srv->cfg.glossaries;
    struct hy_err err = {{0}};
    if (!json_is_string(id))
        return hy_http_error(req, 400, "invalid_parameter", "glossary_id: a string is required"),
               false;
    if (!gs || hy_gstore_acquire(gs, json_string_value(id), &x->ref, &err))
        return hy_http_error(req, 404, "glossary_not_found", "%s",
                             gs ? err.msg : "this server keeps no glossaries"), false;
    const struct hy_gstore_info *g = hy_gstore_info(x->ref);
    const struct hy_lang *src = hy_lang_find(g->src), *tgt = hy_lang_find(g->tgt);
    if (tgt != o->tgt || (o->src && o->src != src))
        return hy_http_error(req, 400, "glossary_language_mismatch",
                             "glossary %s is for %s -> %s, the request is %s -> %s", g->id,
                             g->src, g->tgt, o->src ? o->src->code : "auto", o->tgt->code),
               false;
    o->src = src; /* a glossary names its source language: no detection needed */
    return true;
}

static bool context_fields(struct hy_http_req *req, json_t *body, struct hy_api_ext *x,
                           struct hy_doc_opts *o)
{
    json_t *c = json_object_get(body, "context");
    struct hy_err err = {{0}};
    int64_t segs = 0;
    if (c && !json_is_null(c) && !json_is_string(c))
        return hy_http_error(req, 400, "invalid_parameter", "context: a string is required"),
               false;
    if (hy_json_get_int(body, "context_segments", false, 0, HY_API_CONTEXT_SEGMENTS_MAX, &segs,
                        &err))
        return hy_http_error(req, 400, "invalid_parameter", "%s", err.msg), false;
    o->context_segs = (int)segs;
    if (!json_is_string(c) || !json_string_length(c))
        return true;
    size_t n = json_string_length(c), chars = 0;
    for (size_t i = 0; i < n; i++)
        chars += ((unsigned char)json_string_value(c)[i] & 0xC0) != 0x80;
    if (chars > req->srv->cfg.max_chars)
        return hy_http_error(req, 413, "text_too_long",
                             "context is %zu characters; the limit is %zu", chars,
                             req->srv->cfg.max_chars), false;
    if (!(x->context = malloc(n + 1)))
        return hy_http_error(req, 500, "out_of_memory", "out of memory"), false;
    memcpy(x->context, json_string_value(c), n + 1);
    o->context = x->context;
    o->context_len = n;
    return true;
}

/* 400 unsupported_by_model: the model's prompts have no glossary or context form. */
static bool unsupported(struct hy_http_req *req)
{
    hy_http_error(req, 400, "unsupported_by_model",
                  "glossary and context need a HY-MT1.5 or Hy-MT2 model; this one takes %s "
                  "prompts, which have no such form",
                  hy_prompt_gen_title(req->srv->prompt.kind.gen));
    return false;
}

bool hy_api_glossary_parse(struct hy_http_req *req, json_t *body, struct hy_api_ext *x,
                           struct hy_doc_opts *o)
{
    json_t *list = json_object_get(body, "glossary"), *id = json_object_get(body, "glossary_id");
    bool has_list = list && !json_is_null(list), has_id = id && !json_is_null(id);
    if (has_list && has_id)
        return hy_http_error(req, 400, "invalid_parameter",
                             "give glossary or glossary_id, not both"), false;
    if ((has_list && !inline_glossary(req, list, x)) ||
        (has_id && !stored_glossary(req, id, x, o)))
        return false;
    o->glossary = x->own ? x->own : x->ref ? hy_gstore_glossary(x->ref) : NULL;
    if (o->glossary && !hy_prompt_ext_supported(req->srv->prompt.kind.gen))
        return unsupported(req);
    return true;
}

bool hy_api_ext_parse(struct hy_http_req *req, json_t *body, struct hy_api_ext *x,
                      struct hy_doc_opts *o)
{
    struct hy_server *s = req->srv;
    struct hy_err err = {{0}};
    char fmt[16] = "text";
    x->tm = true;
    if (!hy_api_glossary_parse(req, body, x, o) || !context_fields(req, body, x, o))
        return false;
    if ((o->context || o->context_segs) &&
        !hy_prompt_ext_supported(s->prompt.kind.gen))
        return unsupported(req);
    hy_status st = hy_json_get_str(body, "format", false, fmt, sizeof fmt, &err);
    if (!st)
        st = hy_format_from_name(fmt, &x->format, &err);
    if (!st)
        st = hy_json_get_bool(body, "tm", false, &x->tm, &err);
    if (st)
        return hy_http_error(req, 400, "invalid_parameter", "%s", err.msg), false;
    json_t *tm = json_object_get(body, "tm");
    if (o->ensemble && x->tm && tm && !json_is_null(tm)) /* asked for both */
        return hy_http_error(req, 400, "invalid_parameter",
                             "tm: an ensemble does not use the translation memory"), false;
    x->tm = x->tm && !o->ensemble; /* by default off for an ensemble (doc.h refuses both) */
    o->tm = x->tm ? s->cfg.tm : NULL;
    o->tm_model = s->cfg.tm_model;
    return true;
}
