/* sched.h: continuous-batching scheduler logic (no model): which tokens run in each step.
 * Requests wait in a bounded FIFO, run as KV sequences (it owns the engine/kv.h pool), and each
 * step is planned as one batch: a decode token for every running sequence past its prefill,
 * chunks of pending prefills, then newly admitted requests, within a per-step token budget.
 * When the pool runs out for a decode, the newest running sequence is preempted (blocks freed,
 * back to the front of the queue with its generated tokens, recomputed later).
 * All memory (request slots, token storage, the pool, plan buffers) is allocated at create.
 * Engine thread only: no locking (other threads reach it through engine.c's locked queue).
 * Errors: submit returns HY_E_NOSPACE when the queue is full, HY_E_INVAL / HY_E_RANGE for a
 * request that could never run; the scheduler is then unchanged. Step and commit cannot fail. */
#ifndef HY_ENGINE_SCHED_H
#define HY_ENGINE_SCHED_H

#include "core/status.h"
#include "engine/kv.h"

#include <stdbool.h>
#include <stdint.h>

/* The engine thread's loop:
 *     hy_sched_step(s, hy_clock_now(), &b);
 *     if (b.n_items > 0) {
 *         forward over b.tokens: item i runs its n_tokens at pos.. through its block table and
 *             yields logits for its last token when items[i].sample;
 *         results[i] = {sampled token, STOP if it is a stop token else NONE} (ERROR on failure);
 *         hy_sched_commit(s, results);
 *     }
 *     emit one event per hy_sched_done() entry (finish reason, usage);
 *     sleep when nothing is waiting or running. */

enum hy_finish {
    HY_FINISH_NONE = 0,  /* still running */
    HY_FINISH_STOP,      /* the model produced a stop token (the caller says so) */
    HY_FINISH_LENGTH,    /* max_new_tokens generated */
    HY_FINISH_CANCELLED, /* hy_sched_cancel */
    HY_FINISH_TIMEOUT,   /* deadline passed */
    HY_FINISH_ERROR,     /* the caller reported a failure for it */
    HY_FINISH_COUNT
};

const char *hy_finish_str(enum hy_finish f); /* "stop", "length", ...; never NULL */

struct hy_sched_params {
    int max_queue;        /* waiting requests; one more submit gets HY_E_NOSPACE */
    int max_running;      /* sequences holding KV blocks at once */
    int max_batch_tokens; /* tokens per step (>= max_running: every decode fits) */
    int max_seq_tokens;   /* prompt + max_new_tokens of one request */
    int n_blocks;         /* KV pool size */
    int block_size;       /* tokens per block; <= 0 means HY_KV_BLOCK_SIZE_DEFAULT */
};

struct hy_sched_request {
    const int32_t *prompt; /* [n_prompt] token ids, copied by submit */
    int n_prompt;          /* >= 1 */
    int max_new_tokens;    /* >= 1 */
    double deadline;       /* clock value (as passed to step) to give up at; 0 = none */
    void *user;            /* returned in plan items and done events */
};

/* One sequence's share of a step: run tokens[offset .. offset+n_tokens) at positions
 * pos .. pos+n_tokens-1, writing their K/V into the slots blocks[p / block_size] at
 * p % block_size and attending over positions 0 .. p. When sample, the logits of the last
 * token are needed to pick the next one. */
struct hy_sched_item {
    uint64_t id;
    void *user;
    int seq;               /* KV sequence handle, 0 .. max_running-1 (stable while running) */
    int pos;               /* first position = tokens already in the cache */
    int n_tokens;          /* >= 1 */
    int offset;            /* into hy_sched_batch.tokens */
    bool sample;           /* needs a sampled token back in hy_sched_commit */
    const int32_t *blocks; /* block table covering positions 0 .. pos+n_tokens-1 */
    int n_blocks;
};

/* A step's plan, borrowed from the scheduler until the next hy_sched_commit / hy_sched_step. */
struct hy_sched_batch {
    const struct hy_sched_item *items; /* [n_items], oldest running sequence first */
    int n_items;
    const int32_t *tokens; /* [n_tokens] all items' new tokens, item after item */
    int n_tokens;          /* <= max_batch_tokens */
    int n_sample;          /* items with sample set */
};

/* What the caller reports for one item of the plan. */
struct hy_sched_result {
    int32_t token;         /* the sampled token (read only when the item has sample) */
    enum hy_finish finish; /* NONE, or STOP (token is the stop token, kept), LENGTH, ERROR */
};

/* A request that ended (and released its slot and blocks) in the last step or commit. */
struct hy_sched_done {
    uint64_t id;
    void *user;
    enum hy_finish reason;
    int n_prompt;
    int n_generated; /* tokens sampled and kept, the stop token included */
};

struct hy_sched_stats {
    int n_waiting, n_running, n_slots_free;
    int64_t steps; /* planned batches with work in them (forward passes) */
    int64_t preemptions, submitted;
    int64_t finished[HY_FINISH_COUNT];
    int64_t tokens_computed; /* positions run through the model (recomputation included) */
    int64_t tokens_generated;
    struct hy_kv_stats kv;
};

struct hy_sched;

/* HY_E_INVAL / HY_E_RANGE for inconsistent params, HY_E_NOMEM. */
hy_status hy_sched_create(struct hy_sched **out, const struct hy_sched_params *p,
                          struct hy_err *err);
void hy_sched_destroy(struct hy_sched *s); /* accepts NULL */

/* Queues a request at the back of the FIFO and returns its id (never 0). HY_E_NOSPACE when
 * max_queue requests are waiting; HY_E_INVAL for an empty prompt or max_new_tokens < 1;
 * HY_E_RANGE when prompt + max_new_tokens exceeds max_seq_tokens or the whole pool. */
hy_status hy_sched_submit(struct hy_sched *s, const struct hy_sched_request *r, uint64_t *id,
                          struct hy_err *err);

/* Marks a waiting or running request cancelled; the next step drops it and frees its blocks.
 * HY_E_NOTFOUND when id is not live (already finished, or never submitted). */
hy_status hy_sched_cancel(struct hy_sched *s, uint64_t id);

/* Plans one step at clock `now`: (1) drops cancelled and timed-out requests, (2) gives every
 * decoding sequence one token, preempting the newest when blocks run out, (3) continues chunked
 * prefills, (4) admits waiting requests in FIFO order while sequences, blocks and the budget
 * allow (not in a step that preempted). The batch may be empty. Must be followed by
 * hy_sched_commit when n_items > 0, before the next step. */
void hy_sched_step(struct hy_sched *s, double now, struct hy_sched_batch *out);

/* Reports the step's results after the forward pass: results[i] for items[i]. Records the
 * computed K/V, appends sampled tokens, finishes requests (caller's STOP/LENGTH/ERROR, or
 * max_new_tokens reached). Block tables of the plan are invalid afterwards. */
void hy_sched_commit(struct hy_sched *s, const struct hy_sched_result *results);

/* Requests that ended since the last hy_sched_step began (its drops, then commit's finishes);
 * borrowed until the next step. */
const struct hy_sched_done *hy_sched_done(const struct hy_sched *s, int *n);

/* A live request's tokens (prompt then generated), borrowed until the next step or commit;
 * NULL if id is not live. */
const int32_t *hy_sched_tokens(const struct hy_sched *s, uint64_t id, int *n_prompt, int *n_total);

void hy_sched_stats(const struct hy_sched *s, struct hy_sched_stats *out);
const struct hy_kv *hy_sched_kv(const struct hy_sched *s); /* borrowed */

/* Checks the scheduler's invariants and the pool's (hy_kv_check): lists, counts, slots, each
 * running sequence's KV tokens equal to its request's. HY_E_FORMAT with the first violation. */
hy_status hy_sched_check(const struct hy_sched *s, struct hy_err *err);

#endif
