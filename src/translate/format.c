/* format.c: format names, the run list, reassembly and the callback driver (contract in
 * format.h; the splitters are format_md.c, format_sub.c and format_html.c). */
#include "translate/format_impl.h"

#include "translate/text.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <utf8proc.h>

static const char *const NAMES[] = {"text", "markdown", "srt", "vtt", "html"};

const char *hy_format_name(enum hy_format f)
{
    return (size_t)f < sizeof NAMES / sizeof NAMES[0] ? NAMES[f] : "?";
}

hy_status hy_format_from_name(const char *name, enum hy_format *f, struct hy_err *err)
{
    static const struct {
        const char *name;
        enum hy_format f;
    } alias[] = {{"text", HY_FORMAT_TEXT}, {"txt", HY_FORMAT_TEXT},
                 {"markdown", HY_FORMAT_MARKDOWN}, {"md", HY_FORMAT_MARKDOWN},
                 {"srt", HY_FORMAT_SRT}, {"vtt", HY_FORMAT_VTT}, {"webvtt", HY_FORMAT_VTT},
                 {"html", HY_FORMAT_HTML}, {"htm", HY_FORMAT_HTML}};
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcasecmp(name, alias[i].name)) {
            *f = alias[i].f;
            return HY_OK;
        }
    return hy_err_set(err, HY_E_INVAL, "unknown format '%.40s' (text, markdown, srt, vtt, html)",
                      name);
}

enum hy_format hy_format_from_path(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash))
        return HY_FORMAT_TEXT;
    dot++;
    if (!strcasecmp(dot, "markdown"))
        return HY_FORMAT_MARKDOWN;
    if (!strcasecmp(dot, "xhtml"))
        return HY_FORMAT_HTML;
    enum hy_format f;
    if (strcasecmp(dot, "txt") && hy_format_from_name(dot, &f, NULL) == HY_OK)
        return f;
    return HY_FORMAT_TEXT;
}

/* ---- the run list ---- */

/* Whether s holds a letter outside character references (&amp; &#38; have none). */
static bool has_letter(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int l;
        if (s[i] == '&') {
            size_t j = i + 1;
            while (j < n && j - i < 32 &&
                   (((s[j] | 0x20) >= 'a' && (s[j] | 0x20) <= 'z') ||
                    (s[j] >= '0' && s[j] <= '9') || s[j] == '#'))
                j++;
            if (j < n && s[j] == ';' && j > i + 1) {
                i = j + 1;
                continue;
            }
        }
        uint32_t c = text_decode(s + i, n - i, &l);
        utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
        if (c != TEXT_BAD && k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO)
            return true;
        i += (size_t)l;
    }
    return false;
}

/* Adds t[a..b) trimmed, if it has a letter. */
static void add(struct fmt_runs *k, size_t a, size_t b)
{
    const unsigned char *t = (const unsigned char *)k->t;
    int l;
    while (a < b && text_is_space(text_decode(t + a, b - a, &l)))
        a += (size_t)l;
    while (b > a) {
        size_t c = b - 1;
        while (c > a && (t[c] & 0xC0) == 0x80)
            c--;
        if (!text_is_space(text_decode(t + c, b - c, &l)) || c + (size_t)l != b)
            break;
        b = c;
    }
    if (a >= b || !has_letter(t + a, b - a))
        return;
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 64;
        struct hy_format_run *r = realloc(k->r, cap * sizeof *r);
        if (!r) {
            k->oom = true;
            return;
        }
        k->r = r;
        k->cap = cap;
    }
    HY_ASSERT(k->n == 0 || k->r[k->n - 1].off + k->r[k->n - 1].len <= a);
    k->r[k->n++] = (struct hy_format_run){a, b - a};
}

void fmt_line(const struct fmt_runs *k, size_t a, size_t *end, size_t *next)
{
    const char *nl = memchr(k->t + a, '\n', k->len - a);
    size_t e = nl ? (size_t)(nl - k->t) : k->len;
    *next = nl ? e + 1 : k->len;
    if (e > a && k->t[e - 1] == '\r')
        e--;
    *end = e;
}

bool fmt_blank(const struct fmt_runs *k, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (k->t[i] != ' ' && k->t[i] != '\t' && k->t[i] != '\r')
            return false;
    return true;
}

void fmt_region(struct fmt_runs *k, size_t a, size_t b)
{
    size_t start = a;
    for (size_t p = a; p < b;) {
        size_t end, next;
        fmt_line(k, p, &end, &next);
        if (end > b)
            end = b;
        if (fmt_blank(k, p, end) && p > a) { /* a blank line inside: the run ends before */
            add(k, start, p);
            start = next < b ? next : b;
        }
        p = next;
    }
    add(k, start, b);
}

/* A character that may follow '<' in a tag: a letter, '/', '!', '?', or a digit (WebVTT's
 * <00:01.000> timestamps). */
static bool tag_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '/' || c == '!' || c == '?';
}

void fmt_inline_tags(struct fmt_runs *k, size_t a, size_t b, bool braces)
{
    const char *t = k->t;
    size_t start = a;
    for (size_t p = a; p < b; p++) {
        size_t close = 0;
        if (t[p] == '<' && p + 1 < b && tag_start(t[p + 1])) {
            const char *g = memchr(t + p, '>', b - p);
            close = g ? (size_t)(g - t) + 1 : 0;
        } else if (braces && t[p] == '{' && p + 1 < b && t[p + 1] == '\\') {
            const char *g = memchr(t + p, '}', b - p);
            close = g ? (size_t)(g - t) + 1 : 0;
        }
        if (close) {
            fmt_region(k, start, p);
            start = close;
            p = close - 1;
        }
    }
    fmt_region(k, start, b);
}

/* ---- split, join, translate ---- */

hy_status hy_format_split(enum hy_format f, const char *text, size_t len,
                          struct hy_format_run **runs, size_t *n, struct hy_err *err)
{
    struct fmt_runs k = {.t = text, .len = len};
    *runs = NULL;
    *n = 0;
    switch (f) {
    case HY_FORMAT_TEXT:
        fmt_region(&k, 0, len);
        if (k.n > 1) { /* text is one run, blank lines and all: doc.h segments it */
            size_t end = k.r[k.n - 1].off + k.r[k.n - 1].len;
            k.r[0].len = end - k.r[0].off;
            k.n = 1;
        }
        break;
    case HY_FORMAT_MARKDOWN: fmt_split_markdown(&k); break;
    case HY_FORMAT_SRT: fmt_split_srt(&k); break;
    case HY_FORMAT_VTT: fmt_split_vtt(&k); break;
    case HY_FORMAT_HTML: fmt_split_html(&k); break;
    default:
        return hy_err_set(err, HY_E_INVAL, "unknown format %d", (int)f);
    }
    if (k.oom) {
        free(k.r);
        return hy_err_set(err, HY_E_NOMEM, "format: out of memory for the runs");
    }
    *runs = k.r;
    *n = k.n;
    return HY_OK;
}

hy_status hy_format_join(const char *text, size_t len, const struct hy_format_run *runs,
                         size_t n, const char *const *outs, const size_t *out_lens, char **out,
                         size_t *out_len, struct hy_err *err)
{
    size_t need = len, at = 0;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].off < at || runs[i].len > len - runs[i].off)
            return hy_err_set(err, HY_E_INVAL, "format: run %zu is outside the text", i);
        at = runs[i].off + runs[i].len;
        if (outs && outs[i])
            need = need - runs[i].len + out_lens[i];
    }
    char *o = malloc(need ? need : 1);
    if (!o)
        return hy_err_set(err, HY_E_NOMEM, "format: out of memory for %zu bytes", need);
    size_t w = 0;
    at = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(o + w, text + at, runs[i].off - at);
        w += runs[i].off - at;
        bool mine = outs && outs[i];
        memcpy(o + w, mine ? outs[i] : text + runs[i].off, mine ? out_lens[i] : runs[i].len);
        w += mine ? out_lens[i] : runs[i].len;
        at = runs[i].off + runs[i].len;
    }
    memcpy(o + w, text + at, len - at);
    w += len - at;
    HY_ASSERT(w == need);
    *out = o;
    *out_len = w;
    return HY_OK;
}

hy_status hy_format_translate(enum hy_format f, const char *text, size_t len,
                              hy_format_translate_fn fn, void *ctx, char **out, size_t *out_len,
                              struct hy_err *err)
{
    struct hy_format_run *runs = NULL;
    size_t n = 0;
    *out = NULL;
    *out_len = 0;
    hy_status st = hy_format_split(f, text, len, &runs, &n, err);
    if (st)
        return st;
    const char **texts = calloc(n + 1, sizeof *texts);
    size_t *lens = calloc(n + 1, sizeof *lens), *out_lens = calloc(n + 1, sizeof *out_lens);
    char **outs = calloc(n + 1, sizeof *outs);
    if (!texts || !lens || !outs || !out_lens)
        st = hy_err_set(err, HY_E_NOMEM, "format: out of memory for %zu runs", n);
    for (size_t i = 0; !st && i < n; i++) {
        texts[i] = text + runs[i].off;
        lens[i] = runs[i].len;
    }
    if (!st && n)
        st = fn(ctx, texts, lens, n, outs, out_lens, err);
    if (!st)
        st = hy_format_join(text, len, runs, n, (const char *const *)outs, out_lens, out,
                            out_len, err);
    for (size_t i = 0; outs && i < n; i++)
        free(outs[i]);
    free(outs);
    free(out_lens);
    free(lens);
    free(texts);
    free(runs);
    return st;
}
