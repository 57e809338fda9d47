/* api_translate.c: POST /api/translate: a whole text through hy_doc_translate (segmented,
 * every segment batched on the engine), answered as one JSON object or streamed as
 * server-sent events. Streaming is segment by segment: each event carries the translation
 * of the next segment(s) in document order (with the original whitespace between them) as
 * soon as it and everything before it is done. The stream runs the translation on a
 * thread of its own (hy_doc_translate blocks) that hands events to the connection thread
 * under a mutex; the connection thread waits on a condition variable. */
#include "server/gen.h"

#include "core/clock.h"
#include "core/json.h"
#include "core/utf8.h"
#include "translate/doc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TR_LANG_MAX 64

struct tr {
    struct hy_http_stream stream; /* first: the stream callbacks get this struct */
    struct hy_server *srv;
    char *text; /* owned copy of the request's text */
    size_t len;
    struct hy_doc_opts o;
    struct hy_doc_result res;
    hy_status st;
    struct hy_err err;
    double t0, t_start, t_first, deadline;
    /* streaming: the worker thread appends events to `pending` */
    pthread_t thread;
    bool thread_started, finished;
    atomic_bool cancel;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct hy_http_buf pending;
    struct hy_http_buf whole; /* not streaming: the translation */
    size_t done, total;
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
        "{s:o,s:o,s:s,s:I,s:{s:I,s:I},s:{s:f,s:f,s:f}}", "source_lang", lang_json(t->res.src),
        "target_lang", lang_json(t->o.tgt), "model", t->srv->cfg.model_name, "segments",
        (json_int_t)t->res.segments, "usage", "prompt_tokens", (json_int_t)t->res.tokens_in,
        "completion_tokens", (json_int_t)t->res.tokens_out, "timing_ms", "queue",
        (t->t_start - t->t0) * 1e3, "first_token",
        t->t_first > 0 ? (t->t_first - t->t0) * 1e3 : -1.0, "total", (now - t->t0) * 1e3);
    if (with_text)
        json_object_set_new(j, "translation",
                            json_stringn(t->whole.p ? t->whole.p : "", t->whole.n));
    if (t->res.failed)
        json_object_set_new(j, "segments_failed", json_integer((json_int_t)t->res.failed));
    if (t->srv->cfg.demo)
        json_object_set_new(j, "demo", json_true());
    return j;
}

static void event(struct tr *t, json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (s)
        hy_http_buf_printf(&t->pending, "data: %s\n\n", s);
    free(s);
}

static hy_status write_whole(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    struct tr *t = ctx;
    if (!t->t_first)
        t->t_first = hy_clock_now();
    if (!hy_http_buf_add(&t->whole, s, n))
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    return HY_OK;
}

static hy_status write_stream(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    struct tr *t = ctx;
    if (!n)
        return HY_OK;
    pthread_mutex_lock(&t->mu);
    if (!t->t_first)
        t->t_first = hy_clock_now();
    event(t, json_pack("{s:s,s:s%,s:I,s:I}", "type", "delta", "delta", s, n, "segments_done",
                       (json_int_t)t->done, "segments_total", (json_int_t)t->total));
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return HY_OK;
}

static void progress_stream(void *ctx, const struct hy_doc_progress *p)
{
    struct tr *t = ctx;
    pthread_mutex_lock(&t->mu);
    t->done = p->done;
    t->total = p->total;
    event(t, json_pack("{s:s,s:I,s:I}", "type", "progress", "segments_done", (json_int_t)p->done,
                       "segments_total", (json_int_t)p->total));
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static bool cancelled_whole(void *ctx)
{
    return hy_http_should_stop(((struct tr *)ctx)->stream.req);
}

/* The worker never touches the connection: the connection thread sets `cancel`. */
static bool cancelled_stream(void *ctx)
{
    struct tr *t = ctx;
    return atomic_load(&t->cancel) || atomic_load(&t->srv->aborting) ||
           (t->deadline > 0 && hy_clock_now() > t->deadline);
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

static void *worker(void *arg)
{
    struct tr *t = arg;
    hy_status st =
        hy_doc_translate(t->srv->engine, t->srv->tok, t->text, t->len, &t->o, &t->res, &t->err);
    pthread_mutex_lock(&t->mu);
    t->st = st;
    const char *code = NULL;
    if (st) {
        int status = failure(t, &code);
        event(t, json_pack("{s:s,s:{s:s,s:s,s:s,s:i}}", "type", "error", "error", "message",
                           status == 504 ? "the request passed its deadline" : t->err.msg, "type",
                           status == 504 ? "timeout_error" : "server_error", "code", code, "status",
                           status));
    } else {
        json_t *j = result_json(t, false);
        json_object_set_new(j, "type", json_string("done"));
        json_object_set_new(j, "segments_done", json_integer((json_int_t)t->res.segments));
        json_object_set_new(j, "segments_total", json_integer((json_int_t)t->res.segments));
        event(t, j);
    }
    t->finished = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static bool produce(struct hy_http_stream *s)
{
    struct tr *t = (struct tr *)s;
    pthread_mutex_lock(&t->mu);
    while (!t->pending.n && !t->finished) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(HY_HTTP_WAIT_S * 1e9);
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (!t->pending.n && hy_http_client_gone(s->req))
            break;
    }
    bool more = !t->finished;
    if (t->t_first > 0)
        hy_http_first_token(s->req);
    hy_http_buf_add(&s->out, t->pending.p, t->pending.n);
    t->pending.n = 0;
    pthread_mutex_unlock(&t->mu);
    if (s->req->client_gone) {
        atomic_store(&t->cancel, true);
        return false;
    }
    return more;
}

static void tr_free(struct tr *t)
{
    if (t->thread_started) {
        atomic_store(&t->cancel, true); /* the worker stops within one poll round */
        pthread_join(t->thread, NULL);
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
    }
    if (t->stream.req) {
        t->stream.req->tokens_in = t->res.tokens_in;
        t->stream.req->tokens_out = t->res.tokens_out;
    }
    hy_http_buf_free(&t->pending);
    hy_http_buf_free(&t->whole);
    free(t->text);
    free(t);
}

static void destroy(struct hy_http_stream *s)
{
    tr_free((struct tr *)s);
}

/* A language field: a code or name; "auto" (source only) gives NULL. Answers 400 listing
 * the valid codes when unknown. */
static bool parse_lang(struct hy_http_req *req, json_t *body, const char *key, const char *alias,
                       bool source, const struct hy_lang **out, enum MHD_Result *ret)
{
    char name[TR_LANG_MAX] = "";
    struct hy_err err = {{0}};
    const char *used = json_object_get(body, key) ? key : alias;
    if (hy_json_get_str(body, used, !source, name, sizeof name, &err)) {
        *ret = hy_http_error(req, 400, source ? "invalid_parameter" : "missing_target_lang", "%s%s",
                             err.msg, source ? "" : " (the language to translate into)");
        return false;
    }
    *out = NULL;
    if (source && (!name[0] || !strcmp(name, "auto")))
        return true;
    if (!(*out = hy_lang_find(name))) {
        char list[512];
        hy_lang_list(list, sizeof list);
        *ret = hy_http_error(req, 400, "unknown_language", "%s: unknown language '%s'; valid: %s%s",
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

/* Reads the body into t; answers 4xx and returns false on a bad request. */
static bool parse(struct hy_http_req *req, json_t *body, struct tr *t, bool *stream,
                  enum MHD_Result *ret)
{
    struct hy_server *s = req->srv;
    struct hy_err err = {{0}};
    json_t *text = json_object_get(body, "text");
    int64_t max_new = 0;
    t->o.sampling = hy_sampler_params_default();
    uint64_t seed = atomic_fetch_add(&s->next_id, 1) * 0x9E3779B97F4A7C15ull;
    if (!json_is_string(text))
        return *ret = hy_http_error(req, 400, "missing_text", "text: a string is required"), false;
    t->len = json_string_length(text);
    if (blank(json_string_value(text), t->len))
        return *ret = hy_http_error(req, 400, "empty_text", "text is empty"), false;
    size_t chars = count_chars(json_string_value(text), t->len);
    if (chars > s->cfg.max_chars)
        return *ret = hy_http_error(req, 413, "text_too_long",
                                    "text is %zu characters; the "
                                    "limit is %zu",
                                    chars, s->cfg.max_chars),
               false;
    if (!parse_lang(req, body, "target_lang", "tgt", false, &t->o.tgt, ret) ||
        !parse_lang(req, body, "source_lang", "src", true, &t->o.src, ret))
        return false;
    hy_status st = hy_json_get_bool(body, "stream", false, stream, &err);
    if (!st)
        st = hy_json_get_int(body, "max_tokens", false, 1,
                             hy_engine_get_params(s->engine)->max_seq_tokens, &max_new, &err);
    if (!st)
        st = hy_gen_parse_sampling(body, &t->o.sampling, seed, &err);
    if (st)
        return *ret = hy_http_error(req, 400, "invalid_parameter", "%s", err.msg), false;
    t->o.max_new_tokens = (int)max_new;
    if (!(t->text = malloc(t->len + 1)))
        return *ret = hy_http_error(req, 500, "out_of_memory", "out of memory"), false;
    memcpy(t->text, json_string_value(text), t->len + 1);
    return true;
}

static enum MHD_Result answer_whole(struct hy_http_req *req, struct tr *t)
{
    t->o.write = write_whole;
    t->o.cancelled = cancelled_whole;
    t->st = hy_doc_translate(t->srv->engine, t->srv->tok, t->text, t->len, &t->o, &t->res, &t->err);
    if (t->t_first > 0)
        hy_http_first_token(req);
    enum MHD_Result ret;
    const char *code;
    if (req->client_gone)
        ret = MHD_NO;
    else if (t->st) {
        int status = failure(t, &code);
        ret = hy_http_error(req, status, code, "%s",
                            status == 504 ? "the request passed its deadline" : t->err.msg);
    } else
        ret = hy_http_json(req, 200, result_json(t, true));
    tr_free(t);
    return ret;
}

static enum MHD_Result start_stream(struct hy_http_req *req, struct tr *t)
{
    t->o.write = write_stream;
    t->o.progress = progress_stream;
    t->o.progress_ctx = t;
    t->o.cancelled = cancelled_stream;
    t->stream.produce = produce;
    t->stream.destroy = destroy;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (pthread_create(&t->thread, NULL, worker, t) != 0) {
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
        tr_free(t);
        return hy_http_error(req, 503, "no_thread", "cannot start a thread; retry later");
    }
    t->thread_started = true;
    return hy_http_sse(req, &t->stream);
}

enum MHD_Result hy_api_translate(struct hy_http_req *req)
{
    struct hy_server *s = req->srv;
    enum MHD_Result ret = MHD_NO;
    json_t *body = hy_http_body_json(req, &ret);
    if (!body)
        return ret;
    struct tr *t = calloc(1, sizeof *t);
    bool stream = false;
    if (!t) {
        json_decref(body);
        return hy_http_error(req, 500, "out_of_memory", "out of memory");
    }
    t->srv = s;
    t->stream.req = req;
    t->t0 = req->t0;
    t->deadline = req->deadline;
    t->o.write_ctx = t;
    t->o.cancel_ctx = t;
    bool ok = parse(req, body, t, &stream, &ret);
    json_decref(body);
    if (!ok) {
        tr_free(t);
        return ret;
    }
    struct hy_engine_stats es;
    hy_engine_stats(s->engine, &es);
    if (es.n_waiting >= hy_engine_get_params(s->engine)->max_queue) {
        tr_free(t);
        return hy_http_error(req, 429, "queue_full",
                             "the server is busy (%d requests waiting); "
                             "retry later",
                             es.n_waiting);
    }
    hy_http_hold(req);
    t->t_start = hy_clock_now();
    return stream ? start_stream(req, t) : answer_whole(req, t);
}
