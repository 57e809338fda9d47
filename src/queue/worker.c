/* worker.c: `hymt worker`'s loop (queue.h): take jobs from the group (XREADGROUP, and
 * XAUTOCLAIM for jobs idle past claim_idle; no more than a fair share of the jobs in
 * flight while other workers have room), own each one (the take script), run it on the
 * local engine, append its tokens to its result stream and answer it (the push and end
 * scripts, each refused once another worker owns the job), acknowledge only at the end.
 * One thread and one connection; the engine's notify hook wakes it. */
#include "queue/worker_impl.h"

#include "core/clock.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORKER_IDLE_BLOCK_MS 500 /* XREADGROUP BLOCK while nothing runs */
#define WORKER_TICK_S 0.005      /* longest wait for engine news while jobs run */
#define WORKER_CANCEL_EVERY_S 0.1
#define WORKER_BEAT_EVERY_S 0.5
#define WORKER_RUN_TTL 86400 /* owner key and result stream while a job runs */
#define WORKER_FORGET_S 3600 /* a silent worker's heartbeat and counters are dropped after */

static void notify(void *ctx)
{
    struct hy_queue_worker *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->news = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void count(struct hy_queue_worker *w, int64_t *field, int delta)
{
    pthread_mutex_lock(&w->mu);
    *field += delta;
    pthread_mutex_unlock(&w->mu);
}

static void free_job(struct hy_queue_worker *w, struct wjob *j)
{
    if (j->submitted)
        hy_engine_release(w->e, j->h);
    hy_job_free(&j->j);
    free(j->buf);
    memset(j, 0, sizeof *j);
    pthread_mutex_lock(&w->mu);
    w->st.active--;
    pthread_mutex_unlock(&w->mu);
}

/* EVAL of script with keys and args (strings; args[i] may hold binary with lens): sent
 * now (eval) or appended to the pipeline (append_eval: false when the connection failed). */
#define EVAL_ARGV                                                                          \
    const char *argv[16];                                                                  \
    size_t lens[16];                                                                       \
    char nks[8];                                                                           \
    snprintf(nks, sizeof nks, "%d", nk);                                                   \
    int n = 0;                                                                             \
    argv[n] = "EVAL", lens[n++] = 4;                                                       \
    argv[n] = script, lens[n++] = strlen(script);                                          \
    argv[n] = nks, lens[n++] = strlen(nks);                                                \
    for (int i = 0; i < nk; i++)                                                           \
        argv[n] = keys[i], lens[n++] = strlen(keys[i]);                                    \
    for (int i = 0; i < na; i++)                                                           \
        argv[n] = args[i], lens[n++] = alens ? alens[i] : strlen(args[i]);
static redisReply *eval(struct hy_queue_worker *w, const char *script, int nk, const char **keys,
                        int na, const char **args, const size_t *alens)
{
    EVAL_ARGV
    return hy_redis_cmd(&w->r, n, argv, lens);
}

static bool append_eval(struct hy_queue_worker *w, const char *script, int nk,
                        const char **keys, int na, const char **args, const size_t *alens)
{
    EVAL_ARGV
    return hy_redis_append(&w->r, n, argv, lens);
}

/* Owns the decoded job in slot j (the take script) and starts it on the engine. */
static void start(struct hy_queue_worker *w, struct wjob *j)
{
    snprintf(j->attempt, sizeof j->attempt, "%s:%llu", w->name,
             (unsigned long long)++w->n_attempts);
    hy_job_key(j->own, w->prefix, "o", j->j.id);
    hy_job_key(j->res, w->prefix, "r", j->j.id);
    hy_job_key(j->cancel, w->prefix, "c", j->j.id);
    char run_ttl[24], ttl[24], cf[8];
    snprintf(run_ttl, sizeof run_ttl, "%d", WORKER_RUN_TTL);
    snprintf(ttl, sizeof ttl, "%d", j->j.ttl_s);
    snprintf(cf, sizeof cf, "%d", (int)HY_FINISH_CANCELLED);
    const char *keys[] = {j->own, j->res, w->jobs_key, j->cancel, w->stats_key};
    const char *args[] = {j->attempt, run_ttl, j->entry, HY_JOB_GROUP, ttl, cf};
    redisReply *x = eval(w, hy_job_lua_take, 5, keys, 6, args, NULL);
    long long v = -1;
    if (!hy_redis_is_int(x, &v) || v != 1) {
        if (v == 2)
            count(w, &w->st.cancelled, 1);
        if (x && x->type == REDIS_REPLY_ERROR)
            HY_LOGW("queue: job %s: take: %.200s", j->j.id, x->str);
        freeReplyObject(x);
        free_job(w, j); /* done already, cancelled, or the connection failed (stays pending) */
        return;
    }
    freeReplyObject(x);
    int64_t left_ms = j->j.deadline_ms ? j->j.deadline_ms - hy_job_now_ms() : 0;
    struct hy_err err = {{0}};
    hy_status st = HY_OK;
    if (j->j.deadline_ms && left_ms <= 0) {
        count(w, &w->st.expired, 1);
        j->finish = HY_FINISH_TIMEOUT; /* expired while it waited: answered, never run */
    } else if (!(j->buf = malloc((size_t)j->j.max_new * sizeof *j->buf))) {
        j->finish = HY_FINISH_ERROR;
    } else {
        struct hy_engine_request r = {.prompt = j->j.prompt, .n_prompt = j->j.n_prompt,
                                      .max_new_tokens = j->j.max_new, .sampling = j->j.sampling,
                                      .timeout_s = left_ms > 0 ? left_ms / 1000.0 : 0,
                                      .n_stop = j->j.n_stop, .notify = notify, .notify_ctx = w};
        memcpy(r.stop_ids, j->j.stop_ids, sizeof r.stop_ids);
        st = hy_engine_submit(w->e, &r, &j->h, &err);
        j->submitted = !st;
        if (st) {
            HY_LOGW("queue: job %s: refused by the engine: %s", j->j.id, err.msg);
            j->finish = HY_FINISH_ERROR;
        }
    }
    j->engine_done = !j->submitted;
    count(w, &w->st.taken, 1);
}

/* A delivered entry [id, [field, value, ...]] into a free slot, then started. */
static void take_entry(struct hy_queue_worker *w, const redisReply *e, bool reclaimed)
{
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
        e->element[0]->type != REDIS_REPLY_STRING || e->element[0]->len >= HY_WJ_ENTRY_MAX)
        return;
    const redisReply *id = e->element[0], *fl = e->element[1];
    struct wjob *j = NULL;
    for (int i = 0; i < w->cap; i++)
        if (w->jobs[i].used && strlen(w->jobs[i].entry) == id->len &&
            !memcmp(w->jobs[i].entry, id->str, id->len))
            return; /* ours already (a refresh came late): it runs */
    for (int i = 0; i < w->cap && !j; i++)
        if (!w->jobs[i].used)
            j = &w->jobs[i];
    if (!j)
        return; /* cannot happen: we ask for free slots only; it stays pending */
    memset(j, 0, sizeof *j);
    j->used = true;
    memcpy(j->entry, id->str, id->len);
    pthread_mutex_lock(&w->mu);
    w->st.active++;
    w->st.reclaimed += reclaimed;
    pthread_mutex_unlock(&w->mu);
    struct hy_job_field f[HY_WJ_MAX_FIELDS];
    size_t n = 0;
    for (size_t i = 0; fl->type == REDIS_REPLY_ARRAY && i + 1 < fl->elements &&
                       n < HY_WJ_MAX_FIELDS; i += 2)
        if (fl->element[i]->type == REDIS_REPLY_STRING &&
            fl->element[i + 1]->type == REDIS_REPLY_STRING)
            f[n++] = (struct hy_job_field){fl->element[i]->str, fl->element[i + 1]->str,
                                           fl->element[i]->len, fl->element[i + 1]->len};
    struct hy_err err = {{0}};
    if (hy_job_decode(f, n, &j->j, &err)) {
        HY_LOGW("queue: entry %s: %s: dropped", j->entry, err.msg);
        count(w, &w->st.malformed, 1);
        freeReplyObject(hy_redis_cmdf(&w->r, "XACK %s %s %s", w->jobs_key, HY_JOB_GROUP,
                                      j->entry));
        freeReplyObject(hy_redis_cmdf(&w->r, "XDEL %s %s", w->jobs_key, j->entry));
        free_job(w, j);
        return;
    }
    start(w, j);
}

/* Starts the entries of an XREADGROUP reply (at most max); recreates the group when Redis
 * lost it. Frees x. */
static void take_reply(struct hy_queue_worker *w, redisReply *x, int max)
{
    if (x && x->type == REDIS_REPLY_ERROR) {
        if (strstr(x->str, "NOGROUP")) /* Redis lost its data: make them again */
            hy_qc_ensure_group(&w->r, w->jobs_key);
        else
            HY_LOGW("queue: reading jobs: %.200s", x->str);
    }
    if (x && x->type == REDIS_REPLY_ARRAY && x->elements == 1 &&
        x->element[0]->type == REDIS_REPLY_ARRAY && x->element[0]->elements == 2) {
        const redisReply *entries = x->element[0]->element[1];
        for (size_t i = 0; entries->type == REDIS_REPLY_ARRAY && i < entries->elements &&
                           (int)i < max; i++)
            take_entry(w, entries->element[i], false);
    }
    freeReplyObject(x);
}

/* New jobs for the free slots. While nothing runs it blocks briefly for one; then the read
 * script hands out no more than this worker's fair share of the jobs in flight (with
 * share_wait_ms < 0: as many as there are free slots). Called between engine steps, so a
 * worker with room fills up over a few reads while the others take their part. */
static void take_new(struct hy_queue_worker *w)
{
    int free_slots = w->cap - w->st.active;
    bool share = w->o.share_wait_ms >= 0;
    if (free_slots <= 0)
        return;
    if (w->st.active == 0) {
        take_reply(w, hy_redis_cmdf(&w->r, "XREADGROUP GROUP %s %s COUNT %d BLOCK %d "
                                           "STREAMS %s >", HY_JOB_GROUP, w->name,
                                    share ? 1 : free_slots, WORKER_IDLE_BLOCK_MS, w->jobs_key),
                   share ? 1 : free_slots);
        free_slots = w->cap - w->st.active;
        if (!share || w->st.active == 0 || free_slots <= 0)
            return;
    }
    if (!share) {
        take_reply(w, hy_redis_cmdf(&w->r, "XREADGROUP GROUP %s %s COUNT %d STREAMS %s >",
                                    HY_JOB_GROUP, w->name, free_slots, w->jobs_key),
                   free_slots);
        return;
    }
    char fs[16], act[16], since[24], wait[16];
    snprintf(fs, sizeof fs, "%d", free_slots);
    snprintf(act, sizeof act, "%d", w->st.active);
    snprintf(since, sizeof since, "%lld", (long long)(hy_job_now_ms() - HY_JOB_ALIVE_MS));
    snprintf(wait, sizeof wait, "%d", w->o.share_wait_ms);
    const char *keys[] = {w->jobs_key, w->workers_key};
    const char *args[] = {HY_JOB_GROUP, w->name, fs, act, since, wait};
    take_reply(w, eval(w, hy_job_lua_read, 2, keys, 6, args, NULL), free_slots);
}

/* Jobs pending on consumers silent for claim_idle (dead workers) into the free slots. */
static void reclaim(struct hy_queue_worker *w)
{
    int free_slots = w->cap - w->st.active;
    if (free_slots <= 0)
        return;
    redisReply *x = hy_redis_cmdf(&w->r, "XAUTOCLAIM %s %s %s %lld 0-0 COUNT %d", w->jobs_key,
                                  HY_JOB_GROUP, w->name, (long long)(w->o.claim_idle_s * 1000),
                                  free_slots);
    if (x && x->type == REDIS_REPLY_ARRAY && x->elements >= 2 &&
        x->element[1]->type == REDIS_REPLY_ARRAY) {
        const redisReply *entries = x->element[1];
        for (size_t i = 0; i < entries->elements && (int)i < free_slots; i++) {
            HY_LOGI("queue: reclaiming a job idle for over %.1f s", w->o.claim_idle_s);
            take_entry(w, entries->element[i], true);
        }
    }
    freeReplyObject(x);
}

/* Reads what the engine produced for every job (never waits); then one pipelined round
 * trip appends the new tokens and answers the finished jobs. */
static void push_all(struct hy_queue_worker *w)
{
    int *order = w->order, *kinds = w->kinds, n = 0; /* [2 cap]: a push and an end each */
    for (int i = 0; i < w->cap; i++) {
        struct wjob *j = &w->jobs[i];
        if (!j->used)
            continue;
        if (j->submitted && !j->engine_done) {
            struct hy_engine_status st;
            int k = hy_engine_read(w->e, j->h, j->buf + j->n_read, j->j.max_new - j->n_read, 0,
                                   &st);
            if (k < 0) {
                j->engine_done = true;
                j->finish = HY_FINISH_ERROR;
            } else {
                j->n_read += k;
                if (st.done && st.n_generated == j->n_read) {
                    j->engine_done = true;
                    j->finish = st.finish;
                }
            }
        }
        char off[24];
        if (j->n_read > j->n_pushed) {
            snprintf(off, sizeof off, "%d", j->n_pushed);
            const char *keys[] = {j->own, j->res};
            const char *args[] = {j->attempt, (const char *)(j->buf + j->n_pushed), off};
            size_t alens[] = {strlen(j->attempt), (size_t)(j->n_read - j->n_pushed) * 4,
                              strlen(off)};
            if (!append_eval(w, hy_job_lua_push, 2, keys, 3, args, alens))
                return;
            order[n] = i, kinds[n++] = j->n_read;
        }
        if (j->engine_done) {
            char f[8], g[24], ttl[24];
            snprintf(f, sizeof f, "%d", (int)j->finish);
            snprintf(g, sizeof g, "%d", j->n_read);
            snprintf(ttl, sizeof ttl, "%d", j->j.ttl_s);
            const char *keys[] = {j->own, j->res, w->jobs_key, w->stats_key};
            const char *args[] = {j->attempt, f, g, ttl, j->entry, HY_JOB_GROUP,
                                  hy_finish_str(j->finish)};
            if (!append_eval(w, hy_job_lua_end, 4, keys, 7, args, NULL))
                return;
            order[n] = i, kinds[n++] = -1;
        }
    }
    for (int k = 0; k < n; k++) {
        struct wjob *j = &w->jobs[order[k]];
        redisReply *x = hy_redis_reply(&w->r);
        if (!x)
            return; /* connection lost: pushed again (same offsets) once it is back */
        long long v = 0;
        bool ok = hy_redis_is_int(x, &v) && v == 1;
        if (x->type == REDIS_REPLY_ERROR)
            HY_LOGW("queue: job %s: %.200s", j->j.id, x->str);
        freeReplyObject(x);
        if (!j->used)
            continue; /* dropped by an earlier reply of this round */
        if (!ok) { /* another worker owns it now (we were silent too long), or it is done */
            HY_LOGW("queue: job %s is no longer ours: dropping it", j->j.id);
            count(w, &w->st.lost, 1);
            free_job(w, j);
        } else if (kinds[k] >= 0) {
            j->n_pushed = kinds[k];
        } else {
            count(w, &w->st.completed, 1);
            free_job(w, j);
        }
    }
}

/* Cancellation marks of the running jobs (one pipelined EXISTS each): the engine stops
 * them, and the end script answers "cancelled". */
static void check_cancels(struct hy_queue_worker *w)
{
    int n = 0;
    for (int i = 0; i < w->cap; i++) {
        struct wjob *j = &w->jobs[i];
        if (!j->used || !j->submitted || j->engine_done || j->cancel_asked)
            continue;
        const char *argv[] = {"EXISTS", j->cancel};
        size_t lens[] = {6, strlen(j->cancel)};
        if (!hy_redis_append(&w->r, 2, argv, lens))
            return;
        w->order[n++] = i;
    }
    for (int k = 0; k < n; k++) {
        redisReply *x = hy_redis_reply(&w->r);
        if (!x)
            return;
        long long v = 0;
        struct wjob *j = &w->jobs[w->order[k]];
        if (hy_redis_is_int(x, &v) && v == 1) {
            j->cancel_asked = true;
            hy_engine_cancel(w->e, j->h);
        }
        freeReplyObject(x);
    }
}

/* Resets the idle time of the entries of the jobs we run (so no one reclaims them) and
 * says we are alive. */
static void heartbeat(struct hy_queue_worker *w)
{
    int n = 0;
    for (int i = 0; i < w->cap; i++) {
        struct wjob *j = &w->jobs[i];
        if (!j->used || !j->submitted)
            continue;
        const char *keys[] = {j->own, w->jobs_key};
        const char *args[] = {j->attempt, HY_JOB_GROUP, w->name, j->entry};
        if (!append_eval(w, hy_job_lua_refresh, 2, keys, 4, args, NULL))
            return;
        n++;
    }
    char now[24], old[24], key[HY_JOB_KEY_MAX];
    snprintf(now, sizeof now, "%lld", (long long)hy_job_now_ms());
    snprintf(old, sizeof old, "%lld", (long long)hy_job_now_ms() - WORKER_FORGET_S * 1000);
    hy_job_key(key, w->prefix, "w", w->name);
    const char *zadd[] = {"ZADD", w->workers_key, now, w->name};
    const char *zrem[] = {"ZREMRANGEBYSCORE", w->workers_key, "-inf", old};
    size_t l1[] = {4, strlen(w->workers_key), strlen(now), strlen(w->name)};
    size_t l2[] = {16, strlen(w->workers_key), 4, strlen(old)};
    /* the engine's counters, for the front ends' /metrics (summed over the workers) */
    struct hy_engine_stats es;
    hy_engine_stats(w->e, &es);
    char v[HY_JOB_N_STATS][24];
    const char *hset[2 + 2 * HY_JOB_N_STATS] = {"HSET", key};
    size_t l3[2 + 2 * HY_JOB_N_STATS] = {4, strlen(key)};
    int64_t vals[HY_JOB_N_STATS] = {es.steps, es.tokens_generated, es.tokens_computed,
                                    es.preemptions, es.kv_blocks_total, es.kv_blocks_used,
                                    es.kv_blocks_cached, es.n_running};
    for (int i = 0; i < HY_JOB_N_STATS; i++) {
        snprintf(v[i], sizeof v[i], "%lld", (long long)vals[i]);
        hset[2 + 2 * i] = hy_job_stat_names[i], l3[2 + 2 * i] = strlen(hy_job_stat_names[i]);
        hset[3 + 2 * i] = v[i], l3[3 + 2 * i] = strlen(v[i]);
    }
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%d", WORKER_FORGET_S);
    const char *exp[] = {"EXPIRE", key, ttl};
    size_t l4[] = {6, strlen(key), strlen(ttl)};
    if (!hy_redis_append(&w->r, 4, zadd, l1) || !hy_redis_append(&w->r, 4, zrem, l2) ||
        !hy_redis_append(&w->r, 2 + 2 * HY_JOB_N_STATS, hset, l3) ||
        !hy_redis_append(&w->r, 3, exp, l4))
        return;
    for (int k = 0; k < n + 4; k++) {
        redisReply *x = hy_redis_reply(&w->r);
        if (!x)
            return;
        freeReplyObject(x);
    }
}

/* Sleeps until the engine has news or WORKER_TICK_S passes. */
static void wait_news(struct hy_queue_worker *w)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)(WORKER_TICK_S * 1e9);
    ts.tv_sec += ts.tv_nsec / 1000000000;
    ts.tv_nsec %= 1000000000;
    pthread_mutex_lock(&w->mu);
    if (!w->news)
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    w->news = false;
    pthread_mutex_unlock(&w->mu);
}

static bool connected(struct hy_queue_worker *w)
{
    bool was = w->r.c != NULL;
    bool ok = hy_redis_ensure(&w->r, NULL);
    if (ok && (!was || !w->group_ok))
        w->group_ok = hy_qc_ensure_group(&w->r, w->jobs_key);
    pthread_mutex_lock(&w->mu);
    w->st.connected = ok;
    pthread_mutex_unlock(&w->mu);
    return ok;
}

void hy_queue_worker_run(struct hy_queue_worker *w, volatile const sig_atomic_t *stop,
                         double drain_s)
{
    double drain_until = 0;
    for (;;) {
        double now = hy_clock_now();
        if (*stop && drain_until == 0) {
            drain_until = now + drain_s;
            HY_LOGI("queue: stopping: %d job(s) running, up to %.0f s", w->st.active, drain_s);
        }
        if (drain_until > 0 && (w->st.active == 0 || now > drain_until))
            break;
        if (!connected(w)) {
            usleep(50000); /* the engine runs on; results wait in the jobs' buffers */
            continue;
        }
        if (now >= w->next_beat) {
            w->next_beat = now + (w->o.claim_idle_s / 4 < WORKER_BEAT_EVERY_S
                                      ? w->o.claim_idle_s / 4 : WORKER_BEAT_EVERY_S);
            heartbeat(w);
        }
        if (!drain_until)
            take_new(w);
        if (!drain_until && now >= w->next_claim) {
            w->next_claim = now + w->o.claim_idle_s / 4;
            reclaim(w);
        }
        push_all(w);
        if (now >= w->next_cancel) {
            w->next_cancel = now + WORKER_CANCEL_EVERY_S;
            check_cancels(w);
        }
        if (w->st.active > 0)
            wait_news(w);
    }
    if (w->r.c) /* gone from the count at once, not after the heartbeat window */
        freeReplyObject(hy_redis_cmdf(&w->r, "ZREM %s %s", w->workers_key, w->name));
}

/* The consumer name: host (label-safe characters only), pid, 16 random bits. */
static void make_name(char *out, size_t cap)
{
    char host[33] = "host";
    gethostname(host, sizeof host - 1);
    for (char *p = host; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", *p))
            *p = '_';
    char id[HY_JOB_ID_LEN + 1];
    hy_job_new_id(id);
    snprintf(out, cap, "%s-%d-%.4s", host, (int)getpid(), id);
}

hy_status hy_queue_worker_create(struct hy_queue_worker **out, const struct hy_queue_opts *o,
                                 struct hy_engine *e, struct hy_err *err)
{
    *out = NULL;
    struct hy_queue_worker *w = calloc(1, sizeof *w);
    if (!w)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    w->o = *o;
    if (w->o.claim_idle_s <= 0)
        w->o.claim_idle_s = HY_QUEUE_CLAIM_IDLE_S;
    if (w->o.share_wait_ms == 0)
        w->o.share_wait_ms = HY_QUEUE_SHARE_WAIT_MS;
    w->cap = o->capacity > 0 ? o->capacity : 16;
    w->e = e;
    snprintf(w->prefix, sizeof w->prefix, "%s", o->prefix[0] ? o->prefix : "hymt");
    hy_job_key(w->jobs_key, w->prefix, "jobs", NULL);
    hy_job_key(w->stats_key, w->prefix, "stats", NULL);
    hy_job_key(w->workers_key, w->prefix, "workers", NULL);
    make_name(w->name, sizeof w->name);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    hy_redis_init(&w->r, &o->url);
    w->jobs = calloc((size_t)w->cap, sizeof *w->jobs);
    w->order = calloc((size_t)w->cap * 2, sizeof *w->order);
    w->kinds = calloc((size_t)w->cap * 2, sizeof *w->kinds);
    hy_status st = !w->jobs || !w->order || !w->kinds
                       ? hy_err_set(err, HY_E_NOMEM, "out of memory")
                       : hy_redis_connect(&w->r, err);
    if (!st && !(w->group_ok = hy_qc_ensure_group(&w->r, w->jobs_key)))
        st = hy_err_set(err, HY_E_IO, "redis://%s:%d: cannot create the job stream's group",
                        o->url.host, o->url.port);
    if (st) {
        hy_queue_worker_destroy(w);
        return st;
    }
    *out = w;
    return HY_OK;
}

void hy_queue_worker_destroy(struct hy_queue_worker *w)
{
    if (!w)
        return;
    for (int i = 0; w->jobs && i < w->cap; i++)
        if (w->jobs[i].used)
            free_job(w, &w->jobs[i]); /* left pending: another worker takes them over */
    hy_redis_close(&w->r);
    free(w->jobs);
    free(w->order);
    free(w->kinds);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void hy_queue_worker_stats(struct hy_queue_worker *w, struct hy_queue_worker_stats *out)
{
    pthread_mutex_lock(&w->mu);
    *out = w->st;
    pthread_mutex_unlock(&w->mu);
}

const char *hy_queue_worker_name(const struct hy_queue_worker *w)
{
    return w->name;
}

void hy_queue_worker_metrics(struct hy_queue_worker *w, FILE *f)
{
    struct hy_queue_worker_stats s;
    hy_queue_worker_stats(w, &s);
    fprintf(f, "# HELP hymt_worker_queue_up 1 when this worker's Redis connection is up.\n"
               "# TYPE hymt_worker_queue_up gauge\nhymt_worker_queue_up %d\n"
               "# HELP hymt_worker_jobs_running Jobs this worker holds now.\n"
               "# TYPE hymt_worker_jobs_running gauge\nhymt_worker_jobs_running %d\n"
               "# HELP hymt_worker_jobs_total Jobs this worker handled, by what happened.\n"
               "# TYPE hymt_worker_jobs_total counter\n", s.connected, s.active);
    const struct {
        const char *k;
        int64_t v;
    } rows[] = {{"taken", s.taken},       {"reclaimed", s.reclaimed}, {"completed", s.completed},
                {"expired", s.expired},   {"cancelled", s.cancelled}, {"lost", s.lost},
                {"malformed", s.malformed}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        fprintf(f, "hymt_worker_jobs_total{event=\"%s\"} %lld\n", rows[i].k,
                (long long)rows[i].v);
}
