/* prompt.h: translation prompts and chat templates as token ids (model doc 5.1-5.4,
 * Hy-MT2 doc 4.2-5.1). Two independent choices make a prompt (struct hy_prompt_kind):
 * - the chat format (enum hy_prompt_style), from the tokenizer's special tokens, never
 *   from the model size: "7b" (<|startoftext|>: Hunyuan-MT-7B, Chimera, HY-MT1.5-7B,
 *   Hy-MT2-7B), "dense" (<｜hy_User｜>: HY-MT1.5-1.8B, Hy-MT2-1.8B) or "hyv3"
 *   (<｜hy_eos｜>: Hy-MT2-30B-A3B);
 * - the generation (enum hy_prompt_gen), which words the instruction: "mt1"
 *   (Hunyuan-MT-7B, Chimera), "mt1.5" (HY-MT1.5), "mt2" (Hy-MT2). The tokenizer cannot
 *   tell them apart (Hy-MT2-7B has Hunyuan-MT-7B's): prompt_detect.h decides.
 * Text pieces are encoded with special tokens disallowed, so user text can never inject a
 * control token; control tokens are looked up by their strings. The ids equal
 * transformers' apply_chat_template, which splits the rendered text at the control tokens
 * first. Pure functions over an immutable tokenizer: thread-safe. hy_prompt_translate
 * allocates one temporary copy of the user message; nothing else allocates. Errors:
 * HY_E_NOTFOUND naming a missing control token, HY_E_NOSPACE with the size needed in
 * *n_out, HY_E_INVAL for a language the generation does not translate. */
#ifndef HY_TRANSLATE_PROMPT_H
#define HY_TRANSLATE_PROMPT_H

#include "core/status.h"
#include "tokenizer/tokenizer.h"
#include "translate/lang.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hy_prompt_style {
    HY_PROMPT_7B,    /* <|startoftext|> user <|extra_0|> ... */
    HY_PROMPT_DENSE, /* <｜hy_begin▁of▁sentence｜><｜hy_User｜> user <｜hy_Assistant｜> */
    HY_PROMPT_HYV3,  /* as dense, but no system tag and <｜hy_eos｜> ends a reply */
    HY_PROMPT_STYLE_COUNT
};

/* The model generation: which instruction wording (and which extra prompt types) the
 * model was trained on. */
enum hy_prompt_gen {
    HY_PROMPT_GEN_MT1,  /* Hunyuan-MT-7B, Hunyuan-MT-Chimera-7B: plain prompts only */
    HY_PROMPT_GEN_MT15, /* HY-MT1.5: + terminology, context, formatted text (Chinese) */
    HY_PROMPT_GEN_MT2,  /* Hy-MT2: new English default, + terminology, style,
                         * personalization, delimiters, structured data, background */
    HY_PROMPT_GEN_COUNT
};

struct hy_prompt_kind {
    enum hy_prompt_style chat; /* chat template and stop tokens */
    enum hy_prompt_gen gen;    /* instruction wording */
};

enum hy_prompt_role { HY_PROMPT_SYSTEM, HY_PROMPT_USER, HY_PROMPT_ASSISTANT };

struct hy_prompt_msg {
    enum hy_prompt_role role;
    const char *text; /* UTF-8, len bytes, borrowed */
    size_t len;
};

#define HY_PROMPT_MAX_STOP 4 /* stop ids per style, at most */

/* "7b", "dense" or "hyv3". */
const char *hy_prompt_style_name(enum hy_prompt_style style);

/* "mt1", "mt1.5" or "mt2"; hy_prompt_gen_title: "Hunyuan-MT", "HY-MT1.5", "Hy-MT2". */
const char *hy_prompt_gen_name(enum hy_prompt_gen gen);
const char *hy_prompt_gen_title(enum hy_prompt_gen gen);
/* A generation by name, case-insensitive: its name or title, or an alias (mt1.0,
 * hunyuan-mt, chimera, hy-mt1.5, mt15, hy-mt2). false when unknown. */
bool hy_prompt_gen_parse(const char *name, enum hy_prompt_gen *gen);

/* 7b when the tokenizer has <|startoftext|> and <|extra_0|>; else hyv3 when it has
 * <｜hy_eos｜> and <｜hy_User｜>; else dense when it has <｜hy_begin▁of▁sentence｜> and
 * <｜hy_User｜>; else HY_E_NOTFOUND naming what is missing. */
hy_status hy_prompt_style_detect(const struct hy_tok *tok, enum hy_prompt_style *style,
                                 struct hy_err *err);

/* Whether a pair uses the Chinese (ZH<=>XX) prompt: the source or the target is on the
 * Chinese side (zh, zh-Hant, yue). src NULL (unknown): the target decides. */
bool hy_prompt_is_chinese(const struct hy_lang *src, const struct hy_lang *tgt);

/* The generation that a chat format alone suggests, when nothing else says (7b: mt1,
 * dense: mt1.5, hyv3: mt2): what hymt did before generations were told apart. */
enum hy_prompt_gen hy_prompt_gen_of_style(enum hy_prompt_style style);

/* HY_E_INVAL unless the generation translates tgt and src (NULL: unknown, fine); the
 * message names the language and the generation. */
hy_status hy_prompt_check_langs(enum hy_prompt_gen gen, const struct hy_lang *src,
                                const struct hy_lang *tgt, struct hy_err *err);

/* The user message asking to translate text[0..len) into tgt: the generation's Chinese
 * prompt with tgt's Chinese name, or its English prompt with the English name. Written to
 * buf (cap bytes, not NUL-terminated); *n_out is the size written, or needed on
 * HY_E_NOSPACE. The languages are not checked here (hy_prompt_translate does). */
hy_status hy_prompt_user(enum hy_prompt_gen gen, const struct hy_lang *src,
                         const struct hy_lang *tgt, const char *text, size_t len, char *buf,
                         size_t cap, size_t *n_out, struct hy_err *err);

/* The conversation as the template's text, control tokens spelled out (for logs and
 * tests; the text is never tokenized as a whole). Buffer rules as hy_prompt_user. */
hy_status hy_prompt_render(enum hy_prompt_style style, const struct hy_prompt_msg *msgs,
                           size_t n_msgs, bool add_generation_prompt, char *buf, size_t cap,
                           size_t *n_out, struct hy_err *err);

/* The conversation as ids: BOS once at the start; 7b: [system <|extra_4|>] user
 * <|extra_0|>, assistant <|eos|>, <|startoftext|> before each later user turn;
 * dense: [system <｜hy_place▁holder▁no▁3｜>] <｜hy_User｜>user, <｜hy_Assistant｜>assistant
 * <｜hy_place▁holder▁no▁2｜>, then <｜hy_Assistant｜> when add_generation_prompt (7b needs
 * none: <|extra_0|> opens the reply); hyv3 (Tencent's hy_v3_template.py): [system] with
 * no tag, <｜hy_User｜>user, <｜hy_Assistant｜>assistant<｜hy_eos｜>, then <｜hy_Assistant｜>.
 * *n_out: ids written, or needed on HY_E_NOSPACE. */
hy_status hy_prompt_chat(const struct hy_tok *tok, enum hy_prompt_style style,
                         const struct hy_prompt_msg *msgs, size_t n_msgs,
                         bool add_generation_prompt, int32_t *ids, size_t cap, size_t *n_out,
                         struct hy_err *err);

/* One user turn translating text into tgt (src NULL when unknown), ready to generate
 * from: kind->gen's prompt in kind->chat's template. HY_E_NOMEM if the user message cannot
 * be allocated; HY_E_INVAL as hy_prompt_check_langs. */
hy_status hy_prompt_translate(const struct hy_tok *tok, const struct hy_prompt_kind *kind,
                              const struct hy_lang *src, const struct hy_lang *tgt,
                              const char *text, size_t len, int32_t *ids, size_t cap, size_t *n_out,
                              struct hy_err *err);

/* The ids that end a reply (model doc 5.3), those the tokenizer has, in this order:
 * 7b <|eos|>, <|endoftext|>, <|extra_5|>; dense <｜hy_place▁holder▁no▁2｜>,
 * <｜hy_end▁of▁sentence｜>; hyv3 <｜hy_eos｜>. Returns how many (<= HY_PROMPT_MAX_STOP, at most cap written). */
size_t hy_prompt_stop_ids(const struct hy_tok *tok, enum hy_prompt_style style, int32_t *ids,
                          size_t cap);

#endif
