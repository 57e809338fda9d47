/* redis.c: a hiredis connection with reconnection and backoff (redis.h). */
#include "queue/redis.h"

#include "core/clock.h"
#include "core/log.h"
#include "queue/job.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void hy_redis_init(struct hy_redis *r, const struct hy_queue_url *u)
{
    memset(r, 0, sizeof *r);
    r->url = *u;
    r->backoff_s = 0.1;
}

void hy_redis_close(struct hy_redis *r)
{
    if (r->c)
        redisFree(r->c);
    r->c = NULL;
}

static void drop(struct hy_redis *r, const char *why)
{
    if (r->c && r->c->err)
        snprintf(r->why, sizeof r->why, "%s", r->c->errstr);
    else
        snprintf(r->why, sizeof r->why, "%s", why);
    if (r->c)
        HY_LOGW("queue: lost redis://%s:%d: %s", r->url.host, r->url.port, r->why);
    hy_redis_close(r);
    r->next_try = hy_clock_now() + r->backoff_s;
}

static struct timeval tv(double s)
{
    return (struct timeval){(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)};
}

hy_status hy_redis_connect(struct hy_redis *r, struct hy_err *err)
{
    hy_redis_close(r);
    r->c = redisConnectWithTimeout(r->url.host, r->url.port, tv(HY_REDIS_CONNECT_S));
    const char *why = !r->c ? "out of memory" : r->c->err ? r->c->errstr : NULL;
    if (!why && redisSetTimeout(r->c, tv(HY_REDIS_IO_S)) != REDIS_OK)
        why = "cannot set the socket timeout";
    redisReply *x = NULL;
    if (!why && r->url.db) {
        x = redisCommand(r->c, "SELECT %d", r->url.db);
        why = !x ? r->c->errstr : x->type == REDIS_REPLY_ERROR ? x->str : NULL;
        if (why)
            snprintf(r->why, sizeof r->why, "SELECT %d: %s", r->url.db, why);
        freeReplyObject(x);
        why = why ? r->why : NULL;
    }
    if (!why) {
        x = redisCommand(r->c, "CLIENT ID");
        if (!x || x->type != REDIS_REPLY_INTEGER)
            why = x && x->type == REDIS_REPLY_ERROR ? x->str : "CLIENT ID failed";
        else
            r->client_id = x->integer;
        if (why)
            snprintf(r->why, sizeof r->why, "%s", why);
        freeReplyObject(x);
        why = why ? r->why : NULL;
    }
    if (why) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s", why);
        hy_redis_close(r);
        snprintf(r->why, sizeof r->why, "%s", msg);
        r->next_try = hy_clock_now() + r->backoff_s;
        r->backoff_s = r->backoff_s * 2 < HY_REDIS_BACKOFF_MAX_S ? r->backoff_s * 2
                                                                 : HY_REDIS_BACKOFF_MAX_S;
        return hy_err_set(err, HY_E_IO, "cannot reach redis://%s:%d/%d: %s", r->url.host,
                          r->url.port, r->url.db, msg);
    }
    r->backoff_s = 0.1;
    return HY_OK;
}

bool hy_redis_ensure(struct hy_redis *r, struct hy_err *err)
{
    if (r->c)
        return true;
    if (hy_clock_now() < r->next_try) {
        hy_err_set(err, HY_E_IO, "redis://%s:%d is unreachable (%s); retrying", r->url.host,
                   r->url.port, r->why);
        return false;
    }
    if (hy_redis_connect(r, err))
        return false;
    HY_LOGI("queue: connected to redis://%s:%d/%d", r->url.host, r->url.port, r->url.db);
    return true;
}

redisReply *hy_redis_cmd(struct hy_redis *r, int argc, const char **argv, const size_t *lens)
{
    if (!r->c)
        return NULL;
    redisReply *x = redisCommandArgv(r->c, argc, argv, lens);
    if (!x)
        drop(r, "no reply");
    return x;
}

redisReply *hy_redis_cmdf(struct hy_redis *r, const char *fmt, ...)
{
    if (!r->c)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *x = redisvCommand(r->c, fmt, ap);
    va_end(ap);
    if (!x)
        drop(r, "no reply");
    return x;
}

bool hy_redis_append(struct hy_redis *r, int argc, const char **argv, const size_t *lens)
{
    if (!r->c)
        return false;
    if (redisAppendCommandArgv(r->c, argc, argv, lens) != REDIS_OK) {
        drop(r, "cannot queue a command");
        return false;
    }
    return true;
}

redisReply *hy_redis_reply(struct hy_redis *r)
{
    if (!r->c)
        return NULL;
    void *x = NULL;
    if (redisGetReply(r->c, &x) != REDIS_OK || !x) {
        drop(r, "no reply");
        return NULL;
    }
    return x;
}

bool hy_redis_is_err(const redisReply *x)
{
    return !x || x->type == REDIS_REPLY_ERROR;
}

bool hy_redis_is_int(const redisReply *x, long long *v)
{
    if (!x || x->type != REDIS_REPLY_INTEGER)
        return false;
    *v = x->integer;
    return true;
}

bool hy_redis_int(const redisReply *x, long long lo, long long hi, long long *v)
{
    int64_t t = 0;
    if (x && x->type == REDIS_REPLY_INTEGER)
        t = x->integer;
    else if (!x || x->type != REDIS_REPLY_STRING ||
             !hy_job_parse_int(x->str, x->len, INT64_MIN / 2, INT64_MAX / 2, &t))
        return false;
    if (t < lo || t > hi)
        return false;
    *v = t;
    return true;
}

hy_status hy_queue_url_parse(const char *s, struct hy_queue_url *u, struct hy_err *err)
{
    static const char scheme[] = "redis://";
    memset(u, 0, sizeof *u);
    u->port = 6379;
    if (!s || strncmp(s, scheme, sizeof scheme - 1))
        return hy_err_set(err, HY_E_INVAL, "--queue: expected redis://HOST[:PORT][/DB], got "
                                           "'%.80s'", s ? s : "");
    const char *h = s + sizeof scheme - 1, *p = h;
    while (*p && *p != ':' && *p != '/')
        p++;
    size_t hn = (size_t)(p - h);
    if (hn == 0 || hn >= sizeof u->host)
        return hy_err_set(err, HY_E_INVAL, "--queue: a host of 1..%zu characters is required",
                          sizeof u->host - 1);
    for (size_t i = 0; i < hn; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_", h[i]))
            return hy_err_set(err, HY_E_INVAL, "--queue: the host '%.*s' has a character "
                                               "other than letters, digits, '.', '-', '_'",
                              (int)hn, h);
    memcpy(u->host, h, hn);
    int64_t v = 0;
    if (*p == ':') {
        const char *q = ++p;
        while (*p && *p != '/')
            p++;
        if (!hy_job_parse_int(q, (size_t)(p - q), 1, 65535, &v) || *q == '-')
            return hy_err_set(err, HY_E_INVAL, "--queue: the port must be 1..65535");
        u->port = (int)v;
    }
    if (*p == '/') {
        const char *q = ++p;
        p += strlen(p);
        if (p > q && (!hy_job_parse_int(q, (size_t)(p - q), 0, 1023, &v) || *q == '-'))
            return hy_err_set(err, HY_E_INVAL, "--queue: the database must be 0..1023");
        u->db = p > q ? (int)v : 0;
    }
    if (*p)
        return hy_err_set(err, HY_E_INVAL, "--queue: unexpected '%.40s' after the address", p);
    return HY_OK;
}
