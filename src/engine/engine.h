/* engine.h: the engine thread: one thread owns the model, the paged KV pool and the
 * scheduler, and runs continuous-batching steps for requests submitted from any thread.
 * Memory is decided at hy_engine_create (KV pool from kv_bytes, request slots, token
 * buffers, activation scratch); the step loop never allocates.
 * Threads: every function may be called from any thread, except create/destroy (one owner;
 * destroy only after every client has stopped calling). The engine thread sleeps on a
 * condition variable when idle. Clients read a request's tokens as they come and decode
 * them themselves (the engine never touches text).
 * Waking clients: a client either blocks in hy_engine_read (the request's condition
 * variable) or registers a notify hook on the request and reads with timeout 0 when it is
 * called: after every step that produced tokens for the request and when it finishes (any
 * reason, cancellation in the queue included). So an event loop or a worker pool never
 * polls the engine.
 * Errors: submit returns HY_E_NOSPACE at once when the queue is full (the server answers
 * 429), HY_E_INVAL / HY_E_RANGE for a request that can never run; nothing is then queued. */
#ifndef HY_ENGINE_ENGINE_H
#define HY_ENGINE_ENGINE_H

#include "engine/logprob.h"
#include "engine/sampler.h"
#include "engine/sched.h"
#include "model/hunyuan.h"

#include <stdbool.h>
#include <stdint.h>

#define HY_ENGINE_MAX_STOP 8

struct hy_engine_params {
    int max_running;      /* sequences decoded together (default 16) */
    int max_queue;        /* requests waiting to start (default 256) */
    int max_batch_tokens; /* tokens per step: prefill chunks + decodes (default 2048) */
    int max_seq_tokens;   /* prompt + generated tokens of one request (default 4096; at most
                           * the model's max_position_embeddings) */
    int block_size;       /* KV block size in tokens (default 16) */
    int64_t kv_bytes;     /* KV pool size (default 1 GiB); at least one longest request */
    double kv_fraction;   /* (0, 1]: instead, this share of the device memory free after
                           * weights and scratch (device backends); 0: use kv_bytes */
};

/* Defaults as documented above. */
struct hy_engine_params hy_engine_params_default(void);

struct hy_engine_request {
    const int32_t *prompt;             /* [n_prompt], copied */
    int n_prompt;
    int max_new_tokens;                /* >= 1 */
    struct hy_sampler_params sampling; /* temperature 0: greedy */
    double timeout_s;                  /* from submit; 0: none */
    int32_t stop_ids[HY_ENGINE_MAX_STOP];
    int n_stop;
    /* Optional wake-up (see above). Runs on the engine thread with the engine's lock held:
     * it must be quick, must not block and must not call any hy_engine_* function (write an
     * eventfd, signal a condition variable, queue a job). Never called once
     * hy_engine_release has returned for the request. */
    void (*notify)(void *ctx);
    void *notify_ctx;
    /* Log-probabilities (logprob.h) of every generated token, with top_logprobs
     * (0..HY_LOGPROB_MAX_TOP) alternatives each, read with hy_engine_read_logprobs. They
     * take one of max_running fixed buffers (max_seq_tokens entries each, allocated at
     * create) from submit to release; none free: HY_E_NOSPACE. */
    bool logprobs;
    int top_logprobs;
};

/* A request's state as seen by its client. */
struct hy_engine_status {
    bool done;
    enum hy_finish finish; /* when done */
    int n_prompt;
    int n_generated;       /* tokens generated so far (stop token included) */
    double queued_s;       /* submit -> first step that ran it */
    double first_token_s;  /* submit -> first generated token; < 0 until then */
    double total_s;        /* submit -> done; < 0 until then */
};

struct hy_engine_stats {
    int n_waiting, n_running;
    int64_t steps, preemptions, submitted, rejected;
    int64_t finished[HY_FINISH_COUNT];
    int64_t tokens_prompt, tokens_generated, tokens_computed;
    int kv_blocks_total, kv_blocks_used, kv_blocks_cached;
    int64_t prefix_lookups, prefix_hits;
    double last_step_s;
    int64_t samples_full_row; /* tokens sampled from a whole logits row, not candidates */
    int64_t slots_in_use;
};

struct hy_engine;

/* An engine that runs elsewhere (the Redis queue's front end, queue/client.h): the same
 * request API with the same contract, carried out by another implementation. Every
 * hy_engine_* call on such an engine goes to these functions with ctx; the local engine
 * pays one predictable branch per call for this and nothing else. stats may leave
 * fields it cannot know at 0. Log-probabilities are local only: a remote submit refuses
 * a request that asks for them (HY_E_UNSUPPORTED). */
struct hy_engine_remote_i {
    hy_status (*submit)(void *ctx, const struct hy_engine_request *r, uint64_t *handle,
                        struct hy_err *err);
    int (*read)(void *ctx, uint64_t handle, int32_t *ids, int cap, double timeout_s,
                struct hy_engine_status *st);
    hy_status (*cancel)(void *ctx, uint64_t handle);
    void (*release)(void *ctx, uint64_t handle);
    void (*stats)(void *ctx, struct hy_engine_stats *out);
};

/* Starts the engine thread on model m (borrowed; must outlive the engine). */
hy_status hy_engine_create(struct hy_engine **out, struct hy_model *m,
                           const struct hy_engine_params *p, struct hy_err *err);
/* An engine whose requests go to ri with ctx (both borrowed, outliving it); p says the
 * limits it enforces (max_seq_tokens, max_queue, max_running as the callers read them).
 * hy_engine_model gives NULL for it. */
hy_status hy_engine_create_remote(struct hy_engine **out, const struct hy_engine_remote_i *ri,
                                  void *ctx, const struct hy_engine_params *p,
                                  struct hy_err *err);
/* Stops the thread, drops every request and frees everything. Accepts NULL. */
void hy_engine_destroy(struct hy_engine *e);

/* Queues a request; *handle identifies it until hy_engine_release. */
hy_status hy_engine_submit(struct hy_engine *e, const struct hy_engine_request *r,
                           uint64_t *handle, struct hy_err *err);

/* Copies up to cap tokens generated since the last read into ids and returns how many.
 * When none is new and the request is not done, waits up to timeout_s (< 0: no limit).
 * st (optional) receives the request's status. -1 for an unknown handle. */
int hy_engine_read(struct hy_engine *e, uint64_t handle, int32_t *ids, int cap, double timeout_s,
                   struct hy_engine_status *st);

/* Copies the log-probabilities of generated tokens [from, from + cap) that are published
 * (as hy_engine_read returned them) into out; returns how many. -1 for an unknown handle
 * or a request submitted without logprobs. Never waits. */
int hy_engine_read_logprobs(struct hy_engine *e, uint64_t handle, int from,
                            struct hy_logprob *out, int cap);

/* Asks the engine to stop the request (finish reason "cancelled"); its memory returns in
 * the next step. HY_E_NOTFOUND for an unknown handle; HY_OK if it had already finished. */
hy_status hy_engine_cancel(struct hy_engine *e, uint64_t handle);
/* Gives the handle back (cancelling the request if it still runs). */
void hy_engine_release(struct hy_engine *e, uint64_t handle);

void hy_engine_stats(struct hy_engine *e, struct hy_engine_stats *out);
/* The model the engine runs (borrowed; constant); NULL for a remote engine. */
const struct hy_model *hy_engine_model(const struct hy_engine *e);
/* The parameters the engine runs with (borrowed; constant). */
const struct hy_engine_params *hy_engine_get_params(const struct hy_engine *e);

#endif
