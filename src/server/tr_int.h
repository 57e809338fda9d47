/* tr_int.h: the translation job's private parts (api_translate.c runs it and answers,
 * api_translate_req.c reads /api/translate's body into it). Nothing else includes it. A
 * job belongs to its request's worker. */
#ifndef HY_SERVER_TR_INT_H
#define HY_SERVER_TR_INT_H

#include "server/api_ext.h"
#include "server/tr.h"

#include "translate/doc.h"
#include "translate/prompt_ext.h"

#define TR_MAX_TEXTS 128 /* texts in one batch request */

struct tr;

/* One text of the request: its document on the engine and its translation. */
struct tr_item {
    struct tr *t;
    size_t off, len;         /* the text: t->text + off */
    struct hy_doc_opts o;    /* t->o with this item as the sink's context */
    struct hy_doc_result res;
    struct hy_doc *doc;
    bool begun, done;
    struct hy_http_buf whole; /* not streaming: the translation */
    struct hy_http_buf *cands; /* "candidates": [HY_DOC_MAX_ENSEMBLE] each one's document */
    struct hy_format_doc *fd; /* a formatted text: its runs as the document translated */
    const char *plain;        /* that document (owned by fd) */
    size_t plain_len;
    struct hy_http_buf raw;   /* ... and its translation, until finish_item */
};

struct tr {
    struct hy_http_req *req;
    struct hy_server *srv;
    char *text; /* owned copy of the request's text(s), one after the other */
    struct hy_doc_opts o;
    struct hy_api_ext x;      /* glossary, context, format, tm (api_ext.h) */
    bool tm_recorded;         /* the memory's counters went to the metrics */
    struct hy_doc_result res; /* the items' results added up (finish) */
    struct tr_item *items;
    size_t n_items, n_begun;
    bool batch;               /* texts[]: answered with translations[] */
    bool want_cands;          /* "candidates": true */
    bool cands_failed;        /* out of memory for them */
    bool stream;
    hy_status st;
    struct hy_err err;
    double t0, t_start, t_first, deadline;
    struct hy_http_buf events; /* streaming: not yet sent */
    size_t done, total;
    hy_tr_answer_fn answer;    /* a compatible route's job (tr.h): it answers */
    void *ctx;
    void (*ctx_free)(void *ctx);
    struct hy_prompt_instr instr; /* Hy-MT2 instructions: strings in instr_buf */
    const char *prefs[HY_PROMPT_MAX_PREFS];
    char *instr_buf;
};

/* Reads the body of /api/translate into t (a fresh job: tr_new); answers 4xx (500 when out
 * of memory) and returns false on a bad request, t then partly filled, freed by the caller. */
bool hy_tr_parse(struct hy_http_req *req, json_t *body, struct tr *t);

#endif
