/* worker_impl.h: the worker's state, shared by worker.c (taking jobs) and worker_run.c
 * (results, the loop, life cycle). The loop's thread owns everything but st, which is
 * under mu (metrics are read from the worker's HTTP threads). */
#ifndef HY_QUEUE_WORKER_IMPL_H
#define HY_QUEUE_WORKER_IMPL_H

#include "queue/job.h"
#include "queue/queue.h"
#include "queue/redis.h"

#include <pthread.h>

#define HY_WJ_ENTRY_MAX 48   /* a stream entry id */
#define HY_WJ_MAX_FIELDS 32  /* fields of a job entry looked at */

struct wjob {
    bool used, submitted, engine_done;
    char entry[HY_WJ_ENTRY_MAX];
    struct hy_job j;
    char attempt[HY_JOB_ATTEMPT_MAX];
    char own[HY_JOB_KEY_MAX], res[HY_JOB_KEY_MAX], cancel[HY_JOB_KEY_MAX];
    uint64_t h;
    int32_t *buf;      /* [j.max_new] tokens read from the engine */
    int n_read, n_pushed;
    enum hy_finish finish;
    bool cancel_asked;
};

struct hy_queue_worker {
    struct hy_queue_opts o;
    char prefix[HY_QUEUE_PREFIX_MAX];
    char jobs_key[HY_JOB_KEY_MAX], stats_key[HY_JOB_KEY_MAX], workers_key[HY_JOB_KEY_MAX];
    char name[64];
    unsigned long long n_attempts;
    struct hy_engine *e;
    struct hy_redis r;
    bool group_ok;
    struct wjob *jobs; /* [cap] */
    int *order, *kinds; /* [2 cap] push_all's replies to come */
    int cap;
    double next_claim, next_cancel, next_beat, next_refresh;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool news; /* the engine has tokens or a finish for us */
    struct hy_queue_worker_stats st;
};

bool hy_qc_ensure_group(struct hy_redis *r, const char *jobs_key);

#endif
