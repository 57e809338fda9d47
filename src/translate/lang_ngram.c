/* lang_ngram.c: n-gram scoring over the embedded table (contract in lang_ngram.h). The
 * tokenization mirrors scripts/lang_profiles.py exactly (words, case, script test, grams):
 * a change to one is a change to both, and the table must be regenerated. */
#include "translate/lang_ngram.h"

#include "core/status.h"
#include "translate/text.h"

#include <string.h>
#include <utf8proc.h>

/* Generated from lang_profiles.bin by cmake/embed.cmake. */
const unsigned char *hy_lang_profiles(size_t *len);

#define HEADER_BYTES 28
#define INFO_BYTES 16 /* per language: code[8], script[8] */
#define WORD_MAX 48 /* code points of one word; a longer run is cut into words */

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void hy_ngram_table(struct hy_ngram_table *t)
{
    size_t len;
    const unsigned char *p = hy_lang_profiles(&len);
    HY_ASSERT(len >= HEADER_BYTES && !memcmp(p, "HYLP", 4) && rd32(p + 4) == 2);
    t->n_langs = rd32(p + 8);
    t->n_entries = rd32(p + 12);
    t->step = rd32(p + 16);
    t->floor = rd32(p + 20);
    t->index_bits = rd32(p + 24);
    HY_ASSERT(t->n_langs <= HY_NGRAM_MAX_LANGS && t->step > 0);
    HY_ASSERT(t->index_bits >= 1 && t->index_bits <= 20);
    size_t index = ((size_t)1 << t->index_bits) + 1;
    HY_ASSERT(len == HEADER_BYTES + (size_t)t->n_langs * INFO_BYTES + index * 4 +
                         (size_t)t->n_entries * 6);
    t->langs_info = (const char *)p + HEADER_BYTES;
    t->start = p + HEADER_BYTES + (size_t)t->n_langs * INFO_BYTES;
    t->keys = t->start + index * 4;
    t->langs = t->keys + (size_t)t->n_entries * 4;
    t->score = t->langs + t->n_entries;
}

const char *hy_ngram_lang_code(const struct hy_ngram_table *t, uint32_t i)
{
    HY_ASSERT(i < t->n_langs);
    return t->langs_info + (size_t)i * INFO_BYTES;
}

bool hy_ngram_lang_in(const struct hy_ngram_table *t, uint32_t i, enum hy_script s)
{
    const char *iso = s == HY_SCRIPT_LATIN        ? "Latn"
                      : s == HY_SCRIPT_CYRILLIC   ? "Cyrl"
                      : s == HY_SCRIPT_ARABIC     ? "Arab"
                      : s == HY_SCRIPT_DEVANAGARI ? "Deva"
                      : s == HY_SCRIPT_HAN        ? "Hani"
                                                  : NULL;
    return iso && !strcmp(hy_ngram_lang_code(t, i) + 8, iso);
}

uint32_t hy_ngram_hash(const unsigned char *p, size_t n)
{
    uint32_t h = 0x811C9DC5u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x01000193u;
    return h;
}

/* The script a letter counts for in the word test (the generator's script_of). */
static enum hy_script word_script(uint32_t c)
{
    if ((c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
        (c >= 0xF900 && c <= 0xFAFF) || c >= 0x20000)
        return HY_SCRIPT_HAN;
    if (c >= 0x400 && c <= 0x52F)
        return HY_SCRIPT_CYRILLIC;
    if ((c >= 0x600 && c <= 0x6FF) || (c >= 0x750 && c <= 0x77F) ||
        (c >= 0xFB50 && c <= 0xFDFF) || (c >= 0xFE70 && c <= 0xFEFF))
        return HY_SCRIPT_ARABIC;
    if (c >= 0x900 && c <= 0x97F)
        return HY_SCRIPT_DEVANAGARI;
    if (c < 0x250 || (c >= 0x1E00 && c <= 0x1EFF))
        return HY_SCRIPT_LATIN;
    return HY_SCRIPT_OTHER;
}

/* 1: a letter, 2: a mark (part of a word, not counted in its script test), 0: neither. */
static int letter_kind(uint32_t c)
{
    if (c == TEXT_BAD)
        return 0;
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    if (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO)
        return 1;
    return k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME ? 2 : 0;
}

/* Adds the points of one gram (its UTF-8 bytes) to score. */
static void add_gram(const struct hy_ngram_table *t, const unsigned char *g, size_t n,
                     int64_t *score)
{
    uint32_t h = hy_ngram_hash(g, n), b = h >> (32 - t->index_bits);
    size_t lo = rd32(t->start + (size_t)b * 4), hi = rd32(t->start + (size_t)b * 4 + 4);
    HY_ASSERT(lo <= hi && hi <= t->n_entries);
    while (lo < hi) { /* the first entry with key >= h */
        size_t mid = lo + (hi - lo) / 2;
        if (rd32(t->keys + mid * 4) < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < t->n_entries && rd32(t->keys + lo * 4) == h; lo++)
        score[t->langs[lo]] += t->score[lo];
}

struct word {
    uint32_t cp[WORD_MAX + 2]; /* ' ', the word, ' ' */
    int n;                     /* code points of the word */
    int letters, in_script;
};

/* Scores the grams of w when most of its letters are in script s; returns their count. */
static size_t score_word(const struct hy_ngram_table *t, struct word *w, enum hy_script s,
                         int64_t *score)
{
    if (w->n == 0 || w->letters == 0 || 2 * w->in_script < w->letters)
        return 0;
    int top = s == HY_SCRIPT_HAN ? 2 : 3, len = w->n + 2;
    w->cp[0] = ' ';
    w->cp[len - 1] = ' ';
    size_t count = 0;
    for (int order = 1; order <= top; order++) {
        for (int i = 0; i + order <= len; i++) {
            unsigned char buf[16];
            size_t nb = 0;
            bool blank = true;
            for (int j = i; j < i + order; j++) {
                blank = blank && w->cp[j] == ' ';
                nb += (size_t)utf8proc_encode_char((utf8proc_int32_t)w->cp[j], buf + nb);
            }
            if (blank)
                continue;
            add_gram(t, buf, nb, score);
            count++;
        }
    }
    return count;
}

size_t hy_ngram_score(const struct hy_ngram_table *t, const char *text, size_t len,
                      enum hy_script s, int64_t *score)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t n = len < HY_NGRAM_TEXT_MAX ? len : HY_NGRAM_TEXT_MAX, count = 0;
    struct word w = {.n = 0};
    memset(score, 0, t->n_langs * sizeof *score);
    for (size_t i = 0; i <= n;) {
        int cl = 1;
        uint32_t c = i < n ? text_decode(p + i, n - i, &cl) : ' ';
        i += (size_t)cl;
        int kind = letter_kind(c);
        if (kind && w.n < WORD_MAX) {
            /* simple lower case; U+0130 keeps its form as the generator's full mapping
             * gives two code points there */
            uint32_t lo = c == 0x130 ? c : (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
            w.cp[1 + w.n++] = lo;
            w.letters += kind == 1;
            w.in_script += kind == 1 && word_script(c) == s;
            continue;
        }
        count += score_word(t, &w, s, score);
        w.n = w.letters = w.in_script = 0;
        if (kind) { /* a word longer than WORD_MAX: c starts the next one */
            w.cp[1 + w.n++] = (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
            w.letters = kind == 1;
            w.in_script = kind == 1 && word_script(c) == s;
        }
    }
    return count;
}
