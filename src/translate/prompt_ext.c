/* prompt_ext.c: the terminology, context and formatted-text prompts (contract in
 * prompt_ext.h). */
#include "translate/prompt_ext.h"

#include <stdlib.h>
#include <string.h>

#define TERM_HEAD "参考下面的翻译：\n"
#define TERM_SEP " 翻译成 "
#define TERM_ASK "\n将以下文本翻译为"
#define TERM_ASK_END "，注意只需要输出翻译后的结果，不要额外解释：\n"
#define CTX_ASK "\n参考上面的信息，把下面的文本翻译成"
#define CTX_ASK_END "，注意不需要翻译上文，也不要额外解释：\n"
#define FMT_ASK "将以下<source></source>之间的文本翻译为"
#define FMT_ASK_END                                                                              \
    "，注意只需要输出翻译后的结果，不要额外解释，原文中的<sn></sn>标签表示标签内文本包含格式信息，" \
    "需要在译文中相应的位置尽量保留该标签。输出格式为：<target>str</target>\n\n<source>"
#define FMT_END "</source>"

/* Appends n bytes to buf (cap) at *at, writing only what fits; *at counts all. */
static void put(char *buf, size_t cap, size_t *at, const char *s, size_t n)
{
    if (*at <= cap && n <= cap - *at)
        memcpy(buf + *at, s, n);
    *at += n;
}

static void puts0(char *buf, size_t cap, size_t *at, const char *s)
{
    put(buf, cap, at, s, strlen(s));
}

bool hy_prompt_ext_supported(enum hy_prompt_style style)
{
    return style == HY_PROMPT_DENSE;
}

static bool wants_ext(const struct hy_prompt_ext *x)
{
    return x && (x->n_terms > 0 || x->context_len > 0 || x->formatted);
}

hy_status hy_prompt_ext_user(enum hy_prompt_style style, const struct hy_lang *src,
                             const struct hy_lang *tgt, const struct hy_prompt_ext *x,
                             const char *text, size_t len, char *buf, size_t cap, size_t *n_out,
                             struct hy_err *err)
{
    if (!wants_ext(x))
        return hy_prompt_user(style, src, tgt, text, len, buf, cap, n_out, err);
    *n_out = 0;
    if (!hy_prompt_ext_supported(style))
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "glossaries, context and formatted text need a HY-MT1.5 model (dense "
                          "prompt style); this tokenizer has the %s style (Hunyuan-MT-7B), whose "
                          "prompts have no such form", hy_prompt_style_name(style));
    if (x->formatted && (x->n_terms || x->context_len))
        return hy_err_set(err, HY_E_INVAL,
                          "the formatted-text prompt cannot be combined with terms or context");
    size_t at = 0;
    if (x->formatted) {
        puts0(buf, cap, &at, FMT_ASK);
        puts0(buf, cap, &at, tgt->name_zh);
        puts0(buf, cap, &at, FMT_ASK_END);
        put(buf, cap, &at, text, len);
        puts0(buf, cap, &at, FMT_END);
    } else if (x->n_terms) {
        puts0(buf, cap, &at, TERM_HEAD);
        for (size_t i = 0; i < x->n_terms; i++) {
            put(buf, cap, &at, x->terms[i].src, x->terms[i].src_len);
            puts0(buf, cap, &at, TERM_SEP);
            put(buf, cap, &at, x->terms[i].tgt, x->terms[i].tgt_len);
            puts0(buf, cap, &at, "\n");
        }
        puts0(buf, cap, &at, TERM_ASK);
        puts0(buf, cap, &at, tgt->name_zh);
        puts0(buf, cap, &at, TERM_ASK_END);
        put(buf, cap, &at, text, len);
    } else {
        put(buf, cap, &at, x->context, x->context_len);
        puts0(buf, cap, &at, CTX_ASK);
        puts0(buf, cap, &at, tgt->name_zh);
        puts0(buf, cap, &at, CTX_ASK_END);
        put(buf, cap, &at, text, len);
    }
    *n_out = at;
    if (at > cap)
        return hy_err_set(err, HY_E_NOSPACE, "prompt: %zu bytes, room for %zu", at, cap);
    return HY_OK;
}

hy_status hy_prompt_ext_translate(const struct hy_tok *tok, enum hy_prompt_style style,
                                  const struct hy_lang *src, const struct hy_lang *tgt,
                                  const struct hy_prompt_ext *x, const char *text, size_t len,
                                  int32_t *ids, size_t cap, size_t *n_out, struct hy_err *err)
{
    size_t need = 0;
    *n_out = 0;
    hy_status st = hy_prompt_ext_user(style, src, tgt, x, text, len, NULL, 0, &need, err);
    if (st && st != HY_E_NOSPACE)
        return st;
    char *user = malloc(need ? need : 1);
    if (!user)
        return hy_err_set(err, HY_E_NOMEM, "prompt: %zu bytes for the user message", need);
    hy_prompt_ext_user(style, src, tgt, x, text, len, user, need, &need, NULL);
    struct hy_prompt_msg m = {HY_PROMPT_USER, user, need};
    st = hy_prompt_chat(tok, style, &m, 1, true, ids, cap, n_out, err);
    free(user);
    return st;
}

static const char *find(const char *s, size_t n, const char *what, bool last)
{
    size_t k = strlen(what);
    const char *hit = NULL;
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(s + i, what, k)) {
            hit = s + i;
            if (!last)
                break;
        }
    return hit;
}

void hy_prompt_ext_unwrap(const char *reply, size_t len, size_t *off, size_t *n)
{
    const char *a = find(reply, len, "<target>", false);
    if (!a) {
        *off = 0;
        *n = len;
        return;
    }
    *off = (size_t)(a - reply) + strlen("<target>");
    const char *b = find(reply + *off, len - *off, "</target>", true);
    *n = b ? (size_t)(b - (reply + *off)) : len - *off;
}
