/* cuda_memory_test.c: memory is fixed at start-up on the GPU. An engine on the CUDA
 * backend (KV pool from a share of the free device memory, recorded decode steps, sampling
 * candidates) runs 10,000 mixed requests: prompts of 1-60 tokens, 1-40 new tokens, greedy
 * and sampled, every 7th cancelled after its first tokens, every 13th with a deadline too
 * short to finish, bursts that fill the queue. The device memory in use (cudaMemGetInfo,
 * through the backend's mem_info) must be identical before the first request and after
 * the last, and the pool back to no block in use and no slot taken.
 * Exits 77 (skip) when no CUDA device is present. */
#include "backend/cuda/cuda.h"
#include "engine/engine.h"
#include "model/hunyuan.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NREQ 10000
#define INFLIGHT 48

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 11;
}

struct live {
    uint64_t h;
    int idx, got;
    bool cancel;
};

int main(void)
{
    if (!hy_cuda_available()) {
        fprintf(stderr, "no CUDA device: skipping\n");
        return 77;
    }
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    struct hy_engine *e = NULL;
    struct hy_err err = {{0}};
    char dir[4096];
    test_path(dir, sizeof dir, "HYMT_SRC", "tests/data/tiny-mqa");
    CHECKF(hy_cuda_backend_create(&be, 0, &err) == HY_OK, "%s", err.msg);
    if (be)
        CHECKF(hy_model_load(&m, dir, be, &err) == HY_OK, "%s", err.msg);
    struct hy_engine_params p = hy_engine_params_default();
    p.max_running = 16;
    p.max_queue = 32;
    p.max_batch_tokens = 256;
    p.max_seq_tokens = 128;
    p.kv_fraction = 0.02; /* of the free memory: a few GiB on a large GPU */
    if (m)
        CHECKF(hy_engine_create(&e, m, &p, &err) == HY_OK, "%s", err.msg);
    if (!e)
        goto out;
    uint64_t used0 = 0, used1 = 0, total = 0;
    be->i->mem_info(be, &used0, &total);
    const int64_t V = m->cfg.vocab_size;
    struct live live[INFLIGHT];
    int n_live = 0, next = 0, refused = 0, done = 0;
    uint64_t x = 2026;
    int32_t prompt[64], ids[64];
    uint64_t used_mid = 0; /* after 100 requests: tells a one-time growth from a leak */
    while (done < NREQ) {
        if (!used_mid && done >= 100)
            be->i->mem_info(be, &used_mid, &total);
        /* top up: bursts larger than the queue are refused (HY_E_NOSPACE) and retried */
        while (n_live < INFLIGHT && next < NREQ) {
            const int i = next;
            int n = 1 + (int)(lcg(&x) % 60);
            for (int t = 0; t < n; t++)
                prompt[t] = (int32_t)(lcg(&x) % (uint64_t)V);
            struct hy_engine_request r = {.prompt = prompt, .n_prompt = n,
                                          .max_new_tokens = 1 + (int)(lcg(&x) % 40)};
            if (i % 3 == 0)
                r.sampling = (struct hy_sampler_params){0, 0, 1.0f, 1.0f, 0};
            else
                r.sampling = hy_sampler_params_default(), r.sampling.seed = (uint64_t)i;
            if (i % 13 == 5)
                r.timeout_s = 1e-4;
            if (i % 17 == 3 && r.n_prompt > 1)
                r.stop_ids[r.n_stop++] = prompt[0];
            struct hy_err e2 = {{0}};
            uint64_t h = 0;
            hy_status st = hy_engine_submit(e, &r, &h, &e2);
            if (st == HY_E_NOSPACE) {
                refused++;
                break;
            }
            CHECKF(st == HY_OK, "request %d: %s", i, e2.msg);
            live[n_live++] = (struct live){h, i, 0, i % 7 == 1};
            next++;
        }
        /* read every live request a little; finish the done ones */
        for (int j = 0; j < n_live; j++) {
            struct hy_engine_status st = {0};
            int k = hy_engine_read(e, live[j].h, ids, 64, 0.001, &st);
            if (k > 0)
                live[j].got += k;
            if (live[j].cancel && live[j].got > 0 && !st.done) {
                hy_engine_cancel(e, live[j].h);
                live[j].cancel = false;
            }
            if (k < 0 || st.done) {
                CHECK(k >= 0);
                hy_engine_release(e, live[j].h);
                live[j--] = live[--n_live];
                done++;
            }
        }
    }
    struct hy_engine_stats ss;
    for (int i = 0; i < 200; i++) { /* the engine publishes the last step's bookkeeping */
        hy_engine_stats(e, &ss);
        if (ss.kv_blocks_used == 0 && ss.slots_in_use == 0 && ss.n_running == 0)
            break;
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    be->i->mem_info(be, &used1, &total);
    fprintf(stderr, "%d requests (%d refusals while the queue was full): finished stop %lld, "
            "length %lld, cancelled %lld, timeout %lld; %lld tokens generated in %lld steps, "
            "%lld sampled from a whole row; KV blocks %d (used %d, cached %d); device memory "
            "in use %llu bytes before, %llu after 100 requests, %llu after\n", NREQ, refused,
            (long long)ss.finished[HY_FINISH_STOP], (long long)ss.finished[HY_FINISH_LENGTH],
            (long long)ss.finished[HY_FINISH_CANCELLED], (long long)ss.finished[HY_FINISH_TIMEOUT],
            (long long)ss.tokens_generated, (long long)ss.steps, (long long)ss.samples_full_row,
            ss.kv_blocks_total, ss.kv_blocks_used, ss.kv_blocks_cached,
            (unsigned long long)used0, (unsigned long long)used_mid, (unsigned long long)used1);
    CHECK(used0 > 0 && used1 == used0);
    CHECK(ss.kv_blocks_used == 0 && ss.slots_in_use == 0 && ss.n_running == 0);
    CHECK(ss.finished[HY_FINISH_LENGTH] > 0 && ss.finished[HY_FINISH_CANCELLED] > 0 &&
          ss.finished[HY_FINISH_TIMEOUT] > 0 && ss.finished[HY_FINISH_STOP] > 0);
    CHECK(refused > 0);
out:
    hy_engine_destroy(e);
    hy_model_destroy(m);
    if (be)
        be->i->destroy(be);
    return test_result();
}
