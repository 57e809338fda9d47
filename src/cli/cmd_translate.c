/* cmd_translate.c: `hymt translate`: documents in, translations out, through the engine.
 * All segments of a document are submitted at once and batched; output is written in
 * order as segments finish. Progress bar on a terminal, one summary line otherwise. */
#include "backend/select.h"
#include "cli/args.h"
#include "cli/engine_opts.h"
#include "cli/commands.h"
#include "cli/load.h"
#include "cli/queue_front.h"
#include "core/clock.h"
#include "core/globals.h"
#include "core/log.h"
#include "core/utf8.h"
#include "translate/doc.h"
#include "translate/docx.h"
#include "translate/format.h"
#include "translate/prompt_detect.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define TR_MAX_INPUT (64ll << 20) /* bytes per input file */
#define TR_MAX_FILES 256

static const struct cli_cmd cmd = {
    "translate",
    "usage: hymt translate -m MODEL --to LANG [options] [FILE...]\n"
    "\n"
    "Translates each FILE (or standard input) and writes the translation to standard\n"
    "output or -o FILE, keeping the whitespace and paragraph structure. Long documents are\n"
    "split into segments that are translated together (continuous batching).\n"
    "\n"
    "  -m, --model MODEL          Hugging Face repo id (ORG/NAME[@REV], from the hub cache),\n"
    "                             checkpoint folder or GGUF file\n"
    "  --to LANG                  target language: a code (en, zh, zh-Hant, ...) or a name\n"
    "  --from LANG                source language, or auto (default: detected from the text;\n"
    "                             a source under 50% sure uses the prompt that needs no name)\n"
    "  -o, --output FILE          write here instead of standard output\n"
    "  --greedy                   deterministic output (temperature 0)\n"
    "  --temp T, --top-k K, --top-p P, --repetition-penalty R, --seed N\n"
    "                             sampling (defaults: the model's generation_config.json,\n"
    "                             else its card: 0.7, 20, 0.6, 1.05; Hy-MT2-30B-A3B 0.7,\n"
    "                             off, 1, 1; seed 0)\n"
    "  --max-seg-tokens N         longest segment in tokens (default 256)\n"
    "  --max-new-tokens N         cap per segment (default: 2 x its tokens + 64)\n"
    "  --keep-lines               one output line per input line, blank lines in place:\n"
    "                             lines are never joined, and a line break the model\n"
    "                             writes inside a translation becomes a space\n"
    "  --format F                 text, markdown, srt, vtt, html or docx: markup, code,\n"
    "                             timings and tags are kept, only the text is translated\n"
    "                             (default: by the file's extension .md .srt .vtt .html\n"
    "                             .docx, else text); a .docx keeps its runs' formatting,\n"
    "                             tables and images (write it with -o FILE.docx)\n"
    "  --glossary FILE            terms to use: CSV or TSV rows source,target (optionally\n"
    "                             source,target,source_lang,target_lang), or a .tbx file\n"
    "                             (needs --from); a segment holding terms gets the\n"
    "                             terminology prompt (HY-MT1.5, Hy-MT2)\n"
    "  --context N                give each segment the N segments before it as context\n"
    "                             (the context / background prompt; HY-MT1.5, Hy-MT2;\n"
    "                             0..16, default 0)\n"
    "  --style TEXT               Hy-MT2: the style prompt, e.g. --style formal\n"
    "  --preferences TEXT         Hy-MT2: the personalization prompt, one preference per\n"
    "                             line of TEXT (at most 16)\n"
    "  --delimiters               Hy-MT2: the prompt that keeps the text's delimiters\n"
    "  --data-format NAME         Hy-MT2: the structured-data prompt for NAME data (JSON,\n"
    "                             XML, YAML...): keys, tags and placeholders kept\n"
    "                             (one of these four at a time, without --glossary/--context)\n"
    HY_CLI_PROMPT_USAGE
    "  --tm FILE                  translation memory (SQLite, created if missing): segments\n"
    "                             found there are not translated again, new ones are stored\n"
    "                             ('hymt tm' imports and exports TMX)\n"
    "  --chimera MODEL            Hunyuan-MT-Chimera-7B beside the model (same device; weights\n"
    "                             identical to the model's are shared; a third of the KV\n"
    "                             memory is its): each segment is sampled --ensemble times\n"
    "                             (0.7, 20, 0.6, 1.05; seeds --seed+1..), then Chimera fuses\n"
    "                             the candidates into the translation (needs --from or a\n"
    "                             detected source; --temp etc. apply to the fusion)\n"
    "  --ensemble K               candidates per segment, 2..6 (default 6 with --chimera)\n"
    "  --timeout SEC              give up on a segment after SEC seconds (its original stays)\n"
    "  --queue redis://HOST[:PORT][/DB]\n"
    "                             no local model: the segments become jobs for the\n"
    "                             `hymt worker`s on that Redis (only -m's tokenizer is read)\n"
    "  --replace-invalid          replace invalid UTF-8 in the input instead of failing\n"
    HY_CLI_KV_USAGE
    "  --max-running N            segments decoded together (default 16; 64 on a GPU)\n"
    "  --max-queue N              segments waiting in the engine (default 1024)\n"
    "  --max-batch-tokens N       tokens per engine step (default 2048)\n"
    "  -t, --threads N            CPU threads (default: all online CPUs)\n"
    "  --device D                 auto (default: CUDA when a GPU is present), cpu or cuda\n"
    HY_CLI_QUANT_USAGE
    "  -h, --help                 this text\n"
    "\n"
    "languages: zh en fr pt es ja tr ru ar ko th it de vi ms id tl hi zh-Hant pl cs nl km my\n"
    "           fa gu ur te mr he bn ta uk bo kk mn ug yue (names and aliases work too)\n",
};

struct tr_opts {
    const char *model, *to, *from, *out, *device, *quant, *glossary, *format, *tm, *kv_type;
    const char *chimera, *queue;
    const char *prompt_style, *style, *prefs, *data_format;
    const struct cli_model *mp;
    int64_t threads, top_k, seed, max_seg, max_new, context, ensemble;
    double temp, top_p, rep, timeout;
    struct cli_engine_flags eng;
    bool greedy, keep_lines, replace, fp8_gemm, delimiters;
};

struct sink {
    FILE *f;
    const char *name;
};

static hy_status write_out(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    struct sink *k = ctx;
    if (n && fwrite(s, 1, n, k->f) != n)
        return hy_err_set(err, HY_E_IO, "cannot write %s: %s", k->name, strerror(errno));
    fflush(k->f);
    return HY_OK;
}

static void progress_bar(void *ctx, const struct hy_doc_progress *p)
{
    const char *file = ctx;
    double rate = p->elapsed_s > 0 ? (double)p->tokens_out / p->elapsed_s : 0;
    double eta = p->done ? p->elapsed_s * (double)(p->total - p->done) / (double)p->done : 0;
    int w = 30, fill = p->total ? (int)(w * p->done / p->total) : w;
    fprintf(stderr, "\r%s [%.*s%*s] %zu/%zu segments, %.1f tok/s, ETA %02d:%02d ", file, fill,
            "##############################", w - fill, "", p->done, p->total, rate,
            (int)eta / 60, (int)eta % 60);
    if (p->done == p->total)
        fputc('\n', stderr);
}

/* Reads a whole file ("-": standard input) of at most TR_MAX_INPUT bytes. */
static char *read_input(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "hymt translate: cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if ((long long)cap >= TR_MAX_INPUT) {
                fprintf(stderr, "hymt translate: %s is larger than %lld bytes\n", path,
                        TR_MAX_INPUT);
                free(buf);
                buf = NULL;
                break;
            }
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) {
            if (ferror(f)) {
                fprintf(stderr, "hymt translate: cannot read %s: %s\n", path, strerror(errno));
                free(buf);
                buf = NULL;
            }
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

/* Validates (or repairs) the input's UTF-8; returns the text to translate or NULL. */
static char *check_utf8(char *text, size_t *len, const char *path, bool replace)
{
    size_t bad = hy_utf8_validate(text, *len);
    if (bad == *len)
        return text;
    if (!replace) {
        fprintf(stderr, "hymt translate: %s: invalid UTF-8 at byte %zu (use --replace-invalid "
                        "to replace it with U+FFFD)\n", path, bad);
        free(text);
        return NULL;
    }
    char *fixed = malloc(*len * 3 + 1);
    if (fixed)
        *len = hy_utf8_repair(text, *len, fixed);
    free(text);
    return fixed;
}

static int translate_one(struct hy_engine *e, const struct hy_tok *tok, struct hy_doc_opts *o,
                         const char *path, const char *format, bool replace)
{
    enum hy_format f = format ? HY_FORMAT_TEXT : hy_format_from_path(path);
    bool docx = format ? !strcmp(format, "docx") : hy_docx_is_path(path);
    if (format && !docx)
        hy_format_from_name(format, &f, NULL); /* checked in parse_opts */
    size_t len = 0;
    char *text = read_input(path, &len);
    if (text && !docx) /* a .docx is a zip archive: its XML is checked inside */
        text = check_utf8(text, &len, path, replace);
    if (!text)
        return 1;
    struct hy_doc_result r;
    struct hy_err err = {{0}};
    bool tty = isatty(2) && hy_log_level >= HY_LOG_INFO;
    o->progress = tty ? progress_bar : NULL;
    o->progress_ctx = (void *)path;
    hy_status st = docx ? hy_docx_doc_translate(e, tok, text, len, o, &r, &err)
                        : hy_format_doc_translate(e, tok, f, text, len, o, &r, &err);
    free(text);
    if (st) {
        fprintf(stderr, "hymt translate: %s: %s\n", path, err.msg);
        return 1;
    }
    if (r.terms_left_out)
        fprintf(stderr, "hymt translate: %s: %zu glossary terms left out (more than %d in one "
                        "segment)\n", path, r.terms_left_out, HY_GLOSSARY_MAX_HITS);
    if (hy_log_level >= HY_LOG_INFO && o->ensemble)
        fprintf(stderr, "hymt translate: %s: ensemble of %d: %zu segments fused by Chimera, %zu "
                        "answered by the first candidate (fusion prompt too long)\n",
                strcmp(path, "-") ? path : "stdin", o->ensemble, r.fused, r.fuse_fallback);
    if (hy_log_level >= HY_LOG_INFO && r.tagged_runs)
        fprintf(stderr, "hymt translate: %s: %zu HTML runs sent with their inline tags as <sN> "
                        "markers (%zu segments); %zu came back without all of them (their tags "
                        "put around the run)\n", strcmp(path, "-") ? path : "stdin",
                r.tagged_runs, r.with_format, r.tags_moved);
    if (hy_log_level >= HY_LOG_INFO && o->tm)
        fprintf(stderr, "hymt translate: %s: translation memory: %zu segments found, %zu stored, "
                        "%zu failed lookups or stores\n", strcmp(path, "-") ? path : "stdin",
                r.tm_hits, r.tm_stored, r.tm_errors);
    if (hy_log_level >= HY_LOG_INFO && (o->glossary || o->context_segs > 0))
        fprintf(stderr, "hymt translate: %s: %zu segments with glossary terms, %zu with context "
                        "(%zu of them shortened to fit)\n", strcmp(path, "-") ? path : "stdin",
                r.with_terms, r.with_context, r.context_cut);
    if (hy_log_level >= HY_LOG_INFO)
        fprintf(stderr, "hymt translate: %s: %zu segments (%zu cut at the token limit, %zu kept "
                        "in the original), %lld tokens in, %lld out, %.2f s, %.1f tok/s, %s -> "
                        "%s\n", strcmp(path, "-") ? path : "stdin", r.segments, r.cut, r.failed,
                (long long)r.tokens_in, (long long)r.tokens_out, r.elapsed_s,
                r.elapsed_s > 0 ? (double)r.tokens_out / r.elapsed_s : 0.0,
                r.src ? r.src->code : "auto", o->tgt->code);
    return r.failed ? 1 : 0;
}

static int parse_opts(struct tr_opts *o, int argc, char **argv, const char **files, int *n_files)
{
    struct cli_opt opts[] = {
        {"m|model", CLI_STR, &o->model, 0, 0, false},
        {"to", CLI_STR, &o->to, 0, 0, false},
        {"from", CLI_STR, &o->from, 0, 0, false},
        {"o|output", CLI_STR, &o->out, 0, 0, false},
        {"greedy", CLI_FLAG, &o->greedy, 0, 0, false},
        {"temp", CLI_REAL, &o->temp, 0, 100, false},
        {"top-k", CLI_INT, &o->top_k, 0, 1 << 24, false},
        {"top-p", CLI_REAL, &o->top_p, 1e-6, 1, false},
        {"repetition-penalty", CLI_REAL, &o->rep, 1e-3, 100, false},
        {"seed", CLI_INT, &o->seed, 0, 9007199254740991.0, false},
        {"max-seg-tokens", CLI_INT, &o->max_seg, 8, 16384, false},
        {"max-new-tokens", CLI_INT, &o->max_new, 1, 1 << 20, false},
        {"keep-lines", CLI_FLAG, &o->keep_lines, 0, 0, false},
        {"timeout", CLI_REAL, &o->timeout, 0, 1e7, false},
        {"glossary", CLI_STR, &o->glossary, 0, 0, false},
        {"format", CLI_STR, &o->format, 0, 0, false},
        {"tm", CLI_STR, &o->tm, 0, 0, false},
        {"context", CLI_INT, &o->context, 0, 16, false},
        {"chimera", CLI_STR, &o->chimera, 0, 0, false},
        {"queue", CLI_STR, &o->queue, 0, 0, false},
        {"ensemble", CLI_INT, &o->ensemble, HY_DOC_MIN_ENSEMBLE, HY_DOC_MAX_ENSEMBLE, false},
        {"replace-invalid", CLI_FLAG, &o->replace, 0, 0, false},
        {"prompt-style", CLI_STR, &o->prompt_style, 0, 0, false},
        {"style", CLI_STR, &o->style, 0, 0, false},
        {"preferences", CLI_STR, &o->prefs, 0, 0, false},
        {"delimiters", CLI_FLAG, &o->delimiters, 0, 0, false},
        {"data-format", CLI_STR, &o->data_format, 0, 0, false},
        CLI_ENGINE_OPTS(&o->eng),
        CLI_LOAD_OPTS(o),
    };
    int r = cli_parse(&cmd, argc, argv, opts, sizeof opts / sizeof opts[0], files, TR_MAX_FILES,
                      n_files);
    if (r)
        return r;
    if (!o->model)
        return cli_fail(&cmd, "-m MODEL is required");
    if (!o->to)
        return cli_fail(&cmd, "--to LANG is required");
    if (o->ensemble && !o->chimera)
        return cli_fail(&cmd, "--ensemble needs --chimera MODEL (the model that fuses the "
                              "candidates)");
    if (o->chimera && o->tm)
        return cli_fail(&cmd, "--chimera: an ensemble does not use the translation memory "
                              "(--tm)");
    enum hy_format f;
    struct hy_err err = {{0}};
    if (o->format && strcmp(o->format, "docx") && hy_format_from_name(o->format, &f, &err))
        return cli_fail(&cmd, "--format: %s (or docx)", err.msg);
    if (cli_check_prompt_style(&cmd, o->prompt_style))
        return CLI_ERR;
    return cli_check_device_quant(&cmd, o->device, o->quant);
}

/* Loads --glossary FILE; its language columns, if any, must agree with --to and --from. */
static int load_glossary(const char *path, const struct hy_doc_opts *d, struct hy_glossary **g)
{
    size_t len = 0;
    char *text = read_input(path, &len);
    if (!text)
        return 1;
    struct hy_err err = {{0}};
    size_t n = strlen(path), skipped = 0;
    bool tbx = n > 4 && !strcasecmp(path + n - 4, ".tbx");
    hy_status st = hy_glossary_create(g, &err);
    if (!st && tbx && !d->src)
        st = hy_err_set(&err, HY_E_INVAL, "a TBX glossary needs --from (the language of its "
                                          "source terms)");
    else if (!st && tbx)
        st = hy_glossary_parse_tbx(*g, text, len, d->src->code, d->tgt->code, &skipped, &err);
    else if (!st)
        st = hy_glossary_parse(*g, text, len, HY_GLOSSARY_AUTO, &err);
    free(text);
    if (!st && skipped && hy_log_level >= HY_LOG_INFO)
        fprintf(stderr, "hymt translate: %s: %zu TBX entries without a %s and a %s term skipped\n",
                path, skipped, d->src->code, d->tgt->code);
    if (st) {
        fprintf(stderr, "hymt translate: %s: %s\n", path, err.msg);
        return 1;
    }
    const char *src, *tgt;
    hy_glossary_langs(*g, &src, &tgt);
    const struct hy_lang *ls = *src ? hy_lang_find(src) : NULL, *lt = *tgt ? hy_lang_find(tgt) : NULL;
    if ((*src && !ls) || (*tgt && !lt)) {
        fprintf(stderr, "hymt translate: %s: unknown language '%s'\n", path, *src && !ls ? src : tgt);
        return 1;
    }
    if ((lt && lt != d->tgt) || (ls && d->src && ls != d->src)) {
        fprintf(stderr, "hymt translate: %s: a glossary for %s -> %s, not %s -> %s\n", path, src,
                tgt, d->src ? d->src->code : "auto", d->tgt->code);
        return 1;
    }
    return 0;
}

/* Resolves a language name; on failure prints the valid codes. */
static const struct hy_lang *lang_or_fail(const char *flag, const char *name)
{
    const struct hy_lang *l = hy_lang_find(name);
    if (!l) {
        size_t n = hy_lang_list(NULL, 0) + 1; /* the whole list, however long the table */
        char *list = malloc(n);
        if (list)
            hy_lang_list(list, n);
        cli_fail(&cmd, "%s: unknown language '%s'; valid: %s", flag, name,
                 list ? list : "(out of memory listing them)");
        free(list);
    }
    return l;
}

/* --preferences TEXT split at its line breaks (empty lines skipped) into prefs, in place;
 * the count, or -1 (message printed) for more than HY_PROMPT_MAX_PREFS. */
static int split_prefs(char *text, const char **prefs)
{
    int n = 0;
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[len - 1] = '\0';
        if (!*line)
            continue;
        if (n == HY_PROMPT_MAX_PREFS)
            return cli_fail(&cmd, "--preferences: more than %d lines", HY_PROMPT_MAX_PREFS), -1;
        prefs[n++] = line;
    }
    return n;
}

/* The sampling flags given over the model's defaults (a flag not given is negative). */
static struct hy_sampler_params sampling(const struct tr_opts *o,
                                         const struct hy_prompt_profile *p)
{
    struct hy_sampler_params sp = p->sampling;
    if (o->temp >= 0)
        sp.temperature = (float)o->temp;
    if (o->greedy)
        sp.temperature = 0.0f;
    if (o->top_k >= 0)
        sp.top_k = (int32_t)o->top_k;
    if (o->top_p >= 0)
        sp.top_p = (float)o->top_p;
    if (o->rep >= 0)
        sp.repetition_penalty = (float)o->rep;
    sp.seed = (uint64_t)o->seed;
    return sp;
}

static int run(const struct tr_opts *o, struct hy_doc_opts *d, const char **files, int n_files)
{
    struct hy_err err = {{0}};
    struct hy_engine_params ep;
    struct cli_engine_flags eng = o->eng;
    if (cli_engine_params(&cmd, &eng, &ep))
        return 2;
    struct cli_stack stk;
    memset(&stk, 0, sizeof stk);
    struct cli_queue_front qf = {0};
    struct hy_prompt_profile prompt;
    hy_status st = HY_OK;
    if (o->queue && o->chimera)
        st = hy_err_set(&err, HY_E_INVAL, "--chimera runs locally: not with --queue");
    else if (o->queue) /* the segments become jobs for the queue's workers */
        st = cli_queue_front_open(&qf, o->queue, o->model, &ep, 0, &err);
    else
        st = cli_stack_load(&stk, o->model, o->chimera, o->device, (int)o->threads, o->quant,
                            o->fp8_gemm, o->kv_type, &eng, &ep, &err);
    if (!st && o->queue) {
        stk.e = qf.e;
        stk.tok = qf.tok;
    }
    if (!st) /* a queue's workers run -m's model: its prompts either way */
        st = cli_prompt_profile(o->mp, o->prompt_style, stk.tok, &prompt, &err);
    if (!st) {
        d->prompt = &prompt.kind;
        d->sampling = sampling(o, &prompt);
    }
    int rc = 1;
    if (st) {
        fprintf(stderr, "hymt translate: %s\n", err.msg);
    } else {
        struct sink k = {stdout, "standard output"};
        if (o->out && !(k.f = fopen(o->out, "wb"))) {
            fprintf(stderr, "hymt translate: cannot write %s: %s\n", o->out, strerror(errno));
        } else {
            k.name = o->out ? o->out : k.name;
            d->write = write_out;
            d->write_ctx = &k;
            d->chimera = stk.ce;
            d->chimera_tok = stk.ctok;
            rc = 0;
            for (int i = 0; i < (n_files ? n_files : 1); i++)
                rc |= translate_one(stk.e, stk.tok, d, n_files ? files[i] : "-", o->format,
                                    o->replace);
            if (o->out && fclose(k.f) != 0) {
                fprintf(stderr, "hymt translate: cannot write %s: %s\n", o->out, strerror(errno));
                rc = 1;
            }
        }
    }
    if (o->queue) {
        cli_queue_front_close(&qf);
        return rc;
    }
    cli_stack_free(&stk);
    return rc;
}

int cmd_translate(int argc, char **argv)
{
    /* sampling flags not given stay negative: the model's defaults fill them (run) */
    struct tr_opts o = {.from = "auto", .device = "auto", .temp = -1, .top_k = -1, .top_p = -1,
                        .rep = -1};
    const char *files[TR_MAX_FILES];
    int n_files = 0;
    int r = parse_opts(&o, argc, argv, files, &n_files);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    static struct cli_model mp;
    if (cli_model_resolve(&cmd, o.model, &mp))
        return 1;
    o.model = mp.path;
    static struct cli_model cp;
    if (o.chimera && cli_model_resolve(&cmd, o.chimera, &cp))
        return 1;
    if (o.chimera)
        o.chimera = cp.path;
    o.mp = &mp;
    struct hy_doc_opts d = {0};
    d.ensemble = o.chimera ? (o.ensemble ? (int)o.ensemble : HY_DOC_MAX_ENSEMBLE) : 0;
    if (!(d.tgt = lang_or_fail("--to", o.to)))
        return 2;
    if (strcmp(o.from, "auto") && !(d.src = lang_or_fail("--from", o.from)))
        return 2;
    d.max_seg_tokens = (int)o.max_seg;
    d.max_new_tokens = (int)o.max_new;
    d.keep_lines = o.keep_lines;
    d.timeout_s = o.timeout;
    d.context_segs = (int)o.context;
    const char *prefs[HY_PROMPT_MAX_PREFS];
    struct hy_prompt_instr instr = {o.style, prefs, 0, o.delimiters, o.data_format};
    char *pref_text = o.prefs ? strdup(o.prefs) : NULL;
    int np = pref_text ? split_prefs(pref_text, prefs) : 0;
    if (np < 0 || (o.prefs && !pref_text)) {
        free(pref_text);
        return np < 0 ? 2 : 1;
    }
    instr.n_prefs = (size_t)np;
    d.instr = &instr;
    struct hy_glossary *g = NULL;
    if (o.glossary && load_glossary(o.glossary, &d, &g)) {
        hy_glossary_destroy(g);
        free(pref_text);
        return 1;
    }
    d.glossary = g;
    struct hy_tm *tm = NULL;
    char model_name[256];
    if (o.tm) {
        struct hy_err err = {{0}};
        if (hy_tm_open(&tm, o.tm, &err)) {
            fprintf(stderr, "hymt translate: %s\n", err.msg);
            hy_glossary_destroy(g);
            free(pref_text);
            return 1;
        }
        /* the checkpoint's folder (or file) name, and the load-time quantization */
        size_t n = strlen(o.model);
        while (n > 1 && o.model[n - 1] == '/')
            n--;
        size_t b = n;
        while (b > 0 && o.model[b - 1] != '/')
            b--;
        snprintf(model_name, sizeof model_name, "%.*s%s%s", (int)(n - b > 200 ? 200 : n - b),
                 o.model + b, o.quant ? "+" : "", o.quant ? o.quant : "");
        d.tm = tm;
        d.tm_model = model_name;
    }
    r = run(&o, &d, files, n_files);
    hy_tm_close(tm);
    hy_glossary_destroy(g);
    free(pref_text);
    return r;
}
