/* threads.c: the persistent worker pool behind hy_pool_for.
 * One mutex guards the job and the generation counter. A call publishes the job, bumps
 * `gen` and broadcasts `wake`; each worker whose tid has a chunk runs it and decrements
 * `pending`; the caller runs chunk 0 and then sleeps on `done` until pending reaches 0.
 * Workers that have no chunk this time only note the generation and go back to sleep.
 * The mutex hand-offs also order the memory: whatever a worker wrote in fn is visible to
 * the caller once hy_pool_for returns.
 * Before sleeping, workers (for a new generation) and the caller (for pending == 0) spin for
 * up to SPIN_ITERS pauses (~0.1-0.3 ms) on the atomic counters: decode dispatches a job every
 * ~50-200 us (hundreds a token), and a futex sleep and wake-up each time cost ~10% of a
 * 1.8B-model token on 2 cores. The counters are still changed under the mutex only; the
 * seq_cst decrement of pending and the caller's load of it order fn's writes as before. */
#include "core/threads.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct worker {
    struct hy_pool *pool;
    pthread_t thread;
    int tid; /* 1..n_threads-1 */
};

struct hy_pool {
    int n_threads; /* counting the caller */
    int n_started; /* workers actually running (== n_threads - 1 after a good create) */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* workers wait here for a new generation */
    pthread_cond_t done; /* the caller waits here for pending == 0 */
    _Atomic uint64_t gen; /* bumped once per parallel hy_pool_for */
    _Atomic int pending;  /* workers yet to finish the current job */
    _Atomic bool stop;
    /* the current job; written by the caller under mu, read by workers under mu */
    hy_pool_fn fn;
    void *ctx;
    int64_t n;
    int n_chunks;
    struct worker workers[]; /* n_threads - 1 */
};

#define SPIN_ITERS 4096

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

int hy_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int allowed = CPU_COUNT(&set);
        if (allowed >= 1 && allowed < n)
            n = allowed;
    }
    return n > HY_POOL_MAX_THREADS ? HY_POOL_MAX_THREADS : (int)n;
}

/* Chunk i of [0, n) split into k nearly equal contiguous parts (sizes differ by at most 1). */
static void chunk_bounds(int64_t n, int k, int i, int64_t *begin, int64_t *end)
{
    int64_t q = n / k, rem = n % k;
    *begin = i * q + (i < rem ? i : rem);
    *end = *begin + q + (i < rem ? 1 : 0);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct hy_pool *p = w->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->gen == seen && !p->stop) {
            pthread_mutex_unlock(&p->mu);
            for (int i = 0; i < SPIN_ITERS && atomic_load_explicit(&p->gen, memory_order_relaxed) == seen &&
                            !atomic_load_explicit(&p->stop, memory_order_relaxed);
                 i++)
                cpu_relax();
            pthread_mutex_lock(&p->mu);
            if (p->gen == seen && !p->stop)
                pthread_cond_wait(&p->wake, &p->mu);
        }
        if (p->stop)
            break;
        seen = p->gen;
        if (w->tid >= p->n_chunks)
            continue; /* nothing for this worker this time */
        hy_pool_fn fn = p->fn;
        void *ctx = p->ctx;
        int64_t begin, end;
        chunk_bounds(p->n, p->n_chunks, w->tid, &begin, &end);
        pthread_mutex_unlock(&p->mu);
        fn(ctx, begin, end, w->tid);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Starts the workers with every signal blocked, so that signals (SIGINT, SIGTERM) are
 * delivered to the application's own threads, never to a pool worker. */
static hy_status start_workers(struct hy_pool *p, struct hy_err *err)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = 0;
    for (int i = 1; i < p->n_threads; i++) {
        struct worker *w = &p->workers[i - 1];
        w->pool = p;
        w->tid = i;
        rc = pthread_create(&w->thread, NULL, worker_main, w);
        if (rc != 0)
            break;
        p->n_started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return hy_err_set(err, rc == EAGAIN ? HY_E_NOMEM : HY_E_IO,
                          "thread pool: cannot start worker %d of %d: %s", p->n_started + 1,
                          p->n_threads - 1, strerror(rc));
    return HY_OK;
}

hy_status hy_pool_create(struct hy_pool **out, int n_threads, struct hy_err *err)
{
    *out = NULL;
    if (n_threads <= 0)
        n_threads = hy_cpu_count();
    if (n_threads > HY_POOL_MAX_THREADS)
        return hy_err_set(err, HY_E_RANGE, "thread pool: %d threads requested, at most %d",
                          n_threads, HY_POOL_MAX_THREADS);
    struct hy_pool *p =
        calloc(1, sizeof *p + (size_t)(n_threads - 1) * sizeof(struct worker));
    if (!p)
        return hy_err_set(err, HY_E_NOMEM, "thread pool: out of memory");
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    hy_status st = start_workers(p, err);
    if (st != HY_OK) {
        hy_pool_destroy(p);
        return st;
    }
    *out = p;
    return HY_OK;
}

void hy_pool_destroy(struct hy_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    pool->stop = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->n_started; i++)
        pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}

int hy_pool_size(const struct hy_pool *pool)
{
    return pool ? pool->n_threads : 1;
}

void hy_pool_for(struct hy_pool *pool, int64_t n, int64_t grain, hy_pool_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    int64_t k = n / grain; /* so that every chunk holds at least `grain` items */
    int size = hy_pool_size(pool);
    if (k > size)
        k = size;
    if (k <= 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&pool->mu);
    pool->fn = fn;
    pool->ctx = ctx;
    pool->n = n;
    pool->n_chunks = (int)k;
    pool->pending = (int)k - 1;
    pool->gen++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);

    int64_t begin, end;
    chunk_bounds(n, (int)k, 0, &begin, &end);
    fn(ctx, begin, end, 0);

    for (int i = 0; i < SPIN_ITERS && atomic_load(&pool->pending) > 0; i++)
        cpu_relax();
    if (atomic_load(&pool->pending) == 0)
        return;
    pthread_mutex_lock(&pool->mu);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->done, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
}
