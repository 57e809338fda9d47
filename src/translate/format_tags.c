/* format_tags.c: inline HTML tags as the formatted-text prompt's <sN>...</sN> markers and
 * back (contract in format.h). The encoder pairs the tags of a run by name with a stack
 * (each pair numbered in the order it opens) and refuses a run whose tags do not pair;
 * the decoder checks that every marker came back once, opened before it closes and
 * properly nested, and otherwise keeps every tag by wrapping the whole translation. */
#include "translate/format.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TAGS_MAX 64 /* pairs in one run; more: the run is split around its tags instead */

struct pair {
    size_t open_off, open_len, close_off, close_len; /* in the run */
};

struct hy_format_tags {
    size_t n;
    struct pair p[TAGS_MAX];
    char *run; /* a copy of the run (the tags' bytes) */
};

static bool alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The tag at s[0] == '<' (a letter or '/' + letter after it): its length, whether it
 * closes, and its name's range; 0 when it does not end within n. */
static size_t tag_at(const char *s, size_t n, bool *closing, size_t *na, size_t *nb)
{
    const char *e = memchr(s, '>', n);
    if (!e || n < 3)
        return 0;
    *closing = s[1] == '/';
    *na = 1 + *closing;
    *nb = *na;
    while (*nb < (size_t)(e - s) && (alpha(s[*nb]) || (s[*nb] >= '0' && s[*nb] <= '9')))
        (*nb)++;
    return (size_t)(e - s) + 1;
}

void hy_format_tags_free(struct hy_format_tags *t)
{
    if (t)
        free(t->run);
    free(t);
}

size_t hy_format_tags_count(const struct hy_format_tags *t)
{
    return t ? t->n : 0;
}

struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
};

static void put(struct sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = 2 * (b->n + n) + 64;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

/* Pairs the run's tags (stack by name); false when they do not pair or are too many. */
static bool pair_tags(const char *s, size_t n, struct hy_format_tags *t)
{
    size_t stack[TAGS_MAX], depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '<' || i + 1 >= n || !(alpha(s[i + 1]) || s[i + 1] == '/'))
            continue;
        bool closing;
        size_t na, nb, len = tag_at(s + i, n - i, &closing, &na, &nb);
        if (!len)
            return false;
        if (!closing) {
            if (t->n == TAGS_MAX || depth == TAGS_MAX)
                return false;
            t->p[t->n] = (struct pair){i, len, 0, 0};
            stack[depth++] = t->n++;
        } else {
            if (!depth)
                return false;
            size_t k = stack[--depth], o = t->p[k].open_off;
            bool c2;
            size_t oa, ob;
            tag_at(s + o, n - o, &c2, &oa, &ob);
            if (ob - oa != nb - na || strncasecmp(s + o + oa, s + i + na, nb - na))
                return false;
            t->p[k].close_off = i;
            t->p[k].close_len = len;
        }
        i += len - 1;
    }
    return depth == 0;
}

hy_status hy_format_tags_encode(const char *run, size_t len, struct hy_format_tags **out,
                                char **text, size_t *text_len, struct hy_err *err)
{
    *out = NULL;
    *text = NULL;
    struct hy_format_tags *t = calloc(1, sizeof *t);
    if (!t || !(t->run = malloc(len + 1))) {
        hy_format_tags_free(t);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    memcpy(t->run, run, len);
    if (!pair_tags(run, len, t)) {
        hy_format_tags_free(t);
        return hy_err_set(err, HY_E_FORMAT, "inline tags that do not pair");
    }
    struct sbuf b = {0};
    size_t at = 0;
    for (size_t i = 0; i < len;) { /* each tag's bytes become its marker */
        size_t k = 0;
        bool open = false;
        for (; k < t->n; k++) {
            open = t->p[k].open_off == i;
            if (open || (t->p[k].close_off == i && t->p[k].close_len))
                break;
        }
        if (k == t->n) {
            i++;
            continue;
        }
        char m[24];
        int mn = snprintf(m, sizeof m, open ? "<s%zu>" : "</s%zu>", k + 1);
        put(&b, run + at, i - at);
        put(&b, m, (size_t)mn);
        i += open ? t->p[k].open_len : t->p[k].close_len;
        at = i;
    }
    put(&b, run + at, len - at);
    if (b.oom) {
        free(b.p);
        hy_format_tags_free(t);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    *out = t;
    *text = b.p ? b.p : strdup("");
    *text_len = b.n;
    return *text ? HY_OK : hy_err_set(err, HY_E_NOMEM, "out of memory");
}

/* The marker at s[0] == '<' naming pair 1..n: its number, *closing, *len; 0 if none. */
static size_t marker_at(const char *s, size_t n, size_t pairs, bool *closing, size_t *len)
{
    size_t i = 1;
    *closing = i < n && s[i] == '/';
    i += *closing;
    if (i >= n || s[i] != 's')
        return 0;
    size_t k = 0, d = ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9' && k <= pairs)
        k = 10 * k + (size_t)(s[i++] - '0');
    if (i == d || i >= n || s[i] != '>' || k < 1 || k > pairs)
        return 0;
    *len = i + 1;
    return k;
}

/* Whether every marker is there once, each opening before it closes, properly nested. */
static bool intact(const struct hy_format_tags *t, const char *s, size_t n)
{
    int seen[TAGS_MAX] = {0}; /* 1 open, 2 closed */
    size_t stack[TAGS_MAX], depth = 0;
    for (size_t i = 0; i < n; i++) {
        bool closing;
        size_t len, k = s[i] == '<' ? marker_at(s + i, n - i, t->n, &closing, &len) : 0;
        if (!k)
            continue;
        if (!closing) {
            if (seen[k - 1] || depth == TAGS_MAX)
                return false;
            seen[k - 1] = 1;
            stack[depth++] = k;
        } else {
            if (seen[k - 1] != 1 || !depth || stack[depth - 1] != k)
                return false;
            seen[k - 1] = 2;
            depth--;
        }
        i += len - 1;
    }
    for (size_t k = 0; k < t->n; k++)
        if (seen[k] != 2)
            return false;
    return true;
}

hy_status hy_format_tags_decode(const struct hy_format_tags *t, const char *tr, size_t n,
                                char **out, size_t *out_len, bool *moved, struct hy_err *err)
{
    struct sbuf b = {0};
    bool ok = intact(t, tr, n);
    *moved = !ok;
    if (!ok) /* every tag kept, around the whole translation, in the order they opened */
        for (size_t k = 0; k < t->n; k++)
            put(&b, t->run + t->p[k].open_off, t->p[k].open_len);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        bool closing;
        size_t len, k = tr[i] == '<' ? marker_at(tr + i, n - i, t->n, &closing, &len) : 0;
        if (!k)
            continue;
        put(&b, tr + at, i - at);
        if (ok)
            put(&b, t->run + (closing ? t->p[k - 1].close_off : t->p[k - 1].open_off),
                closing ? t->p[k - 1].close_len : t->p[k - 1].open_len);
        i += len - 1;
        at = i + 1;
    }
    put(&b, tr + at, n - at);
    if (!ok)
        for (size_t k = t->n; k-- > 0;)
            put(&b, t->run + t->p[k].close_off, t->p[k].close_len);
    if (b.oom || (!b.p && !(b.p = strdup("")))) {
        free(b.p);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    *out = b.p;
    *out_len = b.n;
    return HY_OK;
}
