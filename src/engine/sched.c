/* sched.c: the continuous-batching scheduler.
 * A request lives in a slot (fixed pool of max_queue + max_running) and is on exactly one
 * list: free, waiting (FIFO; preempted requests re-enter at the front) or running (in
 * admission order, so the tail is the newest). Its tokens (prompt, then generated) are kept in
 * the slot, so a preempted request is re-admitted as one longer prompt and computes the same
 * positions again (its full blocks are usually still cached).
 * Per running request: n_computed tokens have K/V in the pool; all n_total tokens are known.
 * Prefill runs positions [n_computed, n_total) in chunks; the chunk reaching n_total samples.
 * After the first sample the request decodes: the sampled token gets its KV slot at the next
 * step's planning (where running out of blocks can be answered by preemption), never at
 * commit, so commit cannot fail. */
#include "engine/sched.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SLOTS (1 << 24) /* request slots; the low 32 bits of an id are the slot */

enum req_state { REQ_FREE, REQ_WAITING, REQ_RUNNING };

struct req {
    uint64_t id; /* serial << 32 | slot */
    void *user;
    double deadline; /* 0 = none */
    int32_t *tokens; /* [max_seq_tokens] prompt then generated */
    int n_prompt;    /* tokens of the original prompt */
    int n_total;     /* prompt + generated */
    int max_new;     /* generated tokens allowed */
    int n_computed;  /* leading tokens with K/V in the pool (0 unless running) */
    int seq;         /* KV handle while running, else -1 */
    int prev, next;  /* links in the list the state names */
    enum req_state state;
    bool cancelled; /* drop at the next step */
    bool prefilled; /* sampled since its admission: decodes one token per step */
};

struct list {
    int head, tail, n;
};

struct hy_sched {
    struct hy_sched_params p;
    struct hy_kv *kv;
    int n_slots;
    struct req *reqs;   /* [n_slots] */
    int32_t *tok_store; /* [n_slots, max_seq_tokens] */
    struct list free_slots, waiting, running;
    struct hy_sched_item *items; /* [max_running] the current plan */
    int32_t *batch_tokens;       /* [max_batch_tokens] */
    struct hy_sched_done *done;  /* [n_slots] ends since the step began */
    int n_items, n_batch_tokens, n_sample, n_done;
    bool pending; /* a non-empty plan awaits its commit */
    uint64_t next_serial;
    int64_t steps, preemptions, submitted, tokens_computed, tokens_generated;
    int64_t finished[HY_FINISH_COUNT];
};

const char *hy_finish_str(enum hy_finish f)
{
    switch (f) {
    case HY_FINISH_NONE: return "none";
    case HY_FINISH_STOP: return "stop";
    case HY_FINISH_LENGTH: return "length";
    case HY_FINISH_CANCELLED: return "cancelled";
    case HY_FINISH_TIMEOUT: return "timeout";
    case HY_FINISH_ERROR: return "error";
    case HY_FINISH_COUNT: break;
    }
    return "unknown";
}

/* ---- index lists through req.prev / req.next ---- */

static void list_push_back(struct hy_sched *s, struct list *l, int i)
{
    s->reqs[i].prev = l->tail;
    s->reqs[i].next = -1;
    if (l->tail >= 0)
        s->reqs[l->tail].next = i;
    else
        l->head = i;
    l->tail = i;
    l->n++;
}

static void list_push_front(struct hy_sched *s, struct list *l, int i)
{
    s->reqs[i].prev = -1;
    s->reqs[i].next = l->head;
    if (l->head >= 0)
        s->reqs[l->head].prev = i;
    else
        l->tail = i;
    l->head = i;
    l->n++;
}

static void list_remove(struct hy_sched *s, struct list *l, int i)
{
    struct req *r = &s->reqs[i];
    if (r->prev >= 0)
        s->reqs[r->prev].next = r->next;
    else
        l->head = r->next;
    if (r->next >= 0)
        s->reqs[r->next].prev = r->prev;
    else
        l->tail = r->prev;
    r->prev = r->next = -1;
    l->n--;
}

static int slot_of(const struct hy_sched *s, const struct req *r)
{
    return (int)(r - s->reqs);
}

/* The live request with this id, or NULL. */
static struct req *find(const struct hy_sched *s, uint64_t id)
{
    uint64_t slot = id & 0xffffffffu;
    if (slot >= (uint64_t)s->n_slots)
        return NULL;
    struct req *r = &s->reqs[slot];
    return r->state != REQ_FREE && r->id == id ? r : NULL;
}

/* ---- create / destroy ---- */

static hy_status check_params(const struct hy_sched_params *p, struct hy_err *err)
{
    if (p->max_queue < 1 || p->max_running < 1 ||
        (int64_t)p->max_queue + p->max_running > MAX_SLOTS)
        return hy_err_set(err, HY_E_RANGE, "sched: max_queue %d / max_running %d out of range",
                          p->max_queue, p->max_running);
    if (p->max_batch_tokens < p->max_running)
        return hy_err_set(err, HY_E_INVAL,
                          "sched: max_batch_tokens %d must cover a decode token for each of "
                          "max_running %d sequences",
                          p->max_batch_tokens, p->max_running);
    if (p->max_seq_tokens < 2)
        return hy_err_set(err, HY_E_RANGE, "sched: max_seq_tokens %d below 2", p->max_seq_tokens);
    if (p->n_blocks < p->max_running)
        return hy_err_set(err, HY_E_RANGE, "sched: %d KV blocks for %d running sequences",
                          p->n_blocks, p->max_running);
    return HY_OK;
}

hy_status hy_sched_create(struct hy_sched **out, const struct hy_sched_params *p,
                          struct hy_err *err)
{
    *out = NULL;
    hy_status st = check_params(p, err);
    if (st != HY_OK)
        return st;
    struct hy_sched *s = calloc(1, sizeof *s);
    if (!s)
        return hy_err_set(err, HY_E_NOMEM, "sched: out of memory");
    s->p = *p;
    int bs = p->block_size > 0 ? p->block_size : HY_KV_BLOCK_SIZE_DEFAULT;
    st = hy_kv_create(&s->kv, p->n_blocks, bs, p->max_running,
                      (int)(((int64_t)p->max_seq_tokens + bs - 1) / bs), err);
    if (st != HY_OK) {
        free(s);
        return st;
    }
    s->n_slots = p->max_queue + p->max_running;
    /* Everything the scheduler will ever use: per slot a request and max_seq_tokens token ids,
     * per step max_running items and max_batch_tokens ids, one done event per slot. */
    s->reqs = calloc((size_t)s->n_slots, sizeof *s->reqs);
    s->tok_store = calloc((size_t)s->n_slots * (size_t)p->max_seq_tokens, sizeof *s->tok_store);
    s->items = calloc((size_t)p->max_running, sizeof *s->items);
    s->batch_tokens = calloc((size_t)p->max_batch_tokens, sizeof *s->batch_tokens);
    s->done = calloc((size_t)s->n_slots, sizeof *s->done);
    if (!s->reqs || !s->tok_store || !s->items || !s->batch_tokens || !s->done) {
        hy_sched_destroy(s);
        return hy_err_set(err, HY_E_NOMEM, "sched: out of memory for %d request slots", s->n_slots);
    }
    s->free_slots = s->waiting = s->running = (struct list){-1, -1, 0};
    for (int i = 0; i < s->n_slots; i++) {
        s->reqs[i] = (struct req){.seq = -1, .state = REQ_FREE};
        s->reqs[i].tokens = s->tok_store + (size_t)i * (size_t)p->max_seq_tokens;
        list_push_back(s, &s->free_slots, i);
    }
    s->next_serial = 1;
    *out = s;
    return HY_OK;
}

void hy_sched_destroy(struct hy_sched *s)
{
    if (!s)
        return;
    hy_kv_destroy(s->kv);
    free(s->reqs);
    free(s->tok_store);
    free(s->items);
    free(s->batch_tokens);
    free(s->done);
    free(s);
}

/* ---- submit / cancel ---- */

hy_status hy_sched_submit(struct hy_sched *s, const struct hy_sched_request *r, uint64_t *id,
                          struct hy_err *err)
{
    if (!r->prompt || r->n_prompt < 1 || r->max_new_tokens < 1)
        return hy_err_set(err, HY_E_INVAL, "sched: empty prompt or max_new_tokens %d < 1",
                          r->max_new_tokens);
    int64_t total = (int64_t)r->n_prompt + r->max_new_tokens;
    if (total > s->p.max_seq_tokens)
        return hy_err_set(err, HY_E_RANGE, "sched: %d prompt + %d new tokens exceed %d",
                          r->n_prompt, r->max_new_tokens, s->p.max_seq_tokens);
    if (hy_kv_blocks_for(s->kv, total) > s->p.n_blocks)
        return hy_err_set(err, HY_E_RANGE, "sched: %lld tokens do not fit the KV pool",
                          (long long)total);
    if (s->waiting.n >= s->p.max_queue)
        return hy_err_set(err, HY_E_NOSPACE, "sched: queue full (%d waiting)", s->waiting.n);
    int i = s->free_slots.head;
    HY_ASSERT(i >= 0); /* waiting < max_queue and running <= max_running leave a slot */
    list_remove(s, &s->free_slots, i);
    struct req *q = &s->reqs[i];
    q->id = (s->next_serial++ << 32) | (uint64_t)i;
    q->user = r->user;
    q->deadline = r->deadline;
    memcpy(q->tokens, r->prompt, (size_t)r->n_prompt * sizeof *q->tokens);
    q->n_prompt = q->n_total = r->n_prompt;
    q->max_new = r->max_new_tokens;
    q->n_computed = 0;
    q->seq = -1;
    q->state = REQ_WAITING;
    q->cancelled = q->prefilled = false;
    list_push_back(s, &s->waiting, i);
    s->submitted++;
    *id = q->id;
    return HY_OK;
}

hy_status hy_sched_cancel(struct hy_sched *s, uint64_t id)
{
    struct req *r = find(s, id);
    if (!r)
        return HY_E_NOTFOUND;
    r->cancelled = true;
    return HY_OK;
}

/* Ends a waiting or running request: frees its blocks and slot, records the done event. */
static void finish(struct hy_sched *s, struct req *r, enum hy_finish reason)
{
    int i = slot_of(s, r);
    if (r->state == REQ_RUNNING) {
        hy_kv_seq_free(s->kv, r->seq);
        list_remove(s, &s->running, i);
    } else {
        list_remove(s, &s->waiting, i);
    }
    HY_ASSERT(s->n_done < s->n_slots); /* each live request ends at most once per step */
    s->done[s->n_done++] = (struct hy_sched_done){
        .id = r->id,
        .user = r->user,
        .reason = reason,
        .n_prompt = r->n_prompt,
        .n_generated = r->n_total - r->n_prompt,
    };
    s->finished[reason]++;
    r->state = REQ_FREE;
    r->seq = -1;
    r->n_computed = 0;
    list_push_back(s, &s->free_slots, i);
}

/* Sends a running request back to the front of the queue, keeping its tokens. */
static void preempt(struct hy_sched *s, struct req *r)
{
    int i = slot_of(s, r);
    hy_kv_seq_free(s->kv, r->seq);
    r->seq = -1;
    r->n_computed = 0;
    r->prefilled = false;
    list_remove(s, &s->running, i);
    r->state = REQ_WAITING;
    list_push_front(s, &s->waiting, i);
    s->preemptions++;
}

/* ---- planning ---- */

static void drop_expired(struct hy_sched *s, struct list *l, double now)
{
    for (int i = l->head, next; i >= 0; i = next) {
        struct req *r = &s->reqs[i];
        next = r->next;
        if (r->cancelled)
            finish(s, r, HY_FINISH_CANCELLED);
        else if (r->deadline > 0 && now >= r->deadline)
            finish(s, r, HY_FINISH_TIMEOUT);
    }
}

static void add_item(struct hy_sched *s, struct req *r, int n)
{
    HY_ASSERT(s->n_items < s->p.max_running && n >= 1 &&
              s->n_batch_tokens + n <= s->p.max_batch_tokens);
    struct hy_kv_seq_info si = hy_kv_seq_get(s->kv, r->seq);
    bool sample = r->n_computed + n == r->n_total;
    s->items[s->n_items++] = (struct hy_sched_item){
        .id = r->id,
        .user = r->user,
        .seq = r->seq,
        .pos = r->n_computed,
        .n_tokens = n,
        .offset = s->n_batch_tokens,
        .sample = sample,
        .blocks = si.blocks,
        .n_blocks = hy_kv_blocks_for(s->kv, (int64_t)r->n_computed + n),
    };
    memcpy(s->batch_tokens + s->n_batch_tokens, r->tokens + r->n_computed,
           (size_t)n * sizeof *r->tokens);
    s->n_batch_tokens += n;
    s->n_sample += sample;
}

/* Gives the last sampled token of r a KV slot, preempting the newest running requests while
 * the pool is short. False when r itself had to go (it was the newest). */
static bool make_room(struct hy_sched *s, struct req *r, bool *preempted)
{
    while (hy_kv_seq_get(s->kv, r->seq).n_tokens < r->n_total) {
        hy_status st = hy_kv_seq_append(s->kv, r->seq, &r->tokens[r->n_total - 1], 1, NULL);
        if (st == HY_OK)
            break;
        HY_ASSERT(st == HY_E_NOSPACE);
        struct req *victim = &s->reqs[s->running.tail];
        preempt(s, victim);
        *preempted = true;
        if (victim == r)
            return false;
    }
    return true;
}

/* (2) One token for every decoding request, oldest first; returns whether any was preempted.
 * Victims are always newer than the request being served, so none was planned yet. */
static bool plan_decodes(struct hy_sched *s)
{
    bool preempted = false;
    for (int i = s->running.head; i >= 0; i = s->reqs[i].next) {
        struct req *r = &s->reqs[i];
        if (!r->prefilled)
            continue;
        HY_ASSERT(r->n_total - r->n_computed == 1);
        if (!make_room(s, r, &preempted))
            break; /* r was the tail: nothing follows it */
        add_item(s, r, 1);
    }
    return preempted;
}

/* (3) Continue prefills, oldest first, within the budget left. */
static void plan_prefills(struct hy_sched *s)
{
    for (int i = s->running.head; i >= 0; i = s->reqs[i].next) {
        struct req *r = &s->reqs[i];
        int budget = s->p.max_batch_tokens - s->n_batch_tokens;
        if (budget == 0)
            break;
        if (r->prefilled)
            continue;
        int left = r->n_total - r->n_computed;
        add_item(s, r, left < budget ? left : budget);
    }
}

/* (4) Admit from the front of the queue while a sequence, its blocks and budget are there. */
static void admit(struct hy_sched *s)
{
    while (s->waiting.head >= 0 && s->running.n < s->p.max_running &&
           s->n_batch_tokens < s->p.max_batch_tokens) {
        int i = s->waiting.head;
        struct req *r = &s->reqs[i];
        int seq, cached;
        hy_status st = hy_kv_seq_start(s->kv, r->tokens, r->n_total, &seq, &cached, NULL);
        if (st != HY_OK) {
            HY_ASSERT(st == HY_E_NOSPACE);
            break; /* strict FIFO: later requests wait behind this one */
        }
        list_remove(s, &s->waiting, i);
        r->state = REQ_RUNNING;
        r->seq = seq;
        r->n_computed = cached;
        r->prefilled = false;
        list_push_back(s, &s->running, i);
        int left = r->n_total - cached, budget = s->p.max_batch_tokens - s->n_batch_tokens;
        add_item(s, r, left < budget ? left : budget);
    }
}

void hy_sched_step(struct hy_sched *s, double now, struct hy_sched_batch *out)
{
    HY_ASSERT(!s->pending);
    s->n_items = s->n_batch_tokens = s->n_sample = s->n_done = 0;
    drop_expired(s, &s->running, now);
    drop_expired(s, &s->waiting, now);
    bool preempted = plan_decodes(s);
    plan_prefills(s);
    if (!preempted) /* the freed blocks are for the older requests, not for re-admission */
        admit(s);
    *out = (struct hy_sched_batch){
        .items = s->items,
        .n_items = s->n_items,
        .tokens = s->batch_tokens,
        .n_tokens = s->n_batch_tokens,
        .n_sample = s->n_sample,
    };
    s->pending = s->n_items > 0;
    s->steps += s->pending; /* a step is a forward pass: an empty plan (waiting on memory or a
                             * deadline) is not one, or the metrics' mean batch would sink */
}

void hy_sched_commit(struct hy_sched *s, const struct hy_sched_result *results)
{
    for (int k = 0; k < s->n_items; k++) {
        const struct hy_sched_item *it = &s->items[k];
        struct req *r = find(s, it->id);
        HY_ASSERT(r && r->state == REQ_RUNNING && r->n_computed == it->pos);
        hy_kv_seq_computed(s->kv, r->seq, it->n_tokens);
        r->n_computed += it->n_tokens;
        s->tokens_computed += it->n_tokens;
        enum hy_finish f = results[k].finish;
        HY_ASSERT(f == HY_FINISH_NONE || f == HY_FINISH_ERROR ||
                  (it->sample && (f == HY_FINISH_STOP || f == HY_FINISH_LENGTH)));
        if (it->sample) {
            HY_ASSERT(r->n_total - r->n_prompt < r->max_new);
            r->tokens[r->n_total++] = results[k].token;
            r->prefilled = true;
            s->tokens_generated++;
            if (f == HY_FINISH_NONE && r->n_total - r->n_prompt == r->max_new)
                f = HY_FINISH_LENGTH;
        }
        if (f != HY_FINISH_NONE)
            finish(s, r, f);
    }
    s->n_items = 0;
    s->pending = false;
}

const struct hy_sched_done *hy_sched_done(const struct hy_sched *s, int *n)
{
    *n = s->n_done;
    return s->done;
}

const int32_t *hy_sched_tokens(const struct hy_sched *s, uint64_t id, int *n_prompt, int *n_total)
{
    const struct req *r = find(s, id);
    if (!r)
        return NULL;
    *n_prompt = r->n_prompt;
    *n_total = r->n_total;
    return r->tokens;
}

const struct hy_kv *hy_sched_kv(const struct hy_sched *s)
{
    return s->kv;
}

void hy_sched_stats(const struct hy_sched *s, struct hy_sched_stats *out)
{
    *out = (struct hy_sched_stats){
        .n_waiting = s->waiting.n,
        .n_running = s->running.n,
        .n_slots_free = s->free_slots.n,
        .steps = s->steps,
        .preemptions = s->preemptions,
        .submitted = s->submitted,
        .tokens_computed = s->tokens_computed,
        .tokens_generated = s->tokens_generated,
    };
    memcpy(out->finished, s->finished, sizeof out->finished);
    hy_kv_stats(s->kv, &out->kv);
}

/* ---- invariants ---- */

#define FAIL(...) return hy_err_set(err, HY_E_FORMAT, "sched check: " __VA_ARGS__)

/* A list's links run both ways, its length matches and its members carry its state. */
static hy_status check_list(const struct hy_sched *s, const struct list *l, enum req_state state,
                            const char *name, struct hy_err *err)
{
    int n = 0, prev = -1;
    for (int i = l->head; i >= 0; prev = i, i = s->reqs[i].next, n++) {
        if (i >= s->n_slots || n >= s->n_slots || s->reqs[i].prev != prev)
            FAIL("%s list is corrupt at slot %d", name, i);
        if (s->reqs[i].state != state)
            FAIL("slot %d on the %s list has state %d", i, name, (int)s->reqs[i].state);
    }
    if (n != l->n || prev != l->tail)
        FAIL("%s list holds %d ending at %d, counters say %d ending at %d", name, n, prev, l->n,
             l->tail);
    return HY_OK;
}

/* One live request: sizes in range; a running one's KV sequence holds exactly its tokens. */
static hy_status check_req(const struct hy_sched *s, int i, struct hy_err *err)
{
    const struct req *r = &s->reqs[i];
    if ((r->id & 0xffffffffu) != (uint64_t)i || r->n_prompt < 1 || r->n_total < r->n_prompt ||
        r->n_total - r->n_prompt >= r->max_new || r->n_prompt + r->max_new > s->p.max_seq_tokens)
        FAIL("slot %d: id %llx, %d prompt + %d of %d new tokens", i, (unsigned long long)r->id,
             r->n_prompt, r->n_total - r->n_prompt, r->max_new);
    if (r->state == REQ_WAITING) {
        if (r->seq != -1 || r->n_computed != 0 || r->prefilled)
            FAIL("waiting slot %d holds KV state", i);
        return HY_OK;
    }
    if (r->seq < 0 || r->seq >= s->p.max_running)
        FAIL("running slot %d has sequence %d", i, r->seq);
    struct hy_kv_seq_info si = hy_kv_seq_get(s->kv, r->seq);
    /* a decoding request's last token gets its slot at the next step's planning */
    bool ok = r->prefilled ? r->n_computed == r->n_total - 1 &&
                                 (si.n_tokens == r->n_total || si.n_tokens == r->n_total - 1)
                           : r->n_computed < r->n_total && si.n_tokens == r->n_total;
    if (!ok || si.n_computed != r->n_computed)
        FAIL("running slot %d: %d/%d computed, KV %d/%d", i, r->n_computed, r->n_total,
             si.n_computed, si.n_tokens);
    int bs = hy_kv_block_size(s->kv);
    for (int p = 0; p < si.n_tokens; p++)
        if (hy_kv_block_tokens(s->kv, si.blocks[p / bs])[p % bs] != r->tokens[p])
            FAIL("running slot %d: KV token %d differs from the request's", i, p);
    return HY_OK;
}

hy_status hy_sched_check(const struct hy_sched *s, struct hy_err *err)
{
    hy_status st;
    if ((st = check_list(s, &s->free_slots, REQ_FREE, "free", err)) != HY_OK ||
        (st = check_list(s, &s->waiting, REQ_WAITING, "waiting", err)) != HY_OK ||
        (st = check_list(s, &s->running, REQ_RUNNING, "running", err)) != HY_OK)
        return st;
    if (s->free_slots.n + s->waiting.n + s->running.n != s->n_slots)
        FAIL("%d free + %d waiting + %d running slots != %d", s->free_slots.n, s->waiting.n,
             s->running.n, s->n_slots);
    if (s->running.n > s->p.max_running)
        FAIL("%d running > max_running %d", s->running.n, s->p.max_running);
    for (int i = 0; i < s->n_slots; i++)
        if (s->reqs[i].state != REQ_FREE && (st = check_req(s, i, err)) != HY_OK)
            return st;
    struct hy_kv_stats ks;
    hy_kv_stats(s->kv, &ks);
    if (ks.n_seqs != s->running.n)
        FAIL("%d KV sequences for %d running requests", ks.n_seqs, s->running.n);
    int64_t ended = 0;
    for (int f = 0; f < HY_FINISH_COUNT; f++)
        ended += s->finished[f];
    if (s->submitted - ended != s->waiting.n + s->running.n)
        FAIL("%lld submitted - %lld finished != %d live", (long long)s->submitted, (long long)ended,
             s->waiting.n + s->running.n);
    return hy_kv_check(s->kv, err);
}
