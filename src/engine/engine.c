/* engine.c: the engine thread and the thread-safe request API (engine.h has the contract).
 * One mutex guards the request slots, the incoming FIFO and the stats snapshot; the engine
 * thread holds it only to take in submissions and to publish a step's results, never while
 * the model runs. Each slot has its own condition variable for clients waiting on tokens,
 * and its request's notify hook is called where that variable is signalled. */
#include "engine/engine.h"

#include "core/clock.h"
#include "core/log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum slot_state { SLOT_FREE, SLOT_INCOMING, SLOT_ACTIVE, SLOT_DONE };

struct slot {
    enum slot_state state;
    uint32_t gen;          /* bumped at each reuse: stale handles are refused */
    bool cancel_req;       /* the client asked to cancel */
    bool cancel_sent;      /* ... and the scheduler was told */
    bool released;         /* the client gave the handle back: free it when done */
    uint64_t sched_id;
    struct hy_engine_request req; /* req.prompt points at prompt[] */
    int32_t *prompt;       /* [max_seq_tokens] */
    int32_t *out;          /* [max_seq_tokens] generated tokens; [0, n_out) are published */
    int n_out, n_read, n_sampled;
    enum hy_finish finish;
    double t_submit, t_start, t_first, t_done;
    struct hy_sampler sampler; /* engine thread only */
    struct hy_logprob *lp;     /* [max_seq_tokens] from e->lp_pool while req.logprobs */
    pthread_cond_t cv;
};

struct hy_engine {
    const struct hy_engine_remote_i *remote; /* set: every call goes there (engine.h) */
    void *remote_ctx;
    struct hy_model *m;
    struct hy_engine_params p;
    struct hy_sched *sched;
    struct hy_kvstore *kv;
    struct hy_scratch *scr;
    struct hy_sampler_scratch ss;
    struct hy_batch_seq *bseqs;       /* [max_running] */
    struct hy_sched_result *results;  /* [max_running] */
    float *logits;                    /* [max_running, vocab] host */
    struct hy_cand *cand;             /* [max_running, scr->topk_k] host, or NULL */
    struct slot *slots;
    int n_slots;
    struct hy_logprob *lp_pool;       /* [max_running, max_seq_tokens]: logprobs buffers */
    int *lp_free, n_lp_free;          /* free buffer indices */
    int *free_stack, n_free;          /* free slot indices */
    int *incoming, in_head, n_in;     /* FIFO ring of slot indices */
    int n_waiting;                    /* incoming + the scheduler's waiting (queue-full rule) */
    int n_pending_cancel;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t thread;
    bool thread_started, stop, busy;
    struct hy_engine_stats stats;     /* snapshot under mu */
    int64_t n_full_rows;              /* samples that needed a whole logits row (engine) */
};

struct hy_engine_params hy_engine_params_default(void)
{
    return (struct hy_engine_params){.max_running = 16,
                                     .max_queue = 256,
                                     .max_batch_tokens = 2048,
                                     .max_seq_tokens = 4096,
                                     .block_size = HY_KV_BLOCK_SIZE_DEFAULT,
                                     .kv_bytes = (int64_t)1 << 30};
}

static uint64_t handle_of(const struct hy_engine *e, const struct slot *s)
{
    return ((uint64_t)s->gen << 32) | (uint64_t)(s - e->slots);
}

/* The live slot a handle names, or NULL. Called with mu held. */
static struct slot *slot_of(struct hy_engine *e, uint64_t h)
{
    uint64_t i = h & 0xffffffffu;
    if (i >= (uint64_t)e->n_slots)
        return NULL;
    struct slot *s = &e->slots[i];
    return s->state != SLOT_FREE && s->gen == (uint32_t)(h >> 32) && !s->released ? s : NULL;
}

static void slot_free(struct hy_engine *e, struct slot *s)
{
    if (s->lp) {
        e->lp_free[e->n_lp_free++] = (int)((s->lp - e->lp_pool) / e->p.max_seq_tokens);
        s->lp = NULL;
    }
    s->state = SLOT_FREE;
    s->gen++;
    e->free_stack[e->n_free++] = (int)(s - e->slots);
}

/* Marks a slot finished and wakes its reader; frees it if the client already let go. */
static void slot_finish(struct hy_engine *e, struct slot *s, enum hy_finish why, double now)
{
    s->state = SLOT_DONE;
    s->finish = why;
    s->t_done = now;
    e->stats.finished[why]++;
    pthread_cond_broadcast(&s->cv);
    if (s->req.notify && !s->released)
        s->req.notify(s->req.notify_ctx);
    if (s->released)
        slot_free(e, s);
}

/* Moves submissions into the scheduler and forwards cancellations. Called with mu held. */
static void intake(struct hy_engine *e, double now)
{
    while (e->n_in > 0) {
        struct slot *s = &e->slots[e->incoming[e->in_head]];
        if (s->cancel_req) {
            e->n_waiting--; /* leaves the queue now, not at the next publish */
            slot_finish(e, s, HY_FINISH_CANCELLED, now);
        } else {
            struct hy_sched_request r = {s->prompt, s->req.n_prompt, s->req.max_new_tokens,
                                         s->req.timeout_s > 0 ? s->t_submit + s->req.timeout_s : 0,
                                         s};
            hy_status st = hy_sched_submit(e->sched, &r, &s->sched_id, NULL);
            if (st == HY_E_NOSPACE)
                break; /* preempted sequences filled the scheduler's queue: next step */
            if (st) {
                e->n_waiting--;
                slot_finish(e, s, HY_FINISH_ERROR, now);
            } else {
                s->state = SLOT_ACTIVE;
                s->sampler.p = s->req.sampling;
                hy_sampler_reset(&s->sampler, s->prompt, (size_t)s->req.n_prompt);
            }
        }
        e->in_head = (e->in_head + 1) % e->n_slots;
        e->n_in--;
    }
    for (int i = 0; e->n_pending_cancel > 0 && i < e->n_slots; i++) {
        struct slot *s = &e->slots[i];
        if (s->state == SLOT_ACTIVE && s->cancel_req && !s->cancel_sent) {
            s->cancel_sent = true;
            e->n_pending_cancel--;
            hy_sched_cancel(e->sched, s->sched_id);
        }
    }
}

static bool is_stop(const struct slot *s, int32_t id)
{
    for (int i = 0; i < s->req.n_stop; i++)
        if (s->req.stop_ids[i] == id)
            return true;
    return false;
}

/* Runs the planned batch through the model and samples. Engine thread, mu not held. */
static void run_batch(struct hy_engine *e, const struct hy_sched_batch *b, double now)
{
    const int64_t V = e->m->cfg.vocab_size;
    for (int i = 0; i < b->n_items; i++) {
        const struct hy_sched_item *it = &b->items[i];
        e->bseqs[i] = (struct hy_batch_seq){b->tokens + it->offset, it->n_tokens, it->pos,
                                            it->blocks, it->sample ? 1 : 0};
        struct slot *s = it->user;
        if (s->t_start < 0)
            s->t_start = now;
    }
    struct hy_err err = {{0}};
    const int K = e->scr->topk_k;
    hy_status st = e->cand ? hy_model_forward_batch_topk(e->m, e->kv, e->scr, e->bseqs,
                                                         b->n_items, e->cand, &err)
                           : hy_model_forward_batch(e->m, e->kv, e->scr, e->bseqs, b->n_items,
                                                    e->logits, &err);
    if (st)
        HY_LOGE("engine: forward pass failed: %s", err.msg);
    for (int i = 0, k = 0; i < b->n_items; i++) {
        const struct hy_sched_item *it = &b->items[i];
        struct slot *s = it->user;
        e->results[i] = (struct hy_sched_result){0, st ? HY_FINISH_ERROR : HY_FINISH_NONE};
        if (!it->sample || st)
            continue;
        int32_t id;
        bool full = false;
        if (!e->cand) {
            id = hy_sampler_sample(&s->sampler, &e->ss, e->logits + (int64_t)k * V);
        } else if (!hy_sampler_sample_cands(&s->sampler, &e->ss, e->cand + (int64_t)k * K, K,
                                            &id)) {
            hy_model_logits_row(e->m, e->scr, k, e->logits); /* the whole row is needed */
            id = hy_sampler_sample(&s->sampler, &e->ss, e->logits);
            e->n_full_rows++;
            full = true;
        }
        if (s->lp) {
            if (e->cand && !full) /* the candidates are the sampler's: the row is needed */
                hy_model_logits_row(e->m, e->scr, k, e->logits);
            hy_logprob_compute(e->cand ? e->logits : e->logits + (int64_t)k * V, (int32_t)V, id,
                               s->req.top_logprobs, &s->lp[s->n_sampled]);
        }
        k++;
        hy_sampler_accept(&s->sampler, id);
        s->out[s->n_sampled++] = id; /* published (n_out) under mu */
        e->results[i].token = id;
        if (is_stop(s, id))
            e->results[i].finish = HY_FINISH_STOP;
    }
    hy_sched_commit(e->sched, e->results);
}

/* Publishes tokens and finished requests, refreshes the stats. Called with mu held. */
static void publish(struct hy_engine *e, double now, double step_s)
{
    for (int i = 0; i < e->n_slots; i++) {
        struct slot *s = &e->slots[i];
        if (s->state == SLOT_ACTIVE && s->n_sampled > s->n_out) {
            if (s->n_out == 0)
                s->t_first = now;
            e->stats.tokens_generated += s->n_sampled - s->n_out;
            s->n_out = s->n_sampled;
            pthread_cond_broadcast(&s->cv);
            if (s->req.notify && !s->released)
                s->req.notify(s->req.notify_ctx);
        }
    }
    int n_done;
    const struct hy_sched_done *d = hy_sched_done(e->sched, &n_done);
    for (int i = 0; i < n_done; i++)
        slot_finish(e, d[i].user, d[i].reason, now);
    struct hy_sched_stats ss;
    hy_sched_stats(e->sched, &ss);
    e->n_waiting = e->n_in + ss.n_waiting;
    e->stats.n_waiting = e->n_waiting;
    e->stats.n_running = ss.n_running;
    e->stats.steps = ss.steps;
    e->stats.samples_full_row = e->n_full_rows;
    e->stats.preemptions = ss.preemptions;
    e->stats.tokens_computed = ss.tokens_computed;
    e->stats.kv_blocks_total = ss.kv.n_blocks;
    e->stats.kv_blocks_used = ss.kv.n_used;
    e->stats.kv_blocks_cached = ss.kv.n_cached;
    e->stats.prefix_lookups = ss.kv.lookups;
    e->stats.prefix_hits = ss.kv.hits;
    e->stats.last_step_s = step_s;
    e->stats.slots_in_use = e->n_slots - e->n_free;
    e->busy = ss.n_waiting + ss.n_running > 0;
}

static void *engine_main(void *arg)
{
    struct hy_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->stop) {
        if (!e->busy && e->n_in == 0 && e->n_pending_cancel == 0) {
            pthread_cond_wait(&e->wake, &e->mu); /* idle: sleep until a submit or cancel */
            continue;
        }
        double now = hy_clock_now();
        intake(e, now);
        pthread_mutex_unlock(&e->mu);
        struct hy_sched_batch b;
        hy_sched_step(e->sched, now, &b);
        if (b.n_items > 0)
            run_batch(e, &b, now);
        double end = hy_clock_now();
        pthread_mutex_lock(&e->mu);
        publish(e, end, end - now);
        if (b.n_items == 0 && e->busy && e->n_in == 0) {
            /* nothing could run this step (waiting on a deadline or memory): nap, don't spin */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&e->wake, &e->mu, &ts);
        }
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

static hy_status alloc_slots(struct hy_engine *e, struct hy_err *err)
{
    const int n = e->p.max_queue + e->p.max_running;
    const int32_t V = (int32_t)e->m->cfg.vocab_size;
    e->n_slots = n;
    e->slots = calloc((size_t)n, sizeof *e->slots);
    e->free_stack = calloc((size_t)n, sizeof *e->free_stack);
    e->incoming = calloc((size_t)n, sizeof *e->incoming);
    if (!e->slots || !e->free_stack || !e->incoming)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for %d request slots", n);
    for (int i = n - 1; i >= 0; i--) {
        struct slot *s = &e->slots[i];
        s->prompt = malloc((size_t)e->p.max_seq_tokens * sizeof *s->prompt);
        s->out = malloc((size_t)e->p.max_seq_tokens * sizeof *s->out);
        if (!s->prompt || !s->out || pthread_cond_init(&s->cv, NULL))
            return hy_err_set(err, HY_E_NOMEM, "out of memory for request slots");
        struct hy_sampler_params sp = hy_sampler_params_default();
        hy_status st = hy_sampler_init(&s->sampler, V, &sp, err);
        if (st)
            return st;
        e->free_stack[e->n_free++] = i;
    }
    const int nl = e->p.max_running;
    e->lp_pool = malloc((size_t)nl * (size_t)e->p.max_seq_tokens * sizeof *e->lp_pool);
    e->lp_free = malloc((size_t)nl * sizeof *e->lp_free);
    if (!e->lp_pool || !e->lp_free)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for %d logprobs buffers", nl);
    for (int i = nl - 1; i >= 0; i--)
        e->lp_free[e->n_lp_free++] = i;
    return HY_OK;
}

static hy_status check_params(const struct hy_engine_params *p, int64_t block_bytes,
                              struct hy_err *err)
{
    if (p->max_running < 1 || p->max_running > 4096 || p->max_queue < 1 || p->max_queue > 65536)
        return hy_err_set(err, HY_E_RANGE, "max_running must be 1..4096 and max_queue 1..65536");
    if (p->max_batch_tokens < p->max_running || p->max_batch_tokens > (1 << 20))
        return hy_err_set(err, HY_E_RANGE, "max_batch_tokens must be max_running..1048576");
    if (p->max_seq_tokens < 2 || p->max_seq_tokens > (1 << 24) || p->block_size < 1 ||
        p->block_size > 1024)
        return hy_err_set(err, HY_E_RANGE, "max_seq_tokens 2..16777216, block_size 1..1024");
    if (!(p->kv_fraction >= 0 && p->kv_fraction <= 1))
        return hy_err_set(err, HY_E_RANGE, "the KV share of device memory must be in (0, 1]");
    int64_t need = ((int64_t)p->max_seq_tokens + p->block_size - 1) / p->block_size;
    if (p->kv_fraction == 0 && p->kv_bytes / block_bytes < need)
        return hy_err_set(err, HY_E_RANGE, "KV memory of %lld bytes holds %lld blocks; one "
                          "request of %d tokens needs %lld (%lld bytes each)",
                          (long long)p->kv_bytes, (long long)(p->kv_bytes / block_bytes),
                          p->max_seq_tokens, (long long)need, (long long)block_bytes);
    return HY_OK;
}

/* The pool's block count: from kv_bytes, or with kv_fraction > 0 from that share of the
 * device memory free now (after weights and scratch). */
static hy_status pool_blocks(const struct hy_model *m, const struct hy_engine_params *p,
                             int64_t block_bytes, int64_t *n_blocks, struct hy_err *err)
{
    int64_t bytes = p->kv_bytes;
    if (p->kv_fraction > 0) {
        uint64_t used = 0, total = 0;
        if (!m->be->i->mem_info)
            return hy_err_set(err, HY_E_INVAL, "a KV share of device memory needs a device "
                              "backend; give the KV size in bytes instead");
        m->be->i->mem_info(m->be, &used, &total);
        bytes = (int64_t)(p->kv_fraction * (double)(total - used));
        HY_LOGI("engine: KV pool %.2f GiB (%.0f%% of %.2f GiB free)", (double)bytes / (1 << 30),
                p->kv_fraction * 100, (double)(total - used) / (1 << 30));
    }
    int64_t need = ((int64_t)p->max_seq_tokens + p->block_size - 1) / p->block_size;
    *n_blocks = bytes / block_bytes; /* (the kvstore adds the padding block) */
    if (*n_blocks < need)
        return hy_err_set(err, HY_E_NOMEM, "KV memory of %lld bytes holds %lld blocks; one "
                          "request of %d tokens needs %lld (%lld bytes each)", (long long)bytes,
                          (long long)(*n_blocks < 0 ? 0 : *n_blocks), p->max_seq_tokens,
                          (long long)need, (long long)block_bytes);
    if (*n_blocks > HY_KV_MAX_BLOCKS)
        *n_blocks = HY_KV_MAX_BLOCKS;
    return HY_OK;
}

static uint64_t dev_used(const struct hy_model *m)
{
    uint64_t used = 0, total = 0;
    if (m->be->i->mem_info)
        m->be->i->mem_info(m->be, &used, &total);
    return used;
}

/* One line at start-up: where the device memory went. scratch_b: the step scratch;
 * after_kv: used once the pool was made (what came later: recorded steps, warm-up). */
static void log_device_budget(const struct hy_engine *e, uint64_t scratch_b, uint64_t after_kv)
{
    uint64_t used = 0, total = 0;
    e->m->be->i->mem_info(e->m->be, &used, &total);
    const double G = 1 << 30, w = (double)e->m->weight_device_bytes;
    const double kv = (double)hy_kvstore_bytes(e->kv), graphs = (double)(used - after_kv);
    HY_LOGI("device memory: weights %.2f GiB, KV pool %.2f GiB (%d blocks of %d tokens, %s), "
            "scratch %.2f GiB, graphs %.2f GiB, CUDA context and other %.2f GiB = %.2f GiB used "
            "of %.2f GiB", w / G, kv / G, e->kv->n_blocks, e->kv->block_size,
            hy_dtype_name(e->kv->dtype), (double)scratch_b / G, graphs / G,
            ((double)used - w - kv - (double)scratch_b - graphs) / G, (double)used / G,
            (double)total / G);
}

/* A recorded step stages every sequence's block table at a fixed stride (the longest
 * sequence's): past this many entries in all, steps are not recorded (the CUDA backend's
 * staging ring holds 1 Mi entries, HY_CUDA_STAGE_INTS). */
#define RECORD_MAX_TABLE (1 << 19)

/* Runs one decode step of every padded batch size on the padding block, so that each is
 * recorded (CUDA graphs) before the first request and its memory is taken now. */
static void record_steps(struct hy_engine *e)
{
    static const int32_t zero = 0;
    struct hy_err err = {{0}};
    const int64_t blocks = (e->p.max_seq_tokens + e->p.block_size - 1) / e->p.block_size;
    if (blocks * e->p.max_running > RECORD_MAX_TABLE) { /* the step's staged block tables */
        HY_LOGI("engine: decode steps not recorded (%d sequences x %lld blocks each is more "
                "than the %d table entries a recorded step stages)", e->p.max_running,
                (long long)blocks, RECORD_MAX_TABLE);
        return;
    }
    e->scr->graph_max_blocks = (int)blocks;
    for (int n = 1;; n = n * 2 > e->p.max_running ? e->p.max_running : n * 2) {
        for (int i = 0; i < n; i++)
            e->bseqs[i] = (struct hy_batch_seq){&zero, 1, 0, e->kv->pad_table, 1};
        if (hy_model_forward_batch_topk(e->m, e->kv, e->scr, e->bseqs, n, e->cand, &err)) {
            HY_LOGW("engine: recording a %d-sequence step failed: %s", n, err.msg);
            e->scr->graph_max_blocks = 0;
            return;
        }
        if (n == e->p.max_running)
            break;
    }
}

/* One prefill step of up to WARM_TOKENS tokens on the padding block (every table entry is
 * it), before the first request: a device backend loads the code of a kernel when first
 * launched (CUDA's lazy module loading), and the prefill-only kernels (tensor-core
 * attention, matmuls over many rows) would otherwise take that memory at the first long
 * prompt, after start-up. */
#define WARM_TOKENS 128
static void warm_up_prefill(struct hy_engine *e)
{
    static const int32_t ids[WARM_TOKENS]; /* token 0 */
    int32_t table[WARM_TOKENS];
    struct hy_err err = {{0}};
    int n = e->p.max_batch_tokens < e->p.max_seq_tokens ? e->p.max_batch_tokens
                                                         : e->p.max_seq_tokens;
    n = n < WARM_TOKENS ? n : WARM_TOKENS;
    for (int i = 0; i < WARM_TOKENS; i++)
        table[i] = e->kv->pad_table[0];
    e->bseqs[0] = (struct hy_batch_seq){ids, n, 0, table, 1};
    if (hy_model_forward_batch_topk(e->m, e->kv, e->scr, e->bseqs, 1, e->cand, &err))
        HY_LOGW("engine: the warm-up prefill step failed: %s", err.msg);
}

hy_status hy_engine_create(struct hy_engine **out, struct hy_model *m,
                           const struct hy_engine_params *p, struct hy_err *err)
{
    *out = NULL;
    const struct hy_config *cf = &m->cfg;
    struct hy_engine_params clamped = *p; /* no position past the model's */
    if (clamped.max_seq_tokens > cf->max_position_embeddings)
        clamped.max_seq_tokens = (int)cf->max_position_embeddings;
    p = &clamped;
    int64_t block_bytes = hy_kvstore_block_bytes(m, p->block_size);
    hy_status st = check_params(p, block_bytes, err);
    if (st)
        return st;
    struct hy_engine *e = calloc(1, sizeof *e);
    if (!e)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    e->m = m;
    e->p = *p;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->wake, NULL);
    /* the scratch first: a pool sized from free device memory comes after it */
    const uint64_t used0 = dev_used(m);
    st = hy_scratch_create(&e->scr, m, p->max_batch_tokens, p->max_running, p->max_running,
                           err); /* logits: one row a sequence */
    int64_t n_blocks = 0;
    const uint64_t scratch_b = dev_used(m) - used0;
    if (!st)
        st = pool_blocks(m, p, block_bytes, &n_blocks, err);
    struct hy_sched_params sp = {p->max_queue, p->max_running, p->max_batch_tokens,
                                 p->max_seq_tokens, (int)n_blocks, p->block_size};
    if (!st)
        st = hy_sched_create(&e->sched, &sp, err);
    if (!st)
        st = hy_kvstore_create(&e->kv, m, (int)n_blocks, p->block_size, err);
    const uint64_t after_kv = dev_used(m);
    if (!st && e->scr->topk_k > 0) {
        e->cand = malloc((size_t)p->max_running * (size_t)e->scr->topk_k * sizeof *e->cand);
        if (!e->cand)
            st = hy_err_set(err, HY_E_NOMEM, "out of memory for sampling candidates");
    }
    if (!st)
        st = hy_sampler_scratch_init(&e->ss, (int32_t)cf->vocab_size, err);
    if (!st)
        st = alloc_slots(e, err);
    e->bseqs = calloc((size_t)p->max_running, sizeof *e->bseqs);
    e->results = calloc((size_t)p->max_running, sizeof *e->results);
    e->logits = malloc((size_t)p->max_running * (size_t)cf->vocab_size * sizeof(float));
    if (!st && (!e->bseqs || !e->results || !e->logits))
        st = hy_err_set(err, HY_E_NOMEM, "out of memory for the step buffers");
    if (!st && e->cand && m->be->i->step_begin) { /* record every decode step shape now */
        warm_up_prefill(e);
        record_steps(e);
    }
    if (!st && m->be->i->mem_info) /* before the engine thread owns the backend */
        log_device_budget(e, scratch_b, after_kv);
    if (!st && pthread_create(&e->thread, NULL, engine_main, e) != 0)
        st = hy_err_set(err, HY_E_NOMEM, "cannot start the engine thread");
    if (st) {
        hy_engine_destroy(e);
        return st;
    }
    e->thread_started = true;
    e->stats.kv_blocks_total = (int)n_blocks;
    *out = e;
    return HY_OK;
}

hy_status hy_engine_create_remote(struct hy_engine **out, const struct hy_engine_remote_i *ri,
                                  void *ctx, const struct hy_engine_params *p,
                                  struct hy_err *err)
{
    *out = NULL;
    struct hy_engine *e = calloc(1, sizeof *e);
    if (!e)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    e->remote = ri;
    e->remote_ctx = ctx;
    e->p = *p;
    *out = e;
    return HY_OK;
}

void hy_engine_destroy(struct hy_engine *e)
{
    if (!e)
        return;
    if (e->remote) {
        free(e);
        return;
    }
    if (e->thread_started) {
        pthread_mutex_lock(&e->mu);
        e->stop = true;
        pthread_cond_signal(&e->wake);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    for (int i = 0; e->slots && i < e->n_slots; i++) {
        struct slot *s = &e->slots[i];
        free(s->prompt);
        free(s->out);
        hy_sampler_deinit(&s->sampler);
        if (s->prompt)
            pthread_cond_destroy(&s->cv);
    }
    free(e->slots);
    free(e->lp_pool);
    free(e->lp_free);
    free(e->free_stack);
    free(e->incoming);
    free(e->bseqs);
    free(e->results);
    free(e->logits);
    free(e->cand);
    hy_sampler_scratch_deinit(&e->ss);
    hy_scratch_destroy(e->scr, e->m);
    hy_kvstore_destroy(e->kv);
    hy_sched_destroy(e->sched);
    pthread_cond_destroy(&e->wake);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

static hy_status check_request(const struct hy_engine *e, const struct hy_engine_request *r,
                               struct hy_err *err)
{
    const int64_t V = e->m->cfg.vocab_size;
    if (!r->prompt || r->n_prompt < 1 || r->max_new_tokens < 1)
        return hy_err_set(err, HY_E_INVAL, "a request needs a prompt and max_new_tokens >= 1");
    if ((int64_t)r->n_prompt + r->max_new_tokens > e->p.max_seq_tokens)
        return hy_err_set(err, HY_E_RANGE, "prompt of %d tokens + %d new exceeds the %d-token "
                          "limit per request", r->n_prompt, r->max_new_tokens,
                          e->p.max_seq_tokens);
    if (r->logprobs && (r->top_logprobs < 0 || r->top_logprobs > HY_LOGPROB_MAX_TOP))
        return hy_err_set(err, HY_E_RANGE, "top_logprobs must be 0..%d", HY_LOGPROB_MAX_TOP);
    if (r->n_stop < 0 || r->n_stop > HY_ENGINE_MAX_STOP || r->timeout_s < 0)
        return hy_err_set(err, HY_E_RANGE, "at most %d stop ids, and a timeout >= 0",
                          HY_ENGINE_MAX_STOP);
    for (int i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= V)
            return hy_err_set(err, HY_E_RANGE, "prompt token %d is %d, outside the vocabulary",
                              i, r->prompt[i]);
    return hy_sampler_params_check(&r->sampling, err);
}

hy_status hy_engine_submit(struct hy_engine *e, const struct hy_engine_request *r,
                           uint64_t *handle, struct hy_err *err)
{
    if (e->remote)
        return e->remote->submit(e->remote_ctx, r, handle, err);
    hy_status st = check_request(e, r, err);
    if (st)
        return st;
    pthread_mutex_lock(&e->mu);
    if (e->n_waiting >= e->p.max_queue || e->n_free == 0) {
        e->stats.rejected++;
        pthread_mutex_unlock(&e->mu);
        return hy_err_set(err, HY_E_NOSPACE, "queue full: %d requests waiting", e->p.max_queue);
    }
    if (r->logprobs && e->n_lp_free == 0) {
        e->stats.rejected++;
        pthread_mutex_unlock(&e->mu);
        return hy_err_set(err, HY_E_NOSPACE, "all %d logprobs buffers are in use",
                          e->p.max_running);
    }
    struct slot *s = &e->slots[e->free_stack[--e->n_free]];
    s->lp = r->logprobs ? e->lp_pool + (int64_t)e->lp_free[--e->n_lp_free] * e->p.max_seq_tokens
                        : NULL;
    memcpy(s->prompt, r->prompt, (size_t)r->n_prompt * sizeof *s->prompt);
    s->req = *r;
    s->req.prompt = s->prompt;
    s->state = SLOT_INCOMING;
    s->cancel_req = s->cancel_sent = s->released = false;
    s->n_out = s->n_read = s->n_sampled = 0;
    s->finish = HY_FINISH_NONE;
    s->t_submit = hy_clock_now();
    s->t_start = s->t_first = s->t_done = -1;
    e->incoming[(e->in_head + e->n_in++) % e->n_slots] = (int)(s - e->slots);
    e->n_waiting++;
    e->stats.submitted++;
    e->stats.tokens_prompt += r->n_prompt;
    *handle = handle_of(e, s);
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->mu);
    return HY_OK;
}

static void fill_status(const struct slot *s, struct hy_engine_status *st)
{
    st->done = s->state == SLOT_DONE;
    st->finish = s->finish;
    st->n_prompt = s->req.n_prompt;
    st->n_generated = s->n_out;
    st->queued_s = s->t_start >= 0 ? s->t_start - s->t_submit : -1;
    st->first_token_s = s->t_first >= 0 ? s->t_first - s->t_submit : -1;
    st->total_s = s->t_done >= 0 ? s->t_done - s->t_submit : -1;
}

int hy_engine_read(struct hy_engine *e, uint64_t handle, int32_t *ids, int cap, double timeout_s,
                   struct hy_engine_status *st)
{
    if (e->remote)
        return e->remote->read(e->remote_ctx, handle, ids, cap, timeout_s, st);
    pthread_mutex_lock(&e->mu);
    struct slot *s = slot_of(e, handle);
    if (s && s->n_read == s->n_out && s->state != SLOT_DONE && timeout_s != 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + (timeout_s > 0 ? timeout_s : 1e9);
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        while (s->n_read == s->n_out && s->state != SLOT_DONE)
            if (pthread_cond_timedwait(&s->cv, &e->mu, &ts) != 0)
                break;
    }
    int n = -1;
    if (s) {
        n = s->n_out - s->n_read < cap ? s->n_out - s->n_read : cap;
        memcpy(ids, s->out + s->n_read, (size_t)(n > 0 ? n : 0) * sizeof *ids);
        s->n_read += n;
        if (st)
            fill_status(s, st);
    }
    pthread_mutex_unlock(&e->mu);
    return n;
}

int hy_engine_read_logprobs(struct hy_engine *e, uint64_t handle, int from,
                            struct hy_logprob *out, int cap)
{
    if (e->remote)
        return -1; /* a remote engine refuses requests with logprobs at submit */
    pthread_mutex_lock(&e->mu);
    struct slot *s = slot_of(e, handle);
    int n = -1;
    if (s && s->lp) {
        n = from < 0 || from >= s->n_out ? 0 : s->n_out - from < cap ? s->n_out - from : cap;
        memcpy(out, s->lp + (from > 0 ? from : 0), (size_t)(n > 0 ? n : 0) * sizeof *out);
    }
    pthread_mutex_unlock(&e->mu);
    return n;
}

hy_status hy_engine_cancel(struct hy_engine *e, uint64_t handle)
{
    if (e->remote)
        return e->remote->cancel(e->remote_ctx, handle);
    pthread_mutex_lock(&e->mu);
    struct slot *s = slot_of(e, handle);
    hy_status st = s ? HY_OK : HY_E_NOTFOUND;
    if (s && s->state != SLOT_DONE && !s->cancel_req) {
        s->cancel_req = true;
        if (s->state == SLOT_ACTIVE)
            e->n_pending_cancel++;
        pthread_cond_signal(&e->wake);
    }
    pthread_mutex_unlock(&e->mu);
    return st;
}

void hy_engine_release(struct hy_engine *e, uint64_t handle)
{
    if (e->remote) {
        e->remote->release(e->remote_ctx, handle);
        return;
    }
    pthread_mutex_lock(&e->mu);
    struct slot *s = slot_of(e, handle);
    if (s && s->state == SLOT_DONE) {
        slot_free(e, s);
    } else if (s) {
        if (!s->cancel_req && s->state == SLOT_ACTIVE)
            e->n_pending_cancel++;
        s->cancel_req = true;
        s->released = true; /* freed by slot_finish */
        pthread_cond_signal(&e->wake);
    }
    pthread_mutex_unlock(&e->mu);
}

void hy_engine_stats(struct hy_engine *e, struct hy_engine_stats *out)
{
    if (e->remote) {
        memset(out, 0, sizeof *out);
        if (e->remote->stats)
            e->remote->stats(e->remote_ctx, out);
        return;
    }
    pthread_mutex_lock(&e->mu);
    *out = e->stats;
    out->slots_in_use = e->n_slots - e->n_free;
    pthread_mutex_unlock(&e->mu);
}

const struct hy_engine_params *hy_engine_get_params(const struct hy_engine *e) { return &e->p; }

const struct hy_model *hy_engine_model(const struct hy_engine *e) { return e->m; }
