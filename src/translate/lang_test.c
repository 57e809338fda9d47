/* lang_test.c: the language table, name lookup and script detection. */
#include "translate/lang.h"

#include "test.h"

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

static void test_table(void)
{
    // clang-format off
    static const char *const ORDER[HY_LANG_COUNT] = {
        "zh", "en", "fr", "pt", "es", "ja", "tr", "ru", "ar", "ko", "th", "it", "de",
        "vi", "ms", "id", "tl", "hi", "zh-Hant", "pl", "cs", "nl", "km", "my", "fa", "gu",
        "ur", "te", "mr", "he", "bn", "ta", "uk", "bo", "kk", "mn", "ug", "yue"};
    // clang-format on
    int zh_side = 0;
    for (size_t i = 0; i < HY_LANG_COUNT; i++) {
        const struct hy_lang *l = hy_lang_at(i);
        CHECKF(strcmp(l->code, ORDER[i]) == 0, "row %zu is %s", i, l->code);
        CHECK(l->name_en[0] && l->name_zh[0] && l->native[0]);
        CHECK(l->script != HY_SCRIPT_OTHER);
        zh_side += l->zh_side;
        /* every column of every row finds its own row */
        CHECK(hy_lang_find(l->code) == l);
        CHECK(hy_lang_find(l->name_en) == l);
        CHECK(hy_lang_find(l->name_zh) == l);
        CHECKF(hy_lang_find(l->native) == l, "%s", l->native);
    }
    CHECK(zh_side == 3);
    CHECK(hy_lang_find("zh")->zh_side && hy_lang_find("zh-Hant")->zh_side &&
          hy_lang_find("yue")->zh_side);
    CHECK(strcmp(hy_lang_find("zh-Hant")->name_zh, "繁体中文") == 0);
    CHECK(strcmp(hy_lang_find("de")->native, "Deutsch") == 0);
    CHECK(strcmp(hy_lang_find("ja")->native, "日本語") == 0);
    CHECK(strcmp(hy_lang_find("yue")->native, "粵語") == 0);
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
    struct hy_lang_guess g[HY_LANG_COUNT];
    const char *t = "Guten Morgen, wie geht es dir heute?";
    size_t n = hy_lang_detect_ranked(t, strlen(t), g, HY_LANG_COUNT);
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
    CHECK(hy_lang_detect_ranked(ko, strlen(ko), g, HY_LANG_COUNT) == 1);
    CHECK(g[0].confidence == 100.0);
    /* a word still has ranked candidates, with low confidences */
    CHECK(hy_lang_detect_ranked("Hi", 2, g, HY_LANG_COUNT) >= 2 &&
          g[0].confidence < HY_LANG_DETECT_MIN_CONFIDENCE);
    /* every byte value and a truncated tail: bounded, no crash, some answer or none */
    char bytes[256];
    for (int i = 0; i < 256; i++)
        bytes[i] = (char)(255 - i);
    CHECK(hy_lang_detect_ranked(bytes, sizeof bytes, g, HY_LANG_COUNT) <= HY_LANG_COUNT);
}

/* Every generation's table resolves to distinct rows of the main table (hy_lang_gen_at
 * asserts a known code), and an unknown generation has none. */
static void test_gen_tables(void)
{
    static const char *const GENS[] = {"mt1", "mt1.5", "mt2"};
    for (size_t g = 0; g < sizeof GENS / sizeof GENS[0]; g++) {
        size_t n = hy_lang_gen_count(GENS[g]);
        CHECKF(n == 38, "%s: %zu languages", GENS[g], n);
        for (size_t i = 0; i < n; i++) {
            const struct hy_lang *l = hy_lang_gen_at(GENS[g], i);
            CHECK(hy_lang_gen_has(GENS[g], l));
            for (size_t j = 0; j < i; j++)
                CHECKF(hy_lang_gen_at(GENS[g], j) != l, "%s: %s twice", GENS[g], l->code);
        }
        /* README order: zh first, yue last */
        CHECK(strcmp(hy_lang_gen_at(GENS[g], 0)->code, "zh") == 0);
        CHECK(strcmp(hy_lang_gen_at(GENS[g], n - 1)->code, "yue") == 0);
    }
    CHECK(hy_lang_gen_count("mt3") == 0);
    CHECK(hy_lang_gen_count(NULL) == 0);
    CHECK(!hy_lang_gen_has("mt3", hy_lang_find("en")));
    CHECK(!hy_lang_gen_has("mt2", NULL));
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
