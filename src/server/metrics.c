/* metrics.c: Prometheus counters and histograms of the server (metrics.h has the contract). */
#include "server/metrics.h"

#include "core/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int codes[HY_METRICS_N_CODES] = {200, 400, 401, 404, 405, 413,
                                              429, 500, 503, 504, 499, 204,
                                              403, 415};
/* Seconds: tiny-model requests take milliseconds, a long document minutes. */
static const double buckets[HY_METRICS_N_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                     0.25,  0.5,    1,     2.5,  5,     15,   60};
static const char *const routes[HY_ROUTE_COUNT] = {"/",
                                                   "/api/translate",
                                                   "/v1/chat/completions",
                                                   "/v1/completions",
                                                   "/v1/models",
                                                   "/health",
                                                   "/ready",
                                                   "/metrics",
                                                   "/tokenize",
                                                   "/detokenize",
                                                   "/translate",
                                                   "/languages",
                                                   "/v2/translate",
                                                   "/v2/languages",
                                                   "/openapi.json",
                                                   "/v1/documents",
                                                   "/detect",
                                                   "/v1/glossaries",
                                                   "other"};

const char *hy_metrics_route_name(enum hy_route r)
{
    return r >= 0 && r < HY_ROUTE_COUNT ? routes[r] : "other";
}

void hy_metrics_init(struct hy_metrics *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
}

void hy_metrics_tm(struct hy_metrics *m, int64_t hits, int64_t stored, int64_t errors)
{
    pthread_mutex_lock(&m->mu);
    m->tm_hits += hits;
    m->tm_stored += stored;
    m->tm_errors += errors;
    pthread_mutex_unlock(&m->mu);
}

void hy_metrics_deinit(struct hy_metrics *m)
{
    pthread_mutex_destroy(&m->mu);
}

static void observe(struct hy_histogram *h, double s)
{
    int b = 0;
    while (b < HY_METRICS_N_BUCKETS && s > buckets[b])
        b++;
    h->counts[b]++;
    h->n++;
    h->sum += s;
}

void hy_metrics_record(struct hy_metrics *m, enum hy_route r, int status, double seconds,
                       int64_t tokens_prompt, int64_t tokens_completion, bool client_gone)
{
    int c = 0;
    while (c < HY_METRICS_N_CODES && codes[c] != status)
        c++;
    if (r < 0 || r >= HY_ROUTE_COUNT)
        r = HY_ROUTE_OTHER;
    pthread_mutex_lock(&m->mu);
    m->requests[r][c]++;
    observe(&m->duration[r], seconds);
    m->tokens_prompt += tokens_prompt;
    m->tokens_completion += tokens_completion;
    m->client_cancels += client_gone;
    pthread_mutex_unlock(&m->mu);
}

void hy_metrics_ttft(struct hy_metrics *m, double seconds)
{
    pthread_mutex_lock(&m->mu);
    observe(&m->ttft, seconds);
    pthread_mutex_unlock(&m->mu);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void histogram(FILE *f, const char *name, const char *labels, const struct hy_histogram *h)
{
    int64_t cum = 0;
    const char *sep = labels[0] ? "," : "";
    for (int b = 0; b < HY_METRICS_N_BUCKETS; b++) {
        cum += h->counts[b];
        fprintf(f, "%s_bucket{%s%sle=\"%g\"} %lld\n", name, labels, sep, buckets[b],
                (long long)cum);
    }
    cum += h->counts[HY_METRICS_N_BUCKETS];
    fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %lld\n", name, labels, sep, (long long)cum);
    fprintf(f, "%s_sum%s%s%s %.6f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
            h->sum);
    fprintf(f, "%s_count%s%s%s %lld\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
            (long long)h->n);
}

static void render_requests(FILE *f, const struct hy_metrics *m)
{
    family(f, "hymt_http_requests_total", "counter", "HTTP requests by route and status code.");
    for (int r = 0; r < HY_ROUTE_COUNT; r++)
        for (int c = 0; c <= HY_METRICS_N_CODES; c++)
            if (m->requests[r][c]) {
                char code[16];
                snprintf(code, sizeof code, "%d", c < HY_METRICS_N_CODES ? codes[c] : 0);
                fprintf(f, "hymt_http_requests_total{route=\"%s\",code=\"%s\"} %lld\n", routes[r],
                        c < HY_METRICS_N_CODES ? code : "other", (long long)m->requests[r][c]);
            }
    family(f, "hymt_http_request_duration_seconds", "histogram",
           "Time from request arrival to the end of the response.");
    for (int r = 0; r < HY_ROUTE_COUNT; r++) {
        char labels[64];
        snprintf(labels, sizeof labels, "route=\"%s\"", routes[r]);
        histogram(f, "hymt_http_request_duration_seconds", labels, &m->duration[r]);
    }
    family(f, "hymt_time_to_first_token_seconds", "histogram",
           "Time from a generation request's arrival to its first generated token.");
    histogram(f, "hymt_time_to_first_token_seconds", "", &m->ttft);
    family(f, "hymt_prompt_tokens_total", "counter", "Prompt tokens of finished requests.");
    fprintf(f, "hymt_prompt_tokens_total %lld\n", (long long)m->tokens_prompt);
    family(f, "hymt_completion_tokens_total", "counter", "Generated tokens of finished requests.");
    fprintf(f, "hymt_completion_tokens_total %lld\n", (long long)m->tokens_completion);
    family(f, "hymt_client_disconnects_total", "counter",
           "Requests whose client went away before the end (their work was cancelled).");
    fprintf(f, "hymt_client_disconnects_total %lld\n", (long long)m->client_cancels);
    family(f, "hymt_tm_hits_total", "counter",
           "Segments answered from the translation memory without the engine.");
    fprintf(f, "hymt_tm_hits_total %lld\n", (long long)m->tm_hits);
    family(f, "hymt_tm_stored_total", "counter", "Segments stored into the translation memory.");
    fprintf(f, "hymt_tm_stored_total %lld\n", (long long)m->tm_stored);
    family(f, "hymt_tm_errors_total", "counter",
           "Translation-memory lookups or stores that failed (locked file, disk).");
    fprintf(f, "hymt_tm_errors_total %lld\n", (long long)m->tm_errors);
}

static void gauge(FILE *f, const char *name, const char *help, double v)
{
    family(f, name, "gauge", help);
    fprintf(f, "%s %.10g\n", name, v);
}

static void counter(FILE *f, const char *name, const char *help, int64_t v)
{
    family(f, name, "counter", help);
    fprintf(f, "%s %lld\n", name, (long long)v);
}

static void render_engine(FILE *f, struct hy_engine *e)
{
    struct hy_engine_stats s;
    hy_engine_stats(e, &s);
    gauge(f, "hymt_queue_depth", "Requests waiting to start in the engine.", s.n_waiting);
    gauge(f, "hymt_running_sequences", "Sequences being decoded.", s.n_running);
    /* Counted by this process in both modes (behind --queue the two above come from the
     * workers' last published figures, which may lag). */
    gauge(f, "hymt_requests_in_flight",
          "Generation requests submitted by this process and not yet answered.",
          (double)s.slots_in_use);
    counter(f, "hymt_engine_steps_total", "Engine steps (one batched forward pass each).", s.steps);
    counter(f, "hymt_engine_preemptions_total", "Sequences preempted for lack of KV blocks.",
            s.preemptions);
    counter(f, "hymt_engine_rejected_total", "Submissions refused with a full queue.", s.rejected);
    counter(f, "hymt_engine_generated_tokens_total", "Tokens sampled by the engine.",
            s.tokens_generated);
    counter(f, "hymt_engine_computed_tokens_total", "Positions run through the model.",
            s.tokens_computed);
    /* A step samples at most one token per sequence: a mean above 1 proves batching. */
    gauge(f, "hymt_engine_mean_batch_sequences",
          "Generated tokens per engine step: the mean number of sequences sampled together.",
          s.steps ? (double)s.tokens_generated / (double)s.steps : 0.0);
    family(f, "hymt_engine_finished_total", "counter", "Requests finished, by reason.");
    for (int r = 1; r < HY_FINISH_COUNT; r++)
        fprintf(f, "hymt_engine_finished_total{reason=\"%s\"} %lld\n",
                hy_finish_str((enum hy_finish)r), (long long)s.finished[r]);
    gauge(f, "hymt_kv_blocks_capacity", "KV cache blocks in the pool.", s.kv_blocks_total);
    gauge(f, "hymt_kv_blocks_used", "KV cache blocks referenced by live sequences.",
          s.kv_blocks_used);
    gauge(f, "hymt_kv_blocks_cached", "Unreferenced KV blocks kept for prefix reuse.",
          s.kv_blocks_cached);
    gauge(f, "hymt_prefix_cache_hit_ratio", "Sequence starts that reused a cached prefix block.",
          s.prefix_lookups ? (double)s.prefix_hits / (double)s.prefix_lookups : 0.0);
}

char *hy_metrics_render(struct hy_metrics *m, struct hy_engine *e, int draining, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    pthread_mutex_lock(&m->mu);
    render_requests(f, m);
    pthread_mutex_unlock(&m->mu);
    gauge(f, "hymt_ready", "1 when the model is loaded and the server is not draining.",
          e && !draining ? 1 : 0);
    if (e)
        render_engine(f, e);
    gauge(f, "hymt_process_resident_memory_bytes", "Resident set size of the process.",
          (double)hy_proc_rss_bytes());
    struct hy_backend *be = e && hy_engine_model(e) ? hy_engine_model(e)->be : NULL;
    if (be && be->i->mem_info) { /* a GPU backend: its memory, fixed at start-up */
        uint64_t used = 0, total = 0;
        be->i->mem_info(be, &used, &total);
        gauge(f, "hymt_device_memory_used_bytes", "Device memory in use (all processes).",
              (double)used);
        gauge(f, "hymt_device_memory_total_bytes", "Device memory on the GPU.", (double)total);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}
