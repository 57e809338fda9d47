/* prompt_ext.h: HY-MT1.5's terminology, context and formatted-text prompts (model doc 5.4,
 * checked against Tencent-Hunyuan/HY-MT README.md and README_CN.md, the same bytes):
 *   terminology: "参考下面的翻译：\n" + one "{source_term} 翻译成 {target_term}\n" per term +
 *                "\n将以下文本翻译为{target_language}，注意只需要输出翻译后的结果，不要额外解释：\n"
 *                + {source_text}
 *   context:     {context} + "\n参考上面的信息，把下面的文本翻译成{target_language}，注意不需要
 *                翻译上文，也不要额外解释：\n" + {source_text}
 *   formatted:   "将以下<source></source>之间的文本翻译为{target_language}，注意只需要输出翻译后
 *                的结果，不要额外解释，原文中的<sn></sn>标签表示标签内文本包含格式信息，需要在译文
 *                中相应的位置尽量保留该标签。输出格式为：<target>str</target>\n\n<source>" +
 *                {src_text_with_format} + "</source>"
 * Choices where the sources leave it open (each stated in ARCHITECTURE.md too):
 * - The README prints one term line; several terms are one line each, in the order given.
 * - The README's context block ends with an empty line; no newline is added after the
 *   text, as in every other template (and in the report's Table 3).
 * - The formatted template names the target as the literal 中文 (the README's example
 *   translates into Chinese); for another target its Chinese name takes that place, so
 *   the prompt is the README's byte for byte when the target is zh.
 * - The templates are published in Chinese only: they are used for every pair, with the
 *   target's Chinese name (model doc 5.5), like the ZH<=>XX prompt.
 * - One template per prompt: terms, context and formatting are not combined (no combined
 *   form is published). hy_prompt_ext_user takes terms over context; formatted with
 *   either is HY_E_INVAL.
 * - Only the dense style (HY-MT1.5-1.8B) gets them. The 7b style is Hunyuan-MT-7B's
 *   tokenizer, whose prompts (model doc 5.4) have no such forms: HY_E_UNSUPPORTED, and
 *   the callers refuse the request (hymt translate exits with the message) rather than
 *   translate without the terms the user asked for.
 * Pure functions over an immutable tokenizer: thread-safe. Errors as prompt.h. */
#ifndef HY_TRANSLATE_PROMPT_EXT_H
#define HY_TRANSLATE_PROMPT_EXT_H

#include "translate/glossary.h"
#include "translate/prompt.h"

#include <stdbool.h>

struct hy_prompt_ext {
    const struct hy_glossary_term *terms; /* n_terms > 0: the terminology template */
    size_t n_terms;
    const char *context; /* context_len > 0 (and no terms): the context template */
    size_t context_len;
    bool formatted;      /* the formatted-text template (text holds <sN>...</sN> tags) */
};

/* Whether the style has these prompts (dense only, see above). */
bool hy_prompt_ext_supported(enum hy_prompt_style style);

/* The user message for text[0..len) into tgt with the extras x (NULL or nothing set: the
 * plain prompt of prompt.h). Buffer rules as hy_prompt_user. HY_E_UNSUPPORTED when x asks
 * for a template the style lacks; HY_E_INVAL for formatted with terms or context. */
hy_status hy_prompt_ext_user(enum hy_prompt_style style, const struct hy_lang *src,
                             const struct hy_lang *tgt, const struct hy_prompt_ext *x,
                             const char *text, size_t len, char *buf, size_t cap, size_t *n_out,
                             struct hy_err *err);

/* One user turn as ids, ready to generate from (as hy_prompt_translate). */
hy_status hy_prompt_ext_translate(const struct hy_tok *tok, enum hy_prompt_style style,
                                  const struct hy_lang *src, const struct hy_lang *tgt,
                                  const struct hy_prompt_ext *x, const char *text, size_t len,
                                  int32_t *ids, size_t cap, size_t *n_out, struct hy_err *err);

/* The answer to a formatted prompt without its <target>...</target> wrapper: *off and
 * *n delimit the text between the first <target> and the last </target> (a missing closing
 * tag: to the end; no opening tag: the whole reply). */
void hy_prompt_ext_unwrap(const char *reply, size_t len, size_t *off, size_t *n);

#endif
