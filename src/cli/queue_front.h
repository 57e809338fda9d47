/* queue_front.h: what a command needs to run on the Redis queue instead of a local model
 * (serve --queue, translate --queue): -m's tokenizer, a queue client and the remote engine
 * on it (queue/queue.h). Without libhiredis-dev at build time, open fails with a message
 * naming the package. Errors: one line in err (an unreachable Redis names the address). */
#ifndef HY_CLI_QUEUE_FRONT_H
#define HY_CLI_QUEUE_FRONT_H

#include "core/status.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

struct hy_queue_client;

struct cli_queue_front {
    struct hy_tok *tok;
    struct hy_queue_client *qc;
    struct hy_engine *e; /* remote: its requests become jobs */
    char where[300];     /* redis://HOST:PORT/DB */
};

/* url: --queue's value; model: a path cli_model_resolve gave; ep: the engine limits the
 * routes check (max_queue is how many requests may be in flight); result_ttl_s: 0 default. */
hy_status cli_queue_front_open(struct cli_queue_front *f, const char *url, const char *model,
                               const struct hy_engine_params *ep, double result_ttl_s,
                               struct hy_err *err);
/* Frees what open made (any part may be missing); leaves *f zeroed. */
void cli_queue_front_close(struct cli_queue_front *f);

#endif
