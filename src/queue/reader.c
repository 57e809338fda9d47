/* reader.c: the front end's reader thread (one XREAD BLOCK over every open result stream
 * and the front end's bell) and the queue's metrics (queue.h, client_impl.h). */
#include "queue/client_impl.h"

#include "core/clock.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READER_BLOCK_MS "200" /* deadlines are checked at least this often */
#define READER_COUNT "256"    /* entries per stream per XREAD */
#define READER_MAX_CONSUMERS 64     /* consumers listed in /metrics */

struct snap {
    int idx;
    uint32_t gen;
    char key[HY_JOB_KEY_MAX];
    char last[HY_QC_STREAM_ID_MAX];
};

static const redisReply *field(const redisReply *f, const char *name)
{
    for (size_t i = 0; i + 1 < f->elements; i += 2) {
        const redisReply *k = f->element[i];
        if (k->type == REDIS_REPLY_STRING && k->len == strlen(name) &&
            !memcmp(k->str, name, k->len))
            return f->element[i + 1]->type == REDIS_REPLY_STRING ? f->element[i + 1] : NULL;
    }
    return NULL;
}

static bool is(const redisReply *x, const char *s)
{
    return x && x->len == strlen(s) && !memcmp(x->str, s, x->len);
}

/* Takes in one result entry's tokens; false when they are not what the job may send. */
static bool take_ids(struct hy_queue_client *c, struct qslot *s, const redisReply *t,
                     const redisReply *o)
{
    int64_t off = 0;
    if (t->len % 4 || !o || !hy_job_parse_int(o->str, o->len, 0, s->pos, &off))
        return false; /* an offset past what we have would leave a hole */
    const unsigned char *b = (const unsigned char *)t->str;
    for (size_t i = (size_t)(s->pos - off); i < t->len / 4; i++) { /* repeats skipped */
        int32_t id = (int32_t)((uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                               (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24);
        if (id < 0 || id >= c->o.vocab)
            return false;
        if (s->pos < s->n_out) { /* a rerun after a takeover: it must repeat what we have */
            if (s->ids[s->pos] != id) {
                c->mismatched++;
                HY_LOGW("queue: job %s: the rerun differs from the first run at token %d: "
                        "failing it rather than mixing two answers", s->id, s->pos);
                return false;
            }
        } else if (s->n_out >= s->cap) {
            return false;
        } else {
            s->ids[s->n_out++] = id;
            c->stats.tokens_generated++;
        }
        s->pos++;
    }
    return true;
}

/* One entry of s's result stream (under mu). false: malformed (the slot is failed). */
static bool apply(struct hy_queue_client *c, struct qslot *s, const redisReply *fl)
{
    const redisReply *a = field(fl, "a"), *k = field(fl, "k"), *t = field(fl, "t");
    if (!a || a->len == 0 || a->len >= HY_JOB_ATTEMPT_MAX)
        return false;
    if (is(k, "start")) {
        if (strlen(s->attempt) != a->len || memcmp(s->attempt, a->str, a->len)) {
            memcpy(s->attempt, a->str, a->len);
            s->attempt[a->len] = 0;
            s->pos = 0;
        }
        return true;
    }
    if (strlen(s->attempt) != a->len || memcmp(s->attempt, a->str, a->len))
        return true; /* an attempt that lost the job: its writes were refused after */
    if (t && !take_ids(c, s, t, field(fl, "o")))
        return false;
    if (is(k, "end")) {
        int64_t f = 0, g = 0;
        const redisReply *ff = field(fl, "f"), *fg = field(fl, "g");
        if (!ff || !fg || !hy_job_parse_int(ff->str, ff->len, 1, HY_FINISH_COUNT - 1, &f) ||
            !hy_job_parse_int(fg->str, fg->len, 0, HY_JOB_MAX_NEW, &g) || g != s->pos ||
            s->pos < s->n_out)
            return false;
        hy_qc_finish(c, s, (enum hy_finish)f);
    }
    return true;
}

/* The entries [[id, [field, value, ...]], ...] read for snapshot entry sn. */
static void apply_all(struct hy_queue_client *c, struct snap *sn, const redisReply *entries)
{
    pthread_mutex_lock(&c->mu);
    struct qslot *s = &c->slots[sn->idx];
    int before = s->n_out;
    for (size_t i = 0; s->used && s->gen == sn->gen && i < entries->elements; i++) {
        const redisReply *e = entries->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
            e->element[0]->type != REDIS_REPLY_STRING ||
            e->element[0]->len >= HY_QC_STREAM_ID_MAX)
            break;
        memcpy(s->last, e->element[0]->str, e->element[0]->len);
        s->last[e->element[0]->len] = 0;
        const redisReply *fl = e->element[1];
        if (s->done || fl->type != REDIS_REPLY_ARRAY)
            continue;
        if (fl->elements % 2 || !apply(c, s, fl)) {
            c->malformed++;
            HY_LOGW("queue: job %s: a malformed result entry; failing the request", s->id);
            hy_qc_finish(c, s, HY_FINISH_ERROR);
        }
    }
    if (s->used && s->gen == sn->gen && s->n_out > before && !s->done) {
        if (before == 0)
            s->t_first = hy_clock_now();
        pthread_cond_broadcast(&s->cv);
        if (s->notify)
            s->notify(s->notify_ctx);
    }
    pthread_mutex_unlock(&c->mu);
}

/* Every request in flight ends (the queue is lost: their answers cannot come). */
static void fail_all(struct hy_queue_client *c, enum hy_finish why)
{
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n_slots; i++)
        if (c->slots[i].used && !c->slots[i].done) {
            c->unavailable++;
            hy_qc_finish(c, &c->slots[i], why);
        }
    c->up = false;
    pthread_mutex_unlock(&c->mu);
}

/* Under mu: ends the slots past their deadline (their ids into cancel[]) and lists the
 * open ones into sn[]; returns how many. */
static int snapshot(struct hy_queue_client *c, struct snap *sn, char (*cancel)[HY_JOB_ID_LEN + 1],
                    int *n_cancel)
{
    double now = hy_clock_now();
    int n = 0;
    *n_cancel = 0;
    for (int i = 0; i < c->n_slots; i++) {
        struct qslot *s = &c->slots[i];
        if (!s->used || s->done || !s->posted)
            continue;
        if (s->deadline > 0 && now > s->deadline) {
            memcpy(cancel[(*n_cancel)++], s->id, HY_JOB_ID_LEN + 1);
            hy_qc_finish(c, s, HY_FINISH_TIMEOUT);
            continue;
        }
        sn[n].idx = i;
        sn[n].gen = s->gen;
        memcpy(sn[n].key, s->key, sizeof sn[n].key);
        memcpy(sn[n].last, s->last, sizeof sn[n].last);
        n++;
    }
    return n;
}

static void send_cancels(struct hy_queue_client *c, char (*ids)[HY_JOB_ID_LEN + 1], int n)
{
    pthread_mutex_lock(&c->cmd_mu);
    for (int i = 0; i < n && hy_redis_ensure(&c->cmd, NULL); i++) {
        char key[HY_JOB_KEY_MAX];
        hy_job_key(key, c->prefix, "c", ids[i]);
        freeReplyObject(hy_redis_cmdf(&c->cmd, "SET %s 1 EX 3600", key));
    }
    pthread_mutex_unlock(&c->cmd_mu);
}

static void handle_reply(struct hy_queue_client *c, const redisReply *x, struct snap *sn, int n)
{
    for (size_t i = 0; i < x->elements; i++) {
        const redisReply *kv = x->element[i];
        if (kv->type != REDIS_REPLY_ARRAY || kv->elements != 2 ||
            kv->element[0]->type != REDIS_REPLY_STRING ||
            kv->element[1]->type != REDIS_REPLY_ARRAY)
            continue;
        const redisReply *key = kv->element[0], *entries = kv->element[1];
        if (is(key, c->bell_key)) {
            const redisReply *e = entries->elements ? entries->element[entries->elements - 1]
                                                    : NULL;
            if (e && e->type == REDIS_REPLY_ARRAY && e->elements == 2 &&
                e->element[0]->type == REDIS_REPLY_STRING &&
                e->element[0]->len < HY_QC_STREAM_ID_MAX) {
                memcpy(c->bell_last, e->element[0]->str, e->element[0]->len);
                c->bell_last[e->element[0]->len] = 0;
            }
            continue;
        }
        for (int j = 0; j < n; j++)
            if (is(key, sn[j].key)) {
                apply_all(c, &sn[j], entries);
                break;
            }
    }
}

/* One XREAD over the bell and the n open streams; false when the connection failed. */
static bool read_once(struct hy_queue_client *c, struct snap *sn, int n, const char **argv,
                      size_t *lens)
{
    int k = 0;
    const char *head[] = {"XREAD", "COUNT", READER_COUNT, "BLOCK", READER_BLOCK_MS, "STREAMS"};
    for (size_t i = 0; i < 6; i++)
        argv[k] = head[i], lens[k] = strlen(head[i]), k++;
    argv[k] = c->bell_key, lens[k] = strlen(c->bell_key), k++;
    for (int i = 0; i < n; i++)
        argv[k] = sn[i].key, lens[k] = strlen(sn[i].key), k++;
    argv[k] = c->bell_last, lens[k] = strlen(c->bell_last), k++;
    for (int i = 0; i < n; i++)
        argv[k] = sn[i].last, lens[k] = strlen(sn[i].last), k++;
    redisReply *x = hy_redis_cmd(&c->rd, k, argv, lens);
    if (!x)
        return false;
    if (x->type == REDIS_REPLY_ERROR) {
        HY_LOGW("queue: XREAD: %.200s; failing the requests in flight", x->str);
        fail_all(c, HY_FINISH_ERROR);
        usleep(100000);
    } else if (x->type == REDIS_REPLY_ARRAY) {
        handle_reply(c, x, sn, n);
    }
    freeReplyObject(x);
    return true;
}

void *hy_qc_reader_main(void *arg)
{
    struct hy_queue_client *c = arg;
    struct snap *sn = malloc((size_t)c->n_slots * sizeof *sn);
    char(*cancel)[HY_JOB_ID_LEN + 1] = malloc((size_t)c->n_slots * sizeof *cancel);
    const char **argv = malloc((size_t)(2 * c->n_slots + 10) * sizeof *argv);
    size_t *lens = malloc((size_t)(2 * c->n_slots + 10) * sizeof *lens);
    HY_ASSERT(sn && cancel && argv && lens);
    for (;;) {
        int n_cancel = 0;
        pthread_mutex_lock(&c->mu);
        if (c->stop) {
            pthread_mutex_unlock(&c->mu);
            break;
        }
        int n = snapshot(c, sn, cancel, &n_cancel);
        if (n == 0 && n_cancel == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200000000;
            ts.tv_sec += ts.tv_nsec / 1000000000;
            ts.tv_nsec %= 1000000000;
            pthread_cond_timedwait(&c->wake, &c->mu, &ts);
        }
        pthread_mutex_unlock(&c->mu);
        if (n_cancel)
            send_cancels(c, cancel, n_cancel);
        if (n == 0)
            continue;
        if (!hy_redis_ensure(&c->rd, NULL)) {
            fail_all(c, HY_FINISH_CANCELLED);
            usleep(50000);
            continue;
        }
        pthread_mutex_lock(&c->mu);
        c->up = true;
        pthread_mutex_unlock(&c->mu);
        if (!read_once(c, sn, n, argv, lens))
            fail_all(c, HY_FINISH_CANCELLED);
    }
    fail_all(c, HY_FINISH_CANCELLED);
    free(sn);
    free(cancel);
    free(argv);
    free(lens);
    return NULL;
}

/* A consumer name fit for a label value: [A-Za-z0-9._:-], 1..HY_JOB_ATTEMPT_MAX bytes. */
static bool label_safe(const redisReply *x)
{
    if (!x || x->type != REDIS_REPLY_STRING || x->len == 0 || x->len >= HY_JOB_ATTEMPT_MAX)
        return false;
    for (size_t i = 0; i < x->len; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-",
                    x->str[i]) || !x->str[i])
            return false;
    return true;
}

static void pending_lines(FILE *f, const redisReply *p, long long *total)
{
    *total = 0;
    if (!p || p->type != REDIS_REPLY_ARRAY || p->elements != 4)
        return;
    hy_redis_int(p->element[0], 0, INT64_MAX / 4, total);
    const redisReply *list = p->element[3];
    if (list->type != REDIS_REPLY_ARRAY)
        return;
    fprintf(f, "# HELP hymt_queue_pending_jobs Jobs delivered to a worker and not acknowledged "
               "yet, by consumer.\n# TYPE hymt_queue_pending_jobs gauge\n");
    for (size_t i = 0; i < list->elements && i < READER_MAX_CONSUMERS; i++) {
        const redisReply *e = list->element[i];
        long long v = 0;
        if (e->type == REDIS_REPLY_ARRAY && e->elements == 2 && label_safe(e->element[0]) &&
            hy_redis_int(e->element[1], 0, INT64_MAX / 4, &v))
            fprintf(f, "hymt_queue_pending_jobs{consumer=\"%.*s\"} %lld\n",
                    (int)e->element[0]->len, e->element[0]->str, v);
    }
}

static void stats_lines(FILE *f, const redisReply *h)
{
    static const char *const outcomes[] = {"stop", "length", "cancelled", "timeout", "error"};
    long long v[6] = {0}, reclaimed = 0;
    for (size_t i = 0; h && h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2) {
        const redisReply *k = h->element[i];
        long long x = 0;
        if (!hy_redis_int(h->element[i + 1], 0, INT64_MAX / 4, &x))
            continue;
        if (is(k, "reclaimed"))
            reclaimed = x;
        for (int j = 0; j < 5; j++)
            if (is(k, outcomes[j]))
                v[j] += x;
    }
    fprintf(f, "# HELP hymt_queue_reclaimed_total Jobs taken over from a worker that went "
               "silent (XAUTOCLAIM).\n# TYPE hymt_queue_reclaimed_total counter\n"
               "hymt_queue_reclaimed_total %lld\n", reclaimed);
    fprintf(f, "# HELP hymt_queue_jobs_total Jobs answered by the workers, by outcome.\n"
               "# TYPE hymt_queue_jobs_total counter\n");
    for (int j = 0; j < 5; j++)
        fprintf(f, "hymt_queue_jobs_total{outcome=\"%s\"} %lld\n", outcomes[j], v[j]);
}

void hy_queue_client_metrics(struct hy_queue_client *c, FILE *f)
{
    char min[32];
    snprintf(min, sizeof min, "%lld", (long long)(hy_job_now_ms() - HY_JOB_ALIVE_MS));
    redisReply *r[4] = {0};
    pthread_mutex_lock(&c->cmd_mu);
    if (hy_redis_ensure(&c->cmd, NULL)) {
        r[0] = hy_redis_cmdf(&c->cmd, "XLEN %s", c->jobs_key);
        r[1] = r[0] ? hy_redis_cmdf(&c->cmd, "XPENDING %s %s", c->jobs_key, HY_JOB_GROUP) : NULL;
        r[2] = r[1] ? hy_redis_cmdf(&c->cmd, "HGETALL %s", c->stats_key) : NULL;
        r[3] = r[2] ? hy_redis_cmdf(&c->cmd, "ZCOUNT %s %s +inf", c->workers_key, min) : NULL;
    }
    pthread_mutex_unlock(&c->cmd_mu);
    pthread_mutex_lock(&c->mu);
    long long unavailable = c->unavailable, mismatched = c->mismatched, bad = c->malformed;
    pthread_mutex_unlock(&c->mu);
    bool up = r[3] != NULL;
    fprintf(f, "# HELP hymt_queue_up 1 when Redis answers.\n# TYPE hymt_queue_up gauge\n"
               "hymt_queue_up %d\n", up);
    fprintf(f, "# HELP hymt_queue_failed_requests_total Requests this front end failed "
               "because of the queue, by reason.\n"
               "# TYPE hymt_queue_failed_requests_total counter\n"
               "hymt_queue_failed_requests_total{reason=\"unavailable\"} %lld\n"
               "hymt_queue_failed_requests_total{reason=\"rerun_differs\"} %lld\n"
               "hymt_queue_failed_requests_total{reason=\"malformed\"} %lld\n",
            unavailable, mismatched, bad);
    if (up) {
        long long len = 0, pending = 0, workers = 0;
        hy_redis_int(r[0], 0, INT64_MAX / 4, &len);
        pending_lines(f, r[1], &pending);
        fprintf(f, "# HELP hymt_queue_jobs_waiting Jobs waiting for a worker (the queue depth).\n"
                   "# TYPE hymt_queue_jobs_waiting gauge\nhymt_queue_jobs_waiting %lld\n",
                len > pending ? len - pending : 0);
        fprintf(f, "# HELP hymt_queue_jobs_pending Jobs running on workers (delivered, not "
                   "acknowledged).\n# TYPE hymt_queue_jobs_pending gauge\n"
                   "hymt_queue_jobs_pending %lld\n", pending);
        stats_lines(f, r[2]);
        hy_redis_int(r[3], 0, INT64_MAX / 4, &workers);
        fprintf(f, "# HELP hymt_queue_workers Workers that sent a heartbeat in the last %d s.\n"
                   "# TYPE hymt_queue_workers gauge\nhymt_queue_workers %lld\n",
                HY_JOB_ALIVE_MS / 1000, workers);
    }
    for (int i = 0; i < 4; i++)
        freeReplyObject(r[i]);
}

/* The workers' engine counters (their heartbeats' hashes) summed into out: the front end's
 * engine gauges then describe the engines behind it. Unchanged when Redis is unreachable. */
void hy_qc_worker_stats(struct hy_queue_client *c, struct hy_engine_stats *out)
{
    int64_t sum[HY_JOB_N_STATS] = {0};
    pthread_mutex_lock(&c->cmd_mu);
    redisReply *names = hy_redis_ensure(&c->cmd, NULL)
                            ? hy_redis_cmdf(&c->cmd, "ZRANGE %s 0 %d", c->workers_key,
                                            READER_MAX_CONSUMERS - 1)
                            : NULL;
    size_t n = 0;
    for (size_t i = 0; names && names->type == REDIS_REPLY_ARRAY && i < names->elements; i++) {
        char key[HY_JOB_KEY_MAX];
        if (!label_safe(names->element[i]))
            continue;
        snprintf(key, sizeof key, "%s:w:%.*s", c->prefix, (int)names->element[i]->len,
                 names->element[i]->str);
        const char *argv[2 + HY_JOB_N_STATS] = {"HMGET", key};
        for (int k = 0; k < HY_JOB_N_STATS; k++)
            argv[2 + k] = hy_job_stat_names[k];
        if (!hy_redis_append(&c->cmd, 2 + HY_JOB_N_STATS, argv, NULL))
            break;
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        redisReply *x = hy_redis_reply(&c->cmd);
        for (size_t k = 0; x && x->type == REDIS_REPLY_ARRAY && k < x->elements &&
                           k < HY_JOB_N_STATS; k++) {
            long long v = 0;
            if (hy_redis_int(x->element[k], 0, INT64_MAX / 1024, &v))
                sum[k] += v;
        }
        freeReplyObject(x);
        if (!x)
            break;
    }
    pthread_mutex_unlock(&c->cmd_mu);
    freeReplyObject(names);
    if (!n)
        return;
    out->steps = sum[0];
    out->tokens_generated = sum[1];
    out->tokens_computed = sum[2];
    out->preemptions = sum[3];
    out->kv_blocks_total = (int)sum[4];
    out->kv_blocks_used = (int)sum[5];
    out->kv_blocks_cached = (int)sum[6];
    int in_flight = out->n_running; /* this front end's requests: running or waiting */
    out->n_running = (int)sum[7];
    out->n_waiting = in_flight > sum[7] ? in_flight - (int)sum[7] : 0;
}
