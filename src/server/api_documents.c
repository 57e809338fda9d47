/* api_documents.c: documents as jobs: POST /v1/documents takes a text (or a batch of
 * segments' worth: anything up to --max-body) with its languages and optionally a glossary
 * (`glossary` terms or a stored `glossary_id`, as on /api/translate) and answers 202 with an
 * id at once; GET /v1/documents/ID gives its status and progress (segments done / total),
 * then the translation. A document runs on one of DOCS_THREADS document threads through
 * hy_doc_translate on the server's engine: on a front end (serve --queue) each segment is
 * a job, so a document's segments spread over every worker. Records live in a fixed table
 * of DOCS_MAX on this server (a GET must reach the front end that took the POST); a
 * finished one is kept DOCS_KEEP_S seconds, and the oldest finished one makes room when
 * the table is full (none finished: 429). */
#include "server/api_ext.h"
#include "server/gen.h"

#include "core/clock.h"
#include "core/json.h"
#include "core/utf8.h"
#include "translate/doc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DOCS_MAX 256
#define DOCS_THREADS 4
#define DOCS_KEEP_S 3600.0
#define DOCS_ID_PREFIX "doc-"
#define DOCS_LANG_MAX 64

enum doc_state { DOC_FREE = 0, DOC_QUEUED, DOC_RUNNING, DOC_DONE, DOC_FAILED };

struct docrec {
    enum doc_state state;
    char id[48];
    char *text; /* owned until it runs out */
    size_t len;
    struct hy_doc_opts o;
    struct hy_api_ext x; /* o's glossary (`glossary` or `glossary_id`), until it ran */
    struct hy_http_buf out;
    size_t done, total;
    struct hy_doc_result res;
    char error[256];
    long long created; /* unix time */
    double t_created, t_finished;
    uint64_t seq; /* FIFO order of the queued ones */
};

struct hy_docs {
    struct hy_server *srv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct docrec recs[DOCS_MAX];
    pthread_t th[DOCS_THREADS];
    int n_threads;
    uint64_t next_seq;
    bool stop;
};

struct run_ctx {
    struct hy_docs *d;
    struct docrec *r;
};

static hy_status write_out(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    struct run_ctx *c = ctx;
    pthread_mutex_lock(&c->d->mu);
    bool ok = hy_http_buf_add(&c->r->out, s, n);
    pthread_mutex_unlock(&c->d->mu);
    return ok ? HY_OK : hy_err_set(err, HY_E_NOMEM, "out of memory");
}

static void progress(void *ctx, const struct hy_doc_progress *p)
{
    struct run_ctx *c = ctx;
    pthread_mutex_lock(&c->d->mu);
    c->r->done = p->done;
    c->r->total = p->total;
    pthread_mutex_unlock(&c->d->mu);
}

static bool cancelled(void *ctx)
{
    struct run_ctx *c = ctx;
    return atomic_load(&c->d->srv->aborting);
}

/* The oldest queued record (under mu), or NULL. */
static struct docrec *next_queued(struct hy_docs *d)
{
    struct docrec *best = NULL;
    for (int i = 0; i < DOCS_MAX; i++)
        if (d->recs[i].state == DOC_QUEUED && (!best || d->recs[i].seq < best->seq))
            best = &d->recs[i];
    return best;
}

static void *doc_main(void *arg)
{
    struct hy_docs *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        struct docrec *r = NULL;
        while (!d->stop && !(r = next_queued(d)))
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->stop)
            break;
        r->state = DOC_RUNNING;
        struct run_ctx c = {d, r};
        struct hy_doc_opts o = r->o;
        o.write = write_out;
        o.write_ctx = &c;
        o.progress = progress;
        o.progress_ctx = &c;
        o.cancelled = cancelled;
        o.cancel_ctx = &c;
        pthread_mutex_unlock(&d->mu);
        struct hy_doc_result res;
        struct hy_err err = {{0}};
        hy_status st = hy_doc_translate(d->srv->engine, d->srv->tok, r->text, r->len, &o, &res,
                                        &err);
        pthread_mutex_lock(&d->mu);
        r->res = res;
        r->state = st ? DOC_FAILED : DOC_DONE;
        if (st)
            snprintf(r->error, sizeof r->error, "%s",
                     st == HY_DOC_CANCELLED ? "cancelled: the server is shutting down" : err.msg);
        r->done = st ? r->done : res.segments;
        r->total = st ? r->total : res.segments;
        r->t_finished = hy_clock_now();
        free(r->text);
        r->text = NULL;
        hy_api_ext_free(&r->x);
        r->o.glossary = NULL;
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

hy_status hy_docs_create(struct hy_docs **out, struct hy_server *s, struct hy_err *err)
{
    struct hy_docs *d = calloc(1, sizeof *d);
    *out = NULL;
    if (!d)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    d->srv = s;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    for (; d->n_threads < DOCS_THREADS; d->n_threads++)
        if (pthread_create(&d->th[d->n_threads], NULL, doc_main, d) != 0) {
            hy_docs_destroy(d);
            return hy_err_set(err, HY_E_NOMEM, "cannot start the document threads");
        }
    *out = d;
    return HY_OK;
}

void hy_docs_destroy(struct hy_docs *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true; /* running documents stop at their next wake-up (server aborting) */
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    for (int i = 0; i < d->n_threads; i++)
        pthread_join(d->th[i], NULL);
    for (int i = 0; i < DOCS_MAX; i++) {
        free(d->recs[i].text);
        hy_api_ext_free(&d->recs[i].x); /* a document that never ran */
        hy_http_buf_free(&d->recs[i].out);
    }
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

/* A free record (under mu): an unused one, else the oldest finished (or any finished past
 * DOCS_KEEP_S, which are dropped on the way). NULL when all are queued or running. */
static struct docrec *take_record(struct hy_docs *d)
{
    struct docrec *free_r = NULL, *oldest = NULL;
    double now = hy_clock_now();
    for (int i = 0; i < DOCS_MAX; i++) {
        struct docrec *r = &d->recs[i];
        bool finished = r->state == DOC_DONE || r->state == DOC_FAILED;
        if (finished && now - r->t_finished > DOCS_KEEP_S) {
            hy_http_buf_free(&r->out);
            memset(r, 0, sizeof *r);
        }
        if (r->state == DOC_FREE && !free_r)
            free_r = r;
        if (finished && (!oldest || r->t_finished < oldest->t_finished))
            oldest = r;
    }
    struct docrec *r = free_r ? free_r : oldest;
    if (r) {
        hy_http_buf_free(&r->out);
        memset(r, 0, sizeof *r);
    }
    return r;
}

static json_t *record_json(const struct docrec *r, const struct hy_server *s)
{
    static const char *const names[] = {"free", "queued", "running", "done", "failed"};
    json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:s,s:I}", "id", r->id, "object", "document",
                          "status", names[r->state], "created", (json_int_t)r->created,
                          "target_lang", r->o.tgt->code, "segments_done", (json_int_t)r->done);
    json_object_set_new(j, "source_lang",
                        r->o.src ? json_string(r->o.src->code)
                        : r->res.src ? json_string(r->res.src->code) : json_null());
    json_object_set_new(j, "segments_total",
                        r->total || r->state == DOC_DONE ? json_integer((json_int_t)r->total)
                                                         : json_null());
    double end = r->t_finished > 0 ? r->t_finished : hy_clock_now();
    json_object_set_new(j, "elapsed_ms", hy_http_ms(end - r->t_created));
    json_object_set_new(j, "model", json_string(s->cfg.model_name));
    if (r->state == DOC_DONE) {
        json_object_set_new(j, "translation", json_stringn(r->out.p ? r->out.p : "", r->out.n));
        json_object_set_new(j, "segments_failed", json_integer((json_int_t)r->res.failed));
        json_object_set_new(j, "usage", json_pack("{s:I,s:I}", "prompt_tokens",
                                                  (json_int_t)r->res.tokens_in,
                                                  "completion_tokens",
                                                  (json_int_t)r->res.tokens_out));
    }
    if (r->state == DOC_FAILED)
        json_object_set_new(j, "error", json_string(r->error));
    return j;
}

/* A language field into *out ("auto" or absent, source only: NULL); 400 when unknown. */
static bool lang(struct hy_http_req *req, json_t *body, const char *key, bool source,
                 const struct hy_lang **out)
{
    char name[DOCS_LANG_MAX] = "";
    struct hy_err err = {{0}};
    *out = NULL;
    if (hy_json_get_str(body, key, !source, name, sizeof name, &err))
        return !hy_http_error(req, 400, source ? "invalid_parameter" : "missing_target_lang",
                              "%s", err.msg);
    if (source && (!name[0] || !strcmp(name, "auto")))
        return true;
    if (!(*out = hy_lang_find(name)))
        return !hy_http_error(req, 400, "unknown_language", "%s: unknown language '%s'", key,
                              name);
    return true;
}

bool hy_api_documents_post(struct hy_http_req *req)
{
    struct hy_server *s = req->srv;
    json_t *body = hy_http_body_json(req);
    if (!body)
        return true;
    json_t *text = json_object_get(body, "text");
    struct hy_doc_opts o = {0};
    struct hy_api_ext x = {0};
    o.sampling = hy_sampler_params_default();
    struct hy_err err = {{0}};
    bool keep_lines = false, ok = false;
    int64_t max_new = 0;
    size_t len = json_string_length(text);
    if (!json_is_string(text) || len == 0)
        hy_http_error(req, 400, "missing_text", "text: a non-empty string is required");
    else if (hy_utf8_validate(json_string_value(text), len) != len)
        hy_http_error(req, 400, "invalid_utf8", "text: invalid UTF-8");
    else if (lang(req, body, "target_lang", false, &o.tgt) &&
             lang(req, body, "source_lang", true, &o.src)) {
        uint64_t seed = atomic_fetch_add(&s->next_id, 1) * 0x9E3779B97F4A7C15ull;
        hy_status st = hy_json_get_bool(body, "keep_lines", false, &keep_lines, &err);
        if (!st)
            st = hy_json_get_int(body, "max_tokens", false, 1,
                                 hy_engine_get_params(s->engine)->max_seq_tokens, &max_new,
                                 &err);
        if (!st)
            st = hy_gen_parse_sampling(body, &o.sampling, seed, &err);
        if (st)
            hy_http_error(req, 400, "invalid_parameter", "%s", err.msg);
        ok = !st && hy_api_glossary_parse(req, body, &x, &o);
    }
    o.keep_lines = keep_lines;
    o.max_new_tokens = (int)max_new;
    char *copy = ok ? malloc(len + 1) : NULL;
    if (ok && !copy)
        hy_http_error(req, 500, "out_of_memory", "out of memory");
    if (copy)
        memcpy(copy, json_string_value(text), len + 1);
    json_decref(body);
    if (!copy) {
        hy_api_ext_free(&x);
        return true;
    }
    struct hy_docs *d = s->docs;
    pthread_mutex_lock(&d->mu);
    struct docrec *r = take_record(d);
    if (!r) {
        pthread_mutex_unlock(&d->mu);
        free(copy);
        hy_api_ext_free(&x);
        return hy_http_error(req, 429, "too_many_documents",
                             "%d documents are queued or running; retry later", DOCS_MAX);
    }
    hy_http_new_id(s, DOCS_ID_PREFIX, r->id, sizeof r->id);
    r->text = copy;
    r->len = len;
    r->o = o;
    r->x = x;
    r->created = (long long)time(NULL);
    r->t_created = hy_clock_now();
    r->seq = d->next_seq++;
    r->state = DOC_QUEUED;
    json_t *j = record_json(r, s);
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return hy_http_json(req, 202, j);
}

bool hy_api_documents_get(struct hy_http_req *req)
{
    struct hy_server *s = req->srv;
    const char *id = req->path + strlen("/v1/documents/");
    struct hy_docs *d = s->docs;
    json_t *j = NULL;
    pthread_mutex_lock(&d->mu);
    for (int i = 0; i < DOCS_MAX && !j; i++)
        if (d->recs[i].state != DOC_FREE && !strcmp(d->recs[i].id, id))
            j = record_json(&d->recs[i], s);
    pthread_mutex_unlock(&d->mu);
    if (!j)
        return hy_http_error(req, 404, "document_not_found",
                             "no document %.60s here (documents are kept %.0f s after they "
                             "finish, on the server that took them)", id, DOCS_KEEP_S);
    return hy_http_json(req, 200, j);
}
