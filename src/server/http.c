/* http.c: the worker side of a request: responses (JSON, errors, server-sent events) as
 * bytes handed to the event loop, the request's state and log line, routing, auth and
 * CORS (http.h has the contract). */
#include "server/http.h"
#include "server/keys.h"

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool hy_http_buf_add(struct hy_http_buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return false;
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return true;
}

bool hy_http_buf_printf(struct hy_http_buf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return false;
    if ((size_t)n < sizeof small)
        return hy_http_buf_add(b, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big)
        return false;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    bool ok = hy_http_buf_add(b, big, (size_t)n);
    free(big);
    return ok;
}

void hy_http_buf_free(struct hy_http_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- responses ---- */

const char *hy_http_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return status >= 500 ? "Server Error" : "Client Error";
    }
}

static void route_allow(const char *path, char *buf, size_t cap);

/* Hands bytes to the loop under the request's lock; end marks the response complete. */
static void send_bytes(struct hy_http_req *req, const char *s, size_t n, bool end)
{
    pthread_mutex_lock(&req->mu);
    bool post = false;
    if (!req->detached) {
        if (n && !hy_http_buf_add(&req->out, s, n))
            req->close = true; /* out of memory: the response is cut, the connection closed */
        req->out_end |= end;
        if (!req->posted) {
            req->posted = post = true;
            atomic_fetch_add(&req->refs, 1); /* the inbox's */
        }
    }
    pthread_mutex_unlock(&req->mu);
    if (post)
        hy_loop_post(req->srv, req);
}

/* The status line and headers; length -1: a streamed body, -2: none (204). */
static void head(struct hy_http_req *req, struct hy_http_buf *b, int status, const char *type,
                 long long length)
{
    struct hy_server *s = req->srv;
    req->status = status;
    req->close = !req->keep_alive || atomic_load(&s->draining) || (length == -1 && req->http10);
    hy_http_buf_printf(b, "HTTP/1.1 %d %s\r\nServer: hymt\r\n", status, hy_http_reason(status));
    if (type)
        hy_http_buf_printf(b, "Content-Type: %s\r\n", type);
    if (length >= 0)
        hy_http_buf_printf(b, "Content-Length: %lld\r\n", length);
    else if (length == -1 && !req->http10)
        hy_http_buf_printf(b, "Transfer-Encoding: chunked\r\n");
    if (req->id[0])
        hy_http_buf_printf(b, "X-Request-Id: %s\r\n", req->id);
    if (req->engine_s > 0)
        hy_http_buf_printf(b, "Server-Timing: engine;dur=%.3f\r\n", req->engine_s * 1e3);
    if (s->cfg.cors)
        hy_http_buf_printf(b,
                           "Access-Control-Allow-Origin: %s\r\nVary: Origin\r\n"
                           "Access-Control-Expose-Headers: X-Request-Id, Server-Timing\r\n",
                           s->cfg.cors);
    if (status == 429 || status == 503)
        hy_http_buf_printf(b, "Retry-After: %d\r\n", req->retry_after > 0 ? req->retry_after : 1);
    if (status == 405) {
        char allow[96];
        route_allow(req->path, allow, sizeof allow);
        hy_http_buf_printf(b, "Allow: %s\r\n", allow);
    }
    hy_http_buf_printf(b, "Connection: %s\r\n", req->close ? "close" : "keep-alive");
}

bool hy_http_text(struct hy_http_req *req, int status, const char *type, const void *data,
                  size_t len)
{
    struct hy_http_buf b = {0};
    head(req, &b, status, type, (long long)len);
    hy_http_buf_add(&b, "\r\n", 2);
    if (!req->head_only)
        hy_http_buf_add(&b, data, len);
    send_bytes(req, b.p, b.n, true);
    hy_http_buf_free(&b);
    return true;
}

bool hy_http_json(struct hy_http_req *req, int status, json_t *body)
{
    char *s = body ? json_dumps(body, HY_HTTP_JSON_FLAGS) : NULL;
    json_decref(body);
    if (!s) {
        static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":"
                                  "\"server_error\",\"code\":\"out_of_memory\"}}";
        return hy_http_text(req, 500, "application/json", oom, sizeof oom - 1);
    }
    hy_http_text(req, status, "application/json", s, strlen(s));
    free(s);
    return true;
}

static const char *error_type(int status)
{
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable_error";
    case 504: return "timeout_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

void hy_http_error_body(struct hy_http_buf *b, int status, const char *code, const char *msg)
{
    json_t *e = json_pack("{s:{s:s,s:s,s:s}}", "error", "message", msg, "type",
                          error_type(status), "code", code);
    char *s = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    if (s)
        hy_http_buf_add(b, s, strlen(s));
    else
        hy_http_buf_printf(b, "{\"error\":{\"message\":\"out of memory\",\"type\":\"%s\","
                              "\"code\":\"%s\"}}", error_type(status), code);
    free(s);
}

/* {"error": msg} (LibreTranslate) or {"message": msg} (DeepL). */
static void compat_error_body(struct hy_http_buf *b, const char *key, const char *msg)
{
    json_t *e = json_pack("{s:s}", key, msg);
    char *s = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    hy_http_buf_printf(b, "%s", s ? s : "{\"error\":\"out of memory\"}");
    free(s);
}

bool hy_http_error(struct hy_http_req *req, int status, const char *code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct hy_http_buf b = {0};
    if (req->errors != HY_HTTP_ERRORS_OPENAI && status == 401)
        status = 403; /* both services answer a missing or wrong key with 403 */
    if (req->errors == HY_HTTP_ERRORS_LIBRE)
        compat_error_body(&b, "error", msg);
    else if (req->errors == HY_HTTP_ERRORS_DEEPL)
        compat_error_body(&b, "message", msg);
    else
        hy_http_error_body(&b, status, code, msg);
    hy_http_text(req, status, "application/json", b.p ? b.p : "", b.n);
    hy_http_buf_free(&b);
    return true;
}

void hy_http_sse_begin(struct hy_http_req *req)
{
    struct hy_http_buf b = {0};
    head(req, &b, 200, "text/event-stream; charset=utf-8", -1);
    hy_http_buf_printf(&b, "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n\r\n");
    pthread_mutex_lock(&req->mu);
    req->chunked = !req->http10;
    req->streaming = true;
    pthread_mutex_unlock(&req->mu);
    send_bytes(req, b.p, b.n, false);
    hy_http_buf_free(&b);
}

void hy_http_sse_send(struct hy_http_req *req, const char *s, size_t n, bool end)
{
    if (!req->chunked) {
        send_bytes(req, s, n, end);
        return;
    }
    struct hy_http_buf b = {0};
    if (n) {
        hy_http_buf_printf(&b, "%zx\r\n", n);
        hy_http_buf_add(&b, s, n);
        hy_http_buf_add(&b, "\r\n", 2);
    }
    if (end)
        hy_http_buf_add(&b, "0\r\n\r\n", 5);
    send_bytes(req, b.p, b.n, end);
    hy_http_buf_free(&b);
}

/* ---- request state ---- */

bool hy_http_should_stop(struct hy_http_req *req)
{
    return atomic_load(&req->client_gone) || atomic_load(&req->srv->aborting) ||
           (req->deadline > 0 && hy_clock_now() > req->deadline);
}

void hy_http_first_token(struct hy_http_req *req)
{
    if (!req->ttft_seen) {
        req->ttft_seen = true;
        hy_metrics_ttft(&req->srv->metrics, hy_clock_now() - req->t0);
    }
}

void hy_http_hold(struct hy_http_req *req)
{
    if (!req->active) {
        req->active = true;
        atomic_fetch_add(&req->srv->active, 1);
    }
}

void hy_http_notify(void *ctx)
{
    struct hy_http_req *req = ctx;
    hy_work_schedule(req->srv->work, req);
}

json_t *hy_http_body_json(struct hy_http_req *req)
{
    json_t *v = NULL;
    struct hy_err err = {{0}};
    if (hy_json_parse(&v, req->body.p ? req->body.p : "", req->body.n, "request body", &err)) {
        hy_http_error(req, 400, "invalid_json", "%s", err.msg);
        return NULL;
    }
    if (!json_is_object(v)) {
        hy_http_error(req, 400, "invalid_json", "the request body must be a JSON object, not %s",
                      hy_json_type_name(v));
        json_decref(v);
        return NULL;
    }
    return v;
}

void hy_http_new_id(struct hy_server *srv, const char *prefix, char *buf, size_t cap)
{
    uint64_t n = atomic_fetch_add(&srv->next_id, 1);
    uint64_t x = n * 0x9E3779B97F4A7C15ull ^ (uint64_t)srv->created;
    snprintf(buf, cap, "%s%08llx%016llx", prefix, (unsigned long long)(n & 0xffffffffu),
             (unsigned long long)x);
}

void hy_http_request_id(struct hy_server *srv, const char *v, size_t n, char *out)
{
    bool ok = v && n >= 1 && n <= HY_HTTP_REQUEST_ID_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = v[i] >= 0x21 && v[i] <= 0x7e;
    if (ok) {
        memcpy(out, v, n);
        out[n] = '\0';
    } else { /* splitmix64 of a counter: distinct, and not mostly zeros like new_id's first */
        uint64_t z = atomic_fetch_add(&srv->next_id, 1) +
                     (uint64_t)srv->created * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        snprintf(out, HY_HTTP_REQUEST_ID_MAX + 1, "%016llx%08llx", (unsigned long long)z,
                 (unsigned long long)(z * 0x9E3779B97F4A7C15ull >> 32));
    }
}

json_t *hy_http_ms(double seconds)
{
    return json_real(round(seconds * 1e4) / 10);
}

void hy_http_log_escape(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f || c == '\\' || c == '"')
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    if (cap)
        out[o < cap ? o : cap - 1] = '\0';
}

/* The request's one log line. Text: the human line plus request_id=; JSON: every value
 * also as its own field. Method and path are escaped either way (no forged lines). */
static void log_request(const struct hy_http_req *req, double dt, bool gone)
{
    char m[80], p[600], st[16], ms[32], in[24], out[24];
    hy_http_log_escape(req->method, strlen(req->method), m, sizeof m);
    hy_http_log_escape(req->path, strlen(req->path), p, sizeof p);
    snprintf(st, sizeof st, "%d", req->status);
    snprintf(ms, sizeof ms, "%.1f", dt * 1e3);
    snprintf(in, sizeof in, "%lld", (long long)req->tokens_in);
    snprintf(out, sizeof out, "%lld", (long long)req->tokens_out);
    bool json = hy_log_get_format() == HY_LOG_JSON;
    const struct hy_log_field f[] = {
        {"request_id", req->id},         {"method", json ? m : NULL},
        {"path", json ? p : NULL},       {"status", json ? st : NULL},
        {"ms", json ? ms : NULL},        {"tokens_in", json ? in : NULL},
        {"tokens_out", json ? out : NULL}, {"client_gone", json && gone ? "true" : NULL},
        {"key", req->key_name},
    };
    hy_log_fields(HY_LOG_INFO, f, (int)(sizeof f / sizeof f[0]),
                  "http: %s %s %s %s ms tokens %s+%s%s", m, p, st, ms, in, out,
                  gone ? " (client went away: cancelled)" : "");
}

void hy_http_req_unref(struct hy_http_req *req)
{
    if (atomic_fetch_sub(&req->refs, 1) != 1)
        return;
    struct hy_server *srv = req->srv;
    double dt = hy_clock_now() - req->t0;
    bool gone = atomic_load(&req->client_gone);
    if (req->status == 0)
        req->status = 499; /* closed before any response (nginx's "client closed request") */
    hy_metrics_record(&srv->metrics, req->route, req->status, dt, req->tokens_in,
                      req->tokens_out, gone);
    log_request(req, dt, gone);
    if (req->active && atomic_fetch_sub(&srv->active, 1) == 1) {
        pthread_mutex_lock(&srv->idle_mu);
        pthread_cond_broadcast(&srv->idle_cv);
        pthread_mutex_unlock(&srv->idle_mu);
    }
    hy_http_buf_free(&req->body);
    hy_http_buf_free(&req->out);
    pthread_mutex_destroy(&req->mu);
    free(req->auth);
    free(req->ctype);
    free(req->query);
    free(req);
}

/* ---- routing ---- */

struct route {
    const char *path;
    enum hy_route id;
    const char *method; /* GET also answers HEAD */
    bool engine;        /* needs the loaded model (503 before, and while draining) */
    bool auth;          /* needs the API key when one is set */
    bool (*handler)(struct hy_http_req *req);
};

static const struct route routes[] = {
    {"/", HY_ROUTE_PAGE, "GET", false, false, hy_api_page},
    {"/index.html", HY_ROUTE_PAGE, "GET", false, false, hy_api_page},
    {"/api/translate", HY_ROUTE_TRANSLATE, "POST", true, true, hy_api_translate},
    {"/v1/chat/completions", HY_ROUTE_CHAT, "POST", true, true, hy_api_chat},
    {"/v1/completions", HY_ROUTE_COMPLETIONS, "POST", true, true, hy_api_completions},
    {"/v1/models", HY_ROUTE_MODELS, "GET", false, true, hy_api_models},
    {"/health", HY_ROUTE_HEALTH, "GET", false, false, hy_api_health},
    {"/ready", HY_ROUTE_READY, "GET", false, false, hy_api_ready},
    {"/metrics", HY_ROUTE_METRICS, "GET", false, false, hy_api_metrics},
    {"/tokenize", HY_ROUTE_TOKENIZE, "POST", true, true, hy_api_tokenize},
    {"/detokenize", HY_ROUTE_DETOKENIZE, "POST", true, true, hy_api_detokenize},
    /* LibreTranslate's: the key may come in the body (api_key), so the handler checks it */
    {"/translate", HY_ROUTE_LIBRE_TRANSLATE, "POST", true, false, hy_api_libre_translate},
    {"/languages", HY_ROUTE_LIBRE_LANGUAGES, "GET", false, false, hy_api_libre_languages},
    {"/v2/translate", HY_ROUTE_DEEPL_TRANSLATE, "POST", true, true, hy_api_deepl_translate},
    {"/v2/languages", HY_ROUTE_DEEPL_LANGUAGES, "GET", false, true, hy_api_deepl_languages},
    {"/openapi.json", HY_ROUTE_OPENAPI, "GET", false, false, hy_api_openapi},
    {"/v1/documents", HY_ROUTE_DOCUMENTS, "POST", true, true, hy_api_documents_post},
    /* a {name} part matches one non-empty path segment */
    {"/v1/documents/{id}", HY_ROUTE_DOCUMENTS, "GET", false, true, hy_api_documents_get},
    /* language detection needs no model; the key may come in the body (api_key) */
    {"/detect", HY_ROUTE_DETECT, "POST", false, false, hy_api_detect},
    /* several methods on a path: one entry each */
    {"/v1/glossaries", HY_ROUTE_GLOSSARIES, "GET", false, true, hy_api_glossary_list},
    {"/v1/glossaries", HY_ROUTE_GLOSSARIES, "POST", false, true, hy_api_glossary_create},
    {"/v1/glossaries/{id}", HY_ROUTE_GLOSSARIES, "GET", false, true, hy_api_glossary_get},
    {"/v1/glossaries/{id}", HY_ROUTE_GLOSSARIES, "DELETE", false, true, hy_api_glossary_delete},
};

const char *hy_server_route(size_t i, const char **method)
{
    if (i >= sizeof routes / sizeof routes[0])
        return NULL;
    *method = routes[i].method;
    return routes[i].path;
}

/* The error shape of a route's answers (every refusal before the handler included). */
static enum hy_http_errors errors_of(enum hy_route r)
{
    switch (r) {
    case HY_ROUTE_LIBRE_TRANSLATE:
    case HY_ROUTE_LIBRE_LANGUAGES:
    case HY_ROUTE_DETECT: return HY_HTTP_ERRORS_LIBRE;
    case HY_ROUTE_DEEPL_TRANSLATE:
    case HY_ROUTE_DEEPL_LANGUAGES: return HY_HTTP_ERRORS_DEEPL;
    default: return HY_HTTP_ERRORS_OPENAI;
    }
}

/* path matches pattern: equal, or equal up to a trailing "{name}" that stands for one
 * non-empty segment (no '/'). */
static bool path_match(const char *pattern, const char *path)
{
    const char *brace = strchr(pattern, '{');
    if (!brace)
        return !strcmp(pattern, path);
    size_t n = (size_t)(brace - pattern);
    return !strncmp(pattern, path, n) && path[n] && !strchr(path + n, '/');
}

/* The route for path and method (GET's for HEAD); a path with other methods only: its
 * first route (the caller answers 405); NULL: no route has the path. */
static const struct route *find_route(const char *path, const char *method)
{
    const struct route *first = NULL;
    bool head = method && !strcmp(method, "HEAD");
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (!path_match(routes[i].path, path))
            continue;
        if (method && (!strcmp(routes[i].method, method) ||
                       (head && !strcmp(routes[i].method, "GET"))))
            return &routes[i];
        first = first ? first : &routes[i];
    }
    return first;
}

/* h equals key; every byte compared (no early exit on a mismatch). */
static bool key_equal(const char *h, const char *key)
{
    size_t a = strlen(h), b = strlen(key);
    unsigned diff = a != b; /* compare every byte: no early exit on the first mismatch */
    for (size_t i = 0; i < a && i < b; i++)
        diff |= (unsigned char)h[i] ^ (unsigned char)key[i];
    return diff == 0;
}

/* The key a request presents: "Bearer KEY" or "DeepL-Auth-Key KEY" (DeepL's clients send
 * this) in its Authorization header, else body_key (NULL: none). */
static const char *presented_key(const struct hy_http_req *req, const char *body_key)
{
    const char *h = req->auth;
    if (h && !strncasecmp(h, "Bearer ", 7))
        return h + 7;
    if (h && !strncasecmp(h, "DeepL-Auth-Key ", 15))
        return h + 15;
    return body_key;
}

bool hy_http_authorize(struct hy_http_req *req, const char *key, int status, const char *code,
                       const char *msg)
{
    struct hy_keys *keys = req->srv->keys;
    if (!keys)
        return true;
    const char *k = presented_key(req, key), *name = NULL, *rate = "";
    int retry = 1;
    double now = hy_clock_now();
    enum hy_keys_verdict v = hy_keys_check(keys, k, now, &name, &retry, &rate);
    if (v == HY_KEYS_UNKNOWN && key && k != key) /* the header's is none of ours */
        v = hy_keys_check(keys, key, now, &name, &retry, &rate);
    switch (v) {
    case HY_KEYS_OK:
        req->key_name = name;
        return true;
    case HY_KEYS_LIMITED:
        req->key_name = name;
        req->retry_after = retry;
        hy_http_error(req, 429, "rate_limited",
                      "the API key %s is over its limit of %s requests; retry in %d s", name,
                      rate, retry);
        return false;
    case HY_KEYS_UNKNOWN: break;
    }
    hy_http_error(req, status, code, "%s", msg);
    return false;
}

/* /metrics behind its own key: true when it may go on, else its 401 is sent. */
static bool metrics_authorized(struct hy_http_req *req)
{
    const char *want = req->srv->cfg.metrics_key, *h = req->auth;
    if (!want || (h && !strncasecmp(h, "Bearer ", 7) && key_equal(h + 7, want)))
        return true;
    hy_http_error(req, 401, "invalid_api_key",
                  "/metrics requires its key (Authorization: Bearer KEY)");
    return false;
}

/* The methods the routes at path take, for the 405 answer's Allow header. */
static void route_allow(const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (path_match(routes[i].path, path)) {
            size_t n = strlen(buf);
            snprintf(buf + n, cap - n, "%s%s", routes[i].method,
                     strcmp(routes[i].method, "GET") ? ", " : ", HEAD, ");
        }
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "OPTIONS");
}

static bool preflight(struct hy_http_req *req)
{
    struct hy_http_buf b = {0};
    head(req, &b, 204, NULL, -2);
    hy_http_buf_printf(&b, "Access-Control-Allow-Methods: GET, POST, DELETE, OPTIONS\r\n"
                           "Access-Control-Allow-Headers: Authorization, Content-Type, X-Request-Id\r\n"
                           "Access-Control-Max-Age: 600\r\n\r\n");
    send_bytes(req, b.p, b.n, true);
    hy_http_buf_free(&b);
    return true;
}

bool hy_http_dispatch(struct hy_http_req *req)
{
    const struct route *rt = find_route(req->path, req->method);
    if (!rt)
        return hy_http_error(req, 404, "not_found", "no route %s %s", req->method, req->path);
    req->route = rt->id;
    req->errors = errors_of(rt->id);
    if (!strcmp(req->method, "OPTIONS"))
        return preflight(req);
    req->head_only = !strcmp(req->method, "HEAD") && !strcmp(rt->method, "GET");
    if (strcmp(req->method, rt->method) && !req->head_only)
        return hy_http_error(req, 405, "method_not_allowed", "%s takes %s, not %s", rt->path,
                             rt->method, req->method);
    if (rt->id == HY_ROUTE_METRICS && !metrics_authorized(req))
        return true;
    if (rt->auth && !hy_http_authorize(req, NULL, 401, "invalid_api_key",
                                       "a valid API key is required (Authorization: Bearer KEY)"))
        return true;
    if (rt->engine && atomic_load(&req->srv->draining))
        return hy_http_error(req, 503, "shutting_down", "the server is shutting down");
    if (rt->engine && !atomic_load(&req->srv->ready))
        return hy_http_error(req, 503, "not_ready", "the model is still loading");
    const struct hy_server_config *c = &req->srv->cfg;
    char why[256];
    if (rt->engine && c->available && rt->id != HY_ROUTE_TOKENIZE &&
        rt->id != HY_ROUTE_DETOKENIZE && !c->available(c->hooks_ctx, why, sizeof why))
        return hy_http_error(req, 503, "queue_unavailable", "%s; retry later", why);
    return rt->handler(req);
}
