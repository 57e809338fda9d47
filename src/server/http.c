/* http.c: request plumbing on libmicrohttpd: the access handler (body accumulation and
 * limits, routing, auth, CORS), responses (JSON, errors, server-sent events), the client
 * checks and the one log line per request (http.h has the contract). */
#include "server/http.h"

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"

#include <poll.h>
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

static void common_headers(struct hy_http_req *req, struct MHD_Response *r, const char *type)
{
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (req->srv->cfg.cors) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, req->srv->cfg.cors);
        MHD_add_response_header(r, "Vary", "Origin");
    }
}

static enum MHD_Result queue(struct hy_http_req *req, int status, struct MHD_Response *r)
{
    if (!r)
        return MHD_NO; /* out of memory: libmicrohttpd closes the connection */
    req->status = status;
    enum MHD_Result ret = MHD_queue_response(req->conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result hy_http_text(struct hy_http_req *req, int status, const char *type,
                             const void *data, size_t len, bool copy)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)data, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_MUST_FREE);
    if (!r && !copy)
        free((void *)data);
    if (r)
        common_headers(req, r, type);
    if (r && status == 429)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (r && status == 405)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
                                req->route == HY_ROUTE_TRANSLATE || req->route == HY_ROUTE_CHAT ||
                                        req->route == HY_ROUTE_COMPLETIONS
                                    ? "POST, OPTIONS"
                                    : "GET, HEAD, OPTIONS");
    return queue(req, status, r);
}

enum MHD_Result hy_http_json(struct hy_http_req *req, int status, json_t *body)
{
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!s)
        return MHD_NO;
    size_t n = strlen(s);
    return hy_http_text(req, status, "application/json", s, n, false);
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

enum MHD_Result hy_http_error(struct hy_http_req *req, int status, const char *code,
                              const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *e = json_pack("{s:{s:s,s:s,s:s}}", "error", "message", msg, "type", error_type(status),
                          "code", code);
    return e ? hy_http_json(req, status, e) : MHD_NO;
}

static void req_unref(struct hy_http_req *req);

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct hy_http_stream *s = cls;
    (void)pos;
    while (s->pos == s->out.n) {
        if (s->ended)
            return s->req->client_gone ? MHD_CONTENT_READER_END_WITH_ERROR
                                       : MHD_CONTENT_READER_END_OF_STREAM;
        s->out.n = 0;
        s->pos = 0;
        if (!s->produce(s))
            s->ended = true;
    }
    size_t n = s->out.n - s->pos < max ? s->out.n - s->pos : max;
    memcpy(buf, s->out.p + s->pos, n);
    s->pos += n;
    return (ssize_t)n;
}

static void sse_free(void *cls)
{
    struct hy_http_stream *s = cls;
    struct hy_http_req *req = s->req;
    req->stream = NULL;
    hy_http_buf_free(&s->out);
    s->destroy(s);
    req_unref(req);
}

enum MHD_Result hy_http_sse(struct hy_http_req *req, struct hy_http_stream *s)
{
    s->req = req;
    req->stream = s;
    req->refs++;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, s, sse_free);
    if (!r) {
        sse_free(s);
        return MHD_NO;
    }
    common_headers(req, r, "text/event-stream; charset=utf-8");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    return queue(req, 200, r);
}

/* ---- request state ---- */

bool hy_http_client_gone(struct hy_http_req *req)
{
    if (req->client_gone)
        return true;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return false;
    struct pollfd p = {ci->connect_fd, POLLRDHUP, 0};
    if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
        req->client_gone = true;
    return req->client_gone;
}

bool hy_http_should_stop(struct hy_http_req *req)
{
    return hy_http_client_gone(req) || atomic_load(&req->srv->aborting) ||
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

json_t *hy_http_body_json(struct hy_http_req *req, enum MHD_Result *ret)
{
    json_t *v = NULL;
    struct hy_err err = {{0}};
    if (hy_json_parse(&v, req->body.p ? req->body.p : "", req->body.n, "request body", &err)) {
        *ret = hy_http_error(req, 400, "invalid_json", "%s", err.msg);
        return NULL;
    }
    if (!json_is_object(v)) {
        *ret = hy_http_error(req, 400, "invalid_json",
                             "the request body must be a JSON object, "
                             "not %s",
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

static void req_unref(struct hy_http_req *req)
{
    if (--req->refs > 0)
        return;
    double dt = hy_clock_now() - req->t0;
    struct hy_server *srv = req->srv;
    hy_metrics_record(&srv->metrics, req->route, req->status, dt, req->tokens_in, req->tokens_out,
                      req->client_gone);
    HY_LOGI("http: %s %s %d %.1f ms tokens %lld+%lld%s", req->method, req->path, req->status,
            dt * 1e3, (long long)req->tokens_in, (long long)req->tokens_out,
            req->client_gone ? " (client went away: cancelled)" : "");
    if (req->active)
        atomic_fetch_sub(&srv->active, 1);
    hy_http_buf_free(&req->body);
    free(req);
}

void hy_http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    struct hy_http_req *req = *con_cls;
    (void)cls;
    (void)c;
    if (!req)
        return;
    *con_cls = NULL;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && toe != MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN)
        req->client_gone = true;
    if (req->status == 0)
        req->status = 499; /* closed before any response (nginx's "client closed request") */
    req_unref(req);
}

/* ---- routing ---- */

struct route {
    const char *path;
    enum hy_route id;
    const char *method; /* GET also answers HEAD */
    bool engine;        /* needs the loaded model (503 before, and while draining) */
    bool auth;          /* needs the API key when one is set */
    enum MHD_Result (*handler)(struct hy_http_req *req);
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
};

static const struct route *find_route(const char *path)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(routes[i].path, path))
            return &routes[i];
    return NULL;
}

static bool authorized(struct hy_http_req *req)
{
    const char *key = req->srv->cfg.api_key;
    if (!key)
        return true;
    const char *h =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7))
        return false;
    h += 7;
    size_t a = strlen(h), b = strlen(key);
    unsigned diff = a != b; /* compare every byte: no early exit on the first mismatch */
    for (size_t i = 0; i < a && i < b; i++)
        diff |= (unsigned char)h[i] ^ (unsigned char)key[i];
    return diff == 0;
}

static enum MHD_Result preflight(struct hy_http_req *req)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    common_headers(req, r, "text/plain");
    MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
    MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    return queue(req, 204, r);
}

static enum MHD_Result dispatch(struct hy_http_req *req)
{
    const struct route *rt = find_route(req->path);
    if (!rt)
        return hy_http_error(req, 404, "not_found", "no route %s %s", req->method, req->path);
    req->route = rt->id;
    if (!strcmp(req->method, "OPTIONS"))
        return preflight(req);
    bool head = !strcmp(req->method, "HEAD") && !strcmp(rt->method, "GET");
    if (strcmp(req->method, rt->method) && !head)
        return hy_http_error(req, 405, "method_not_allowed", "%s takes %s, not %s", rt->path,
                             rt->method, req->method);
    if (req->too_big)
        return hy_http_error(req, 413, "request_too_large",
                             "the request body is larger than the %zu-byte limit",
                             req->srv->cfg.max_body);
    if (rt->auth && !authorized(req))
        return hy_http_error(req, 401, "invalid_api_key",
                             "a valid API key is required (Authorization: Bearer KEY)");
    if (rt->engine && atomic_load(&req->srv->draining))
        return hy_http_error(req, 503, "shutting_down", "the server is shutting down");
    if (rt->engine && !atomic_load(&req->srv->ready))
        return hy_http_error(req, 503, "not_ready", "the model is still loading");
    return rt->handler(req);
}

static struct hy_http_req *req_new(struct hy_server *srv, struct MHD_Connection *c, const char *url,
                                   const char *method)
{
    struct hy_http_req *req = calloc(1, sizeof *req);
    if (!req)
        return NULL;
    req->srv = srv;
    req->conn = c;
    req->route = HY_ROUTE_OTHER;
    req->refs = 1;
    req->t0 = hy_clock_now();
    if (srv->cfg.timeout_s > 0)
        req->deadline = req->t0 + srv->cfg.timeout_s;
    snprintf(req->method, sizeof req->method, "%s", method);
    const char *q = strchr(url, '?'); /* libmicrohttpd strips the query; be safe anyway */
    snprintf(req->path, sizeof req->path, "%.*s", (int)(q ? (size_t)(q - url) : strlen(url)), url);
    return req;
}

enum MHD_Result hy_http_access(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    struct hy_server *srv = cls;
    struct hy_http_req *req = *con_cls;
    (void)version;
    if (!req) {
        if (!(req = req_new(srv, c, url, method)))
            return MHD_NO;
        *con_cls = req;
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > srv->cfg.max_body) {
            req->too_big = true; /* answered at once: the body is never read */
            return hy_http_error(req, 413, "request_too_large",
                                 "the request body is larger than the %zu-byte limit",
                                 srv->cfg.max_body);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!req->too_big && req->body.n + *upload_size > srv->cfg.max_body) {
            req->too_big = true;
            hy_http_buf_free(&req->body);
        }
        if (!req->too_big && !hy_http_buf_add(&req->body, upload, *upload_size))
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    if (req->status) /* already answered (early 413) */
        return MHD_YES;
    return dispatch(req);
}
