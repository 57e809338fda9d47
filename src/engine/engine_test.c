/* engine_test.c: the engine thread end to end on the tiny checkpoint: batching, staggered
 * arrivals, cancellation, deadlines, a full queue and preemption change no sequence's
 * greedy tokens, give the right finish reasons, and return every block and slot. */
#include "backend/cpu/cpu.h"
#include "engine/engine.h"
#include "test.h"

#include <string.h>
#include <unistd.h>

#define NREQ 12
#define GEN 40

static struct hy_backend *be;
static struct hy_model *model;

/* Greedy continuation of prompt through a private hy_ctx: what the request gives alone. */
static void alone(const int32_t *prompt, int n, int gen, int32_t *out)
{
    struct hy_ctx *c = NULL;
    struct hy_err err = {{0}};
    static float logits[512];
    CHECK(hy_ctx_create(&c, model, n + gen, n, &err) == HY_OK);
    CHECK(hy_model_forward(c, prompt, n, false, logits, &err) == HY_OK);
    for (int i = 0; i < gen; i++) {
        int32_t best = 0;
        for (int v = 1; v < 512; v++)
            best = logits[v] > logits[best] ? v : best;
        out[i] = best;
        if (i + 1 < gen)
            CHECK(hy_model_forward(c, &best, 1, false, logits, &err) == HY_OK);
    }
    hy_ctx_destroy(c);
}

static void make_prompt(int r, int32_t *p, int *n)
{
    /* 18..31 tokens; the first 17 are the same for all (an instruction prefix that fills
     * a 16-token block, so prefix caching has something to share) */
    *n = 18 + (r * 7) % 14;
    for (int i = 0; i < *n; i++)
        p[i] = i == 0 ? 497 : i < 17 ? (int32_t)(i * 29 % 490) : (int32_t)((r * 131 + i * 17) % 490);
}

static struct hy_engine_request greedy_req(const int32_t *p, int n, int gen)
{
    struct hy_engine_request r = {.prompt = p, .n_prompt = n, .max_new_tokens = gen};
    r.sampling = (struct hy_sampler_params){.temperature = 0, .top_k = 0, .top_p = 1,
                                            .repetition_penalty = 1, .seed = 0};
    return r;
}

/* Reads a request to its end; returns the token count. */
static int drain(struct hy_engine *e, uint64_t h, int32_t *out, int cap,
                 struct hy_engine_status *st)
{
    int n = 0;
    for (;;) {
        int k = hy_engine_read(e, h, out + n, cap - n, 5.0, st);
        CHECK(k >= 0);
        if (k < 0)
            return n;
        n += k;
        if (st->done && k == 0)
            return n;
    }
}

static void check_idle(struct hy_engine *e)
{
    struct hy_engine_stats s;
    for (int i = 0; i < 200; i++) { /* the engine publishes after its step: let it settle */
        hy_engine_stats(e, &s);
        if (s.slots_in_use == 0 && s.kv_blocks_used == 0 && s.n_running == 0)
            break;
        usleep(1000);
    }
    CHECKF(s.slots_in_use == 0, "%lld slots still in use", (long long)s.slots_in_use);
    CHECKF(s.kv_blocks_used == 0, "%d blocks still referenced", s.kv_blocks_used);
    CHECK(s.n_running == 0 && s.n_waiting == 0);
}

static int32_t prompts[NREQ][32], expect[NREQ][GEN];
static int plen[NREQ];

/* NREQ greedy requests in two staggered waves, every fifth cancelled midway. */
static void test_batching(const struct hy_engine_params *p, const char *what)
{
    struct hy_engine *e = NULL;
    struct hy_err err = {{0}};
    CHECKF(hy_engine_create(&e, model, p, &err) == HY_OK, "%s", err.msg);
    if (!e)
        return;
    uint64_t h[NREQ];
    for (int r = 0; r < NREQ; r++) {
        struct hy_engine_request q = greedy_req(prompts[r], plen[r], GEN);
        CHECKF(hy_engine_submit(e, &q, &h[r], &err) == HY_OK, "%s", err.msg);
        if (r == NREQ / 2) { /* stagger: let the first wave decode a little */
            int32_t t[4];
            struct hy_engine_status st;
            CHECK(hy_engine_read(e, h[0], t, 0, 1.0, &st) == 0);
        }
    }
    for (int r = 0; r < NREQ; r++) {
        int32_t out[GEN + 1];
        struct hy_engine_status st;
        int n = 0;
        if (r % 5 == 4) {
            n = hy_engine_read(e, h[r], out, 3, 5.0, &st);
            CHECK(hy_engine_cancel(e, h[r]) == HY_OK);
        }
        n += drain(e, h[r], out + n, GEN + 1 - n, &st);
        CHECK(n <= GEN && memcmp(out, expect[r], (size_t)n * sizeof(int32_t)) == 0);
        if (r % 5 == 4) {
            CHECKF(st.finish == HY_FINISH_CANCELLED || (st.finish == HY_FINISH_LENGTH && n == GEN),
                   "%s: request %d finished %s", what, r, hy_finish_str(st.finish));
        } else {
            CHECKF(st.finish == HY_FINISH_LENGTH && n == GEN, "%s: request %d: %s after %d",
                   what, r, hy_finish_str(st.finish), n);
        }
        hy_engine_release(e, h[r]);
    }
    check_idle(e);
    struct hy_engine_stats s;
    hy_engine_stats(e, &s);
    fprintf(stderr, "%s: %lld steps, %lld preemptions, prefix hits %lld/%lld\n", what,
            (long long)s.steps, (long long)s.preemptions, (long long)s.prefix_hits,
            (long long)s.prefix_lookups);
    if (p->kv_bytes < 200000)
        CHECKF(s.preemptions > 0, "%s: the small pool should have preempted", what);
    CHECK(s.prefix_hits > 0); /* every prompt shares its first 16-token block */
    hy_engine_destroy(e);
}

static void test_limits(void)
{
    struct hy_engine_params p = hy_engine_params_default();
    p.max_running = 1;
    p.max_queue = 2;
    p.kv_bytes = 1 << 20;
    p.max_seq_tokens = 1024;
    struct hy_engine *e = NULL;
    struct hy_err err = {{0}};
    CHECK(hy_engine_create(&e, model, &p, &err) == HY_OK);
    if (!e)
        return;
    uint64_t h[6];
    int ok = 0, full = 0;
    for (int r = 0; r < 6; r++) {
        struct hy_engine_request q = greedy_req(prompts[r], plen[r], 900);
        hy_status st = hy_engine_submit(e, &q, &h[ok], &err);
        ok += st == HY_OK;
        full += st == HY_E_NOSPACE;
    }
    CHECKF(full >= 1 && ok + full == 6 && ok <= 3, "accepted %d, queue full %d", ok, full);
    /* a deadline: timed out with its memory back, tokens so far a prefix of the truth */
    for (int r = 0; r < ok; r++)
        hy_engine_cancel(e, h[r]);
    for (int r = 0; r < ok; r++) {
        int32_t out[1024];
        struct hy_engine_status st;
        drain(e, h[r], out, 1024, &st);
        CHECK(st.finish == HY_FINISH_CANCELLED || st.finish == HY_FINISH_LENGTH);
        hy_engine_release(e, h[r]);
    }
    check_idle(e); /* the cancelled requests' room is published after the engine's next step */
    struct hy_engine_request q = greedy_req(prompts[1], plen[1], 900);
    q.timeout_s = 0.003;
    uint64_t t;
    struct hy_engine_stats dbg;
    hy_engine_stats(e, &dbg);
    CHECKF(hy_engine_submit(e, &q, &t, &err) == HY_OK, "%s (waiting %d, slots %lld)", err.msg,
           dbg.n_waiting, (long long)dbg.slots_in_use);
    int32_t out[1024];
    struct hy_engine_status st;
    int n = drain(e, t, out, 1024, &st);
    CHECKF(st.finish == HY_FINISH_TIMEOUT, "deadline: %s after %d", hy_finish_str(st.finish), n);
    hy_engine_release(e, t);
    /* invalid requests are refused up front */
    int32_t bad = 100000;
    q = greedy_req(&bad, 1, 4);
    CHECK(hy_engine_submit(e, &q, &t, &err) == HY_E_RANGE);
    q = greedy_req(prompts[0], plen[0], 5000);
    CHECK(hy_engine_submit(e, &q, &t, &err) == HY_E_RANGE);
    CHECK(hy_engine_cancel(e, 12345) == HY_E_NOTFOUND);
    check_idle(e);
    hy_engine_destroy(e);
    /* no request runs past the model's positions: max_seq_tokens is capped by the config */
    int64_t max_pos = model->cfg.max_position_embeddings;
    model->cfg.max_position_embeddings = 64;
    CHECK(hy_engine_create(&e, model, &p, &err) == HY_OK);
    model->cfg.max_position_embeddings = max_pos;
    if (!e)
        return;
    CHECKF(hy_engine_get_params(e)->max_seq_tokens == 64, "max_seq_tokens %d",
           hy_engine_get_params(e)->max_seq_tokens);
    q = greedy_req(prompts[0], plen[0], 65 - plen[0]);
    CHECK(hy_engine_submit(e, &q, &t, &err) == HY_E_RANGE);
    hy_engine_destroy(e);
}

int main(void)
{
    char dir[4096];
    struct hy_err err = {{0}};
    test_path(dir, sizeof dir, "HYMT_SRC", "tests/data/tiny-mqa");
    CHECK(hy_cpu_backend_create(&be, 2, &err) == HY_OK);
    CHECKF(hy_model_load(&model, dir, be, &err) == HY_OK, "%s", err.msg);
    if (!model)
        return test_result();
    for (int r = 0; r < NREQ; r++) {
        make_prompt(r, prompts[r], &plen[r]);
        alone(prompts[r], plen[r], GEN, expect[r]);
    }
    struct hy_engine_params p = hy_engine_params_default();
    p.max_running = 4;
    p.max_batch_tokens = 24; /* chunks the longer prompts */
    p.max_seq_tokens = 80;
    p.kv_bytes = 4 << 20;
    test_batching(&p, "roomy pool");
    p.block_size = 4;
    p.kv_bytes = 24 * 4096; /* 24 blocks of 4 tokens: ~1.3 sequences; forces preemption */
    test_batching(&p, "small pool");
    test_limits();
    hy_model_destroy(model);
    be->i->destroy(be);
    return test_result();
}
