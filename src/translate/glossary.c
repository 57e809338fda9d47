/* glossary.c: glossary entries, CSV/TSV rows and term matching (contract in glossary.h).
 * The folded source terms are kept in an index sorted bytewise, so the terms starting at
 * a position of the folded segment are found by narrowing a range of that index one byte
 * at a time: the cost per position is the depth of the longest common prefix, not the
 * size of the glossary. */
#include "translate/glossary.h"

#include "core/utf8.h"
#include "translate/text.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

struct entry {
    char *src, *tgt, *key; /* as given (trimmed), and the folded source */
    size_t src_len, tgt_len, key_len;
    size_t row;            /* the file row (1-based) or the add call's number */
};

struct hy_glossary {
    struct entry *e;
    size_t n, cap;
    size_t *idx; /* entries sorted by key */
    char src_lang[16], tgt_lang[16];
};

/* ---- folding ---- */

/* NFKC + case folding + whitespace runs to one space; *out is malloc'd. */
static hy_status fold(const char *s, size_t n, char **out, size_t *out_len, struct hy_err *err)
{
    utf8proc_uint8_t *m = NULL;
    utf8proc_ssize_t k = n ? utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &m,
                                          UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT |
                                              UTF8PROC_CASEFOLD)
                           : 0;
    if (k < 0)
        return hy_err_set(err, k == UTF8PROC_ERROR_NOMEM ? HY_E_NOMEM : HY_E_INVAL,
                          "glossary: cannot normalize the text: %s", utf8proc_errmsg(k));
    if (!m && !(m = malloc(1)))
        return hy_err_set(err, HY_E_NOMEM, "glossary: out of memory");
    size_t w = 0;
    for (size_t r = 0; r < (size_t)k;) {
        int l;
        uint32_t c = text_decode(m + r, (size_t)k - r, &l);
        if (text_is_space(c)) {
            if (w == 0 || m[w - 1] != ' ')
                m[w++] = ' ';
        } else {
            memmove(m + w, m + r, (size_t)l);
            w += (size_t)l;
        }
        r += (size_t)l;
    }
    *out = (char *)m;
    *out_len = w;
    return HY_OK;
}

/* Scripts written without spaces between words: a term may start or end anywhere there. */
static bool no_space_script(uint32_t c)
{
    return (c >= 0x0E00 && c <= 0x0EFF) ||   /* Thai, Lao */
           (c >= 0x0F00 && c <= 0x109F) ||   /* Tibetan, Myanmar */
           (c >= 0x1100 && c <= 0x11FF) ||   /* Hangul Jamo */
           (c >= 0x1780 && c <= 0x17FF) ||   /* Khmer */
           (c >= 0x2E80 && c <= 0xA4CF) ||   /* CJK radicals .. Yi, kana, Hangul compat */
           (c >= 0xAC00 && c <= 0xD7FF) ||   /* Hangul syllables */
           (c >= 0xF900 && c <= 0xFAFF) ||   /* CJK compatibility ideographs */
           (c >= 0xFF66 && c <= 0xFFDC) ||   /* half-width kana and Hangul */
           (c >= 0x20000 && c <= 0x3FFFF);   /* CJK extensions */
}

/* A letter, digit or mark of a script that separates words with spaces. */
static bool word_char(uint32_t c)
{
    if (c == TEXT_BAD || no_space_script(c))
        return false;
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_NO;
}

/* The code point that ends s[0..n) (n >= 1). */
static uint32_t last_char(const unsigned char *s, size_t n)
{
    size_t a = n - 1;
    while (a > 0 && n - a < 4 && (s[a] & 0xC0) == 0x80)
        a--;
    int l;
    uint32_t c = text_decode(s + a, n - a, &l);
    return a + (size_t)l == n ? c : TEXT_BAD;
}

/* ---- entries ---- */

hy_status hy_glossary_create(struct hy_glossary **out, struct hy_err *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? HY_OK : hy_err_set(err, HY_E_NOMEM, "glossary: out of memory");
}

void hy_glossary_destroy(struct hy_glossary *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++) {
        free(g->e[i].src);
        free(g->e[i].tgt);
        free(g->e[i].key);
    }
    free(g->e);
    free(g->idx);
    free(g);
}

size_t hy_glossary_size(const struct hy_glossary *g)
{
    return g->n;
}

void hy_glossary_get(const struct hy_glossary *g, size_t i, struct hy_glossary_term *t)
{
    HY_ASSERT(i < g->n);
    *t = (struct hy_glossary_term){g->e[i].src, g->e[i].tgt, g->e[i].src_len, g->e[i].tgt_len};
}

void hy_glossary_langs(const struct hy_glossary *g, const char **src, const char **tgt)
{
    *src = g->src_lang;
    *tgt = g->tgt_lang;
}

static int key_cmp(const struct entry *a, const struct entry *b)
{
    size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, n);
    return c ? c : (a->key_len > b->key_len) - (a->key_len < b->key_len);
}

/* Sorts idx[0..n) by key (merge sort: qsort has no context argument and the index holds
 * positions into g->e). tmp has room for n. */
static void sort_idx(const struct hy_glossary *g, size_t *idx, size_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    sort_idx(g, idx, tmp, h);
    sort_idx(g, idx + h, tmp, n - h);
    size_t a = 0, b = h, w = 0;
    while (a < h || b < n)
        tmp[w++] = b >= n || (a < h && key_cmp(&g->e[idx[a]], &g->e[idx[b]]) <= 0) ? idx[a++]
                                                                                 : idx[b++];
    memcpy(idx, tmp, n * sizeof *idx);
}

/* ASCII whitespace only: a byte test must not take UTF-8 continuation bytes 0x85 or 0xA0
 * for NEL or NBSP. */
static bool ascii_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Trims whitespace and checks one side of an entry. */
static hy_status check_side(const char **s, size_t *n, const char *what, size_t row,
                            struct hy_err *err)
{
    while (*n && ascii_space((*s)[0]))
        (*s)++, (*n)--;
    while (*n && ascii_space((*s)[*n - 1]))
        (*n)--;
    if (*n == 0)
        return hy_err_set(err, HY_E_INVAL, "glossary row %zu: empty %s term", row, what);
    if (*n > HY_GLOSSARY_MAX_TERM)
        return hy_err_set(err, HY_E_INVAL, "glossary row %zu: %s term longer than %d bytes", row,
                          what, HY_GLOSSARY_MAX_TERM);
    if (hy_utf8_validate(*s, *n) < *n)
        return hy_err_set(err, HY_E_INVAL, "glossary row %zu: %s term is not UTF-8", row, what);
    for (size_t i = 0; i < *n; i++)
        if ((unsigned char)(*s)[i] < 0x20 || (*s)[i] == 0x7F)
            return hy_err_set(err, HY_E_INVAL, "glossary row %zu: control character in the %s "
                                               "term", row, what);
    return HY_OK;
}

static char *dup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Appends an entry without touching the index. */
static hy_status push(struct hy_glossary *g, const char *src, size_t sn, const char *tgt,
                      size_t tn, size_t row, struct hy_err *err)
{
    hy_status st;
    if ((st = check_side(&src, &sn, "source", row, err)) ||
        (st = check_side(&tgt, &tn, "target", row, err)))
        return st;
    if (g->n >= HY_GLOSSARY_MAX_ENTRIES)
        return hy_err_set(err, HY_E_RANGE, "glossary: more than %d entries",
                          HY_GLOSSARY_MAX_ENTRIES);
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        struct entry *e = realloc(g->e, cap * sizeof *e);
        size_t *idx = e ? realloc(g->idx, cap * sizeof *idx) : NULL;
        if (e)
            g->e = e;
        if (!idx)
            return hy_err_set(err, HY_E_NOMEM, "glossary: out of memory");
        g->idx = idx;
        g->cap = cap;
    }
    struct entry *e = &g->e[g->n];
    memset(e, 0, sizeof *e);
    e->row = row;
    if ((st = fold(src, sn, &e->key, &e->key_len, err)))
        return st;
    e->src = dup(src, sn);
    e->tgt = dup(tgt, tn);
    e->src_len = sn;
    e->tgt_len = tn;
    if (!e->src || !e->tgt) {
        free(e->src);
        free(e->tgt);
        free(e->key);
        return hy_err_set(err, HY_E_NOMEM, "glossary: out of memory");
    }
    g->idx[g->n] = g->n;
    g->n++;
    return HY_OK;
}

/* The first position in idx[lo, hi) whose entry's key is not below e's. */
static size_t lower(const struct hy_glossary *g, size_t lo, size_t hi, const struct entry *e)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(&g->e[g->idx[mid]], e) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

hy_status hy_glossary_add(struct hy_glossary *g, const char *src, size_t src_len,
                          const char *tgt, size_t tgt_len, struct hy_err *err)
{
    hy_status st = push(g, src, src_len, tgt, tgt_len, g->n + 1, err);
    if (st)
        return st;
    size_t i = g->n - 1;
    struct entry *e = &g->e[i];
    size_t at = lower(g, 0, i, e);
    if (at < i && key_cmp(&g->e[g->idx[at]], e) == 0) {
        hy_err_set(err, HY_E_INVAL, "glossary: the source term '%.*s' is already there",
                   (int)(e->src_len > 80 ? 80 : e->src_len), e->src);
        free(e->src);
        free(e->tgt);
        free(e->key);
        g->n--;
        return HY_E_INVAL;
    }
    memmove(g->idx + at + 1, g->idx + at, (i - at) * sizeof *g->idx);
    g->idx[at] = i;
    return HY_OK;
}

/* Sorts the index after a bulk load; a duplicate key is an error naming both rows. The
 * entries from first on are removed again on failure. */
static void pop_to(struct hy_glossary *g, size_t first)
{
    while (g->n > first) {
        g->n--;
        free(g->e[g->n].src);
        free(g->e[g->n].tgt);
        free(g->e[g->n].key);
    }
}

static hy_status sort_index(struct hy_glossary *g, size_t first, struct hy_err *err)
{
    size_t *tmp = malloc((g->n ? g->n : 1) * sizeof *tmp);
    if (!tmp) {
        pop_to(g, first);
        return hy_err_set(err, HY_E_NOMEM, "glossary: out of memory");
    }
    sort_idx(g, g->idx, tmp, g->n);
    hy_status st = HY_OK;
    for (size_t i = 1; i < g->n && !st; i++) {
        const struct entry *a = &g->e[g->idx[i - 1]], *b = &g->e[g->idx[i]];
        if (key_cmp(a, b) == 0)
            st = hy_err_set(err, HY_E_INVAL, "glossary rows %zu and %zu: the same source term "
                            "'%.*s'", a->row < b->row ? a->row : b->row,
                            a->row < b->row ? b->row : a->row,
                            (int)(a->src_len > 80 ? 80 : a->src_len), a->src);
    }
    if (st) { /* back to the glossary as it was */
        pop_to(g, first);
        for (size_t k = 0; k < g->n; k++)
            g->idx[k] = k;
        sort_idx(g, g->idx, tmp, g->n);
    }
    free(tmp);
    return st;
}

hy_status hy_glossary_add_many(struct hy_glossary *g, const struct hy_glossary_term *terms,
                               size_t n, struct hy_err *err)
{
    size_t first = g->n;
    hy_status st = HY_OK;
    for (size_t i = 0; i < n && !st; i++)
        st = push(g, terms[i].src, terms[i].src_len, terms[i].tgt, terms[i].tgt_len, i + 1, err);
    if (!st)
        return sort_index(g, first, err);
    pop_to(g, first);
    return st;
}

/* ---- matching ---- */

/* The longest term starting at folded[p] that passes the boundary rule, or SIZE_MAX. */
static size_t longest_at(const struct hy_glossary *g, const unsigned char *f, size_t n, size_t p,
                         bool word_before)
{
    size_t lo = 0, hi = g->n, best = SIZE_MAX;
    for (size_t k = 0; p + k < n && lo < hi; k++) {
        if (g->e[g->idx[lo]].key_len == k)
            lo++; /* the key that ended at k was handled in the previous round */
        unsigned char c = f[p + k];
        size_t a = lo, b = hi;
        while (a < b) { /* first key with byte k >= c */
            size_t mid = a + (b - a) / 2;
            const struct entry *e = &g->e[g->idx[mid]];
            if ((unsigned char)e->key[k] < c)
                a = mid + 1;
            else
                b = mid;
        }
        lo = a;
        b = hi;
        while (a < b) { /* first key with byte k > c */
            size_t mid = a + (b - a) / 2;
            const struct entry *e = &g->e[g->idx[mid]];
            if ((unsigned char)e->key[k] <= c)
                a = mid + 1;
            else
                b = mid;
        }
        hi = a;
        if (lo < hi && g->e[g->idx[lo]].key_len == k + 1) {
            const struct entry *e = &g->e[g->idx[lo]];
            int l;
            uint32_t first = text_decode((const unsigned char *)e->key, e->key_len, &l);
            uint32_t last = last_char((const unsigned char *)e->key, e->key_len);
            uint32_t after = TEXT_BAD;
            if (p + k + 1 < n)
                after = text_decode(f + p + k + 1, n - p - k - 1, &l);
            bool ok = !(word_before && word_char(first)) && !(word_char(last) && word_char(after));
            if (ok)
                best = g->idx[lo];
        }
    }
    return best;
}

hy_status hy_glossary_match(const struct hy_glossary *g, const char *text, size_t len,
                            struct hy_glossary_term *out, size_t cap, size_t *n_found,
                            struct hy_err *err)
{
    *n_found = 0;
    if (g->n == 0 || len == 0)
        return HY_OK;
    char *f = NULL;
    size_t n = 0;
    hy_status st = fold(text, len, &f, &n, err);
    if (st)
        return st;
    unsigned char *seen = calloc(g->n / 8 + 1, 1); /* entries already reported */
    if (!seen) {
        free(f);
        return hy_err_set(err, HY_E_NOMEM, "glossary: out of memory");
    }
    const unsigned char *u = (const unsigned char *)f;
    uint32_t prev = TEXT_BAD;
    for (size_t p = 0; p < n;) {
        size_t hit = longest_at(g, u, n, p, word_char(prev));
        int l;
        if (hit == SIZE_MAX) {
            prev = text_decode(u + p, n - p, &l);
            p += (size_t)l;
            continue;
        }
        const struct entry *e = &g->e[hit];
        if (!(seen[hit / 8] & (1u << (hit % 8)))) {
            seen[hit / 8] |= (unsigned char)(1u << (hit % 8));
            if (*n_found < cap)
                out[*n_found] = (struct hy_glossary_term){e->src, e->tgt, e->src_len, e->tgt_len};
            ++*n_found;
        }
        prev = last_char(u + p, e->key_len);
        p += e->key_len;
    }
    free(seen);
    free(f);
    return HY_OK;
}

/* ---- CSV and TSV ---- */

#define MAX_FIELDS 4

struct row {
    const char *f[MAX_FIELDS + 1];
    size_t n[MAX_FIELDS + 1];
    int count; /* fields seen (may exceed MAX_FIELDS: then only counted) */
};

/* Reads one row starting at *at (CSV with quotes unescaped into buf, or TSV as is). */
static hy_status read_row(const char *t, size_t len, size_t *at, bool tsv, char *buf,
                          struct row *r, size_t row_no, struct hy_err *err)
{
    char sep = tsv ? '\t' : ',';
    size_t p = *at, w = 0;
    r->count = 0;
    for (;;) {
        size_t start = w;
        bool quoted = !tsv && p < len && t[p] == '"';
        if (quoted) {
            for (p++;; p++) {
                if (p >= len)
                    return hy_err_set(err, HY_E_INVAL, "glossary row %zu: unterminated quote",
                                      row_no);
                if (t[p] == '"' && p + 1 < len && t[p + 1] == '"')
                    buf[w++] = t[p++];
                else if (t[p] == '"')
                    break;
                else
                    buf[w++] = t[p];
            }
            p++;
            if (p < len && t[p] != sep && t[p] != '\n' && t[p] != '\r')
                return hy_err_set(err, HY_E_INVAL, "glossary row %zu: text after a closing "
                                                   "quote", row_no);
        } else {
            while (p < len && t[p] != sep && t[p] != '\n' && t[p] != '\r')
                buf[w++] = t[p++];
        }
        if (r->count < MAX_FIELDS + 1) {
            r->f[r->count] = buf + start;
            r->n[r->count] = w - start;
        }
        r->count++;
        if (p < len && t[p] == sep) {
            p++;
            continue;
        }
        break;
    }
    if (p < len && t[p] == '\r')
        p++;
    if (p < len && t[p] == '\n')
        p++;
    else if (p < len)
        return hy_err_set(err, HY_E_INVAL, "glossary row %zu: a lone carriage return", row_no);
    *at = p;
    return HY_OK;
}

/* Records (or checks) the language columns of a 4-column row. */
static hy_status row_langs(struct hy_glossary *g, const struct row *r, size_t row_no,
                           struct hy_err *err)
{
    char *dst[2] = {g->src_lang, g->tgt_lang};
    for (int i = 0; i < 2; i++) {
        const char *s = r->f[2 + i];
        size_t n = r->n[2 + i];
        while (n && (s[0] == ' ' || s[0] == '\t'))
            s++, n--;
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
            n--;
        if (n == 0 || n >= sizeof g->src_lang)
            return hy_err_set(err, HY_E_INVAL, "glossary row %zu: bad language code", row_no);
        if (dst[i][0] == '\0') {
            memcpy(dst[i], s, n);
            dst[i][n] = '\0';
        } else if (strlen(dst[i]) != n || memcmp(dst[i], s, n)) {
            return hy_err_set(err, HY_E_INVAL, "glossary row %zu: language '%.*s' differs from "
                                               "'%s' of the rows before", row_no, (int)n, s, dst[i]);
        }
    }
    return HY_OK;
}

static bool blank(const struct row *r)
{
    if (r->count != 1)
        return false;
    for (size_t i = 0; i < r->n[0]; i++)
        if (!ascii_space(r->f[0][i]))
            return false;
    return true;
}

hy_status hy_glossary_parse(struct hy_glossary *g, const char *text, size_t len,
                            enum hy_glossary_format fmt, struct hy_err *err)
{
    if (len > HY_GLOSSARY_MAX_FILE)
        return hy_err_set(err, HY_E_INVAL, "glossary: larger than %d bytes", HY_GLOSSARY_MAX_FILE);
    size_t at = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
    if (fmt == HY_GLOSSARY_AUTO) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t first = nl ? (size_t)(nl - text) : len;
        fmt = memchr(text + at, '\t', first - at) ? HY_GLOSSARY_TSV : HY_GLOSSARY_CSV;
    }
    char *buf = malloc(len + 1);
    if (!buf)
        return hy_err_set(err, HY_E_NOMEM, "glossary: out of memory");
    size_t first = g->n;
    hy_status st = HY_OK;
    for (size_t row_no = 1; at < len && !st; row_no++) {
        struct row r;
        st = read_row(text, len, &at, fmt == HY_GLOSSARY_TSV, buf, &r, row_no, err);
        if (st || blank(&r))
            continue;
        if (r.count != 2 && r.count != 4)
            st = hy_err_set(err, HY_E_INVAL, "glossary row %zu: %d columns (source,target or "
                                             "source,target,source_lang,target_lang)", row_no,
                            r.count);
        if (!st && r.count == 4)
            st = row_langs(g, &r, row_no, err);
        if (!st)
            st = push(g, r.f[0], r.n[0], r.f[1], r.n[1], row_no, err);
    }
    free(buf);
    if (!st)
        return sort_index(g, first, err);
    pop_to(g, first); /* the glossary as it was; idx[0..first) is still sorted */
    return st;
}
