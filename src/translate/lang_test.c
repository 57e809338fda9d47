/* lang_test.c: the language table, name lookup and script detection. */
#include "translate/lang.h"

#include "core/utf8.h"
#include "test.h"
#include "translate/lang_table.h"
#include "translate/prompt.h"

#include <string.h>

static const char *find_code(const char *name)
{
    const struct hy_lang *l = hy_lang_find(name);
    return l ? l->code : "(none)";
}

static const char *detect_code(const char *text)
{
    const struct hy_lang *l = hy_lang_detect(text, strlen(text));
    return l ? l->code : "(none)";
}

#define FIND(name, code)                                                                           \
    CHECKF(strcmp(find_code(name), code) == 0, "%s -> %s, want %s", name, find_code(name), code)
#define DETECT(text, code)                                                                         \
    CHECKF(strcmp(detect_code(text), code) == 0, "%s -> %s, want %s", text, detect_code(text), code)

/* Every name column and alias of row l finds l (so no two rows share one, whatever the
 * case folding), and its fields are valid UTF-8 without control characters. */
static void check_row_names(const struct hy_lang *l, const char *aliases)
{
    const char *cols[] = {l->code, l->name_en, l->name_zh, l->native};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
        CHECKF(cols[c][0] && hy_lang_find(cols[c]) == l, "%s: %s", l->code, cols[c]);
        CHECKF(hy_utf8_validate(cols[c], strlen(cols[c])) == strlen(cols[c]), "%s", l->code);
        for (const char *p = cols[c]; *p; p++)
            CHECKF((unsigned char)*p >= 0x20 && *p != 0x7f, "%s: control byte", l->code);
    }
    char one[80];
    for (const char *p = aliases; *p;) {
        size_t n = strcspn(p, "|");
        CHECKF(n > 0 && n < sizeof one, "%s: alias of %zu bytes", l->code, n);
        if (n == 0 || n >= sizeof one)
            break;
        memcpy(one, p, n);
        one[n] = '\0';
        CHECKF(hy_lang_find(one) == l, "%s: alias %s finds %s", l->code, one, find_code(one));
        p += n + (p[n] == '|');
    }
}

static void test_table(void)
{
    CHECK(hy_lang_count() == hy_lang_n_rows && hy_lang_count() >= 38);
    for (size_t i = 0; i < hy_lang_count(); i++) {
        const struct hy_lang *l = hy_lang_at(i);
        CHECK(l == &hy_lang_rows[i].lang);
        check_row_names(l, hy_lang_rows[i].aliases);
        CHECKF(hy_lang_rows[i].gens != 0, "%s: no generation", l->code);
    }
    // clang-format off
    /* the Hy-MT2 README's table (the same in Hunyuan-MT's and HY-MT1.5's) */
    static const char *const ORDER[] = {
        "zh", "en", "fr", "pt", "es", "ja", "tr", "ru", "ar", "ko", "th", "it", "de",
        "vi", "ms", "id", "tl", "hi", "zh-Hant", "pl", "cs", "nl", "km", "my", "fa", "gu",
        "ur", "te", "mr", "he", "bn", "ta", "uk", "bo", "kk", "mn", "ug", "yue"};
    // clang-format on
    size_t n = sizeof ORDER / sizeof ORDER[0];
    int zh_side = 0;
    CHECK(hy_lang_gen_count("mt2") == n);
    for (size_t i = 0; i < n && i < hy_lang_gen_count("mt2"); i++) {
        const struct hy_lang *l = hy_lang_gen_at("mt2", i);
        CHECKF(strcmp(l->code, ORDER[i]) == 0, "mt2 language %zu is %s", i, l->code);
        CHECK(l->name_en[0] && l->name_zh[0] && l->native[0]);
        CHECK(l->script != HY_SCRIPT_OTHER);
        zh_side += l->zh_side;
    }
    CHECK(zh_side == 3);
    CHECK(hy_lang_find("zh")->zh_side && hy_lang_find("zh-Hant")->zh_side &&
          hy_lang_find("yue")->zh_side);
    CHECK(strcmp(hy_lang_find("zh-Hant")->name_zh, "繁体中文") == 0);
    CHECK(strcmp(hy_lang_find("de")->native, "Deutsch") == 0);
    CHECK(strcmp(hy_lang_find("ja")->native, "日本語") == 0);
    CHECK(strcmp(hy_lang_find("yue")->native, "粵語") == 0);
    CHECK(hy_lang_find("ja")->script == HY_SCRIPT_KANA);
    CHECK(hy_lang_find("yue")->script == HY_SCRIPT_HAN);
}

static void test_aliases(void)
{
    // clang-format off
    static const char *const CASES[][2] = {
        {"zh-CN", "zh"}, {"zh_CN", "zh"}, {"zh-Hans", "zh"}, {"cmn", "zh"}, {"ZH", "zh"},
        {"Chinese", "zh"}, {"chinese", "zh"}, {"中文", "zh"}, {"汉语", "zh"}, {"zh-Hans-CN", "zh"},
        {"Simplified Chinese", "zh"}, {"zh-TW", "zh-Hant"}, {"zh-HK", "zh-Hant"},
        {"zh_Hant", "zh-Hant"}, {"zh-hant", "zh-Hant"}, {"zh-Hant-TW", "zh-Hant"},
        {"traditional chinese", "zh-Hant"}, {"繁體中文", "zh-Hant"}, {"繁体中文", "zh-Hant"},
        {"yue", "yue"}, {"zh-yue", "yue"}, {"Cantonese", "yue"}, {"yue-HK", "yue"},
        {"粤语", "yue"}, {"廣東話", "yue"}, {"英语", "en"}, {"英文", "en"}, {"english", "en"},
        {"en-US", "en"}, {"en_GB", "en"}, {"  en  ", "en"}, {"eng", "en"}, {"pt-BR", "pt"},
        {"es-419", "es"}, {"fil", "tl"}, {"tagalog", "tl"}, {"iw", "he"}, {"in", "id"},
        {"my", "my"}, {"burmese", "my"}, {"myanmar", "my"}, {"fa-IR", "fa"}, {"farsi", "fa"},
        {"FRANÇAIS", "fr"}, {"čeština", "cs"}, {"ČEŠTINA", "cs"}, {"日文", "ja"}, {"日語", "ja"},
        {"한국어", "ko"}, {"韓語", "ko"}, {"русский", "ru"}, {"УКРАЇНСЬКА", "uk"}, {"uighur", "ug"},
        {"藏文", "bo"}, {"蒙古文", "mn"}, {"Tiếng Việt", "vi"}, {"Bahasa Indonesia", "id"},
        {"de-AT", "de"}, {"de_CH", "de"}, {"auto", "(none)"}, {"", "(none)"}, {"xx", "(none)"},
        {"x-en", "(none)"}, {"-", "(none)"}, {"zz-ZZ", "(none)"}, {"\xff\xfe", "(none)"},
        {"文", "(none)"},
    };
    // clang-format on
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        FIND(CASES[i][0], CASES[i][1]);
    CHECK(hy_lang_find(NULL) == NULL);
}

static void test_list(void)
{
    char buf[512], small[8];
    size_t n = hy_lang_list(buf, sizeof buf);
    CHECK(n == strlen(buf));
    CHECK(strncmp(buf, "zh, en, fr, ", 12) == 0);
    CHECK(strstr(buf, ", zh-Hant, ") != NULL);
    CHECK(n >= 5 && strcmp(buf + n - 5, ", yue") == 0);
    CHECK(hy_lang_list(small, sizeof small) == n);
    CHECK(strcmp(small, "zh, en,") == 0);
    CHECK(hy_lang_list(NULL, 0) == n);
}

static void test_detect(void)
{
    /* scripts one language uses */
    DETECT("今日はいい天気ですね。公園に行きましょう。", "ja");
    DETECT("東京は日本の首都です。", "ja");
    DETECT("안녕하세요, 만나서 반갑습니다.", "ko");
    DETECT("大韓民國은 民主共和國이다.", "ko");
    DETECT("สวัสดีครับ ยินดีที่ได้รู้จัก", "th");
    DETECT("བཀྲ་ཤིས་བདེ་ལེགས།", "bo");
    DETECT("ជំរាបសួរ", "km");
    DETECT("မင်္ဂလာပါ", "my");
    DETECT("שלום עולם", "he");
    DETECT("નમસ્તે, તમે કેમ છો?", "gu");
    DETECT("আমি বাংলায় কথা বলি।", "bn");
    DETECT("నమస్కారం", "te");
    DETECT("வணக்கம் உலகம்", "ta");
    DETECT("ᠮᠣᠩᠭᠣᠯ ᠪᠢᠴᠢᠭ", "mn");
    /* Han: Cantonese letters, then the n-grams of simplified and traditional text */
    DETECT("今天天气很好，我们去公园散步吧。", "zh");
    DETECT("今天天氣很好，我們去公園散步吧。這個說法對嗎？", "zh-Hant");
    DETECT("我哋今日去邊度食飯呀？佢話唔得閒。", "yue");
    DETECT("我使用Python编程", "zh");
    DETECT("今天天气很好。", "zh");   /* 气: simplified only */
    DETECT("今天天氣很好。", "zh-Hant"); /* 氣: traditional only */
    DETECT("人人生而自由，在尊嚴和權利上一律平等。", "zh-Hant"); /* no table form: n-grams */
    DETECT("请把这份报告发给经理，谢谢。", "zh");
    DETECT("請把這份報告發給經理，謝謝。", "zh-Hant");
    /* Latin */
    DETECT("Hello, how are you today? I am fine.", "en");
    DETECT("Guten Morgen, wie geht es dir?", "de");
    DETECT("Bonjour à tous, comment allez-vous ?", "fr");
    DETECT("Onde fica a estação de comboios mais próxima?", "pt");
    DETECT("¿Dónde está la estación de tren más cercana?", "es");
    DETECT("Bugün hava çok güzel, parka gidelim mi?", "tr");
    DETECT("Dove si trova la stazione più vicina?", "it");
    DETECT("Hôm nay trời đẹp quá, chúng ta đi dạo nhé.", "vi");
    DETECT("Magandang umaga po, kumusta kayo ngayon?", "tl");
    DETECT("Dzień dobry, jak się dzisiaj masz?", "pl");
    DETECT("Dobrý den, jak se dnes máte? Děkuji.", "cs");
    DETECT("Goedemorgen, hoe gaat het vandaag met je?", "nl");
    DETECT("Me gusta mucho el café con leche por la mañana.", "es");
    DETECT("Você quer ir ao cinema amanhã?", "pt");
    DETECT("Vuoi andare al cinema domani?", "it");
    /* Cyrillic */
    DETECT("Привет, как у тебя сегодня дела?", "ru");
    DETECT("Я сегодня очень устал.", "ru");
    DETECT("Я сьогодні дуже втомився.", "uk");
    DETECT("Привіт, як справи? Добре, дякую.", "uk");
    DETECT("Сәлеметсіз бе? Қалайсыз?", "kk");
    DETECT("Сайн байна уу? Монгол үндэстэн өдөр", "mn");
    /* Arabic script */
    DETECT("مرحبا، كيف حالك اليوم؟ أنا بخير والحمد لله", "ar");
    DETECT("سلام، حال شما چطور است؟ من خوبم.", "fa");
    DETECT("آپ کیسے ہیں؟ میں ٹھیک ہوں۔", "ur");
    DETECT("ياخشىمۇسىز؟ مەن ئۇيغۇرچە سۆزلەيمەن.", "ug");
    /* Devanagari */
    DETECT("आप कैसे हैं? मैं ठीक हूँ, धन्यवाद।", "hi");
    DETECT("मला मराठी भाषा आवडते. ही शाळा खूप जुनी आहे, वेळ", "mr");
    /* mixed scripts: the main one decides; none main, or no letters: undecided */
    DETECT("Hello world, this is a long English sentence with 中文", "en");
    DETECT("abcdefghi 中文字", "(none)"); /* 9 Latin letters, 3 Han weighing 3 each */
    DETECT("", "(none)");
    DETECT("12345 !!! ...", "(none)");
    DETECT("OK", "(none)"); /* a word or two: too weak a hint to name in a prompt */
    DETECT("Hi", "(none)");
    DETECT("\xff\xfe\xe4\xb8", "(none)");
    CHECK(hy_lang_detect(NULL, 10) == NULL);
}

/* ms and id share most words: either is right where the text does not decide, but one
 * of the two must come first. */
static void test_detect_ms_id(void)
{
    const char *texts[] = {"Saya suka makan nasi goreng setiap pagi.",
                           "Kerajaan akan membina lebih banyak sekolah tahun ini."};
    for (size_t i = 0; i < 2; i++) {
        const char *c = detect_code(texts[i]);
        CHECKF(!strcmp(c, "ms") || !strcmp(c, "id"), "%s -> %s", texts[i], c);
    }
}

static void test_detect_ranked(void)
{
    struct hy_lang_guess g[HY_LANG_GUESS_MAX];
    const char *t = "Guten Morgen, wie geht es dir heute?";
    size_t n = hy_lang_detect_ranked(t, strlen(t), g, HY_LANG_GUESS_MAX);
    CHECK(n >= 2);
    CHECK(n > 0 && strcmp(g[0].lang->code, "de") == 0);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(g[i].lang->script == HY_SCRIPT_LATIN); /* only the text's script */
        CHECK(g[i].confidence >= 0 && g[i].confidence <= 100);
        CHECK(i == 0 || g[i].confidence <= g[i - 1].confidence);
        sum += g[i].confidence;
    }
    CHECKF(sum > 99.9 && sum < 100.1, "sum %f", sum); /* all Latin: posteriors sum to 100 */
    CHECK(g[0].confidence > 50);
    /* a quarter of the weight in another script scales every confidence down */
    const char *mixed = "Guten Morgen, wie geht es dir heute? Гутен";
    CHECK(hy_lang_detect_ranked(mixed, strlen(mixed), g, 1) == 1);
    CHECK(g[0].confidence < 90);
    /* cap: at most cap written; 0 writes nothing */
    CHECK(hy_lang_detect_ranked(t, strlen(t), g, 1) == 1 && strcmp(g[0].lang->code, "de") == 0);
    CHECK(hy_lang_detect_ranked(t, strlen(t), NULL, 0) == 0);
    /* a script one language uses: one candidate */
    const char *ko = "안녕하세요";
    CHECK(hy_lang_detect_ranked(ko, strlen(ko), g, HY_LANG_GUESS_MAX) == 1);
    CHECK(g[0].confidence == 100.0);
    /* a word still has ranked candidates, with low confidences */
    CHECK(hy_lang_detect_ranked("Hi", 2, g, HY_LANG_GUESS_MAX) >= 2 &&
          g[0].confidence < HY_LANG_DETECT_MIN_CONFIDENCE);
    /* every byte value and a truncated tail: bounded, no crash, some answer or none */
    char bytes[256];
    for (int i = 0; i < 256; i++)
        bytes[i] = (char)(255 - i);
    CHECK(hy_lang_detect_ranked(bytes, sizeof bytes, g, HY_LANG_GUESS_MAX) <= HY_LANG_GUESS_MAX);
}

/* Every generation's languages are distinct rows in table order; every generation the
 * table names is one prompt.h knows (a typo in the gens column would make a generation no
 * model has), and every prompt generation translates some; unknown ones have none. */
static void test_gen_tables(void)
{
    CHECK(hy_lang_n_gens >= 1 && hy_lang_n_gens <= 32);
    for (size_t g = 0; g < hy_lang_n_gens; g++) {
        const char *name = hy_lang_gen_names[g];
        enum hy_prompt_gen pg;
        CHECKF(hy_prompt_gen_parse(name, &pg) && !strcmp(hy_prompt_gen_name(pg), name),
               "generation %s of languages.tsv is unknown to prompt.h", name);
        size_t n = hy_lang_gen_count(name);
        CHECKF(n >= 1, "%s: no languages", name);
        for (size_t i = 0; i < n; i++) {
            const struct hy_lang *l = hy_lang_gen_at(name, i);
            CHECK(hy_lang_gen_has(name, l));
            CHECKF(i == 0 || hy_lang_gen_at(name, i - 1) < l, "%s: %s out of order", name, l->code);
        }
    }
    for (int g = 0; g < HY_PROMPT_GEN_COUNT; g++)
        CHECKF(hy_lang_gen_count(hy_prompt_gen_name((enum hy_prompt_gen)g)) > 0, "%s",
               hy_prompt_gen_name((enum hy_prompt_gen)g));
    CHECK(hy_lang_gen_count("mt9") == 0);
    CHECK(hy_lang_gen_count(NULL) == 0);
    CHECK(!hy_lang_gen_has("mt9", hy_lang_find("en")));
    CHECK(!hy_lang_gen_has("mt2", NULL));
    struct hy_lang copy = *hy_lang_find("en"); /* not a row of the table */
    CHECK(hy_lang_gen_has("mt2", hy_lang_find("en")) && !hy_lang_gen_has("mt2", &copy));
}

int main(void)
{
    test_gen_tables();
    test_table();
    test_aliases();
    test_list();
    test_detect();
    test_detect_ms_id();
    test_detect_ranked();
    return test_result();
}
