/* server.c: the server's life cycle: listen, become ready, drain, stop (server.h). */
#include "server/http.h"
#include "server/keys.h"

#include "core/clock.h"
#include "core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SERVER_ABORT_S 2.0 /* after the drain: time for handlers to send their 503 */
/* at the drain, for requests still arriving: the loop's LOOP_DRAIN_FRESH_S, its sweep's
 * period and a margin */
#define SERVER_FRESH_WAIT_S 1.5

static void defaults(struct hy_server_config *c)
{
    if (!c->host)
        c->host = "127.0.0.1";
    if (!c->max_body)
        c->max_body = HY_SERVER_MAX_BODY_DEFAULT;
    if (!c->max_chars)
        c->max_chars = HY_SERVER_MAX_CHARS_DEFAULT;
    if (!c->max_connections)
        c->max_connections = HY_SERVER_MAX_CONNECTIONS;
    if (!c->max_per_client)
        c->max_per_client = c->max_connections * 3 / 4 > 0 ? c->max_connections * 3 / 4 : 1;
    if (!c->header_timeout_s)
        c->header_timeout_s = HY_SERVER_HEADER_TIMEOUT_S;
    if (!c->body_timeout_s)
        c->body_timeout_s = HY_SERVER_BODY_TIMEOUT_S;
    if (!c->idle_timeout_s)
        c->idle_timeout_s = HY_SERVER_IDLE_TIMEOUT_S;
    if (!c->workers) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        c->workers = n < 2 ? 2 : n > 16 ? 16 : (int)n;
    }
    if (!c->model_name)
        c->model_name = "hymt";
}

hy_status hy_server_create(struct hy_server **out, const struct hy_server_config *cfg,
                           struct hy_err *err)
{
    *out = NULL;
    struct hy_server *s = calloc(1, sizeof *s);
    if (!s)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    s->cfg = *cfg;
    defaults(&s->cfg);
    s->created = (long long)time(NULL);
    hy_metrics_init(&s->metrics);
    pthread_mutex_init(&s->idle_mu, NULL);
    pthread_cond_init(&s->idle_cv, NULL);
    hy_status st = hy_keys_create(&s->keys, s->cfg.api_keys_file, s->cfg.api_key, err);
    if (!st)
        st = hy_work_create(&s->work, s->cfg.workers, err);
    if (!st)
        st = hy_docs_create(&s->docs, s, err);
    if (!st)
        st = hy_loop_create(s, err);
    if (st) {
        hy_server_destroy(s);
        return st;
    }
    *out = s;
    return HY_OK;
}

int hy_server_port(const struct hy_server *s)
{
    return s->port;
}

hy_status hy_server_set_engine(struct hy_server *s, struct hy_engine *e, const struct hy_tok *tok,
                               const struct hy_prompt_profile *prompt, struct hy_err *err)
{
    hy_status st = HY_OK;
    if (prompt)
        s->prompt = *prompt;
    else
        st = hy_prompt_profile_detect(tok, NULL, &s->prompt, err);
    if (st)
        return st;
    s->n_stop = (int)hy_prompt_stop_ids(tok, s->prompt.kind.chat, s->stop_ids,
                                        HY_ENGINE_MAX_STOP);
    s->engine = e;
    s->tok = tok;
    atomic_store(&s->ready, true); /* publishes engine and tok to the workers */
    return HY_OK;
}

hy_status hy_server_set_chimera(struct hy_server *s, struct hy_engine *e,
                                const struct hy_tok *tok, struct hy_err *err)
{
    enum hy_prompt_style style;
    hy_status st = hy_prompt_style_detect(tok, &style, err);
    if (st)
        return st;
    s->chimera = e; /* published to the workers with ready, by hy_server_set_engine */
    s->chimera_tok = tok;
    return HY_OK;
}

/* Waits until no request holds engine work or `limit` seconds pass; returns how many do. */
static int wait_idle(struct hy_server *s, double limit)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + limit;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    pthread_mutex_lock(&s->idle_mu);
    while (atomic_load(&s->active) > 0)
        if (pthread_cond_timedwait(&s->idle_cv, &s->idle_mu, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&s->idle_mu);
    return atomic_load(&s->active);
}

/* Until the requests still arriving when the drain began (and the first requests of
 * clients that connected just before it) are in, each to get its answer (503 where it
 * needs the engine), or SERVER_FRESH_WAIT_S passes. */
static void wait_fresh(struct hy_server *s)
{
    if (!s->loop)
        return;
    const struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < (int)(SERVER_FRESH_WAIT_S * 100) && hy_loop_drain_fresh(s) != 0; i++)
        nanosleep(&tick, NULL);
}

int hy_server_drain(struct hy_server *s)
{
    atomic_store(&s->draining, true);
    hy_loop_drain(s); /* the listener closes now: new clients are refused */
    wait_fresh(s);
    int n = atomic_load(&s->active);
    if (n)
        HY_LOGI("serve: draining %d running request(s), up to %.0f s", n, s->cfg.drain_s);
    n = wait_idle(s, s->cfg.drain_s);
    if (n > 0) {
        HY_LOGW("serve: cancelling %d request(s) still running after %.1f s", n, s->cfg.drain_s);
        atomic_store(&s->aborting, true);
        hy_loop_kick_all(s); /* each answers 503 or ends its stream with an error event */
        wait_idle(s, SERVER_ABORT_S);
    }
    return n;
}

void hy_server_destroy(struct hy_server *s)
{
    if (!s)
        return;
    atomic_store(&s->aborting, true);
    if (s->loop)
        hy_loop_destroy(s); /* closes the connections, then stops the workers */
    else
        hy_work_destroy(s->work);
    hy_docs_destroy(s->docs);
    hy_metrics_deinit(&s->metrics);
    hy_keys_destroy(s->keys);
    pthread_cond_destroy(&s->idle_cv);
    pthread_mutex_destroy(&s->idle_mu);
    free(s);
}
