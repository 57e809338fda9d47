/* http.h: internals shared by the server's files: the server object, one request's
 * context, responses (JSON, errors, server-sent events) and the route handlers.
 * A request context lives from the first call of the access handler until both the
 * request-completed callback and (for a stream) the response's free callback have run;
 * it is used by its connection's thread only. Response helpers queue the response and
 * return the MHD_Result to hand back to libmicrohttpd. */
#ifndef HY_SERVER_HTTP_H
#define HY_SERVER_HTTP_H

#include "server/metrics.h"
#include "server/server.h"
#include "translate/prompt.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_HTTP_WAIT_S 0.25 /* longest blocking wait before checking the client and drain */

struct hy_server {
    struct hy_server_config cfg;
    struct MHD_Daemon *daemon;
    int port;
    struct hy_engine *engine; /* set once by hy_server_set_engine, then read only */
    const struct hy_tok *tok;
    enum hy_prompt_style style;
    int32_t stop_ids[HY_ENGINE_MAX_STOP];
    int n_stop;
    atomic_bool ready, draining, aborting;
    atomic_int active; /* requests holding engine work */
    atomic_uint_fast64_t next_id;
    struct hy_metrics metrics;
    long long created; /* unix time of start, for /v1/models */
};

/* A growable byte buffer (responses, streamed text). */
struct hy_http_buf {
    char *p;
    size_t n, cap;
};
/* false when out of memory (the buffer is then unchanged). */
bool hy_http_buf_add(struct hy_http_buf *b, const char *s, size_t n);
bool hy_http_buf_printf(struct hy_http_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hy_http_buf_free(struct hy_http_buf *b);

struct hy_http_stream;

struct hy_http_req {
    struct hy_server *srv;
    struct MHD_Connection *conn;
    enum hy_route route;
    char method[16];
    char path[128];
    struct hy_http_buf body;
    bool too_big, got_body;
    double t0;       /* arrival, monotonic clock */
    double deadline; /* monotonic; 0: none */
    int status;
    int64_t tokens_in, tokens_out;
    bool client_gone, ttft_seen, active;
    int refs; /* the request + a streamed response */
    struct hy_http_stream *stream;
};

/* A streamed (text/event-stream) response. produce appends to out and blocks until it has
 * something or the stream ends; it returns false at the end (out may hold a last piece).
 * destroy frees the producer's state (cancelling its engine work) and the stream. */
struct hy_http_stream {
    struct hy_http_req *req;
    struct hy_http_buf out;
    size_t pos;
    bool ended;
    bool (*produce)(struct hy_http_stream *s);
    void (*destroy)(struct hy_http_stream *s);
};

/* Responses: each takes ownership of its body and queues it on req's connection. */
enum MHD_Result hy_http_json(struct hy_http_req *req, int status, json_t *body);
enum MHD_Result hy_http_text(struct hy_http_req *req, int status, const char *type,
                             const void *data, size_t len, bool copy);
/* {"error": {"message", "type", "code"}} with the type and code the status implies. */
enum MHD_Result hy_http_error(struct hy_http_req *req, int status, const char *code,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Starts a server-sent-events response fed by s (ownership passes to the response). */
enum MHD_Result hy_http_sse(struct hy_http_req *req, struct hy_http_stream *s);

/* True when the client closed its connection (checked on the socket, no read). */
bool hy_http_client_gone(struct hy_http_req *req);
/* True when the request should stop: client gone, deadline passed, or shutdown aborting. */
bool hy_http_should_stop(struct hy_http_req *req);
/* Records the first generated token's time once (TTFT histogram). */
void hy_http_first_token(struct hy_http_req *req);
/* Marks the request as holding engine work (drain waits for it); released at completion. */
void hy_http_hold(struct hy_http_req *req);

/* Parses the body as a JSON object; on failure answers 400 and returns NULL with *ret set. */
json_t *hy_http_body_json(struct hy_http_req *req, enum MHD_Result *ret);
/* A fresh id such as "chatcmpl-..." (prefix + 24 hex digits) into buf. */
void hy_http_new_id(struct hy_server *srv, const char *prefix, char *buf, size_t cap);

/* libmicrohttpd callbacks (cls: the server). */
enum MHD_Result hy_http_access(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls);
void hy_http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                       enum MHD_RequestTerminationCode toe);

/* Route handlers (api_*.c), called once the whole body has arrived. */
enum MHD_Result hy_api_translate(struct hy_http_req *req);
enum MHD_Result hy_api_chat(struct hy_http_req *req);
enum MHD_Result hy_api_completions(struct hy_http_req *req);
enum MHD_Result hy_api_models(struct hy_http_req *req);
enum MHD_Result hy_api_health(struct hy_http_req *req);
enum MHD_Result hy_api_ready(struct hy_http_req *req);
enum MHD_Result hy_api_metrics(struct hy_http_req *req);
enum MHD_Result hy_api_page(struct hy_http_req *req);

#endif
