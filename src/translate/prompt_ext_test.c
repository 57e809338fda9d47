/* prompt_ext_test.c: the terminology, context and formatted-text prompts byte for byte
 * against the templates as Tencent-Hunyuan/HY-MT's README prints them (model doc 5.4),
 * placeholders replaced by hand here; the terms of the terminology case come from a real
 * glossary match. Then the ids of the dense tiny tokenizer, the 7b refusal, unwrapping. */
#include "translate/prompt_ext.h"

#include "test.h"

#include <string.h>

static void check_user(const struct hy_prompt_ext *x, const char *tgt, const char *text,
                       const char *want)
{
    char buf[2048];
    size_t n = 0;
    struct hy_err err = {{0}};
    hy_status st = hy_prompt_ext_user(HY_PROMPT_GEN_MT15, hy_lang_find("en"), hy_lang_find(tgt), x,
                                      text, strlen(text), buf, sizeof buf, &n, &err);
    CHECKF(st == HY_OK, "%s", err.msg);
    CHECKF(n == strlen(want) && !memcmp(buf, want, n), "got [%.*s]\nwant [%s]", (int)n, buf,
           want);
}

static void test_terminology(void)
{
    struct hy_glossary *g = NULL;
    const char *csv = "machine learning,maschinelles Lernen\ncat,Katze\ndog,Hund\n";
    CHECK(hy_glossary_create(&g, NULL) == HY_OK);
    CHECK(hy_glossary_parse(g, csv, strlen(csv), HY_GLOSSARY_CSV, NULL) == HY_OK);
    const char *text = "My cat does machine learning.";
    struct hy_glossary_term t[4];
    size_t n = 0;
    CHECK(hy_glossary_match(g, text, strlen(text), t, 4, &n, NULL) == HY_OK);
    CHECK(n == 2);
    struct hy_prompt_ext x = {.terms = t, .n_terms = n};
    /* README: 参考下面的翻译：\n{source_term} 翻译成 {target_term}\n\n将以下文本翻译为
     * {target_language}，注意只需要输出翻译后的结果，不要额外解释：\n{source_text},
     * the term line once per term */
    check_user(&x, "de",
               text,
               "参考下面的翻译：\n"
               "cat 翻译成 Katze\n"
               "machine learning 翻译成 maschinelles Lernen\n"
               "\n"
               "将以下文本翻译为德语，注意只需要输出翻译后的结果，不要额外解释：\n"
               "My cat does machine learning.");
    /* one term, into Chinese: the README's own example (report Table 3) */
    struct hy_glossary_term one = {"混元珠", "Chaos Pearl", strlen("混元珠"), 11};
    struct hy_prompt_ext y = {.terms = &one, .n_terms = 1};
    check_user(&y, "en", "孕育出一颗混元珠",
               "参考下面的翻译：\n混元珠 翻译成 Chaos Pearl\n\n"
               "将以下文本翻译为英语，注意只需要输出翻译后的结果，不要额外解释：\n孕育出一颗混元珠");
    /* terms win over context (one template per prompt) */
    y.context = "ignored";
    y.context_len = 7;
    check_user(&y, "en", "孕育出一颗混元珠",
               "参考下面的翻译：\n混元珠 翻译成 Chaos Pearl\n\n"
               "将以下文本翻译为英语，注意只需要输出翻译后的结果，不要额外解释：\n孕育出一颗混元珠");
    hy_glossary_destroy(g);
}

static void test_context(void)
{
    const char *ctx = "For commercial television programs, that start is the unusual entity "
                      "known as the pilot.\nIt sets the tone.";
    struct hy_prompt_ext x = {.context = ctx, .context_len = strlen(ctx)};
    /* README: {context}\n参考上面的信息，把下面的文本翻译成{target_language}，注意不需要翻译上文，
     * 也不要额外解释：\n{source_text} */
    check_user(&x, "zh", "The Educational and Inspirational Poetics of Pilots",
               "For commercial television programs, that start is the unusual entity known as "
               "the pilot.\nIt sets the tone.\n"
               "参考上面的信息，把下面的文本翻译成中文，注意不需要翻译上文，也不要额外解释：\n"
               "The Educational and Inspirational Poetics of Pilots");
}

static void test_formatted(void)
{
    struct hy_prompt_ext x = {.formatted = true};
    const char *text = "<s1>The rain it raineth every day,</s1><s2>as Shakespeare noted.</s2>";
    /* README, verbatim for a Chinese target */
    check_user(&x, "zh", text,
               "将以下<source></source>之间的文本翻译为中文，注意只需要输出翻译后的结果，不要额外解"
               "释，原文中的<sn></sn>标签表示标签内文本包含格式信息，需要在译文中相应的位置尽量保留该"
               "标签。输出格式为：<target>str</target>\n\n"
               "<source><s1>The rain it raineth every day,</s1><s2>as Shakespeare noted.</s2>"
               "</source>");
    /* another target: its Chinese name where the README has 中文 */
    check_user(&x, "ja", "<s1>Hi</s1>",
               "将以下<source></source>之间的文本翻译为日语，注意只需要输出翻译后的结果，不要额外解"
               "释，原文中的<sn></sn>标签表示标签内文本包含格式信息，需要在译文中相应的位置尽量保留该"
               "标签。输出格式为：<target>str</target>\n\n<source><s1>Hi</s1></source>");
    x.context = "c";
    x.context_len = 1;
    char buf[64];
    size_t n;
    CHECK(hy_prompt_ext_user(HY_PROMPT_GEN_MT15, NULL, hy_lang_find("zh"), &x, "a", 1, buf,
                             sizeof buf, &n, NULL) == HY_E_INVAL);
}

static void test_plain_and_mt1(void)
{
    char a[512], b[512];
    size_t na = 0, nb = 0;
    const struct hy_lang *en = hy_lang_find("en"), *de = hy_lang_find("de");
    /* nothing asked: the plain prompt, in every generation */
    struct hy_prompt_ext none = {0};
    for (int g = 0; g < HY_PROMPT_GEN_COUNT; g++) {
        CHECK(hy_prompt_ext_user((enum hy_prompt_gen)g, en, de, &none, "Hi", 2, a, sizeof a, &na,
                                 NULL) == HY_OK);
        CHECK(hy_prompt_user((enum hy_prompt_gen)g, en, de, "Hi", 2, b, sizeof b, &nb, NULL) ==
              HY_OK);
        CHECK(na == nb && !memcmp(a, b, na));
    }
    struct hy_prompt_ext x = {.context = "c", .context_len = 1};
    struct hy_err err = {{0}};
    CHECK(hy_prompt_ext_user(HY_PROMPT_GEN_MT1, en, de, &x, "Hi", 2, a, sizeof a, &na, &err) ==
          HY_E_UNSUPPORTED);
    CHECK(strstr(err.msg, "HY-MT1.5") != NULL);
    CHECK(!hy_prompt_ext_supported(HY_PROMPT_GEN_MT1) &&
          hy_prompt_ext_supported(HY_PROMPT_GEN_MT15) && hy_prompt_ext_supported(HY_PROMPT_GEN_MT2));
    /* too small a buffer: the size needed */
    CHECK(hy_prompt_ext_user(HY_PROMPT_GEN_MT15, en, de, &x, "Hi", 2, a, 4, &na, NULL) ==
          HY_E_NOSPACE);
    CHECK(na > 4);
}

/* The ids: the dense chat template around exactly the user message above. */
static void test_ids(void)
{
    char path[1024];
    struct hy_tok *tok = NULL;
    struct hy_err err = {{0}};
    test_path(path, sizeof path, "HYMT_SRC", "tests/data/tiny-dense18");
    CHECKF(hy_tok_load(&tok, path, &err) == HY_OK, "%s", err.msg);
    if (!tok)
        return;
    const char *ctx = "Previous sentence.";
    struct hy_prompt_ext x = {.context = ctx, .context_len = strlen(ctx)};
    const struct hy_lang *de = hy_lang_find("de");
    char user[512];
    size_t nu = 0, n1 = 0, n2 = 0;
    const struct hy_prompt_kind k = {HY_PROMPT_DENSE, HY_PROMPT_GEN_MT15};
    CHECK(hy_prompt_ext_user(k.gen, NULL, de, &x, "Next one.", 9, user, sizeof user, &nu, NULL) ==
          HY_OK);
    int32_t a[1024], b[1024];
    CHECK(hy_prompt_ext_translate(tok, &k, NULL, de, &x, "Next one.", 9, a, 1024, &n1, &err) ==
          HY_OK);
    struct hy_prompt_msg m = {HY_PROMPT_USER, user, nu};
    CHECK(hy_prompt_chat(tok, HY_PROMPT_DENSE, &m, 1, true, b, 1024, &n2, &err) == HY_OK);
    CHECK(n1 == n2 && n1 > 10 && !memcmp(a, b, n1 * sizeof *a));
    CHECK(hy_prompt_ext_translate(tok, &k, NULL, de, &x, "Next one.", 9, a, 5, &n1, &err) ==
          HY_E_NOSPACE);
    hy_tok_destroy(tok);
}

static void unwrap(const char *reply, const char *want)
{
    size_t off = 0, n = 0;
    hy_prompt_ext_unwrap(reply, strlen(reply), &off, &n);
    CHECKF(n == strlen(want) && !memcmp(reply + off, want, n), "[%s] -> [%.*s]", reply, (int)n,
           reply + off);
}

static void test_unwrap(void)
{
    unwrap("<target><s1>雨</s1></target>", "<s1>雨</s1>");
    unwrap("<target>a</target> b</target>", "a</target> b");
    unwrap("<target>cut off", "cut off");
    unwrap("no wrapper", "no wrapper");
    unwrap("", "");
}

int main(void)
{
    test_terminology();
    test_context();
    test_formatted();
    test_plain_and_mt1();
    test_ids();
    test_unwrap();
    return test_result();
}
