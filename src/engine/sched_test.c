/* sched_test.c: the scheduler driven by a fake model that is deterministic on the whole
 * sequence and reads its context through the plan's block tables from a shadow KV memory
 * (each slot records token, position and the step that wrote it). A bookkeeping error (wrong
 * block shared, slot reused too early, a block read in the step that writes it) changes the
 * fake model's output or trips a check. Hand cases cover every path; a randomized stress run
 * (submit, cancel, time out, stop, length, error, preemption with a pool far too small) checks
 * every invariant after every step and each output against the same request run alone. */
#include "engine/sched.h"
#include "test.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define MAXT 128 /* tokens per request in these tests */
#define VOCAB 61
#define STOP_TOK 7
#define HSEED 0x5eed5eed5eedULL

#define SCHED_CHECK(s)                                                                             \
    do {                                                                                           \
        struct hy_err e_ = {{0}};                                                                  \
        hy_status st_ = hy_sched_check(s, &e_);                                                    \
        CHECKF(st_ == HY_OK, "%s", e_.msg);                                                        \
    } while (0)

/* The test's own record of a request (the plan items' user pointer). */
struct rec {
    int32_t toks[MAXT]; /* prompt, then the tokens the fake model produced and committed */
    int n_prompt, n_total, max_new;
    uint64_t id;
    double deadline;
    bool cancelled, done;
    enum hy_finish reason; /* from the done event */
    bool fail_next;        /* report HY_FINISH_ERROR at its next item */
};

struct kvslot {
    int32_t tok, pos;
    int64_t written, pending; /* step that wrote it / that will write it */
};

struct env {
    struct hy_sched *s;
    struct hy_sched_params p;
    struct kvslot *mem; /* [n_blocks * block_size] the fake K/V memory */
    int64_t step;
    int64_t n_done[HY_FINISH_COUNT];
    int max_items_seen;
};

static uint64_t hmix(uint64_t h, int32_t t)
{
    h ^= (uint32_t)t + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 29);
}

/* The next token after toks[0..n): the fake model's whole definition. */
static int32_t next_token(uint64_t h)
{
    return (int32_t)(h % VOCAB);
}

/* What the request produces alone: its tokens and how it ends (STOP or LENGTH). */
static enum hy_finish run_alone(const struct rec *q, int32_t *out, int *n_out)
{
    memcpy(out, q->toks, (size_t)q->n_prompt * sizeof *out);
    int n = q->n_prompt;
    for (;;) {
        uint64_t h = HSEED;
        for (int i = 0; i < n; i++)
            h = hmix(h, out[i]);
        out[n++] = next_token(h);
        *n_out = n;
        if (out[n - 1] == STOP_TOK)
            return HY_FINISH_STOP;
        if (n - q->n_prompt == q->max_new)
            return HY_FINISH_LENGTH;
    }
}

static void env_init(struct env *e, struct hy_sched_params p)
{
    memset(e, 0, sizeof *e);
    e->p = p;
    struct hy_err err = {{0}};
    hy_status st = hy_sched_create(&e->s, &p, &err);
    CHECKF(st == HY_OK, "%s", err.msg);
    int bs = p.block_size > 0 ? p.block_size : HY_KV_BLOCK_SIZE_DEFAULT;
    e->p.block_size = bs;
    e->mem = calloc((size_t)p.n_blocks * (size_t)bs, sizeof *e->mem);
    if (!e->s || !e->mem)
        abort();
    for (int i = 0; i < p.n_blocks * bs; i++)
        e->mem[i] = (struct kvslot){-1, -1, -1, -1};
}

static void env_free(struct env *e)
{
    hy_sched_destroy(e->s);
    free(e->mem);
}

static struct kvslot *slot_at(struct env *e, const struct hy_sched_item *it, int p)
{
    int bs = e->p.block_size;
    HY_ASSERT(p / bs < it->n_blocks);
    int32_t b = it->blocks[p / bs];
    HY_ASSERT(b >= 0 && b < e->p.n_blocks);
    return &e->mem[(size_t)b * bs + p % bs];
}

/* Reads the context of one item through its block table and hashes it with the new tokens. */
static uint64_t fake_read(struct env *e, const struct hy_sched_batch *b,
                          const struct hy_sched_item *it)
{
    struct rec *q = it->user;
    uint64_t h = HSEED;
    for (int p = 0; p < it->pos; p++) {
        struct kvslot *sl = slot_at(e, it, p);
        CHECKF(sl->tok == q->toks[p] && sl->pos == p && sl->written < e->step &&
                   sl->pending != e->step,
               "step %lld: position %d of request %llx reads (%d, %d) written at %lld",
               (long long)e->step, p, (unsigned long long)q->id, sl->tok, sl->pos,
               (long long)sl->written);
        h = hmix(h, sl->tok);
    }
    for (int j = 0; j < it->n_tokens; j++) {
        CHECK(b->tokens[it->offset + j] == q->toks[it->pos + j]);
        h = hmix(h, b->tokens[it->offset + j]);
    }
    return h;
}

/* One batched "forward": mark the slots this step writes, read every context, then write. */
static void fake_forward(struct env *e, const struct hy_sched_batch *b, struct hy_sched_result *res)
{
    int n_tok = 0, n_sample = 0;
    for (int k = 0; k < b->n_items; k++) {
        const struct hy_sched_item *it = &b->items[k];
        CHECK(it->offset == n_tok && it->n_tokens >= 1);
        n_tok += it->n_tokens;
        n_sample += it->sample;
        for (int j = 0; j < k; j++)
            CHECK(b->items[j].seq != it->seq && b->items[j].id != it->id);
        for (int p = it->pos; p < it->pos + it->n_tokens; p++)
            slot_at(e, it, p)->pending = e->step;
    }
    CHECK(n_tok == b->n_tokens && n_tok <= e->p.max_batch_tokens && n_sample == b->n_sample);
    for (int k = 0; k < b->n_items; k++) {
        const struct hy_sched_item *it = &b->items[k];
        struct rec *q = it->user;
        uint64_t h = fake_read(e, b, it);
        res[k] = (struct hy_sched_result){.token = -1, .finish = HY_FINISH_NONE};
        CHECK(it->sample == (it->pos + it->n_tokens == q->n_total));
        if (it->sample) {
            res[k].token = next_token(h);
            res[k].finish = res[k].token == STOP_TOK ? HY_FINISH_STOP : HY_FINISH_NONE;
        }
        if (q->fail_next)
            res[k].finish = HY_FINISH_ERROR;
    }
    for (int k = 0; k < b->n_items; k++) {
        const struct hy_sched_item *it = &b->items[k];
        struct rec *q = it->user;
        for (int p = it->pos; p < it->pos + it->n_tokens; p++)
            *slot_at(e, it, p) = (struct kvslot){q->toks[p], p, e->step, -1};
        if (it->sample)
            q->toks[q->n_total++] = res[k].token;
    }
}

/* Done events: reasons and token counts agree with the records; STOP / LENGTH outputs equal
 * the request run alone, and any other ending holds a prefix of it. */
static void take_done(struct env *e, double now)
{
    int n;
    const struct hy_sched_done *d = hy_sched_done(e->s, &n);
    for (int i = 0; i < n; i++) {
        struct rec *q = d[i].user;
        CHECK(!q->done && d[i].id == q->id && d[i].n_prompt == q->n_prompt);
        CHECK(d[i].n_generated == q->n_total - q->n_prompt);
        q->done = true;
        q->reason = d[i].reason;
        e->n_done[d[i].reason]++;
        int32_t want[MAXT];
        int n_want;
        enum hy_finish alone = run_alone(q, want, &n_want);
        bool prefix =
            q->n_total <= n_want && memcmp(want, q->toks, (size_t)q->n_total * sizeof *want) == 0;
        CHECKF(prefix, "request %llx: output differs from running alone",
               (unsigned long long)q->id);
        if (d[i].reason == HY_FINISH_STOP || d[i].reason == HY_FINISH_LENGTH)
            CHECK(d[i].reason == alone && q->n_total == n_want);
        if (d[i].reason == HY_FINISH_CANCELLED)
            CHECK(q->cancelled);
        if (d[i].reason == HY_FINISH_TIMEOUT)
            CHECK(q->deadline > 0 && now >= q->deadline && !q->cancelled);
        if (d[i].reason == HY_FINISH_ERROR)
            CHECK(q->fail_next);
        CHECK(hy_sched_tokens(e->s, q->id, &(int){0}, &(int){0}) == NULL);
        CHECK(hy_sched_cancel(e->s, q->id) == HY_E_NOTFOUND);
    }
}

/* step + forward + commit + done events, with invariant checks after step and commit. */
static struct hy_sched_batch run_step(struct env *e, double now)
{
    struct hy_sched_batch b;
    struct hy_sched_result res[64];
    e->step++;
    hy_sched_step(e->s, now, &b);
    SCHED_CHECK(e->s);
    HY_ASSERT(b.n_items <= 64);
    if (b.n_items > e->max_items_seen)
        e->max_items_seen = b.n_items;
    if (b.n_items > 0) {
        fake_forward(e, &b, res);
        hy_sched_commit(e->s, res);
        SCHED_CHECK(e->s);
    }
    take_done(e, now);
    return b;
}

static uint64_t submit(struct env *e, struct rec *q, hy_status want)
{
    struct hy_sched_request r = {q->toks, q->n_prompt, q->max_new, q->deadline, q};
    struct hy_err err = {{0}};
    uint64_t id = 0;
    hy_status st = hy_sched_submit(e->s, &r, &id, &err);
    CHECKF(st == want, "submit: %s (%s)", hy_status_str(st), err.msg);
    q->n_total = q->n_prompt;
    q->id = id;
    q->done = q->cancelled = q->fail_next = false;
    q->reason = HY_FINISH_NONE;
    return id;
}

static void rec_init(struct rec *q, int n_prompt, int32_t base, int max_new)
{
    memset(q, 0, sizeof *q);
    for (int i = 0; i < n_prompt; i++)
        q->toks[i] = (base + i * 13) % VOCAB == STOP_TOK ? 1 : (base + i * 13) % VOCAB;
    q->n_prompt = q->n_total = n_prompt;
    q->max_new = max_new;
}

static struct hy_sched_stats sstats(const struct env *e)
{
    struct hy_sched_stats st;
    hy_sched_stats(e->s, &st);
    return st;
}

/* Drives steps at clock now++ until nothing is live (bounded). */
static void drain(struct env *e, double *now)
{
    for (int i = 0; i < 100000; i++) {
        struct hy_sched_stats st = sstats(e);
        if (st.n_waiting + st.n_running == 0)
            return;
        run_step(e, (*now)++);
    }
    CHECKF(false, "did not drain");
}

/* Every block free or cached, every slot free. */
static void check_idle(const struct env *e)
{
    struct hy_sched_stats st = sstats(e);
    CHECK(st.kv.n_used == 0 && st.kv.n_free + st.kv.n_cached == e->p.n_blocks);
    CHECK(st.n_slots_free == e->p.max_queue + e->p.max_running && st.kv.n_seqs == 0);
    SCHED_CHECK(e->s);
}

static struct hy_sched_params params(int max_queue, int max_running, int budget, int max_seq,
                                     int n_blocks, int bs)
{
    return (struct hy_sched_params){max_queue, max_running, budget, max_seq, n_blocks, bs};
}

/* A prompt whose lone run ends with `want` (STOP or LENGTH). */
static void rec_pick(struct rec *q, int n_prompt, int max_new, enum hy_finish want, int32_t seed)
{
    int32_t out[MAXT];
    int n;
    for (int32_t base = seed;; base++) {
        rec_init(q, n_prompt, base, max_new);
        if (run_alone(q, out, &n) == want)
            return;
    }
}

static void test_create_errors(void)
{
    struct hy_sched *s = NULL;
    struct hy_sched_params p = params(4, 2, 8, 64, 16, 4);
    CHECK(hy_sched_create(&s, &p, NULL) == HY_OK && s);
    hy_sched_destroy(s);
    hy_sched_destroy(NULL);
    p = params(0, 2, 8, 64, 16, 4);
    CHECK(hy_sched_create(&s, &p, NULL) == HY_E_RANGE && !s);
    p = params(4, 2, 1, 64, 16, 4);
    CHECK(hy_sched_create(&s, &p, NULL) == HY_E_INVAL);
    p = params(4, 2, 8, 1, 16, 4);
    CHECK(hy_sched_create(&s, &p, NULL) == HY_E_RANGE);
    p = params(4, 2, 8, 64, 1, 4);
    CHECK(hy_sched_create(&s, &p, NULL) == HY_E_RANGE);
    p = params(4, 2, 8, 64, 16, 5000);
    CHECK(hy_sched_create(&s, &p, NULL) == HY_E_RANGE && !s);
    for (int f = 0; f <= HY_FINISH_COUNT; f++)
        CHECK(hy_finish_str((enum hy_finish)f)[0] != '\0');
    CHECK(strcmp(hy_finish_str(HY_FINISH_TIMEOUT), "timeout") == 0);
}

/* Bad requests and a full queue are refused and change nothing; a slot opens on admission. */
static void test_submit_errors_and_queue_full(void)
{
    struct env e;
    env_init(&e, params(2, 1, 8, 32, 6, 4));
    struct rec q[5];
    for (int i = 0; i < 5; i++)
        rec_pick(&q[i], 6, 4, HY_FINISH_LENGTH, 100 * i);
    struct rec bad = q[0];
    bad.n_prompt = 0;
    submit(&e, &bad, HY_E_INVAL);
    bad = q[0];
    bad.max_new = 0;
    submit(&e, &bad, HY_E_INVAL);
    bad.max_new = 27; /* 6 + 27 > 32 */
    submit(&e, &bad, HY_E_RANGE);
    bad.max_new = 20; /* 26 tokens need 7 blocks of 4; the pool has 6 */
    submit(&e, &bad, HY_E_RANGE);
    CHECK(submit(&e, &q[0], HY_OK) != 0);
    CHECK(submit(&e, &q[1], HY_OK) != 0);
    struct hy_sched_stats before = sstats(&e);
    struct hy_err err = {{0}};
    struct hy_sched_request r = {q[2].toks, 6, 4, 0, &q[2]};
    uint64_t id = 0;
    CHECK(hy_sched_submit(e.s, &r, &id, &err) == HY_E_NOSPACE && err.msg[0] && id == 0);
    struct hy_sched_stats after = sstats(&e);
    CHECK(before.n_waiting == 2 && after.n_waiting == 2 && after.submitted == 2);
    CHECK(after.n_slots_free == before.n_slots_free);
    SCHED_CHECK(e.s);
    double now = 1;
    run_step(&e, now++); /* admits q0: one queue place opens */
    CHECK(sstats(&e).n_waiting == 1 && sstats(&e).n_running == 1);
    submit(&e, &q[2], HY_OK);
    submit(&e, &q[3], HY_E_NOSPACE);
    drain(&e, &now);
    CHECK(q[0].reason == HY_FINISH_LENGTH && q[1].reason == HY_FINISH_LENGTH);
    CHECK(q[2].reason == HY_FINISH_LENGTH && !q[3].done);
    check_idle(&e);
    env_free(&e);
}

/* A 10-token prompt under a 4-token budget: chunks 4, 4, 2 (sampling), then decodes until
 * max_new_tokens; the computed positions stay cached and serve later prompts. */
static void test_chunked_prefill_length_and_hits(void)
{
    struct env e;
    env_init(&e, params(4, 2, 4, 64, 16, 4));
    struct rec a;
    rec_pick(&a, 10, 3, HY_FINISH_LENGTH, 1);
    submit(&e, &a, HY_OK);
    double now = 1;
    int want_pos[] = {0, 4, 8, 10, 11}, want_n[] = {4, 4, 2, 1, 1};
    for (int k = 0; k < 5; k++) {
        struct hy_sched_batch b = run_step(&e, now++);
        CHECK(b.n_items == 1 && b.items[0].pos == want_pos[k] && b.items[0].n_tokens == want_n[k]);
        CHECK(b.items[0].sample == (k >= 2) && b.items[0].user == &a);
        CHECK(a.done == (k == 4));
    }
    CHECK(a.reason == HY_FINISH_LENGTH && a.n_total == 13);
    struct hy_sched_stats st = sstats(&e);
    CHECK(st.kv.n_cached == 3 && st.kv.n_used == 0); /* positions 0..11 computed */
    CHECK(st.tokens_computed == 12 && st.tokens_generated == 3 &&
          st.finished[HY_FINISH_LENGTH] == 1);

    struct rec b1 = a; /* the same prompt: blocks 0-1 hit, block 2 holds generated tokens */
    b1.n_total = b1.n_prompt;
    submit(&e, &b1, HY_OK);
    struct hy_sched_batch b = run_step(&e, now++);
    CHECK(b.n_items == 1 && b.items[0].pos == 8 && b.items[0].n_tokens == 2 && b.items[0].sample);
    drain(&e, &now);
    struct rec c = a; /* a's whole sequence plus one token: all three blocks hit */
    c.n_prompt = c.n_total = 13;
    c.max_new = 2;
    submit(&e, &c, HY_OK);
    b = run_step(&e, now++);
    CHECK(b.n_items == 1 && b.items[0].pos == 12 && b.items[0].n_tokens == 1);
    st = sstats(&e);
    CHECK(st.kv.lookups == 3 && st.kv.hits == 2 && st.kv.tokens_hit == 8 + 12);
    drain(&e, &now);
    check_idle(&e);
    env_free(&e);
}

/* Two requests with one 16-token instruction: the later one reuses its 4 blocks while both
 * run; two identical prompts admitted together end up on the same blocks once computed. */
static void test_shared_prefix(void)
{
    struct env e;
    env_init(&e, params(8, 4, 64, 96, 64, 4));
    struct rec a, b, c, d;
    rec_pick(&a, 21, 30, HY_FINISH_LENGTH, 5);
    int32_t out[MAXT];
    int n_out;
    for (int32_t k = 1;; k++) { /* a's instruction, another 7-token text, no early stop */
        b = a;
        for (int i = 16; i < 23; i++)
            b.toks[i] = (int32_t)((i * k) % VOCAB == STOP_TOK ? 3 : (i * k) % VOCAB);
        b.n_prompt = b.n_total = 23;
        if (memcmp(b.toks + 16, a.toks + 16, 16) != 0 &&
            run_alone(&b, out, &n_out) == HY_FINISH_LENGTH)
            break;
    }
    submit(&e, &a, HY_OK);
    double now = 1;
    struct hy_sched_batch ba = run_step(&e, now++);
    CHECK(ba.n_items == 1 && ba.items[0].n_tokens == 21);
    submit(&e, &b, HY_OK);
    struct hy_sched_batch bb = run_step(&e, now++);
    CHECK(bb.n_items == 2 && bb.items[1].user == &b && bb.items[1].pos == 16);
    CHECK(memcmp(bb.items[0].blocks, bb.items[1].blocks, 4 * sizeof(int32_t)) == 0);
    const struct hy_kv *kv = hy_sched_kv(e.s);
    CHECK(hy_kv_block_refs(kv, bb.items[1].blocks[3]) == 2);
    rec_pick(&c, 13, 5, HY_FINISH_LENGTH, 900);
    d = c;
    submit(&e, &c, HY_OK);
    submit(&e, &d, HY_OK);
    struct hy_sched_batch bc = run_step(&e, now++);
    CHECK(bc.n_items == 4 && bc.items[2].pos == 0 && bc.items[3].pos == 0);
    struct hy_sched_batch bd = run_step(&e, now++);
    CHECK(bd.n_items == 4 && memcmp(bd.items[2].blocks, bd.items[3].blocks, 12) == 0);
    drain(&e, &now);
    check_idle(&e);
    env_free(&e);
}

/* Deadlines: a waiting and a running request time out at their step and give blocks back. */
static void test_timeout(void)
{
    struct env e;
    env_init(&e, params(4, 2, 16, 64, 16, 4));
    struct rec a, b, c;
    rec_pick(&a, 9, 20, HY_FINISH_LENGTH, 10);
    rec_pick(&b, 9, 20, HY_FINISH_LENGTH, 300);
    rec_pick(&c, 5, 20, HY_FINISH_LENGTH, 600);
    b.deadline = 13;
    c.deadline = 12;
    submit(&e, &a, HY_OK);
    submit(&e, &b, HY_OK);
    submit(&e, &c, HY_OK);
    double now = 10;
    run_step(&e, now++);
    run_step(&e, now++);
    CHECK(!b.done && !c.done && sstats(&e).n_waiting == 1);
    int used = sstats(&e).kv.n_used;
    run_step(&e, now++); /* now = 12: c times out in the queue */
    CHECK(c.done && c.reason == HY_FINISH_TIMEOUT && c.n_total == 5 && !b.done);
    CHECK(sstats(&e).n_waiting == 0 && sstats(&e).kv.n_used == used);
    run_step(&e, now++); /* now = 13: b times out while running */
    CHECK(b.done && b.reason == HY_FINISH_TIMEOUT && b.n_total == 9 + 2 && !a.done);
    struct hy_sched_stats st = sstats(&e);
    CHECK(st.n_running == 1 && st.kv.n_used == 3 && st.kv.n_seqs == 1);
    CHECK(st.finished[HY_FINISH_TIMEOUT] == 2 && st.n_slots_free == 5);
    drain(&e, &now);
    CHECK(a.reason == HY_FINISH_LENGTH);
    check_idle(&e);
    env_free(&e);
}

/* Cancellation while waiting, while running, and between a step and its commit. */
static void test_cancel(void)
{
    struct env e;
    env_init(&e, params(4, 2, 16, 64, 16, 4));
    struct rec a, b, c;
    rec_pick(&a, 9, 20, HY_FINISH_LENGTH, 10);
    rec_pick(&b, 6, 20, HY_FINISH_LENGTH, 300);
    rec_pick(&c, 5, 20, HY_FINISH_LENGTH, 600);
    submit(&e, &a, HY_OK);
    submit(&e, &b, HY_OK);
    submit(&e, &c, HY_OK);
    CHECK(hy_sched_cancel(e.s, 0) == HY_E_NOTFOUND);
    CHECK(hy_sched_cancel(e.s, c.id + (1ULL << 32)) == HY_E_NOTFOUND); /* stale serial */
    double now = 1;
    run_step(&e, now++);
    c.cancelled = true;
    CHECK(hy_sched_cancel(e.s, c.id) == HY_OK); /* waiting: never runs */
    run_step(&e, now++);
    CHECK(c.done && c.reason == HY_FINISH_CANCELLED && c.n_total == 5);
    int used = sstats(&e).kv.n_used;
    b.cancelled = true;
    CHECK(hy_sched_cancel(e.s, b.id) == HY_OK); /* running */
    run_step(&e, now++);
    CHECK(b.done && b.reason == HY_FINISH_CANCELLED && sstats(&e).kv.n_used < used);
    CHECK(sstats(&e).kv.n_seqs == 1);
    /* between step and commit: the plan still completes; the next step drops it */
    struct hy_sched_batch batch;
    struct hy_sched_result res[4];
    e.step++;
    hy_sched_step(e.s, now++, &batch);
    CHECK(batch.n_items == 1 && batch.items[0].user == &a);
    a.cancelled = true;
    CHECK(hy_sched_cancel(e.s, a.id) == HY_OK);
    fake_forward(&e, &batch, res);
    hy_sched_commit(e.s, res);
    take_done(&e, now);
    CHECK(!a.done);
    SCHED_CHECK(e.s);
    run_step(&e, now++);
    CHECK(a.done && a.reason == HY_FINISH_CANCELLED);
    CHECK(sstats(&e).finished[HY_FINISH_CANCELLED] == 3);
    check_idle(&e);
    env_free(&e);
}

/* A pool too small for three growing sequences: the newest is preempted (not the one asking),
 * returns to the front of the queue with its generated tokens, and finishes with the output
 * it would have produced alone. */
static void test_preemption(void)
{
    struct env e;
    env_init(&e, params(4, 3, 64, 64, 7, 4));
    struct rec a, b, c, d;
    rec_pick(&a, 8, 6, HY_FINISH_LENGTH, 10);
    rec_pick(&b, 7, 6, HY_FINISH_LENGTH, 300);
    rec_pick(&c, 7, 6, HY_FINISH_LENGTH, 600);
    rec_pick(&d, 3, 6, HY_FINISH_LENGTH, 900);
    submit(&e, &a, HY_OK);
    submit(&e, &b, HY_OK);
    submit(&e, &c, HY_OK);
    double now = 1;
    CHECK(run_step(&e, now++).n_items == 3); /* 6 blocks used, 1 free */
    submit(&e, &d, HY_OK);                   /* waits: max_running */
    CHECK(run_step(&e, now++).n_items == 3); /* a's position 8 takes the free block */
    CHECK(sstats(&e).kv.n_free == 0 && sstats(&e).preemptions == 0);
    struct hy_sched_batch b3 = run_step(&e, now++); /* b's position 8: c goes */
    CHECK(b3.n_items == 2 && b3.items[0].user == &a && b3.items[1].user == &b);
    struct hy_sched_stats st = sstats(&e);
    CHECK(st.preemptions == 1 && st.n_waiting == 2 && st.n_running == 2);
    int np, nt;
    const int32_t *ct = hy_sched_tokens(e.s, c.id, &np, &nt);
    CHECK(ct && np == 7 && nt == 9 && memcmp(ct, c.toks, 9 * sizeof *ct) == 0);
    /* c went back to the front of the queue: it is admitted before d */
    void *first = NULL;
    for (int k = 0; k < 50 && !first; k++) {
        struct hy_sched_batch bk = run_step(&e, now++);
        for (int i = 0; i < bk.n_items && !first; i++)
            if (bk.items[i].user == &c || bk.items[i].user == &d)
                first = bk.items[i].user;
    }
    CHECK(first == &c);
    drain(&e, &now);
    CHECK(a.reason == HY_FINISH_LENGTH && b.reason == HY_FINISH_LENGTH);
    CHECK(c.reason == HY_FINISH_LENGTH && c.n_total == 13 && d.reason == HY_FINISH_LENGTH);
    check_idle(&e);
    env_free(&e);
}

/* STOP from the caller, ERROR from the caller, and the decode-first token budget. */
static void test_stop_error_budget(void)
{
    struct env e;
    env_init(&e, params(4, 3, 8, 64, 32, 4));
    struct rec a, b, c;
    rec_pick(&a, 3, 40, HY_FINISH_STOP, 10);
    rec_pick(&b, 20, 10, HY_FINISH_LENGTH, 300);
    rec_pick(&c, 4, 10, HY_FINISH_LENGTH, 600);
    submit(&e, &a, HY_OK);
    double now = 1;
    run_step(&e, now++);
    submit(&e, &b, HY_OK);
    struct hy_sched_batch bt = run_step(&e, now++); /* a decodes, b prefills 7 */
    CHECK(bt.n_items == 2 && bt.items[0].user == &a && bt.items[0].n_tokens == 1);
    CHECK(bt.items[1].user == &b && bt.items[1].n_tokens == 7 && bt.n_tokens == 8);
    submit(&e, &c, HY_OK);
    c.fail_next = true;
    for (int i = 0; i < 3; i++)
        run_step(&e, now++);
    CHECK(c.done && c.reason == HY_FINISH_ERROR);
    drain(&e, &now);
    CHECK(a.reason == HY_FINISH_STOP && a.toks[a.n_total - 1] == STOP_TOK);
    CHECK(b.reason == HY_FINISH_LENGTH);
    CHECK(sstats(&e).finished[HY_FINISH_ERROR] == 1 && sstats(&e).finished[HY_FINISH_STOP] == 1);
    check_idle(&e);
    env_free(&e);
}

/* ---- randomized stress ---- */

#define S_STEPS 20000
#define S_MAX_RECS 10000

struct stress {
    struct env e;
    struct rec *recs; /* [S_MAX_RECS] every accepted request */
    int n_recs;
    uint64_t rng;
    int32_t prefix[4][48]; /* "instructions" that prompts share */
    int64_t n_rejected, n_cancels;
};

static uint32_t rnd(struct stress *t, uint32_t n)
{
    t->rng = t->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(t->rng >> 33) % n;
}

/* A prompt that shares a random part of an instruction (or repeats an earlier prompt). */
static void stress_prompt(struct stress *t, struct rec *q)
{
    memset(q, 0, sizeof *q);
    if (t->n_recs > 0 && rnd(t, 5) == 0) {
        const struct rec *old = &t->recs[rnd(t, (uint32_t)t->n_recs)];
        memcpy(q->toks, old->toks, (size_t)old->n_prompt * sizeof *q->toks);
        q->n_prompt = old->n_prompt;
    } else {
        int shared = (int)rnd(t, 49), own = (int)rnd(t, 20);
        memcpy(q->toks, t->prefix[rnd(t, 4)], (size_t)shared * sizeof *q->toks);
        for (int i = 0; i < own; i++)
            q->toks[shared + i] = (int32_t)rnd(t, VOCAB);
        q->n_prompt = shared + own > 0 ? shared + own : 1;
    }
    q->max_new = 1 + (int)rnd(t, 24);
    if (q->n_prompt + q->max_new > t->e.p.max_seq_tokens)
        q->max_new = t->e.p.max_seq_tokens - q->n_prompt;
}

static void stress_submit(struct stress *t, double now)
{
    if (t->n_recs == S_MAX_RECS)
        return;
    struct rec *q = &t->recs[t->n_recs];
    stress_prompt(t, q);
    q->deadline = rnd(t, 6) == 0 ? now + 1 + rnd(t, 60) : 0;
    bool full = sstats(&t->e).n_waiting >= t->e.p.max_queue;
    submit(&t->e, q, full ? HY_E_NOSPACE : HY_OK);
    if (full)
        t->n_rejected++;
    else
        t->n_recs++;
}

/* Cancels or fails a random live request among the recent ones. */
static void stress_disturb(struct stress *t)
{
    if (t->n_recs == 0)
        return;
    int lo = t->n_recs > 40 ? t->n_recs - 40 : 0;
    struct rec *q = &t->recs[lo + (int)rnd(t, (uint32_t)(t->n_recs - lo))];
    if (q->done || q->cancelled || q->fail_next)
        return;
    if (rnd(t, 8) == 0) {
        q->fail_next = true;
        return;
    }
    q->cancelled = true;
    t->n_cancels++;
    CHECK(hy_sched_cancel(t->e.s, q->id) == HY_OK);
}

static void test_stress(void)
{
    struct stress *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    t->recs = calloc(S_MAX_RECS, sizeof *t->recs);
    if (!t->recs)
        abort();
    /* 40 blocks of 4 = 160 slots for up to 6 sequences of up to 80 tokens: preemption */
    env_init(&t->e, params(12, 6, 24, 80, 40, 4));
    t->rng = 2026;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 48; i++)
            t->prefix[k][i] = (int32_t)rnd(t, VOCAB);
    clock_t c0 = clock();
    double now = 1;
    for (int step = 0; step < S_STEPS && test_failures_ < 10; step++) {
        if (rnd(t, 10) < 6)
            stress_submit(t, now);
        if (rnd(t, 10) == 0)
            stress_disturb(t);
        run_step(&t->e, now++);
    }
    drain(&t->e, &now);
    check_idle(&t->e);
    struct hy_sched_stats st = sstats(&t->e);
    for (int i = 0; i < t->n_recs; i++)
        CHECKF(t->recs[i].done, "request %d never finished", i);
    int64_t *n = t->e.n_done;
    CHECK(st.submitted == t->n_recs && n[HY_FINISH_NONE] == 0);
    CHECKF(n[HY_FINISH_STOP] > 50 && n[HY_FINISH_LENGTH] > 50 && n[HY_FINISH_CANCELLED] > 20 &&
               n[HY_FINISH_TIMEOUT] > 20 && n[HY_FINISH_ERROR] > 5 && st.preemptions > 50 &&
               st.kv.hits > 100 && st.kv.evictions > 100 && t->n_rejected > 100,
           "every path should be exercised");
    fprintf(stderr,
            "stress: %lld steps, %d requests (%lld rejected as queue-full), stop %lld, length "
            "%lld, cancelled %lld, timeout %lld, error %lld, %lld preemptions, prefix hits "
            "%lld/%lld (%lld tokens), %lld evictions, %lld tokens computed, %d items max, "
            "%.2f s\n",
            (long long)st.steps, t->n_recs, (long long)t->n_rejected, (long long)n[HY_FINISH_STOP],
            (long long)n[HY_FINISH_LENGTH], (long long)n[HY_FINISH_CANCELLED],
            (long long)n[HY_FINISH_TIMEOUT], (long long)n[HY_FINISH_ERROR],
            (long long)st.preemptions, (long long)st.kv.hits, (long long)st.kv.lookups,
            (long long)st.kv.tokens_hit, (long long)st.kv.evictions, (long long)st.tokens_computed,
            t->e.max_items_seen, (double)(clock() - c0) / CLOCKS_PER_SEC);
    env_free(&t->e);
    free(t->recs);
    free(t);
}

int main(void)
{
    test_create_errors();
    test_submit_errors_and_queue_full();
    test_chunked_prefill_length_and_hits();
    test_shared_prefix();
    test_timeout();
    test_cancel();
    test_preemption();
    test_stop_error_budget();
    test_stress();
    return test_result();
}
