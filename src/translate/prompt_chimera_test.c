/* prompt_chimera_test.c: Chimera's fusion prompt for three candidates byte for byte
 * against the template as the model doc 5.4 prints it (the report's form), placeholders
 * and slots filled by hand here; then the ids in the 7b chat template of tiny-mqa's
 * tokenizer, the candidate count's bounds, a short buffer, and a missing language. */
#include "translate/prompt_chimera.h"

#include "test.h"

#include <string.h>

static void test_three(void)
{
    const char *src = "The cat sleeps on the warm windowsill.";
    struct hy_chimera_cand c[3] = {
        {"Die Katze schläft auf der warmen Fensterbank.", 0},
        {"  Die Katze schläft auf dem warmen Fenstersims.\n", 0}, /* trimmed */
        {"Die Katze schlummert auf der warmen Fensterbank.", 0},
    };
    for (int i = 0; i < 3; i++)
        c[i].len = strlen(c[i].text);
    /* model doc 5.4, Chimera (six slots; three filled, the rest left out) */
    const char *want =
        "Analyze the following multiple German translations of the English segment surrounded "
        "in triple backticks and generate a single refined German translation. Only output the "
        "refined translation, do not explain.\n"
        "\n"
        "The English segment:\n"
        "```The cat sleeps on the warm windowsill.```\n"
        "\n"
        "The multiple German translations:\n"
        "1. ```Die Katze schläft auf der warmen Fensterbank.```\n"
        "2. ```Die Katze schläft auf dem warmen Fenstersims.```\n"
        "3. ```Die Katze schlummert auf der warmen Fensterbank.```";
    char buf[2048];
    size_t n = 0;
    struct hy_err err = {{0}};
    CHECKF(hy_prompt_chimera_user(hy_lang_find("en"), hy_lang_find("de"), src, strlen(src), c, 3,
                                  buf, sizeof buf, &n, &err) == HY_OK, "%s", err.msg);
    CHECKF(n == strlen(want) && !memcmp(buf, want, n), "got [%.*s]\nwant [%s]", (int)n, buf, want);

    /* a short buffer: the size needed, nothing written past cap */
    char small[40];
    memset(small, 'x', sizeof small);
    size_t need = 0;
    CHECK(hy_prompt_chimera_user(hy_lang_find("en"), hy_lang_find("de"), src, strlen(src), c, 3,
                                 small, 32, &need, &err) == HY_E_NOSPACE && need == n);
    CHECK(small[32] == 'x' && small[39] == 'x');

    /* k in 1..6; both languages named */
    CHECK(hy_prompt_chimera_user(hy_lang_find("en"), hy_lang_find("de"), src, 3, c, 0, buf,
                                 sizeof buf, &n, &err) == HY_E_INVAL);
    CHECK(hy_prompt_chimera_user(hy_lang_find("en"), hy_lang_find("de"), src, 3, c, 7, buf,
                                 sizeof buf, &n, &err) == HY_E_INVAL);
    CHECK(hy_prompt_chimera_user(NULL, hy_lang_find("de"), src, 3, c, 3, buf, sizeof buf, &n,
                                 &err) == HY_E_INVAL && strstr(err.msg, "source"));

    /* the Chinese side: English names all the same */
    const struct hy_chimera_cand z[2] = {{"猫在睡觉。", strlen("猫在睡觉。")}, {"猫睡着了。", strlen("猫睡着了。")}};
    const char *want_zh =
        "Analyze the following multiple Chinese translations of the Japanese segment surrounded "
        "in triple backticks and generate a single refined Chinese translation. Only output the "
        "refined translation, do not explain.\n\nThe Japanese segment:\n```猫が寝ている。```\n\n"
        "The multiple Chinese translations:\n1. ```猫在睡觉。```\n2. ```猫睡着了。```";
    const char *ja = "猫が寝ている。";
    CHECK(hy_prompt_chimera_user(hy_lang_find("ja"), hy_lang_find("zh"), ja, strlen(ja), z, 2,
                                 buf, sizeof buf, &n, &err) == HY_OK);
    CHECKF(n == strlen(want_zh) && !memcmp(buf, want_zh, n), "got [%.*s]", (int)n, buf);
}

/* The ids: <|startoftext|> + encode(message) + <|extra_0|> (model doc 5.1). */
static void test_ids(void)
{
    char path[4096];
    test_path(path, sizeof path, "HYMT_SRC", "tests/data/tiny-mqa");
    struct hy_tok *tok = NULL;
    struct hy_err err = {{0}};
    if (hy_tok_load(&tok, path, &err) != HY_OK) {
        CHECKF(0, "%s", err.msg);
        return;
    }
    const char *src = "Hello there.";
    const struct hy_chimera_cand c[2] = {{"Hallo da.", 9}, {"Hallo dort.", 11}};
    char msg[1024];
    size_t n = 0, m = 0, e = 0;
    CHECK(hy_prompt_chimera_user(hy_lang_find("en"), hy_lang_find("de"), src, strlen(src), c, 2,
                                 msg, sizeof msg, &n, &err) == HY_OK);
    static int32_t ids[4096], want[4096];
    CHECKF(hy_prompt_chimera(tok, HY_PROMPT_7B, hy_lang_find("en"), hy_lang_find("de"), src,
                             strlen(src), c, 2, ids, 4096, &m, &err) == HY_OK, "%s", err.msg);
    CHECK(hy_tok_encode(tok, msg, n, false, want + 1, 4094, &e, &err) == HY_OK);
    want[0] = hy_tok_find(tok, "<|startoftext|>");
    want[e + 1] = hy_tok_find(tok, "<|extra_0|>");
    CHECK(want[0] >= 0 && want[e + 1] >= 0 && e > 20);
    CHECKF(m == e + 2 && !memcmp(ids, want, m * sizeof *ids), "%zu ids, want %zu", m, e + 2);
    hy_tok_destroy(tok);
}

int main(void)
{
    test_three();
    test_ids();
    return test_result();
}
