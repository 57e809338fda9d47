/* lang_detect.c: the source language of a text (contract in lang.h).
 *
 * Rules, in order:
 * 1. Count the characters of each script (lang.h enum) in the first HY_LANG_DETECT_MAX
 *    bytes. A Han, kana or Hangul character weighs 3 (it carries about as much as three
 *    alphabetic letters); every other letter weighs 1; digits, punctuation, spaces and
 *    unlisted scripts are ignored.
 * 2. Han characters join kana when kana is at least 1/6 of Han+kana (Japanese), else
 *    Hangul when Hangul is at least 1/6 of Han+Hangul (Korean with hanja).
 * 3. The heaviest script must outweigh all others together, else undecided. Its share of
 *    the weight scales every confidence.
 * 4. A script used by one table language decides it (kana -> ja, Hangul -> ko, Thai,
 *    Tibetan, Khmer, Burmese, Hebrew, Gujarati, Bengali, Telugu, Tamil, Mongolian).
 * 5. Han with >= YUE_MIN Cantonese-only characters (嘅咗冇喺哋...) making >= 1/30 of it
 *    -> yue (the catalogs have no written Cantonese to learn it from).
 * 6. Han whose simplified-only forms of a small table of common characters (这们个说...)
 *    are at least 4 times as frequent as their traditional-only forms (這們個說...) -> zh,
 *    and the other way round -> zh-Hant: everyday words are rare in the software catalogs
 *    the Han profiles come from, so one 气 decides better than their n-grams. Confidence:
 *    1 - 1/(2 + 2n) for n such characters (75% for one, 90% for four), the rest to the other.
 * 7. Shared scripts (Latin, Cyrillic, Arabic, Devanagari, Han): the n-gram profiles of the
 *    languages written in it score the words in that script (lang_ngram.h); the
 *    candidates' confidences are the posterior of a naive Bayes over the grams, its
 *    log-odds divided by sqrt(grams) (the grams of one text are far from independent:
 *    undivided, every short text would come out 100% sure), mixed with the uniform in
 *    the ratio grams : SHRINK_GRAMS (one word is a weak hint whatever its letters).
 * 8. Where no gram of the text is in the table, the letter rules decide alone:
 *    Han: zh-Hant when rule 6 would say so, else zh.
 *    Cyrillic: ә ғ қ ң ұ һ -> kk; є ї ґ -> uk; ө ү -> mn; і without ы э ъ ё ў -> uk.
 *    Arabic: ۆ ۇ ۈ ۋ ې ە -> ug; ٹ ڈ ڑ ں ہ ھ ے ۓ -> ur; پ چ ژ گ ی ک at least as frequent as
 *         the Arabic-only ي ك ى ة -> fa.
 *    Devanagari: ळ -> mr (Hindi does not use it).
 *    Else undecided. */
#include "translate/lang.h"

#include "translate/lang_ngram.h"
#include "translate/text.h"

#include <math.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 这们个... : simplified forms never used in traditional text (sorted code points). */
static const uint32_t SIMP_ONLY[] = {
    0x4E07, 0x4E0E, 0x4E1A, 0x4E1C, 0x4E24, 0x4E2A, 0x4E3A, 0x4E66, 0x4E70, 0x4EB2, 0x4ECE, 0x4EEC,
    0x4F1A, 0x5173, 0x5199, 0x52A8, 0x534E, 0x5356, 0x53D1, 0x5417, 0x542C, 0x5458, 0x56FD, 0x573A,
    0x5934, 0x5B66, 0x5B9E, 0x5BF9, 0x5C06, 0x5C81, 0x5E7F, 0x5E94, 0x5F00, 0x62A5, 0x65E0, 0x65F6,
    0x673A, 0x6761, 0x6765, 0x6837, 0x6B22, 0x6C14, 0x6CA1, 0x6E7E, 0x70B9, 0x70ED, 0x7231, 0x73B0,
    0x7535, 0x79CD, 0x7EA7, 0x7ECF, 0x7ED9, 0x89C1, 0x89C6, 0x89C9, 0x8BA4, 0x8BA9, 0x8BB0, 0x8BDD,
    0x8BE5, 0x8BED, 0x8BF4, 0x8BF7, 0x8BFB, 0x8C22, 0x8F66, 0x8FB9, 0x8FC7, 0x8FD8, 0x8FD9, 0x8FDB,
    0x949F, 0x94B1, 0x957F, 0x95E8, 0x95EE, 0x95F4, 0x96BE, 0x98CE, 0x98DE, 0x9A6C, 0x9C7C, 0x9E1F,
};

/* 這們個... : their traditional forms, never used in simplified text (sorted). */
static const uint32_t TRAD_ONLY[] = {
    0x4F86, 0x500B, 0x5011, 0x5169, 0x52D5, 0x54E1, 0x554F, 0x55CE, 0x570B, 0x5831, 0x5834, 0x5B78,
    0x5BE6, 0x5BEB, 0x5C07, 0x5C0D, 0x5EE3, 0x5F9E, 0x611B, 0x61C9, 0x6642, 0x66F8, 0x6703, 0x6771,
    0x689D, 0x696D, 0x6A23, 0x6A5F, 0x6B61, 0x6B72, 0x6C23, 0x6C92, 0x7063, 0x70BA, 0x7121, 0x71B1,
    0x73FE, 0x767C, 0x7A2E, 0x7D1A, 0x7D66, 0x7D93, 0x807D, 0x8207, 0x83EF, 0x842C, 0x898B, 0x8996,
    0x89AA, 0x89BA, 0x8A18, 0x8A71, 0x8A72, 0x8A8D, 0x8A9E, 0x8AAA, 0x8ACB, 0x8B1D, 0x8B80, 0x8B93,
    0x8CB7, 0x8CE3, 0x8ECA, 0x9019, 0x9032, 0x904E, 0x9084, 0x908A, 0x9322, 0x9418, 0x9577, 0x9580,
    0x958B, 0x9593, 0x95DC, 0x96E3, 0x96FB, 0x982D, 0x98A8, 0x98DB, 0x99AC, 0x9B5A, 0x9CE5, 0x9EDE,
};

/* 㗎乜佢俾冇咁咗咩哋唔啱啲喺嗰嘅嘢嘥噉嚟囉揾搵攞睇諗: written Cantonese only (sorted). */
static const uint32_t YUE_ONLY[] = {
    0x35CE, 0x4E5C, 0x4F62, 0x4FFE, 0x5187, 0x5481, 0x5497, 0x54A9, 0x54CB, 0x5514, 0x5571, 0x5572, 0x55BA,
    0x55F0, 0x5605, 0x5622, 0x5625, 0x5649, 0x569F, 0x56C9, 0x63FE, 0x6435, 0x651E, 0x7747, 0x8AD7,
};

/* Letter counts that tell apart the languages sharing a script. */
// clang-format off
enum marker {
    M_TRAD, M_SIMP, M_YUE,
    M_KK, M_UK, M_MN, M_CYR_I, M_NOT_UK,
    M_UG, M_UR, M_FA, M_AR,
    M_MR,
    M_COUNT
};
// clang-format on

struct range {
    uint32_t lo, hi;
    enum hy_script script;
};

/* Letter blocks of the scripts in the table; everything else counts for nothing. */
// clang-format off
static const struct range SCRIPTS[] = {
    {'A', 'Z', HY_SCRIPT_LATIN},          {'a', 'z', HY_SCRIPT_LATIN},
    {0x00C0, 0x00D6, HY_SCRIPT_LATIN},    {0x00D8, 0x00F6, HY_SCRIPT_LATIN},
    {0x00F8, 0x024F, HY_SCRIPT_LATIN},    {0x0400, 0x052F, HY_SCRIPT_CYRILLIC},
    {0x0590, 0x05FF, HY_SCRIPT_HEBREW},   {0x0620, 0x065F, HY_SCRIPT_ARABIC},
    {0x066E, 0x06D3, HY_SCRIPT_ARABIC},   {0x06D5, 0x06FF, HY_SCRIPT_ARABIC},
    {0x0750, 0x077F, HY_SCRIPT_ARABIC},   {0x0900, 0x0963, HY_SCRIPT_DEVANAGARI},
    {0x0966, 0x097F, HY_SCRIPT_DEVANAGARI}, {0x0980, 0x09FF, HY_SCRIPT_BENGALI},
    {0x0A80, 0x0AFF, HY_SCRIPT_GUJARATI}, {0x0B80, 0x0BFF, HY_SCRIPT_TAMIL},
    {0x0C00, 0x0C7F, HY_SCRIPT_TELUGU},   {0x0E00, 0x0E7F, HY_SCRIPT_THAI},
    {0x0F00, 0x0FFF, HY_SCRIPT_TIBETAN},  {0x1000, 0x109F, HY_SCRIPT_MYANMAR},
    {0x1100, 0x11FF, HY_SCRIPT_HANGUL},   {0x1780, 0x17FF, HY_SCRIPT_KHMER},
    {0x1800, 0x18AF, HY_SCRIPT_MONGOLIAN}, {0x19E0, 0x19FF, HY_SCRIPT_KHMER},
    {0x1E00, 0x1EFF, HY_SCRIPT_LATIN},    {0x3005, 0x3007, HY_SCRIPT_HAN},
    {0x3040, 0x309F, HY_SCRIPT_KANA},     {0x30A0, 0x30FA, HY_SCRIPT_KANA},
    {0x30FC, 0x30FF, HY_SCRIPT_KANA},     {0x3130, 0x318F, HY_SCRIPT_HANGUL},
    {0x31F0, 0x31FF, HY_SCRIPT_KANA},     {0x3400, 0x4DBF, HY_SCRIPT_HAN},
    {0x4E00, 0x9FFF, HY_SCRIPT_HAN},      {0xA960, 0xA97F, HY_SCRIPT_HANGUL},
    {0xA9E0, 0xA9FF, HY_SCRIPT_MYANMAR},  {0xAA60, 0xAA7F, HY_SCRIPT_MYANMAR},
    {0xAC00, 0xD7FF, HY_SCRIPT_HANGUL},   {0xF900, 0xFAFF, HY_SCRIPT_HAN},
    {0xFB1D, 0xFB4F, HY_SCRIPT_HEBREW},   {0xFB50, 0xFDFF, HY_SCRIPT_ARABIC},
    {0xFE70, 0xFEFF, HY_SCRIPT_ARABIC},   {0xFF66, 0xFF9D, HY_SCRIPT_KANA},
    {0x11660, 0x1167F, HY_SCRIPT_MONGOLIAN}, {0x20000, 0x3134F, HY_SCRIPT_HAN},
};
// clang-format on

struct counts {
    size_t script[HY_SCRIPT_COUNT];
    size_t marker[M_COUNT];
};

static enum hy_script script_of(uint32_t c)
{
    size_t lo = 0, hi = sizeof SCRIPTS / sizeof SCRIPTS[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < SCRIPTS[mid].lo)
            hi = mid;
        else if (c > SCRIPTS[mid].hi)
            lo = mid + 1;
        else
            return SCRIPTS[mid].script;
    }
    return HY_SCRIPT_OTHER;
}

static bool in_set(uint32_t c, const uint32_t *set, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (set[mid] == c)
            return true;
        if (set[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

#define IN(c, set) in_set(c, set, sizeof set / sizeof set[0])

static bool one_of(uint32_t c, const uint32_t *list)
{
    for (; *list; list++) {
        if (*list == c)
            return true;
    }
    return false;
}

/* Which marker letter c is, or M_COUNT. Cyrillic capitals are folded first. */
static enum marker marker_of(uint32_t c, enum hy_script s)
{
    static const uint32_t KK[] = {0x4D9, 0x493, 0x49B, 0x4A3, 0x4B1, 0x4BB, 0};
    static const uint32_t UK[] = {0x454, 0x457, 0x491, 0};
    static const uint32_t MN[] = {0x4E9, 0x4AF, 0};
    static const uint32_t NOT_UK[] = {0x44B, 0x44D, 0x44A, 0x451, 0x45E, 0};
    static const uint32_t UG[] = {0x6C6, 0x6C7, 0x6C8, 0x6CB, 0x6D0, 0x6D5, 0};
    static const uint32_t UR[] = {0x679, 0x688, 0x691, 0x6BA, 0x6C1, 0x6BE, 0x6D2, 0x6D3, 0};
    static const uint32_t FA[] = {0x67E, 0x686, 0x698, 0x6AF, 0x6CC, 0x6A9, 0};
    static const uint32_t AR[] = {0x64A, 0x643, 0x649, 0x629, 0};
    switch (s) {
    case HY_SCRIPT_HAN:
        return IN(c, YUE_ONLY)    ? M_YUE
               : IN(c, TRAD_ONLY) ? M_TRAD
               : IN(c, SIMP_ONLY) ? M_SIMP
                                  : M_COUNT;
    case HY_SCRIPT_CYRILLIC:
        if (c >= 0x400 && c <= 0x40F)
            c += 0x50; /* Ѐ..Џ -> ѐ..џ */
        else if (c >= 0x410 && c <= 0x42F)
            c += 0x20;
        else if (c >= 0x460 && !(c & 1))
            c += 1; /* paired capitals from U+0460 on are even */
        return one_of(c, KK)       ? M_KK
               : one_of(c, UK)     ? M_UK
               : one_of(c, MN)     ? M_MN
               : c == 0x456        ? M_CYR_I
               : one_of(c, NOT_UK) ? M_NOT_UK
                                   : M_COUNT;
    case HY_SCRIPT_ARABIC:
        return one_of(c, UG)   ? M_UG
               : one_of(c, UR) ? M_UR
               : one_of(c, FA) ? M_FA
               : one_of(c, AR) ? M_AR
                               : M_COUNT;
    case HY_SCRIPT_DEVANAGARI: return c == 0x933 ? M_MR : M_COUNT;
    default: return M_COUNT;
    }
}

static void count_text(const char *text, size_t len, struct counts *k)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t n = len < HY_LANG_DETECT_MAX ? len : HY_LANG_DETECT_MAX;
    for (size_t i = 0; i < n;) {
        int cl;
        uint32_t c = text_decode(p + i, n - i, &cl);
        i += (size_t)cl;
        enum hy_script s = script_of(c);
        if (s == HY_SCRIPT_OTHER)
            continue;
        k->script[s]++;
        enum marker m = marker_of(c, s);
        if (m != M_COUNT)
            k->marker[m]++;
    }
}

static const struct hy_lang *by_code(const char *code)
{
    for (size_t i = 0; i < hy_lang_count(); i++) {
        if (strcmp(hy_lang_at(i)->code, code) == 0)
            return hy_lang_at(i);
    }
    return NULL;
}

/* The one table language written in script s, or NULL when several share it. */
static const struct hy_lang *only_lang_of(enum hy_script s)
{
    const struct hy_lang *found = NULL;
    for (size_t i = 0; i < hy_lang_count(); i++) {
        if (hy_lang_at(i)->script == s) {
            if (found)
                return NULL;
            found = hy_lang_at(i);
        }
    }
    return found;
}

static const char *refine(enum hy_script s, const size_t *m)
{
    switch (s) {
    case HY_SCRIPT_HAN:
        return m[M_TRAD] > 0 && m[M_TRAD] >= 4 * m[M_SIMP] ? "zh-Hant" : "zh";
    case HY_SCRIPT_CYRILLIC:
        if (m[M_KK])
            return "kk";
        if (m[M_UK])
            return "uk";
        if (m[M_MN])
            return "mn";
        return m[M_CYR_I] && !m[M_NOT_UK] ? "uk" : NULL;
    case HY_SCRIPT_ARABIC:
        if (m[M_UG])
            return "ug";
        if (m[M_UR])
            return "ur";
        return m[M_FA] && m[M_FA] >= m[M_AR] ? "fa" : NULL;
    case HY_SCRIPT_DEVANAGARI: return m[M_MR] ? "mr" : NULL;
    default: return NULL;
    }
}

#define YUE_MIN 1      /* Cantonese-only characters that make Han text yue ... */
#define YUE_PER_HAN 30 /* ... when at least 1 in this many Han characters is one */
#define MAX_GUESSES HY_LANG_GUESS_MAX
_Static_assert(HY_NGRAM_MAX_LANGS <= HY_LANG_GUESS_MAX, "a script's n-gram languages are guesses");
#define SHRINK_GRAMS 6.0 /* rule 7: the posterior is mixed with the uniform in the ratio
                          * grams : SHRINK_GRAMS, so a word or two is never "sure" */

/* The main script of the counts (rules 1-3) and its share of the weight; OTHER when none. */
static enum hy_script main_script(const struct counts *k, double *share)
{
    size_t w[HY_SCRIPT_COUNT], total = 0;
    for (int s = 0; s < HY_SCRIPT_COUNT; s++)
        w[s] = k->script[s];
    size_t han = w[HY_SCRIPT_HAN], kana = w[HY_SCRIPT_KANA], hangul = w[HY_SCRIPT_HANGUL];
    if (kana && kana * 5 >= han)
        w[HY_SCRIPT_KANA] += han, w[HY_SCRIPT_HAN] = 0;
    else if (hangul && hangul * 5 >= han)
        w[HY_SCRIPT_HANGUL] += han, w[HY_SCRIPT_HAN] = 0;
    for (int s = HY_SCRIPT_HANGUL; s <= HY_SCRIPT_HAN; s++)
        w[s] *= 3;
    enum hy_script best = HY_SCRIPT_OTHER;
    for (int s = 0; s < HY_SCRIPT_COUNT; s++) {
        total += w[s];
        if (w[s] > w[best])
            best = (enum hy_script)s;
    }
    if (best == HY_SCRIPT_OTHER || w[best] * 2 <= total)
        return HY_SCRIPT_OTHER;
    *share = (double)w[best] / (double)total;
    return best;
}

/* Rule 7: the n-gram candidates of script s into g (sorted later); 0 when no gram counts. */
static size_t by_ngrams(const char *text, size_t len, enum hy_script s, double share,
                        struct hy_lang_guess *g)
{
    struct hy_ngram_table t;
    hy_ngram_table(&t);
    int64_t score[HY_NGRAM_MAX_LANGS];
    size_t grams = hy_ngram_score(&t, text, len, s, score);
    int64_t top = 0;
    for (uint32_t i = 0; i < t.n_langs; i++) {
        if (hy_ngram_lang_in(&t, i, s) && score[i] > top)
            top = score[i];
    }
    if (grams == 0 || top == 0)
        return 0;
    double temp = sqrt((double)grams) * (double)t.step, sum = 0, p[HY_NGRAM_MAX_LANGS];
    for (uint32_t i = 0; i < t.n_langs; i++) {
        p[i] = hy_ngram_lang_in(&t, i, s) ? exp((double)(score[i] - top) / temp) : 0;
        sum += p[i];
    }
    size_t n = 0, cand = 0;
    for (uint32_t i = 0; i < t.n_langs; i++)
        cand += p[i] > 0;
    double mix = SHRINK_GRAMS / (SHRINK_GRAMS + (double)grams);
    for (uint32_t i = 0; i < t.n_langs; i++) {
        const struct hy_lang *l = p[i] > 0 ? by_code(hy_ngram_lang_code(&t, i)) : NULL;
        double post = (1 - mix) * p[i] / sum + mix / (double)cand;
        if (l)
            g[n++] = (struct hy_lang_guess){l, 100.0 * share * post};
    }
    return n;
}

/* The guesses for script s (rules 4-8), unsorted. */
static size_t guesses(const char *text, size_t len, enum hy_script s, const struct counts *k,
                      double share, struct hy_lang_guess *g)
{
    const struct hy_lang *only = only_lang_of(s);
    if (only) {
        g[0] = (struct hy_lang_guess){only, 100.0 * share};
        return 1;
    }
    size_t han = k->script[HY_SCRIPT_HAN], yue = k->marker[M_YUE];
    if (s == HY_SCRIPT_HAN && yue >= YUE_MIN && yue * YUE_PER_HAN >= han) {
        g[0] = (struct hy_lang_guess){by_code("yue"), 100.0 * share};
        return 1;
    }
    size_t tr = k->marker[M_TRAD], si = k->marker[M_SIMP];
    if (s == HY_SCRIPT_HAN && ((tr && tr >= 4 * si) || (si && si >= 4 * tr))) {
        size_t top = tr > si ? tr : si;
        double p = 1.0 - 1.0 / (2.0 + 2.0 * (double)top);
        g[0] = (struct hy_lang_guess){by_code(tr > si ? "zh-Hant" : "zh"), 100.0 * share * p};
        g[1] = (struct hy_lang_guess){by_code(tr > si ? "zh" : "zh-Hant"), 100.0 * share * (1 - p)};
        return 2;
    }
    size_t n = by_ngrams(text, len, s, share, g);
    if (n)
        return n;
    const char *code = refine(s, k->marker);
    if (!code)
        return 0;
    g[0] = (struct hy_lang_guess){by_code(code), 100.0 * share};
    return 1;
}

size_t hy_lang_detect_ranked(const char *text, size_t len, struct hy_lang_guess *out,
                             size_t cap)
{
    struct counts k;
    memset(&k, 0, sizeof k);
    if (!text || cap == 0)
        return 0;
    count_text(text, len, &k);
    double share = 0;
    enum hy_script s = main_script(&k, &share);
    if (s == HY_SCRIPT_OTHER)
        return 0;
    struct hy_lang_guess g[MAX_GUESSES];
    size_t n = guesses(text, len, s, &k, share, g);
    for (size_t i = 1; i < n; i++) { /* insertion sort: stable, n is small */
        struct hy_lang_guess x = g[i];
        size_t j = i;
        for (; j > 0 && g[j - 1].confidence < x.confidence; j--)
            g[j] = g[j - 1];
        g[j] = x;
    }
    n = n < cap ? n : cap;
    memcpy(out, g, n * sizeof *g);
    return n;
}

const struct hy_lang *hy_lang_detect(const char *text, size_t len)
{
    struct hy_lang_guess g;
    if (!hy_lang_detect_ranked(text, len, &g, 1) || g.confidence < HY_LANG_DETECT_MIN_CONFIDENCE)
        return NULL;
    return g.lang;
}
