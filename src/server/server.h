/* server.h: the HTTP server of `hymt serve` on libmicrohttpd: the translation API, the
 * OpenAI-compatible API, health/readiness/metrics and the embedded web page, all on one
 * shared engine. Threads: libmicrohttpd runs one thread per connection (at most
 * max_connections); a handler blocks on its engine request (condition variables, never a
 * busy loop) and checks its client's socket while it waits, so a client that goes away
 * cancels its work. Memory: per request, bounded by max_body and max_chars; everything
 * else is fixed at create.
 * Life cycle: create (listens at once; /health answers, /ready is 503) -> set_engine
 * (ready) -> [the caller waits for a signal] -> drain -> destroy. The server handles no
 * signals itself: the caller blocks them before create so every server thread inherits
 * the mask.
 * Errors: create fails with HY_E_IO when the address cannot be bound. */
#ifndef HY_SERVER_SERVER_H
#define HY_SERVER_SERVER_H

#include "core/status.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

#include <stdbool.h>
#include <stddef.h>

#define HY_SERVER_MAX_BODY_DEFAULT (1u << 20) /* bytes of one request body */
#define HY_SERVER_MAX_CHARS_DEFAULT 20000     /* characters of text to translate */
#define HY_SERVER_MAX_CONNECTIONS 1024        /* one thread each, small stacks */

struct hy_server_config {
    const char *host;       /* address to bind, "127.0.0.1" by default */
    int port;               /* 0: any free port (hy_server_port says which) */
    size_t max_body;        /* 413 above this many bytes */
    size_t max_chars;       /* 413 for a text longer than this (Unicode characters) */
    double timeout_s;       /* per request; 504 past it; 0: none */
    double drain_s;         /* at shutdown, wait this long for running requests */
    const char *api_key;    /* required as "Authorization: Bearer KEY" when set */
    const char *cors;       /* Access-Control-Allow-Origin value when set */
    const char *model_name; /* the id /v1/models lists and responses carry */
    bool demo;              /* random-weight demo model: say so everywhere */
    int max_connections;    /* 0: HY_SERVER_MAX_CONNECTIONS */
};

struct hy_server;

/* Starts listening. cfg strings are borrowed and must outlive the server. */
hy_status hy_server_create(struct hy_server **out, const struct hy_server_config *cfg,
                           struct hy_err *err);
/* The port actually bound. */
int hy_server_port(const struct hy_server *s);
/* Makes the server ready: requests now reach engine e with tokenizer tok (both borrowed,
 * outliving the server). Once only. */
hy_status hy_server_set_engine(struct hy_server *s, struct hy_engine *e, const struct hy_tok *tok,
                               struct hy_err *err);
/* Stops accepting connections, answers 503 to new requests (and /ready), waits up to
 * drain_s for running requests, then cancels the rest. Returns the number cancelled. */
int hy_server_drain(struct hy_server *s);
/* Stops the listener and every connection thread and frees the server. Accepts NULL. */
void hy_server_destroy(struct hy_server *s);

#endif
