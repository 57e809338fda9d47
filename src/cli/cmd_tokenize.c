/* cmd_tokenize.c: `hymt tokenize`: text on stdin -> token ids on stdout, or back with
 * --decode. For checking the tokenizer against HF tokenizers and for measuring it: the load
 * and encode times go to stderr at info level. */
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/load.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/utf8.h"
#include "tokenizer/tokenizer.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TOKENIZE_MAX_INPUT (256u << 20) /* bytes of stdin */

static const struct cli_cmd cmd = {
    "tokenize",
    "usage: hymt tokenize (--tokenizer FILE | -m MODEL) [options] < TEXT\n"
    "\n"
    "Reads all of standard input as one text and prints its token ids on stdout,\n"
    "space-separated, on one line. No BOS/EOS is added. Timings go to stderr.\n"
    "\n"
    "  --tokenizer FILE   a Hugging Face tokenizer.json (or a folder holding one)\n"
    "  -m, --model MODEL  a Hugging Face repo id (ORG/NAME[@REV], from the hub cache),\n"
    "                     checkpoint folder or GGUF file: its tokenizer\n"
    "  --special          recognise special (control) tokens written in the text;\n"
    "                     without it their characters are tokenized as plain text\n"
    "  --replace-invalid  replace invalid UTF-8 in the input by U+FFFD (default: error)\n"
    "  --decode           the reverse: read ids (separated by spaces, commas or\n"
    "                     newlines) and print their text, with no newline added\n"
    "  --skip-special     with --decode: leave special tokens out of the text\n"
    "  -h, --help         this text\n",
};

struct tok_opts {
    const char *tokenizer, *model;
    bool special, decode, replace_invalid, skip_special;
};

/* Reads all of stdin (at most TOKENIZE_MAX_INPUT bytes) into *out (NUL-terminated). */
static int read_stdin(char **out, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "hymt tokenize: out of memory\n");
            return 1;
        }
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (n > TOKENIZE_MAX_INPUT) {
            free(buf);
            fprintf(stderr, "hymt tokenize: input is larger than %u MiB\n",
                    TOKENIZE_MAX_INPUT >> 20);
            return 1;
        }
        if (got == 0)
            break;
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    if (ferror(stdin)) {
        fprintf(stderr, "hymt tokenize: reading stdin failed: %s\n", strerror(errno));
        free(buf);
        return 1;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

/* Parses ids separated by spaces, commas or newlines. */
static int parse_ids(const char *s, int32_t **ids, size_t *n)
{
    size_t cap = 1024, k = 0;
    int32_t *v = malloc(cap * sizeof *v);
    for (const char *p = s; v;) {
        while (*p && (isspace((unsigned char)*p) || *p == ','))
            p++;
        if (!*p)
            break;
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || x < 0 || x > INT32_MAX ||
            (*end && !isspace((unsigned char)*end) && *end != ',')) {
            fprintf(stderr,
                    "hymt tokenize: --decode: id %zu is not a non-negative integer: "
                    "'%.20s'\n",
                    k + 1, p);
            free(v);
            return 2;
        }
        if (k == cap) {
            int32_t *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv)
                free(v);
            v = nv;
            cap *= 2;
            if (!v)
                break;
        }
        v[k++] = (int32_t)x;
        p = end;
    }
    if (!v) {
        fprintf(stderr, "hymt tokenize: out of memory\n");
        return 1;
    }
    *ids = v;
    *n = k;
    return 0;
}

static int do_decode(const struct hy_tok *tok, const struct tok_opts *o, const char *in)
{
    int32_t *ids = NULL;
    size_t n = 0, cap = 0, got = 0;
    int rc = parse_ids(in, &ids, &n);
    if (rc)
        return rc == 2 ? 1 : rc;
    struct hy_err err = {{0}};
    char *out = NULL;
    hy_status s = HY_E_NOSPACE;
    while (s == HY_E_NOSPACE) {
        free(out);
        cap = got > cap ? got : 4 * n + 16;
        out = malloc(cap);
        s = out ? hy_tok_decode(tok, ids, n, o->skip_special, out, cap, &got, &err) : HY_E_NOMEM;
    }
    rc = 0;
    if (s) {
        fprintf(stderr, "hymt tokenize: %s\n", s == HY_E_NOMEM ? "out of memory" : err.msg);
        rc = 1;
    } else if (fwrite(out, 1, got, stdout) != got || fflush(stdout)) {
        fprintf(stderr, "hymt tokenize: write to stdout failed\n");
        rc = 1;
    }
    free(out);
    free(ids);
    return rc;
}

static int print_ids(const int32_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    if (fflush(stdout)) {
        fprintf(stderr, "hymt tokenize: write to stdout failed\n");
        return 1;
    }
    return 0;
}

static int do_encode(const struct hy_tok *tok, const struct tok_opts *o, char *in, size_t len,
                     double load_s)
{
    size_t bad = hy_utf8_validate(in, len);
    char *fixed = NULL;
    if (bad != len && !o->replace_invalid) {
        fprintf(stderr,
                "hymt tokenize: invalid UTF-8 at byte offset %zu (use "
                "--replace-invalid to replace it by U+FFFD)\n",
                bad);
        return 1;
    }
    if (bad != len) {
        if (!(fixed = malloc(3 * len))) {
            fprintf(stderr, "hymt tokenize: out of memory\n");
            return 1;
        }
        len = hy_utf8_repair(in, len, fixed);
        in = fixed;
    }
    struct hy_err err = {{0}};
    size_t cap = len + 16, n = 0;
    int32_t *ids = NULL;
    hy_status s = HY_E_NOSPACE;
    double t0 = hy_clock_now();
    while (s == HY_E_NOSPACE) {
        free(ids);
        cap = n > cap ? n : cap;
        ids = malloc(cap * sizeof *ids);
        s = ids ? hy_tok_encode(tok, in, len, o->special, ids, cap, &n, &err) : HY_E_NOMEM;
    }
    double t1 = hy_clock_now();
    int rc = 1;
    if (s)
        fprintf(stderr, "hymt tokenize: %s\n", s == HY_E_NOMEM ? "out of memory" : err.msg);
    else
        rc = print_ids(ids, n);
    if (!s)
        HY_LOGI("tokenizer loaded in %.1f ms; encoded %zu bytes into %zu tokens in %.1f ms "
                "(%.2f MB/s, %.2f bytes/token)",
                load_s * 1e3, len, n, (t1 - t0) * 1e3, len / (t1 - t0) / 1e6,
                n ? (double)len / n : 0.0);
    free(ids);
    free(fixed);
    return rc;
}

int cmd_tokenize(int argc, char **argv)
{
    struct tok_opts o = {0};
    struct cli_opt opts[] = {
        {"tokenizer", CLI_STR, &o.tokenizer, 0, 0, false},
        {"m|model", CLI_STR, &o.model, 0, 0, false},
        {"special", CLI_FLAG, &o.special, 0, 0, false},
        {"decode", CLI_FLAG, &o.decode, 0, 0, false},
        {"replace-invalid", CLI_FLAG, &o.replace_invalid, 0, 0, false},
        {"skip-special", CLI_FLAG, &o.skip_special, 0, 0, false},
    };
    const char *pos[1];
    int n_pos;
    int r = cli_parse(&cmd, argc, argv, opts, sizeof opts / sizeof opts[0], pos, 0, &n_pos);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    if (!o.tokenizer == !o.model)
        return cli_fail(&cmd, "give exactly one of --tokenizer FILE and -m MODEL");
    if (o.decode && (o.special || o.replace_invalid))
        return cli_fail(&cmd, "--special and --replace-invalid apply to encoding, not --decode");
    if (!o.decode && o.skip_special)
        return cli_fail(&cmd, "--skip-special applies to --decode");
    static struct cli_model mp;
    if (o.model && cli_model_resolve(&cmd, o.model, &mp))
        return 1;
    if (o.model)
        o.model = mp.path;
    struct hy_err err = {{0}};
    struct hy_tok *tok = NULL;
    double t0 = hy_clock_now();
    if (hy_tok_load(&tok, o.tokenizer ? o.tokenizer : o.model, &err)) {
        fprintf(stderr, "hymt tokenize: %s\n", err.msg);
        return 1;
    }
    double load_s = hy_clock_now() - t0;
    char *in = NULL;
    size_t len = 0;
    int rc = read_stdin(&in, &len);
    if (!rc)
        rc = o.decode ? do_decode(tok, &o, in) : do_encode(tok, &o, in, len, load_s);
    free(in);
    hy_tok_destroy(tok);
    return rc;
}
