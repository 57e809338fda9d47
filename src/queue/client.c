/* client.c: the front end's side of the queue: the remote engine (queue.h). Each request
 * is a slot holding its job id, the tokens received and the last result-stream id read;
 * submit writes the job (and rings the reader's bell) on the command connection; one
 * reader thread follows every open result stream with XREAD BLOCK and publishes tokens to
 * the slots as the local engine does (notify hook, condition variable). */
#include "queue/client_impl.h"

#include "core/clock.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CLIENT_BLOCK_MS 200  /* XREAD BLOCK: deadlines are checked at least this often */
#define CLIENT_READ_COUNT 256 /* entries per stream per XREAD */
#define CLIENT_CANCEL_TTL 3600

static struct qslot *slot_of(struct hy_queue_client *c, uint64_t h)
{
    uint32_t i = (uint32_t)(h & 0xfffff);
    if (i == 0 || i > (uint32_t)c->n_slots)
        return NULL;
    struct qslot *s = &c->slots[i - 1];
    return s->used && s->gen == (uint32_t)(h >> 20) ? s : NULL;
}

/* Ends slot s (under mu) and wakes its client. */
void hy_qc_finish(struct hy_queue_client *c, struct qslot *s, enum hy_finish why)
{
    if (s->done)
        return;
    s->done = true;
    s->finish = why;
    s->t_done = hy_clock_now();
    c->stats.finished[why]++;
    c->n_running--;
    pthread_cond_broadcast(&s->cv);
    if (s->notify)
        s->notify(s->notify_ctx);
}

/* Marks job id cancelled for the workers (command connection). */
static void send_cancel(struct hy_queue_client *c, const char *id)
{
    char key[HY_JOB_KEY_MAX];
    hy_job_key(key, c->prefix, "c", id);
    pthread_mutex_lock(&c->cmd_mu);
    if (hy_redis_ensure(&c->cmd, NULL))
        freeReplyObject(hy_redis_cmdf(&c->cmd, "SET %s 1 EX %d", key, CLIENT_CANCEL_TTL));
    pthread_mutex_unlock(&c->cmd_mu);
}

static hy_status check(const struct hy_queue_client *c, const struct hy_engine_request *r,
                       struct hy_err *err)
{
    if (!r->prompt || r->n_prompt < 1 || r->max_new_tokens < 1 ||
        r->n_prompt > HY_JOB_MAX_PROMPT || r->max_new_tokens > HY_JOB_MAX_NEW)
        return hy_err_set(err, HY_E_INVAL, "a request needs a prompt and max_new_tokens >= 1");
    if (r->n_stop < 0 || r->n_stop > HY_ENGINE_MAX_STOP || r->timeout_s < 0)
        return hy_err_set(err, HY_E_RANGE, "at most %d stop ids, and a timeout >= 0",
                          HY_ENGINE_MAX_STOP);
    if (r->logprobs)
        return hy_err_set(err, HY_E_UNSUPPORTED, "logprobs: not available on a queue front "
                                                 "end (workers send token ids only)");
    for (int i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= c->o.vocab)
            return hy_err_set(err, HY_E_RANGE, "prompt token %d is %d, outside the vocabulary",
                              i, r->prompt[i]);
    return hy_sampler_params_check(&r->sampling, err);
}

/* Writes job j and rings the bell, in one round trip. */
static hy_status post_job(struct hy_queue_client *c, const struct hy_job *j, struct hy_err *err)
{
    char *scratch = malloc(hy_job_scratch_bytes(j));
    if (!scratch)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    struct hy_job_field f[HY_JOB_N_FIELDS];
    int nf = hy_job_encode(j, scratch, f);
    const char *argv[3 + 2 * HY_JOB_N_FIELDS];
    size_t lens[3 + 2 * HY_JOB_N_FIELDS];
    int n = 0;
    argv[n] = "XADD", lens[n++] = 4;
    argv[n] = c->jobs_key, lens[n++] = strlen(c->jobs_key);
    argv[n] = "*", lens[n++] = 1;
    for (int i = 0; i < nf; i++) {
        argv[n] = f[i].name, lens[n++] = f[i].name_len;
        argv[n] = f[i].val, lens[n++] = f[i].val_len;
    }
    const char *bell[] = {"XADD", c->bell_key, "MAXLEN", "~", "64", "*", "b", "1"};
    size_t bl[] = {4, strlen(c->bell_key), 6, 1, 2, 1, 1, 1};
    hy_status st = HY_OK;
    pthread_mutex_lock(&c->cmd_mu);
    if (!hy_redis_ensure(&c->cmd, err)) {
        st = HY_E_IO;
    } else if (!hy_redis_append(&c->cmd, n, argv, lens) || !hy_redis_append(&c->cmd, 8, bell, bl)) {
        st = hy_err_set(err, HY_E_IO, "the queue is unavailable: %s", c->cmd.why);
    } else {
        redisReply *a = hy_redis_reply(&c->cmd), *b = a ? hy_redis_reply(&c->cmd) : NULL;
        if (!a || !b)
            st = hy_err_set(err, HY_E_IO, "the queue is unavailable: %s", c->cmd.why);
        else if (a->type != REDIS_REPLY_STRING)
            st = hy_err_set(err, HY_E_IO, "the queue refused the job: %.120s",
                            a->type == REDIS_REPLY_ERROR ? a->str : "unexpected reply");
        freeReplyObject(a);
        freeReplyObject(b);
    }
    pthread_mutex_unlock(&c->cmd_mu);
    free(scratch);
    return st;
}

static hy_status qc_submit(void *ctx, const struct hy_engine_request *r, uint64_t *handle,
                           struct hy_err *err)
{
    struct hy_queue_client *c = ctx;
    hy_status st = check(c, r, err);
    if (st)
        return st;
    struct hy_job j = {.prompt = (int32_t *)r->prompt, .n_prompt = r->n_prompt,
                       .max_new = r->max_new_tokens, .sampling = r->sampling,
                       .n_stop = r->n_stop, .ttl_s = (int)c->o.result_ttl_s};
    memcpy(j.stop_ids, r->stop_ids, sizeof j.stop_ids);
    hy_job_new_id(j.id);
    if (r->timeout_s > 0)
        j.deadline_ms = hy_job_now_ms() + (int64_t)(r->timeout_s * 1000) + 1;
    int32_t *ids = malloc((size_t)r->max_new_tokens * sizeof *ids);
    if (!ids)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    pthread_mutex_lock(&c->mu);
    if (c->n_free == 0) {
        c->stats.rejected++;
        pthread_mutex_unlock(&c->mu);
        free(ids);
        return hy_err_set(err, HY_E_NOSPACE, "%d requests in flight", c->n_slots);
    }
    struct qslot *s = &c->slots[c->free_stack[--c->n_free]];
    s->used = true;
    s->gen++;
    s->done = false;
    s->finish = HY_FINISH_NONE;
    memcpy(s->id, j.id, sizeof s->id);
    hy_job_key(s->key, c->prefix, "r", s->id);
    snprintf(s->last, sizeof s->last, "0-0");
    s->attempt[0] = 0;
    s->ids = ids;
    s->cap = r->max_new_tokens;
    s->n_out = s->n_read = s->pos = 0;
    s->n_prompt = r->n_prompt;
    s->t_submit = hy_clock_now();
    s->t_first = s->t_done = -1;
    s->deadline = r->timeout_s > 0 ? s->t_submit + r->timeout_s : 0;
    s->notify = r->notify;
    s->notify_ctx = r->notify_ctx;
    s->posted = false;
    *handle = (uint64_t)s->gen << 20 | (uint64_t)(s - c->slots + 1);
    c->n_running++;
    c->stats.submitted++;
    c->stats.tokens_prompt += r->n_prompt;
    pthread_mutex_unlock(&c->mu);
    st = post_job(c, &j, err);
    pthread_mutex_lock(&c->mu);
    if (st) {
        c->stats.submitted--;
        c->stats.tokens_prompt -= r->n_prompt;
        c->unavailable++;
        c->n_running--;
        free(s->ids);
        s->ids = NULL;
        s->used = false;
        c->free_stack[c->n_free++] = (int)(s - c->slots);
    } else {
        s->posted = true;
        pthread_cond_signal(&c->wake);
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

static int qc_read(void *ctx, uint64_t h, int32_t *ids, int cap, double timeout_s,
                   struct hy_engine_status *st)
{
    struct hy_queue_client *c = ctx;
    pthread_mutex_lock(&c->mu);
    struct qslot *s = slot_of(c, h);
    if (s && s->n_read == s->n_out && !s->done && timeout_s != 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + (timeout_s > 0 ? timeout_s : 1e9);
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        while (s->n_read == s->n_out && !s->done)
            if (pthread_cond_timedwait(&s->cv, &c->mu, &ts) != 0)
                break;
    }
    int n = -1;
    if (s) {
        n = s->n_out - s->n_read < cap ? s->n_out - s->n_read : cap;
        memcpy(ids, s->ids + s->n_read, (size_t)(n > 0 ? n : 0) * sizeof *ids);
        s->n_read += n;
        if (st) {
            *st = (struct hy_engine_status){
                .done = s->done, .finish = s->finish, .n_prompt = s->n_prompt,
                .n_generated = s->n_out, .queued_s = -1,
                .first_token_s = s->t_first >= 0 ? s->t_first - s->t_submit : -1,
                .total_s = s->t_done >= 0 ? s->t_done - s->t_submit : -1};
        }
    }
    pthread_mutex_unlock(&c->mu);
    return n;
}

static hy_status qc_cancel(void *ctx, uint64_t h)
{
    struct hy_queue_client *c = ctx;
    char id[HY_JOB_ID_LEN + 1] = "";
    pthread_mutex_lock(&c->mu);
    struct qslot *s = slot_of(c, h);
    hy_status st = s ? HY_OK : HY_E_NOTFOUND;
    if (s && !s->done) {
        memcpy(id, s->id, sizeof id);
        hy_qc_finish(c, s, HY_FINISH_CANCELLED);
    }
    pthread_mutex_unlock(&c->mu);
    if (id[0])
        send_cancel(c, id);
    return st;
}

static void qc_release(void *ctx, uint64_t h)
{
    struct hy_queue_client *c = ctx;
    char id[HY_JOB_ID_LEN + 1] = "";
    pthread_mutex_lock(&c->mu);
    struct qslot *s = slot_of(c, h);
    if (s) {
        if (!s->done) {
            memcpy(id, s->id, sizeof id);
            s->notify = NULL; /* never called after release */
            hy_qc_finish(c, s, HY_FINISH_CANCELLED);
        }
        free(s->ids);
        s->ids = NULL;
        s->used = false;
        c->free_stack[c->n_free++] = (int)(s - c->slots);
    }
    pthread_mutex_unlock(&c->mu);
    if (id[0])
        send_cancel(c, id);
}

static void qc_stats(void *ctx, struct hy_engine_stats *out)
{
    struct hy_queue_client *c = ctx;
    pthread_mutex_lock(&c->mu);
    *out = c->stats;
    out->n_running = c->n_running;
    out->slots_in_use = c->n_slots - c->n_free;
    pthread_mutex_unlock(&c->mu);
    hy_qc_worker_stats(c, out);
}

static const struct hy_engine_remote_i iface = {qc_submit, qc_read, qc_cancel, qc_release,
                                                 qc_stats};

const struct hy_engine_remote_i *hy_queue_client_iface(void)
{
    return &iface;
}

/* The stream and the group, created if missing (BUSYGROUP: both exist). */
bool hy_qc_ensure_group(struct hy_redis *r, const char *jobs_key)
{
    redisReply *x = hy_redis_cmdf(r, "XGROUP CREATE %s %s 0 MKSTREAM", jobs_key, HY_JOB_GROUP);
    bool ok = x && (x->type != REDIS_REPLY_ERROR || !strncmp(x->str, "BUSYGROUP", 9));
    if (x && !ok)
        HY_LOGW("queue: XGROUP CREATE %s: %s", jobs_key, x->str);
    freeReplyObject(x);
    return ok;
}

hy_status hy_queue_client_create(struct hy_queue_client **out, const struct hy_queue_opts *o,
                                 struct hy_err *err)
{
    *out = NULL;
    struct hy_queue_client *c = calloc(1, sizeof *c);
    if (!c)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    c->o = *o;
    snprintf(c->prefix, sizeof c->prefix, "%s", o->prefix[0] ? o->prefix : "hymt");
    if (c->o.result_ttl_s < 1)
        c->o.result_ttl_s = HY_QUEUE_RESULT_TTL_S;
    c->n_slots = o->capacity > 0 ? o->capacity : 1024;
    if (c->n_slots > 0xfffff - 1)
        c->n_slots = 0xfffff - 1;
    hy_job_key(c->jobs_key, c->prefix, "jobs", NULL);
    hy_job_key(c->stats_key, c->prefix, "stats", NULL);
    hy_job_key(c->workers_key, c->prefix, "workers", NULL);
    char fid[HY_JOB_ID_LEN + 1];
    hy_job_new_id(fid);
    hy_job_key(c->bell_key, c->prefix, "bell", fid);
    snprintf(c->bell_last, sizeof c->bell_last, "0-0");
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->cmd_mu, NULL);
    pthread_cond_init(&c->wake, NULL);
    hy_redis_init(&c->cmd, &o->url);
    hy_redis_init(&c->rd, &o->url);
    c->slots = calloc((size_t)c->n_slots, sizeof *c->slots);
    c->free_stack = calloc((size_t)c->n_slots, sizeof *c->free_stack);
    hy_status st = !c->slots || !c->free_stack ? hy_err_set(err, HY_E_NOMEM, "out of memory")
                                               : HY_OK;
    for (int i = 0; !st && i < c->n_slots; i++) {
        pthread_cond_init(&c->slots[i].cv, NULL);
        c->free_stack[c->n_free++] = c->n_slots - 1 - i;
    }
    c->n_cv = st ? 0 : c->n_slots;
    if (!st)
        st = hy_redis_connect(&c->cmd, err);
    if (!st && !hy_qc_ensure_group(&c->cmd, c->jobs_key))
        st = hy_err_set(err, HY_E_IO, "redis://%s:%d: cannot create the job stream's group",
                        o->url.host, o->url.port);
    if (!st && pthread_create(&c->thread, NULL, hy_qc_reader_main, c) != 0)
        st = hy_err_set(err, HY_E_NOMEM, "cannot start the queue reader thread");
    if (st) {
        hy_queue_client_destroy(c);
        return st;
    }
    c->started = true;
    *out = c;
    return HY_OK;
}

void hy_queue_client_destroy(struct hy_queue_client *c)
{
    if (!c)
        return;
    if (c->started) {
        pthread_mutex_lock(&c->mu);
        c->stop = true;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    for (int i = 0; c->slots && i < c->n_slots; i++)
        free(c->slots[i].ids);
    for (int i = 0; i < c->n_cv; i++)
        pthread_cond_destroy(&c->slots[i].cv);
    hy_redis_close(&c->cmd);
    hy_redis_close(&c->rd);
    free(c->slots);
    free(c->free_stack);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->cmd_mu);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

bool hy_queue_client_available(struct hy_queue_client *c, char *why, size_t cap)
{
    struct hy_err err = {{0}};
    if (pthread_mutex_trylock(&c->cmd_mu) != 0)
        return true; /* a submit holds the connection: it is up, or that submit says not */
    bool ok = hy_redis_ensure(&c->cmd, &err);
    pthread_mutex_unlock(&c->cmd_mu);
    if (!ok)
        snprintf(why, cap, "the job queue is unavailable: %s", err.msg);
    return ok;
}
