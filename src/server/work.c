/* work.c: the fixed pool of worker threads that run requests (http.h has the contract).
 * One FIFO of requests (an intrusive list: no allocation, no capacity to run out of), one
 * mutex and condition variable. A request's state says whether it is queued, running, or
 * running with more to do (run again when this run ends), so it is never on two workers. */
#include "server/http.h"

#include <stdlib.h>

#define WORK_STACK_BYTES (1u << 20)

struct hy_work {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct hy_http_req *head, *tail;
    bool stop;
    pthread_t *threads;
    int n_threads;
};

static void push(struct hy_work *w, struct hy_http_req *req)
{
    req->wstate = HY_W_QUEUED;
    req->wnext = NULL;
    if (w->tail)
        w->tail->wnext = req;
    else
        w->head = req;
    w->tail = req;
    pthread_cond_signal(&w->cv);
}

void hy_work_schedule(struct hy_work *w, struct hy_http_req *req)
{
    pthread_mutex_lock(&w->mu);
    if (req->wstate == HY_W_IDLE)
        push(w, req);
    else if (req->wstate == HY_W_RUNNING)
        req->wstate = HY_W_AGAIN;
    pthread_mutex_unlock(&w->mu);
}

static void *worker(void *arg)
{
    struct hy_work *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->head)
            break; /* stopping, and nothing left to run */
        struct hy_http_req *req = w->head;
        w->head = req->wnext;
        if (!w->head)
            w->tail = NULL;
        req->wstate = HY_W_RUNNING;
        pthread_mutex_unlock(&w->mu);
        bool done = req->pump(req);
        pthread_mutex_lock(&w->mu);
        if (done) {
            req->wstate = HY_W_DONE;
            pthread_mutex_unlock(&w->mu);
            hy_http_req_unref(req); /* the worker's reference */
            pthread_mutex_lock(&w->mu);
        } else if (req->wstate == HY_W_AGAIN) {
            push(w, req);
        } else {
            req->wstate = HY_W_IDLE;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

hy_status hy_work_create(struct hy_work **out, int n_threads, struct hy_err *err)
{
    *out = NULL;
    struct hy_work *w = calloc(1, sizeof *w);
    if (!w || !(w->threads = calloc((size_t)n_threads, sizeof *w->threads))) {
        free(w);
        return hy_err_set(err, HY_E_NOMEM, "out of memory for the workers");
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WORK_STACK_BYTES);
    for (int i = 0; i < n_threads; i++) {
        if (pthread_create(&w->threads[i], &attr, worker, w) != 0) {
            pthread_attr_destroy(&attr);
            hy_work_destroy(w);
            return hy_err_set(err, HY_E_NOMEM, "cannot start worker thread %d", i);
        }
        w->n_threads++;
    }
    pthread_attr_destroy(&attr);
    *out = w;
    return HY_OK;
}

void hy_work_destroy(struct hy_work *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->n_threads; i++)
        pthread_join(w->threads[i], NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->threads);
    free(w);
}
