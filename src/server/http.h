/* http.h: internals shared by the server's files: the server object, one request, the
 * response helpers, the worker pool and the event loop's hand-off.
 * Threads: one event-loop thread (loop.c) owns every socket and the connection table; a
 * fixed pool of workers (work.c) runs the route handlers (JSON, tokenization,
 * detokenization); the engine thread wakes a request's worker through its notify hook.
 * A request is run by at most one worker at a time: hy_work_schedule queues it (or marks
 * it to run again); its `pump` runs until it returns true (finished: the engine work is
 * released and the whole response sent). Workers hand response bytes to the loop with
 * hy_http_send (a mutex per request, an eventfd to wake the loop); nothing blocks on the
 * network or on the engine.
 * Life of a request: created by the loop when its head and body are in (two references:
 * the connection's and the worker's), freed when the response is out (or the client gone)
 * and its worker finished; then its log line and metrics are written. */
#ifndef HY_SERVER_HTTP_H
#define HY_SERVER_HTTP_H

#include "server/metrics.h"
#include "server/server.h"
#include "translate/prompt_detect.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hy_keys;
struct hy_loop;
struct hy_work;

/* A request id: the client's X-Request-Id when it is 1..HY_HTTP_REQUEST_ID_MAX bytes of
 * visible ASCII (0x21-0x7e), else a generated one (24 hex digits). It is on the request's
 * log line and in every response's X-Request-Id header. */
#define HY_HTTP_REQUEST_ID_MAX 128
/* jansson dump flags for responses: 15 significant digits, so a value rounded to 0.1
 * (hy_http_ms) prints as such ("12.3", not "12.300000000000001"). */
#define HY_HTTP_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

struct hy_server {
    struct hy_server_config cfg;
    int port;
    struct hy_engine *engine; /* set once by hy_server_set_engine, then read only */
    const struct hy_tok *tok;
    struct hy_engine *chimera;        /* --chimera: the fusion engine, or NULL (set before
                                       * ready, then read only) */
    const struct hy_tok *chimera_tok; /* ... its tokenizer */
    struct hy_prompt_profile prompt; /* chat format, generation, sampling defaults */
    int32_t stop_ids[HY_ENGINE_MAX_STOP];
    int n_stop;
    atomic_bool ready, draining, aborting;
    atomic_int active; /* requests holding engine work */
    atomic_uint_fast64_t next_id;
    struct hy_metrics metrics;
    struct hy_keys *keys; /* API keys (keys.h); NULL: none required */
    long long created; /* unix time of start, for /v1/models */
    struct hy_loop *loop;
    struct hy_work *work;
    pthread_mutex_t idle_mu; /* drain waits on idle_cv for active == 0 */
    pthread_cond_t idle_cv;
    struct hy_docs *docs; /* POST /v1/documents (api_documents.c) */
};

/* A growable byte buffer (bodies, responses, streamed text). */
struct hy_http_buf {
    char *p;
    size_t n, cap;
};
/* false when out of memory (the buffer is then unchanged). */
bool hy_http_buf_add(struct hy_http_buf *b, const char *s, size_t n);
bool hy_http_buf_printf(struct hy_http_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hy_http_buf_free(struct hy_http_buf *b);

enum hy_work_state { HY_W_IDLE, HY_W_QUEUED, HY_W_RUNNING, HY_W_AGAIN, HY_W_DONE };

/* The shape of error bodies: OpenAI's {"error": {message, type, code}} (every native
 * route), LibreTranslate's {"error": "message"}, DeepL's {"message": "message"}; the two
 * compatible ones also answer 401 as 403, as those services do. */
enum hy_http_errors { HY_HTTP_ERRORS_OPENAI, HY_HTTP_ERRORS_LIBRE, HY_HTTP_ERRORS_DEEPL };

struct hy_http_req {
    struct hy_server *srv;
    atomic_int refs;
    enum hy_route route;
    char method[16];
    char path[256];   /* percent-decoded, checked; longer paths match no route */
    char *auth;       /* the Authorization header's value, or NULL */
    char *ctype;      /* the Content-Type header's value, or NULL */
    char *query;      /* the target's query string (after '?', still encoded), or NULL */
    enum hy_http_errors errors; /* the route's error shape */
    const char *key_name; /* the API key's name once authorized (keys.h), else NULL */
    int retry_after;  /* seconds in Retry-After of a 429/503; 0: 1 */
    char id[HY_HTTP_REQUEST_ID_MAX + 1]; /* the request id (see HY_HTTP_REQUEST_ID_MAX) */
    bool head_only;   /* HEAD: the GET response's head alone */
    bool keep_alive;  /* the client's wish (HTTP version, Connection) */
    bool http10;
    struct hy_http_buf body;
    double t0;        /* arrival (head complete), monotonic clock */
    double deadline;  /* monotonic; 0: none */
    /* The engine's submit -> done time of the request's longest generation (0: none yet),
     * sent as `Server-Timing: engine;dur=MS` on whole responses so that a load generator
     * can tell the front's share of the latency from the engine's. */
    double engine_s;
    int status;
    int64_t tokens_in, tokens_out;
    atomic_bool client_gone;
    atomic_bool retry; /* the loop's sweep schedules it each tick (nothing else will) */
    bool ttft_seen, active;
    /* the handler's: run by a worker until it returns true */
    bool (*pump)(struct hy_http_req *req);
    void *task;
    /* worker pool (under its mutex) */
    enum hy_work_state wstate;
    struct hy_http_req *wnext;
    /* output to the loop (under mu) */
    pthread_mutex_t mu;
    struct hy_http_buf out;
    bool out_end;     /* the response is complete */
    bool posted;      /* in the loop's inbox */
    bool detached;    /* the connection is gone: output is dropped */
    bool close;       /* the response said Connection: close */
    bool chunked;     /* streamed body in chunked framing */
    bool streaming;   /* a server-sent-events response (keep-alive comments) */
    struct hy_http_req *pnext;
    int conn;         /* the loop's connection slot */
};

/* ---- responses (worker side): each sends the whole response and returns true ---- */
bool hy_http_json(struct hy_http_req *req, int status, json_t *body);
bool hy_http_text(struct hy_http_req *req, int status, const char *type, const void *data,
                  size_t len);
/* {"error": {"message", "type", "code"}} with the type the status implies. */
bool hy_http_error(struct hy_http_req *req, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The reason phrase of a status ("Not Found"). */
const char *hy_http_reason(int status);
/* The JSON error body for status/code/msg into buf (the loop's protocol errors too). */
void hy_http_error_body(struct hy_http_buf *b, int status, const char *code, const char *msg);
/* Starts a server-sent-events response (status 200, chunked on HTTP/1.1). */
void hy_http_sse_begin(struct hy_http_req *req);
/* Sends events (whole "data: ...\n\n" pieces); end: the last piece. */
void hy_http_sse_send(struct hy_http_req *req, const char *s, size_t n, bool end);

/* True when the request should stop: client gone, deadline passed, or shutdown aborting. */
bool hy_http_should_stop(struct hy_http_req *req);
/* Records the first generated token's time once (TTFT histogram). */
void hy_http_first_token(struct hy_http_req *req);
/* Marks the request as holding engine work (drain waits for it); released at the end. */
void hy_http_hold(struct hy_http_req *req);
/* The engine's notify hook for a request (ctx: the request): schedules its worker. */
void hy_http_notify(void *ctx);

/* Parses the body as a JSON object; on failure answers 400 and returns NULL. */
json_t *hy_http_body_json(struct hy_http_req *req);
/* The body's fields as a JSON object, from JSON or, with Content-Type
 * application/x-www-form-urlencoded, from the form (every value a string; a repeated name
 * gives an array of strings, in order; a "form" that starts with '{' is JSON, as curl -d
 * sends it). On failure answers 400 (415 for another form
 * encoding such as multipart) and returns NULL. */
json_t *hy_http_body_params(struct hy_http_req *req);
/* An application/x-www-form-urlencoded string (a body or a query) as a JSON object as
 * above: '+' is a space, %XX a byte; every name and value must be UTF-8 without NUL, at
 * most HY_HTTP_FORM_MAX_FIELDS fields. NULL with the reason in err (HY_E_INVAL). */
#define HY_HTTP_FORM_MAX_FIELDS 1024
json_t *hy_http_form_parse(const char *s, size_t n, struct hy_err *err);
/* The API key check (when --api-key or --api-keys-file is set): the key in the
 * Authorization header as "Bearer KEY" or "DeepL-Auth-Key KEY", else `key` (a
 * LibreTranslate body's api_key; NULL: none). True: go on (req->key_name is the key's
 * name). False: the answer is sent: 429 rate_limited with Retry-After for a key over its
 * rate, else status/code/msg (the route's own refusal). keys.h compares in constant time. */
bool hy_http_authorize(struct hy_http_req *req, const char *key, int status, const char *code,
                       const char *msg);
/* A fresh id such as "chatcmpl-..." (prefix + 24 hex digits) into buf. */
void hy_http_new_id(struct hy_server *srv, const char *prefix, char *buf, size_t cap);
/* The request id from an X-Request-Id value (v, n bytes; v NULL: none) into
 * out[HY_HTTP_REQUEST_ID_MAX + 1]: v when valid, else a generated one. */
void hy_http_request_id(struct hy_server *srv, const char *v, size_t n, char *out);
/* Seconds as milliseconds rounded to 0.1 ms (a JSON real; dump with HY_HTTP_JSON_FLAGS). */
json_t *hy_http_ms(double seconds);

/* The first run of every request: routing, methods, auth, readiness, then the handler. */
bool hy_http_dispatch(struct hy_http_req *req);
/* Drops a reference; the last one writes the log line and the metrics and frees. */
void hy_http_req_unref(struct hy_http_req *req);
/* Copies s into out (cap bytes, NUL-terminated) with control characters, backslashes,
 * quotes and bytes >= 0x80 escaped as \xNN: a log field that cannot forge a line. */
void hy_http_log_escape(const char *s, size_t n, char *out, size_t cap);

/* ---- worker pool (work.c) ---- */
hy_status hy_work_create(struct hy_work **out, int n_threads, struct hy_err *err);
/* Runs req's pump on a worker soon (once more if it is running now); a finished request is
 * left alone. Any thread, the engine's notify hook included. */
void hy_work_schedule(struct hy_work *w, struct hy_http_req *req);
/* Runs what is queued, then stops and joins the workers. Accepts NULL. */
void hy_work_destroy(struct hy_work *w);

/* ---- event loop (loop.c; its start-up in listen.c) ---- */
/* Creates the loop: the TLS context when cfg.tls_cert is set (its errors come first), the
 * connection table, the listening socket, the thread. */
hy_status hy_loop_create(struct hy_server *s, struct hy_err *err);
/* A non-blocking listening socket on cfg's host and port; *port: the port bound. */
hy_status hy_loop_listen(const struct hy_server_config *cfg, int *fd, int *port,
                         struct hy_err *err);
/* Raises the open-file limit to what n_conns connections need (up to the hard limit). */
void hy_loop_raise_nofile(int n_conns);
/* Hands the bytes the worker queued on req to its connection (wakes the loop). */
void hy_loop_post(struct hy_server *s, struct hy_http_req *req);
/* Starts the drain (from any thread): the loop takes the connections still in the
 * listening socket's backlog, closes the listening socket and idle keep-alive connections,
 * and gives connections that have not sent their first request LOOP_DRAIN_FRESH_S to send
 * it (a request that needs the engine then gets 503). */
void hy_loop_drain(struct hy_server *s);
/* After hy_loop_drain: the connections whose request is still arriving (a first request
 * included), or -1 while the loop has not run the drain yet. */
int hy_loop_drain_fresh(struct hy_server *s);
/* Wakes every request still running (the abort after the drain limit). */
void hy_loop_kick_all(struct hy_server *s);
/* Stops the loop thread, closes every connection, frees the loop. */
void hy_loop_destroy(struct hy_server *s);

/* Route handlers (api_*.c), run on a worker once the whole body has arrived; each returns
 * true when finished, or sets req->pump and returns false. */
bool hy_api_translate(struct hy_http_req *req);
/* /api/translate with "format": "docx" (api_docx.c), body parsed (borrowed). */
bool hy_api_translate_docx(struct hy_http_req *req, json_t *body);
bool hy_api_chat(struct hy_http_req *req);
bool hy_api_completions(struct hy_http_req *req);
bool hy_api_models(struct hy_http_req *req);
bool hy_api_health(struct hy_http_req *req);
bool hy_api_ready(struct hy_http_req *req);
bool hy_api_metrics(struct hy_http_req *req);
bool hy_api_page(struct hy_http_req *req);
bool hy_api_tokenize(struct hy_http_req *req);
bool hy_api_detokenize(struct hy_http_req *req);
bool hy_api_libre_translate(struct hy_http_req *req);
bool hy_api_libre_languages(struct hy_http_req *req);
bool hy_api_deepl_translate(struct hy_http_req *req);
bool hy_api_deepl_languages(struct hy_http_req *req);
bool hy_api_openapi(struct hy_http_req *req);
bool hy_api_glossary_list(struct hy_http_req *req);
bool hy_api_glossary_create(struct hy_http_req *req);
bool hy_api_glossary_get(struct hy_http_req *req);
bool hy_api_glossary_delete(struct hy_http_req *req);
bool hy_api_documents_post(struct hy_http_req *req);
bool hy_api_documents_get(struct hy_http_req *req);
bool hy_api_detect(struct hy_http_req *req);

/* ---- documents as jobs (api_documents.c): their table and threads ---- */
struct hy_docs;
hy_status hy_docs_create(struct hy_docs **out, struct hy_server *s, struct hy_err *err);
/* After the server's workers stopped (aborting set): running documents stop. */
void hy_docs_destroy(struct hy_docs *d);

#endif
