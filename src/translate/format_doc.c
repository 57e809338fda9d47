/* format_doc.c: a formatted document through the engine (hy_format_doc_translate, contract
 * in format.h). The runs go to hy_doc_translate as one document, each apart from the next
 * by a blank line and with keep_lines on: the segmenter never joins across a line break,
 * translations come back without line breaks of their own, and the separators are kept,
 * so the output splits at its blank lines into exactly the runs' translations. Markdown
 * and HTML runs are reflowed first (their line breaks are soft: a wrapped paragraph is
 * one text to translate, and comes back on one line); subtitle cues keep their lines.
 * With inline tags (HTML on a model with the formatted-text prompt) a run's formatting
 * tags travel as <sN> markers (format_tags.c): doc.h gives a segment holding markers the
 * formatted-text prompt, and finish strips its <target> wrappers and puts the tags back. */
#include "translate/format_impl.h"
#include "translate/prompt_ext.h"

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
    if (!n)
        return HY_OK;
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

struct hy_format_doc {
    enum hy_format f;
    const char *text; /* the document (borrowed) */
    size_t len;
    struct hy_format_run *runs;
    size_t n;
    struct hy_format_tags **tags; /* [n] with inline tags: run i's tags (NULL: none) */
    size_t tagged, moved;         /* runs sent with markers; runs whose tags were moved */
    struct buf in;    /* the runs as one plain document */
};

void hy_format_doc_free(struct hy_format_doc *fd)
{
    if (!fd)
        return;
    for (size_t i = 0; fd->tags && i < fd->n; i++)
        hy_format_tags_free(fd->tags[i]);
    free(fd->tags);
    free(fd->runs);
    free(fd->in.p);
    free(fd);
}

/* Appends run r (with its tags, or NULL) to fd. */
static hy_status push_run(struct hy_format_doc *fd, size_t *cap, struct hy_format_run r,
                          struct hy_format_tags *tags, struct hy_err *err)
{
    if (fd->n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        struct hy_format_run *p = realloc(fd->runs, c * sizeof *p);
        if (p)
            fd->runs = p;
        struct hy_format_tags **q = p ? realloc(fd->tags, c * sizeof *q) : NULL;
        if (!q) {
            hy_format_tags_free(tags);
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        }
        fd->tags = q;
        *cap = c;
    }
    fd->runs[fd->n] = r;
    fd->tags[fd->n++] = tags;
    return HY_OK;
}

/* HTML runs with their inline tags: each run of the inline-tags split is one run with
 * markers when its tags pair, else its pieces between tags (the plain split's runs); a
 * run holding only tags is markup. Runs are added to fd with their marker texts in in. */
static hy_status split_tagged(struct hy_format_doc *fd, struct buf *marked, size_t **moff,
                              struct hy_err *err)
{
    struct fmt_runs k = {.t = fd->text, .len = fd->len, .inline_tags = true};
    fmt_split_html(&k);
    size_t cap = 0, mcap = 0;
    hy_status st = k.oom ? hy_err_set(err, HY_E_NOMEM, "out of memory") : HY_OK;
    for (size_t i = 0; i < k.n && !st; i++) {
        struct fmt_runs sub = {.t = fd->text, .len = fd->len};
        fmt_inline_tags(&sub, k.r[i].off, k.r[i].off + k.r[i].len, false);
        struct hy_format_tags *tags = NULL;
        char *mt = NULL;
        size_t mn = 0;
        struct hy_err e2 = {{0}};
        if (sub.oom)
            st = hy_err_set(err, HY_E_NOMEM, "out of memory");
        else if (sub.n > 1 || (sub.n == 1 && sub.r[0].len != k.r[i].len))
            hy_format_tags_encode(fd->text + k.r[i].off, k.r[i].len, &tags, &mt, &mn, &e2);
        if (tags) { /* one run, its text with markers */
            if (fd->n + 1 > mcap) {
                mcap = 2 * (fd->n + 1);
                size_t *p = realloc(*moff, (mcap + 1) * sizeof *p);
                if (!p)
                    st = hy_err_set(err, HY_E_NOMEM, "out of memory");
                else
                    *moff = p;
            }
            if (!st) {
                (*moff)[fd->n] = marked->n;
                st = to_buf(marked, mt, mn, err);
            }
            if (!st)
                st = push_run(fd, &cap, k.r[i], tags, err);
            else
                hy_format_tags_free(tags);
            fd->tagged += !st;
        } else {
            for (size_t j = 0; j < sub.n && !st; j++)
                st = push_run(fd, &cap, sub.r[j], NULL, err);
        }
        free(mt);
        free(sub.r);
    }
    free(k.r);
    return st;
}

hy_status hy_format_doc_prepare(enum hy_format f, const char *text, size_t len,
                                struct hy_format_doc **out, const char **plain,
                                size_t *plain_len, struct hy_err *err)
{
    return hy_format_doc_prepare_tags(f, text, len, false, out, plain, plain_len, err);
}

/* Run i's text for the plain document: the run, or its text with markers. */
static const char *run_text(const struct hy_format_doc *fd, const struct buf *marked,
                            const size_t *moff, size_t i, size_t *n)
{
    if (!fd->tags || !fd->tags[i]) {
        *n = fd->runs[i].len;
        return fd->text + fd->runs[i].off;
    }
    size_t end = marked->n;
    for (size_t j = i + 1; j < fd->n; j++)
        if (fd->tags[j]) {
            end = moff[j];
            break;
        }
    *n = end - moff[i];
    return marked->p + moff[i];
}

hy_status hy_format_doc_prepare_tags(enum hy_format f, const char *text, size_t len,
                                     bool inline_tags, struct hy_format_doc **out,
                                     const char **plain, size_t *plain_len, struct hy_err *err)
{
    *out = NULL;
    struct hy_format_doc *fd = calloc(1, sizeof *fd);
    if (!fd)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    *fd = (struct hy_format_doc){.f = f, .text = text, .len = len};
    bool reflow = f == HY_FORMAT_MARKDOWN || f == HY_FORMAT_HTML;
    struct buf marked = {0};
    size_t *moff = NULL;
    hy_status st = inline_tags && f == HY_FORMAT_HTML
                       ? split_tagged(fd, &marked, &moff, err)
                       : hy_format_split(f, text, len, &fd->runs, &fd->n, err);
    for (size_t i = 0; i < fd->n && !st; i++) {
        size_t rn = 0;
        const char *r = run_text(fd, &marked, moff, i, &rn);
        if (i)
            st = to_buf(&fd->in, RUN_SEP, 2, err);
        if (!st)
            st = add_run(&fd->in, r, rn, reflow, err);
    }
    free(marked.p);
    free(moff);
    if (st) {
        hy_format_doc_free(fd);
        return st;
    }
    *plain = fd->in.p ? fd->in.p : "";
    *plain_len = fd->in.n;
    *out = fd;
    return HY_OK;
}

size_t hy_format_doc_n_runs(const struct hy_format_doc *fd)
{
    return fd->n;
}

void hy_format_doc_tag_counts(const struct hy_format_doc *fd, size_t *tagged, size_t *moved)
{
    *tagged = fd->tagged;
    *moved = fd->moved;
}

/* s[0..n) without the formatted prompt's <target> and </target> (each segment of a run
 * answers in its own wrapper) into b. */
static hy_status unwrap(const char *s, size_t n, struct buf *b, struct hy_err *err)
{
    size_t at = 0, i = 0;
    hy_status st = HY_OK;
    while (i < n && !st) {
        size_t w = n - i >= 8 && !memcmp(s + i, "<target>", 8)    ? 8
                   : n - i >= 9 && !memcmp(s + i, "</target>", 9) ? 9
                                                                   : 0;
        if (!w) {
            i++;
            continue;
        }
        st = to_buf(b, s + at, i - at, err);
        i += w;
        at = i;
    }
    return st ? st : to_buf(b, s + at, n - at, err);
}

/* The tagged runs' translations with their tags put back (outs[i] then point into
 * the malloc'd dec[i]). */
static hy_status untag(struct hy_format_doc *fd, const char **outs, size_t *lens, char **dec,
                       struct hy_err *err)
{
    hy_status st = HY_OK;
    for (size_t i = 0; fd->tags && i < fd->n && !st; i++) {
        if (!fd->tags[i])
            continue;
        struct buf u = {0};
        bool moved = false;
        st = unwrap(outs[i], lens[i], &u, err);
        if (!st)
            st = hy_format_tags_decode(fd->tags[i], u.p ? u.p : "", u.n, &dec[i], &lens[i],
                                       &moved, err);
        free(u.p);
        if (!st)
            outs[i] = dec[i];
        fd->moved += moved;
    }
    return st;
}

/* The translated plain document split back at the separators: outs[i] point into t. */
static hy_status split_back(size_t runs, const char *t, size_t n, const char **outs,
                            size_t *lens, struct hy_err *err)
{
    size_t at = 0;
    for (size_t i = 0; i < runs; i++) {
        size_t end = n;
        for (size_t p = at; i + 1 < runs && p + 1 < n; p++)
            if (t[p] == '\n' && t[p + 1] == '\n') {
                end = p;
                break;
            }
        if (i + 1 < runs && end == n)
            return hy_err_set(err, HY_E_FORMAT, "the translation lost the boundary after run %zu",
                              i);
        outs[i] = t + at;
        lens[i] = end - at;
        at = end + 2;
    }
    return HY_OK;
}

hy_status hy_format_doc_finish(struct hy_format_doc *fd, const char *translated, size_t n,
                               char **out, size_t *out_len, struct hy_err *err)
{
    const char **outs = calloc(fd->n + 1, sizeof *outs);
    size_t *lens = calloc(fd->n + 1, sizeof *lens);
    char **dec = calloc(fd->n + 1, sizeof *dec);
    hy_status st = outs && lens && dec ? split_back(fd->n, translated, n, outs, lens, err)
                                       : hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (!st)
        st = untag(fd, outs, lens, dec, err);
    if (!st)
        st = hy_format_join(fd->text, fd->len, fd->runs, fd->n, outs, lens, out, out_len, err);
    for (size_t i = 0; dec && i < fd->n; i++)
        free(dec[i]);
    free(dec);
    free(outs);
    free(lens);
    return st;
}

hy_status hy_format_doc_runs(struct hy_engine *e, const struct hy_tok *tok,
                             const struct hy_doc_opts *o, struct hy_doc_result *res, bool reflow,
                             const char *const *texts, const size_t *lens, size_t n, char **outs,
                             size_t *out_lens, struct hy_err *err)
{
    struct buf in = {0}, tr = {0};
    const char **pieces = calloc(n + 1, sizeof *pieces);
    hy_status st = pieces ? HY_OK : hy_err_set(err, HY_E_NOMEM, "out of memory");
    memset(res, 0, sizeof *res);
    for (size_t i = 0; i < n && !st; i++) {
        if (i)
            st = to_buf(&in, RUN_SEP, 2, err);
        if (!st)
            st = add_run(&in, texts[i], lens[i], reflow, err);
    }
    struct hy_doc_opts po = *o;
    po.keep_lines = true;
    po.write = to_buf;
    po.write_ctx = &tr;
    if (!st && n)
        st = hy_doc_translate(e, tok, in.p ? in.p : "", in.n, &po, res, err);
    if (!st)
        st = split_back(n, tr.p ? tr.p : "", tr.n, pieces, out_lens, err);
    for (size_t i = 0; i < n && !st; i++) {
        if (!(outs[i] = malloc(out_lens[i] + 1)))
            st = hy_err_set(err, HY_E_NOMEM, "out of memory");
        else
            memcpy(outs[i], pieces[i], out_lens[i]);
    }
    free(pieces);
    free(in.p);
    free(tr.p);
    return st;
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
    struct hy_format_doc *fd = NULL;
    const char *plain = NULL;
    size_t plain_len = 0, n = 0;
    struct buf tr = {0};
    char *out = NULL;
    /* inline tags as <sN> markers where the model has the formatted-text prompt */
    struct hy_prompt_kind kind = {HY_PROMPT_7B, HY_PROMPT_GEN_MT1};
    if (o->prompt)
        kind = *o->prompt;
    else if (!hy_prompt_style_detect(tok, &kind.chat, NULL))
        kind.gen = hy_prompt_gen_of_style(kind.chat);
    bool tags = f == HY_FORMAT_HTML && hy_prompt_ext_has_formatted(kind.gen);
    hy_status st =
        hy_format_doc_prepare_tags(f, text, len, tags, &fd, &plain, &plain_len, err);
    struct hy_doc_opts po = *o;
    po.keep_lines = true;
    po.formatted = tags;
    po.write = to_buf;
    po.write_ctx = &tr;
    if (!st && fd->n)
        st = hy_doc_translate(e, tok, plain, plain_len, &po, res, err);
    if (!st)
        st = hy_format_doc_finish(fd, tr.p ? tr.p : "", tr.n, &out, &n, err);
    if (!st)
        hy_format_doc_tag_counts(fd, &res->tagged_runs, &res->tags_moved);
    if (!st)
        st = o->write(o->write_ctx, out, n, err);
    free(out);
    free(tr.p);
    hy_format_doc_free(fd);
    return st;
}
