/* cmd_bench.c: `hymt bench`: engine throughput on random prompts (time to first token,
 * decode tokens/s per sequence and in total, step time) for several batch sizes. */
#include "backend/cpu/cpu.h"
#include "backend/select.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/load.h"
#include "core/clock.h"
#include "core/log.h"
#include "engine/engine.h"
#include "translate/doc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_MAX_BATCHES 16
#define BENCH_MAX_BATCH 4096
#define BENCH_MAX_REPEAT 100

static const struct cli_cmd cmd = {
    "bench",
    "usage: hymt bench -m MODEL [options]\n"
    "\n"
    "Runs batches of concurrent requests with random prompts through the engine and prints\n"
    "a table: time to first token, decode tokens/s per sequence and in total, step time.\n"
    "Greedy decoding, no stop tokens, no shared prefixes.\n"
    "\n"
    "  -m, --model MODEL        Hugging Face repo id (ORG/NAME[@REV], from the hub cache),\n"
    "                           checkpoint folder or GGUF file\n"
    "  --batch LIST             concurrent requests per run, comma-separated (default 1,8,32)\n"
    "  --prompt-len N           prompt tokens per request (default 64)\n"
    "  --gen-len N              generated tokens per request (default 64)\n"
    "  --max-batch-tokens N     tokens per engine step (default 2048)\n"
    "  -r, --repeat N           timed passes of each batch size, on one engine after one\n"
    "                           warm-up request (default 1); the table shows their means,\n"
    "                           prompt and decode rates as MEAN +- SD over the passes\n"
    "  --kv-memory SIZE         KV pool size, e.g. 2G (default: enough for the largest batch)\n"
    "  -t, --threads N          CPU threads (default: all online CPUs)\n"
    "  --device D               auto (default: CUDA when a GPU is present), cpu or cuda\n"
    "  --translate FILE         instead: translate FILE (needs MODEL/tokenizer.json) with every\n"
    "                           segment batched; prints segments/s and tokens/s\n"
    "  --to LANG                target language for --translate (default en)\n"
    "  --quant q8|q4            quantize the projections and the head at load: q8 int8 (Q8_0),\n"
    "                           q4 4-bit (Q4_G128); also q4_0, q4_k, q6_k (GGUF types), fp8\n"
    "  --batch-invariant        batch-invariant numerics (GPU; what they cost)\n"
    "  --fp8-gemm               fp8 weights: multiply batches of more than 8 rows on the fp8\n"
    "                           tensor cores (activations rounded to fp8: faster, less exact;\n"
    "                           GPU sm_89+)\n"
    "  --kv-type auto|f32|bf16  KV cache elements (auto: bf16 on a GPU, f32 on the CPU;\n"
    "                           bf16 is GPU only)\n"
    "  -h, --help               this text\n",
};

struct bench_opts {
    const char *model, *batches, *device, *kv, *translate, *to, *quant, *kv_type;
    int64_t prompt_len, gen_len, mbt, threads, repeat;
    bool batch_inv, fp8_gemm;
};

struct row {
    int batch;
    double ttft_ms, per_seq, total, step_ms, wall_s, prefill, dev_gib, prefill_sd, per_seq_sd;
};

/* One untimed request of the same prompt length, so that the timed ones do not pay for
 * first-use costs (the GPU's kernel loading, cuBLAS heuristics). */
static void warm_up(struct hy_engine *e, const int32_t *prompt, int n)
{
    struct hy_engine_request r = {.prompt = prompt, .n_prompt = n, .max_new_tokens = 2};
    r.sampling = (struct hy_sampler_params){0, 0, 1.0f, 1.0f, 0};
    uint64_t h;
    int32_t ids[4];
    struct hy_engine_status st = {0};
    if (hy_engine_submit(e, &r, &h, NULL))
        return;
    while (hy_engine_read(e, h, ids, 4, -1, &st) >= 0 && !st.done) {
    }
    hy_engine_release(e, h);
}

/* One timed pass: B requests of random prompts (rng carries on, so no pass repeats an
 * earlier prompt), read to the end. Fills every field of *out but dev_gib. */
static void timed_pass(struct hy_engine *e, const struct hy_model *m, const struct bench_opts *o,
                       int B, uint64_t *h, int32_t *prompt, uint64_t *rng, struct row *out)
{
    const struct hy_config *cf = &m->cfg;
    int32_t ids[256];
    struct hy_err err = {{0}};
    double t0 = hy_clock_now(), ttft = 0, per_seq = 0, ttft_max = 0;
    int64_t tokens = 0;
    struct hy_engine_stats s0, s1;
    hy_engine_stats(e, &s0);
    for (int i = 0; i < B; i++) {
        for (int j = 0; j < o->prompt_len; j++) {
            *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
            prompt[j] = (int32_t)((*rng >> 33) % (uint64_t)cf->vocab_size);
        }
        struct hy_engine_request r = {.prompt = prompt, .n_prompt = (int)o->prompt_len,
                                      .max_new_tokens = (int)o->gen_len};
        r.sampling = (struct hy_sampler_params){0, 0, 1.0f, 1.0f, 0};
        if (hy_engine_submit(e, &r, &h[i], &err)) {
            fprintf(stderr, "hymt bench: %s\n", err.msg);
            B = i;
        }
    }
    for (int i = 0; i < B; i++) {
        struct hy_engine_status st = {0};
        int k;
        while ((k = hy_engine_read(e, h[i], ids, 256, -1, &st)) >= 0 && (k > 0 || !st.done))
            tokens += k;
        ttft += st.first_token_s;
        ttft_max = st.first_token_s > ttft_max ? st.first_token_s : ttft_max;
        per_seq += st.n_generated > 1 ? (st.n_generated - 1) / (st.total_s - st.first_token_s) : 0;
        hy_engine_release(e, h[i]);
    }
    double wall = hy_clock_now() - t0;
    hy_engine_stats(e, &s1);
    int bd = B > 0 ? B : 1;
    *out = (struct row){B, 1e3 * ttft / bd, per_seq / bd, (double)tokens / wall,
                        1e3 * wall / (double)(s1.steps - s0.steps > 0 ? s1.steps - s0.steps : 1),
                        wall, ttft_max > 0 ? (double)B * (double)o->prompt_len / ttft_max : 0, 0,
                        0, 0};
}

/* Mean and sample standard deviation of n values. */
static void mean_sd(const double *v, int n, double *mean, double *sd)
{
    double s = 0, q = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    *mean = s / n;
    for (int i = 0; i < n; i++)
        q += (v[i] - *mean) * (v[i] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0;
}

/* o->repeat timed passes of batch B on one engine after one warm-up request; *out holds
 * their means (prompt and decode rates with their standard deviations). */
static int run_batch(struct hy_model *m, const struct bench_opts *o, int B, struct row *out)
{
    struct hy_engine_params p = hy_engine_params_default();
    p.max_running = B;
    p.max_queue = B;
    p.max_batch_tokens = (int)(o->mbt > B ? o->mbt : B);
    p.max_seq_tokens = (int)(o->prompt_len + o->gen_len);
    const struct hy_config *cf = &m->cfg;
    int64_t per_tok = cf->num_hidden_layers * 2 * cf->num_key_value_heads * cf->head_dim * 4;
    p.kv_bytes = o->kv ? cli_parse_size(&cmd, "--kv-memory", o->kv, 1, INT64_MAX)
                       : per_tok * (p.max_seq_tokens + p.block_size) * (int64_t)B;
    struct hy_engine *e = NULL;
    struct hy_err err = {{0}};
    if (p.kv_bytes < 0 || hy_engine_create(&e, m, &p, &err)) {
        fprintf(stderr, "hymt bench: %s\n", err.msg);
        return 1;
    }
    uint64_t *h = calloc((size_t)B, sizeof *h);
    int32_t *prompt = malloc((size_t)o->prompt_len * sizeof *prompt);
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)B;
    int n = (int)o->repeat, rc = 1;
    double pre[BENCH_MAX_REPEAT], dec[BENCH_MAX_REPEAT];
    if (h && prompt) {
        for (int j = 0; j < o->prompt_len; j++)
            prompt[j] = (int32_t)((j * 7919 + 13) % cf->vocab_size);
        warm_up(e, prompt, (int)o->prompt_len);
        struct row sum = {0}, r;
        for (int k = 0; k < n; k++) {
            timed_pass(e, m, o, B, h, prompt, &rng, &r);
            pre[k] = r.prefill;
            dec[k] = r.per_seq;
            sum.batch = r.batch;
            sum.ttft_ms += r.ttft_ms / n;
            sum.total += r.total / n;
            sum.step_ms += r.step_ms / n;
            sum.wall_s += r.wall_s / n;
        }
        mean_sd(pre, n, &sum.prefill, &sum.prefill_sd);
        mean_sd(dec, n, &sum.per_seq, &sum.per_seq_sd);
        uint64_t used = 0, total = 0;
        if (m->be->i->mem_info) /* everything is allocated: weights, pool, scratch, graphs */
            m->be->i->mem_info(m->be, &used, &total);
        sum.dev_gib = (double)used / (1 << 30);
        *out = sum;
        rc = 0;
    }
    free(h);
    free(prompt);
    hy_engine_destroy(e);
    return rc;
}

static void print_row(const struct row *w, bool sd)
{
    char pre[48], dec[48];
    snprintf(pre, sizeof pre, sd ? "%.0f +- %.0f" : "%.0f", w->prefill, w->prefill_sd);
    snprintf(dec, sizeof dec, sd ? "%.2f +- %.2f" : "%.2f", w->per_seq, w->per_seq_sd);
    printf("| %d | %.1f | %s | %s | %.2f | %.1f | %.2f | %.2f |\n", w->batch, w->ttft_ms, pre, dec,
           w->total, w->step_ms, w->wall_s, w->dev_gib);
}

static hy_status count_sink(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    (void)s;
    (void)err;
    *(size_t *)ctx += n;
    return HY_OK;
}

/* Translates a file with every segment batched (greedy), reporting the rates. */
static int bench_translate(struct hy_model *m, const struct bench_opts *o)
{
    const struct hy_lang *tgt = hy_lang_find(o->to);
    if (!tgt)
        return cli_fail(&cmd, "--to: unknown language '%s'", o->to);
    FILE *f = fopen(o->translate, "rb");
    char *text = malloc(64 << 20);
    size_t len = f && text ? fread(text, 1, 64 << 20, f) : 0;
    if (f)
        fclose(f);
    struct hy_err err = {{0}};
    struct hy_tok *tok = NULL;
    struct hy_engine *e = NULL;
    struct hy_engine_params p = hy_engine_params_default();
    p.max_queue = 4096;
    p.max_batch_tokens = (int)o->mbt;
    if (o->kv)
        p.kv_bytes = cli_parse_size(&cmd, "--kv-memory", o->kv, 1, INT64_MAX);
    int rc = 1;
    if (!f || !text) {
        fprintf(stderr, "hymt bench: cannot read %s\n", o->translate);
    } else if (hy_tok_load(&tok, o->model, &err) || hy_engine_create(&e, m, &p, &err)) {
        fprintf(stderr, "hymt bench: %s\n", err.msg);
    } else {
        size_t bytes = 0;
        struct hy_doc_opts d = {.tgt = tgt, .keep_lines = true, .write = count_sink,
                                .write_ctx = &bytes};
        d.sampling = (struct hy_sampler_params){0, 0, 1.0f, 1.0f, 0};
        struct hy_doc_result r;
        if (hy_doc_translate(e, tok, text, len, &d, &r, &err)) {
            fprintf(stderr, "hymt bench: %s\n", err.msg);
        } else {
            printf("| file | bytes | segments | prompt tokens | generated | seconds | segments/s "
                   "| generated tok/s |\n|---|---|---|---|---|---|---|---|\n");
            printf("| %s | %zu | %zu | %lld | %lld | %.2f | %.2f | %.1f |\n", o->translate, len,
                   r.segments, (long long)r.tokens_in, (long long)r.tokens_out, r.elapsed_s,
                   (double)r.segments / r.elapsed_s, (double)r.tokens_out / r.elapsed_s);
            rc = 0;
        }
    }
    hy_engine_destroy(e);
    hy_tok_destroy(tok);
    free(text);
    return rc;
}

static int parse_batches(const char *s, int *out)
{
    int n = 0;
    while (*s && n < BENCH_MAX_BATCHES) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > BENCH_MAX_BATCH || (*end && *end != ','))
            return -1;
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return *s ? -1 : n;
}

int cmd_bench(int argc, char **argv)
{
    struct bench_opts o = {.batches = "1,8,32", .device = "auto", .prompt_len = 64, .gen_len = 64,
                           .mbt = 2048, .repeat = 1, .to = "en"};
    struct cli_opt opts[] = {
        {"m|model", CLI_STR, &o.model, 0, 0, false},
        {"batch", CLI_STR, &o.batches, 0, 0, false},
        {"prompt-len", CLI_INT, &o.prompt_len, 1, 1 << 20, false},
        {"gen-len", CLI_INT, &o.gen_len, 1, 1 << 20, false},
        {"max-batch-tokens", CLI_INT, &o.mbt, 1, 1 << 20, false},
        {"r|repeat", CLI_INT, &o.repeat, 1, BENCH_MAX_REPEAT, false},
        {"kv-memory", CLI_STR, &o.kv, 0, 0, false},
        CLI_LOAD_OPTS(&o),
        {"translate", CLI_STR, &o.translate, 0, 0, false},
        {"to", CLI_STR, &o.to, 0, 0, false},
        {"batch-invariant", CLI_FLAG, &o.batch_inv, 0, 0, false},
    };
    const char *pos[1];
    int n_pos, batches[BENCH_MAX_BATCHES];
    int r = cli_parse(&cmd, argc, argv, opts, sizeof opts / sizeof opts[0], pos, 0, &n_pos);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    if (!o.model)
        return cli_fail(&cmd, "-m MODEL is required");
    static struct cli_model mp;
    if (cli_model_resolve(&cmd, o.model, &mp))
        return 1;
    o.model = mp.path;
    if (cli_check_device_quant(&cmd, o.device, o.quant))
        return 2;
    int nb = parse_batches(o.batches, batches);
    if (nb <= 0)
        return cli_fail(&cmd, "--batch: expected up to %d comma-separated sizes 1..%d, got '%s'",
                        BENCH_MAX_BATCHES, BENCH_MAX_BATCH, o.batches);
    if (o.kv && cli_parse_size(&cmd, "--kv-memory", o.kv, 1, INT64_MAX) < 0)
        return 2;
    struct hy_err err = {{0}};
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    double t0 = hy_clock_now();
    hy_status st = cli_load_model(o.model, o.device, "auto", (int)o.threads, o.quant, o.fp8_gemm,
                                  o.kv_type, &be, &m, &err);
    if (st) {
        fprintf(stderr, "hymt bench: %s\n", err.msg);
        if (be)
            be->i->destroy(be);
        return 1;
    }
    if (o.batch_inv) {
        st = be->i->set_batch_invariant
                 ? be->i->set_batch_invariant(be, true, &err)
                 : hy_err_set(&err, HY_E_UNSUPPORTED, "--batch-invariant needs the CUDA backend");
        if (st) {
            fprintf(stderr, "hymt bench: %s\n", err.msg);
            hy_model_destroy(m);
            be->i->destroy(be);
            return 1;
        }
    }
    char desc[320];
    printf("model %s: %lld layers, hidden %lld, vocab %lld; %s; load %.2f s\n",
           o.model, (long long)m->cfg.num_hidden_layers, (long long)m->cfg.hidden_size,
           (long long)m->cfg.vocab_size, hy_backend_describe(be, desc, sizeof desc),
           hy_clock_now() - t0);
    if (o.translate) {
        int rt = bench_translate(m, &o);
        hy_model_destroy(m);
        be->i->destroy(be);
        return rt;
    }
    printf("prompt %lld tokens, generate %lld tokens, greedy, after one warm-up request; "
           "%lld timed pass%s%s\n", (long long)o.prompt_len, (long long)o.gen_len,
           (long long)o.repeat, o.repeat > 1 ? "es, their means" : "",
           o.repeat > 1 ? " (prompt and decode: MEAN +- SD)" : "");
    printf("| batch | TTFT ms (mean) | prompt tok/s | decode tok/s per seq | total gen tok/s "
           "| step ms | wall s | device GiB |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    for (int i = 0; i < nb && !rc; i++) {
        struct row w;
        rc = run_batch(m, &o, batches[i], &w);
        if (!rc)
            print_row(&w, o.repeat > 1);
        fflush(stdout);
    }
    hy_model_destroy(m);
    be->i->destroy(be);
    return rc;
}
