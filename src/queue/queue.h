/* queue.h: hymt past one machine: a Redis Streams job queue between HTTP front ends
 * (`hymt serve --queue`) and workers (`hymt worker`), each worker one engine.
 * The front end's engine is a remote one (engine.h hy_engine_create_remote): every
 * generation request (an OpenAI request, each segment of a document) becomes a job on the
 * stream PREFIX:jobs; workers read it through the consumer group "workers", run it on
 * their engine and append its tokens to the job's own result stream PREFIX:r:ID, which
 * the front end reads with XREAD BLOCK. docs/ARCHITECTURE.md ("The Redis queue") has the
 * keys, the life of a job and what happens at each failure.
 * Trust: everything read from Redis is untrusted (bounded, validated: a malformed job is
 * answered with an error and acknowledged, a malformed result fails that request only).
 * Threads: the client's functions (the remote engine's) from any thread; it owns one
 * reader thread. The worker runs on the calling thread until hy_stop_requested.
 * Errors: HY_E_IO when Redis cannot be reached (a one-line message naming the address),
 * HY_E_INVAL for a bad URL. */
#ifndef HY_QUEUE_QUEUE_H
#define HY_QUEUE_QUEUE_H

#include "core/status.h"
#include "engine/engine.h"

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#define HY_QUEUE_HOST_MAX 256
#define HY_QUEUE_PREFIX_MAX 32
#define HY_QUEUE_RESULT_TTL_S 300.0 /* finished jobs' results are kept this long */
#define HY_QUEUE_CLAIM_IDLE_S 30.0  /* a job silent this long is taken over */
#define HY_QUEUE_SHARE_WAIT_MS 20   /* a job waits this long for a worker below its share */

/* redis://HOST[:PORT][/DB]; PORT 6379 and DB 0 by default. */
struct hy_queue_url {
    char host[HY_QUEUE_HOST_MAX];
    int port;
    int db;
};
hy_status hy_queue_url_parse(const char *s, struct hy_queue_url *u, struct hy_err *err);

struct hy_queue_opts {
    struct hy_queue_url url;
    char prefix[HY_QUEUE_PREFIX_MAX]; /* key prefix; "" means "hymt" */
    double result_ttl_s;              /* 0: HY_QUEUE_RESULT_TTL_S */
    double claim_idle_s;              /* worker: 0: HY_QUEUE_CLAIM_IDLE_S */
    int capacity;                     /* worker: jobs held at once; client: requests in
                                       * flight (more get HY_E_NOSPACE) */
    int share_wait_ms;                /* worker: it takes jobs past its fair share (jobs in
                                       * flight / live workers) only once they have waited
                                       * this long; 0: HY_QUEUE_SHARE_WAIT_MS; < 0: no
                                       * share (a read takes as many as it has room for) */
    int32_t vocab;                    /* client: token ids from workers are checked < vocab */
};

/* ---- the front end (client.c) ---- */
struct hy_queue_client;
/* Connects (HY_E_IO with the address and the reason when Redis is unreachable), creates
 * the stream and group if needed and starts the reader. */
hy_status hy_queue_client_create(struct hy_queue_client **out, const struct hy_queue_opts *o,
                                 struct hy_err *err);
/* The remote engine interface to pass to hy_engine_create_remote with the client as ctx. */
const struct hy_engine_remote_i *hy_queue_client_iface(void);
/* Whether Redis answers now (a reconnection is tried when the backoff allows); false: why
 * holds a one-line reason. */
bool hy_queue_client_available(struct hy_queue_client *c, char *why, size_t cap);
/* Prometheus lines for the queue (depth, pending per consumer, reclaimed, outcomes,
 * live workers), read from Redis now; nothing when it is unreachable but
 * hymt_queue_up 0. */
void hy_queue_client_metrics(struct hy_queue_client *c, FILE *f);
/* Stops the reader; requests still in flight finish as cancelled. Accepts NULL. */
void hy_queue_client_destroy(struct hy_queue_client *c);

/* ---- the worker (worker.c) ---- */
struct hy_queue_worker_stats {
    int64_t taken, reclaimed, completed, expired, cancelled, lost, malformed;
    int active;
    bool connected;
};
struct hy_queue_worker;
hy_status hy_queue_worker_create(struct hy_queue_worker **out, const struct hy_queue_opts *o,
                                 struct hy_engine *e, struct hy_err *err);
/* Takes and runs jobs until *stop is set, then lets running jobs finish for up to
 * drain_s (what is left stays pending: another worker takes it over). */
void hy_queue_worker_run(struct hy_queue_worker *w, volatile const sig_atomic_t *stop,
                         double drain_s);
void hy_queue_worker_stats(struct hy_queue_worker *w, struct hy_queue_worker_stats *out);
/* The worker's consumer name (HOST-PID-RANDOM). */
const char *hy_queue_worker_name(const struct hy_queue_worker *w);
void hy_queue_worker_metrics(struct hy_queue_worker *w, FILE *f);
void hy_queue_worker_destroy(struct hy_queue_worker *w);

#endif
