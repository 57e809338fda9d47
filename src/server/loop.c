/* loop.c: the event loop: one thread, one epoll set, a connection table allocated once
 * (--max-connections entries, each with a fixed 16 KiB head buffer), the strict parser,
 * deadlines, per-address limits, and the hand-off of complete requests to the workers
 * (http.h has the contract; docs/ARCHITECTURE.md the connection life cycle; loop_io.c the
 * byte I/O, plain or TLS, and the handshake).
 * A connection is in one state: TLS (the TLS handshake, under the head deadline), HEAD
 * (reading a request head; idle between keep-alive requests), BODY / CHUNKED (reading its
 * body), BUSY (a worker runs the request; only a hang-up is watched, pipelined bytes wait
 * in the kernel or in TLS), LINGER (an error was answered: the write side is shut and what
 * the client still sends is read and dropped for a moment, so the answer is not lost to a
 * reset). Every refusal is a JSON error. */
#include "server/loop_int.h"

#include "core/clock.h"
#include "core/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

void loop_set_events(struct hy_loop *l, struct conn *c, unsigned ev)
{
    if (c->rd_wants_write)
        ev |= EPOLLOUT;
    if (c->events == ev)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    epoll_ctl(l->ep, EPOLL_CTL_MOD, c->fd, &e);
    c->events = ev;
}

/* Lets the connection's request go: the worker's output is dropped from now on. */
static void detach(struct hy_loop *l, struct conn *c, bool gone)
{
    struct hy_http_req *req = c->req;
    if (!req)
        return;
    c->req = NULL;
    pthread_mutex_lock(&req->mu);
    req->detached = true;
    pthread_mutex_unlock(&req->mu);
    bool handed = c->st == C_BUSY;
    if (gone && handed) {
        atomic_store(&req->client_gone, true);
        hy_work_schedule(l->srv->work, req); /* it notices and cancels its engine work */
    }
    hy_http_req_unref(req);
}

void loop_close(struct hy_loop *l, struct conn *c, bool gone)
{
    detach(l, c, gone);
    epoll_ctl(l->ep, EPOLL_CTL_DEL, c->fd, NULL);
    hy_tls_sess_destroy(c->tls, !gone); /* close_notify unless the client is gone */
    c->tls = NULL;
    c->rd_wants_write = false;
    close(c->fd);
    hy_addr_count_remove(&l->addrs, c->addr);
    hy_http_buf_free(&c->out);
    c->st = C_FREE;
    c->fd = -1;
    l->free_list[l->n_free++] = (int)(c - l->conns);
    l->n_used--;
}

static void to_head(struct conn *c, double now, double idle_s)
{
    c->st = C_HEAD;
    c->started = false;
    c->since = now;
    c->deadline = now + idle_s;
    c->resp_end = c->close_after = c->sse = c->chunked = false;
    c->body_left = 0;
}

static void process(struct hy_loop *l, struct conn *c, double now);

/* The response is out: next request (keep-alive, pipelined bytes first) or close. */
static void response_done(struct hy_loop *l, struct conn *c, double now)
{
    detach(l, c, false);
    if (c->close_after) {
        if (c->st == C_LINGER || c->in_n || c->st == C_BODY || c->st == C_CHUNKED) {
            if (c->tls) { /* close_notify first; what follows is read raw and dropped */
                hy_tls_sess_destroy(c->tls, true);
                c->tls = NULL;
                c->rd_wants_write = false;
                c->io = &loop_plain_io;
            }
            shutdown(c->fd, SHUT_WR);
            c->st = C_LINGER;
            c->in_n = 0;
            c->deadline = now + LOOP_LINGER_S;
            loop_set_events(l, c, EPOLLIN | EPOLLRDHUP);
        } else {
            loop_close(l, c, false);
        }
        return;
    }
    to_head(c, now, l->srv->cfg.idle_timeout_s);
    c->served = true;
    loop_set_events(l, c, EPOLLIN | EPOLLRDHUP);
    process(l, c, now);
    if (c->st == C_HEAD && c->io->pending(c)) /* TLS kept the next request's bytes */
        loop_on_readable(l, c, EPOLLIN, now);
}

/* Writes what is queued; false when the connection was closed. */
static bool flush_out(struct hy_loop *l, struct conn *c, double now)
{
    while (c->out_pos < c->out.n) {
        ssize_t k = c->io->write(c, c->out.p + c->out_pos, c->out.n - c->out_pos);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EAGAIN) {
            loop_set_events(l, c, c->events | EPOLLOUT);
            return true;
        }
        if (k <= 0) {
            loop_log_io_error(c, k < 0 ? errno : 0);
            loop_close(l, c, true);
            return false;
        }
        c->out_pos += (size_t)k;
        c->t_out = now;
    }
    c->out.n = c->out_pos = 0;
    if (c->events & EPOLLOUT)
        loop_set_events(l, c, c->st == C_BUSY ? EPOLLRDHUP : EPOLLIN | EPOLLRDHUP);
    if (c->resp_end) {
        c->resp_end = false;
        response_done(l, c, now);
        return c->st != C_FREE;
    }
    return true;
}

/* A protocol-level refusal: a JSON error, Connection: close, then linger. */
void loop_refuse(struct hy_loop *l, struct conn *c, int status, const char *code,
                   const char *msg, double now)
{
    struct hy_http_buf body = {0};
    struct hy_http_req *req = c->req;
    char id[HY_HTTP_REQUEST_ID_MAX + 1];
    if (req)
        memcpy(id, req->id, sizeof id);
    else
        hy_http_request_id(l->srv, NULL, 0, id);
    hy_http_error_body(&body, status, code, msg);
    hy_http_buf_printf(&c->out,
                       "HTTP/1.1 %d %s\r\nServer: hymt\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\nX-Request-Id: %s\r\nConnection: close\r\n%s\r\n",
                       status, hy_http_reason(status), body.n, id,
                       status == 429 || status == 503 ? "Retry-After: 1\r\n" : "");
    hy_http_buf_add(&c->out, body.p ? body.p : "", body.n);
    hy_http_buf_free(&body);
    if (req) { /* a request whose body failed: its own log line and metrics */
        req->status = status;
    } else {
        char m[128];
        hy_http_log_escape(msg, strlen(msg), m, sizeof m);
        hy_metrics_record(&l->srv->metrics, HY_ROUTE_OTHER, status, 0, 0, 0, false);
        const struct hy_log_field f[] = {{"request_id", id}};
        hy_log_fields(HY_LOG_INFO, f, 1, "http: - - %d (%s)", status, m);
    }
    c->close_after = true;
    c->resp_end = true;
    c->st = C_LINGER; /* nothing more is parsed */
    flush_out(l, c, now);
}

/* Hands the complete request to the workers. */
static void start(struct hy_loop *l, struct conn *c)
{
    struct hy_http_req *req = c->req;
    c->st = C_BUSY;
    loop_set_events(l, c, EPOLLRDHUP | (c->out.n > c->out_pos ? EPOLLOUT : 0));
    req->conn = (int)(c - l->conns);
    req->pump = hy_http_dispatch;
    atomic_fetch_add(&req->refs, 1); /* the worker's */
    hy_work_schedule(l->srv->work, req);
}

static void consume(struct conn *c, size_t n)
{
    memmove(c->in, c->in + n, c->in_n - n);
    c->in_n -= n;
}

/* A complete head: the request object, then its body or the hand-off. */
static void on_head(struct hy_loop *l, struct conn *c, const struct hy_http_head *h, int len,
                    double now)
{
    struct hy_server *s = l->srv;
    struct hy_http_perr e;
    if (!hy_http_check_target(h->target, h->target_len, l->path, HY_HTTP_MAX_TARGET + 1, &e))
        return loop_refuse(l, c, e.status, e.code, e.msg, now);
    struct hy_http_req *req = calloc(1, sizeof *req);
    if (!req)
        return loop_refuse(l, c, 503, "out_of_memory", "out of memory", now);
    req->srv = s;
    atomic_init(&req->refs, 1); /* the connection's */
    pthread_mutex_init(&req->mu, NULL);
    req->route = HY_ROUTE_OTHER;
    req->t0 = now;
    if (s->cfg.timeout_s > 0)
        req->deadline = now + s->cfg.timeout_s;
    memcpy(req->method, h->method, h->method_len); /* at most HY_HTTP_MAX_METHOD - 1 */
    snprintf(req->path, sizeof req->path, "%s", l->path);
    req->keep_alive = h->keep_alive;
    req->http10 = h->minor == 0;
    const struct hy_http_header *a = hy_http_find(h, "authorization");
    if (a)
        req->auth = strndup(a->value, a->value_len);
    const struct hy_http_header *ct = hy_http_find(h, "content-type");
    if (ct)
        req->ctype = strndup(ct->value, ct->value_len);
    const char *qm = memchr(h->target, '?', h->target_len);
    if (qm) /* checked by hy_http_check_target; parsed by the handlers that take one */
        req->query = strndup(qm + 1, h->target_len - (size_t)(qm + 1 - h->target));
    const struct hy_http_header *rid = hy_http_find(h, "x-request-id");
    hy_http_request_id(s, rid ? rid->value : NULL, rid ? rid->value_len : 0, req->id);
    c->req = req;
    consume(c, (size_t)len);
    if (h->content_length > (int64_t)s->cfg.max_body) {
        char msg[96];
        snprintf(msg, sizeof msg, "the request body is larger than the %zu-byte limit",
                 s->cfg.max_body);
        return loop_refuse(l, c, 413, "request_too_large", msg, now);
    }
    if (h->content_length > 0 || h->chunked) {
        size_t want = h->chunked ? 0 : (size_t)h->content_length;
        if (want && !hy_http_buf_add(&req->body, NULL, 0))
            return loop_refuse(l, c, 503, "out_of_memory", "out of memory", now);
        c->st = h->chunked ? C_CHUNKED : C_BODY;
        c->body_left = h->content_length;
        memset(&c->ck, 0, sizeof c->ck);
        c->deadline = now + s->cfg.body_timeout_s;
        if (h->expect_continue && (h->chunked || c->in_n < want))
            hy_http_buf_add(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
        return;
    }
    start(l, c);
}

/* Parses what has arrived, as far as it goes. */
static void process(struct hy_loop *l, struct conn *c, double now)
{
    struct hy_server *s = l->srv;
    while (c->st != C_FREE) {
        if (c->st == C_HEAD) {
            if (!c->in_n)
                return;
            if (!c->started) {
                c->started = true;
                c->since = now;
                c->deadline = now + s->cfg.header_timeout_s;
            }
            struct hy_http_head h;
            struct hy_http_perr e;
            int r = hy_http_parse_head(c->in, c->in_n, LOOP_BUF, &h, &e);
            if (r == -2)
                return;
            if (r < 0)
                return loop_refuse(l, c, e.status, e.code, e.msg, now);
            on_head(l, c, &h, r, now);
        } else if (c->st == C_BODY) {
            size_t k = c->in_n < (size_t)c->body_left ? c->in_n : (size_t)c->body_left;
            if (!hy_http_buf_add(&c->req->body, c->in, k))
                return loop_refuse(l, c, 503, "out_of_memory", "out of memory", now);
            consume(c, k);
            c->body_left -= (int64_t)k;
            if (c->body_left > 0)
                return;
            start(l, c);
        } else if (c->st == C_CHUNKED) {
            size_t got = 0, used = 0;
            struct hy_http_perr e;
            int r = hy_http_chunked_decode(&c->ck, c->in, c->in_n, &got, &used, s->cfg.max_body,
                                           &e);
            if (r < 0)
                return loop_refuse(l, c, e.status, e.code, e.msg, now);
            if (c->req->body.n + got > s->cfg.max_body) {
                char msg[96];
                snprintf(msg, sizeof msg, "the request body is larger than the %zu-byte limit",
                         s->cfg.max_body);
                return loop_refuse(l, c, 413, "request_too_large", msg, now);
            }
            if (!hy_http_buf_add(&c->req->body, c->in, got))
                return loop_refuse(l, c, 503, "out_of_memory", "out of memory", now);
            consume(c, used);
            if (r == 0)
                return;
            start(l, c);
        } else {
            return; /* BUSY: pipelined bytes wait; LINGER: dropped on read */
        }
        if (c->st != C_FREE && c->out.n > c->out_pos && !flush_out(l, c, now))
            return;
    }
}

/* Reads what has arrived into the head buffer (LINGER: reads and drops it) until the
 * socket has no more or the buffer is full; false when the connection was closed. */
static bool read_in(struct hy_loop *l, struct conn *c)
{
    for (;;) {
        char drop[4096];
        bool linger = c->st == C_LINGER;
        char *p = linger ? drop : c->in + c->in_n;
        size_t room = linger ? sizeof drop : LOOP_BUF - c->in_n;
        if (!room)
            return true; /* the parser refuses a full buffer */
        ssize_t k = c->io->read(c, p, room);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EAGAIN) {
            if (c->rd_wants_write)
                loop_set_events(l, c, c->events);
            return true;
        }
        if (k <= 0) { /* the client closed (or failed): nothing to answer */
            loop_log_io_error(c, k < 0 ? errno : 0);
            loop_close(l, c, true);
            return false;
        }
        if (!linger)
            c->in_n += (size_t)k;
        if ((size_t)k < room && !c->tls)
            return true; /* a short read emptied the socket; TLS reads on to EAGAIN */
    }
}

void loop_on_readable(struct hy_loop *l, struct conn *c, unsigned ev, double now)
{
    if (c->st == C_BUSY) { /* only a hang-up is watched while a worker runs the request */
        if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            loop_close(l, c, true);
        return;
    }
    for (;;) {
        if (!read_in(l, c) || c->st == C_LINGER)
            return;
        size_t before = c->in_n;
        process(l, c, now);
        /* TLS may hold more of what arrived than the buffer took: read on while parsing
         * makes room */
        if (c->st == C_FREE || c->st == C_BUSY || c->st == C_LINGER || !c->io->pending(c) ||
            (c->in_n == before && c->in_n == LOOP_BUF))
            return;
    }
}

/* ---- accepting ---- */

/* The connection to give up when the table is full: a lingering one, else the one waiting
 * longest for (or inside) a request head. NULL when every connection runs a request. */
static struct conn *victim(struct hy_loop *l)
{
    struct conn *best = NULL;
    for (int i = 0; i < l->n_conns; i++) {
        struct conn *c = &l->conns[i];
        if (c->st == C_LINGER)
            return c;
        if ((c->st == C_HEAD || c->st == C_TLS) && !c->out.n &&
            (!best || c->since < best->since))
            best = c;
    }
    return best;
}

static void accept_all(struct hy_loop *l, double now)
{
    for (int n = 0; n < LOOP_EVENTS; n++) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        int fd = accept4(l->lfd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if ((errno == EMFILE || errno == ENFILE) && l->spare_fd >= 0) {
                /* out of descriptors: the pending connection would keep the listener
                 * readable and the loop spinning; take it with the spare one and close it */
                if (now - l->t_emfile > 1.0)
                    HY_LOGW("http: accept: %s (raise the open file limit): closing new "
                            "connections", strerror(errno));
                l->t_emfile = now;
                close(l->spare_fd);
                int x = accept(l->lfd, NULL, NULL);
                if (x >= 0)
                    close(x);
                l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                continue;
            }
            return;
        }
        if (!l->n_free) {
            struct conn *v = victim(l);
            if (!v && l->tls) { /* nothing can be said before a handshake */
                close(fd);
                continue;
            }
            if (!v) {
                static const char busy[] =
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    "Content-Length: 117\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
                    "{\"error\":{\"message\":\"too many open connections; retry later\",\"type\":"
                    "\"service_unavailable_error\",\"code\":\"server_busy\"}}";
                ssize_t w = send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                (void)w;
                close(fd);
                continue;
            }
            if ((v->st == C_HEAD || v->st == C_TLS) && v->started)
                HY_LOGI("http: a slow request head given up for a new connection");
            loop_close(l, v, false);
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = &l->conns[l->free_list[--l->n_free]];
        l->n_used++;
        int from_addr = 0;
        c->addr = hy_addr_count_add(&l->addrs, &sa, &from_addr);
        c->fd = fd;
        c->in_n = 0;
        c->out_pos = 0;
        c->t_out = now;
        c->io = &loop_plain_io;
        c->req = NULL;
        to_head(c, now, l->srv->cfg.header_timeout_s);
        c->served = false;
        c->tls = l->tls ? hy_tls_sess_create(l->tls, fd) : NULL;
        if (l->tls)
            c->st = C_TLS; /* c->io becomes TLS once the handshake is done */
        c->events = EPOLLIN | EPOLLRDHUP;
        struct epoll_event e = {.events = c->events, .data.ptr = c};
        if ((l->tls && !c->tls) || epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &e) != 0) {
            c->events = 0;
            loop_close(l, c, false);
            continue;
        }
        if (from_addr > l->per_addr && l->tls) { /* no handshake spent on it */
            hy_metrics_record(&l->srv->metrics, HY_ROUTE_OTHER, 429, 0, 0, 0, false);
            HY_LOGI("http: - - 429 (too many open connections from this address: closed "
                    "before the TLS handshake)");
            loop_close(l, c, false);
        } else if (from_addr > l->per_addr) {
            loop_refuse(l, c, 429, "too_many_connections",
                   "too many open connections from this address; retry later", now);
        }
    }
}

/* ---- the inbox: output from the workers ---- */

static void take_posts(struct hy_loop *l, double now)
{
    pthread_mutex_lock(&l->mu);
    struct hy_http_req *list = l->inbox;
    l->inbox = NULL;
    pthread_mutex_unlock(&l->mu);
    while (list) {
        struct hy_http_req *req = list;
        list = req->pnext;
        struct conn *c = &l->conns[req->conn];
        pthread_mutex_lock(&req->mu);
        req->posted = false;
        bool live = !req->detached && c->req == req;
        if (live) {
            hy_http_buf_add(&c->out, req->out.p, req->out.n);
            c->resp_end = req->out_end;
            c->close_after = req->close;
            c->sse = req->streaming;
            c->chunked = req->chunked;
            if (c->out.n == c->out_pos + req->out.n)
                c->t_out = now; /* was idle: quiet time counts from here */
        }
        req->out.n = 0;
        pthread_mutex_unlock(&req->mu);
        if (live)
            flush_out(l, c, now);
        hy_http_req_unref(req); /* the inbox's */
    }
}

void hy_loop_post(struct hy_server *s, struct hy_http_req *req)
{
    struct hy_loop *l = s->loop;
    pthread_mutex_lock(&l->mu);
    bool wake = !l->inbox;
    req->pnext = l->inbox;
    l->inbox = req;
    pthread_mutex_unlock(&l->mu);
    uint64_t one = 1;
    if (wake && write(l->efd, &one, sizeof one) < 0)
        HY_LOGW("http: cannot wake the event loop");
}

static void command(struct hy_loop *l, bool *flag)
{
    pthread_mutex_lock(&l->mu);
    *flag = true;
    pthread_mutex_unlock(&l->mu);
    uint64_t one = 1;
    if (write(l->efd, &one, sizeof one) < 0)
        HY_LOGW("http: cannot wake the event loop");
}

void hy_loop_drain(struct hy_server *s) { command(s->loop, &s->loop->cmd_drain); }
int hy_loop_drain_fresh(struct hy_server *s) { return atomic_load(&s->loop->fresh); }

/* Connections whose request is still arriving, or that have not sent their first one. */
static int count_fresh(const struct hy_loop *l)
{
    int n = 0;
    for (int i = 0; i < l->n_conns; i++) {
        const struct conn *c = &l->conns[i];
        bool head = c->st == C_HEAD || c->st == C_TLS;
        n += c->st == C_BODY || c->st == C_CHUNKED ||
             (head && (c->started || c->in_n || !c->served));
    }
    return n;
}
void hy_loop_kick_all(struct hy_server *s) { command(s->loop, &s->loop->cmd_kick); }

static void kick(struct hy_loop *l)
{
    for (int i = 0; i < l->n_conns; i++)
        if (l->conns[i].st == C_BUSY && l->conns[i].req)
            hy_work_schedule(l->srv->work, l->conns[i].req);
}

static void on_wake(struct hy_loop *l, double now)
{
    uint64_t v;
    if (read(l->efd, &v, sizeof v) < 0 && errno != EAGAIN)
        HY_LOGW("http: eventfd: %s", strerror(errno));
    pthread_mutex_lock(&l->mu);
    bool drain = l->cmd_drain, kick_all = l->cmd_kick;
    l->cmd_drain = l->cmd_kick = false;
    pthread_mutex_unlock(&l->mu);
    take_posts(l, now);
    if (drain && l->lfd >= 0) { /* new clients are refused from now on */
        /* those that connected before the signal are answered: closing the listener would
         * reset the ones still in its backlog */
        accept_all(l, now);
        epoll_ctl(l->ep, EPOLL_CTL_DEL, l->lfd, NULL);
        close(l->lfd);
        l->lfd = -1;
        for (int i = 0; i < l->n_conns; i++) {
            struct conn *c = &l->conns[i];
            if ((c->st != C_HEAD && c->st != C_TLS) || c->started || c->in_n || c->out.n)
                continue;
            if (c->served) /* idle keep-alive connections go */
                loop_close(l, c, false);
            else if (c->deadline > now + LOOP_DRAIN_FRESH_S)
                c->deadline = now + LOOP_DRAIN_FRESH_S;
        }
        atomic_store(&l->fresh, count_fresh(l));
    }
    if (kick_all)
        kick(l);
}

/* ---- deadlines ---- */

static void sweep(struct hy_loop *l, double now)
{
    struct hy_server *s = l->srv;
    double ka = s->cfg.idle_timeout_s / 2 < LOOP_KEEPALIVE_MAX_S ? s->cfg.idle_timeout_s / 2
                                                                  : LOOP_KEEPALIVE_MAX_S;
    bool aborting = atomic_load(&s->aborting);
    for (int i = 0; i < l->n_conns; i++) {
        struct conn *c = &l->conns[i];
        switch (c->st) {
        case C_FREE: break;
        case C_TLS:
            if (now > c->deadline) {
                if (c->started)
                    HY_LOGI("tls: handshake not done within --header-timeout: closed");
                loop_close(l, c, false);
            }
            break;
        case C_HEAD:
            if (now > c->deadline && c->started)
                loop_refuse(l, c, 408, "request_timeout",
                       "the request head did not arrive in time", now);
            else if (now > c->deadline)
                loop_close(l, c, false); /* idle keep-alive connection */
            break;
        case C_BODY:
        case C_CHUNKED:
            if (now > c->deadline)
                loop_refuse(l, c, 408, "request_timeout", "the request body did not arrive in time",
                       now);
            break;
        case C_LINGER:
            if (now > c->deadline)
                loop_close(l, c, false);
            break;
        case C_BUSY:
            if (c->out.n > c->out_pos && now - c->t_out > s->cfg.idle_timeout_s) {
                loop_close(l, c, true); /* the client stopped reading its response */
                break;
            }
            if (c->req && (aborting || atomic_load(&c->req->retry) ||
                           (c->req->deadline > 0 && now > c->req->deadline)))
                hy_work_schedule(s->work, c->req); /* it notices and ends itself */
            if (c->sse && c->out.n == c->out_pos && now - c->t_out >= ka) {
                /* a stream waiting in the queue (or between tokens): a comment keeps
                 * proxies and clients from timing it out */
                static const char ping[] = ": keep-alive\n\n";
                if (c->chunked)
                    hy_http_buf_printf(&c->out, "%zx\r\n%s\r\n", sizeof ping - 1, ping);
                else
                    hy_http_buf_add(&c->out, ping, sizeof ping - 1);
                flush_out(l, c, now);
            }
            break;
        }
    }
}

static void *loop_main(void *arg)
{
    struct hy_loop *l = arg;
    struct epoll_event ev[LOOP_EVENTS];
    for (;;) {
        int n = epoll_wait(l->ep, ev, LOOP_EVENTS, LOOP_TICK_MS);
        double now = hy_clock_now();
        for (int i = 0; i < n; i++) {
            void *p = ev[i].data.ptr;
            if (p == &l->listen_tag) {
                if (l->lfd >= 0)
                    accept_all(l, now);
            } else if (p == &l->wake_tag) {
                on_wake(l, now);
            } else {
                struct conn *c = p;
                if (c->st == C_TLS) {
                    loop_handshake(l, c, ev[i].events, now);
                    continue;
                }
                if (c->st != C_FREE && c->rd_wants_write && (ev[i].events & EPOLLOUT)) {
                    c->rd_wants_write = false; /* the read it waited for, then the rest */
                    loop_on_readable(l, c, EPOLLIN, now);
                    if (c->st != C_FREE)
                        loop_set_events(l, c, c->out.n > c->out_pos ? c->events
                                                               : c->events & ~EPOLLOUT);
                }
                if (c->st != C_FREE && (ev[i].events & EPOLLOUT))
                    flush_out(l, c, now);
                if (c->st != C_FREE &&
                    (ev[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                    loop_on_readable(l, c, ev[i].events, now);
            }
        }
        pthread_mutex_lock(&l->mu);
        bool stop = l->cmd_stop;
        pthread_mutex_unlock(&l->mu);
        if (stop)
            break;
        if (now >= l->next_tick) {
            sweep(l, now);
            if (l->lfd < 0)
                atomic_store(&l->fresh, count_fresh(l));
            l->next_tick = now + LOOP_TICK_MS * 1e-3;
        }
    }
    return NULL;
}

/* ---- life cycle ---- */

hy_status hy_loop_create(struct hy_server *s, struct hy_err *err)
{
    struct hy_loop *l = calloc(1, sizeof *l);
    if (!l)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    s->loop = l;
    atomic_init(&l->fresh, -1);
    l->srv = s;
    l->ep = l->lfd = l->efd = -1;
    l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pthread_mutex_init(&l->mu, NULL);
    if (s->cfg.tls_cert || s->cfg.tls_key) {
        if (!s->cfg.tls_cert || !s->cfg.tls_key)
            return hy_err_set(err, HY_E_INVAL, "--tls-cert and --tls-key go together");
        hy_status st = hy_tls_create(&l->tls, s->cfg.tls_cert, s->cfg.tls_key, err);
        if (st)
            return st;
    }
    int n = s->cfg.max_connections;
    l->n_conns = n;
    l->per_addr = s->cfg.max_per_client;
    l->conns = calloc((size_t)n, sizeof *l->conns);
    l->free_list = malloc((size_t)n * sizeof *l->free_list);
    l->bufs = malloc((size_t)n * LOOP_BUF);
    l->path = malloc(HY_HTTP_MAX_TARGET + 1);
    if (hy_addr_count_init(&l->addrs, n, err))
        return HY_E_NOMEM;
    if (!l->conns || !l->free_list || !l->bufs || !l->path)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for %d connections", n);
    for (int i = n - 1; i >= 0; i--) {
        l->conns[i].fd = -1;
        l->conns[i].in = l->bufs + (size_t)i * LOOP_BUF;
        l->free_list[l->n_free++] = i;
    }
    hy_loop_raise_nofile(n);
    hy_status st = hy_loop_listen(&s->cfg, &l->lfd, &s->port, err);
    if (st)
        return st;
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event le = {.events = EPOLLIN, .data.ptr = &l->listen_tag};
    struct epoll_event we = {.events = EPOLLIN, .data.ptr = &l->wake_tag};
    if (l->ep < 0 || l->efd < 0 || epoll_ctl(l->ep, EPOLL_CTL_ADD, l->lfd, &le) ||
        epoll_ctl(l->ep, EPOLL_CTL_ADD, l->efd, &we))
        return hy_err_set(err, HY_E_IO, "cannot set up the event loop: %s", strerror(errno));
    if (pthread_create(&l->thread, NULL, loop_main, l) != 0)
        return hy_err_set(err, HY_E_NOMEM, "cannot start the event loop thread");
    l->started = true;
    return HY_OK;
}

void hy_loop_destroy(struct hy_server *s)
{
    struct hy_loop *l = s->loop;
    if (!l)
        return;
    if (l->started) {
        command(l, &l->cmd_stop);
        pthread_join(l->thread, NULL);
    }
    for (int i = 0; l->conns && i < l->n_conns; i++)
        if (l->conns[i].st != C_FREE)
            loop_close(l, &l->conns[i], true); /* running requests cancel themselves */
    hy_work_destroy(s->work); /* runs what the closing queued, then joins */
    s->work = NULL;
    take_posts(l, hy_clock_now()); /* output posted meanwhile: dropped */
    if (l->lfd >= 0)
        close(l->lfd);
    if (l->efd >= 0)
        close(l->efd);
    if (l->spare_fd >= 0)
        close(l->spare_fd);
    if (l->ep >= 0)
        close(l->ep);
    pthread_mutex_destroy(&l->mu);
    free(l->conns);
    free(l->free_list);
    free(l->bufs);
    hy_addr_count_free(&l->addrs);
    free(l->path);
    hy_tls_destroy(l->tls);
    free(l);
    s->loop = NULL;
}
