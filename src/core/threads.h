/* threads.h: a fixed pool of worker threads for data-parallel loops (matmul rows, heads).
 * hy_pool_for() splits [0, n) into contiguous chunks, runs them on the workers and on the
 * calling thread, and returns when all are done. One hy_pool_for at a time per pool (the
 * engine thread owns its pool); workers sleep on a condition variable between calls.
 * Threads are created once in hy_pool_create; hy_pool_for never allocates. */
#ifndef HY_CORE_THREADS_H
#define HY_CORE_THREADS_H

#include "core/status.h"

#include <stdint.h>

#define HY_POOL_MAX_THREADS 256

struct hy_pool;

/* fn runs over [begin, end) on thread `tid` (0 = the caller, 1..n-1 = workers). */
typedef void (*hy_pool_fn)(void *ctx, int64_t begin, int64_t end, int tid);

/* Number of online CPUs (at least 1). */
int hy_cpu_count(void);

/* n_threads <= 0 means hy_cpu_count(). n_threads counts the caller, so 1 starts no worker.
 * HY_E_RANGE if n_threads > HY_POOL_MAX_THREADS; HY_E_NOMEM / HY_E_IO if threads cannot start. */
hy_status hy_pool_create(struct hy_pool **out, int n_threads, struct hy_err *err);
void hy_pool_destroy(struct hy_pool *pool); /* accepts NULL; joins the workers */
int hy_pool_size(const struct hy_pool *pool); /* NULL counts as a pool of 1 */

/* Runs fn over [0, n) split into at most hy_pool_size() chunks of at least `grain` items
 * (grain <= 0 means 1). Small n (n < 2*grain) and a NULL pool run inline on the caller. */
void hy_pool_for(struct hy_pool *pool, int64_t n, int64_t grain, hy_pool_fn fn, void *ctx);

#endif
