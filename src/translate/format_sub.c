/* format_sub.c: SRT and WebVTT splitters (contract in format.h). Both are blocks of
 * non-blank lines apart by blank lines; a cue block has a timing line (holding "-->") as
 * its first or second line, and the lines after it are the cue text. A block of any other
 * shape is left as it is. */
#include "translate/format_impl.h"

#include <string.h>

/* The block starting at a (a non-blank line): *end is the end of its last line's content,
 * *next the start of the line after the block's closing blank line or the end. */
static void block(const struct fmt_runs *k, size_t a, size_t *end, size_t *next)
{
    size_t p = a, e, n;
    *end = a;
    while (p < k->len) {
        fmt_line(k, p, &e, &n);
        if (fmt_blank(k, p, e))
            break;
        *end = e;
        p = n;
    }
    *next = p;
}

static bool has_arrow(const struct fmt_runs *k, size_t a, size_t b)
{
    for (size_t i = a; i + 3 <= b; i++)
        if (!memcmp(k->t + i, "-->", 3))
            return true;
    return false;
}

static bool starts_word(const struct fmt_runs *k, size_t a, size_t b, const char *w)
{
    size_t n = strlen(w);
    if (b - a < n || memcmp(k->t + a, w, n))
        return false;
    return a + n == b || k->t[a + n] == ' ' || k->t[a + n] == '\t';
}

/* Walks the blocks; cue text (after the timing line) goes to fmt_inline_tags. vtt: skip
 * the header and NOTE/STYLE/REGION blocks. */
static void cues(struct fmt_runs *k, bool vtt)
{
    size_t p = 0;
    if (k->len >= 3 && !memcmp(k->t, "\xEF\xBB\xBF", 3))
        p = 3;
    bool first = true;
    while (p < k->len) {
        size_t e, n;
        fmt_line(k, p, &e, &n);
        if (fmt_blank(k, p, e)) {
            p = n;
            continue;
        }
        size_t b_end, b_next;
        block(k, p, &b_end, &b_next);
        bool skip = vtt && ((first && starts_word(k, p, e, "WEBVTT")) ||
                            starts_word(k, p, e, "NOTE") || starts_word(k, p, e, "STYLE") ||
                            starts_word(k, p, e, "REGION"));
        first = false;
        if (!skip) {
            size_t text = 0;
            if (has_arrow(k, p, e)) {
                text = n;
            } else if (n < b_end) {
                size_t e2, n2;
                fmt_line(k, n, &e2, &n2);
                if (has_arrow(k, n, e2))
                    text = n2;
            }
            if (text && text < b_end)
                fmt_inline_tags(k, text, b_end, !vtt);
        }
        p = b_next;
    }
}

void fmt_split_srt(struct fmt_runs *k)
{
    cues(k, false);
}

void fmt_split_vtt(struct fmt_runs *k)
{
    cues(k, true);
}
