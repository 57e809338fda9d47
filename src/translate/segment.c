/* segment.c: document segmentation and reassembly (contract in segment.h).
 *
 * Rules.
 * 1. Units. The text is cut into units: a run of whitespace (the separator) and the
 *    content up to the next boundary. Boundaries: a line break (LF, CR, CRLF, VT, FF,
 *    NEL, U+2028, U+2029), and a sentence end. A separator holding two or more line breaks
 *    (a blank line) or a U+2029 is a paragraph break.
 * 2. Sentence ends. Terminators that end a sentence wherever they stand:
 *    。！？；．｡ and the small forms (CJK), ؟ ۔ (Arabic script), । ॥ (Devanagari, also
 *    Bengali), ། ༎ ༏ ༐ ༑ (Tibetan), ။ (Burmese), ។ ៕ (Khmer), ᠃ ᠉ (Mongolian); a
 *    full-width ． between digits is a decimal point. Terminators that need whitespace (or
 *    the end of the text) after them: . ! ? … ‼ ⁇ ⁈ ⁉; and not when the next word on the
 *    line starts with a lower-case letter or a digit, nor for a "." after an abbreviation
 *    (a single letter, a word with inner dots such as e.g or U.S, or one of a short list:
 *    Mr, Dr, etc, vs, No, Fig, ...). Further terminators and closing brackets and quotes
 *    right after the terminator stay with the sentence (after a CJK-style terminator only
 *    closing brackets and final quotes: an opening “ there begins the next sentence).
 *    Thai has no terminators: a Thai paragraph is one unit, cut at spaces by rule 4.
 * 3. Merging. Consecutive units join into one segment while the estimated count (the
 *    sum of the units' and separators' counts) stays within max_tokens, never across a
 *    paragraph break (nor a line break with keep_lines). A merged segment is then counted
 *    exactly; if it is over the limit after all, its units are packed again with exact
 *    counts.
 * 4. Over-long units are cut at the longest prefix within the limit (gallop, then binary
 *    search over character boundaries), backing off to the best break point in it, in
 *    this order: after clause punctuation (, ; : followed by a space, or ，、： ، ؛ ၊ ᠂ ᠈)
 *    in the second half of the prefix; at a breaking space (also after a zero-width space
 *    or a Tibetan tsheg) in its last three quarters; between grapheme clusters in its
 *    second half; then the latest space, clause mark or grapheme boundary anywhere; then
 *    the character boundary itself. A single character over the limit is a segment of
 *    its own. */
#include "translate/segment.h"

#include "translate/text.h"

#include <stdint.h>
#include <string.h>
#include <utf8proc.h>

enum brk { BRK_NONE, BRK_LINE, BRK_PARA };

/* A unit longer than this many bytes per token of the limit is cut without counting it
 * whole (counting a megabyte-long line for each piece would be quadratic). */
#define LONG_UNIT 16

/* The document and the options. */
struct doc {
    const unsigned char *t;
    size_t len;
    size_t max;
    hy_seg_count_fn count;
    void *ctx;
    bool keep_lines;
};

/* A unit (rule 1): [sep_off, off) whitespace, [off, end) content. */
struct unit {
    size_t sep_off, off, end;
    enum brk brk;
    size_t tokens; /* count of the content */
};

/* Walks units; pend_end is the end of an over-long unit being cut into pieces, piece
 * the length of the last piece cut. A scanner is a value: copies resume from there. */
struct scanner {
    const struct doc *d;
    size_t pos, pend_end, piece;
};

/* Collects segments into the caller's array, counting the ones that do not fit. */
struct out {
    struct hy_seg *segs;
    size_t cap, n;
};

static size_t count_bytes(void *ctx, const char *s, size_t len)
{
    (void)ctx, (void)s;
    return len;
}

static size_t cnt(const struct doc *d, size_t off, size_t n)
{
    return d->count(d->ctx, (const char *)d->t + off, n);
}

static uint32_t char_at(const struct doc *d, size_t i, int *cl)
{
    return text_decode(d->t + i, d->len - i, cl);
}

static size_t next_char(const struct doc *d, size_t i)
{
    int cl;
    char_at(d, i, &cl);
    return i + (size_t)cl;
}

/* The character that ends at i: TEXT_BAD for an invalid byte, 0 at the start. */
static uint32_t char_before(const struct doc *d, size_t i)
{
    for (size_t k = 1; k <= 4 && k <= i; k++) {
        int cl;
        uint32_t c = text_decode(d->t + i - k, k, &cl);
        if ((size_t)cl == k && c != TEXT_BAD)
            return c;
    }
    return i ? TEXT_BAD : 0;
}

/* ---- character classes ---- */

static bool is_wide_end(uint32_t c)
{
    switch (c) {
    case 0x3002:
    case 0xFF01:
    case 0xFF1F:
    case 0xFF1B:
    case 0xFF0E:
    case 0xFF61:
    case 0xFE52:
    case 0xFE56:
    case 0xFE57:
    case 0x061F:
    case 0x06D4:
    case 0x0964:
    case 0x0965:
    case 0x104B:
    case 0x17D4:
    case 0x17D5:
    case 0x1803:
    case 0x1809: return true;
    default: return c >= 0x0F0D && c <= 0x0F11;
    }
}

static bool is_narrow_end(uint32_t c)
{
    return c == '.' || c == '!' || c == '?' || c == 0x2026 || c == 0x203C ||
           (c >= 0x2047 && c <= 0x2049);
}

/* Closing punctuation kept with the sentence before it; initial quotes only after a
 * Latin-style terminator (German „...“ closes with U+201C, Chinese opens with it). */
static bool is_closer(uint32_t c, bool wide)
{
    if (c < 0x80)
        return c == ')' || c == ']' || c == '}' || (!wide && (c == '"' || c == '\''));
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k == UTF8PROC_CATEGORY_PE || k == UTF8PROC_CATEGORY_PF ||
           (!wide && k == UTF8PROC_CATEGORY_PI);
}

/* Clause marks that are a break point by themselves (the ASCII ones need a space). */
static bool is_wide_clause(uint32_t c)
{
    return c == 0xFF0C || c == 0x3001 || c == 0xFF1A || c == 0x060C || c == 0x061B || c == 0x104A ||
           c == 0x1802 || c == 0x1808;
}

static bool is_digit(uint32_t c)
{
    return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19);
}

static bool is_lower(uint32_t c)
{
    return utf8proc_category((utf8proc_int32_t)c) == UTF8PROC_CATEGORY_LL;
}

/* ---- sentence ends (rule 2) ---- */

static bool is_abbrev_word(const unsigned char *w, size_t n)
{
    static const char *const LIST[] = {
        "mr",  "mrs",  "ms",  "dr",   "prof", "sr",   "jr",     "st",  "vs",  "etc", "no",   "nos",
        "fig", "figs", "vol", "vols", "pp",   "cf",   "approx", "inc", "ltd", "co",  "corp", "dept",
        "ca",  "gen",  "col", "lt",   "sgt",  "rev",  "mt",     "ft",  "nr",  "bzw", "jan",  "feb",
        "apr", "jun",  "jul", "aug",  "sep",  "sept", "oct",    "nov", "dec"};
    char low[8];
    if (n >= sizeof low)
        return false;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)(w[i] | 0x20);
    low[n] = '\0';
    for (size_t i = 0; i < sizeof LIST / sizeof LIST[0]; i++) {
        if (strcmp(low, LIST[i]) == 0)
            return true;
    }
    return false;
}

static bool is_ascii_alpha(unsigned char b)
{
    return (b | 0x20) >= 'a' && (b | 0x20) <= 'z';
}

/* Whether the '.' at dot ends an abbreviation: the ASCII word before it is a single
 * letter, holds inner dots, or is on the list. */
static bool after_abbrev(const struct doc *d, size_t dot)
{
    size_t b = dot;
    while (b > 0 && (is_ascii_alpha(d->t[b - 1]) || d->t[b - 1] == '.'))
        b--;
    if (b == dot || (b > 0 && (d->t[b - 1] >= 0x80 || (d->t[b - 1] >= '0' && d->t[b - 1] <= '9'))))
        return false;
    size_t n = dot - b;
    return n == 1 || memchr(d->t + b, '.', n) != NULL || is_abbrev_word(d->t + b, n);
}

/* Whether the next word on this line (after spaces at i) starts with a lower-case
 * letter or a digit: then a Latin-style terminator does not end the sentence. */
static bool continues_lower(const struct doc *d, size_t i)
{
    int cl;
    while (i < d->len) {
        uint32_t c = char_at(d, i, &cl);
        if (text_is_newline(c))
            return false;
        if (!text_is_space(c))
            return is_lower(c) || is_digit(c);
        i += (size_t)cl;
    }
    return false;
}

/* After terminator ch at [cs, i): the sentence end (after further terminators and
 * closers) when this is a boundary, else 0. */
static size_t sentence_end(const struct doc *d, size_t cs, size_t i, uint32_t ch)
{
    bool wide = is_wide_end(ch);
    size_t end = i;
    int cl;
    while (end < d->len) {
        uint32_t c = char_at(d, end, &cl);
        if (!is_wide_end(c) && !is_narrow_end(c) && !is_closer(c, wide))
            break;
        end += (size_t)cl;
    }
    if (wide) {
        bool decimal = ch == 0xFF0E && i < d->len && is_digit(char_at(d, i, &cl)) &&
                       is_digit(char_before(d, cs));
        return decimal ? 0 : end;
    }
    if (end == d->len)
        return end;
    if (!text_is_space(char_at(d, end, &cl)) || continues_lower(d, end))
        return 0;
    return ch == '.' && after_abbrev(d, cs) ? 0 : end;
}

/* The content from a (not whitespace) to its boundary; returns its end, trailing
 * whitespace excluded. */
static size_t scan_content(const struct doc *d, size_t a)
{
    size_t i = a, ns_end = a;
    while (i < d->len) {
        int cl;
        size_t cs = i;
        uint32_t ch = char_at(d, i, &cl);
        if (text_is_newline(ch))
            break;
        i += (size_t)cl;
        if (text_is_space(ch))
            continue;
        ns_end = i;
        if (is_wide_end(ch) || is_narrow_end(ch)) {
            size_t e = sentence_end(d, cs, i, ch);
            if (e)
                return e;
        }
    }
    return ns_end;
}

/* Skips the whitespace at *pos; returns the break level of what it skipped. */
static enum brk skip_space(const struct doc *d, size_t *pos)
{
    int lines = 0, cl;
    while (*pos < d->len) {
        uint32_t c = char_at(d, *pos, &cl);
        if (!text_is_space(c))
            break;
        if (c == '\r' && *pos + 1 < d->len && d->t[*pos + 1] == '\n')
            cl = 2;
        lines += c == 0x2029 ? 2 : text_is_newline(c);
        *pos += (size_t)cl;
    }
    return lines >= 2 ? BRK_PARA : lines ? BRK_LINE : BRK_NONE;
}

/* ---- cutting over-long units (rule 4) ---- */

static bool fits(const struct doc *d, size_t a, size_t p)
{
    return cnt(d, a, p - a) <= d->max;
}

/* The last character boundary <= target, walking from the boundary from. */
static size_t snap(const struct doc *d, size_t from, size_t target)
{
    for (;;) {
        size_t nx = next_char(d, from);
        if (nx > target)
            return from;
        from = nx;
    }
}

/* A probe strictly inside (lo, hi), on a character boundary, near want. */
static size_t probe_at(const struct doc *d, size_t lo, size_t hi, size_t want)
{
    size_t p = snap(d, lo, want < hi ? want : hi - 1);
    return p > lo ? p : next_char(d, lo);
}

/* The state of longest_fit: [a, lo) fits (count c_lo), [a, hi) does not (count c_hi,
 * SIZE_MAX while not counted yet). */
struct search {
    size_t a, lo, hi, c_lo, c_hi;
    bool bisect; /* the last step did not halve the interval: bisect next */
};

/* Where to probe next (see longest_fit). */
static size_t next_want(const struct doc *d, const struct search *s)
{
    if (s->c_hi == SIZE_MAX) { /* past where the count reaches max + 1 at lo's density */
        double x = (double)(s->lo - s->a) * (double)(d->max + 1) / (double)(s->c_lo ? s->c_lo : 1);
        size_t want = s->a + (size_t)x, least = s->lo + (s->lo - s->a) / 8;
        return want > least ? want : least;
    }
    if (s->bisect || s->c_hi <= s->c_lo)
        return s->lo + (s->hi - s->lo) / 2;
    double x = (double)(s->hi - s->lo) * (double)(d->max - s->c_lo) / (double)(s->c_hi - s->c_lo);
    return s->lo + (size_t)x;
}

/* The longest prefix [a, p) of [a, end) within the limit, p on a character boundary;
 * a when even the first character is over it. c_end: the count of [a, end) when known,
 * else SIZE_MAX; guess: the expected length in bytes. Counts are treated as growing with
 * length: the search keeps lo fitting and hi not, probing first at the guess, then (while
 * hi is not counted) by extrapolating lo's count, then by linear interpolation between
 * the two counts, bisecting after a step that did not halve the interval. */
static size_t longest_fit(const struct doc *d, size_t a, size_t end, size_t c_end, size_t guess)
{
    struct search s = {a, next_char(d, a), end, 0, c_end, false};
    s.c_lo = cnt(d, a, s.lo - a);
    if (s.c_lo > d->max)
        return a;
    size_t want = s.lo + (guess > 0 ? guess : d->max);
    /* s.lo may be the end of the text (one character left): no character to step over */
    while ((s.lo < s.hi && next_char(d, s.lo) < s.hi) || s.c_hi == SIZE_MAX) {
        size_t p = want >= s.hi ? s.hi : probe_at(d, s.lo, s.hi, want);
        size_t c = cnt(d, a, p - a), width = s.hi - s.lo;
        if (c <= d->max) {
            if (p == end)
                return end;
            s.lo = p, s.c_lo = c;
        } else {
            s.hi = p, s.c_hi = c;
        }
        s.bisect = !s.bisect && 2 * (s.hi - s.lo) > width;
        want = next_want(d, &s);
    }
    return s.lo;
}

/* Best break point in [a, p] (rule 4); returns the end of the piece before it, trailing
 * whitespace excluded. cand[0]: after a clause mark, [1]: at a space, [2]: between
 * grapheme clusters; each holds the piece end of the last such point seen. */
static size_t best_break(const struct doc *d, size_t a, size_t p)
{
    size_t cand[3] = {0, 0, 0}, i = a, ns_end = a;
    uint32_t prev = 0;
    utf8proc_int32_t gstate = 0;
    while (i < d->len && i <= p) {
        int cl;
        uint32_t c = char_at(d, i, &cl);
        if (i > a &&
            utf8proc_grapheme_break_stateful((utf8proc_int32_t)prev, (utf8proc_int32_t)c, &gstate))
            cand[2] = ns_end;
        if (text_is_break_space(c))
            cand[1] = ns_end;
        if (text_is_break_space(c) && (prev == ',' || prev == ';' || prev == ':'))
            cand[0] = ns_end;
        if (i == p)
            break; /* the character after the prefix only tells what is before it */
        i += (size_t)cl;
        if (!text_is_space(c))
            ns_end = i;
        if (c == 0x200B || c == 0x0F0B) /* zero-width space, Tibetan tsheg */
            cand[1] = i;
        if (is_wide_clause(c))
            cand[0] = i;
        prev = c;
    }
    /* cutting inside a word is worse than a short piece: a space in the last three
     * quarters beats a grapheme boundary in the second half */
    size_t half = a + (p - a) / 2, quarter = a + (p - a) / 4;
    if (cand[0] >= half && cand[0] > a)
        return cand[0];
    if (cand[1] >= quarter && cand[1] > a)
        return cand[1];
    if (cand[2] >= half && cand[2] > a)
        return cand[2];
    for (int t = 1; t >= 0; t--) {
        if (cand[t] > a)
            return cand[t];
    }
    return cand[2] > a ? cand[2] : ns_end > a ? ns_end : p;
}

/* The end of the first piece of the over-long content [a, end); c_end and guess as for
 * longest_fit. *tokens receives the piece's count. */
static size_t hard_split(const struct doc *d, size_t a, size_t end, size_t c_end, size_t guess,
                         size_t *tokens)
{
    size_t p = longest_fit(d, a, end, c_end, guess);
    while (p > a) {
        size_t q = p == end ? end : best_break(d, a, p);
        if (q > a && (*tokens = cnt(d, a, q - a)) <= d->max)
            return q;
        p = snap(d, a, q > a ? q - 1 : a); /* the count is not monotonic: try shorter */
    }
    p = next_char(d, a); /* one character over the limit: a piece by itself */
    *tokens = cnt(d, a, p - a);
    return p;
}

/* ---- units and merging ---- */

/* The next unit, or false at the end of the text (u->sep_off is then the start of the
 * trailing whitespace). */
static bool next_unit(struct scanner *s, struct unit *u)
{
    const struct doc *d = s->d;
    u->sep_off = s->pos;
    u->brk = skip_space(d, &s->pos);
    if (s->pos >= d->len)
        return false;
    u->off = s->pos;
    size_t end = s->pend_end, a = u->off;
    s->pend_end = 0;
    if (end > a) { /* the rest of an over-long unit; pieces are alike in length */
        u->end = hard_split(d, a, end, SIZE_MAX, s->piece, &u->tokens);
    } else if ((end = scan_content(d, a)) - a > LONG_UNIT * d->max) {
        /* surely over the limit: cut it without counting all of it */
        u->end = hard_split(d, a, end, SIZE_MAX, LONG_UNIT / 4 * d->max, &u->tokens);
    } else if ((u->tokens = cnt(d, a, end - a)) > d->max) {
        double bytes = (double)(end - a) / (double)u->tokens * (double)d->max;
        u->end = hard_split(d, a, end, u->tokens, (size_t)bytes + 1, &u->tokens);
    } else {
        u->end = end;
    }
    if (u->end < end)
        s->pend_end = end, s->piece = u->end - a;
    s->pos = u->end;
    return true;
}

static void emit(struct out *o, size_t sep_off, size_t off, size_t end)
{
    if (o->n < o->cap) {
        struct hy_seg *g = &o->segs[o->n];
        g->sep_off = sep_off, g->sep_len = off - sep_off;
        g->off = off, g->len = end - off;
    }
    o->n++;
}

/* Advances s by up to k units; returns how many, *end the end of the last. */
static size_t advance(struct scanner *s, size_t k, size_t *end)
{
    struct unit u;
    size_t n = 0;
    while (n < k && next_unit(s, &u))
        n++, *end = u.end;
    return n;
}

/* After the unit ending at *end with the scanner at *s: the most further units that still
 * fit from off (gallop, then binary search, counting each candidate exactly); moves *s
 * and *end past them. */
static void grow_exact(const struct doc *d, size_t off, struct scanner *s, size_t *end)
{
    const struct scanner base = *s;
    size_t good = 0, bad = 0, e = 0;
    for (size_t k = 1; !bad; k *= 2) {
        struct scanner t = base;
        size_t m = advance(&t, k, &e);
        if (m > good && fits(d, off, e))
            good = m, *s = t, *end = e;
        else if (m > good)
            bad = m;
        if (m < k)
            break; /* no more units */
    }
    while (bad > good + 1) {
        struct scanner t = base;
        size_t mid = good + (bad - good) / 2;
        advance(&t, mid, &e);
        if (fits(d, off, e))
            good = mid, *s = t, *end = e;
        else
            bad = mid;
    }
}

/* Emits [off, end) (after the separator from sep_off), which the estimate put within
 * the limit: checked exactly, and packed again with exact counts if over. */
static void emit_checked(const struct doc *d, struct out *o, size_t sep_off, size_t off, size_t end)
{
    if (cnt(d, off, end - off) <= d->max) {
        emit(o, sep_off, off, end);
        return;
    }
    /* The view ends at end: with a count that is not monotonic, units scanned afresh
     * may differ from the first pass, but they still tile [off, end). */
    struct doc sub = *d;
    sub.len = end;
    struct scanner s = {&sub, off, 0, 0};
    struct unit first;
    while (next_unit(&s, &first)) {
        size_t seg_end = first.end;
        grow_exact(d, first.off, &s, &seg_end);
        emit(o, first.sep_off == off ? sep_off : first.sep_off, first.off, seg_end);
    }
}

/* What unit u adds to the estimated count of the segment before it, or SIZE_MAX when it
 * may not join it (rule 3). */
static size_t join_cost(const struct doc *d, const struct unit *u)
{
    if (u->brk == BRK_PARA || (d->keep_lines && u->brk == BRK_LINE))
        return SIZE_MAX;
    size_t sep = u->off > u->sep_off ? cnt(d, u->sep_off, u->off - u->sep_off) : 0;
    return sep + u->tokens;
}

static void flush(const struct doc *d, struct out *o, bool merged, size_t sep_off, size_t off,
                  size_t end)
{
    if (merged)
        emit_checked(d, o, sep_off, off, end);
    else
        emit(o, sep_off, off, end);
}

hy_status hy_seg_split(const char *text, size_t len, const struct hy_seg_opts *opts,
                       struct hy_seg *segs, size_t cap, size_t *n_out, size_t *trail_off,
                       struct hy_err *err)
{
    *n_out = 0;
    *trail_off = 0;
    if (opts->max_tokens == 0)
        return hy_err_set(err, HY_E_RANGE, "segment: max_tokens must be at least 1");
    struct doc d = {(const unsigned char *)text,
                    len,
                    opts->max_tokens,
                    opts->count ? opts->count : count_bytes,
                    opts->ctx,
                    opts->keep_lines};
    struct scanner s = {&d, 0, 0, 0};
    struct out o = {segs, cap, 0};
    struct unit u;
    size_t sep_off = 0, off = 0, end = 0, est = 0;
    bool have = false, merged = false;
    while (next_unit(&s, &u)) {
        size_t add = have ? join_cost(&d, &u) : SIZE_MAX;
        if (add <= d.max && est + add <= d.max) {
            est += add, end = u.end, merged = true;
            continue;
        }
        if (have)
            flush(&d, &o, merged, sep_off, off, end);
        sep_off = u.sep_off, off = u.off, end = u.end, est = u.tokens;
        have = true, merged = false;
    }
    if (have)
        flush(&d, &o, merged, sep_off, off, end);
    *n_out = o.n;
    *trail_off = u.sep_off;
    if (o.n > cap)
        return hy_err_set(err, HY_E_NOSPACE, "segment: %zu segments, room for %zu", o.n, cap);
    return HY_OK;
}

/* ---- reassembly ---- */

/* Trims White_Space from both ends of s[0..*n); returns the new start. */
static const char *trim(const char *s, size_t *n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, start = *n, end = 0;
    while (i < *n) {
        int cl;
        uint32_t c = text_decode(p + i, *n - i, &cl);
        if (!text_is_space(c)) {
            start = start < i ? start : i;
            end = i + (size_t)cl;
        }
        i += (size_t)cl;
    }
    *n = end > start ? end - start : 0;
    return s + (start < end ? start : 0);
}

static void put(char *buf, size_t cap, size_t *at, const char *s, size_t n)
{
    if (*at <= cap && n <= cap - *at)
        memcpy(buf + *at, s, n);
    *at += n;
}

hy_status hy_seg_join(const char *text, size_t len, const struct hy_seg *segs, size_t n,
                      size_t trail_off, const char *const *outs, const size_t *out_lens, char *buf,
                      size_t cap, size_t *n_out, struct hy_err *err)
{
    size_t at = 0, expect = 0;
    *n_out = 0;
    for (size_t i = 0; i < n; i++) {
        const struct hy_seg *g = &segs[i];
        if (g->sep_off != expect || g->off != g->sep_off + g->sep_len || g->off + g->len > len)
            return hy_err_set(err, HY_E_INVAL, "segment %zu does not follow the one before", i);
        expect = g->off + g->len;
        put(buf, cap, &at, text + g->sep_off, g->sep_len);
        size_t m = outs && outs[i] ? out_lens[i] : g->len;
        const char *s = outs && outs[i] ? trim(outs[i], &m) : text + g->off;
        put(buf, cap, &at, s, m);
    }
    if (trail_off != expect || trail_off > len)
        return hy_err_set(err, HY_E_INVAL, "trailing whitespace at %zu, segments end at %zu",
                          trail_off, expect);
    put(buf, cap, &at, text + trail_off, len - trail_off);
    *n_out = at;
    if (at > cap)
        return hy_err_set(err, HY_E_NOSPACE, "segment join: %zu bytes, room for %zu", at, cap);
    return HY_OK;
}
