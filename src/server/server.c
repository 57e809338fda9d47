/* server.c: the server's life cycle: listen, become ready, drain, stop (server.h). */
#include "server/http.h"

#include "core/clock.h"
#include "core/log.h"

#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define SERVER_STACK_BYTES (1u << 20) /* per connection thread */
#define SERVER_ABORT_S 2.0            /* after the drain: time for handlers to send their 503 */
#define SERVER_IDLE_S 30              /* keep-alive connections idle this long are closed */

static hy_status resolve(const char *host, int port, struct sockaddr_storage *sa,
                         struct hy_err *err)
{
    struct addrinfo hints = {0}, *res = NULL;
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, ports, &hints, &res);
    if (rc != 0)
        return hy_err_set(err, HY_E_INVAL, "cannot resolve --host %s: %s", host, gai_strerror(rc));
    memcpy(sa, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return HY_OK;
}

hy_status hy_server_create(struct hy_server **out, const struct hy_server_config *cfg,
                           struct hy_err *err)
{
    *out = NULL;
    struct hy_server *s = calloc(1, sizeof *s);
    if (!s)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    s->cfg = *cfg;
    if (!s->cfg.host)
        s->cfg.host = "127.0.0.1";
    if (!s->cfg.max_body)
        s->cfg.max_body = HY_SERVER_MAX_BODY_DEFAULT;
    if (!s->cfg.max_chars)
        s->cfg.max_chars = HY_SERVER_MAX_CHARS_DEFAULT;
    if (!s->cfg.max_connections)
        s->cfg.max_connections = HY_SERVER_MAX_CONNECTIONS;
    if (!s->cfg.model_name)
        s->cfg.model_name = "hymt";
    s->created = (long long)time(NULL);
    hy_metrics_init(&s->metrics);
    struct sockaddr_storage sa;
    hy_status st = resolve(s->cfg.host, s->cfg.port, &sa, err);
    if (st) {
        hy_server_destroy(s);
        return st;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                     MHD_USE_POLL | (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, hy_http_access, s, MHD_OPTION_SOCK_ADDR,
                                 (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
                                 (unsigned)s->cfg.max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
                                 (unsigned)SERVER_IDLE_S, MHD_OPTION_THREAD_STACK_SIZE,
                                 (size_t)SERVER_STACK_BYTES, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
                                 MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u,
                                 MHD_OPTION_NOTIFY_COMPLETED, hy_http_completed, s, MHD_OPTION_END);
    if (!s->daemon) {
        hy_server_destroy(s);
        return hy_err_set(err, HY_E_IO, "cannot listen on %s:%d (address in use?)", cfg->host,
                          cfg->port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : s->cfg.port;
    *out = s;
    return HY_OK;
}

int hy_server_port(const struct hy_server *s)
{
    return s->port;
}

hy_status hy_server_set_engine(struct hy_server *s, struct hy_engine *e, const struct hy_tok *tok,
                               struct hy_err *err)
{
    hy_status st = hy_prompt_style_detect(tok, &s->style, err);
    if (st)
        return st;
    s->n_stop = (int)hy_prompt_stop_ids(tok, s->style, s->stop_ids, HY_ENGINE_MAX_STOP);
    s->engine = e;
    s->tok = tok;
    atomic_store(&s->ready, true); /* publishes engine and tok to the handler threads */
    return HY_OK;
}

int hy_server_drain(struct hy_server *s)
{
    atomic_store(&s->draining, true);
    if (s->daemon)
        MHD_quiesce_daemon(s->daemon); /* no new connections; open ones get 503s */
    double t0 = hy_clock_now();
    int n = atomic_load(&s->active);
    if (n)
        HY_LOGI("serve: draining %d running request(s), up to %.0f s", n, s->cfg.drain_s);
    while ((n = atomic_load(&s->active)) > 0 && hy_clock_now() - t0 < s->cfg.drain_s) {
        struct timespec ts = {0, 50000000}; /* the drain's own pace; requests need no wakeup */
        nanosleep(&ts, NULL);
    }
    if (n > 0) {
        HY_LOGW("serve: cancelling %d request(s) still running after %.1f s", n, s->cfg.drain_s);
        atomic_store(&s->aborting, true);
        /* handlers notice within HY_HTTP_WAIT_S and answer 503; stopping the daemon before
         * that would close their connections without an answer */
        t0 = hy_clock_now();
        while (atomic_load(&s->active) > 0 && hy_clock_now() - t0 < SERVER_ABORT_S) {
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
        }
    }
    return n;
}

void hy_server_destroy(struct hy_server *s)
{
    if (!s)
        return;
    atomic_store(&s->aborting, true);
    if (s->daemon)
        MHD_stop_daemon(s->daemon); /* joins every connection thread */
    hy_metrics_deinit(&s->metrics);
    free(s);
}
