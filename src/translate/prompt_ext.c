/* prompt_ext.c: the instruction prompts beyond the plain one (contract in prompt_ext.h).
 * Each template is the published text with one-byte placeholders where the README has
 * {...}, so that it can be read against the source: */
#include "translate/prompt_ext.h"

#include "core/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T "\x01" /* {target_lang}: the Chinese or the English name, as the template's language */
#define X "\x02" /* {source_text} */
#define F "\x03" /* {format_type} */
#define S "\x04" /* {target_style} */
#define B "\x05" /* {context} / {background_text} */
#define L "\x06" /* the term lines, each "{source_term}<sep>{target_term}\n" */
#define P "\x07" /* the preference lines, each "<i><sep>{user_preferences}\n" */
#define N "\x08" /* the number after the last preference */
enum { PH_T = 1, PH_X, PH_F, PH_S, PH_B, PH_L, PH_P, PH_N }; /* the same bytes, for switch */

/* HY-MT1.5 (Chinese only). */
#define MT15_TERMS                                                                         \
    "参考下面的翻译：\n" L "\n将以下文本翻译为" T                                        \
    "，注意只需要输出翻译后的结果，不要额外解释：\n" X
#define MT15_CONTEXT                                                                       \
    B "\n参考上面的信息，把下面的文本翻译成" T "，注意不需要翻译上文，也不要额外解释：\n" X
#define MT15_FORMATTED                                                                     \
    "将以下<source></source>之间的文本翻译为" T                                          \
    "，注意只需要输出翻译后的结果，不要额外解释，原文中的<sn></sn>标签表示标签内文本包含格式" \
    "信息，需要在译文中相应的位置尽量保留该标签。输出格式为：<target>str</target>\n\n<source>" X \
    "</source>"

/* Hy-MT2, [0] Chinese, [1] English. */
static const char *const MT2_TERMS[2] = {
    "参考下面的翻译：\n" L "将以下文本翻译为" T "，注意只需要输出翻译后的结果，不要额外解释：\n\n" X,
    "Reference the following translations:\n" L "\nTranslate the following text into " T
    ". Note that you must ONLY output the translated result without any additional "
    "explanation:\n\n" X};
/* HY-MT1.5's term line is the Chinese one */
static const char *const MT2_TERM_SEP[2] = {" 翻译成 ", " translates to "};
static const char *const MT2_BACKGROUND[2] = {
    "【背景信息】\n" B "\n\n请结合背景信息将以下文本翻译为" T "。\n\n【待翻译文本】\n" X,
    "[Background Information]\n" B "\n\nPlease translate the following text into " T
    ", taking the provided background information into consideration.\n\n[Source Text]\n" X};
static const char *const MT2_STYLE[2] = {
    "请将以下文本翻译为" T "。\n注意翻译的风格要严格符合【" S "】\n\n" X,
    "Please translate the following text into " T
    ". Note that the translation style must strictly conform to [" S "]:\n\n" X};
static const char *const MT2_PREFS[2] = {
    "【待翻译文本】\n" X "\n\n【翻译任务】\n" P N "、将【待翻译文本】翻译为" T "。",
    "[Source Text]\n" X "\n\n[Translation Tasks]\n" P N ". Translate the [Source Text] into " T
    "."};
static const char *const MT2_PREF_SEP[2] = {"、", ". "};
static const char *const MT2_DELIMITERS[2] = {
    "请将以下文本准确翻译为" T "。\n你必须在译文中保留等量的分隔符，绝对不可遗漏、转义或翻译该"
    "符号，并注意分隔符的位置。\n\n" X,
    "Please accurately translate the following text into " T
    ".\nYou must retain the exact same number of delimiters in the translation. Strictly do "
    "not omit, escape, or translate these symbols, and pay close attention to their "
    "placement.\n\n" X};
static const char *const MT2_DATA[2] = {
    "# 任务目标\n将下方" X "中的" F "格式数据翻译为" T "。\n\n# 严格约束\n1. **结构锁定**："
    "绝对保持原有的" F "数据结构、缩进和层级完全不变。\n2. **选择性翻译**：仅翻译面向用户展示的"
    "可见文本内容。\n3. **禁止修改**：**严禁**翻译或更改任何代码标签、键名 (Key)、变量占位符"
    "（如 `{{var}}`、`${var}`、`%s`、`%d` 等）或代码属性。\n\n# 数据输入\n" X,
    "### Task\nTranslate the user-facing text within the following " F " data into " T
    ".\n\n### Strict Rules\n1. **Structure Preservation:** You MUST preserve the original " F
    " data structure, nesting, hierarchy, and indentation exactly as they are.\n2. **Selective "
    "Translation:** Translate ONLY the visible, user-facing text content/values.\n3. **Strict "
    "Non-Translation:** NEVER translate or alter code tags, keys, properties, object names, or "
    "variable placeholders. Leave them exactly in their original English/code form.\n\n### "
    "Source Data\n" X};

/* Appends n bytes to buf (cap) at *at, writing only what fits; *at counts all. */
static void put(char *buf, size_t cap, size_t *at, const char *s, size_t n)
{
    if (n && *at <= cap && n <= cap - *at) /* n 0: buf may be NULL */
        memcpy(buf + *at, s, n);
    *at += n;
}

static void puts0(char *buf, size_t cap, size_t *at, const char *s)
{
    put(buf, cap, at, s, strlen(s));
}

/* What fills a template's placeholders. */
struct fill {
    const char *tgt, *text, *format, *style, *ctx;
    size_t text_len, ctx_len;
    const struct hy_glossary_term *terms;
    size_t n_terms;
    const char *term_sep;
    const char *const *prefs;
    size_t n_prefs;
    const char *pref_sep;
};

static void expand_one(char c, const struct fill *f, char *buf, size_t cap, size_t *at)
{
    char num[24];
    switch (c) {
    case PH_T: puts0(buf, cap, at, f->tgt); break;
    case PH_X: put(buf, cap, at, f->text, f->text_len); break;
    case PH_F: puts0(buf, cap, at, f->format); break;
    case PH_S: puts0(buf, cap, at, f->style); break;
    case PH_B: put(buf, cap, at, f->ctx, f->ctx_len); break;
    case PH_L:
        for (size_t i = 0; i < f->n_terms; i++) {
            put(buf, cap, at, f->terms[i].src, f->terms[i].src_len);
            puts0(buf, cap, at, f->term_sep);
            put(buf, cap, at, f->terms[i].tgt, f->terms[i].tgt_len);
            puts0(buf, cap, at, "\n");
        }
        break;
    case PH_P:
        for (size_t i = 0; i < f->n_prefs; i++) {
            snprintf(num, sizeof num, "%zu", i + 1);
            puts0(buf, cap, at, num);
            puts0(buf, cap, at, f->pref_sep);
            puts0(buf, cap, at, f->prefs[i]);
            puts0(buf, cap, at, "\n");
        }
        break;
    case PH_N:
        snprintf(num, sizeof num, "%zu", f->n_prefs + 1);
        puts0(buf, cap, at, num);
        break;
    default: HY_ASSERT(!"unknown placeholder");
    }
}

/* The template with its placeholders filled in, appended at *at. */
static void expand(const char *tpl, const struct fill *f, char *buf, size_t cap, size_t *at)
{
    while (*tpl) {
        size_t run = 0;
        while (tpl[run] && (unsigned char)tpl[run] > PH_N)
            run++;
        put(buf, cap, at, tpl, run);
        tpl += run;
        if (*tpl)
            expand_one(*tpl++, f, buf, cap, at);
    }
}

bool hy_prompt_ext_supported(enum hy_prompt_gen gen)
{
    return gen == HY_PROMPT_GEN_MT15 || gen == HY_PROMPT_GEN_MT2;
}

bool hy_prompt_ext_has_formatted(enum hy_prompt_gen gen)
{
    return gen == HY_PROMPT_GEN_MT15;
}

bool hy_prompt_instr_any(const struct hy_prompt_instr *in)
{
    return in && (in->style || in->n_prefs || in->delimiters || in->data_format);
}

/* One instruction string: present, bounded, UTF-8 without control characters. */
static hy_status check_str(const char *what, const char *s, struct hy_err *err)
{
    size_t n = strlen(s);
    if (n == 0 || n > HY_PROMPT_INSTR_MAX_BYTES)
        return hy_err_set(err, HY_E_INVAL, "%s: %zu bytes, must be 1..%d", what, n,
                          HY_PROMPT_INSTR_MAX_BYTES);
    if (hy_utf8_validate(s, n) < n)
        return hy_err_set(err, HY_E_INVAL, "%s: not valid UTF-8", what);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return hy_err_set(err, HY_E_INVAL, "%s: control character (byte %zu): one line "
                              "of text expected", what, i);
    return HY_OK;
}

hy_status hy_prompt_instr_check(enum hy_prompt_gen gen, const struct hy_prompt_instr *in,
                                struct hy_err *err)
{
    if (!hy_prompt_instr_any(in))
        return HY_OK;
    if (gen != HY_PROMPT_GEN_MT2)
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "style, preferences, delimiters and structured data need a Hy-MT2 "
                          "model; this one takes %s prompts, which have no such form",
                          hy_prompt_gen_title(gen));
    int asked = (in->style != NULL) + (in->n_prefs > 0) + in->delimiters +
                (in->data_format != NULL);
    if (asked > 1)
        return hy_err_set(err, HY_E_INVAL, "one of style, preferences, delimiters and data "
                          "format per request: Hy-MT2 publishes no combined prompt");
    if (in->n_prefs > HY_PROMPT_MAX_PREFS)
        return hy_err_set(err, HY_E_INVAL, "preferences: %zu, at most %d", in->n_prefs,
                          HY_PROMPT_MAX_PREFS);
    hy_status st = in->style ? check_str("style", in->style, err)
                   : in->data_format ? check_str("data format", in->data_format, err)
                                     : HY_OK;
    for (size_t i = 0; !st && i < in->n_prefs; i++)
        st = check_str("preference", in->prefs[i] ? in->prefs[i] : "", err);
    return st;
}

static size_t n_asked(const struct hy_prompt_ext *x)
{
    return (x->n_terms > 0) + (x->context_len > 0 && !x->n_terms) + x->formatted +
           hy_prompt_instr_any(x->instr);
}

/* The template x asks for in generation gen (zh: its Chinese form), or an error. */
static hy_status pick(enum hy_prompt_gen gen, const struct hy_prompt_ext *x, bool zh,
                      const char **tpl, struct hy_err *err)
{
    if (n_asked(x) > 1)
        return hy_err_set(err, HY_E_INVAL, "one instruction per prompt: glossary terms, "
                          "context, formatted text and Hy-MT2's style, preferences, "
                          "delimiters or data format cannot be combined (terms with "
                          "context: the terms are used)");
    if (hy_prompt_instr_any(x->instr)) {
        hy_status st = hy_prompt_instr_check(gen, x->instr, err);
        const struct hy_prompt_instr *in = x->instr;
        *tpl = in->style ? MT2_STYLE[!zh] : in->n_prefs ? MT2_PREFS[!zh]
               : in->delimiters ? MT2_DELIMITERS[!zh] : MT2_DATA[!zh];
        return st;
    }
    if (!hy_prompt_ext_supported(gen))
        return hy_err_set(err, HY_E_UNSUPPORTED,
                          "glossaries, context and formatted text need a HY-MT1.5 or Hy-MT2 "
                          "model; this one takes %s prompts, which have no such form",
                          hy_prompt_gen_title(gen));
    if (gen == HY_PROMPT_GEN_MT15) {
        *tpl = x->formatted ? MT15_FORMATTED : x->n_terms ? MT15_TERMS : MT15_CONTEXT;
        return HY_OK;
    }
    if (x->formatted)
        return hy_err_set(err, HY_E_UNSUPPORTED, "the formatted-text (<sn> tag) prompt is "
                          "HY-MT1.5's; Hy-MT2 publishes none (its delimiters or structured "
                          "data prompts are the nearest)");
    *tpl = x->n_terms ? MT2_TERMS[!zh] : MT2_BACKGROUND[!zh];
    return HY_OK;
}

static bool wants_ext(const struct hy_prompt_ext *x)
{
    return x && n_asked(x) > 0;
}

hy_status hy_prompt_ext_user(enum hy_prompt_gen gen, const struct hy_lang *src,
                             const struct hy_lang *tgt, const struct hy_prompt_ext *x,
                             const char *text, size_t len, char *buf, size_t cap, size_t *n_out,
                             struct hy_err *err)
{
    if (!wants_ext(x))
        return hy_prompt_user(gen, src, tgt, text, len, buf, cap, n_out, err);
    *n_out = 0;
    /* HY-MT1.5's templates are Chinese only; Hy-MT2's follow the pair like the plain one */
    bool zh = gen == HY_PROMPT_GEN_MT15 || hy_prompt_is_chinese(src, tgt);
    const char *tpl = NULL;
    hy_status st = pick(gen, x, zh, &tpl, err);
    if (st)
        return st;
    const struct hy_prompt_instr none = {0}, *in = x->instr ? x->instr : &none;
    struct fill f = {zh ? tgt->name_zh : tgt->name_en,
                     text,
                     in->data_format,
                     in->style,
                     x->context,
                     len,
                     x->context_len,
                     x->terms,
                     x->n_terms,
                     MT2_TERM_SEP[!zh],
                     in->prefs,
                     in->n_prefs,
                     MT2_PREF_SEP[!zh]};
    size_t at = 0;
    expand(tpl, &f, buf, cap, &at);
    *n_out = at;
    if (at > cap)
        return hy_err_set(err, HY_E_NOSPACE, "prompt: %zu bytes, room for %zu", at, cap);
    return HY_OK;
}

hy_status hy_prompt_ext_translate(const struct hy_tok *tok, const struct hy_prompt_kind *kind,
                                  const struct hy_lang *src, const struct hy_lang *tgt,
                                  const struct hy_prompt_ext *x, const char *text, size_t len,
                                  int32_t *ids, size_t cap, size_t *n_out, struct hy_err *err)
{
    size_t need = 0;
    *n_out = 0;
    hy_status st = hy_prompt_check_langs(kind->gen, src, tgt, err);
    if (!st)
        st = hy_prompt_ext_user(kind->gen, src, tgt, x, text, len, NULL, 0, &need, err);
    if (st && st != HY_E_NOSPACE)
        return st;
    char *user = malloc(need ? need : 1);
    if (!user)
        return hy_err_set(err, HY_E_NOMEM, "prompt: %zu bytes for the user message", need);
    hy_prompt_ext_user(kind->gen, src, tgt, x, text, len, user, need, &need, NULL);
    struct hy_prompt_msg m = {HY_PROMPT_USER, user, need};
    st = hy_prompt_chat(tok, kind->chat, &m, 1, true, ids, cap, n_out, err);
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
