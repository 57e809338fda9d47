/* loop_io.c: the event loop's connection I/O: the plain socket, TLS over it (tls.h), and
 * the TLS handshake as a connection state (loop_int.h has the contract). */
#include "server/loop_int.h"

#include "core/log.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>

static ssize_t plain_read(struct conn *c, void *p, size_t n)
{
    return recv(c->fd, p, n, 0);
}

static ssize_t plain_write(struct conn *c, const void *p, size_t n)
{
    return send(c->fd, p, n, MSG_NOSIGNAL);
}

static bool plain_pending(struct conn *c)
{
    (void)c;
    return false;
}

const struct conn_io loop_plain_io = {plain_read, plain_write, plain_pending};

static ssize_t tls_read(struct conn *c, void *p, size_t n)
{
    enum hy_tls_io want = HY_TLS_OK;
    ssize_t k = hy_tls_read(c->tls, p, n, &want);
    c->rd_wants_write = k < 0 && errno == EAGAIN && want == HY_TLS_WANT_WRITE;
    return k;
}

static ssize_t tls_write(struct conn *c, const void *p, size_t n)
{
    enum hy_tls_io want = HY_TLS_OK;
    return hy_tls_write(c->tls, p, n, &want);
}

static bool tls_pending(struct conn *c)
{
    return hy_tls_pending(c->tls);
}

const struct conn_io loop_tls_io = {tls_read, tls_write, tls_pending};

/* A connection's I/O failed: a TLS error gets its one log line (the connection closes). */
void loop_log_io_error(const struct conn *c, int e)
{
    if (c->tls && e == EPROTO)
        HY_LOGI("tls: connection closed: %s", hy_tls_why(c->tls));
}

/* ---- connections ---- */

/* C_TLS: one handshake step. The head deadline runs from its first byte; once the
 * handshake is done the connection reads its first request head under the same deadline. */
void loop_handshake(struct hy_loop *l, struct conn *c, unsigned ev, double now)
{
    if (!c->started) {
        c->started = true;
        c->since = now;
        c->deadline = now + l->srv->cfg.header_timeout_s;
    }
    enum hy_tls_io r = hy_tls_handshake(c->tls);
    switch (r) {
    case HY_TLS_OK:
        c->st = C_HEAD;
        c->io = &loop_tls_io;
        loop_set_events(l, c, EPOLLIN | EPOLLRDHUP);
        loop_on_readable(l, c, EPOLLIN, now);
        return;
    case HY_TLS_WANT_READ:
    case HY_TLS_WANT_WRITE:
        if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) /* it cannot finish any more */
            return loop_close(l, c, false);
        loop_set_events(l, c, (r == HY_TLS_WANT_READ ? EPOLLIN : EPOLLOUT) | EPOLLRDHUP);
        return;
    case HY_TLS_PLAIN_HTTP: /* say so in plain HTTP rather than leave the client waiting */
        hy_tls_sess_destroy(c->tls, false);
        c->tls = NULL;
        c->io = &loop_plain_io;
        loop_set_events(l, c, EPOLLIN | EPOLLRDHUP);
        return loop_refuse(l, c, 400, "tls_required",
                      "this port speaks HTTPS: send the request with https://", now);
    case HY_TLS_ERROR:
        HY_LOGI("tls: handshake failed: %s", hy_tls_why(c->tls));
        return loop_close(l, c, false);
    case HY_TLS_CLOSED:
        return loop_close(l, c, false);
    }
}
