/* format_html.c: the HTML splitter (contract in format.h). A single pass: comments,
 * CDATA, doctype and processing instructions are kept whole; a tag is parsed into its
 * attributes (values quoted with " or ', or unquoted) and the values of alt, title and
 * placeholder become runs; the content of script, style, pre, code, kbd, samp, textarea,
 * svg and math, and of any element marked translate="no", is kept up to its closing tag
 * (counting nested elements of the same name). The text between tags becomes runs, so
 * inline tags split a sentence into pieces; with inline_tags set (the formatted-text
 * prompt's path) formatting tags such as <b> or <a href> stay inside the run instead.
 * Entities stay inside the runs as written. */
#include "translate/format_impl.h"

#include <string.h>
#include <strings.h>

static bool alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool name_char(char c)
{
    return alpha(c) || (c >= '0' && c <= '9') || c == '-' || c == ':' || c == '_' || c == '.';
}

static bool space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* The position after the first occurrence of s at or after p, or len. */
static size_t past(const char *t, size_t len, size_t p, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = p; i + n <= len; i++)
        if (!memcmp(t + i, s, n))
            return i + n;
    return len;
}

static bool is(const char *t, size_t a, size_t b, const char *name)
{
    return b - a == strlen(name) && !strncasecmp(t + a, name, b - a);
}

struct tag {
    size_t name, name_end, end; /* the name's range; end: after the '>' */
    bool closing, self_closing, no_translate;
    bool text_attr; /* it has an alt, title or placeholder value */
};

/* Parses the tag at t[p] == '<' (a letter or '/' follows); with emit, translatable
 * attribute values go to k as runs. */
static void parse_tag(struct fmt_runs *k, size_t p, struct tag *g, bool emit)
{
    const char *t = k->t;
    size_t len = k->len, q = p + 1;
    memset(g, 0, sizeof *g);
    g->closing = t[q] == '/';
    q += g->closing;
    g->name = q;
    while (q < len && name_char(t[q]))
        q++;
    g->name_end = q;
    while (q < len && t[q] != '>') {
        if (t[q] == '/' && q + 1 < len && t[q + 1] == '>') {
            g->self_closing = true;
            q++;
            continue;
        }
        if (space(t[q]) || t[q] == '/') {
            q++;
            continue;
        }
        size_t an = q;
        while (q < len && !space(t[q]) && t[q] != '=' && t[q] != '>' && t[q] != '/')
            q++;
        size_t an_end = q == an ? ++q : q, va = q, vb = q;
        while (q < len && space(t[q]))
            q++;
        if (q < len && t[q] == '=') {
            q++;
            while (q < len && space(t[q]))
                q++;
            if (q < len && (t[q] == '"' || t[q] == '\'')) {
                const char *c = memchr(t + q + 1, t[q], len - q - 1);
                va = q + 1;
                vb = c ? (size_t)(c - t) : len;
                q = c ? vb + 1 : len;
            } else {
                va = q;
                while (q < len && !space(t[q]) && t[q] != '>')
                    q++;
                vb = q;
            }
        }
        if (is(t, an, an_end, "alt") || is(t, an, an_end, "title") ||
            is(t, an, an_end, "placeholder")) {
            g->text_attr = true;
            if (emit)
                fmt_region(k, va, vb);
        }
        if (is(t, an, an_end, "translate") && is(t, va, vb, "no"))
            g->no_translate = true;
    }
    g->end = q < len ? q + 1 : len;
}

/* After the element whose opening tag ends at p: past its closing tag, counting nested
 * elements of the same name; len if it never closes. */
static size_t skip_element(const char *t, size_t len, size_t p, const char *name, size_t n)
{
    int depth = 1;
    for (size_t i = p; i + 1 + n < len; i++) {
        if (t[i] != '<')
            continue;
        bool close = t[i + 1] == '/';
        size_t s = i + 1 + close;
        if (s + n <= len && !strncasecmp(t + s, name, n) && (s + n == len || !name_char(t[s + n]))) {
            depth += close ? -1 : 1;
            if (depth == 0)
                return past(t, len, s + n, ">");
        }
    }
    return len;
}

/* Void elements have no closing tag: nothing to skip after them. */
static bool void_element(const char *t, const struct tag *g)
{
    static const char *const v[] = {"area", "base", "br", "col", "embed", "hr", "img", "input",
                                    "link", "meta", "source", "track", "wbr"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (is(t, g->name, g->name_end, v[i]))
            return true;
    return false;
}

static bool raw_element(const char *t, const struct tag *g)
{
    static const char *const raw[] = {"script", "style", "pre", "code", "kbd", "samp",
                                      "textarea", "svg", "math"};
    for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++)
        if (is(t, g->name, g->name_end, raw[i]))
            return true;
    return false;
}

/* With inline_tags: a tag the text flows through (formatting inside a sentence), which
 * the formatted-text prompt can carry as a marker: no text of its own in attributes, not
 * marked translate="no". */
static bool inline_tag(const struct fmt_runs *k, const struct tag *g)
{
    static const char *const names[] = {"a",    "abbr", "b",   "bdi",    "bdo",  "cite",
                                        "data", "del",  "dfn", "em",     "font", "i",
                                        "ins",  "mark", "q",   "s",      "small", "span",
                                        "strong", "sub", "sup", "time",  "u"};
    if (!k->inline_tags || g->text_attr || g->no_translate || g->self_closing)
        return false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (is(k->t, g->name, g->name_end, names[i]))
            return true;
    return false;
}

void fmt_split_html(struct fmt_runs *k)
{
    const char *t = k->t;
    size_t len = k->len, text = 0;
    for (size_t p = 0; p < len;) {
        if (t[p] != '<' || p + 1 >= len) {
            p++;
            continue;
        }
        size_t end = 0;
        if (len - p >= 4 && !memcmp(t + p, "<!--", 4)) {
            end = past(t, len, p + 4, "-->");
        } else if (len - p >= 9 && !memcmp(t + p, "<![CDATA[", 9)) {
            end = past(t, len, p + 9, "]]>");
        } else if (t[p + 1] == '!' || t[p + 1] == '?') {
            end = past(t, len, p + 2, ">");
        } else if (alpha(t[p + 1]) || (t[p + 1] == '/' && p + 2 < len && alpha(t[p + 2]))) {
            struct tag g;
            parse_tag(k, p, &g, false);
            if (inline_tag(k, &g)) { /* the text goes on through it */
                p = g.end;
                continue;
            }
            fmt_region(k, text, p); /* the text before the tag, then its attributes */
            parse_tag(k, p, &g, true);
            end = g.end;
            if (!g.closing && !g.self_closing && !void_element(t, &g) &&
                (g.no_translate || raw_element(t, &g)))
                end = skip_element(t, len, end, t + g.name, g.name_end - g.name);
            text = p = end;
            continue;
        } else {
            p++; /* a '<' that opens nothing */
            continue;
        }
        fmt_region(k, text, p);
        text = p = end;
    }
    fmt_region(k, text, len);
}
