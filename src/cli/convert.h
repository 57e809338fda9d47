/* convert.h: internals of `hymt convert` (cmd_convert.c: the command, tensor types and data;
 * convert_meta.c: the GGUF metadata). A checkpoint folder becomes one GGUF file laid out as
 * llama.cpp's convert_hf_to_gguf.py (+ llama-quantize for the 4-bit types) writes it.
 * Errors name the file or tensor; nothing here exits. */
#ifndef HY_CLI_CONVERT_H
#define HY_CLI_CONVERT_H

#include "formats/config.h"
#include "formats/gguf.h"

#include <jansson.h>

struct hy_tok;

enum hy_convert_type {
    HY_CONVERT_F32,
    HY_CONVERT_F16,
    HY_CONVERT_BF16,
    HY_CONVERT_Q8_0,
    HY_CONVERT_Q4_0,
    HY_CONVERT_Q4_K_M,
};

/* What the metadata is made from (all borrowed). */
struct hy_convert_src {
    const struct hy_config *cfg;
    const json_t *tok_json;   /* tokenizer.json */
    const json_t *tok_config; /* tokenizer_config.json, or NULL */
    const json_t *gen_config; /* generation_config.json, or NULL */
    const char *chat_template; /* or NULL */
};

/* llama.cpp's general.file_type (LlamaFileType) of a conversion type. */
uint32_t hy_convert_file_type(enum hy_convert_type t);
/* general.* and hunyuan-dense.* keys (plus hymt.rope.freq_base, the base as f64). */
hy_status hy_convert_model_meta(struct hy_gguf_w *w, const struct hy_config *c, const char *name,
                                enum hy_convert_type type, struct hy_err *err);
/* tokenizer.ggml.* keys and tokenizer.chat_template; tok is the loaded tokenizer.json (for
 * added-token ids). HY_E_UNSUPPORTED when the tokenizer's pipeline has no GGUF name. */
hy_status hy_convert_tokenizer_meta(struct hy_gguf_w *w, const struct hy_convert_src *src,
                                    const struct hy_tok *tok, struct hy_err *err);

/* convert_hyv3.c: a hy_v3 checkpoint (src->cfg, tensors of st by model/hy_v3.h's names) as
 * llama.cpp's "hy_v3" GGUF at path; *n_tensors: how many the file holds. The 4-bit types
 * are HY_E_UNSUPPORTED for hy_v3. */
struct hy_st;
hy_status hy_convert_hyv3(const char *path, const char *name, const struct hy_st *st,
                          const struct hy_convert_src *src, const struct hy_tok *tok,
                          enum hy_convert_type type, int *n_tensors, struct hy_err *err);

#endif
