/* redis.h: one blocking hiredis connection with reconnection and backoff, and reply
 * checks. A command that fails at the connection level drops the connection (the next
 * call reconnects, no sooner than the backoff allows: 0.1 s doubling to 5 s); a Redis
 * error reply is not a connection failure. Replies are untrusted: hy_redis_* accessors
 * check types and sizes. One thread at a time per connection (the caller locks). */
#ifndef HY_QUEUE_REDIS_H
#define HY_QUEUE_REDIS_H

#include "core/status.h"
#include "queue/queue.h"

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#define HY_REDIS_CONNECT_S 2.0  /* connect timeout */
#define HY_REDIS_IO_S 10.0      /* a reply must arrive within this (above any BLOCK we use) */
#define HY_REDIS_BACKOFF_MAX_S 5.0

struct hy_redis {
    struct hy_queue_url url;
    redisContext *c;
    double backoff_s, next_try; /* monotonic */
    char why[160];              /* the last connection failure */
    long long client_id;
};

void hy_redis_init(struct hy_redis *r, const struct hy_queue_url *u);
/* Connected now, or tried (if the backoff allows) and connected: true. Else false and
 * err (optional) says why, naming the address. */
bool hy_redis_ensure(struct hy_redis *r, struct hy_err *err);
/* Connects now regardless of the backoff (start-up): HY_E_IO naming the address. */
hy_status hy_redis_connect(struct hy_redis *r, struct hy_err *err);
void hy_redis_close(struct hy_redis *r);

/* Runs one command (argv, binary-safe with lens); NULL when the connection failed (it is
 * dropped, r->why says why). The caller frees the reply with freeReplyObject. */
redisReply *hy_redis_cmd(struct hy_redis *r, int argc, const char **argv, const size_t *lens);
/* The same with a format string (hiredis redisCommand). */
redisReply *hy_redis_cmdf(struct hy_redis *r, const char *fmt, ...);
/* Pipelining: append commands, then read one reply each (NULL: connection failed). */
bool hy_redis_append(struct hy_redis *r, int argc, const char **argv, const size_t *lens);
redisReply *hy_redis_reply(struct hy_redis *r);

/* Checks on untrusted replies. */
bool hy_redis_is_err(const redisReply *x);
bool hy_redis_is_int(const redisReply *x, long long *v);
/* An integer from an integer or a decimal string reply. */
bool hy_redis_int(const redisReply *x, long long lo, long long hi, long long *v);

#endif
