/* format_doc.c: a formatted document through the engine (hy_format_doc_translate, contract
 * in format.h). The runs go to hy_doc_translate as one document, each apart from the next
 * by a blank line and with keep_lines on: the segmenter never joins across a line break,
 * translations come back without line breaks of their own, and the separators are kept,
 * so the output splits at its blank lines into exactly the runs' translations. Markdown
 * and HTML runs are reflowed first (their line breaks are soft: a wrapped paragraph is
 * one text to translate, and comes back on one line); subtitle cues keep their lines. */
#include "translate/format.h"

#include <stdlib.h>
#include <string.h>

#define RUN_SEP "\n\n"

struct buf {
    char *p;
    size_t n, cap;
};

static hy_status to_buf(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    struct buf *b = ctx;
    if (b->n + n > b->cap) {
        size_t cap = 2 * (b->n + n) + 4096;
        char *p = realloc(b->p, cap);
        if (!p)
            return hy_err_set(err, HY_E_NOMEM, "out of memory for the translation");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return HY_OK;
}

struct job {
    struct hy_engine *e;
    const struct hy_tok *tok;
    const struct hy_doc_opts *o;
    struct hy_doc_result *res;
    bool reflow; /* join a run's lines with a space (soft line breaks: markdown, html) */
};

/* Appends a run, with reflow each whitespace stretch holding a line break as one space. */
static hy_status add_run(struct buf *in, const char *s, size_t n, bool reflow,
                         struct hy_err *err)
{
    if (!reflow)
        return to_buf(in, s, n, err);
    hy_status st = HY_OK;
    for (size_t i = 0; i < n && !st;) {
        size_t j = i;
        bool nl = false;
        while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r'))
            nl |= s[j++] == '\n';
        if (j > i && nl) {
            st = to_buf(in, " ", 1, err);
            i = j;
            continue;
        }
        j = j > i ? j : i + 1;
        st = to_buf(in, s + i, j - i, err);
        i = j;
    }
    return st;
}

/* The translate callback: all runs as one document, split back at the separators. */
static hy_status translate_runs(void *ctx, const char *const *texts, const size_t *lens, size_t n,
                                char **outs, size_t *out_lens, struct hy_err *err)
{
    struct job *j = ctx;
    struct buf in = {0}, out = {0};
    hy_status st = HY_OK;
    for (size_t i = 0; i < n && !st; i++) {
        if (i)
            st = to_buf(&in, RUN_SEP, 2, err);
        if (!st)
            st = add_run(&in, texts[i], lens[i], j->reflow, err);
    }
    struct hy_doc_opts o = *j->o;
    o.keep_lines = true;
    o.write = to_buf;
    o.write_ctx = &out;
    if (!st)
        st = hy_doc_translate(j->e, j->tok, in.p ? in.p : "", in.n, &o, j->res, err);
    size_t at = 0;
    for (size_t i = 0; i < n && !st; i++) {
        size_t end = out.n;
        for (size_t p = at; i + 1 < n && p + 1 < out.n; p++)
            if (out.p[p] == '\n' && out.p[p + 1] == '\n') {
                end = p;
                break;
            }
        if (i + 1 < n && end == out.n) {
            st = hy_err_set(err, HY_E_FORMAT, "the translation lost the boundary after run %zu", i);
            break;
        }
        outs[i] = malloc(end - at ? end - at : 1);
        if (!outs[i]) {
            st = hy_err_set(err, HY_E_NOMEM, "out of memory");
            break;
        }
        memcpy(outs[i], out.p + at, end - at);
        out_lens[i] = end - at;
        at = end + 2;
    }
    free(in.p);
    free(out.p);
    return st;
}

hy_status hy_format_doc_runs(struct hy_engine *e, const struct hy_tok *tok,
                             const struct hy_doc_opts *o, struct hy_doc_result *res, bool reflow,
                             const char *const *texts, const size_t *lens, size_t n, char **outs,
                             size_t *out_lens, struct hy_err *err)
{
    struct job j = {e, tok, o, res, reflow};
    memset(res, 0, sizeof *res);
    return translate_runs(&j, texts, lens, n, outs, out_lens, err);
}

hy_status hy_format_doc_translate(struct hy_engine *e, const struct hy_tok *tok,
                                  enum hy_format f, const char *text, size_t len,
                                  const struct hy_doc_opts *o, struct hy_doc_result *res,
                                  struct hy_err *err)
{
    if (f == HY_FORMAT_TEXT)
        return hy_doc_translate(e, tok, text, len, o, res, err);
    memset(res, 0, sizeof *res);
    if (!o->write)
        return hy_err_set(err, HY_E_INVAL, "an output is required");
    struct job j = {e, tok, o, res, f == HY_FORMAT_MARKDOWN || f == HY_FORMAT_HTML};
    char *out = NULL;
    size_t n = 0;
    hy_status st = hy_format_translate(f, text, len, translate_runs, &j, &out, &n, err);
    if (!st)
        st = o->write(o->write_ctx, out, n, err);
    free(out);
    return st;
}
