/* prompt_ext.h: the instruction prompts beyond the plain one, per generation.
 * HY-MT1.5 (model doc 5.4, checked against Tencent-Hunyuan/HY-MT README.md and README_CN.md,
 * the same bytes), Chinese only, with the target's Chinese name for every pair:
 *   terminology: "参考下面的翻译：\n" + one "{source_term} 翻译成 {target_term}\n" per term +
 *                "\n将以下文本翻译为{target_language}，注意只需要输出翻译后的结果，不要额外解释：\n"
 *                + {source_text}
 *   context:     {context} + "\n参考上面的信息，把下面的文本翻译成{target_language}，注意不需要
 *                翻译上文，也不要额外解释：\n" + {source_text}
 *   formatted:   "将以下<source></source>之间的文本翻译为{target_language}，注意只需要输出翻译后
 *                的结果，不要额外解释，原文中的<sn></sn>标签表示标签内文本包含格式信息，需要在译文
 *                中相应的位置尽量保留该标签。输出格式为：<target>str</target>\n\n<source>" +
 *                {src_text_with_format} + "</source>"
 * Hy-MT2 (Hy-MT2 doc 5.1, Tencent-Hunyuan/Hy-MT2 README.md's table, README_CN the same):
 * terminology, background context (the context field), style, personalization,
 * delimiters and structured data, each in Chinese (Chinese names) for a pair with a
 * Chinese side and in English (English names) otherwise, as the README's note says;
 * the texts are in prompt_ext.c. No formatted-text prompt is published for Hy-MT2.
 * Choices where the sources leave it open (each stated in ARCHITECTURE.md too):
 * - The READMEs print a fixed number of term lines (one; Hy-MT2 three) and of preferences
 *   (two, then "3、……"); here one line per term, and preferences numbered 1..k with the
 *   translation task as item k+1.
 * - The README's context block ends with an empty line; no newline is added after the
 *   text, as in every other template (and in the report's Table 3).
 * - The HY-MT1.5 formatted template names the target as the literal 中文 (the README's
 *   example translates into Chinese); for another target its Chinese name takes that place.
 * - Hy-MT2's table is Markdown: the spaces around the code-span placeholders and the bold
 *   and italic marks are not prompt text (the report's Table 1 prints the default and
 *   terminology prompts without them), except in Structured Data, whose **bold** labels
 *   the report prints as text. Its Chinese form names {source_text} twice (in the first
 *   sentence and under "# 数据输入"): kept as published.
 * - One template per prompt: no combined form is published. Terms take over context
 *   (hy_prompt_ext_user); any other two together is HY_E_INVAL.
 * - A generation without a template refuses it with HY_E_UNSUPPORTED naming the one that
 *   has it; callers refuse the request (hymt translate exits with the message) rather than
 *   translate without what the user asked for.
 * Pure functions over an immutable tokenizer: thread-safe. Errors as prompt.h. */
#ifndef HY_TRANSLATE_PROMPT_EXT_H
#define HY_TRANSLATE_PROMPT_EXT_H

#include "translate/glossary.h"
#include "translate/prompt.h"

#include <stdbool.h>

#define HY_PROMPT_MAX_PREFS 16      /* personalization preferences in one prompt */
#define HY_PROMPT_INSTR_MAX_BYTES 1024 /* one style, preference or data format */

/* Hy-MT2's instructions that have no HY-MT1.5 form. Strings are UTF-8, NUL-terminated,
 * borrowed; NULL / 0 / false: not asked. */
struct hy_prompt_instr {
    const char *style;        /* Style: {target_style}, "formal", "口语化" */
    const char *const *prefs; /* Personalization: {user_preferences}, n_prefs of them */
    size_t n_prefs;
    bool delimiters;          /* Delimiters: keep the text's delimiters as they are */
    const char *data_format;  /* Structured Data: {format_type}, "JSON", "XML", "YAML" */
};

struct hy_prompt_ext {
    const struct hy_glossary_term *terms; /* n_terms > 0: the terminology template */
    size_t n_terms;
    const char *context; /* context_len > 0 (and no terms): the context template (Hy-MT2:
                          * background information) */
    size_t context_len;
    bool formatted;      /* the formatted-text template (text holds <sN>...</sN> tags) */
    const struct hy_prompt_instr *instr; /* NULL: none */
};

/* Whether the generation has the terminology and context prompts (mt1.5, mt2), and the
 * formatted-text (<sN> tags) prompt (mt1.5 only). */
bool hy_prompt_ext_supported(enum hy_prompt_gen gen);
bool hy_prompt_ext_has_formatted(enum hy_prompt_gen gen);

/* Whether instr asks for anything. */
bool hy_prompt_instr_any(const struct hy_prompt_instr *instr);

/* Checks instr before any text is built: HY_E_UNSUPPORTED when gen has no such prompts
 * (not Hy-MT2), HY_E_INVAL naming the field for more than one instruction, more than
 * HY_PROMPT_MAX_PREFS preferences, an empty one or one over HY_PROMPT_INSTR_MAX_BYTES, or
 * one that is not UTF-8 or holds a control character (a line break would forge the
 * numbered list). NULL or nothing asked is fine. */
hy_status hy_prompt_instr_check(enum hy_prompt_gen gen, const struct hy_prompt_instr *instr,
                                struct hy_err *err);

/* The user message for text[0..len) into tgt with the extras x (NULL or nothing set: the
 * plain prompt of prompt.h). Buffer rules as hy_prompt_user. HY_E_UNSUPPORTED when x asks
 * for a template the generation lacks; HY_E_INVAL for two that cannot go together or a
 * bad instruction (hy_prompt_instr_check). */
hy_status hy_prompt_ext_user(enum hy_prompt_gen gen, const struct hy_lang *src,
                             const struct hy_lang *tgt, const struct hy_prompt_ext *x,
                             const char *text, size_t len, char *buf, size_t cap, size_t *n_out,
                             struct hy_err *err);

/* One user turn as ids, ready to generate from (as hy_prompt_translate). */
hy_status hy_prompt_ext_translate(const struct hy_tok *tok, const struct hy_prompt_kind *kind,
                                  const struct hy_lang *src, const struct hy_lang *tgt,
                                  const struct hy_prompt_ext *x, const char *text, size_t len,
                                  int32_t *ids, size_t cap, size_t *n_out, struct hy_err *err);

/* The answer to a formatted prompt without its <target>...</target> wrapper: *off and
 * *n delimit the text between the first <target> and the last </target> (a missing closing
 * tag: to the end; no opening tag: the whole reply). */
void hy_prompt_ext_unwrap(const char *reply, size_t len, size_t *off, size_t *n);

#endif
