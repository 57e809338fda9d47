/* api_translate.c: POST /api/translate: a whole text through the document path
 * (translate/doc.h: segmented, every segment batched on the engine), answered as one JSON
 * object or streamed as server-sent events. Streaming is segment by segment: each event
 * carries the translation of the next segment(s) in document order (with the original
 * whitespace between them) as soon as it and everything before it is done. The handler
 * begins the document and returns; the request's pump runs on a worker each time the
 * engine has news for one of its segments (hy_doc_pump never waits). Admission is the
 * engine's: the first segment queued or 429, as for the single-prompt routes.
 * A batch (`texts`: up to TR_MAX_TEXTS strings, their characters together within
 * --max-chars) is one document per text, all begun at once so that their segments share
 * the engine's batches (a text the full queue does not take yet is begun on a later pump;
 * the sweep retries while none of the batch is in the engine); the answer is whole, the
 * translations in the order of the texts. The compatible routes (tr.h) run the same job
 * with their own answer.
 * With --chimera, "ensemble": K (2..6) translates each segment through the Chimera
 * ensemble (doc.h: K candidates sampled in one batch, then fused); "candidates": true adds
 * the K candidate translations of the text (each the document as that candidate wrote it:
 * its segments with the source's whitespace between them). A stream then carries
 * "candidates" events (a segment's candidates finishing: done of K, tokens so far; with
 * "candidates": true, each segment's texts once all are in) before the fused text's
 * deltas.
 * Hy-MT2's instruction prompts (prompt_ext.h) come from optional fields: `style` (a
 * string), `preferences` (an array of strings), `delimiters` (a boolean) and
 * `data_format` (a string, the structured-data prompt), one per request; a model of
 * another generation answers 400 unsupported_by_model. */
#include "server/api_ext.h"
#include "server/gen.h"
#include "server/tr.h"

#include "core/clock.h"
#include "core/json.h"
#include "core/utf8.h"
#include "translate/doc.h"
#include "translate/prompt_ext.h"

#include <stdlib.h>
#include <string.h>

#define TR_LANG_MAX 64
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

static json_t *lang_json(const struct hy_lang *l)
{
    return l ? json_string(l->code) : json_null();
}

/* The final object: the whole response, or the stream's last event (no translation). */
static json_t *result_json(const struct tr *t, bool with_text)
{
    double now = hy_clock_now();
    json_t *j = json_pack(
        "{s:o,s:o,s:s,s:I,s:{s:I,s:I},s:{s:o,s:o,s:o}}", "source_lang", lang_json(t->res.src),
        "target_lang", lang_json(t->o.tgt), "model", t->srv->cfg.model_name, "segments",
        (json_int_t)t->res.segments, "usage", "prompt_tokens", (json_int_t)t->res.tokens_in,
        "completion_tokens", (json_int_t)t->res.tokens_out, "timing_ms", "queue",
        hy_http_ms(t->t_start - t->t0), "first_token",
        t->t_first > 0 ? hy_http_ms(t->t_first - t->t0) : json_real(-1.0), "total",
        hy_http_ms(now - t->t0));
    if (with_text && !t->batch)
        json_object_set_new(j, "translation", json_stringn(t->items[0].whole.p ? t->items[0].whole.p
                                                                               : "",
                                                           t->items[0].whole.n));
    if (with_text && t->batch) {
        json_t *list = json_array(), *srcs = json_array();
        for (size_t i = 0; i < t->n_items; i++) {
            const struct tr_item *it = &t->items[i];
            json_array_append_new(list,
                                  json_stringn(it->whole.p ? it->whole.p : "", it->whole.n));
            json_array_append_new(srcs, lang_json(it->res.src));
        }
        json_object_set_new(j, "translations", list);
        json_object_set_new(j, "source_langs", srcs);
    }
    if (t->res.failed)
        json_object_set_new(j, "segments_failed", json_integer((json_int_t)t->res.failed));
    if (t->o.ensemble) {
        json_object_set_new(j, "ensemble", json_integer(t->o.ensemble));
        json_object_set_new(j, "segments_fused", json_integer((json_int_t)t->res.fused));
    }
    if (with_text && t->want_cands) {
        json_t *all = json_array();
        for (size_t i = 0; i < t->n_items; i++) {
            json_t *list = json_array();
            for (int c = 0; c < t->o.ensemble; c++)
                json_array_append_new(list, t->items[i].cands && t->items[i].cands[c].p
                                                ? json_stringn(t->items[i].cands[c].p,
                                                               t->items[i].cands[c].n)
                                                : json_string(""));
            json_array_append_new(all, list);
        }
        json_object_set_new(j, "candidates", t->batch ? all : json_incref(json_array_get(all, 0)));
        if (!t->batch)
            json_decref(all);
    }
    if (t->o.tm)
        json_object_set_new(j, "tm", json_pack("{s:I,s:I}", "hits", (json_int_t)t->res.tm_hits,
                                               "stored", (json_int_t)t->res.tm_stored));
    if (t->o.glossary)
        json_object_set_new(j, "segments_with_terms", json_integer((json_int_t)t->res.with_terms));
    if (t->o.context_len || t->o.context_segs)
        json_object_set_new(j, "segments_with_context",
                            json_integer((json_int_t)t->res.with_context));
    if (t->x.format != HY_FORMAT_TEXT)
        json_object_set_new(j, "format", json_string(hy_format_name(t->x.format)));
    if (t->res.tagged_runs) /* HTML runs whose inline tags went as <sN> markers */
        json_object_set_new(j, "inline_tags",
                            json_pack("{s:I,s:I,s:I}", "runs", (json_int_t)t->res.tagged_runs,
                                      "segments", (json_int_t)t->res.with_format, "moved",
                                      (json_int_t)t->res.tags_moved));
    if (t->srv->cfg.demo)
        json_object_set_new(j, "demo", json_true());
    return j;
}

static void event(struct tr *t, json_t *j)
{
    char *s = j ? json_dumps(j, HY_HTTP_JSON_FLAGS) : NULL;
    json_decref(j);
    if (s)
        hy_http_buf_printf(&t->events, "data: %s\n\n", s);
    free(s);
}

static hy_status write_whole(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    struct tr_item *it = ctx;
    if (!it->t->t_first)
        it->t->t_first = hy_clock_now();
    if (!hy_http_buf_add(it->fd ? &it->raw : &it->whole, s, n))
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    return HY_OK;
}

static hy_status write_stream(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    struct tr *t = ((struct tr_item *)ctx)->t;
    if (((struct tr_item *)ctx)->fd) /* a formatted text is sent whole when done */
        return write_whole(ctx, s, n, err);
    if (!n)
        return HY_OK;
    if (!t->t_first)
        t->t_first = hy_clock_now();
    event(t, json_pack("{s:s,s:s%,s:I,s:I}", "type", "delta", "delta", s, n, "segments_done",
                       (json_int_t)t->done, "segments_total", (json_int_t)t->total));
    return HY_OK;
}

static void progress_stream(void *ctx, const struct hy_doc_progress *p)
{
    struct tr *t = ctx;
    t->done = p->done;
    t->total = p->total;
    event(t, json_pack("{s:s,s:I,s:I}", "type", "progress", "segments_done", (json_int_t)p->done,
                       "segments_total", (json_int_t)p->total));
}

/* An ensemble segment's candidates (document order): appended to each candidate's
 * document. */
static hy_status on_cands(void *ctx, const struct hy_doc_cands *c, struct hy_err *err)
{
    struct tr_item *it = ctx;
    struct tr *t = it->t;
    (void)err;
    for (int k = 0; k < c->k; k++) {
        struct hy_http_buf *b = &it->cands[k];
        bool ok = hy_http_buf_add(b, c->sep, c->sep_len) &&
                  (c->len[k] ? hy_http_buf_add(b, c->text[k], c->len[k])
                             : hy_http_buf_add(b, c->source, c->source_len));
        t->cands_failed |= !ok;
    }
    return HY_OK;
}

/* An ensemble segment's candidates progressed (streaming only); once all are in, with
 * "candidates": true, their texts follow in a "candidates" event. */
static void on_cand_progress(void *ctx, const struct hy_doc_cand_progress *p)
{
    struct tr *t = ((struct tr_item *)ctx)->t;
    event(t, json_pack("{s:s,s:I,s:i,s:i,s:I}", "type", "candidates_progress", "segment",
                       (json_int_t)p->segment, "done", p->done, "of", p->k, "tokens",
                       (json_int_t)p->tokens));
    if (!p->cands || !t->want_cands)
        return;
    json_t *list = json_array();
    for (int k = 0; k < p->cands->k; k++)
        json_array_append_new(list, json_stringn(p->cands->text[k], p->cands->len[k]));
    event(t, json_pack("{s:s,s:I,s:o}", "type", "candidates", "segment",
                       (json_int_t)p->segment, "candidates", list));
}

/* Status and message for a translation that did not complete. */
static int failure(const struct tr *t, const char **code)
{
    if (t->st == HY_DOC_CANCELLED && t->deadline > 0 && hy_clock_now() > t->deadline)
        return *code = "timeout", 504;
    if (t->st == HY_DOC_CANCELLED)
        return *code = "cancelled", 503;
    if (t->st == HY_E_NOMEM)
        return *code = "out_of_memory", 500;
    return *code = "translation_failed", t->st == HY_E_INVAL ? 400 : 500;
}

/* Ends every document (cancelling and releasing what is still in the engine) and adds
 * the items' results up into t->res. */
static void end_docs(struct tr *t)
{
    const struct hy_lang *src = t->o.src;
    memset(&t->res, 0, sizeof t->res);
    for (size_t i = 0; i < t->n_items; i++) {
        struct tr_item *it = &t->items[i];
        hy_doc_end(it->doc);
        it->doc = NULL;
        t->res.segments += it->res.segments;
        t->res.failed += it->res.failed;
        t->res.tokens_in += it->res.tokens_in;
        t->res.tokens_out += it->res.tokens_out;
        t->res.fused += it->res.fused;
        t->res.tm_hits += it->res.tm_hits;
        t->res.tm_stored += it->res.tm_stored;
        t->res.tm_errors += it->res.tm_errors;
        t->res.with_terms += it->res.with_terms;
        t->res.with_context += it->res.with_context;
        t->res.with_format += it->res.with_format;
        t->res.tagged_runs += it->res.tagged_runs;
        t->res.tags_moved += it->res.tags_moved;
        if (i == 0 || it->res.src != src) /* the batch's source: the one all share, or none */
            src = i == 0 ? it->res.src : NULL;
    }
    t->res.src = t->n_items ? src : t->o.src;
}

/* The memory's counters, once, before the answer goes out (a client reading /metrics
 * right after its answer sees them). */
static void record_tm(struct tr *t)
{
    if (t->o.tm && !t->tm_recorded)
        hy_metrics_tm(&t->srv->metrics, (int64_t)t->res.tm_hits, (int64_t)t->res.tm_stored,
                      (int64_t)t->res.tm_errors);
    t->tm_recorded = true;
}

static void tr_free(struct tr *t)
{
    end_docs(t);
    if (t->req) {
        t->req->tokens_in = t->res.tokens_in;
        t->req->tokens_out = t->res.tokens_out;
    }
    record_tm(t);
    for (size_t i = 0; i < t->n_items; i++) {
        hy_http_buf_free(&t->items[i].whole);
        for (int c = 0; t->items[i].cands && c < HY_DOC_MAX_ENSEMBLE; c++)
            hy_http_buf_free(&t->items[i].cands[c]);
        free(t->items[i].cands);
        hy_http_buf_free(&t->items[i].raw);
        hy_format_doc_free(t->items[i].fd);
    }
    hy_api_ext_free(&t->x);
    hy_http_buf_free(&t->events);
    free(t->items);
    free(t->text);
    if (t->ctx_free)
        t->ctx_free(t->ctx);
    free(t->instr_buf);
    free(t);
}

/* A job's answer through its callback: the translations and sources, in order. */
static void answer_job(struct hy_http_req *req, struct tr *t)
{
    size_t n = t->n_items;
    const char **outs = calloc(n + 1, sizeof *outs);
    size_t *lens = calloc(n + 1, sizeof *lens);
    const struct hy_lang **srcs = calloc(n + 1, sizeof *srcs);
    if (!outs || !lens || !srcs) {
        hy_http_error(req, 500, "out_of_memory", "out of memory");
    } else {
        for (size_t i = 0; i < n; i++) {
            outs[i] = t->items[i].whole.p ? t->items[i].whole.p : "";
            lens[i] = t->items[i].whole.n;
            srcs[i] = t->items[i].res.src;
        }
        t->answer(req, t->ctx, outs, lens, srcs, n);
    }
    free(outs);
    free(lens);
    free(srcs);
}

/* The end of a translation (t->st says how): the last event or the whole answer. */
static void finish(struct hy_http_req *req, struct tr *t)
{
    end_docs(t);
    record_tm(t);
    if (!t->st && t->cands_failed)
        t->st = hy_err_set(&t->err, HY_E_NOMEM, "out of memory for the candidates");
    if (t->t_first > 0)
        hy_http_first_token(req);
    const char *code = NULL;
    int status = t->st ? failure(t, &code) : 200;
    const char *msg = status == 504 ? "the request passed its deadline"
                      : t->st == HY_DOC_CANCELLED ? "the request was cancelled (shutdown)"
                                                  : t->err.msg;
    if (atomic_load(&req->client_gone))
        return;
    if (!t->stream) {
        if (t->st)
            hy_http_error(req, status, code, "%s", msg);
        else if (t->answer)
            answer_job(req, t);
        else
            hy_http_json(req, 200, result_json(t, true));
        return;
    }
    if (t->st) {
        event(t, json_pack("{s:s,s:{s:s,s:s,s:s,s:i}}", "type", "error", "error", "message", msg,
                           "type", status == 504 ? "timeout_error" : "server_error", "code", code,
                           "status", status));
    } else {
        json_t *j = result_json(t, false);
        json_object_set_new(j, "type", json_string("done"));
        json_object_set_new(j, "segments_done", json_integer((json_int_t)t->res.segments));
        json_object_set_new(j, "segments_total", json_integer((json_int_t)t->res.segments));
        event(t, j);
    }
    hy_http_sse_send(req, t->events.p, t->events.n, true);
}

/* A formatted text's translation put back into its markup: the item's answer (streaming:
 * one delta with the whole document). */
static hy_status finish_item(struct tr *t, struct tr_item *it)
{
    char *out = NULL;
    size_t n = 0;
    hy_status st = hy_format_doc_finish(it->fd, it->raw.p ? it->raw.p : "", it->raw.n, &out, &n,
                                        &t->err);
    hy_format_doc_tag_counts(it->fd, &it->res.tagged_runs, &it->res.tags_moved);
    hy_format_doc_free(it->fd);
    it->fd = NULL;
    if (!st)
        st = it->o.write(it->o.write_ctx, out, n, &t->err);
    free(out);
    return st;
}

/* Begins the next text's document; false when the engine's queue is full (try later). */
static bool begin_next(struct tr *t)
{
    struct tr_item *it = &t->items[t->n_begun];
    const char *text = t->text + it->off;
    size_t len = it->len;
    hy_status st = HY_OK;
    if (t->x.format != HY_FORMAT_TEXT && !it->fd) { /* the runs, as one plain document */
        /* HTML's inline tags as <sN> markers where the model has the formatted-text prompt */
        bool tags = t->x.format == HY_FORMAT_HTML &&
                    hy_prompt_ext_has_formatted(t->srv->prompt.kind.gen);
        st = hy_format_doc_prepare_tags(t->x.format, text, len, tags, &it->fd, &it->plain,
                                        &it->plain_len, &t->err);
        it->o.keep_lines = true;
        it->o.formatted = tags;
        if (!st && !hy_format_doc_n_runs(it->fd)) { /* nothing to translate */
            it->begun = it->done = true;
            t->n_begun++;
            t->st = finish_item(t, it);
            return true;
        }
    }
    if (it->fd) {
        text = it->plain;
        len = it->plain_len;
    }
    if (!st)
        st = hy_doc_begin(&it->doc, t->srv->engine, t->srv->tok, text, len, &it->o, &it->res,
                          &t->err);
    if (st == HY_E_NOSPACE)
        return false;
    t->st = st;
    it->begun = true;
    t->n_begun++;
    return true;
}

/* Pumps every begun document and begins the next texts; *done when all are written. */
static void pump_docs(struct tr *t, bool *done, bool *starved)
{
    bool all = true, in_engine = false;
    for (size_t i = 0; i < t->n_begun && !t->st; i++) {
        struct tr_item *it = &t->items[i];
        bool st_starved = false;
        if (!it->done) {
            t->st = hy_doc_pump(it->doc, &it->done, &st_starved, &t->err);
            if (!t->st && it->done && it->fd)
                t->st = finish_item(t, it);
        }
        all = all && it->done;
        in_engine = in_engine || (!it->done && !st_starved);
    }
    size_t before = t->n_begun;
    while (!t->st && t->n_begun < t->n_items && begin_next(t))
        all = false;
    *done = all && t->n_begun == t->n_items;
    /* starved: others' requests fill the engine's queue and none of ours runs, so no
     * notification will come: the loop's sweep runs the pump again each tick */
    *starved = !*done && !in_engine && t->n_begun == before;
}

static bool pump(struct hy_http_req *req)
{
    struct tr *t = req->task;
    bool done = false, starved = false;
    if (hy_http_should_stop(req))
        t->st = hy_err_set(&t->err, HY_DOC_CANCELLED, "translation cancelled");
    else
        pump_docs(t, &done, &starved);
    atomic_store(&req->retry, starved && !t->st && !done);
    if (!t->st && !done) {
        if (t->stream && t->events.n) {
            hy_http_sse_send(req, t->events.p, t->events.n, false);
            t->events.n = 0;
        }
        return false;
    }
    finish(req, t);
    req->task = NULL;
    tr_free(t);
    return true;
}

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
        char list[512];
        hy_lang_list(list, sizeof list);
        hy_http_error(req, 400, "unknown_language", "%s: unknown language '%s'; valid: %s%s",
                             used, name, list, source ? ", auto" : "");
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

/* Reads the body into t; answers 4xx and returns false on a bad request. */
static bool parse(struct hy_http_req *req, json_t *body, struct tr *t, bool *stream)
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
    hy_status st = hy_json_get_bool(body, "stream", false, stream, &err);
    if (!st && *stream && t->batch)
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

/* Begins the first text and hands the request to its pump; answers 429 when the engine's
 * queue takes nothing. Takes t. */
static bool launch(struct hy_http_req *req, struct tr *t,
                   const struct hy_sampler_params *samplings)
{
    t->o.write = t->stream ? write_stream : write_whole;
    if (t->stream) {
        t->o.progress = progress_stream;
        t->o.progress_ctx = t;
    }
    t->o.notify = hy_http_notify;
    t->o.notify_ctx = req;
    for (size_t i = 0; i < t->n_items; i++) {
        t->items[i].o = t->o;
        t->items[i].o.write_ctx = &t->items[i];
        if (samplings)
            t->items[i].o.sampling = samplings[i];
        if (t->want_cands &&
            !(t->items[i].cands = calloc(HY_DOC_MAX_ENSEMBLE, sizeof *t->items[i].cands)))
            t->cands_failed = true;
        else if (t->want_cands) {
            t->items[i].o.candidates = on_cands;
            t->items[i].o.candidates_ctx = &t->items[i];
        }
        if (t->o.ensemble && t->stream) {
            t->items[i].o.cand_progress = on_cand_progress;
            t->items[i].o.cand_progress_ctx = &t->items[i];
        }
    }
    req->task = t;
    req->pump = pump; /* before the first submit: the engine may notify at once */
    t->t_start = hy_clock_now();
    /* admission: the first text's first segment is queued, or 429 */
    hy_status st = begin_next(t) ? t->st : HY_E_NOSPACE;
    if (st) {
        req->task = NULL;
        t->req = NULL;
        struct hy_err e = t->err;
        tr_free(t);
        if (st == HY_E_NOSPACE)
            return hy_http_error(req, 429, "queue_full",
                                 "the server is busy (the engine's queue is full); retry later");
        return hy_http_error(req, st == HY_E_INVAL ? 400 : 500, "translation_failed", "%s",
                             e.msg);
    }
    hy_http_hold(req);
    if (t->stream)
        hy_http_sse_begin(req);
    return pump(req);
}

static struct tr *tr_new(struct hy_http_req *req)
{
    struct tr *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->srv = req->srv;
    t->req = req;
    t->t0 = req->t0;
    t->deadline = req->deadline;
    t->o.prompt = &req->srv->prompt.kind; /* every route: the model's prompts */
    return t;
}

bool hy_api_translate(struct hy_http_req *req)
{
    json_t *body = hy_http_body_json(req);
    if (!body)
        return true;
    json_t *fmt = json_object_get(body, "format");
    if (json_is_string(fmt) && !strcmp(json_string_value(fmt), "docx")) {
        bool r = hy_api_translate_docx(req, body); /* a Word document, in base64 */
        json_decref(body);
        return r;
    }
    struct tr *t = tr_new(req);
    if (!t) {
        json_decref(body);
        return hy_http_error(req, 500, "out_of_memory", "out of memory");
    }
    bool ok = parse(req, body, t, &t->stream);
    json_decref(body);
    if (!ok) {
        t->req = NULL;
        tr_free(t);
        return true;
    }
    return launch(req, t, NULL);
}

bool hy_tr_start(struct hy_http_req *req, const struct hy_tr_job *job)
{
    HY_ASSERT(job->n <= HY_TR_MAX_ITEMS);
    if ((job->glossary || job->context_len) &&
        !hy_prompt_ext_supported(req->srv->prompt.kind.gen)) {
        hy_gstore_release(job->glossary);
        if (job->ctx_free)
            job->ctx_free(job->ctx);
        return hy_http_error(req, 400, "unsupported_by_model",
                             "glossaries and context need a HY-MT1.5 or Hy-MT2 model; this one "
                             "takes %s prompts",
                             hy_prompt_gen_title(req->srv->prompt.kind.gen));
    }
    if (job->n == 0) {
        hy_gstore_release(job->glossary);
        job->answer(req, job->ctx, NULL, NULL, NULL, 0);
        if (job->ctx_free)
            job->ctx_free(job->ctx);
        return true;
    }
    struct tr *t = tr_new(req);
    size_t bytes = 0;
    for (size_t i = 0; i < job->n; i++)
        bytes += job->lens[i] + 1;
    if (t) {
        t->answer = job->answer;
        t->ctx = job->ctx;
        t->ctx_free = job->ctx_free;
        t->text = malloc(bytes);
        t->items = calloc(job->n, sizeof *t->items);
        t->x.ref = job->glossary; /* released with t */
        t->x.context = job->context_len ? strndup(job->context, job->context_len) : NULL;
    }
    if (!t || !t->text || !t->items || (job->context_len && !t->x.context)) {
        if (t) {
            t->req = NULL;
            tr_free(t);
        } else {
            hy_gstore_release(job->glossary);
            if (job->ctx_free)
                job->ctx_free(job->ctx);
        }
        return hy_http_error(req, 500, "out_of_memory", "out of memory");
    }
    t->batch = true;
    t->o.src = job->src;
    t->o.tgt = job->tgt;
    t->o.sampling = job->sampling;
    t->o.max_new_tokens = job->max_new_tokens;
    t->o.glossary = job->glossary ? hy_gstore_glossary(job->glossary) : NULL;
    t->o.context = t->x.context;
    t->o.context_len = job->context_len;
    t->n_items = job->n;
    for (size_t i = 0, off = 0; i < job->n; i++) {
        struct tr_item *it = &t->items[i];
        it->t = t;
        it->off = off;
        it->len = job->lens[i];
        memcpy(t->text + off, job->texts[i], it->len);
        t->text[off + it->len] = '\0';
        off += it->len + 1;
    }
    return launch(req, t, job->samplings);
}
