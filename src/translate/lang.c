/* lang.c: the language table and name lookup (contract in lang.h). */
#include "translate/lang.h"

#include "core/status.h"
#include "translate/lang_table.h"
#include "translate/text.h"

#include <stdint.h>
#include <string.h>
#include <utf8proc.h>

#define NAME_MAX_BYTES 64 /* longer input is no language name (lang_table.cmake's limit) */

size_t hy_lang_count(void)
{
    return hy_lang_n_rows;
}

const struct hy_lang *hy_lang_at(size_t i)
{
    HY_ASSERT(i < hy_lang_n_rows);
    return &hy_lang_rows[i].lang;
}

/* Next code point of *s (before end), folded for comparison: lower case, '_' as '-'. */
static uint32_t fold_next(const char **s, const char *end)
{
    int len;
    uint32_t c = text_decode((const unsigned char *)*s, (size_t)(end - *s), &len);
    *s += len;
    if (c == '_')
        return '-';
    return c == TEXT_BAD ? c : (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
}

static bool name_eq(const char *a, size_t an, const char *b, size_t bn)
{
    const char *ae = a + an, *be = b + bn;
    while (a < ae && b < be) {
        if (fold_next(&a, ae) != fold_next(&b, be))
            return false;
    }
    return a == ae && b == be;
}

static bool alias_match(const char *s, size_t n, const char *aliases)
{
    while (*aliases) {
        const char *bar = strchr(aliases, '|');
        size_t an = bar ? (size_t)(bar - aliases) : strlen(aliases);
        if (name_eq(s, n, aliases, an))
            return true;
        aliases += an + (bar != NULL);
    }
    return false;
}

/* Exact (folded) match of s[0..n) against every name column, then the aliases. */
static const struct hy_lang *match(const char *s, size_t n)
{
    for (size_t i = 0; i < hy_lang_n_rows; i++) {
        const struct hy_lang *l = &hy_lang_rows[i].lang;
        if (name_eq(s, n, l->code, strlen(l->code)) ||
            name_eq(s, n, l->name_en, strlen(l->name_en)) ||
            name_eq(s, n, l->name_zh, strlen(l->name_zh)) ||
            name_eq(s, n, l->native, strlen(l->native)))
            return l;
    }
    for (size_t i = 0; i < hy_lang_n_rows; i++) {
        if (alias_match(s, n, hy_lang_rows[i].aliases))
            return &hy_lang_rows[i].lang;
    }
    return NULL;
}

/* Chinese names are spelled "...语" in the table; people also write "...文" (written
 * language), "...語" (traditional) or "...话/話" (spoken): 英文, 日語, 上海话. */
static const struct hy_lang *match_zh_suffix(const char *s, size_t n)
{
    static const char *const SUFFIXES[] = {"文", "語", "话", "話"};
    char buf[NAME_MAX_BYTES + 4];
    if (n < 6)
        return NULL;
    for (size_t i = 0; i < sizeof SUFFIXES / sizeof SUFFIXES[0]; i++) {
        if (memcmp(s + n - 3, SUFFIXES[i], 3) == 0) {
            memcpy(buf, s, n - 3);
            memcpy(buf + n - 3, "语", 3);
            return match(buf, n);
        }
    }
    return NULL;
}

static bool is_ascii_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

const struct hy_lang *hy_lang_find(const char *name)
{
    if (!name)
        return NULL;
    size_t n = strlen(name);
    while (n > 0 && is_ascii_space(name[n - 1]))
        n--;
    while (n > 0 && is_ascii_space(*name))
        name++, n--;
    if (n == 0 || n > NAME_MAX_BYTES)
        return NULL;
    const struct hy_lang *l = match(name, n);
    if (!l)
        l = match_zh_suffix(name, n);
    /* Region and script subtags: drop the last one while nothing matches. */
    while (!l) {
        size_t k = n;
        while (k > 0 && name[k - 1] != '-' && name[k - 1] != '_')
            k--;
        if (k <= 1)
            break;
        n = k - 1;
        l = match(name, n);
    }
    return l;
}

/* Appends s to buf at *at, writing only what fits before the final NUL. */
static void append(char *buf, size_t cap, size_t *at, const char *s)
{
    for (; *s; s++, (*at)++) {
        if (*at + 1 < cap)
            buf[*at] = *s;
    }
}

size_t hy_lang_list(char *buf, size_t cap)
{
    size_t need = 0;
    for (size_t i = 0; i < hy_lang_n_rows; i++) {
        append(buf, cap, &need, i ? ", " : "");
        append(buf, cap, &need, hy_lang_rows[i].lang.code);
    }
    if (cap > 0)
        buf[need < cap ? need : cap - 1] = '\0';
    return need;
}

/* The bit of generation gen in the rows' masks; 0 when the table has no such generation. */
static uint32_t gen_bit(const char *gen)
{
    for (size_t i = 0; gen && i < hy_lang_n_gens; i++)
        if (strcmp(hy_lang_gen_names[i], gen) == 0)
            return (uint32_t)1 << i;
    return 0;
}

size_t hy_lang_gen_count(const char *gen)
{
    uint32_t bit = gen_bit(gen);
    size_t n = 0;
    for (size_t i = 0; bit && i < hy_lang_n_rows; i++)
        n += (hy_lang_rows[i].gens & bit) != 0;
    return n;
}

const struct hy_lang *hy_lang_gen_at(const char *gen, size_t i)
{
    uint32_t bit = gen_bit(gen);
    HY_ASSERT(bit != 0);
    for (size_t r = 0; r < hy_lang_n_rows; r++)
        if ((hy_lang_rows[r].gens & bit) && i-- == 0)
            return &hy_lang_rows[r].lang;
    HY_ASSERT(!"hy_lang_gen_at: index past the table");
    return NULL;
}

bool hy_lang_gen_has(const char *gen, const struct hy_lang *l)
{
    /* a language of the table is its row's first member (lang_table.h); compared as
     * integers, since a pointer from elsewhere may not be compared with the table's */
    uintptr_t p = (uintptr_t)l, lo = (uintptr_t)hy_lang_rows, row = sizeof *hy_lang_rows;
    if (p < lo || p - lo >= hy_lang_n_rows * row || (p - lo) % row)
        return false;
    return (hy_lang_rows[(p - lo) / row].gens & gen_bit(gen)) != 0;
}
