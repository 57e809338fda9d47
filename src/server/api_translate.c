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
#include "server/tr_int.h"

#include "core/clock.h"
#include "core/json.h"
#include "core/utf8.h"

#include <stdlib.h>
#include <string.h>

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
    bool ok = hy_tr_parse(req, body, t);
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
