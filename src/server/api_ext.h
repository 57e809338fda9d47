/* api_ext.h: the professional options of the translation route (api_translate_ext.c):
 * `glossary` (inline terms), `glossary_id` (a stored glossary, glossary_store.h),
 * `context`, `context_segments`, `format` and `tm`, read from a request body into a
 * hy_doc_opts. The glossary and context need a model whose prompts have them (HY-MT1.5,
 * Hy-MT2: prompt_ext.h): on another they are a 400 `unsupported_by_model` before anything
 * is queued.
 * Owns what it builds (the inline glossary, the stored glossary's reference, the context
 * copy) until hy_api_ext_free. Worker threads only. */
#ifndef HY_SERVER_API_EXT_H
#define HY_SERVER_API_EXT_H

#include "server/http.h"
#include "translate/doc.h"
#include "translate/format.h"
#include "translate/glossary_store.h"

#define HY_API_GLOSSARY_MAX_TERMS 1000 /* entries of an inline glossary */
#define HY_API_CONTEXT_SEGMENTS_MAX 16 /* context_segments: the document's previous ones */

struct hy_api_ext {
    struct hy_glossary *own;   /* the request's `glossary`, NULL if none */
    struct hy_gstore_ref *ref; /* the stored `glossary_id`, NULL if none */
    char *context;             /* copy of `context`, NULL if none */
    enum hy_format format;     /* `format`, text by default */
    bool tm;                   /* the server's memory is used (`tm`; default true, false
                                * with an ensemble, which does not use it) */
};

/* Reads the fields into x and sets o's glossary, context, src (a stored glossary's source
 * language when the request's is auto) and tm (o->ensemble read before). Answers 4xx and returns false on a bad
 * request (x then still needs hy_api_ext_free). */
bool hy_api_ext_parse(struct hy_http_req *req, json_t *body, struct hy_api_ext *x,
                      struct hy_doc_opts *o);
/* Only `glossary` / `glossary_id` (one of them) into x and o->glossary (and o->src from a
 * stored glossary), with the model check: what /v1/documents takes. Answers 4xx and
 * returns false on a bad request (x then still needs hy_api_ext_free). */
bool hy_api_glossary_parse(struct hy_http_req *req, json_t *body, struct hy_api_ext *x,
                           struct hy_doc_opts *o);
void hy_api_ext_free(struct hy_api_ext *x);

/* The JSON of a glossary's info (DeepL's field names: glossary_id, name, source_lang,
 * target_lang, entry_count, creation_time, ready). */
json_t *hy_api_glossary_info(const struct hy_gstore_info *g);

#endif
