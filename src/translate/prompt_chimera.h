/* prompt_chimera.h: Hunyuan-MT-Chimera-7B's fusion prompt (model doc 5.4, from the MT
 * technical report's Table 3 and the Hunyuan-MT README): the source segment and k
 * candidate translations in, one refined translation out:
 *   "Analyze the following multiple {tgt} translations of the {src} segment surrounded in
 *   triple backticks and generate a single refined {tgt} translation. Only output the
 *   refined translation, do not explain.\n\nThe {src} segment:\n```{source}```\n\n
 *   The multiple {tgt} translations:\n1. ```{t1}```\n2. ```{t2}```\n...k. ```{tk}```"
 * Language names are the English ones (the template is English). Choices where the
 * sources differ or say nothing (also in ARCHITECTURE.md):
 * - The English README puts backticks around {tgt} in the "The multiple ... translations"
 *   line; README_CN and the report do not: the report's form is used (the model doc says
 *   so).
 * - The template has six numbered slots; with k < 6 candidates only k are written,
 *   numbered 1..k, nothing after the last one. The report trains Chimera to fuse "up to
 *   six" candidates; an empty slot would read as an empty candidate, and repeating
 *   candidates to fill the slots would weigh the repeated ones more in the fusion.
 * - The candidates go in as the model wrote them, trimmed of surrounding whitespace; a
 *   candidate holding ``` is not escaped (the template has no escape).
 * Pure functions over an immutable tokenizer: thread-safe. Errors as prompt.h; HY_E_INVAL
 * for k outside 1..HY_CHIMERA_MAX_CANDIDATES or a missing language. */
#ifndef HY_TRANSLATE_PROMPT_CHIMERA_H
#define HY_TRANSLATE_PROMPT_CHIMERA_H

#include "translate/prompt.h"

#define HY_CHIMERA_MAX_CANDIDATES 6 /* the template's slots */

/* One candidate translation (UTF-8, borrowed). */
struct hy_chimera_cand {
    const char *text;
    size_t len;
};

/* The user message fusing cands[0..k) of text[0..len) from src into tgt. Buffer rules as
 * hy_prompt_user (written to buf, cap bytes, not NUL-terminated; *n_out the size written
 * or needed on HY_E_NOSPACE). */
hy_status hy_prompt_chimera_user(const struct hy_lang *src, const struct hy_lang *tgt,
                                 const char *text, size_t len, const struct hy_chimera_cand *cands,
                                 int k, char *buf, size_t cap, size_t *n_out, struct hy_err *err);

/* The same as one user turn in the chat template of style (prompt.h), ready to generate
 * from. HY_E_NOMEM if the message cannot be allocated. */
hy_status hy_prompt_chimera(const struct hy_tok *tok, enum hy_prompt_style style,
                            const struct hy_lang *src, const struct hy_lang *tgt, const char *text,
                            size_t len, const struct hy_chimera_cand *cands, int k, int32_t *ids,
                            size_t cap, size_t *n_out, struct hy_err *err);

#endif
