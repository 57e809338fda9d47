/* loop_int.h: the event loop's private parts, shared by loop.c (states, parsing,
 * deadlines, accepting, life cycle) and loop_io.c (the connections' byte I/O, plain or
 * TLS, and the TLS handshake). Nothing outside these two files includes it. Everything
 * here belongs to the loop thread, except the fields of struct hy_loop marked as
 * commands (under mu). */
#ifndef HY_SERVER_LOOP_INT_H
#define HY_SERVER_LOOP_INT_H

#include "server/addr_count.h"
#include "server/http.h"
#include "server/http_parse.h"
#include "server/tls.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#define LOOP_BUF (16u << 10)   /* a connection's head buffer: the largest request head */
#define LOOP_TICK_MS 100       /* the deadline sweep's period */
#define LOOP_LINGER_S 2.0      /* after an error answer, read and drop for this long */
#define LOOP_EVENTS 256
#define LOOP_KEEPALIVE_MAX_S 15.0 /* SSE comment at least this often on a quiet stream */
/* At the drain, a connection that has not sent its first request yet (it connected just
 * before the signal) gets this long to send it and hear a 503, instead of a reset. */
#define LOOP_DRAIN_FRESH_S 1.0

enum cstate { C_FREE, C_TLS, C_HEAD, C_BODY, C_CHUNKED, C_BUSY, C_LINGER };

struct conn;

/* The connection's byte I/O: the socket itself, or TLS over it (tls.h). read and write
 * return bytes moved, 0 at end of stream (read), -1 with errno (EAGAIN: try later;
 * EPROTO: a TLS error). pending: bytes already received that no readiness event will
 * announce (TLS holds a record's rest when the head buffer filled up). */
struct conn_io {
    ssize_t (*read)(struct conn *c, void *p, size_t n);
    ssize_t (*write)(struct conn *c, const void *p, size_t n);
    bool (*pending)(struct conn *c);
};

struct conn {
    int fd;
    enum cstate st;
    unsigned events;        /* epoll interest now */
    char *in;               /* [LOOP_BUF] from the pool */
    size_t in_n;
    int64_t body_left;      /* C_BODY */
    struct hy_http_chunked ck;
    struct hy_http_req *req; /* being read (BODY/CHUNKED) or run (BUSY) */
    struct hy_http_buf out; /* bytes to write */
    size_t out_pos;
    bool resp_end, close_after, sse, chunked, started;
    bool served;            /* a response went out on it: an idle one is keep-alive */
    double since;           /* HEAD: idle or head start; the eviction order */
    double deadline;        /* of the current state */
    double t_out;           /* last write progress */
    int addr;               /* slot in the per-address table */
    const struct conn_io *io;
    struct hy_tls_sess *tls; /* TLS connections: the session (from accept to close) */
    bool rd_wants_write;    /* a TLS read waits for the socket to be writable */
};

struct hy_loop {
    struct hy_server *srv;
    int ep, lfd, efd;
    int spare_fd;      /* /dev/null, given up to accept-and-close when out of descriptors */
    double t_emfile;   /* last "out of descriptors" log line */
    pthread_t thread;
    bool started;
    struct conn *conns;
    int n_conns, n_used;
    int *free_list, n_free;
    char *bufs;
    struct hy_addr_count addrs;
    int per_addr;
    struct hy_tls *tls; /* set: every connection speaks TLS */
    char *path; /* [HY_HTTP_MAX_TARGET + 1]: the decoded target, loop thread only */
    /* commands from other threads */
    pthread_mutex_t mu;
    struct hy_http_req *inbox;
    bool cmd_drain, cmd_kick, cmd_stop;
    /* -1 until the drain command ran, then the connections still waiting for their first
     * request (written by the loop thread, read by hy_loop_drain_fresh) */
    _Atomic int fresh;
    double next_tick;
    char listen_tag, wake_tag;
};

/* loop.c */
/* Sets the connection's epoll interest (EPOLLOUT added while a TLS read waits for it). */
void loop_set_events(struct hy_loop *l, struct conn *c, unsigned ev);
/* Closes the connection; gone: the client went away (its running request is cancelled). */
void loop_close(struct hy_loop *l, struct conn *c, bool gone);
/* A protocol-level refusal: a JSON error, Connection: close, then linger. */
void loop_refuse(struct hy_loop *l, struct conn *c, int status, const char *code,
                 const char *msg, double now);
/* Reads and parses what has arrived (ev: the epoll events; only a hang-up matters in BUSY). */
void loop_on_readable(struct hy_loop *l, struct conn *c, unsigned ev, double now);

/* loop_io.c */
extern const struct conn_io loop_plain_io, loop_tls_io;
/* One log line when a connection's I/O failed with a TLS error (errno e == EPROTO). */
void loop_log_io_error(const struct conn *c, int e);
/* C_TLS: one handshake step on an epoll event (ev). */
void loop_handshake(struct hy_loop *l, struct conn *c, unsigned ev, double now);

#endif
