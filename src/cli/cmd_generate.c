/* cmd_generate.c: `hymt generate`: run the model on token ids and print the continuation.
 * For debugging and parity checks: greedy at --temp 0, and --dump-logits writes the
 * float32 distribution each generated token was drawn from. */
#include "backend/cpu/cpu.h"
#include "backend/select.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/load.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "model/hunyuan.h"
#include "tokenizer/tokenizer.h"
#include "translate/prompt_detect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GEN_MAX_IDS 65536
#define GEN_MAX_NEW 65536

static const struct cli_cmd cmd = {
    "generate",
    "usage: hymt generate -m MODEL (--ids 1,2,3 | --prompt TEXT) -n N [options]\n"
    "\n"
    "Runs the model on the given token ids and prints the generated ids on stdout,\n"
    "space-separated, on one line. Timings go to stderr.\n"
    "\n"
    "  -m, --model MODEL     Hugging Face repo id (ORG/NAME[@REV], from the hub cache),\n"
    "                        checkpoint folder or GGUF file\n"
    "  --ids LIST            prompt token ids, comma-separated\n"
    "  --prompt TEXT         prompt text, encoded with MODEL/tokenizer.json as it is: no\n"
    "                        template, no BOS; control tokens written in it are honoured\n"
    "  --to LANG             --prompt is text to translate into LANG: the model's\n"
    "                        translation prompt in its chat template (BOS included)\n"
    "  --from LANG           the source language for --to (default: detected)\n"
    "  --prompt-style GEN    for --to: auto (default: from the model's name, config and\n"
    "                        tokenizer), mt1, mt1.5 or mt2\n"
    "  --text                print the generated text instead of the ids\n"
    "  -n, --n-predict N     tokens to generate (1..65536)\n"
    "  --temp T              sampling temperature; 0 (default) is greedy\n"
    "  --seed N              random seed for sampling (default 0)\n"
    "  --ignore-eos          keep generating past end-of-sequence tokens\n"
    "  --dump-logits FILE    write the float32 logits of each generated step, row-major\n"
    "                        [steps, vocab], raw little-endian; the first row is the\n"
    "                        last prompt position\n"
    "  -t, --threads N       CPU threads (default: all online CPUs)\n"
    "  --device D            auto (default: CUDA when a GPU is present), cpu or cuda\n"
    "  --quant q8|q4         quantize the projections and the head at load: q8 int8 (Q8_0),\n"
    "                        q4 4-bit (Q4_G128); also q4_0, q4_k, q6_k (GGUF types), fp8;\n"
    "                        each stays in its type on a GPU\n"
    "  --fp8-gemm            fp8 weights: multiply batches of more than 8 rows on the fp8\n"
    "                        tensor cores (activations rounded to fp8: faster, less exact;\n"
    "                        GPU sm_89+)\n"
    "  --kv-type auto|f32|bf16  KV cache elements (auto: bf16 on a GPU, f32 on the CPU;\n"
    "                        bf16 is GPU only)\n"
    "  -h, --help            this text\n",
};

struct gen_opts {
    const char *model, *ids, *prompt, *dump, *device, *quant, *kv_type, *to, *from, *style;
    int64_t n, seed, threads;
    double temp;
    bool ignore_eos, text, fp8_gemm;
};

/* Stop ids: the config's eos list and eod, plus generation_config.json's eos list. */
static int load_stop_ids(const char *dir, const struct hy_config *cf, int32_t *stop, int cap)
{
    int n = 0;
    for (int i = 0; i < cf->n_eos && n < cap; i++)
        stop[n++] = (int32_t)cf->eos_token_id[i];
    if (cf->eod_token_id >= 0 && n < cap)
        stop[n++] = (int32_t)cf->eod_token_id;
    char path[4096];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    json_t *j = NULL;
    if (hy_json_load_file(&j, path, 1 << 20, NULL) != HY_OK)
        return n;
    json_t *e = json_object_get(j, "eos_token_id");
    if (json_is_integer(e) && n < cap)
        stop[n++] = (int32_t)json_integer_value(e);
    for (size_t i = 0; json_is_array(e) && i < json_array_size(e) && n < cap; i++)
        if (json_is_integer(json_array_get(e, i)))
            stop[n++] = (int32_t)json_integer_value(json_array_get(e, i));
    json_decref(j);
    return n;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Greedy (temp 0: first maximum, as torch.argmax) or temperature sampling. */
static int32_t pick(const float *logits, int64_t V, double temp, uint64_t *rng)
{
    int64_t best = 0;
    for (int64_t i = 1; i < V; i++)
        if (logits[i] > logits[best])
            best = i;
    if (temp <= 0)
        return (int32_t)best;
    double sum = 0;
    for (int64_t i = 0; i < V; i++)
        sum += exp((logits[i] - logits[best]) / temp);
    double r = (double)(rng_next(rng) >> 11) * 0x1.0p-53 * sum;
    for (int64_t i = 0; i < V; i++) {
        r -= exp((logits[i] - logits[best]) / temp);
        if (r <= 0)
            return (int32_t)i;
    }
    return (int32_t)best;
}

/* Decodes ids with the model's tokenizer and prints the text and a newline. */
static int print_text(const char *dir, const int32_t *ids, int n)
{
    struct hy_tok *tok = NULL;
    struct hy_err err = {{0}};
    size_t cap = (size_t)n * 64 + 64, len = 0;
    char *buf = malloc(cap);
    hy_status s = buf ? hy_tok_load(&tok, dir, &err) : HY_E_NOMEM;
    if (!s)
        s = hy_tok_decode(tok, ids, (size_t)n, true, buf, cap, &len, &err);
    if (s)
        fprintf(stderr, "hymt generate: %s\n", buf ? err.msg : "out of memory");
    else
        printf("%.*s\n", (int)len, buf);
    free(buf);
    hy_tok_destroy(tok);
    return s ? 1 : 0;
}

/* Encodes --prompt with the model's tokenizer; returns the id count or -1. */
static int encode_prompt(const char *dir, const char *text, int32_t *ids, int cap)
{
    struct hy_tok *tok = NULL;
    struct hy_err err = {{0}};
    size_t n = 0;
    hy_status s = hy_tok_load(&tok, dir, &err);
    if (!s)
        s = hy_tok_encode(tok, text, strlen(text), true, ids, (size_t)cap, &n, &err);
    hy_tok_destroy(tok);
    if (s)
        fprintf(stderr, "hymt generate: --prompt: %s\n", err.msg);
    else if (n == 0)
        fprintf(stderr, "hymt generate: --prompt: the text encodes to no tokens\n");
    return s || n == 0 ? -1 : (int)n;
}

/* --prompt as a translation into --to with the model's prompts; the id count or -1. */
static int encode_translation(const struct gen_opts *o, const struct cli_model *mp, int32_t *ids,
                              int cap)
{
    const struct hy_lang *tgt = hy_lang_find(o->to), *src = o->from ? hy_lang_find(o->from) : NULL;
    if (!src)
        src = hy_lang_detect(o->prompt, strlen(o->prompt));
    struct hy_tok *tok = NULL;
    struct hy_err err = {{0}};
    struct hy_prompt_profile p;
    size_t n = 0;
    hy_status s = hy_tok_load(&tok, mp->path, &err);
    if (!s)
        s = cli_prompt_profile(mp, o->style, tok, &p, &err);
    if (!s)
        s = hy_prompt_translate(tok, &p.kind, src, tgt, o->prompt, strlen(o->prompt), ids,
                                (size_t)cap, &n, &err);
    hy_tok_destroy(tok);
    if (s)
        fprintf(stderr, "hymt generate: %s\n", err.msg);
    return s ? -1 : (int)n;
}

static int run(const struct gen_opts *o, const int32_t *prompt, int n_prompt)
{
    struct hy_err err = {{0}};
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    struct hy_ctx *c = NULL;
    float *logits = NULL;
    int32_t *out = NULL;
    FILE *dump = NULL;
    int rc = 1;
    double t_load = hy_clock_now();
    char desc[320];
    hy_status s = cli_load_model(o->model, o->device, "auto", (int)o->threads, o->quant,
                                 o->fp8_gemm, o->kv_type, &be, &m, &err);
    if (!s)
        s = hy_ctx_create(&c, m, n_prompt + (int)o->n, n_prompt, &err);
    if (s) {
        fprintf(stderr, "hymt generate: %s\n", err.msg);
        goto done;
    }
    const int64_t V = m->cfg.vocab_size;
    logits = malloc((size_t)V * sizeof *logits);
    out = malloc((size_t)o->n * sizeof *out);
    if (!logits || !out) {
        fprintf(stderr, "hymt generate: out of memory\n");
        goto done;
    }
    if (o->dump && !(dump = fopen(o->dump, "wb"))) {
        fprintf(stderr, "hymt generate: cannot write %s: %m\n", o->dump);
        goto done;
    }
    HY_LOGI("model loaded in %.2f s (%s)", hy_clock_now() - t_load, be->i->name);
    int32_t stop[16];
    int n_stop = o->ignore_eos ? 0 : load_stop_ids(o->model, &m->cfg, stop, 16);
    uint64_t rng = (uint64_t)o->seed;
    double t0 = hy_clock_now();
    s = hy_model_forward(c, prompt, n_prompt, false, logits, &err);
    double t1 = hy_clock_now(), t2 = t1;
    int n_out = 0;
    while (!s && n_out < o->n) {
        if (dump && fwrite(logits, sizeof *logits, (size_t)V, dump) != (size_t)V) {
            fprintf(stderr, "hymt generate: write to %s failed\n", o->dump);
            goto done;
        }
        int32_t id = pick(logits, V, o->temp, &rng);
        out[n_out++] = id;
        bool stopped = false;
        for (int k = 0; k < n_stop; k++)
            stopped |= stop[k] == id;
        if (stopped || n_out == o->n)
            break;
        s = hy_model_forward(c, &id, 1, false, logits, &err);
        t2 = hy_clock_now();
    }
    if (s) {
        fprintf(stderr, "hymt generate: %s\n", err.msg);
        goto done;
    }
    if (o->text) {
        if (print_text(o->model, out, n_out))
            goto done;
    } else {
        for (int i = 0; i < n_out; i++)
            printf(i ? " %d" : "%d", out[i]);
        printf("\n");
    }
    HY_LOGI("prompt: %d tokens in %.1f ms (%.2f tok/s); generated %d tokens, %d decode steps "
            "in %.1f ms (%.2f tok/s); %s",
            n_prompt, (t1 - t0) * 1e3, n_prompt / (t1 - t0), n_out, n_out - 1, (t2 - t1) * 1e3,
            n_out > 1 ? (n_out - 1) / (t2 - t1) : 0.0, hy_backend_describe(be, desc, sizeof desc));
    rc = 0;
done:
    if (dump && fclose(dump) != 0 && rc == 0) {
        fprintf(stderr, "hymt generate: write to %s failed\n", o->dump);
        rc = 1;
    }
    free(logits);
    free(out);
    hy_ctx_destroy(c);
    hy_model_destroy(m);
    if (be)
        be->i->destroy(be);
    return rc;
}

int cmd_generate(int argc, char **argv)
{
    struct gen_opts o = {.n = -1, .threads = 0};
    struct cli_opt opts[] = {
        {"m|model", CLI_STR, &o.model, 0, 0, false},
        {"ids", CLI_STR, &o.ids, 0, 0, false},
        {"prompt", CLI_STR, &o.prompt, 0, 0, false},
        {"n|n-predict", CLI_INT, &o.n, 1, GEN_MAX_NEW, false},
        {"temp", CLI_REAL, &o.temp, 0, 100, false},
        {"seed", CLI_INT, &o.seed, 0, 9007199254740991.0, false},
        {"ignore-eos", CLI_FLAG, &o.ignore_eos, 0, 0, false},
        {"text", CLI_FLAG, &o.text, 0, 0, false},
        {"dump-logits", CLI_STR, &o.dump, 0, 0, false},
        {"to", CLI_STR, &o.to, 0, 0, false},
        {"from", CLI_STR, &o.from, 0, 0, false},
        {"prompt-style", CLI_STR, &o.style, 0, 0, false},
        CLI_LOAD_OPTS(&o),
    };
    const char *pos[1];
    int n_pos;
    int r = cli_parse(&cmd, argc, argv, opts, sizeof opts / sizeof opts[0], pos, 0, &n_pos);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    if (!o.model)
        return cli_fail(&cmd, "-m MODEL is required");
    static struct cli_model mp;
    if (cli_model_resolve(&cmd, o.model, &mp))
        return 1;
    o.model = mp.path;
    if (o.n < 0)
        return cli_fail(&cmd, "-n N is required");
    if (cli_check_device_quant(&cmd, o.device, o.quant))
        return 2;
    if (!o.ids == !o.prompt)
        return cli_fail(&cmd, "give the prompt with either --ids 1,2,3 or --prompt TEXT");
    if ((o.from || o.style) && !o.to)
        return cli_fail(&cmd, "--from and --prompt-style go with --to LANG");
    if (o.to && !o.prompt)
        return cli_fail(&cmd, "--to translates --prompt TEXT");
    if (cli_check_prompt_style(&cmd, o.style))
        return 2;
    if ((o.to && !hy_lang_find(o.to)) || (o.from && !hy_lang_find(o.from)))
        return cli_fail(&cmd, "unknown language '%s'", o.to && !hy_lang_find(o.to) ? o.to : o.from);
    int32_t *prompt = malloc(GEN_MAX_IDS * sizeof *prompt);
    if (!prompt)
        return 1;
    int n_prompt = o.ids  ? cli_parse_ids(&cmd, o.ids, prompt, GEN_MAX_IDS)
                   : o.to ? encode_translation(&o, &mp, prompt, GEN_MAX_IDS)
                          : encode_prompt(o.model, o.prompt, prompt, GEN_MAX_IDS);
    int rc = n_prompt < 0 ? (o.ids ? 2 : 1) : run(&o, prompt, n_prompt);
    free(prompt);
    return rc;
}
