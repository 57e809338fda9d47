/* format_md.c: the Markdown splitter (contract in format.h). Line by line, CommonMark's
 * block structure as far as it decides what is text: fenced code (``` or ~~~, closed by
 * a fence of the same character at least as long), indented code (4 columns after a blank
 * line, outside lists), HTML blocks (CommonMark kinds 1-7: script/pre/style/textarea,
 * comments, processing instructions, declarations, CDATA up to their end marker;
 * block-level tags and lone complete tags up to a blank line), YAML front matter (a first
 * line ---), reference definitions, ATX headings (closing #s kept), quote prefixes, list
 * markers and task boxes, GFM tables (a row followed by a delimiter row; cells apart at
 * unescaped pipes outside code spans). Inside text: code spans, autolinks and inline
 * tags, bare URLs (http, https, ftp, mailto, www.), link and image targets ("](...)"),
 * reference labels ("][...]"), footnote references and the brackets of links are kept;
 * emphasis, entities and escapes stay inside the runs. Each line's runs are its own. */
#include "translate/format_impl.h"

#include <string.h>
#include <strings.h>

enum html_end { HTML_NONE, HTML_BLANK, HTML_MARKER };

struct md {
    struct fmt_runs *k;
    const char *t;
    bool in_fence, in_icode, in_table, in_front, list_ctx, prev_blank;
    char fence_c;
    size_t fence_n;
    enum html_end html;
    const char *marker;
    bool para;             /* a paragraph's text is pending: [para_a, para_e) */
    size_t para_a, para_e; /* its soft-wrapped lines make one run (see md_line) */
};

static bool alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool alnum(char c)
{
    return alpha(c) || (c >= '0' && c <= '9');
}

/* Whether t[a..b) contains s, ignoring ASCII case. */
static bool contains(const char *t, size_t a, size_t b, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = a; i + n <= b; i++)
        if (!strncasecmp(t + i, s, n))
            return true;
    return false;
}

/* A run of at least 3 backticks or tildes at t[a..b): its character and length. */
static bool fence(const char *t, size_t a, size_t b, char *c, size_t *n)
{
    if (a >= b || (t[a] != '`' && t[a] != '~'))
        return false;
    size_t m = 0;
    while (a + m < b && t[a + m] == t[a])
        m++;
    if (m < 3 || (t[a] == '`' && memchr(t + a + m, '`', b - a - m)))
        return false;
    *c = t[a];
    *n = m;
    return true;
}

/* ---- inline text ---- */

/* The end of the bracketed text opened at t[p] ('[' or '('), nesting, within b; 0 if none. */
static size_t matching(const char *t, size_t p, size_t b)
{
    char open = t[p], close = open == '[' ? ']' : ')';
    int depth = 0;
    for (size_t i = p; i < b; i++) {
        if (t[i] == '\\') {
            i++;
            continue;
        }
        if (t[i] == '`') { /* brackets inside a code span do not count */
            const char *q = memchr(t + i + 1, '`', b - i - 1);
            if (q) {
                i = (size_t)(q - t);
                continue;
            }
        }
        depth += t[i] == open;
        depth -= t[i] == close;
        if (depth == 0)
            return i + 1;
    }
    return 0;
}

/* Whether the '[' at p opens a link or image: its ']' is followed by '(' or '['. */
static bool link_opens(const char *t, size_t p, size_t b)
{
    size_t e = matching(t, p, b);
    return e && e < b && (t[e] == '(' || t[e] == '[');
}

/* The end of a bare URL starting at p, or 0. */
static size_t url_end(const char *t, size_t a, size_t p, size_t b)
{
    static const char *const pre[] = {"https://", "http://", "ftp://", "mailto:", "www."};
    if (p > a && (alnum(t[p - 1]) || t[p - 1] == '/'))
        return 0;
    bool hit = false;
    for (size_t i = 0; i < sizeof pre / sizeof pre[0] && !hit; i++)
        hit = b - p > strlen(pre[i]) && !strncasecmp(t + p, pre[i], strlen(pre[i]));
    if (!hit)
        return 0;
    size_t e = p;
    while (e < b && t[e] != ' ' && t[e] != '\t' && t[e] != '\n' && t[e] != '\r' && t[e] != '<')
        e++;
    int paren = 0;
    for (size_t i = p; i < e; i++)
        paren += (t[i] == '(') - (t[i] == ')');
    while (e > p && (strchr(".,:;!?'\"*_~", t[e - 1]) || (t[e - 1] == ')' && paren < 0))) {
        paren += t[e - 1] == ')';
        e--;
    }
    return e;
}

/* The end of the markup that starts at p and is kept, or 0 when t[p] is text. */
static size_t markup_end(const char *t, size_t a, size_t p, size_t b)
{
    char c = t[p], d = p + 1 < b ? t[p + 1] : '\0';
    if (c == '`') {
        size_t m = 0;
        while (p + m < b && t[p + m] == '`')
            m++;
        for (size_t i = p + m; i + m <= b; i++) /* a closing run of exactly m */
            if (!memcmp(t + i, t + p, m) && (i + m == b || t[i + m] != '`') && t[i - 1] != '`')
                return i + m;
        return p + m; /* no closing run: the backticks are literal, kept */
    }
    if (c == '<' && (alpha(d) || d == '/' || d == '!' || d == '?')) {
        const char *g = memchr(t + p, '>', b - p);
        return g ? (size_t)(g - t) + 1 : 0;
    }
    if (c == '!' && d == '[' && link_opens(t, p + 1, b))
        return p + 2;
    if (c == '[' && d == '^') {
        size_t e = matching(t, p, b);
        return e ? e : 0;
    }
    if (c == '[' && link_opens(t, p, b))
        return p + 1;
    if (c == ']' && (d == '(' || d == '[')) {
        size_t e = matching(t, p + 1, b);
        return e ? e : p + 1;
    }
    if (c == 'h' || c == 'H' || c == 'f' || c == 'F' || c == 'm' || c == 'M' || c == 'w' ||
        c == 'W')
        return url_end(t, a, p, b);
    return 0;
}

static void md_inline(struct md *m, size_t a, size_t b)
{
    size_t start = a;
    for (size_t p = a; p < b;) {
        if (m->t[p] == '\\' && p + 1 < b) {
            p += 2;
            continue;
        }
        size_t e = markup_end(m->t, a, p, b);
        if (e) {
            fmt_region(m->k, start, p);
            start = p = e;
        } else {
            p++;
        }
    }
    fmt_region(m->k, start, b);
}

static void flush_para(struct md *m)
{
    if (m->para)
        md_inline(m, m->para_a, m->para_e);
    m->para = false;
}

/* ---- blocks ---- */

/* A setext underline or thematic break: only = - * _ and spaces (and at least one mark). */
static bool rule_line(const char *t, size_t a, size_t b)
{
    bool mark = false;
    for (size_t i = a; i < b; i++) {
        if (t[i] == '=' || t[i] == '-' || t[i] == '*' || t[i] == '_')
            mark = true;
        else if (t[i] != ' ' && t[i] != '\t')
            return false;
    }
    return mark;
}

/* A hard line break at the end of t[a..b): two spaces or a backslash. */
static bool hard_break(const char *t, size_t a, size_t b)
{
    return (b - a >= 2 && t[b - 1] == ' ' && t[b - 2] == ' ') || (b > a && t[b - 1] == '\\');
}

/* A GFM delimiter row: cells of :?-+:? apart by pipes, with at least one pipe or dash. */
static bool delimiter_row(const char *t, size_t a, size_t b)
{
    bool dash = false, pipe = false;
    for (size_t i = a; i < b; i++) {
        char c = t[i];
        if (c == '-')
            dash = true;
        else if (c == '|')
            pipe = true;
        else if (c != ':' && c != ' ' && c != '\t')
            return false;
    }
    return dash && pipe;
}

static void table_row(struct md *m, size_t a, size_t b)
{
    size_t cell = a;
    for (size_t p = a; p < b; p++) {
        if (m->t[p] == '\\') {
            p++;
        } else if (m->t[p] == '`') {
            size_t e = markup_end(m->t, a, p, b);
            p = e > p ? e - 1 : p;
        } else if (m->t[p] == '|') {
            md_inline(m, cell, p);
            cell = p + 1;
        }
    }
    md_inline(m, cell, b);
}

static const char *const BLOCK_TAGS[] = {
    "address", "article", "aside", "blockquote", "body", "caption", "center", "col",
    "colgroup", "dd", "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption",
    "figure", "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head",
    "header", "hr", "html", "iframe", "legend", "li", "link", "main", "menu", "nav", "ol",
    "optgroup", "option", "p", "param", "section", "summary", "table", "tbody", "td", "tfoot",
    "th", "thead", "title", "tr", "ul"};

/* Starts an HTML block at t[a..b) if the line opens one (see the file comment). */
static bool html_start(struct md *m, size_t a, size_t b)
{
    const char *t = m->t;
    static const char *const raw[] = {"script", "pre", "style", "textarea"};
    if (b - a < 2 || t[a] != '<')
        return false;
    m->html = HTML_MARKER;
    for (size_t i = 0; i < 4; i++) {
        size_t n = strlen(raw[i]);
        if (b - a > n && !strncasecmp(t + a + 1, raw[i], n) &&
            (a + 1 + n == b || strchr(" \t>", t[a + 1 + n]))) {
            m->marker = i == 0 ? "</script>" : i == 1 ? "</pre>" : i == 2 ? "</style>"
                                                                           : "</textarea>";
            return true;
        }
    }
    if (b - a >= 4 && !memcmp(t + a, "<!--", 4))
        return (m->marker = "-->"), true;
    if (t[a + 1] == '?')
        return (m->marker = "?>"), true;
    if (b - a >= 9 && !memcmp(t + a, "<![CDATA[", 9))
        return (m->marker = "]]>"), true;
    if (t[a + 1] == '!' && b - a > 2 && alpha(t[a + 2]))
        return (m->marker = ">"), true;
    m->html = HTML_BLANK;
    size_t p = a + 1 + (t[a + 1] == '/');
    size_t q = p;
    while (q < b && alnum(t[q]))
        q++;
    for (size_t i = 0; i < sizeof BLOCK_TAGS / sizeof BLOCK_TAGS[0]; i++)
        if (q - p == strlen(BLOCK_TAGS[i]) && !strncasecmp(t + p, BLOCK_TAGS[i], q - p) &&
            (q == b || strchr(" \t>/", t[q])))
            return true;
    /* kind 7: a complete tag alone on the line */
    size_t e = b;
    while (e > a && (t[e - 1] == ' ' || t[e - 1] == '\t'))
        e--;
    const char *g = memchr(t + a, '>', e - a);
    if (q > p && alpha(t[p]) && g && (size_t)(g - t) == e - 1)
        return true;
    m->html = HTML_NONE;
    return false;
}

/* The content after quote prefixes, list markers and task boxes; *listed if a marker. */
static size_t prefixes(const char *t, size_t p, size_t b, bool *listed, bool *quoted)
{
    for (;;) {
        while (p < b && (t[p] == ' ' || t[p] == '\t'))
            p++;
        if (p < b && t[p] == '>') {
            *quoted = true;
            p++;
            continue;
        }
        break;
    }
    size_t q = p;
    bool marker = false;
    if (q < b && (t[q] == '-' || t[q] == '+' || t[q] == '*')) {
        q++;
        marker = true;
    } else {
        while (q < b && q - p < 9 && t[q] >= '0' && t[q] <= '9')
            q++;
        if (q > p && q < b && (t[q] == '.' || t[q] == ')')) {
            q++;
            marker = true;
        }
    }
    if (marker && (q == b || t[q] == ' ' || t[q] == '\t')) {
        *listed = true;
        p = q;
        while (p < b && (t[p] == ' ' || t[p] == '\t'))
            p++;
        if (b - p >= 3 && t[p] == '[' && strchr(" xX", t[p + 1]) && t[p + 2] == ']')
            p += 3;
    }
    return p;
}

/* The heading's text: after #s and a space, before a closing sequence of #s. */
static bool heading(const char *t, size_t p, size_t b, size_t *ha, size_t *hb)
{
    size_t h = 0;
    while (p + h < b && t[p + h] == '#')
        h++;
    if (h == 0 || h > 6 || (p + h < b && t[p + h] != ' ' && t[p + h] != '\t'))
        return false;
    size_t e = b;
    while (e > p + h && (t[e - 1] == ' ' || t[e - 1] == '\t'))
        e--;
    size_t c = e;
    while (c > p + h && t[c - 1] == '#')
        c--;
    if (c < e && (c == p + h || t[c - 1] == ' ' || t[c - 1] == '\t'))
        e = c;
    *ha = p + h;
    *hb = e;
    return true;
}

/* One line that is not inside a fence, code, front matter or HTML block. */
static void md_line(struct md *m, size_t a, size_t e, size_t next_a, size_t next_e)
{
    const char *t = m->t;
    size_t col = 0, p = a;
    while (p < e && (t[p] == ' ' || t[p] == '\t'))
        col += t[p++] == '\t' ? 4 - col % 4 : 1;
    if (col >= 4 && !m->para && (m->in_icode || (m->prev_blank && !m->list_ctx))) {
        m->in_icode = true;
        return;
    }
    m->in_icode = false;
    bool listed = false, quoted = false;
    size_t c = prefixes(t, a, e, &listed, &quoted);
    if (listed)
        m->list_ctx = true;
    else if (col == 0 && !quoted && m->prev_blank)
        m->list_ctx = false;
    size_t ha, hb;
    bool text = false, ref = false, note = false;
    if (c + 1 < e && t[c] == '[') {
        size_t r = matching(t, c, e);
        ref = r && r < e && t[r] == ':';
        note = ref && t[c + 1] == '^';
    }
    if (rule_line(t, c, e)) {
        flush_para(m); /* kept: an underline or a break */
    } else if (fence(t, c, e, &m->fence_c, &m->fence_n)) {
        flush_para(m);
        m->in_fence = true;
    } else if (html_start(m, c, e)) {
        flush_para(m);
        if (m->html == HTML_MARKER && contains(t, c + 2, e, m->marker))
            m->html = HTML_NONE; /* ends on its first line */
    } else if (note) {
        flush_para(m);
        md_inline(m, matching(t, c, e) + 1, e); /* a footnote's text */
    } else if (ref) {
        flush_para(m); /* a reference definition: label and destination are kept */
    } else if (heading(t, c, e, &ha, &hb)) {
        flush_para(m);
        md_inline(m, ha, hb);
    } else if (memchr(t + c, '|', e - c) &&
               (m->in_table || (next_a < next_e && delimiter_row(t, next_a, next_e)))) {
        flush_para(m);
        m->in_table = true;
        table_row(m, c, e);
    } else {
        text = true;
    }
    /* paragraph text: a line that continues the pending paragraph joins it (a soft line
     * break); a list item or quoted line starts its own; a hard break ends it */
    if (text) {
        if (listed || quoted)
            flush_para(m);
        if (!m->para)
            m->para_a = c;
        m->para = true;
        m->para_e = e;
        if (quoted || hard_break(t, c, e))
            flush_para(m);
    }
}

void fmt_split_markdown(struct fmt_runs *k)
{
    struct md m = {.k = k, .t = k->t, .prev_blank = true};
    size_t a = k->len >= 3 && !memcmp(k->t, "\xEF\xBB\xBF", 3) ? 3 : 0;
    bool first = true;
    while (a < k->len) {
        size_t e, n, e2 = 0, n2 = 0;
        fmt_line(k, a, &e, &n);
        bool more = n < k->len;
        if (more)
            fmt_line(k, n, &e2, &n2);
        bool blank = fmt_blank(k, a, e);
        if (blank || m.in_front || m.in_fence || m.html != HTML_NONE)
            flush_para(&m);
        if (first && e - a == 3 && !memcmp(k->t + a, "---", 3)) {
            m.in_front = true;
        } else if (m.in_front) {
            m.in_front = !(e - a == 3 && (!memcmp(k->t + a, "---", 3) || !memcmp(k->t + a, "...", 3)));
        } else if (m.in_fence) {
            size_t p = a; /* the closing fence, after any indentation and quote marks */
            while (p < e && (k->t[p] == ' ' || k->t[p] == '\t' || k->t[p] == '>'))
                p++;
            char c;
            size_t len;
            if (fence(k->t, p, e, &c, &len) && c == m.fence_c && len >= m.fence_n &&
                fmt_blank(k, p + len, e))
                m.in_fence = false;
        } else if (m.html != HTML_NONE) {
            if (m.html == HTML_BLANK ? blank : contains(k->t, a, e, m.marker))
                m.html = HTML_NONE;
        } else if (blank) {
            m.in_table = false;
        } else {
            md_line(&m, a, e, more ? n : 0, more ? e2 : 0);
        }
        m.prev_blank = blank;
        first = false;
        a = n;
    }
    flush_para(&m);
}
