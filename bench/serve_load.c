/* serve_load.c: an HTTP load generator for `hymt serve` and llama.cpp's `llama-server`.
 * N clients, each a thread with one keep-alive connection, send /v1/completions (greedy,
 * ignore_eos, max_tokens = the output length) or /api/translate requests with a prompt of a
 * given length in tokens, for a duration or a request count, and report requests/s,
 * completion tokens/s, time to first token (streamed requests), latency p50/p95/p99 and
 * errors by kind; where the server sends `Server-Timing: engine;dur=` (hymt does on whole
 * responses), also the front's share: each latency minus the engine's time. Prompt length:
 * the prompt is a run of words sized by probing the server (usage.prompt_tokens of a probe
 * request), whatever the tokenizer; the report gives the prompt and completion tokens the
 * responses actually counted.
 *   serve_load --url http://127.0.0.1:8080 --clients 64 --prompt-tokens 130 --gen-tokens 32
 *              [--route completions|translate] [--duration 30 | --requests N] [--stream]
 *              [--warmup 2] [--api-key KEY] [--model NAME] [--timeout 60] [--csv]
 * Exit 0 when every request succeeded, 1 when any failed, 2 on a usage error. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES (1 << 22)
#define BUF_CAP (4 << 20)

enum err_kind { E_CONNECT, E_TIMEOUT, E_CLOSED, E_HTTP, E_PARSE, E_SHORT, N_ERR };
static const char *const err_names[N_ERR] = {"connect", "timeout", "closed", "http-status",
                                             "bad-response", "short-output"};

static struct {
    char host[256], port[16], api_key[256], model[128];
    const char *route;
    int clients, prompt_tokens, gen_tokens;
    double duration, warmup, timeout;
    long requests;
    bool stream, translate, csv;
} opt = {.port = "8080", .clients = 8, .prompt_tokens = 48, .gen_tokens = 32, .duration = 20,
         .warmup = 2, .timeout = 60};

static char *request_body(long id);
static int prompt_words;      /* words in each prompt, from calibrate() */
static atomic_long n_bodies;  /* the next request's id: each one's prompt is distinct */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- results, shared by the clients under one lock (a few updates per request) ---- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double *lat, *ttft, *eng, *front;
static long n_lat, n_ttft, n_eng, n_ok, errors[N_ERR], status_count[600];
static long long prompt_tok_sum, gen_tok_sum;
static atomic_long started;
static atomic_bool stop;
static double t_measure0, t_end;

/* ---- one connection ---- */
struct conn {
    int fd;
    char *buf;
    size_t len, off; /* bytes buffered, bytes consumed */
};

static int dial(void)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(opt.host, opt.port, &hints, &res))
        return -1;
    int fd = -1;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, 0);
        if (fd < 0)
            continue;
        struct timeval tv = {(time_t)opt.timeout, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (!connect(fd, a->ai_addr, a->ai_addrlen))
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* More bytes into c->buf; -1 with *kind set on timeout or close. */
static int fill(struct conn *c, enum err_kind *kind)
{
    if (c->off && c->off == c->len)
        c->off = c->len = 0;
    if (c->len == BUF_CAP) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
        if (c->len == BUF_CAP) {
            *kind = E_PARSE;
            return -1;
        }
    }
    ssize_t k = recv(c->fd, c->buf + c->len, BUF_CAP - c->len, 0);
    if (k <= 0) {
        *kind = k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? E_TIMEOUT : E_CLOSED;
        return -1;
    }
    c->len += (size_t)k;
    return 0;
}

/* A line ending in \n from the buffer (without \r\n), NUL-terminated in place. */
static char *line(struct conn *c, enum err_kind *kind)
{
    for (;;) {
        char *nl = memchr(c->buf + c->off, '\n', c->len - c->off);
        if (nl) {
            char *s = c->buf + c->off;
            c->off = (size_t)(nl - c->buf) + 1;
            *nl = '\0';
            if (nl > s && nl[-1] == '\r')
                nl[-1] = '\0';
            return s;
        }
        if (fill(c, kind))
            return NULL;
    }
}

/* The body's bytes as they arrive, to on_data (SSE lines are split by the caller). */
struct body_sink {
    char *p;
    size_t len, cap;
};

static int sink_add(struct body_sink *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

struct result {
    int status;
    double t_first; /* the first SSE event with text, seconds since the request */
    long prompt_tokens, gen_tokens, chunks;
    bool saw_done;
    double engine_s; /* hymt's Server-Timing engine;dur (whole responses), 0: none */
};

/* Scans new SSE lines in b from *scan: the first text event's time, usage, [DONE]. */
static void sse_scan(struct body_sink *b, size_t *scan, struct result *r, double t0)
{
    for (;;) {
        char *nl = memchr(b->p + *scan, '\n', b->len - *scan);
        if (!nl)
            return;
        *nl = '\0';
        const char *s = b->p + *scan;
        *scan = (size_t)(nl - b->p) + 1;
        if (strncmp(s, "data: ", 6))
            continue;
        s += 6;
        if (!strncmp(s, "[DONE]", 6)) {
            r->saw_done = true;
            continue;
        }
        json_t *j = json_loads(s, 0, NULL);
        if (!j)
            continue;
        const char *text = NULL;
        json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
        if (ch)
            text = json_string_value(json_object_get(ch, "text"));
        if (!text) /* /api/translate */
            text = json_string_value(json_object_get(j, "delta"));
        if (!text && json_object_get(j, "content")) /* llama.cpp's own stream format */
            text = json_string_value(json_object_get(j, "content"));
        /* The first event that carries a token (its text may be empty: a random model's
         * tokens can be control tokens or half a character) is the first token. */
        if (text) {
            if (*text)
                r->chunks++;
            if (r->t_first < 0)
                r->t_first = now_s() - t0;
        }
        json_t *u = json_object_get(j, "usage");
        if (json_is_object(u)) {
            r->prompt_tokens = (long)json_integer_value(json_object_get(u, "prompt_tokens"));
            r->gen_tokens = (long)json_integer_value(json_object_get(u, "completion_tokens"));
        }
        json_decref(j);
    }
}

static void usage_of(const char *body, struct result *r)
{
    json_t *j = json_loads(body, 0, NULL);
    json_t *u = json_object_get(j, "usage");
    if (json_is_object(u)) {
        r->prompt_tokens = (long)json_integer_value(json_object_get(u, "prompt_tokens"));
        r->gen_tokens = (long)json_integer_value(json_object_get(u, "completion_tokens"));
    }
    json_decref(j);
}

/* Sends body to the route on c (reconnecting when needed) and reads the whole response. */
static int exchange(struct conn *c, const char *body, size_t n, struct result *r,
                    enum err_kind *kind)
{
    char head[1024];
    int nh = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n%s%s%s\r\n",
                      opt.route, opt.host, opt.port, n, opt.api_key[0] ? "Authorization: Bearer " : "",
                      opt.api_key, opt.api_key[0] ? "\r\n" : "");
    memset(r, 0, sizeof *r);
    r->t_first = -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (c->fd < 0 && (c->fd = dial()) < 0) {
            *kind = E_CONNECT;
            return -1;
        }
        c->len = c->off = 0;
        if (send(c->fd, head, (size_t)nh, MSG_NOSIGNAL) == nh &&
            send(c->fd, body, n, MSG_NOSIGNAL) == (ssize_t)n)
            break;
        close(c->fd); /* a kept-alive connection the server closed: once more on a new one */
        c->fd = -1;
        if (attempt) {
            *kind = E_CLOSED;
            return -1;
        }
    }
    double t0 = now_s();
    char *s = line(c, kind);
    if (!s || strncmp(s, "HTTP/1.", 7) || strlen(s) < 12) {
        if (s)
            *kind = E_PARSE;
        return -1;
    }
    r->status = atoi(s + 9);
    long clen = -1;
    bool chunked = false, close_after = false;
    while ((s = line(c, kind)) && *s) {
        if (!strncasecmp(s, "Content-Length:", 15))
            clen = atol(s + 15);
        else if (!strncasecmp(s, "Transfer-Encoding:", 18) && strstr(s + 18, "chunked"))
            chunked = true;
        else if (!strncasecmp(s, "Connection:", 11) && strstr(s + 11, "close"))
            close_after = true;
        else if (!strncasecmp(s, "Server-Timing:", 14) && strstr(s + 14, "engine;dur="))
            r->engine_s = atof(strstr(s + 14, "engine;dur=") + 11) / 1e3;
    }
    if (!s)
        return -1;
    struct body_sink b = {0};
    size_t scan = 0;
    int rc = 0;
    for (;;) { /* body: chunked, by length, or to the close */
        size_t want;
        if (chunked) {
            if (!(s = line(c, kind))) {
                rc = -1;
                break;
            }
            want = strtoul(s, NULL, 16);
            if (!want) {
                while ((s = line(c, kind)) && *s) {
                }
                rc = s ? 0 : -1;
                break;
            }
        } else {
            want = clen >= 0 ? (size_t)clen : SIZE_MAX;
        }
        size_t got = 0;
        while (got < want) {
            if (c->off == c->len && fill(c, kind)) {
                if (want == SIZE_MAX && *kind == E_CLOSED) {
                    close_after = true;
                    want = got; /* to the close */
                    break;
                }
                rc = -1;
                break;
            }
            size_t k = c->len - c->off < want - got ? c->len - c->off : want - got;
            if (sink_add(&b, c->buf + c->off, k)) {
                *kind = E_PARSE;
                rc = -1;
                break;
            }
            c->off += k;
            got += k;
            if (opt.stream)
                sse_scan(&b, &scan, r, t0);
        }
        if (rc || !chunked)
            break;
        if (!line(c, kind)) { /* the CRLF after the chunk */
            rc = -1;
            break;
        }
    }
    if (!rc && r->status == 200 && !opt.stream && b.p)
        usage_of(b.p, r);
    free(b.p);
    if (rc || close_after) {
        close(c->fd);
        c->fd = -1;
    }
    return rc;
}

static void record(const struct result *r, int rc, enum err_kind kind, double latency)
{
    pthread_mutex_lock(&mu);
    if (rc) {
        errors[kind]++;
    } else if (r->status != 200) {
        errors[E_HTTP]++;
        status_count[r->status > 0 && r->status < 600 ? r->status : 0]++;
    } else if (!opt.translate && r->gen_tokens > 0 && r->gen_tokens < opt.gen_tokens) {
        errors[E_SHORT]++;
    } else {
        n_ok++;
        prompt_tok_sum += r->prompt_tokens;
        gen_tok_sum += r->gen_tokens > 0 ? r->gen_tokens : r->chunks;
        if (n_lat < MAX_SAMPLES)
            lat[n_lat++] = latency;
        if (opt.stream && r->t_first >= 0 && n_ttft < MAX_SAMPLES)
            ttft[n_ttft++] = r->t_first;
        if (r->engine_s > 0 && n_eng < MAX_SAMPLES) { /* the front's share: all but the engine's */
            eng[n_eng] = r->engine_s;
            front[n_eng++] = latency - r->engine_s;
        }
    }
    pthread_mutex_unlock(&mu);
}

static void *client(void *arg)
{
    struct conn c = {.fd = -1, .buf = malloc(BUF_CAP)};
    while (!atomic_load(&stop)) {
        if (opt.requests > 0 && atomic_fetch_add(&started, 1) >= opt.requests)
            break;
        double t0 = now_s();
        struct result r;
        enum err_kind kind = E_PARSE;
        char *body = request_body(atomic_fetch_add(&n_bodies, 1));
        int rc = exchange(&c, body, strlen(body), &r, &kind);
        free(body);
        double t1 = now_s();
        if (opt.requests > 0 || (t1 >= t_measure0 && t1 <= t_end)) /* done in the window */
            record(&r, rc, kind, t1 - t0);
        if (rc && kind == E_CONNECT)
            usleep(100000); /* a refused connection: do not spin */
        if (opt.requests <= 0 && t1 >= t_end)
            break;
    }
    if (c.fd >= 0)
        close(c.fd);
    free(c.buf);
    return arg;
}

/* ---- the request body ---- */
static char *make_body(const char *prompt, int max_tokens, bool stream)
{
    json_t *j = json_object();
    if (opt.translate) {
        json_object_set_new(j, "text", json_string(prompt));
        json_object_set_new(j, "target_lang", json_string("de"));
        json_object_set_new(j, "source_lang", json_string("en"));
    } else {
        json_object_set_new(j, "prompt", json_string(prompt));
        json_object_set_new(j, "ignore_eos", json_true());
        if (opt.model[0])
            json_object_set_new(j, "model", json_string(opt.model));
    }
    json_object_set_new(j, "max_tokens", json_integer(max_tokens));
    json_object_set_new(j, "temperature", json_real(0));
    if (stream) {
        json_object_set_new(j, "stream", json_true());
        json_t *so = json_object();
        json_object_set_new(so, "include_usage", json_true());
        json_object_set_new(j, "stream_options", so);
    }
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

static char *words(int n)
{
    static const char *const w[8] = {"the", "quick", "brown", "fox", "jumps", "over", "a",
                                     "lazy"};
    size_t cap = (size_t)n * 8 + 16, at = 0;
    char *s = malloc(cap);
    s[0] = '\0';
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(s + at, cap - at, "%s%s", i ? " " : "", w[(i * 5 + i / 8) % 8]);
    if (!n)
        s[0] = '\0';
    return s;
}

/* The prompt of n words for request number id: its first words (up to 8, each one of
 * 8) spell id in base 8, so that no two requests of a run (nor, from its random first id,
 * most likely of runs before it on the same server) share a first KV block: the server's
 * prefix cache cannot skip their prefill, as `hymt bench` (random prompts) cannot either.
 * calibrate() sizes n on one such prompt; the report gives the mean count. */
static char *prompt_for(int n, long id)
{
    static const char *const w[8] = {"the", "quick", "brown", "fox", "jumps", "over", "a",
                                     "lazy"};
    char *p = words(n);
    size_t cap = strlen(p) + 64, at = 0;
    char *q = malloc(cap);
    const char *rest = p;
    q[0] = '\0';
    for (int i = 0; i < 8 && i < n; i++, id /= 8) {
        at += (size_t)snprintf(q + at, cap - at, "%s%s", i ? " " : "", w[id % 8]);
        rest = strchr(rest, ' ');
        rest = rest ? rest + 1 : "";
    }
    snprintf(q + at, cap - at, "%s%s", *rest && at ? " " : "", rest);
    free(p);
    return q;
}

static char *request_body(long id)
{
    char *q = prompt_for(prompt_words, id);
    char *b = make_body(q, opt.gen_tokens, opt.stream);
    free(q);
    return b;
}

/* Prompt tokens the server counts for n words (usage of 1-token requests). */
static long probe(struct conn *c, int n)
{
    /* the mean over 8 leads, since the lead words' token counts differ */
    long sum = 0;
    for (long k = 0; k < 8; k++) {
        char *p = prompt_for(n, (k * 2654435761L) % (1L << 24)), *b = make_body(p, 1, false);
        struct result r;
        enum err_kind kind = E_PARSE;
        int rc = exchange(c, b, strlen(b), &r, &kind);
        free(p);
        free(b);
        if (rc || r.status != 200 || r.prompt_tokens <= 0) {
            fprintf(stderr, "serve_load: probe request failed (%s, HTTP %d)\n",
                    rc ? err_names[kind] : "no usage", r.status);
            exit(1);
        }
        sum += r.prompt_tokens;
    }
    return (sum + 4) / 8;
}

/* Word count whose prompt the server counts as opt.prompt_tokens: a line through two
 * probes (a fixed part, e.g. a template, plus tokens per word), then steps of one word. */
static int calibrate(void)
{
    bool stream = opt.stream;
    opt.stream = false;
    struct conn c = {.fd = -1, .buf = malloc(BUF_CAP)};
    long t1 = probe(&c, 8), t2 = probe(&c, 24);
    double per = (double)(t2 - t1) / 16.0, fixed = (double)t1 - 8.0 * per;
    int n = per > 0 ? (int)lround(((double)opt.prompt_tokens - fixed) / per) : 8;
    n = n < 1 ? 1 : n;
    long t = probe(&c, n);
    for (int i = 0; i < 16 && t != opt.prompt_tokens; i++) {
        int step = t < opt.prompt_tokens ? 1 : -1;
        if (n + step < 1)
            break;
        long u = probe(&c, n + step);
        if (labs(u - opt.prompt_tokens) > labs(t - opt.prompt_tokens))
            break; /* the nearest count a whole word reaches */
        n += step;
        t = u;
    }
    if (c.fd >= 0)
        close(c.fd);
    free(c.buf);
    opt.stream = stream;
    return n;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, long n, double p)
{
    if (!n)
        return NAN;
    long i = (long)ceil(p / 100.0 * (double)n) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static int usage(void)
{
    fprintf(stderr,
            "usage: serve_load --url http://HOST:PORT [--route completions|translate]\n"
            "                  [--clients N] [--prompt-tokens N] [--gen-tokens N]\n"
            "                  [--duration SEC | --requests N] [--warmup SEC] [--stream]\n"
            "                  [--api-key KEY] [--model NAME] [--timeout SEC] [--csv]\n");
    return 2;
}

static bool parse_url(const char *u)
{
    if (strncmp(u, "http://", 7))
        return false;
    u += 7;
    const char *colon = strchr(u, ':'), *slash = strchr(u, '/');
    size_t hl = colon ? (size_t)(colon - u) : slash ? (size_t)(slash - u) : strlen(u);
    if (!hl || hl >= sizeof opt.host)
        return false;
    memcpy(opt.host, u, hl);
    opt.host[hl] = '\0';
    if (colon) {
        size_t pl = slash ? (size_t)(slash - colon - 1) : strlen(colon + 1);
        if (!pl || pl >= sizeof opt.port)
            return false;
        memcpy(opt.port, colon + 1, pl);
        opt.port[pl] = '\0';
    }
    return true;
}

static int parse_args(int argc, char **argv)
{
    bool url = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--stream")) {
            opt.stream = true;
            continue;
        }
        if (!strcmp(a, "--csv")) {
            opt.csv = true;
            continue;
        }
        if (!v)
            return usage();
        i++;
        char *end = NULL;
        double d = strtod(v, &end);
        bool num = end && *end == '\0' && end != v && d >= 0;
        if (!strcmp(a, "--url")) {
            if (!(url = parse_url(v)))
                return usage();
        } else if (!strcmp(a, "--route")) {
            opt.translate = !strcmp(v, "translate");
            if (!opt.translate && strcmp(v, "completions"))
                return usage();
        } else if (!strcmp(a, "--api-key") && strlen(v) < sizeof opt.api_key) {
            snprintf(opt.api_key, sizeof opt.api_key, "%s", v);
        } else if (!strcmp(a, "--model") && strlen(v) < sizeof opt.model) {
            snprintf(opt.model, sizeof opt.model, "%s", v);
        } else if (num && !strcmp(a, "--clients") && d >= 1 && d <= 4096) {
            opt.clients = (int)d;
        } else if (num && !strcmp(a, "--prompt-tokens") && d >= 1 && d <= 100000) {
            opt.prompt_tokens = (int)d;
        } else if (num && !strcmp(a, "--gen-tokens") && d >= 1 && d <= 100000) {
            opt.gen_tokens = (int)d;
        } else if (num && !strcmp(a, "--duration") && d > 0) {
            opt.duration = d;
        } else if (num && !strcmp(a, "--requests") && d >= 1) {
            opt.requests = (long)d;
        } else if (num && !strcmp(a, "--warmup")) {
            opt.warmup = d;
        } else if (num && !strcmp(a, "--timeout") && d >= 1) {
            opt.timeout = d;
        } else {
            fprintf(stderr, "serve_load: bad option or value: %s %s\n", a, v);
            return usage();
        }
    }
    return url ? 0 : usage();
}

static void report(double elapsed)
{
    qsort(lat, (size_t)n_lat, sizeof *lat, cmp_d);
    qsort(ttft, (size_t)n_ttft, sizeof *ttft, cmp_d);
    qsort(eng, (size_t)n_eng, sizeof *eng, cmp_d);
    qsort(front, (size_t)n_eng, sizeof *front, cmp_d);
    long n_err = 0;
    for (int k = 0; k < N_ERR; k++)
        n_err += errors[k];
    double rps = (double)n_ok / elapsed, tps = (double)gen_tok_sum / elapsed;
    double ptok = n_ok ? (double)prompt_tok_sum / (double)n_ok : 0;
    double gtok = n_ok ? (double)gen_tok_sum / (double)n_ok : 0;
    char errs[512] = "";
    size_t at = 0;
    for (int k = 0; k < N_ERR; k++)
        if (errors[k])
            at += (size_t)snprintf(errs + at, sizeof errs - at, "%s%s=%ld", at ? " " : "",
                                   err_names[k], errors[k]);
    for (int s = 0; s < 600; s++)
        if (status_count[s])
            at += (size_t)snprintf(errs + at, sizeof errs - at, " http%d=%ld", s, status_count[s]);
    if (opt.csv) {
        printf("clients,prompt_tokens,gen_tokens,requests,errors,seconds,req_s,tok_s,"
               "ttft_p50_ms,ttft_p99_ms,lat_p50_ms,lat_p95_ms,lat_p99_ms,error_kinds,"
               "engine_p99_ms,front_p50_ms,front_p99_ms\n");
        printf("%d,%.1f,%.1f,%ld,%ld,%.2f,%.2f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%s,%.2f,%.2f,%.2f\n",
               opt.clients, ptok, gtok, n_ok, n_err, elapsed, rps, tps,
               pct(ttft, n_ttft, 50) * 1e3, pct(ttft, n_ttft, 99) * 1e3,
               pct(lat, n_lat, 50) * 1e3, pct(lat, n_lat, 95) * 1e3, pct(lat, n_lat, 99) * 1e3,
               errs[0] ? errs : "none", pct(eng, n_eng, 99) * 1e3, pct(front, n_eng, 50) * 1e3,
               pct(front, n_eng, 99) * 1e3);
        return;
    }
    printf("serve_load: %s:%s%s, %d clients, %s\n", opt.host, opt.port, opt.route, opt.clients,
           opt.stream ? "streamed" : "whole responses");
    printf("  requests    %ld ok, %ld failed in %.2f s: %.2f requests/s\n", n_ok, n_err,
           elapsed, rps);
    printf("  tokens      prompt %.1f, completion %.1f per request: %.1f completion tok/s\n",
           ptok, gtok, tps);
    if (opt.stream)
        printf("  TTFT        p50 %.1f ms, p95 %.1f ms, p99 %.1f ms\n",
               pct(ttft, n_ttft, 50) * 1e3, pct(ttft, n_ttft, 95) * 1e3,
               pct(ttft, n_ttft, 99) * 1e3);
    printf("  latency     p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms\n",
           pct(lat, n_lat, 50) * 1e3, pct(lat, n_lat, 95) * 1e3, pct(lat, n_lat, 99) * 1e3,
           n_lat ? lat[n_lat - 1] * 1e3 : NAN);
    if (n_eng)
        printf("  front       latency minus the engine's (Server-Timing): p50 %.2f ms, p99 %.2f ms;"
               " engine p99 %.1f ms\n",
               pct(front, n_eng, 50) * 1e3, pct(front, n_eng, 99) * 1e3, pct(eng, n_eng, 99) * 1e3);
    printf("  errors      %s\n", errs[0] ? errs : "none");
}

int main(int argc, char **argv)
{
    int rc = parse_args(argc, argv);
    if (rc)
        return rc;
    opt.route = opt.translate ? "/api/translate" : "/v1/completions";
    lat = malloc(MAX_SAMPLES * sizeof *lat);
    ttft = malloc(MAX_SAMPLES * sizeof *ttft);
    eng = malloc(MAX_SAMPLES * sizeof *eng);
    front = malloc(MAX_SAMPLES * sizeof *front);
    int n_words = calibrate();
    prompt_words = n_words;
    atomic_store(&n_bodies, (long)(now_s() * 1e6) % (1L << 24)); /* 8 words of 8: 2^24 */
    pthread_t *th = calloc((size_t)opt.clients, sizeof *th);
    double t0 = now_s();
    t_measure0 = opt.requests > 0 ? 0 : t0 + opt.warmup;
    t_end = t_measure0 + opt.duration;
    for (int i = 0; i < opt.clients; i++)
        if (pthread_create(&th[i], NULL, client, NULL)) {
            fprintf(stderr, "serve_load: cannot start client %d\n", i);
            return 1;
        }
    for (int i = 0; i < opt.clients; i++)
        pthread_join(th[i], NULL);
    double elapsed = opt.requests > 0 ? now_s() - t0 : opt.duration;
    report(elapsed);
    long n_err = 0;
    for (int k = 0; k < N_ERR; k++)
        n_err += errors[k];
    return n_err ? 1 : 0;
}
