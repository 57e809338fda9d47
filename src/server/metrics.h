/* metrics.h: the server's Prometheus metrics: requests by route and status code, request
 * duration and time-to-first-token histograms, token counters; the engine's gauges and
 * process memory are read when /metrics is rendered.
 * All storage is fixed at init (routes x codes x buckets): recording never allocates.
 * Threads: hy_metrics_record / hy_metrics_ttft from any thread (one mutex, held for a few
 * counter updates); hy_metrics_render from any thread. */
#ifndef HY_SERVER_METRICS_H
#define HY_SERVER_METRICS_H

#include "engine/engine.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Routes as metric labels; HY_ROUTE_OTHER for anything unknown (404s). */
enum hy_route {
    HY_ROUTE_PAGE = 0,
    HY_ROUTE_TRANSLATE,
    HY_ROUTE_CHAT,
    HY_ROUTE_COMPLETIONS,
    HY_ROUTE_MODELS,
    HY_ROUTE_HEALTH,
    HY_ROUTE_READY,
    HY_ROUTE_METRICS,
    HY_ROUTE_TOKENIZE,
    HY_ROUTE_DETOKENIZE,
    HY_ROUTE_LIBRE_TRANSLATE, /* LibreTranslate's POST /translate */
    HY_ROUTE_LIBRE_LANGUAGES,
    HY_ROUTE_DEEPL_TRANSLATE, /* DeepL's POST /v2/translate */
    HY_ROUTE_DEEPL_LANGUAGES,
    HY_ROUTE_OPENAPI,
    HY_ROUTE_DOCUMENTS, /* POST /v1/documents, GET /v1/documents/{id} */
    HY_ROUTE_DETECT, /* LibreTranslate's POST /detect */
    HY_ROUTE_GLOSSARIES,
    HY_ROUTE_OTHER,
    HY_ROUTE_COUNT
};

#define HY_METRICS_N_CODES 14   /* status codes counted separately; the rest are "other" */
#define HY_METRICS_N_BUCKETS 14 /* histogram upper bounds in seconds, +Inf excluded */

struct hy_histogram {
    int64_t counts[HY_METRICS_N_BUCKETS + 1]; /* per bucket (not cumulative); last: +Inf */
    int64_t n;
    double sum; /* seconds */
};

struct hy_metrics {
    pthread_mutex_t mu;
    int64_t requests[HY_ROUTE_COUNT][HY_METRICS_N_CODES + 1]; /* [route][code index] */
    struct hy_histogram duration[HY_ROUTE_COUNT];
    struct hy_histogram ttft;
    int64_t tokens_prompt, tokens_completion, client_cancels;
    int64_t tm_hits, tm_stored, tm_errors; /* translation memory (serve --tm) */
};

/* The label of a route: "/v1/chat/completions", ... ("other" for HY_ROUTE_OTHER). */
const char *hy_metrics_route_name(enum hy_route r);

void hy_metrics_init(struct hy_metrics *m);
void hy_metrics_deinit(struct hy_metrics *m);

/* One finished request: its route, HTTP status, duration and tokens. */
void hy_metrics_record(struct hy_metrics *m, enum hy_route r, int status, double seconds,
                       int64_t tokens_prompt, int64_t tokens_completion, bool client_gone);
/* A translation's use of the translation memory: segments answered from it, stored into
 * it, lookups or stores that failed. */
void hy_metrics_tm(struct hy_metrics *m, int64_t hits, int64_t stored, int64_t errors);
/* Time from a generation request's arrival to its first token. */
void hy_metrics_ttft(struct hy_metrics *m, double seconds);

/* Prometheus text exposition (format 0.0.4) of everything, with the engine's stats (e NULL:
 * the engine gauges are left out, as before the model is loaded). Returns a malloc'ed,
 * NUL-terminated string (caller frees) or NULL when out of memory. */
char *hy_metrics_render(struct hy_metrics *m, struct hy_engine *e, int draining, size_t *len);

#endif
