/* client_impl.h: the front end's queue client, shared by client.c (the remote engine's
 * calls) and reader.c (the reader thread, metrics). Slots and counters under mu; the
 * command connection under cmd_mu (submit, cancel, metrics); the reader's connection is
 * its thread's alone. */
#ifndef HY_QUEUE_CLIENT_IMPL_H
#define HY_QUEUE_CLIENT_IMPL_H

#include "queue/job.h"
#include "queue/queue.h"
#include "queue/redis.h"

#include <pthread.h>

#define HY_QC_STREAM_ID_MAX 48 /* "ms-seq" */

struct qslot {
    uint32_t gen;
    bool used, done, posted;
    char id[HY_JOB_ID_LEN + 1];
    char key[HY_JOB_KEY_MAX];           /* its result stream */
    char last[HY_QC_STREAM_ID_MAX];     /* the last entry read */
    char attempt[HY_JOB_ATTEMPT_MAX];   /* the attempt whose tokens count */
    int32_t *ids;                       /* [cap] received; [0, n_out) published */
    int cap, n_out, n_read;
    int pos;                            /* tokens of the current attempt seen: a new
                                         * attempt's first n_out must equal ids[] */
    enum hy_finish finish;
    int n_prompt;
    double t_submit, t_first, t_done, deadline; /* monotonic; deadline 0: none */
    void (*notify)(void *ctx);
    void *notify_ctx;
    pthread_cond_t cv;
};

struct hy_queue_client {
    struct hy_queue_opts o;
    char prefix[HY_QUEUE_PREFIX_MAX];
    char jobs_key[HY_JOB_KEY_MAX], bell_key[HY_JOB_KEY_MAX], stats_key[HY_JOB_KEY_MAX],
        workers_key[HY_JOB_KEY_MAX];
    char bell_last[HY_QC_STREAM_ID_MAX];
    struct hy_redis cmd, rd;
    pthread_mutex_t cmd_mu;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    struct qslot *slots;
    int n_slots, n_cv, n_running;
    int *free_stack, n_free;
    pthread_t thread;
    bool stop, started;
    bool up;                        /* the reader's connection is up */
    int64_t unavailable, mismatched, malformed; /* requests failed by the queue */
    struct hy_engine_stats stats;
};

void hy_qc_finish(struct hy_queue_client *c, struct qslot *s, enum hy_finish why);
bool hy_qc_ensure_group(struct hy_redis *r, const char *jobs_key);
void *hy_qc_reader_main(void *arg);
void hy_qc_worker_stats(struct hy_queue_client *c, struct hy_engine_stats *out);

#endif
