/* lang_ngram_test.c: the embedded n-gram table and the scorer. */
#include "translate/lang_ngram.h"

#include "core/status.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Every language is a table language in its script group; keys sorted; the bucket index
 * brackets every key; every entry a valid language and a score of 1..255. */
static void test_table(void)
{
    struct hy_ngram_table t;
    hy_ngram_table(&t);
    CHECK(t.n_langs >= 20 && t.n_langs <= HY_NGRAM_MAX_LANGS);
    CHECK(t.n_entries > 10000);
    const char *const scripts[] = {"Latn", "Cyrl", "Arab", "Deva", "Hani"};
    const enum hy_script ids[] = {HY_SCRIPT_LATIN, HY_SCRIPT_CYRILLIC, HY_SCRIPT_ARABIC,
                                  HY_SCRIPT_DEVANAGARI, HY_SCRIPT_HAN};
    for (uint32_t i = 0; i < t.n_langs; i++) {
        const char *code = hy_ngram_lang_code(&t, i);
        CHECKF(memchr(code, 0, 8) && memchr(code + 8, 0, 8), "language %u not terminated", i);
        const struct hy_lang *l = hy_lang_find(code);
        CHECKF(l && !strcmp(l->code, code), "%s is no table language", code);
        int in = 0;
        for (int s = 0; s < 5; s++) {
            if (hy_ngram_lang_in(&t, i, ids[s])) {
                in++;
                CHECK(!strcmp(code + 8, scripts[s]));
                /* the table's script is the language's, except Mongolian (Cyrillic too) */
                CHECKF(!l || l->script == ids[s] || !strcmp(code, "mn"), "%s", code);
            }
        }
        CHECKF(in == 1, "%s in %d groups", code, in);
    }
    int bad = 0;
    for (uint32_t i = 0; i < t.n_entries; i++) {
        uint32_t k = rd32(t.keys + (size_t)i * 4), b = k >> (32 - t.index_bits);
        bad += i > 0 && k < rd32(t.keys + (size_t)(i - 1) * 4);
        bad += t.langs[i] >= t.n_langs || t.score[i] == 0;
        bad += !(rd32(t.start + (size_t)b * 4) <= i && i < rd32(t.start + (size_t)b * 4 + 4));
    }
    CHECKF(bad == 0, "%d bad entries", bad);
    CHECK(rd32(t.start) == 0 && rd32(t.start + ((size_t)1 << t.index_bits) * 4) == t.n_entries);
}

static int best(const struct hy_ngram_table *t, const int64_t *score, enum hy_script s)
{
    int b = -1;
    for (uint32_t i = 0; i < t->n_langs; i++) {
        if (hy_ngram_lang_in(t, i, s) && (b < 0 || score[i] > score[b]))
            b = (int)i;
    }
    return b;
}

static void test_score(void)
{
    struct hy_ngram_table t;
    hy_ngram_table(&t);
    int64_t score[HY_NGRAM_MAX_LANGS];
    CHECK(hy_ngram_hash((const unsigned char *)"a", 1) == 0xE40C292Cu); /* FNV-1a's own */
    CHECK(hy_ngram_hash((const unsigned char *)"", 0) == 0x811C9DC5u);
    /* "der": padded " der " gives 5 unigrams... : 3 + 4 + 3 grams of orders 1, 2, 3 */
    size_t n = hy_ngram_score(&t, "der", 3, HY_SCRIPT_LATIN, score);
    CHECK(n == 3 + 4 + 3);
    const char *de = "Die Katze schläft auf dem warmen Sofa neben dem Fenster.";
    CHECK(hy_ngram_score(&t, de, strlen(de), HY_SCRIPT_LATIN, score) > 50);
    int b = best(&t, score, HY_SCRIPT_LATIN);
    CHECK(b >= 0 && !strcmp(hy_ngram_lang_code(&t, (uint32_t)b), "de"));
    /* words of another script are not scored; nothing at all gives 0 grams */
    CHECK(hy_ngram_score(&t, de, strlen(de), HY_SCRIPT_CYRILLIC, score) == 0);
    CHECK(hy_ngram_score(&t, "12 34 !?", 8, HY_SCRIPT_LATIN, score) == 0);
    CHECK(hy_ngram_score(&t, "", 0, HY_SCRIPT_LATIN, score) == 0);
    for (uint32_t i = 0; i < t.n_langs; i++)
        CHECK(score[i] == 0);
    /* case does not matter (the table is lower case) */
    int64_t upper[HY_NGRAM_MAX_LANGS];
    hy_ngram_score(&t, "DIE KATZE", 9, HY_SCRIPT_LATIN, upper);
    hy_ngram_score(&t, "die katze", 9, HY_SCRIPT_LATIN, score);
    CHECK(memcmp(upper, score, t.n_langs * sizeof score[0]) == 0);
    /* only the first HY_NGRAM_TEXT_MAX bytes count; a word of 1000 letters is cut into
     * words, never overruns */
    size_t big = HY_NGRAM_TEXT_MAX * 2;
    char *text = malloc(big);
    HY_ASSERT(text);
    for (size_t i = 0; i < big; i++)
        text[i] = i % 1000 == 999 ? ' ' : (char)('a' + i % 26);
    size_t full = hy_ngram_score(&t, text, big, HY_SCRIPT_LATIN, score);
    size_t half = hy_ngram_score(&t, text, HY_NGRAM_TEXT_MAX, HY_SCRIPT_LATIN, score);
    CHECK(full == half && full > 0);
    free(text);
}

int main(void)
{
    test_table();
    test_score();
    return test_result();
}
