/* cmd_worker.c: `hymt worker`: one engine behind the Redis queue (queue/queue.h). Loads
 * the model like serve, then takes jobs from the queue until SIGINT/SIGTERM, lets the
 * running ones finish (up to --drain) and exits 0. With --port it also serves its own
 * /health and /metrics (the whole server, on this worker's engine). */
#include "backend/select.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/engine_opts.h"
#include "cli/load.h"
#include "core/globals.h"
#include "core/log.h"
#include "server/server.h"
#ifdef HYMT_QUEUE
#include "queue/queue.h"
#endif

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_cmd cmd = {
    "worker",
    "usage: hymt worker -m MODEL --queue redis://HOST[:PORT][/DB] [options]\n"
    "\n"
    "Runs the jobs that `hymt serve --queue` front ends put on the Redis queue: as many at\n"
    "a time as --jobs (batched on this engine as in one process). One worker per GPU,\n"
    "any number of machines. A job is acknowledged only when its answer is complete; jobs\n"
    "of a worker that died are taken over after --claim-idle seconds. SIGINT/SIGTERM stop\n"
    "taking jobs, let running ones finish (up to --drain SEC) and exit 0.\n"
    "\n"
    "  -m, --model MODEL          as for serve (the front ends use the same tokenizer)\n"
    "  --queue URL                redis://HOST[:PORT][/DB] (required)\n"
    "  --device D                 auto (default), cpu, cuda or cuda:N (GPU N alone)\n"
    "  -t, --threads N            CPU threads for the model (default: all online CPUs)\n"
    HY_CLI_QUANT_USAGE
    "  --max-running N            sequences decoded together (default 16; 64 on a GPU)\n"
    "  --max-queue N              requests waiting in the engine (default 1024)\n"
    "  --max-batch-tokens N       tokens per engine step (default 2048)\n"
    HY_CLI_KV_USAGE
    "  --jobs N                   jobs held at once (default: --max-running + a quarter,\n"
    "                             so the engine always has the next one)\n"
    "  --claim-idle SEC           take over jobs silent this long (default 30)\n"
    "  --share-wait MS            take more than a fair share of the jobs in flight (their\n"
    "                             number / live workers) only of jobs that waited this long\n"
    "                             for a worker below its share (default 20; 0: no share, a\n"
    "                             read takes as many jobs as there is room for)\n"
    "  --drain SEC                at shutdown, wait this long for running jobs (default 30)\n"
    "  --port N                   also serve /health and /metrics on this port (0: any free)\n"
    "  --host ADDR                address for --port (default 127.0.0.1)\n"
    "  -h, --help                 this text\n",
};

struct worker_opts {
    const char *model, *queue, *device, *quant, *kv_type, *host;
    int64_t threads, jobs, port, share_wait;
    double claim_idle, drain;
    struct cli_engine_flags eng;
    bool fp8_gemm;
};

static int parse_opts(struct worker_opts *o, int argc, char **argv)
{
    struct cli_opt opts[] = {
        {"m|model", CLI_STR, &o->model, 0, 0, false},
        {"queue", CLI_STR, &o->queue, 0, 0, false},
        CLI_LOAD_OPTS(o),
        CLI_ENGINE_OPTS(&o->eng),
        {"jobs", CLI_INT, &o->jobs, 1, 65536, false},
        {"claim-idle", CLI_REAL, &o->claim_idle, 0.1, 86400, false},
        {"share-wait", CLI_INT, &o->share_wait, 0, 60000, false},
        {"drain", CLI_REAL, &o->drain, 0, 1e5, false},
        {"port", CLI_INT, &o->port, 0, 65535, false},
        {"host", CLI_STR, &o->host, 0, 0, false},
    };
    int n_pos = 0;
    int r = cli_parse_settings(&cmd, argc, argv, opts, sizeof opts / sizeof opts[0], NULL, 0,
                               &n_pos);
    if (r)
        return r;
    if (!o->model)
        return cli_fail(&cmd, "-m MODEL is required");
    if (!o->queue)
        return cli_fail(&cmd, "--queue redis://HOST[:PORT][/DB] is required");
    if (o->device && !strncmp(o->device, "cuda:", 5)) {
        /* one GPU of several: the CUDA runtime is not started yet, so it sees only GPU N */
        const char *n = o->device + 5;
        if (!*n || strlen(n) > 3 || strspn(n, "0123456789") != strlen(n))
            return cli_fail(&cmd, "--device cuda:N: N must be a GPU number such as 0");
        setenv("CUDA_VISIBLE_DEVICES", n, 1);
        o->device = "cuda";
    }
    return cli_check_device_quant(&cmd, o->device, o->quant);
}

#ifdef HYMT_QUEUE
static void *signal_main(void *arg)
{
    const sigset_t *set = arg;
    int sig = 0;
    while (sigwait(set, &sig) == 0) {
        HY_LOGI("worker: %s: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
        hy_stop_requested = 1;
        if (sig == SIGTERM || sig == SIGINT)
            break;
    }
    return NULL;
}

static void worker_metrics(void *ctx, FILE *f)
{
    hy_queue_worker_metrics(ctx, f);
}

static int run(struct worker_opts *o, const struct hy_engine_params *ep, sigset_t *set)
{
    struct hy_err err = {{0}};
    struct hy_queue_opts qo = {.claim_idle_s = o->claim_idle,
                               .share_wait_ms = o->share_wait < 0    ? 0
                                                : o->share_wait == 0 ? -1
                                                                     : (int)o->share_wait};
    struct cli_stack stk;
    memset(&stk, 0, sizeof stk);
    struct hy_queue_worker *w = NULL;
    struct hy_server *srv = NULL;
    hy_status st = hy_queue_url_parse(o->queue, &qo.url, &err);
    if (!st)
        st = cli_stack_load(&stk, o->model, NULL, o->device, (int)o->threads, o->quant, o->fp8_gemm,
                            o->kv_type, &o->eng, ep, &err);
    if (!st) {
        int running = hy_engine_get_params(stk.e)->max_running;
        qo.capacity = o->jobs ? (int)o->jobs : running + (running + 3) / 4;
        st = hy_queue_worker_create(&w, &qo, stk.e, &err);
    }
    struct hy_server_config cfg = {.host = o->host, .port = (int)o->port, .drain_s = 1,
                                   .model_name = "hymt-worker", .metrics_extra = worker_metrics,
                                   .hooks_ctx = w};
    if (!st && o->port >= 0)
        st = hy_server_create(&srv, &cfg, &err);
    if (!st && srv)
        st = hy_server_set_engine(srv, stk.e, stk.tok, NULL, &err); /* health and metrics only */
    int rc = 0;
    pthread_t sig_thread;
    if (st) {
        fprintf(stderr, "hymt worker: %s\n", err.msg);
        rc = 1;
    } else if (pthread_create(&sig_thread, NULL, signal_main, set) != 0) {
        fprintf(stderr, "hymt worker: cannot start the signal thread\n");
        rc = 1;
    } else {
        char desc[320];
        HY_LOGI("worker: %s on %s, taking up to %d jobs from redis://%s:%d/%d", 
                hy_queue_worker_name(w), hy_backend_describe(stk.be, desc, sizeof desc),
                qo.capacity, qo.url.host, qo.url.port, qo.url.db);
        if (srv)
            HY_LOGI("worker: ready: /health and /metrics on http://%s:%d/", cfg.host,
                    hy_server_port(srv));
        else
            HY_LOGI("worker: ready");
        hy_queue_worker_run(w, &hy_stop_requested, o->drain);
        pthread_kill(sig_thread, SIGTERM); /* if it still waits (stopped by other means) */
        pthread_join(sig_thread, NULL);
        HY_LOGI("worker: stopped");
    }
    if (srv)
        hy_server_drain(srv);
    hy_server_destroy(srv);
    hy_queue_worker_destroy(w);
    cli_stack_free(&stk);
    return rc;
}
#endif

int cmd_worker(int argc, char **argv)
{
    struct worker_opts o = {.port = -1, .drain = 30, .host = "127.0.0.1",
                            .share_wait = -1 /* the queue's default */};
    int r = parse_opts(&o, argc, argv);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    struct hy_engine_params ep;
    if (cli_engine_params(&cmd, &o.eng, &ep))
        return 2;
    static struct cli_model mp;
    if (cli_model_resolve(&cmd, o.model, &mp))
        return 1;
    o.model = mp.path;
#ifdef HYMT_QUEUE
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    return run(&o, &ep, &set);
#else
    fprintf(stderr, "hymt worker: this hymt was built without the Redis queue (install "
                    "libhiredis-dev and rebuild)\n");
    return 1;
#endif
}
