/* prompt_detect.h: which prompts a checkpoint takes (its chat format and generation,
 * prompt.h) and its sampling defaults, from what the checkpoint says.
 * The chat format comes from the tokenizer's special tokens (hy_prompt_style_detect). The
 * generation cannot: Hy-MT2-7B ships Hunyuan-MT-7B's tokenizer and Hy-MT2-1.8B
 * HY-MT1.5-1.8B's, with the same chat templates (Tencent's hy_dense_template.py) and the
 * same sampling settings. So the first of these decides:
 *   1. forced: --prompt-style (HYMT_PROMPT_STYLE for serve) naming a generation;
 *   2. a name: the repo id or file/folder name the model was given by, a hub cache
 *      folder models--ORG--NAME in its path, config.json's _name_or_path, or the GGUF's
 *      general.name / general.basename / general.source.huggingface.repository; folded
 *      (lower case, only letters, digits and '.'), one holding "hymt2" is mt2, "hymt1.5"
 *      or "hymt15" mt1.5, "hunyuanmt" or "hymt1.0" mt1 (Chimera included);
 *   3. the architecture: hy_v3 (config.json model_type, GGUF general.architecture) is
 *      Hy-MT2-30B-A3B's, so mt2;
 *   4. the chat format alone (hy_prompt_gen_of_style): 7b mt1, dense mt1.5, hyv3 mt2:
 *      what hymt assumed before generations were told apart.
 * Only the last component of a path counts as a name (besides models--ORG--NAME), so a
 * folder above the checkpoint never decides. A name of another generation (Hy-MT3) is not
 * guessed at: it falls through, and why says so.
 * Sampling defaults: the model card's (Hy-MT2 README: 30B-A3B temperature 0.7, top_p 1,
 * top_k and repetition penalty off; every other model 0.7, 0.6, 20, 1.05), then the
 * values generation_config.json sets (do_sample false: greedy; top_k <= 0: off).
 * Reads config.json and generation_config.json (at most 1 MiB each) or the GGUF header.
 * Errors: HY_E_INVAL naming the value for an unknown forced generation or a sampling value
 * out of range in generation_config.json; the tokenizer's HY_E_NOTFOUND; a config file
 * that exists but is not JSON. */
#ifndef HY_TRANSLATE_PROMPT_DETECT_H
#define HY_TRANSLATE_PROMPT_DETECT_H

#include "engine/sampler.h"
#include "translate/prompt.h"

#define HY_PROMPT_WHY_MAX 320

struct hy_prompt_source {
    const char *path;   /* the folder or GGUF file the loaders take; NULL: none */
    const char *name;   /* what the model was named by: a repo id or the path's last
                         * component; NULL: none */
    const char *forced; /* --prompt-style: a generation (hy_prompt_gen_parse), "auto" or NULL */
};

struct hy_prompt_profile {
    struct hy_prompt_kind kind;
    struct hy_sampler_params sampling; /* translation defaults (seed 0) */
    char why[HY_PROMPT_WHY_MAX];       /* what decided the generation, one line */
    char sampling_from[96];            /* where the sampling defaults come from */
};

hy_status hy_prompt_profile_detect(const struct hy_tok *tok, const struct hy_prompt_source *src,
                                   struct hy_prompt_profile *out, struct hy_err *err);

/* "mt2 (Hy-MT2), chat format dense: <why>", for logs and `hymt info`; NUL-terminated,
 * truncated to cap. */
void hy_prompt_profile_describe(const struct hy_prompt_profile *p, char *buf, size_t cap);

#endif
