/* prompt_gen_test.c: the prompts of each generation byte for byte against the templates as
 * published (Hunyuan-MT and HY-MT1.5 READMEs: model doc 5.4; Hy-MT2 README's table: Hy-MT2
 * doc 5.1), the placeholders filled in by hand here, and the checks on Hy-MT2's
 * instructions. The chat formats' ids are prompt_test's. */
#include "translate/prompt_ext.h"

#include "test.h"

#include <string.h>

static const struct hy_lang *L(const char *code)
{
    const struct hy_lang *l = hy_lang_find(code);
    CHECKF(l != NULL, "%s", code);
    return l;
}

static void check(enum hy_prompt_gen gen, const char *src, const char *tgt,
                  const struct hy_prompt_ext *x, const char *text, const char *want)
{
    char buf[4096];
    size_t n = 0;
    struct hy_err err = {{0}};
    hy_status st = hy_prompt_ext_user(gen, src ? L(src) : NULL, L(tgt), x, text, strlen(text),
                                      buf, sizeof buf, &n, &err);
    CHECKF(st == HY_OK, "%s %s->%s: %s", hy_prompt_gen_name(gen), src ? src : "?", tgt, err.msg);
    CHECKF(st != HY_OK || (n == strlen(want) && !memcmp(buf, want, n)),
           "%s %s->%s:\n  got  [%.*s]\n  want [%s]", hy_prompt_gen_name(gen), src ? src : "?", tgt,
           (int)n, buf, want);
}

/* The plain prompt of each generation, Chinese and English. */
static void test_default(void)
{
    const struct hy_prompt_ext none = {0};
    check(HY_PROMPT_GEN_MT1, "en", "zh", &none, "Hi", "把下面的文本翻译成中文，不要额外解释。\n\nHi");
    check(HY_PROMPT_GEN_MT1, "de", "fr", &none, "Hallo",
          "Translate the following segment into French, without additional explanation.\n\nHallo");
    check(HY_PROMPT_GEN_MT15, "en", "zh", &none, "Hi",
          "将以下文本翻译为中文，注意只需要输出翻译后的结果，不要额外解释：\n\nHi");
    check(HY_PROMPT_GEN_MT15, "de", "fr", &none, "Hallo",
          "Translate the following segment into French, without additional explanation.\n\nHallo");
    /* Hy-MT2: the Chinese one is HY-MT1.5's, the English one is new */
    check(HY_PROMPT_GEN_MT2, "en", "zh", &none, "Hi",
          "将以下文本翻译为中文，注意只需要输出翻译后的结果，不要额外解释：\n\nHi");
    check(HY_PROMPT_GEN_MT2, "zh", "yue", &none, "你好",
          "将以下文本翻译为粤语，注意只需要输出翻译后的结果，不要额外解释：\n\n你好");
    check(HY_PROMPT_GEN_MT2, "de", "fr", &none, "Hallo",
          "Translate the following text into French. Note that you should only output the "
          "translated result without any additional explanation:\n\nHallo");
    check(HY_PROMPT_GEN_MT2, NULL, "zh-Hant", &none, "Hello",
          "将以下文本翻译为繁体中文，注意只需要输出翻译后的结果，不要额外解释：\n\nHello");
    check(HY_PROMPT_GEN_MT2, NULL, "en", &none, "Bonjour",
          "Translate the following text into English. Note that you should only output the "
          "translated result without any additional explanation:\n\nBonjour");
}

static void test_mt2_terms_background(void)
{
    const struct hy_glossary_term t[2] = {{"混元珠", "Chaos Pearl", strlen("混元珠"), 11},
                                          {"太极", "Taiji", strlen("太极"), 5}};
    const struct hy_prompt_ext x = {.terms = t, .n_terms = 2};
    check(HY_PROMPT_GEN_MT2, "zh", "en", &x, "孕育出一颗混元珠",
          "参考下面的翻译：\n混元珠 翻译成 Chaos Pearl\n太极 翻译成 Taiji\n"
          "将以下文本翻译为英语，注意只需要输出翻译后的结果，不要额外解释：\n\n孕育出一颗混元珠");
    const struct hy_glossary_term g[1] = {{"pilot", "Pilotfolge", 5, 10}};
    const struct hy_prompt_ext y = {.terms = g, .n_terms = 1};
    check(HY_PROMPT_GEN_MT2, "en", "de", &y, "The pilot aired.",
          "Reference the following translations:\npilot translates to Pilotfolge\n\n"
          "Translate the following text into German. Note that you must ONLY output the "
          "translated result without any additional explanation:\n\nThe pilot aired.");
    const char *bg = "A TV series review.";
    const struct hy_prompt_ext c = {.context = bg, .context_len = strlen(bg)};
    check(HY_PROMPT_GEN_MT2, "en", "zh", &c, "The pilot aired.",
          "【背景信息】\nA TV series review.\n\n请结合背景信息将以下文本翻译为中文。\n\n"
          "【待翻译文本】\nThe pilot aired.");
    check(HY_PROMPT_GEN_MT2, "en", "ja", &c, "The pilot aired.",
          "[Background Information]\nA TV series review.\n\nPlease translate the following text "
          "into Japanese, taking the provided background information into consideration.\n\n"
          "[Source Text]\nThe pilot aired.");
}

static void test_mt2_style_prefs_delims(void)
{
    const struct hy_prompt_instr st = {.style = "正式"};
    const struct hy_prompt_ext x = {.instr = &st};
    check(HY_PROMPT_GEN_MT2, "en", "zh", &x, "Hey there",
          "请将以下文本翻译为中文。\n注意翻译的风格要严格符合【正式】\n\nHey there");
    const struct hy_prompt_instr st2 = {.style = "formal business English"};
    const struct hy_prompt_ext x2 = {.instr = &st2};
    check(HY_PROMPT_GEN_MT2, "fr", "en", &x2, "Salut",
          "Please translate the following text into English. Note that the translation style "
          "must strictly conform to [formal business English]:\n\nSalut");

    const char *const prefs[2] = {"保留品牌名不译", "使用敬语"};
    const struct hy_prompt_instr p = {.prefs = prefs, .n_prefs = 2};
    const struct hy_prompt_ext y = {.instr = &p};
    check(HY_PROMPT_GEN_MT2, "ja", "zh", &y, "ソニーの新製品",
          "【待翻译文本】\nソニーの新製品\n\n【翻译任务】\n1、保留品牌名不译\n2、使用敬语\n"
          "3、将【待翻译文本】翻译为中文。");
    const char *const one[1] = {"Keep brand names in English"};
    const struct hy_prompt_instr p1 = {.prefs = one, .n_prefs = 1};
    const struct hy_prompt_ext y1 = {.instr = &p1};
    check(HY_PROMPT_GEN_MT2, "ja", "de", &y1, "ソニー",
          "[Source Text]\nソニー\n\n[Translation Tasks]\n1. Keep brand names in English\n"
          "2. Translate the [Source Text] into German.");

    const struct hy_prompt_instr d = {.delimiters = true};
    const struct hy_prompt_ext z = {.instr = &d};
    check(HY_PROMPT_GEN_MT2, "en", "zh", &z, "a|b|c",
          "请将以下文本准确翻译为中文。\n你必须在译文中保留等量的分隔符，绝对不可遗漏、转义或翻译"
          "该符号，并注意分隔符的位置。\n\na|b|c");
    check(HY_PROMPT_GEN_MT2, "en", "es", &z, "a|b|c",
          "Please accurately translate the following text into Spanish.\nYou must retain the "
          "exact same number of delimiters in the translation. Strictly do not omit, escape, or "
          "translate these symbols, and pay close attention to their placement.\n\na|b|c");
}

static void test_mt2_data(void)
{
    const struct hy_prompt_instr d = {.data_format = "JSON"};
    const struct hy_prompt_ext x = {.instr = &d};
    const char *json = "{\"title\": \"Hello\"}";
    /* the Chinese form names {source_text} twice, as published */
    check(HY_PROMPT_GEN_MT2, "en", "zh", &x, json,
          "# 任务目标\n将下方{\"title\": \"Hello\"}中的JSON格式数据翻译为中文。\n\n# 严格约束\n"
          "1. **结构锁定**：绝对保持原有的JSON数据结构、缩进和层级完全不变。\n"
          "2. **选择性翻译**：仅翻译面向用户展示的可见文本内容。\n"
          "3. **禁止修改**：**严禁**翻译或更改任何代码标签、键名 (Key)、变量占位符（如 `{{var}}`"
          "、`${var}`、`%s`、`%d` 等）或代码属性。\n\n# 数据输入\n{\"title\": \"Hello\"}");
    check(HY_PROMPT_GEN_MT2, "en", "fr", &x, json,
          "### Task\nTranslate the user-facing text within the following JSON data into "
          "French.\n\n### Strict Rules\n1. **Structure Preservation:** You MUST preserve the "
          "original JSON data structure, nesting, hierarchy, and indentation exactly as they "
          "are.\n2. **Selective Translation:** Translate ONLY the visible, user-facing text "
          "content/values.\n3. **Strict Non-Translation:** NEVER translate or alter code tags, "
          "keys, properties, object names, or variable placeholders. Leave them exactly in their "
          "original English/code form.\n\n### Source Data\n{\"title\": \"Hello\"}");
    /* placeholder bytes typed in the text stay text */
    check(HY_PROMPT_GEN_MT2, "en", "fr", &(struct hy_prompt_ext){0}, "\x01\x02",
          "Translate the following text into French. Note that you should only output the "
          "translated result without any additional explanation:\n\n\x01\x02");
}

static hy_status user(enum hy_prompt_gen gen, const struct hy_prompt_ext *x, struct hy_err *err)
{
    char buf[256];
    size_t n;
    return hy_prompt_ext_user(gen, L("en"), L("de"), x, "t", 1, buf, sizeof buf, &n, err);
}

static void test_refusals(void)
{
    struct hy_err err = {{0}};
    const struct hy_prompt_instr st = {.style = "formal"};
    const struct hy_prompt_ext x = {.instr = &st};
    /* older generations have no such prompt */
    CHECK(user(HY_PROMPT_GEN_MT15, &x, &err) == HY_E_UNSUPPORTED && strstr(err.msg, "Hy-MT2"));
    CHECK(user(HY_PROMPT_GEN_MT1, &x, &err) == HY_E_UNSUPPORTED);
    CHECK(hy_prompt_instr_check(HY_PROMPT_GEN_MT1, &st, &err) == HY_E_UNSUPPORTED);
    CHECK(hy_prompt_instr_check(HY_PROMPT_GEN_MT1, NULL, &err) == HY_OK);
    /* Hy-MT2 has no formatted-text prompt */
    const struct hy_prompt_ext f = {.formatted = true};
    CHECK(user(HY_PROMPT_GEN_MT2, &f, &err) == HY_E_UNSUPPORTED && strstr(err.msg, "HY-MT1.5"));
    /* two instructions, or one with terms or context */
    const struct hy_prompt_instr two = {.style = "formal", .delimiters = true};
    CHECK(hy_prompt_instr_check(HY_PROMPT_GEN_MT2, &two, &err) == HY_E_INVAL);
    const struct hy_prompt_ext y = {.instr = &two};
    CHECK(user(HY_PROMPT_GEN_MT2, &y, &err) == HY_E_INVAL);
    const struct hy_glossary_term t = {"a", "b", 1, 1};
    const struct hy_prompt_ext z = {.terms = &t, .n_terms = 1, .instr = &st};
    CHECK(user(HY_PROMPT_GEN_MT2, &z, &err) == HY_E_INVAL && strstr(err.msg, "one instruction"));
    const struct hy_prompt_ext c = {.context = "c", .context_len = 1, .instr = &st};
    CHECK(user(HY_PROMPT_GEN_MT2, &c, &err) == HY_E_INVAL);
    /* bad strings */
    const char *const bad[] = {"", "line\nbreak", "\xff\xfe", "tab\there"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const struct hy_prompt_instr s = {.style = bad[i]};
        CHECKF(hy_prompt_instr_check(HY_PROMPT_GEN_MT2, &s, &err) == HY_E_INVAL, "%zu", i);
        const char *p[1] = {bad[i]};
        const struct hy_prompt_instr q = {.prefs = p, .n_prefs = 1};
        CHECKF(hy_prompt_instr_check(HY_PROMPT_GEN_MT2, &q, &err) == HY_E_INVAL, "%zu", i);
    }
    static char big[HY_PROMPT_INSTR_MAX_BYTES + 2];
    memset(big, 'a', sizeof big - 1);
    const struct hy_prompt_instr b = {.data_format = big};
    CHECK(hy_prompt_instr_check(HY_PROMPT_GEN_MT2, &b, &err) == HY_E_INVAL);
    big[HY_PROMPT_INSTR_MAX_BYTES] = '\0'; /* exactly the limit: fine */
    CHECK(hy_prompt_instr_check(HY_PROMPT_GEN_MT2, &b, &err) == HY_OK);
    const char *many[HY_PROMPT_MAX_PREFS + 1];
    for (size_t i = 0; i <= HY_PROMPT_MAX_PREFS; i++)
        many[i] = "p";
    const struct hy_prompt_instr m = {.prefs = many, .n_prefs = HY_PROMPT_MAX_PREFS + 1};
    CHECK(hy_prompt_instr_check(HY_PROMPT_GEN_MT2, &m, &err) == HY_E_INVAL);
    const struct hy_prompt_instr m16 = {.prefs = many, .n_prefs = HY_PROMPT_MAX_PREFS};
    CHECK(hy_prompt_instr_check(HY_PROMPT_GEN_MT2, &m16, &err) == HY_OK);
}

static void test_names(void)
{
    static const struct {
        const char *s;
        int gen; /* -1: unknown */
    } CASES[] = {
        {"mt2", HY_PROMPT_GEN_MT2},    {"Hy-MT2", HY_PROMPT_GEN_MT2},
        {"hy_mt2", HY_PROMPT_GEN_MT2}, {"MT1.5", HY_PROMPT_GEN_MT15},
        {"HY-MT1.5", HY_PROMPT_GEN_MT15}, {"mt15", HY_PROMPT_GEN_MT15},
        {"mt1", HY_PROMPT_GEN_MT1},    {"Hunyuan-MT", HY_PROMPT_GEN_MT1},
        {"chimera", HY_PROMPT_GEN_MT1}, {"auto", -1},
        {"mt3", -1},                   {"", -1},
        {"mt2mt2mt2mt2mt2mt2mt2mt2mt2mt2mt2mt2", -1},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        enum hy_prompt_gen g = HY_PROMPT_GEN_COUNT;
        bool ok = hy_prompt_gen_parse(CASES[i].s, &g);
        CHECKF(ok == (CASES[i].gen >= 0) && (!ok || (int)g == CASES[i].gen), "'%s'", CASES[i].s);
    }
    for (int g = 0; g < HY_PROMPT_GEN_COUNT; g++) { /* names round-trip */
        enum hy_prompt_gen back;
        CHECK(hy_prompt_gen_parse(hy_prompt_gen_name((enum hy_prompt_gen)g), &back) && (int)back == g);
        CHECK(hy_prompt_gen_parse(hy_prompt_gen_title((enum hy_prompt_gen)g), &back) &&
              (int)back == g);
    }
    CHECK(hy_prompt_gen_of_style(HY_PROMPT_7B) == HY_PROMPT_GEN_MT1);
    CHECK(hy_prompt_gen_of_style(HY_PROMPT_DENSE) == HY_PROMPT_GEN_MT15);
    CHECK(hy_prompt_gen_of_style(HY_PROMPT_HYV3) == HY_PROMPT_GEN_MT2);
    CHECK(hy_prompt_check_langs(HY_PROMPT_GEN_MT2, NULL, L("yue"), NULL) == HY_OK);
    CHECK(hy_prompt_check_langs(HY_PROMPT_GEN_MT1, L("bo"), L("ug"), NULL) == HY_OK);
}

int main(void)
{
    test_default();
    test_mt2_terms_background();
    test_mt2_style_prefs_delims();
    test_mt2_data();
    test_refusals();
    test_names();
    return test_result();
}
