/* compat.c: texts of the compatible translation routes as one job (compat.h). */
#include "server/compat.h"

#include "core/utf8.h"
#include "translate/prompt.h"

#include <stdlib.h>
#include <string.h>

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n\f\v", s[i]))
            return false;
    return true;
}

/* Text i's runs: the format's, or for plain text the whole text (trimmed runs are the
 * format module's rule; plain text keeps its whitespace, which the document path keeps). */
static hy_status split_one(struct hy_compat *c, size_t i, enum hy_format f, struct hy_err *err)
{
    const char *t = c->buf + c->off[i];
    if (f != HY_FORMAT_TEXT)
        return hy_format_split(f, t, c->len[i], &c->runs[i], &c->n_runs[i], err);
    if (blank(t, c->len[i]))
        return HY_OK;
    c->runs[i] = malloc(sizeof *c->runs[i]);
    if (!c->runs[i])
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    c->runs[i][0] = (struct hy_format_run){0, c->len[i]};
    c->n_runs[i] = 1;
    return HY_OK;
}

hy_status hy_compat_plan(struct hy_compat *c, json_t *texts, enum hy_format f, int n_var,
                         const struct hy_sampler_params *first, struct hy_err *err)
{
    memset(c, 0, sizeof *c);
    const size_t n = json_array_size(texts);
    size_t bytes = 1;
    for (size_t i = 0; i < n; i++)
        bytes += json_string_length(json_array_get(texts, i)) + 1;
    c->n_texts = n;
    c->n_var = n_var;
    c->buf = malloc(bytes);
    c->off = calloc(n + 1, sizeof *c->off);
    c->len = calloc(n + 1, sizeof *c->len);
    c->runs = calloc(n + 1, sizeof *c->runs);
    c->n_runs = calloc(n + 1, sizeof *c->n_runs);
    c->first = calloc(n + 1, sizeof *c->first);
    if (!c->buf || !c->off || !c->len || !c->runs || !c->n_runs || !c->first)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    for (size_t i = 0, off = 0; i < n; i++) {
        json_t *s = json_array_get(texts, i);
        c->off[i] = off;
        c->len[i] = json_string_length(s);
        memcpy(c->buf + off, json_string_value(s), c->len[i] + 1);
        off += c->len[i] + 1;
        hy_status st = split_one(c, i, f, err);
        if (st)
            return st;
        c->first[i] = c->runs_total;
        c->runs_total += c->n_runs[i];
    }
    if (c->runs_total * (size_t)n_var > HY_TR_MAX_ITEMS)
        return hy_err_set(err, HY_E_INVAL, "the texts hold %zu pieces of text to translate (x%d "
                          "variants); the limit is %d", c->runs_total, n_var, HY_TR_MAX_ITEMS);
    const size_t items = c->runs_total * (size_t)n_var;
    c->item_text = calloc(items + 1, sizeof *c->item_text);
    c->item_len = calloc(items + 1, sizeof *c->item_len);
    c->samplings = calloc(items + 1, sizeof *c->samplings);
    if (!c->item_text || !c->item_len || !c->samplings)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    struct hy_sampler_params other = {1.0f, 0, 0.95f, first->repetition_penalty, 0};
    for (int v = 0; v < n_var; v++)
        for (size_t i = 0; i < n; i++)
            for (size_t r = 0; r < c->n_runs[i]; r++) {
                size_t k = (size_t)v * c->runs_total + c->first[i] + r;
                c->item_text[k] = c->buf + c->off[i] + c->runs[i][r].off;
                c->item_len[k] = c->runs[i][r].len;
                c->samplings[k] = v ? other : *first;
                c->samplings[k].seed = first->seed + (uint64_t)v;
            }
    return HY_OK;
}

void hy_compat_job(const struct hy_compat *c, struct hy_tr_job *job)
{
    job->texts = c->item_text;
    job->lens = c->item_len;
    job->n = c->runs_total * (size_t)c->n_var;
    job->samplings = c->samplings;
}

hy_status hy_compat_result(const struct hy_compat *c, const char *const *outs,
                           const size_t *lens, size_t i, int v, char **out, size_t *out_len,
                           struct hy_err *err)
{
    size_t k = (size_t)v * c->runs_total + c->first[i];
    return hy_format_join(c->buf + c->off[i], c->len[i], c->runs[i], c->n_runs[i],
                          c->n_runs[i] ? outs + k : NULL, c->n_runs[i] ? lens + k : NULL, out,
                          out_len, err);
}

const struct hy_lang *hy_compat_source(const struct hy_compat *c,
                                       const struct hy_lang *const *srcs, size_t i)
{
    for (size_t r = 0; r < c->n_runs[i]; r++)
        if (srcs[c->first[i] + r])
            return srcs[c->first[i] + r];
    return NULL;
}

void hy_compat_free(struct hy_compat *c)
{
    for (size_t i = 0; c->runs && i < c->n_texts; i++)
        free(c->runs[i]);
    free(c->runs);
    free(c->buf);
    free(c->off);
    free(c->len);
    free(c->n_runs);
    free(c->first);
    free(c->item_text);
    free(c->item_len);
    free(c->samplings);
    memset(c, 0, sizeof *c);
}

bool hy_compat_model_has(struct hy_server *s, const struct hy_lang *l)
{
    if (!atomic_load(&s->ready)) /* s->prompt is written before ready is set */
        return true;
    return hy_lang_gen_has(hy_prompt_gen_name(s->prompt.kind.gen), l);
}
