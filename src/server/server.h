/* server.h: the HTTP server of `hymt serve`: the translation API, the OpenAI-compatible
 * API, health/readiness/metrics and the embedded web page, all on one shared engine.
 * Threads: one event-loop thread (epoll) owns every connection; a fixed pool of workers
 * runs the handlers (JSON, tokenization, detokenization); the engine wakes a request's
 * worker through its notify hook when it has tokens for it. No thread per connection or
 * per stream, nothing polls. A client that goes away cancels its work.
 * Memory: the connection table and its head buffers are allocated at create
 * (max_connections x 16 KiB); per request, a body bounded by max_body and a response
 * bounded by the request's own limits (max_chars, max_tokens).
 * Hostile clients: a request head must arrive within header_timeout_s, a body within
 * body_timeout_s, an idle keep-alive connection closes after idle_timeout_s; one address
 * holds at most max_per_client connections; when the table is full, the connection that
 * waits longest for a request head makes room. The parser is strict (http_parse.h) and
 * every refusal, protocol-level ones included, is a JSON error.
 * Life cycle: create (listens at once; /health answers, /ready is 503) -> set_engine
 * (ready) -> [the caller waits for a signal] -> drain -> destroy. The server handles no
 * signals itself: the caller blocks them before create so every server thread inherits
 * the mask.
 * TLS (tls_cert): the handshake runs in the loop without blocking, under the head deadline
 * (header_timeout_s from its first byte to the request head's end); plain HTTP sent to
 * the TLS port gets a 400 in plain HTTP, a failed handshake one log line.
 * Errors: create fails with HY_E_IO when the address cannot be bound, and with one line
 * naming the flag and file when the certificate or key cannot be used. */
#ifndef HY_SERVER_SERVER_H
#define HY_SERVER_SERVER_H

#include "core/status.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"
#include "translate/glossary_store.h"
#include "translate/tm.h"
#include "translate/prompt_detect.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define HY_SERVER_MAX_BODY_DEFAULT (1u << 20) /* bytes of one request body */
#define HY_SERVER_MAX_CHARS_DEFAULT 20000     /* characters of text to translate */
#define HY_SERVER_MAX_CONNECTIONS 1024        /* the connection table's size */
#define HY_SERVER_HEADER_TIMEOUT_S 10.0       /* a request head must arrive within this */
#define HY_SERVER_BODY_TIMEOUT_S 30.0         /* a request body must arrive within this */
#define HY_SERVER_IDLE_TIMEOUT_S 30.0         /* idle keep-alive connections close after */

struct hy_server_config {
    const char *host;       /* address to bind, "127.0.0.1" by default */
    int port;               /* 0: any free port (hy_server_port says which) */
    size_t max_body;        /* 413 above this many bytes */
    size_t max_chars;       /* 413 for a text longer than this (Unicode characters) */
    double timeout_s;       /* per request; 504 past it; 0: none */
    double drain_s;         /* at shutdown, wait this long for running requests */
    const char *api_key;    /* required as "Authorization: Bearer KEY" when set */
    const char *tls_cert;   /* PEM certificate (chain): HTTPS only when set, with tls_key */
    const char *tls_key;    /* PEM private key of tls_cert, unencrypted */
    const char *api_keys_file; /* named keys with rate limits (keys.h); with api_key too */
    const char *metrics_key;   /* /metrics requires "Authorization: Bearer KEY" when set */
    const char *cors;       /* Access-Control-Allow-Origin value when set */
    const char *model_name; /* the id /v1/models lists and responses carry */
    bool demo;              /* random-weight demo model: say so everywhere */
    int max_connections;    /* 0: HY_SERVER_MAX_CONNECTIONS */
    int max_per_client;     /* connections from one address; 0: 3/4 of max_connections */
    int workers;            /* handler threads; 0: the online CPUs, 2..16 */
    double header_timeout_s; /* 0: HY_SERVER_HEADER_TIMEOUT_S; past it 408 */
    double body_timeout_s;   /* 0: HY_SERVER_BODY_TIMEOUT_S; past it 408 */
    double idle_timeout_s;   /* 0: HY_SERVER_IDLE_TIMEOUT_S; also a quiet stream gets an SSE
                              * comment every half of it (15 s at most) */
    /* Optional, for a front end whose engine runs elsewhere (serve --queue): lines added to
     * /metrics, and whether generation is possible now (false: the generation routes and
     * /ready answer 503 with why). Called from the server's workers; ctx is hooks_ctx. */
    void (*metrics_extra)(void *ctx, FILE *f);
    bool (*available)(void *ctx, char *why, size_t cap);
    void *hooks_ctx;
    struct hy_tm *tm;        /* translation memory for /api/translate (borrowed); NULL: none */
    const char *tm_model;    /* the model's name in it */
    struct hy_gstore *glossaries; /* /v1/glossaries and glossary_id (borrowed); NULL: none */
};

struct hy_server;

/* Starts listening. cfg strings are borrowed and must outlive the server. */
hy_status hy_server_create(struct hy_server **out, const struct hy_server_config *cfg,
                           struct hy_err *err);
/* The port actually bound. */
int hy_server_port(const struct hy_server *s);
/* Makes the server ready: requests now reach engine e with tokenizer tok (both borrowed,
 * outliving the server), with the prompts and sampling defaults of *prompt (copied; NULL:
 * what the tokenizer alone suggests, prompt_detect.h). Once only. */
hy_status hy_server_set_engine(struct hy_server *s, struct hy_engine *e, const struct hy_tok *tok,
                               const struct hy_prompt_profile *prompt, struct hy_err *err);
/* Before hy_server_set_engine: the Chimera engine and its tokenizer (--chimera; borrowed,
 * outliving the server), which /api/translate's "ensemble" uses. Once only. HY_E_NOTFOUND
 * when the tokenizer has no prompt style. */
hy_status hy_server_set_chimera(struct hy_server *s, struct hy_engine *e,
                                const struct hy_tok *tok, struct hy_err *err);
/* Closes the listening socket at once (new clients are refused) and idle connections,
 * answers 503 to new requests on open ones (and /ready), waits up to drain_s for running
 * requests, then cancels the rest: each answers 503, each open stream ends with a final
 * error event. Returns the number cancelled. */
int hy_server_drain(struct hy_server *s);
/* Closes every connection, stops the threads and frees the server. Accepts NULL. */
void hy_server_destroy(struct hy_server *s);

/* The route table, read only: the path of route i and its method in *method ("GET" also
 * answers HEAD); NULL past the last. For `hymt serve --print-routes`, which the OpenAPI
 * document's test compares with the document's paths. */
const char *hy_server_route(size_t i, const char **method);

#endif
