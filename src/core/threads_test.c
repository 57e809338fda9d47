/* threads_test.c: hy_pool_for visits every index exactly once, in contiguous chunks of at
 * least `grain` items on distinct threads, for many (threads, n, grain) combinations and
 * across many reuses of one pool. */
#include "core/threads.h"
#include "test.h"

#include <stdbool.h>
#include <string.h>

#define MAX_N 5000

struct visit {
    int count[MAX_N];
    int64_t begin[HY_POOL_MAX_THREADS]; /* chunk run by each tid, -1 if none */
    int64_t end[HY_POOL_MAX_THREADS];
    int calls[HY_POOL_MAX_THREADS];
};

static void visit_fn(void *ctx, int64_t begin, int64_t end, int tid)
{
    struct visit *v = ctx;
    v->begin[tid] = begin;
    v->end[tid] = end;
    v->calls[tid]++;
    for (int64_t i = begin; i < end; i++)
        v->count[i]++;
}

static void visit_reset(struct visit *v, int64_t n)
{
    memset(v->count, 0, (size_t)n * sizeof v->count[0]);
    for (int t = 0; t < HY_POOL_MAX_THREADS; t++) {
        v->begin[t] = v->end[t] = -1;
        v->calls[t] = 0;
    }
}

/* True if one call over [0, n) with this grain on a pool of `size` threads was correct:
 * every index once; tids 0..k-1 each ran exactly one chunk, in order and contiguous;
 * k <= size; every chunk has >= grain items unless the whole range ran inline. */
static bool visit_ok(const struct visit *v, int64_t n, int64_t grain, int size)
{
    for (int64_t i = 0; i < n; i++)
        if (v->count[i] != 1)
            return false;
    if (grain < 1)
        grain = 1;
    int k = 0;
    int64_t next = 0;
    while (k < HY_POOL_MAX_THREADS && v->calls[k] == 1) {
        if (v->begin[k] != next || v->end[k] <= v->begin[k])
            return false;
        if (n > 0 && v->end[k] - v->begin[k] < grain && !(k == 0 && v->end[0] == n))
            return false;
        next = v->end[k++];
    }
    for (int t = k; t < HY_POOL_MAX_THREADS; t++)
        if (v->calls[t] != 0)
            return false;
    if (n == 0)
        return k == 0;
    return next == n && k <= size && (n >= 2 * grain || k == 1);
}

static void test_combos(int n_threads)
{
    struct hy_pool *pool = NULL;
    struct hy_err err;
    CHECK(hy_pool_create(&pool, n_threads, &err) == HY_OK);
    if (!pool)
        return;
    CHECK(hy_pool_size(pool) == n_threads);
    static struct visit v;
    static const int64_t ns[] = {0, 1, 2, 3, 5, 7, 16, 17, 63, 64, 100, 255, 1000, 4999, 5000};
    static const int64_t grains[] = {-3, 0, 1, 2, 3, 7, 16, 64, 1000, 6000};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        for (size_t b = 0; b < sizeof grains / sizeof grains[0]; b++) {
            visit_reset(&v, ns[a]);
            hy_pool_for(pool, ns[a], grains[b], visit_fn, &v);
            CHECKF(visit_ok(&v, ns[a], grains[b], n_threads), "threads=%d n=%lld grain=%lld",
                   n_threads, (long long)ns[a], (long long)grains[b]);
        }
    }
    /* with grain 1 and enough items every thread takes part */
    visit_reset(&v, 1000);
    hy_pool_for(pool, 1000, 1, visit_fn, &v);
    for (int t = 0; t < n_threads; t++)
        CHECKF(v.calls[t] == 1, "threads=%d: tid %d idle", n_threads, t);
    hy_pool_destroy(pool);
}

/* Many back-to-back calls on one pool: the sleep/wake hand-off must not lose or repeat a
 * job. The sum over all calls is checked too, so a lost chunk cannot hide. */
static void test_reuse(int n_threads, int calls)
{
    struct hy_pool *pool = NULL;
    CHECK(hy_pool_create(&pool, n_threads, NULL) == HY_OK);
    if (!pool)
        return;
    static struct visit v;
    int bad = 0;
    for (int c = 0; c < calls; c++) {
        int64_t n = 1 + (c * 37) % 300;
        int64_t grain = 1 + c % 5;
        visit_reset(&v, n);
        hy_pool_for(pool, n, grain, visit_fn, &v);
        if (!visit_ok(&v, n, grain, n_threads))
            bad++;
    }
    CHECKF(bad == 0, "threads=%d: %d of %d calls wrong", n_threads, bad, calls);
    hy_pool_destroy(pool);
}

static void test_edges(void)
{
    struct hy_pool *pool = NULL;
    struct hy_err err = {{0}};
    CHECK(hy_pool_create(&pool, HY_POOL_MAX_THREADS + 1, &err) == HY_E_RANGE);
    CHECK(pool == NULL && err.msg[0] != '\0');
    CHECK(hy_pool_create(&pool, 0, NULL) == HY_OK); /* 0: one thread per online CPU */
    CHECK(pool && hy_pool_size(pool) == hy_cpu_count());
    hy_pool_destroy(pool);
    hy_pool_destroy(NULL);
    CHECK(hy_cpu_count() >= 1);

    static struct visit v; /* a NULL pool runs inline */
    visit_reset(&v, 100);
    hy_pool_for(NULL, 100, 1, visit_fn, &v);
    CHECK(visit_ok(&v, 100, 1, 1) && v.calls[0] == 1);
    CHECK(hy_pool_size(NULL) == 1);

    /* the checker itself can fail: a doubled index, a missing one, an oversized split */
    visit_reset(&v, 10);
    visit_fn(&v, 0, 10, 0);
    v.count[3] = 2;
    CHECK(!visit_ok(&v, 10, 1, 1));
    v.count[3] = 0;
    CHECK(!visit_ok(&v, 10, 1, 1));
    visit_reset(&v, 10);
    visit_fn(&v, 0, 5, 0);
    visit_fn(&v, 5, 10, 1);
    CHECK(visit_ok(&v, 10, 1, 2));
    CHECK(!visit_ok(&v, 10, 1, 1)); /* two chunks on a pool of one */
    CHECK(!visit_ok(&v, 10, 6, 2)); /* chunks smaller than grain */
}

int main(void)
{
    test_edges();
    static const int counts[] = {1, 2, 3, 4, 7, 16};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        test_combos(counts[i]);
    test_reuse(1, 1000);
    test_reuse(2, 20000);
    test_reuse(5, 5000);
    /* create/destroy churn, including destroying a pool that never ran a job */
    for (int i = 0; i < 50; i++) {
        struct hy_pool *pool = NULL;
        CHECK(hy_pool_create(&pool, 1 + i % 4, NULL) == HY_OK);
        hy_pool_destroy(pool);
    }
    return test_result();
}
