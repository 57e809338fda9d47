/* cmd_serve.c: `hymt serve`: the HTTP server (src/server/) on one shared engine.
 * Order: block the stop signals (every thread inherits the mask, so only this thread
 * takes them), listen, load the model (/health answers meanwhile, /ready says 503), become
 * ready, wait for SIGINT/SIGTERM, drain, stop. */
#include "backend/cpu/cpu.h"
#include "backend/select.h"
#include "cli/args.h"
#include "cli/engine_opts.h"
#include "cli/commands.h"
#include "cli/load.h"
#include "cli/queue_front.h"
#include "core/globals.h"
#include "core/log.h"
#include "server/server.h"
#ifdef HYMT_QUEUE
#include "queue/queue.h"
#endif

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SERVE_DRAIN_S 30.0
#define HY_SERVE_FRONT_WORKERS 16 /* handler threads of a front end (--queue) by default */                    /* default wait for running requests at shutdown */
#define SERVE_DEMO_MARKER "DEMO_MODEL_README" /* written by the Makefile's demo-model target */

static const struct cli_cmd cmd = {
    "serve",
    "usage: hymt serve -m MODEL [options]\n"
    "\n"
    "Serves the translation API (POST /api/translate), the OpenAI-compatible API\n"
    "(POST /v1/chat/completions, POST /v1/completions, GET /v1/models), GET /health,\n"
    "GET /ready, GET /metrics (Prometheus) and the web page (GET /) over HTTP/1.1 (HTTPS\n"
    "with --tls-cert), all on one engine that batches every request. SIGINT/SIGTERM stop\n"
    "accepting, let running requests finish (up to --drain SEC) and exit 0.\n"
    "\n"
    "  -m, --model MODEL          a Hugging Face repo id (ORG/NAME[@REV], in the hub cache:\n"
    "                             hymt pull), a checkpoint folder or a GGUF file;\n"
    "                             `make serve` serves the random-weight demo model\n"
    "  --host ADDR                address to listen on (default 127.0.0.1)\n"
    "  --port N                   port (default 8080; 0: any free port, logged)\n"
    "  -t, --threads N            CPU threads for the model (default: all online CPUs)\n"
    "  --device D                 auto (default: CUDA when a GPU is present), cpu or cuda\n"
    HY_CLI_QUANT_USAGE
    "  --max-queue N              requests (segments) waiting in the engine; more get 429\n"
    "                             (default 1024)\n"
    "  --max-running N            sequences decoded together (default 16; 64 on a GPU)\n"
    "  --max-batch-tokens N       tokens per engine step (default 2048)\n"
    HY_CLI_KV_USAGE
    "  --chimera MODEL            also load Hunyuan-MT-Chimera-7B (same device; weights\n"
    "                             identical to the model's shared; a third of the KV\n"
    "                             memory is its): /api/translate takes \"ensemble\": K (2..6)\n"
    "  --timeout SEC              per request; past it the answer is 504 (default: none)\n"
    "  --drain SEC                at shutdown, wait this long for running requests (default 30)\n"
    "  --max-body BYTES           largest request body; larger is 413 (default 1M)\n"
    "  --max-chars N              longest text to translate in characters; longer is 413\n"
    "                             (default 20000)\n"
    "  --max-connections N        open connections (default 1024); when all are taken, the\n"
    "                             one waiting longest for a request head makes room\n"
    "  --max-connections-per-client N\n"
    "                             open connections from one address; more get 429\n"
    "                             (default 3/4 of --max-connections)\n"
    "  --header-timeout SEC       a request head must arrive within this; else 408 (default 10)\n"
    "  --body-timeout SEC         a request body must arrive within this; else 408 (default 30)\n"
    "  --idle-timeout SEC         idle keep-alive connections close after this (default 30);\n"
    "                             a quiet stream gets an SSE comment every half of it\n"
    "  --workers N                threads for JSON, tokenizing and detokenizing (default:\n"
    "                             the online CPUs, 2..16; 16 with --queue)\n"
    "  --api-key KEY              require 'Authorization: Bearer KEY' on /api and /v1 routes\n"
    "  --api-key-file FILE        the same, KEY read from FILE's first line (not visible in ps)\n"
    "  --api-keys-file FILE       named keys, one a line: NAME KEY [RATE] (RATE: N/s, N/min\n"
    "                             or N/h; over it 429 with Retry-After); '#' comments. The\n"
    "                             name goes into the log line and /metrics, never the key\n"
    "  --metrics-key-file FILE    require 'Authorization: Bearer KEY' on /metrics, KEY read\n"
    "                             from FILE's first line (also --metrics-key KEY)\n"
    "  --tls-cert FILE            serve HTTPS: the PEM certificate (chain) in FILE\n"
    "  --tls-key FILE             the certificate's PEM private key (unencrypted)\n"
    "  --cors ORIGIN              send Access-Control-Allow-Origin: ORIGIN\n"
    "  --model-name NAME          the model id in responses (default: the repo id, or the\n"
    "                             folder's or file's name)\n"
    "  --queue redis://HOST[:PORT][/DB]\n"
    "                             a front end: no model is loaded (only -m's tokenizer);\n"
    "                             every generation becomes a job for `hymt worker`s on\n"
    "                             that Redis (docs/ARCHITECTURE.md, \"The Redis queue\")\n"
    "  --result-ttl SEC           with --queue: finished jobs' results are kept this long\n"
    "                             (default 300)\n"
    "  --tm FILE                  translation memory (SQLite, created if missing; may be\n"
    "                             shared by several servers): /api/translate answers\n"
    "                             segments found there without the model and stores the\n"
    "                             ones it translates (a request's \"tm\": false skips it)\n"
    "  --glossary-db FILE         keep the glossaries of /v1/glossaries in this SQLite file\n"
    "                             (created if missing); default: in memory only\n"
    "  --max-glossaries N         glossaries kept (default 1000)\n"
    "  --max-glossary-entries N   entries of all glossaries together (default 1000000)\n"
    HY_CLI_PROMPT_USAGE
    HY_CLI_SETTINGS_USAGE
    "  --print-routes             print the routes the server answers (METHOD PATH, one a\n"
    "                             line) and exit; needs no model\n"
    "  -h, --help                 this text\n",
};

struct serve_opts {
    const char *model, *host, *max_body, *api_key, *cors, *name, *device, *quant, *kv_type;
    const char *chimera;
    const char *queue;
    double result_ttl;
    const char *tls_cert, *tls_key, *api_keys_file, *metrics_key;
    const char *tm, *glossary_db;
    const char *prompt_style;
    const struct cli_model *mp; /* what -m resolved to */
    int64_t port, threads, max_chars, max_conns, max_per_client, workers;
    int64_t max_glossaries, max_glossary_entries;
    double timeout, drain, header_timeout, body_timeout, idle_timeout;
    struct cli_engine_flags eng;
    bool fp8_gemm, print_routes;
};

static int parse_opts(struct serve_opts *o, int argc, char **argv)
{
    struct cli_opt opts[] = {
        {"m|model", CLI_STR, &o->model, 0, 0, false},
        {"host", CLI_STR, &o->host, 0, 0, false},
        {"port", CLI_INT, &o->port, 0, 65535, false},
        CLI_LOAD_OPTS(o),
        CLI_ENGINE_OPTS(&o->eng),
        {"timeout", CLI_REAL, &o->timeout, 0, 1e7, false},
        {"drain", CLI_REAL, &o->drain, 0, 1e5, false},
        {"max-body", CLI_STR, &o->max_body, 0, 0, false},
        {"max-chars", CLI_INT, &o->max_chars, 1, 1 << 26, false},
        {"max-connections", CLI_INT, &o->max_conns, 1, 65536, false},
        {"max-connections-per-client", CLI_INT, &o->max_per_client, 1, 65536, false},
        {"header-timeout", CLI_REAL, &o->header_timeout, 0.1, 3600, false},
        {"body-timeout", CLI_REAL, &o->body_timeout, 0.1, 3600, false},
        {"idle-timeout", CLI_REAL, &o->idle_timeout, 0.1, 86400, false},
        {"workers", CLI_INT, &o->workers, 1, 256, false},
        {"api-key", CLI_SECRET, &o->api_key, 0, 0, false},
        {"cors", CLI_STR, &o->cors, 0, 0, false},
        {"api-keys-file", CLI_STR, &o->api_keys_file, 0, 0, false},
        {"metrics-key", CLI_SECRET, &o->metrics_key, 0, 0, false},
        {"tls-cert", CLI_STR, &o->tls_cert, 0, 0, false},
        {"tls-key", CLI_STR, &o->tls_key, 0, 0, false},
        {"model-name", CLI_STR, &o->name, 0, 0, false},
        {"print-routes", CLI_FLAG, &o->print_routes, 0, 0, false},
        {"chimera", CLI_STR, &o->chimera, 0, 0, false},
        {"queue", CLI_STR, &o->queue, 0, 0, false},
        {"result-ttl", CLI_REAL, &o->result_ttl, 1, 30 * 86400, false},
        {"tm", CLI_STR, &o->tm, 0, 0, false},
        {"glossary-db", CLI_STR, &o->glossary_db, 0, 0, false},
        {"max-glossaries", CLI_INT, &o->max_glossaries, 1, 1000000, false},
        {"max-glossary-entries", CLI_INT, &o->max_glossary_entries, 1, 100000000, false},
        {"prompt-style", CLI_STR, &o->prompt_style, 0, 0, false},
    };
    int n_pos = 0;
    int r = cli_parse_settings(&cmd, argc, argv, opts, sizeof opts / sizeof opts[0], NULL, 0,
                               &n_pos);
    if (r || o->print_routes)
        return r;
    if (!o->tls_cert != !o->tls_key)
        return cli_fail(&cmd, "--tls-cert and --tls-key go together");
    if (!o->model)
        return cli_fail(&cmd, "-m MODEL is required: a checkpoint folder such as "
                              "/path/to/Hunyuan-MT-7B, or run `make serve` for the "
                              "random-weight demo model");
    if (cli_check_prompt_style(&cmd, o->prompt_style))
        return CLI_ERR;
    return cli_check_device_quant(&cmd, o->device, o->quant);
}

/* The model's display name: --model-name, else the folder's last component. */
static void model_name(const struct serve_opts *o, bool demo, char *buf, size_t cap)
{
    if (o->name) {
        snprintf(buf, cap, "%s", o->name);
        return;
    }
    if (demo) {
        snprintf(buf, cap, "hymt-demo-random-weights");
        return;
    }
    size_t n = strlen(o->model);
    while (n > 1 && o->model[n - 1] == '/')
        n--;
    size_t a = n;
    while (a > 0 && o->model[a - 1] != '/')
        a--;
    snprintf(buf, cap, "%.*s", (int)(n - a), o->model + a);
}

static bool is_demo(const char *dir)
{
    char path[HY_HUB_PATH_MAX + sizeof SERVE_DEMO_MARKER];
    snprintf(path, sizeof path, "%s/%s", dir, SERVE_DEMO_MARKER);
    return access(path, F_OK) == 0;
}

/* Waits for SIGINT/SIGTERM (blocked in every thread, taken here) or hy_stop_requested. */
static void wait_for_stop(const sigset_t *set)
{
    while (!hy_stop_requested) {
        struct timespec ts = {1, 0};
        int sig = sigtimedwait(set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            HY_LOGI("serve: %s: shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
            hy_stop_requested = 1;
        }
    }
}

#ifdef HYMT_QUEUE
static bool queue_available(void *ctx, char *why, size_t cap)
{
    return hy_queue_client_available(ctx, why, cap);
}

static void queue_metrics(void *ctx, FILE *f)
{
    hy_queue_client_metrics(ctx, f);
}

/* The front end: the tokenizer of -m, a remote engine on the queue, the same server. */
static int run_front(const struct serve_opts *o, struct hy_server_config *cfg,
                     const struct hy_engine_params *ep, const sigset_t *set)
{
    struct hy_err err = {{0}};
    struct cli_queue_front qf;
    struct hy_server *srv = NULL;
    hy_status st = cli_queue_front_open(&qf, o->queue, o->model, ep, o->result_ttl, &err);
    if (!cfg->workers) /* a front end's handlers wait on Redis round trips, not the CPU */
        cfg->workers = HY_SERVE_FRONT_WORKERS;
    cfg->available = queue_available;
    cfg->metrics_extra = queue_metrics;
    cfg->hooks_ctx = qf.qc;
    if (!st)
        st = hy_server_create(&srv, cfg, &err);
    struct hy_prompt_profile prompt; /* the workers run -m's model: its prompts */
    if (!st)
        st = cli_prompt_profile(o->mp, o->prompt_style, qf.tok, &prompt, &err);
    if (!st)
        st = hy_server_set_engine(srv, qf.e, qf.tok, &prompt, &err);
    int rc = 0;
    if (st) {
        fprintf(stderr, "hymt serve: %s\n", err.msg);
        rc = 1;
    } else {
        HY_LOGI("serve: front end of %s (jobs for hymt worker)", qf.where);
        HY_LOGI("serve: ready: model %s, %s://%s:%d/", cfg->model_name,
                cfg->tls_cert ? "https" : "http", cfg->host, hy_server_port(srv));
        wait_for_stop(set);
        int left = hy_server_drain(srv);
        HY_LOGI("serve: stopped (%d request(s) cancelled at the drain limit)", left);
    }
    hy_server_destroy(srv);
    cli_queue_front_close(&qf);
    return rc;
}
#endif

/* The translation memory and the glossary store, before anything listens. */
static int open_stores(const struct serve_opts *o, struct hy_server_config *cfg, char *tm_model,
                       size_t cap)
{
    struct hy_err err = {{0}};
    if (o->tm && hy_tm_open(&cfg->tm, o->tm, &err)) {
        fprintf(stderr, "hymt serve: %s\n", err.msg);
        return 1;
    }
    /* the checkpoint's folder (or file) name and the load-time quantization, as
     * `hymt translate --tm` names it, so both share entries */
    size_t n = strlen(o->model);
    while (n > 1 && o->model[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && o->model[b - 1] != '/')
        b--;
    snprintf(tm_model, cap, "%.*s%s%s", (int)(n - b > 200 ? 200 : n - b), o->model + b,
             o->quant ? "+" : "", o->quant ? o->quant : "");
    cfg->tm_model = tm_model;
    if (hy_gstore_create(&cfg->glossaries, o->glossary_db, (size_t)o->max_glossaries,
                         (size_t)o->max_glossary_entries, &err)) {
        fprintf(stderr, "hymt serve: %s\n", err.msg);
        hy_tm_close(cfg->tm);
        return 1;
    }
    return 0;
}

static int run(const struct serve_opts *o, struct hy_server_config *cfg,
               const struct hy_engine_params *ep, const sigset_t *set)
{
    struct hy_err err = {{0}};
    struct hy_server *srv = NULL;
    struct cli_stack stk;
    hy_status st = hy_server_create(&srv, cfg, &err);
    if (st) {
        fprintf(stderr, "hymt serve: %s\n", err.msg);
        return 1;
    }
    const char *scheme = cfg->tls_cert ? "https" : "http";
    HY_LOGI("serve: listening on %s://%s:%d/ (loading %s)", scheme, cfg->host,
            hy_server_port(srv), o->model);
    st = cli_stack_load(&stk, o->model, o->chimera, o->device, (int)o->threads, o->quant,
                        o->fp8_gemm, o->kv_type, &o->eng, ep, &err);
    if (stk.m) {
        char desc[320];
        HY_LOGI("serve: model runs on %s", hy_backend_describe(stk.be, desc, sizeof desc));
    }
    if (!st && stk.ce)
        st = hy_server_set_chimera(srv, stk.ce, stk.ctok, &err);
    struct hy_prompt_profile prompt;
    if (!st)
        st = cli_prompt_profile(o->mp, o->prompt_style, stk.tok, &prompt, &err);
    if (!st)
        st = hy_server_set_engine(srv, stk.e, stk.tok, &prompt, &err);
    int rc = 0;
    if (st) {
        fprintf(stderr, "hymt serve: %s\n", err.msg);
        rc = 1;
    } else {
        if (cfg->demo)
            HY_LOGW("serve: DEMO MODEL with RANDOM WEIGHTS: translations are meaningless. For "
                    "real ones: hymt serve -m /path/to/Hunyuan-MT-7B");
        HY_LOGI("serve: ready: model %s, %s://%s:%d/", cfg->model_name, scheme, cfg->host,
                hy_server_port(srv));
        wait_for_stop(set);
        int left = hy_server_drain(srv);
        HY_LOGI("serve: stopped (%d request(s) cancelled at the drain limit)", left);
    }
    hy_server_destroy(srv); /* before the engine: workers may still read it */
    cli_stack_free(&stk);
    return rc;
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o = {.host = "127.0.0.1", .port = 8080, .drain = SERVE_DRAIN_S};
    int r = parse_opts(&o, argc, argv);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    if (o.print_routes) {
        const char *m;
        for (size_t i = 0; hy_server_route(i, &m); i++)
            printf("%s %s\n", m, hy_server_route(i, &m));
        return 0;
    }
    struct hy_engine_params ep;
    if (cli_engine_params(&cmd, &o.eng, &ep))
        return 2;
    int64_t max_body = HY_SERVER_MAX_BODY_DEFAULT;
    if (o.max_body &&
        (max_body = cli_parse_size(&cmd, "--max-body", o.max_body, 64, 1ll << 32)) < 0)
        return 2;
    static struct cli_model mp; /* -m: a folder, a GGUF file or a repo id in the hub cache */
    if (cli_model_resolve(&cmd, o.model, &mp))
        return 1;
    o.model = mp.path;
    static struct cli_model cp;
    if (o.chimera && cli_model_resolve(&cmd, o.chimera, &cp))
        return 1;
    if (o.chimera)
        o.chimera = cp.path;
    o.mp = &mp;
    char name[256];
    bool demo = is_demo(o.model);
    if (!o.name && !demo)
        o.name = mp.name; /* the repo id, not the snapshot's commit hash */
    model_name(&o, demo, name, sizeof name);
    struct hy_server_config cfg = {.host = o.host,
                                   .port = (int)o.port,
                                   .max_body = (size_t)max_body,
                                   .max_chars = (size_t)o.max_chars,
                                   .timeout_s = o.timeout,
                                   .drain_s = o.drain,
                                   .api_key = o.api_key,
                                   .api_keys_file = o.api_keys_file,
                                   .metrics_key = o.metrics_key,
                                   .tls_cert = o.tls_cert,
                                   .tls_key = o.tls_key,
                                   .cors = o.cors,
                                   .model_name = name,
                                   .demo = demo,
                                   .max_connections = (int)o.max_conns,
                                   .max_per_client = (int)o.max_per_client,
                                   .workers = (int)o.workers,
                                   .header_timeout_s = o.header_timeout,
                                   .body_timeout_s = o.body_timeout,
                                   .idle_timeout_s = o.idle_timeout};
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that went away is an error return, not a signal */
    if (!o.queue && o.result_ttl > 0)
        return cli_fail(&cmd, "--result-ttl is for a front end (--queue)");
#ifndef HYMT_QUEUE
    if (o.queue) {
        fprintf(stderr, "hymt serve: --queue: this hymt was built without the Redis queue "
                        "(install libhiredis-dev and rebuild)\n");
        return 1;
    }
#endif
    /* the memory and the glossaries live in the process that runs the translations'
     * documents: this one, with its own engine or as a front end of the queue */
    char tm_model[256];
    if (open_stores(&o, &cfg, tm_model, sizeof tm_model))
        return 1;
    int rc;
#ifdef HYMT_QUEUE
    if (o.queue)
        rc = run_front(&o, &cfg, &ep, &set);
    else
#endif
        rc = run(&o, &cfg, &ep, &set);
    hy_gstore_destroy(cfg.glossaries);
    hy_tm_close(cfg.tm);
    return rc;
}
