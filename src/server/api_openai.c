/* api_openai.c: the OpenAI-compatible routes: POST /v1/chat/completions (the model's chat
 * template) and POST /v1/completions (a raw prompt), streamed as server-sent events
 * ("data: {...}" chunks, then "data: [DONE]") or answered whole. Field names, object
 * types, ids and finish reasons follow the OpenAI API so that its clients work unchanged.
 * The handler submits and returns; the request's pump runs on a worker each time the
 * engine has tokens for it. */
#include "server/gen.h"

#include "core/json.h"
#include "core/utf8.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum api_kind { API_CHAT, API_COMPLETION };

struct oai {
    struct hy_http_req *req;
    struct hy_http_buf out; /* events not yet sent */
    enum api_kind kind;
    bool stream;
    struct hy_gen gen;
    char id[64];
    long long created;
    bool include_usage, sent_role, sent_final;
    size_t text_off; /* completions' logprobs: characters of text before the next entry */
};

static json_t *usage_json(const struct hy_gen *g)
{
    return json_pack("{s:i,s:i,s:i}", "prompt_tokens", g->n_prompt, "completion_tokens",
                     g->n_generated, "total_tokens", g->n_prompt + g->n_generated);
}

/* The log-probabilities not yet handed out (null without logprobs). */
static json_t *next_logprobs(struct oai *o)
{
    struct hy_gen *g = &o->gen;
    size_t to = hy_gen_n_logprobs(g), from = g->lp_emitted;
    if (!g->p.logprobs || (o->stream && from == to)) /* a chunk without tokens: null */
        return json_null();
    g->lp_emitted = to;
    json_t *j = o->kind == API_CHAT ? hy_gen_logprobs_chat(g, from, to)
                                    : hy_gen_logprobs_completion(g, from, to, &o->text_off);
    return j ? j : json_null();
}

/* One choices[] entry: a chat delta/message or a completion text, with the logprobs of
 * the tokens not yet handed out. */
static json_t *choice(struct oai *o, const char *text, size_t len, const char *finish,
                      bool stream, bool role)
{
    json_t *c = json_pack("{s:i,s:o}", "index", 0, "logprobs", next_logprobs(o));
    json_object_set_new(c, "finish_reason", finish ? json_string(finish) : json_null());
    json_t *t = text ? json_stringn(text, len) : NULL;
    if (o->kind == API_COMPLETION) {
        json_object_set_new(c, "text", t ? t : json_string(""));
        return c;
    }
    json_t *m = json_object();
    if (role || !stream)
        json_object_set_new(m, "role", json_string("assistant"));
    if (t)
        json_object_set_new(m, "content", t);
    json_object_set_new(c, stream ? "delta" : "message", m);
    return c;
}

/* logprobs: chat's boolean with top_logprobs (0..HY_LOGPROB_MAX_TOP, only with logprobs
 * true), or completions' integer (the number of alternatives, 0..HY_LOGPROB_MAX_TOP; 0
 * still gives each token's own). NULL when valid, else the error message in err. */
static hy_status parse_logprobs(const struct oai *o, json_t *body, struct hy_gen_params *p,
                                struct hy_err *err)
{
    json_t *v = json_object_get(body, "logprobs");
    int64_t top = 0;
    hy_status st = HY_OK;
    if (o->kind == API_CHAT) {
        st = hy_json_get_bool(body, "logprobs", false, &p->logprobs, err);
        if (!st)
            st = hy_json_get_int(body, "top_logprobs", false, 0, HY_LOGPROB_MAX_TOP, &top, err);
        json_t *t = json_object_get(body, "top_logprobs");
        if (!st && t && !json_is_null(t) && !p->logprobs)
            st = hy_err_set(err, HY_E_INVAL, "top_logprobs: needs logprobs: true");
    } else if (v && !json_is_null(v) && !json_is_false(v)) { /* false: off, as clients send */
        st = hy_json_get_int(body, "logprobs", false, 0, HY_LOGPROB_MAX_TOP, &top, err);
        p->logprobs = !st;
    }
    p->top_logprobs = (int)top;
    return st;
}

static json_t *envelope(const struct oai *o, bool stream)
{
    const char *obj = o->kind == API_CHAT ? (stream ? "chat.completion.chunk" : "chat.completion")
                                          : "text_completion";
    return json_pack("{s:s,s:s,s:I,s:s,s:s}", "id", o->id, "object", obj, "created",
                     (json_int_t)o->created, "model",
                     o->req->srv->cfg.model_name,
                     "system_fingerprint", "hymt");
}

static void send_chunk(struct oai *o, json_t *choices, json_t *usage)
{
    json_t *j = envelope(o, true);
    json_object_set_new(j, "choices", choices);
    if (o->include_usage)
        json_object_set_new(j, "usage", usage ? usage : json_null());
    else if (usage)
        json_decref(usage);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (s)
        hy_http_buf_printf(&o->out, "data: %s\n\n", s);
    free(s);
}

/* The error a generation ended with, or NULL when it finished normally. */
static const char *gen_error(const struct hy_gen *g, int *status)
{
    switch (g->finish) {
    case HY_FINISH_TIMEOUT: *status = 504; return "the request passed its deadline";
    case HY_FINISH_CANCELLED:
        *status = 503;
        return "the request was cancelled (shutdown, or the job queue was lost)";
    case HY_FINISH_ERROR: *status = 500; return "the engine failed on this request";
    default: return NULL;
    }
}

static void destroy(struct oai *o)
{
    hy_gen_end(&o->gen);
    hy_http_buf_free(&o->out);
    free(o);
}

/* The stream's next events; true when the last one is out. */
static bool pump_stream(struct hy_http_req *req, struct oai *o)
{
    struct hy_gen *g = &o->gen;
    size_t n;
    while ((n = hy_gen_step(g)) > 0) {
        send_chunk(o, json_pack("[o]", choice(o, g->text.p + g->emitted, n, NULL, true, false)),
                   NULL);
        g->emitted += n;
        if (g->done)
            break;
    }
    if (!g->done) {
        if (o->out.n)
            hy_http_sse_send(req, o->out.p, o->out.n, false);
        o->out.n = 0;
        return false;
    }
    int status = 0;
    const char *msg = gen_error(g, &status);
    if (atomic_load(&req->client_gone)) {
        o->out.n = 0;
    } else if (msg) {
        hy_http_buf_printf(&o->out,
                           "data: {\"error\":{\"message\":\"%s\",\"type\":\"%s\","
                           "\"code\":%d}}\n\n",
                           msg, status == 504 ? "timeout_error" : "server_error", status);
    } else {
        send_chunk(o, json_pack("[o]", choice(o, NULL, 0, hy_gen_finish_reason(g), true, false)),
                   NULL);
        if (o->include_usage)
            send_chunk(o, json_array(), usage_json(g));
    }
    if (!atomic_load(&req->client_gone))
        hy_http_buf_printf(&o->out, "data: [DONE]\n\n");
    hy_http_sse_send(req, o->out.p, o->out.n, true);
    return true;
}

/* The whole answer once generation ends; true when sent. */
static bool pump_whole(struct hy_http_req *req, struct oai *o)
{
    struct hy_gen *g = &o->gen;
    size_t n;
    while (!g->done)
        if ((n = hy_gen_step(g)) > 0)
            g->emitted += n;
        else if (!g->done)
            return false;
    int status = 0;
    const char *msg = gen_error(g, &status);
    if (atomic_load(&req->client_gone))
        return true; /* nobody to answer */
    if (msg)
        return hy_http_error(req, status, status == 504 ? "timeout" : "cancelled", "%s", msg);
    json_t *j = envelope(o, false);
    json_object_set_new(j, "choices",
                        json_pack("[o]", choice(o, g->text.p ? g->text.p : "", g->text.n,
                                                hy_gen_finish_reason(g), false, false)));
    json_object_set_new(j, "usage", usage_json(g));
    return hy_http_json(req, 200, j);
}

static bool pump(struct hy_http_req *req)
{
    struct oai *o = req->task;
    bool done = o->stream ? pump_stream(req, o) : pump_whole(req, o);
    if (done) {
        req->task = NULL;
        destroy(o);
    }
    return done;
}

/* Submits and answers: streamed or whole. Takes ownership of o. */
static bool run(struct hy_http_req *req, struct oai *o, json_t *body, const int32_t *ids, int n)
{
    struct hy_gen_params p;
    struct hy_err err = {{0}};
    bool stream = false;
    o->req = req;
    if (hy_json_get_bool(body, "stream", false, &stream, &err)) {
        free(o);
        return hy_http_error(req, 400, "invalid_parameter", "%s", err.msg);
    }
    json_t *so = json_object_get(body, "stream_options");
    o->stream = stream;
    o->include_usage = stream && json_is_true(json_object_get(so, "include_usage"));
    o->created = (long long)time(NULL);
    hy_http_new_id(req->srv, o->kind == API_CHAT ? "chatcmpl-" : "cmpl-", o->id, sizeof o->id);
    if (!hy_gen_parse(req, body, n, &p)) {
        free(o);
        return true;
    }
    if (parse_logprobs(o, body, &p, &err)) {
        free(o);
        return hy_http_error(req, 400, "invalid_parameter", "%s", err.msg);
    }
    req->task = o;
    req->pump = pump; /* before the submit: the engine may notify at once */
    hy_status st = hy_gen_start(&o->gen, req, ids, n, &p, &err);
    if (st) {
        req->task = NULL;
        destroy(o);
        if (st == HY_E_NOSPACE)
            return hy_http_error(req, 429, "queue_full", "the server is busy: %s; retry later",
                                 err.msg);
        if (st == HY_E_IO) /* a front end whose queue is unreachable */
            return hy_http_error(req, 503, "queue_unavailable", "%s; retry later", err.msg);
        return hy_http_error(req, 400, "invalid_request", "%s", err.msg);
    }
    if (stream) {
        hy_http_sse_begin(req);
        if (o->kind == API_CHAT) {
            o->sent_role = true;
            send_chunk(o, json_pack("[o]", choice(o, "", 0, NULL, true, true)), NULL);
        }
    }
    return pump(req);
}

/* True when v asks for nothing: absent, null, false, 0, "", [], {}, or the string `none_str`
 * (NULL: no such string). */
static bool asks_nothing(json_t *v, const char *none_str)
{
    return !v || json_is_null(v) || json_is_false(v) ||
           (json_is_number(v) && json_number_value(v) == 0) ||
           (json_is_string(v) && (!json_string_length(v) ||
                                  (none_str && !strcmp(json_string_value(v), none_str)))) ||
           (json_is_array(v) && !json_array_size(v)) || (json_is_object(v) && !json_object_size(v));
}

/* Fields of the OpenAI API that hymt does not implement get a 400 naming the field, never
 * an answer that silently ignores them; a value that asks for nothing (asks_nothing, as
 * clients send defaults) is accepted. n and best_of other than 1 are refused too (n by
 * hy_gen_parse). True when the request may go on. */
static bool refuse_unsupported(struct hy_http_req *req, json_t *body)
{
    static const struct {
        const char *key, *none, *why;
    } fields[] = {
        {"tools", NULL, "tool calls are not supported"},
        {"tool_choice", "none", "tool calls are not supported"},
        {"functions", NULL, "function calls are not supported"},
        {"function_call", "none", "function calls are not supported"},
        {"suffix", NULL, "insertion (a suffix) is not supported"},
        {"echo", NULL, "echoing the prompt is not supported"},
        {"logit_bias", NULL, "logit biases are not supported"},
        {"presence_penalty", NULL, "only 0 is supported (repetition_penalty is)"},
        {"frequency_penalty", NULL, "only 0 is supported (repetition_penalty is)"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!asks_nothing(json_object_get(body, fields[i].key), fields[i].none))
            return !hy_http_error(req, 400, "unsupported_parameter", "%s: %s by hymt",
                                  fields[i].key, fields[i].why);
    json_t *rf = json_object_get(body, "response_format");
    json_t *type = json_object_get(rf, "type");
    if (rf && !json_is_null(rf) &&
        !(json_is_string(type) && !strcmp(json_string_value(type), "text")))
        return !hy_http_error(req, 400, "unsupported_parameter",
                              "response_format: only {\"type\": \"text\"} is supported by hymt");
    json_t *best = json_object_get(body, "best_of");
    if (best && !json_is_null(best) &&
        !(json_is_integer(best) && json_integer_value(best) == 1))
        return !hy_http_error(req, 400, "unsupported_parameter",
                              "best_of: only 1 is supported by hymt");
    return true;
}

/* The text of a message's content: a string, or an array of {"type": "text", "text": ...}
 * parts (joined). NULL when malformed. *owned is set when the result must be freed. */
static const char *content_text(json_t *c, size_t *len, char **owned)
{
    *owned = NULL;
    if (json_is_string(c)) {
        *len = json_string_length(c);
        return json_string_value(c);
    }
    if (!json_is_array(c))
        return NULL;
    struct hy_http_buf b = {0};
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part)
    {
        json_t *t = json_object_get(part, "text");
        if (!json_is_string(t) || !json_is_string(json_object_get(part, "type")) ||
            strcmp(json_string_value(json_object_get(part, "type")), "text") ||
            !hy_http_buf_add(&b, json_string_value(t), json_string_length(t))) {
            hy_http_buf_free(&b);
            return NULL;
        }
    }
    *owned = b.p ? b.p : calloc(1, 1);
    *len = b.n;
    return *owned;
}

static bool role_of(const char *s, enum hy_prompt_role *r)
{
    if (!strcmp(s, "system") || !strcmp(s, "developer"))
        *r = HY_PROMPT_SYSTEM;
    else if (!strcmp(s, "user"))
        *r = HY_PROMPT_USER;
    else if (!strcmp(s, "assistant"))
        *r = HY_PROMPT_ASSISTANT;
    else
        return false;
    return true;
}

/* messages[] -> prompt_msg[]; answers 400 and returns 0 on a malformed list. */
static size_t parse_messages(struct hy_http_req *req, json_t *list, struct hy_prompt_msg *msgs,
                             char **owned)
{
    size_t n = json_array_size(list);
    if (!json_is_array(list) || n == 0) {
        hy_http_error(req, 400, "invalid_parameter",
                             "messages: a non-empty array of {role, content} is required");
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(list, i);
        json_t *role = json_object_get(m, "role");
        const char *t = content_text(json_object_get(m, "content"), &msgs[i].len, &owned[i]);
        if (!json_is_string(role) || !role_of(json_string_value(role), &msgs[i].role) || !t) {
            hy_http_error(req, 400, "invalid_parameter",
                                 "messages[%zu]: role must be system, user or assistant and "
                                 "content a string or text parts",
                                 i);
            return 0;
        }
        msgs[i].text = t;
        if (hy_utf8_validate(t, msgs[i].len) != msgs[i].len) {
            hy_http_error(req, 400, "invalid_utf8", "messages[%zu]: invalid UTF-8", i);
            return 0;
        }
    }
    return n;
}

/* Token ids of the prompt into a new array of max_seq_tokens; answers 400 on failure. */
static int32_t *prompt_ids(struct hy_http_req *req, const struct hy_prompt_msg *msgs, size_t n_msgs,
                           const char *raw, size_t raw_len, int *n_out)
{
    struct hy_server *s = req->srv;
    int limit = hy_engine_get_params(s->engine)->max_seq_tokens;
    int32_t *ids = malloc((size_t)limit * sizeof *ids);
    size_t n = 0;
    struct hy_err err = {{0}};
    hy_status st =
        !ids   ? HY_E_NOMEM
        : msgs ? hy_prompt_chat(s->tok, s->prompt.kind.chat, msgs, n_msgs, true, ids, (size_t)limit, &n, &err)
               : hy_tok_encode(s->tok, raw, raw_len, true, ids, (size_t)limit, &n, &err);
    if (st == HY_OK && n == 0)
        st = hy_err_set(&err, HY_E_INVAL, "the prompt is empty");
    if (st) {
        free(ids);
        if (st == HY_E_NOSPACE)
            hy_http_error(req, 400, "context_length_exceeded",
                                 "the prompt is %zu tokens; the limit is %d", n, limit);
        else if (st == HY_E_NOMEM)
            hy_http_error(req, 500, "out_of_memory", "out of memory");
        else
            hy_http_error(req, 400, "invalid_request", "%s", err.msg);
        return NULL;
    }
    *n_out = (int)n;
    return ids;
}

bool hy_api_chat(struct hy_http_req *req)
{
    bool ret = true;
    json_t *body = hy_http_body_json(req);
    if (!body)
        return true;
    if (!refuse_unsupported(req, body)) {
        json_decref(body);
        return true;
    }
    json_t *list = json_object_get(body, "messages");
    size_t cap = json_is_array(list) ? json_array_size(list) : 0;
    struct hy_prompt_msg *msgs = calloc(cap + 1, sizeof *msgs);
    char **owned = calloc(cap + 1, sizeof *owned);
    struct oai *o = calloc(1, sizeof *o);
    int n = 0;
    int32_t *ids = NULL;
    size_t n_msgs = msgs && owned && o ? parse_messages(req, list, msgs, owned) : 0;
    if (!msgs || !owned || !o)
        hy_http_error(req, 500, "out_of_memory", "out of memory");
    else if (n_msgs)
        ids = prompt_ids(req, msgs, n_msgs, NULL, 0, &n);
    if (ids) {
        o->kind = API_CHAT;
        ret = run(req, o, body, ids, n);
        o = NULL;
    }
    for (size_t i = 0; owned && i < cap; i++)
        free(owned[i]);
    free(owned);
    free(msgs);
    free(ids);
    free(o);
    json_decref(body);
    return ret;
}

bool hy_api_completions(struct hy_http_req *req)
{
    bool ret = true;
    json_t *body = hy_http_body_json(req);
    if (!body)
        return true;
    if (!refuse_unsupported(req, body)) {
        json_decref(body);
        return true;
    }
    json_t *prompt = json_object_get(body, "prompt");
    if (json_is_array(prompt) && json_array_size(prompt) == 1)
        prompt = json_array_get(prompt, 0); /* a one-prompt batch */
    const char *text = json_string_value(prompt);
    size_t len = json_string_length(prompt);
    int n = 0;
    int32_t *ids = NULL;
    if (!json_is_string(prompt))
        hy_http_error(req, 400, "invalid_parameter", "prompt: a string is required");
    else if (hy_utf8_validate(text, len) != len)
        hy_http_error(req, 400, "invalid_utf8", "prompt: invalid UTF-8");
    else
        ids = prompt_ids(req, NULL, 0, text, len, &n);
    struct oai *o = ids ? calloc(1, sizeof *o) : NULL;
    if (ids && !o)
        hy_http_error(req, 500, "out_of_memory", "out of memory");
    if (o) {
        o->kind = API_COMPLETION;
        ret = run(req, o, body, ids, n);
    }
    free(ids);
    json_decref(body);
    return ret;
}
