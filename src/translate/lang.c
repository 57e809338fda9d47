/* lang.c: the language table and name lookup (contract in lang.h). */
#include "translate/lang.h"

#include "core/status.h"
#include "translate/text.h"

#include <stdint.h>
#include <string.h>
#include <utf8proc.h>

/* One table row: the public entry plus the aliases people type, "|"-separated. Codes of
 * ISO 639-2/3 (eng, zho, fil, ...) and the old ISO 639-1 codes (iw, in) are aliases. */
struct lang_row {
    struct hy_lang lang;
    const char *aliases;
};

#define L(code, en, zh, nat, zhs, scr, al)                                                         \
    {                                                                                              \
        {code, en, zh, nat, zhs, HY_SCRIPT_##scr}, al                                              \
    }

/* README order, left column (18 rows) then right column (20 rows). */
static const struct lang_row ROWS[HY_LANG_COUNT] = {
    L("zh", "Chinese", "中文", "简体中文", true, HAN,
      "zh-cn|zh-sg|zh-my|zh-hans|zh-chs|cmn|zho|chi|mandarin|simplified chinese|"
      "chinese simplified|chinese (simplified)|汉语|漢語|简体|简中|普通话|普通話|华语|華語|"
      "简体中文|簡體中文|中文简体|国语"),
    L("en", "English", "英语", "English", false, LATIN, "eng"),
    L("fr", "French", "法语", "Français", false, LATIN, "fra|fre|francais"),
    L("pt", "Portuguese", "葡萄牙语", "Português", false, LATIN, "por|portugues"),
    L("es", "Spanish", "西班牙语", "Español", false, LATIN, "spa|espanol|castellano|castilian"),
    L("ja", "Japanese", "日语", "日本語", false, KANA, "jpn|jp|nihongo|日本语"),
    L("tr", "Turkish", "土耳其语", "Türkçe", false, LATIN, "tur|turkce"),
    L("ru", "Russian", "俄语", "Русский", false, CYRILLIC, "rus|русский язык|俄罗斯语"),
    L("ar", "Arabic", "阿拉伯语", "العربية", false, ARABIC, "ara"),
    L("ko", "Korean", "韩语", "한국어", false, HANGUL,
      "kor|kr|韩国语|韓國語|韓語|韓文|朝鲜语|朝鮮語|한국말|조선어|조선말"),
    L("th", "Thai", "泰语", "ไทย", false, THAI, "tha|ภาษาไทย"),
    L("it", "Italian", "意大利语", "Italiano", false, LATIN, "ita"),
    L("de", "German", "德语", "Deutsch", false, LATIN, "deu|ger"),
    L("vi", "Vietnamese", "越南语", "Tiếng Việt", false, LATIN, "vie|tieng viet"),
    L("ms", "Malay", "马来语", "Bahasa Melayu", false, LATIN,
      "msa|may|zsm|melayu|bahasa malaysia|malaysian|馬來語"),
    L("id", "Indonesian", "印尼语", "Bahasa Indonesia", false, LATIN,
      "ind|in|bahasa|印度尼西亚语|印度尼西亞語"),
    L("tl", "Filipino", "菲律宾语", "Filipino", false, LATIN,
      "fil|tgl|tagalog|pilipino|wikang filipino|他加禄语|菲律賓語"),
    L("hi", "Hindi", "印地语", "हिन्दी", false, DEVANAGARI, "hin|हिंदी"),
    L("zh-Hant", "Traditional Chinese", "繁体中文", "繁體中文", true, HAN,
      "zh-tw|zh-hk|zh-mo|zh-cht|zht|chinese traditional|chinese (traditional)|"
      "traditional|繁体|繁體|繁中|正體中文|正体中文|中文繁體|中文繁体|國語"),
    L("pl", "Polish", "波兰语", "Polski", false, LATIN, "pol"),
    L("cs", "Czech", "捷克语", "Čeština", false, LATIN, "ces|cze|cestina"),
    L("nl", "Dutch", "荷兰语", "Nederlands", false, LATIN, "nld|dut|flemish|vlaams"),
    L("km", "Khmer", "高棉语", "ភាសាខ្មែរ", false, KHMER, "khm|cambodian|ខ្មែរ|柬埔寨语"),
    L("my", "Burmese", "缅甸语", "မြန်မာဘာသာ", false, MYANMAR, "mya|bur|myanmar|မြန်မာ"),
    L("fa", "Persian", "波斯语", "فارسی", false, ARABIC, "fas|per|pes|prs|farsi|dari"),
    L("gu", "Gujarati", "古吉拉特语", "ગુજરાતી", false, GUJARATI, "guj"),
    L("ur", "Urdu", "乌尔都语", "اردو", false, ARABIC, "urd"),
    L("te", "Telugu", "泰卢固语", "తెలుగు", false, TELUGU, "tel"),
    L("mr", "Marathi", "马拉地语", "मराठी", false, DEVANAGARI, "mar"),
    L("he", "Hebrew", "希伯来语", "עברית", false, HEBREW, "heb|iw|ivrit"),
    L("bn", "Bengali", "孟加拉语", "বাংলা", false, BENGALI, "ben|bangla"),
    L("ta", "Tamil", "泰米尔语", "தமிழ்", false, TAMIL, "tam"),
    L("uk", "Ukrainian", "乌克兰语", "Українська", false, CYRILLIC, "ukr|українська мова"),
    L("bo", "Tibetan", "藏语", "བོད་ཡིག", false, TIBETAN, "bod|tib|བོད་སྐད|standard tibetan"),
    L("kk", "Kazakh", "哈萨克语", "Қазақ тілі", false, CYRILLIC, "kaz|kazak|қазақша|qazaq"),
    L("mn", "Mongolian", "蒙古语", "Монгол хэл", false, MONGOLIAN,
      "mon|khk|mvf|монгол|ᠮᠣᠩᠭᠣᠯ|ᠮᠣᠩᠭᠣᠯ ᠬᠡᠯᠡ"),
    L("ug", "Uyghur", "维吾尔语", "ئۇيغۇرچە", false, ARABIC,
      "uig|uighur|uygur|ئۇيغۇر تىلى|維吾爾語"),
    L("yue", "Cantonese", "粤语", "粵語", true, HAN,
      "zh-yue|yue-hant|yue-hans|yue-hk|广东话|廣東話|广府话|廣府話|粤文|粵文"),
};

#define NAME_MAX_BYTES 64 /* longer input is no language name */

/* The 38 languages of the Hunyuan-MT, HY-MT1.5 and Hy-MT2 READMEs (the same table in all
 * three, model doc 5.5 and Hy-MT2 doc 5.2), in README order. */
#define README_38                                                                          \
    "zh en fr pt es ja tr ru ar ko th it de vi ms id tl hi zh-Hant pl cs nl km my fa gu ur " \
    "te mr he bn ta uk bo kk mn ug yue"

/* One table per generation: its name (prompt.h's hy_prompt_gen_name) and its codes,
 * space-separated, each a code of ROWS. */
static const struct {
    const char *gen;
    const char *codes;
} GENS[] = {
    {"mt1", README_38},
    {"mt1.5", README_38},
    {"mt2", README_38},
};

const struct hy_lang *hy_lang_at(size_t i)
{
    HY_ASSERT(i < HY_LANG_COUNT);
    return &ROWS[i].lang;
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
    for (size_t i = 0; i < HY_LANG_COUNT; i++) {
        const struct hy_lang *l = &ROWS[i].lang;
        if (name_eq(s, n, l->code, strlen(l->code)) ||
            name_eq(s, n, l->name_en, strlen(l->name_en)) ||
            name_eq(s, n, l->name_zh, strlen(l->name_zh)) ||
            name_eq(s, n, l->native, strlen(l->native)))
            return l;
    }
    for (size_t i = 0; i < HY_LANG_COUNT; i++) {
        if (alias_match(s, n, ROWS[i].aliases))
            return &ROWS[i].lang;
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
    for (size_t i = 0; i < HY_LANG_COUNT; i++) {
        append(buf, cap, &need, i ? ", " : "");
        append(buf, cap, &need, ROWS[i].lang.code);
    }
    if (cap > 0)
        buf[need < cap ? need : cap - 1] = '\0';
    return need;
}

static const char *gen_codes(const char *gen)
{
    for (size_t i = 0; gen && i < sizeof GENS / sizeof GENS[0]; i++)
        if (strcmp(GENS[i].gen, gen) == 0)
            return GENS[i].codes;
    return NULL;
}

/* The next code of a space-separated list at *p: its start and length; 0 at the end. */
static size_t next_code(const char **p, const char **code)
{
    while (**p == ' ')
        ++*p;
    *code = *p;
    while (**p && **p != ' ')
        ++*p;
    return (size_t)(*p - *code);
}

static const struct hy_lang *by_code(const char *code, size_t n)
{
    for (size_t i = 0; i < HY_LANG_COUNT; i++)
        if (strlen(ROWS[i].lang.code) == n && memcmp(ROWS[i].lang.code, code, n) == 0)
            return &ROWS[i].lang;
    return NULL;
}

size_t hy_lang_gen_count(const char *gen)
{
    const char *p = gen_codes(gen), *c;
    size_t n = 0;
    while (p && next_code(&p, &c))
        n++;
    return n;
}

const struct hy_lang *hy_lang_gen_at(const char *gen, size_t i)
{
    const char *p = gen_codes(gen), *c;
    size_t n;
    HY_ASSERT(p != NULL);
    while ((n = next_code(&p, &c)) > 0) {
        if (i-- == 0) {
            const struct hy_lang *l = by_code(c, n);
            HY_ASSERT(l != NULL); /* lang_test checks every table */
            return l;
        }
    }
    HY_ASSERT(!"hy_lang_gen_at: index past the table");
    return NULL;
}

bool hy_lang_gen_has(const char *gen, const struct hy_lang *l)
{
    const char *p = gen_codes(gen), *c;
    size_t n;
    while (l && p && (n = next_code(&p, &c)) > 0)
        if (strlen(l->code) == n && memcmp(l->code, c, n) == 0)
            return true;
    return false;
}
