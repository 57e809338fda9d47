/* lang.h: the languages the Hunyuan-MT models translate, name lookup, detection.
 * The table is data: src/translate/languages.tsv (one row a language: code, English,
 * Chinese and native names, script, prompt side, the model generations that translate it,
 * aliases), checked and turned into a const C table at build time (lang_table.h). It is in
 * the model cards' order; entries are never copied, callers keep the returned pointers
 * for the life of the program. hy_lang_find resolves codes, English,
 * Chinese and native names and common aliases (zh-TW, fil, iw, farsi, 英文, ...).
 * hy_lang_detect guesses the source language from the text: the script decides where one
 * language uses it, character n-gram profiles (lang_ngram.h) decide among the languages
 * sharing Latin, Cyrillic, Arabic, Devanagari or Han script, Cantonese-only characters mark
 * yue. NULL when the text has no letters or no script makes most of it, so that the caller
 * uses the prompt that needs no source name. hy_lang_detect_ranked gives the candidates
 * with confidences.
 * Pure functions over const data: thread-safe, no allocation, no errors beyond NULL. */
#ifndef HY_TRANSLATE_LANG_H
#define HY_TRANSLATE_LANG_H

#include <stdbool.h>
#include <stddef.h>

/* The script a language is detected by. Several languages may share one (Latin,
 * Cyrillic, Arabic, Devanagari, Han); detection then needs letters specific to one. */
enum hy_script {
    HY_SCRIPT_OTHER = 0,
    HY_SCRIPT_LATIN,
    HY_SCRIPT_CYRILLIC,
    HY_SCRIPT_ARABIC,
    HY_SCRIPT_HEBREW,
    HY_SCRIPT_DEVANAGARI,
    HY_SCRIPT_BENGALI,
    HY_SCRIPT_GUJARATI,
    HY_SCRIPT_TAMIL,
    HY_SCRIPT_TELUGU,
    HY_SCRIPT_THAI,
    HY_SCRIPT_TIBETAN,
    HY_SCRIPT_MYANMAR,
    HY_SCRIPT_KHMER,
    HY_SCRIPT_MONGOLIAN,
    HY_SCRIPT_HANGUL,
    HY_SCRIPT_KANA, /* Japanese: kana, with Han */
    HY_SCRIPT_HAN,
    HY_SCRIPT_COUNT
};

struct hy_lang {
    const char *code;    /* "zh", "zh-Hant", "yue", ... as the model card spells it */
    const char *name_en; /* "Traditional Chinese": goes into the English prompt */
    const char *name_zh; /* "繁体中文": goes into the Chinese prompt */
    const char *native;  /* endonym, "繁體中文", "Deutsch", "日本語" */
    bool zh_side;        /* zh, zh-Hant, yue: a pair with one of these uses the Chinese prompt */
    enum hy_script script;
};

/* The number of languages in the table (38 today: the Hunyuan-MT, HY-MT1.5 and Hy-MT2
 * cards' list), and entry i of it, 0 <= i < hy_lang_count(), in the table's order. */
size_t hy_lang_count(void);
const struct hy_lang *hy_lang_at(size_t i);

/* Case-insensitive lookup of a code, English/Chinese/native name or alias; "_" equals
 * "-", surrounding whitespace is ignored, and a trailing region or script subtag that is
 * not itself known falls back to the base ("en-US" -> en, "zh-Hant-TW" -> zh-Hant).
 * NULL when unknown ("auto" is unknown: detection is the caller's choice). */
const struct hy_lang *hy_lang_find(const char *name);

/* Writes the valid codes, "zh, en, fr, ..., yue", NUL-terminated, into buf (cap bytes,
 * truncated to fit when cap is short). Returns the length the full list needs. */
size_t hy_lang_list(char *buf, size_t cap);

/* The languages a model generation translates (its name as prompt.h spells it: "mt1",
 * "mt1.5", "mt2"): the rows whose gens column names it, in the table's order. A
 * generation with a larger list (Hy-MT3 announces 102 languages) is a table change: rows
 * for the new languages and its name in the gens column of each. hy_lang_gen_count is 0
 * and hy_lang_gen_has false for an unknown generation or a language not of the table;
 * hy_lang_gen_at asserts i < count. */
size_t hy_lang_gen_count(const char *gen);
const struct hy_lang *hy_lang_gen_at(const char *gen, size_t i);
bool hy_lang_gen_has(const char *gen, const struct hy_lang *l);

/* At most this many candidates come from hy_lang_detect_ranked (the languages that share
 * one script). */
#define HY_LANG_GUESS_MAX 32

/* Guesses the language of len bytes of text (invalid UTF-8 tolerated) from the first
 * HY_LANG_DETECT_MAX bytes (the n-grams from the first HY_NGRAM_TEXT_MAX). The best of
 * hy_lang_detect_ranked when its confidence is at least HY_LANG_DETECT_MIN_CONFIDENCE,
 * else NULL: a prompt naming no source beats one naming a wrong source ("OK", "Hi").
 * Rules: lang_detect.c. */
#define HY_LANG_DETECT_MAX 65536
#define HY_LANG_DETECT_MIN_CONFIDENCE 50.0
const struct hy_lang *hy_lang_detect(const char *text, size_t len);

/* One candidate: a language and how sure the detector is, 0-100 (the share of the text in
 * its script times the n-gram posterior among the languages of that script). */
struct hy_lang_guess {
    const struct hy_lang *lang;
    double confidence;
};

/* The candidates for text, best first, at most cap of them into out. Returns how many
 * were written: 0 when undecided (hy_lang_detect's NULL) or cap is 0. Only languages of
 * the text's main script are candidates; ties keep table order. */
size_t hy_lang_detect_ranked(const char *text, size_t len, struct hy_lang_guess *out,
                             size_t cap);

#endif
