/* make_gguf.c: `hymt make-test-model --gguf TYPE` for the hy_v3 presets (make_hyv3.h): the
 * checkpoint make_hyv3.c would write, as the GGUF file `hymt convert` makes of it, without
 * the checkpoint: the convert plan (convert_hyv3.c) finds each tensor in the writer's list
 * and its rows are generated on the fly (make_weights.h's streams, rounded to --dtype). */
#include "cli/make_hyv3.h"

#include "core/clock.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WHO "hymt make-test-model"

struct finder {
    const struct hy_st_wtensor *t;
    const struct hy_st_wtensor **sorted; /* by name, for bsearch */
    size_t n;
    uint64_t seed;
    int64_t hidden;
};

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const struct hy_st_wtensor *const *)a)->name,
                  (*(const struct hy_st_wtensor *const *)b)->name);
}

static bool find(void *ctx, const char *hf, struct hy_convert_part *out)
{
    const struct finder *f = ctx;
    const struct hy_st_wtensor key = {.name = hf}, *kp = &key;
    const struct hy_st_wtensor *const *hit = bsearch(&kp, f->sorted, f->n, sizeof *f->sorted,
                                                     by_name);
    if (!hit)
        return false;
    const struct hy_st_wtensor *t = *hit;
    const int64_t cols = t->shape[t->n_dims == 2 ? 1 : 0];
    *out = (struct hy_convert_part){t->dtype, t->n_dims, t->n_dims == 2 ? t->shape[0] : 1, cols,
                                    NULL, {0, 0, 0}};
    cli_mk_gen_init(&out->gen, t->name, t->n_dims, cols, f->seed, f->hidden);
    return true;
}

/* cfg from the config.json the safetensors writer would write (so both are one model). */
static hy_status make_config(struct hy_config *cfg, const struct hy_hyv3_shape *s,
                             enum hy_dtype dtype, struct hy_err *err)
{
    json_t *j = hy_hyv3_config(s, dtype, false, false);
    char *text = j ? json_dumps(j, JSON_REAL_PRECISION(17)) : NULL;
    json_decref(j);
    if (!text)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_status st = hy_config_parse(cfg, text, strlen(text), "the preset's config", err);
    free(text);
    return st;
}

static hy_status write_file(const struct hy_hyv3_shape *s, const char *tmp, const char *name,
                            struct finder *f, enum hy_dtype dtype, enum hy_convert_type type,
                            const char *tok_dir, int *n_tensors, struct hy_err *err)
{
    struct hy_config cfg;
    struct hy_convert_toks toks = {0};
    json_t *gen = hy_hyv3_gen_config(s);
    hy_status st = gen ? make_config(&cfg, s, dtype, err) : hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (!st && tok_dir)
        st = hy_convert_toks_open(&toks, tok_dir, err);
    if (!st && tok_dir && !toks.tok)
        st = hy_err_set(err, HY_E_NOTFOUND, "--tokenizer %s: no tokenizer.json there", tok_dir);
    if (!st && toks.tok && hy_tok_vocab_size(toks.tok) > s->vocab)
        st = hy_err_set(err, HY_E_RANGE, "--tokenizer %s: %d tokens, more than the model's "
                        "vocabulary of %lld", tok_dir, (int)hy_tok_vocab_size(toks.tok),
                        (long long)s->vocab);
    if (!st) {
        struct hy_convert_src src = {&cfg, toks.tok_json, toks.tok_config,
                                     toks.gen_config ? toks.gen_config : gen, toks.chat_template};
        st = hy_convert_hyv3_gguf(tmp, name, find, f, &src, toks.tok, type, WHO, n_tensors, err);
    }
    hy_convert_toks_close(&toks);
    json_decref(gen);
    return st;
}

int hy_hyv3_make_gguf(const struct hy_hyv3_shape *s, const char *path, uint64_t seed,
                      enum hy_dtype dtype, enum hy_convert_type type, const char *tok_dir)
{
    char tmp[4096], name[256];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid()) >= (int)sizeof tmp) {
        fprintf(stderr, WHO ": --out path too long\n");
        return 1;
    }
    const char *base = strrchr(path, '/');
    snprintf(name, sizeof name, "%s", base ? base + 1 : path);
    char *dot = strstr(name, ".gguf");
    if (dot && dot != name)
        *dot = 0;
    struct finder f = {.seed = seed, .hidden = s->hidden};
    struct hy_st_wtensor *t = NULL;
    char(*names)[HY_ST_MAX_NAME] = NULL;
    struct hy_err err = {{0}};
    hy_status st = HY_OK;
    if (!hy_hyv3_list(s, dtype, &t, &names, &f.n) ||
        !(f.sorted = malloc(f.n * sizeof *f.sorted)))
        st = hy_err_set(&err, HY_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < f.n; i++)
        f.sorted[i] = &t[i];
    if (!st)
        qsort(f.sorted, f.n, sizeof *f.sorted, by_name);
    f.t = t;
    const double t0 = hy_clock_now();
    int n_tensors = 0;
    if (!st)
        st = write_file(s, tmp, name, &f, dtype, type, tok_dir, &n_tensors, &err);
    if (!st && rename(tmp, path) != 0)
        st = hy_err_set(&err, HY_E_IO, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
    free(f.sorted);
    free(t);
    free(names);
    if (st) {
        unlink(tmp);
        fprintf(stderr, WHO ": %s\n", err.msg);
        return 1;
    }
    struct stat sb;
    double secs = hy_clock_now() - t0, gb = stat(path, &sb) == 0 ? (double)sb.st_size / 1e9 : 0;
    fprintf(stderr, WHO ": wrote %s (%d tensors, %.2f GB) in %.1f s (%.2f GB/s)\n", path,
            n_tensors, gb, secs, secs > 0 ? gb / secs : 0.0);
    return 0;
}
