/* gen.c: a generation request on the engine with incremental text (gen.h). */
#include "server/gen.h"

#include "core/clock.h"
#include "core/json.h"

#include <stdlib.h>
#include <string.h>

#define GEN_DEFAULT_MAX_TOKENS 1024 /* when the client gives none (OpenAI: up to the context) */
#define GEN_READ_IDS 64

hy_status hy_gen_start(struct hy_gen *g, struct hy_http_req *req, const int32_t *prompt, int n,
                       const struct hy_gen_params *p, struct hy_err *err)
{
    struct hy_server *s = req->srv;
    memset(g, 0, sizeof *g);
    g->req = req;
    g->p = *p;
    g->n_prompt = n;
    hy_detok_init(&g->detok, s->tok, true);
    struct hy_engine_request r = {
        .prompt = prompt, .n_prompt = n, .max_new_tokens = p->max_tokens, .sampling = p->sampling};
    if (req->deadline > 0)
        r.timeout_s =
            req->deadline - hy_clock_now() > 0.001 ? req->deadline - hy_clock_now() : 0.001;
    r.notify = hy_http_notify;
    r.notify_ctx = req;
    r.logprobs = p->logprobs;
    r.top_logprobs = p->top_logprobs;
    if (!p->ignore_eos) {
        r.n_stop = s->n_stop;
        memcpy(r.stop_ids, s->stop_ids, sizeof r.stop_ids);
    }
    hy_status st = hy_engine_submit(s->engine, &r, &g->handle, err);
    if (st)
        return st;
    g->submitted = true;
    req->tokens_in = n;
    hy_http_hold(req);
    return HY_OK;
}

/* Length of the longest suffix of t[from..n) that begins some stop string. */
static size_t held_back(const struct hy_gen *g, const char *t, size_t from, size_t n)
{
    size_t hold = 0;
    for (int i = 0; i < g->p.n_stop; i++) {
        size_t len = strlen(g->p.stop[i]);
        for (size_t k = len - 1 < n - from ? len - 1 : n - from; k > hold; k--)
            if (!memcmp(t + n - k, g->p.stop[i], k)) {
                hold = k;
                break;
            }
    }
    return hold;
}

/* Cuts the text at the first stop string after `emitted`; true when one was found. */
static bool apply_stop(struct hy_gen *g)
{
    char *t = g->text.p;
    size_t best = g->text.n;
    for (int i = 0; t && i < g->p.n_stop; i++) {
        char *hit =
            memmem(t + g->emitted, g->text.n - g->emitted, g->p.stop[i], strlen(g->p.stop[i]));
        if (hit && (size_t)(hit - t) < best)
            best = (size_t)(hit - t);
    }
    if (best == g->text.n)
        return false;
    g->text.n = best;
    t[best] = '\0';
    return true;
}

static bool is_stop_id(const struct hy_gen *g, int32_t id)
{
    const struct hy_server *s = g->req->srv;
    for (int i = 0; !g->p.ignore_eos && i < s->n_stop; i++)
        if (s->stop_ids[i] == id)
            return true;
    return false;
}

/* The log-probabilities of the k tokens just read (published with them). */
static void take_logprobs(struct hy_gen *g, int k)
{
    struct hy_logprob lp[GEN_READ_IDS];
    int n = hy_engine_read_logprobs(g->req->srv->engine, g->handle, g->n_generated, lp, k);
    for (int i = 0; i < n; i++)
        if (!is_stop_id(g, lp[i].id))
            hy_http_buf_add(&g->lp, (const char *)&lp[i], sizeof lp[i]);
}

static void take(struct hy_gen *g, const int32_t *ids, int k)
{
    char out[HY_DETOK_MAX_OUT];
    if (g->p.logprobs && k > 0)
        take_logprobs(g, k);
    for (int i = 0; i < k; i++) {
        int w = hy_detok_push(&g->detok, ids[i], out, sizeof out);
        if (w > 0)
            hy_http_buf_add(&g->text, out, (size_t)w);
    }
    g->n_generated += k;
    g->req->tokens_out += k;
    if (k > 0)
        hy_http_first_token(g->req);
}

size_t hy_gen_step(struct hy_gen *g)
{
    struct hy_http_req *req = g->req;
    struct hy_engine *e = req->srv->engine;
    while (!g->done) {
        if (hy_http_should_stop(req)) {
            hy_engine_cancel(e, g->handle);
            g->finish = req->client_gone || atomic_load(&req->srv->aborting) ? HY_FINISH_CANCELLED
                                                                             : HY_FINISH_TIMEOUT;
            g->done = true;
            return 0;
        }
        int32_t ids[GEN_READ_IDS];
        struct hy_engine_status st;
        int k = hy_engine_read(e, g->handle, ids, GEN_READ_IDS, 0, &st);
        if (k < 0) {
            g->finish = HY_FINISH_ERROR;
            g->done = true;
            return 0;
        }
        take(g, ids, k);
        if (st.done && st.n_generated == g->n_generated) {
            char out[16];
            int w = hy_detok_flush(&g->detok, out, sizeof out);
            if (w > 0)
                hy_http_buf_add(&g->text, out, (size_t)w);
            g->finish = st.finish;
            g->done = true;
            if (st.total_s > req->engine_s)
                req->engine_s = st.total_s;
        }
        if (g->p.n_stop && apply_stop(g)) {
            hy_engine_cancel(e, g->handle); /* nothing after the stop string is wanted */
            g->finish = HY_FINISH_STOP;
            g->stopped_by_string = true;
            g->done = true;
        }
        size_t safe = g->text.n;
        if (!g->done && g->p.n_stop)
            safe -= held_back(g, g->text.p, g->emitted, g->text.n);
        if (safe > g->emitted || g->done)
            return safe - g->emitted;
        if (k < GEN_READ_IDS)
            return 0; /* nothing more yet: the engine's notification brings us back */
    }
    return g->text.n - g->emitted;
}

const char *hy_gen_finish_reason(const struct hy_gen *g)
{
    switch (g->finish) {
    case HY_FINISH_STOP: return "stop";
    case HY_FINISH_LENGTH: return "length";
    default: return NULL;
    }
}

void hy_gen_end(struct hy_gen *g)
{
    if (g->submitted)
        hy_engine_release(g->req->srv->engine, g->handle);
    g->submitted = false;
    hy_http_buf_free(&g->text);
    hy_http_buf_free(&g->lp);
}

static bool parse_stop(struct hy_http_req *req, json_t *body, struct hy_gen_params *p)
{
    json_t *v = json_object_get(body, "stop");
    if (!v || json_is_null(v))
        return true;
    json_t *one[1] = {v};
    json_t **items = one;
    size_t n = 1;
    if (json_is_array(v)) {
        n = json_array_size(v);
        items = NULL;
    }
    if (n > HY_GEN_MAX_STOP_STRINGS) {
        hy_http_error(req, 400, "invalid_parameter", "stop: at most %d strings",
                             HY_GEN_MAX_STOP_STRINGS);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *s = items ? items[i] : json_array_get(v, i);
        size_t len = json_is_string(s) ? json_string_length(s) : 0;
        if (!json_is_string(s) || len == 0 || len >= HY_GEN_MAX_STOP_LEN) {
            hy_http_error(req, 400, "invalid_parameter",
                                 "stop: a string or an array of non-empty strings of at most "
                                 "%d bytes",
                                 HY_GEN_MAX_STOP_LEN - 1);
            return false;
        }
        memcpy(p->stop[p->n_stop++], json_string_value(s), len + 1);
    }
    return true;
}

hy_status hy_gen_parse_sampling(json_t *body, struct hy_sampler_params *sp, uint64_t fallback_seed,
                                struct hy_err *err)
{
    double temp = sp->temperature, top_p = sp->top_p, rep = sp->repetition_penalty;
    int64_t top_k = sp->top_k, seed = -1;
    hy_status st = hy_json_get_real(body, "temperature", false, 0, 2, &temp, err);
    if (!st)
        st = hy_json_get_real(body, "top_p", false, 0, 1, &top_p, err);
    if (!st)
        st = hy_json_get_int(body, "top_k", false, -1, 1 << 20, &top_k, err);
    if (!st)
        st = hy_json_get_real(body, "repetition_penalty", false, 0.01, 10, &rep, err);
    if (!st)
        st = hy_json_get_int(body, "seed", false, INT64_MIN, INT64_MAX, &seed, err);
    if (st)
        return st;
    sp->temperature = top_p > 0 ? (float)temp : 0.0f; /* top_p 0 keeps one token: greedy */
    sp->top_p = top_p > 0 ? (float)top_p : 1.0f;
    sp->top_k = top_k < 0 ? 0 : (int32_t)top_k; /* -1: off, as vLLM spells it */
    sp->repetition_penalty = (float)rep;
    sp->seed = json_is_integer(json_object_get(body, "seed")) ? (uint64_t)seed : fallback_seed;
    return HY_OK;
}

bool hy_gen_parse(struct hy_http_req *req, json_t *body, int n_prompt, struct hy_gen_params *p)
{
    struct hy_server *s = req->srv;
    struct hy_err err = {{0}};
    int limit = hy_engine_get_params(s->engine)->max_seq_tokens;
    int room = limit - n_prompt;
    int64_t max_tokens = room < GEN_DEFAULT_MAX_TOKENS ? room : GEN_DEFAULT_MAX_TOKENS, n = 1;
    memset(p, 0, sizeof *p);
    p->sampling = s->prompt.sampling; /* the model's defaults (prompt_detect.h) */
    uint64_t seed = atomic_fetch_add(&s->next_id, 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)s->created;
    hy_status st = hy_json_get_int(body, "max_tokens", false, 1, INT32_MAX, &max_tokens, &err);
    if (!st)
        st = hy_json_get_int(body, "max_completion_tokens", false, 1, INT32_MAX, &max_tokens, &err);
    if (!st)
        st = hy_json_get_int(body, "n", false, INT32_MIN, INT32_MAX, &n, &err);
    if (!st && n != 1)
        st = hy_err_set(&err, HY_E_RANGE, "n: only n = 1 is supported (got %lld)", (long long)n);
    if (!st)
        st = hy_json_get_bool(body, "ignore_eos", false, &p->ignore_eos, &err);
    if (!st)
        st = hy_gen_parse_sampling(body, &p->sampling, seed, &err);
    if (st) {
        hy_http_error(req, 400, "invalid_parameter", "%s", err.msg);
        return false;
    }
    if (room < 1 || max_tokens > room) {
        hy_http_error(req, 400, "context_length_exceeded",
                             "the prompt (%d tokens) plus max_tokens (%lld) exceeds the %d-token "
                             "limit",
                             n_prompt, (long long)max_tokens, limit);
        return false;
    }
    p->max_tokens = (int)max_tokens;
    return parse_stop(req, body, p);
}
