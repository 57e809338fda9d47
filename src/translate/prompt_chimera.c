/* prompt_chimera.c: Chimera's fusion prompt (contract and sources in prompt_chimera.h). */
#include "translate/prompt_chimera.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FENCE "```"

/* Appends n bytes to buf (cap) at *at, writing only what fits; *at counts all. */
static void put(char *buf, size_t cap, size_t *at, const char *s, size_t n)
{
    if (n && *at <= cap && n <= cap - *at)
        memcpy(buf + *at, s, n);
    *at += n;
}

static void puts0(char *buf, size_t cap, size_t *at, const char *s)
{
    put(buf, cap, at, s, strlen(s));
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

hy_status hy_prompt_chimera_user(const struct hy_lang *src, const struct hy_lang *tgt,
                                 const char *text, size_t len, const struct hy_chimera_cand *cands,
                                 int k, char *buf, size_t cap, size_t *n_out, struct hy_err *err)
{
    *n_out = 0;
    if (!src || !tgt)
        return hy_err_set(err, HY_E_INVAL, "the Chimera prompt names the source and the target "
                          "language: both must be known");
    if (k < 1 || k > HY_CHIMERA_MAX_CANDIDATES)
        return hy_err_set(err, HY_E_INVAL, "%d candidates: the Chimera prompt takes 1 to %d", k,
                          HY_CHIMERA_MAX_CANDIDATES);
    size_t at = 0;
    puts0(buf, cap, &at, "Analyze the following multiple ");
    puts0(buf, cap, &at, tgt->name_en);
    puts0(buf, cap, &at, " translations of the ");
    puts0(buf, cap, &at, src->name_en);
    puts0(buf, cap, &at, " segment surrounded in triple backticks and generate a single "
                         "refined ");
    puts0(buf, cap, &at, tgt->name_en);
    puts0(buf, cap, &at, " translation. Only output the refined translation, do not explain."
                         "\n\nThe ");
    puts0(buf, cap, &at, src->name_en);
    puts0(buf, cap, &at, " segment:\n" FENCE);
    put(buf, cap, &at, text, len);
    puts0(buf, cap, &at, FENCE "\n\nThe multiple ");
    puts0(buf, cap, &at, tgt->name_en);
    puts0(buf, cap, &at, " translations:");
    for (int i = 0; i < k; i++) {
        const char *s = cands[i].text;
        size_t n = cands[i].len;
        while (n && is_space(*s))
            s++, n--;
        while (n && is_space(s[n - 1]))
            n--;
        char num[32];
        snprintf(num, sizeof num, "\n%d. " FENCE, i + 1);
        puts0(buf, cap, &at, num);
        put(buf, cap, &at, s, n);
        puts0(buf, cap, &at, FENCE);
    }
    *n_out = at;
    if (at > cap)
        return hy_err_set(err, HY_E_NOSPACE, "the Chimera prompt needs %zu bytes", at);
    return HY_OK;
}

hy_status hy_prompt_chimera(const struct hy_tok *tok, enum hy_prompt_style style,
                            const struct hy_lang *src, const struct hy_lang *tgt, const char *text,
                            size_t len, const struct hy_chimera_cand *cands, int k, int32_t *ids,
                            size_t cap, size_t *n_out, struct hy_err *err)
{
    size_t need = 0;
    *n_out = 0;
    hy_status st = hy_prompt_chimera_user(src, tgt, text, len, cands, k, NULL, 0, &need, err);
    if (st && st != HY_E_NOSPACE)
        return st;
    char *msg = malloc(need ? need : 1);
    if (!msg)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for a %zu-byte prompt", need);
    st = hy_prompt_chimera_user(src, tgt, text, len, cands, k, msg, need, &need, err);
    if (!st) {
        struct hy_prompt_msg m = {HY_PROMPT_USER, msg, need};
        st = hy_prompt_chat(tok, style, &m, 1, true, ids, cap, n_out, err);
    }
    free(msg);
    return st;
}
