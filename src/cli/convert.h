/* convert.h: internals of `hymt convert` (cmd_convert.c: the command, tensor types and data;
 * convert_meta.c: the GGUF metadata). A checkpoint folder becomes one GGUF file laid out as
 * llama.cpp's convert_hf_to_gguf.py (+ llama-quantize for the 4-bit types) writes it.
 * Errors name the file or tensor; nothing here exits. */
#ifndef HY_CLI_CONVERT_H
#define HY_CLI_CONVERT_H

#include "cli/make_weights.h"
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
    HY_CONVERT_Q6_K,
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

/* convert_type.c: the ggml type a tensor gets, the one place that decides it for `hymt
 * convert` (dense and hy_v3) and `hymt make-test-model --gguf`, after llama.cpp
 * (convert_hf_to_gguf --outtype, then llama-quantize's llama_tensor_get_type for q4_0,
 * q4_k_m, q6_k). name is the GGUF name ("output.weight", "blk.N.attn_v.weight", ...), ne0
 * its in-features, n_layers the model's, tied: token_embd is also the head. */
uint32_t hy_convert_tensor_type(enum hy_convert_type ty, const char *name, int n_dims,
                                uint64_t ne0, int n_layers, bool tied);

/* The --type names: f32 f16 bf16 q8_0 q4_0 q4_k_m q6_k (HY_CONVERT_TYPE_NAMES); parse is
 * false for any other. */
#define HY_CONVERT_TYPE_NAMES "bf16, f16, f32, q8_0, q4_0, q4_k_m or q6_k"
bool hy_convert_type_parse(const char *name, enum hy_convert_type *out);
const char *hy_convert_type_name(enum hy_convert_type t);

/* One source matrix of a GGUF tensor: rows x cols values, either stored (data in dtype, a
 * checkpoint's tensor) or made by make_weights.h's generator (data NULL) and rounded to
 * dtype first, so a generated tensor equals that checkpoint tensor written then read. */
struct hy_convert_part {
    enum hy_dtype dtype;
    int n_dims;         /* 1 or 2 */
    int64_t rows, cols; /* rows 1 for a 1-D tensor */
    const void *data;
    struct cli_mk_gen gen; /* when data is NULL */
};

/* A GGUF tensor: n_parts parts stacked in order (the experts of a layer: ne[2] = n_parts). */
struct hy_convert_item {
    char name[HY_GGUF_MAX_NAME];
    uint32_t type;
    int n_dims;
    uint64_t ne[3];
    const struct hy_convert_part *parts;
    int n_parts;
};

/* convert_write.c: declares the n items on w (metadata written already), then streams
 * their data: rows made or read and converted on a pool of every CPU, at most
 * HY_CONVERT_CHUNK bytes of output in memory, written in order. Progress on stderr
 * prefixed by `who`: a redrawn line on a terminal, else a line a layer. */
#define HY_CONVERT_CHUNK ((size_t)64 << 20)
hy_status hy_convert_write_items(struct hy_gguf_w *w, const struct hy_convert_item *it, int n,
                                 const char *who, struct hy_err *err);

/* The whole file: opens path, writes meta's keys (the model's), the tokenizer's when tok is
 * not NULL (src), then the items as hy_convert_write_items; on failure the file is left for
 * the caller to remove. */
typedef hy_status (*hy_convert_meta_fn)(struct hy_gguf_w *w, const struct hy_config *c,
                                        const char *name, enum hy_convert_type type,
                                        struct hy_err *err);
hy_status hy_convert_write_file(const char *path, hy_convert_meta_fn meta, const char *name,
                                const struct hy_convert_src *src, const struct hy_tok *tok,
                                enum hy_convert_type type, const struct hy_convert_item *it,
                                int n, const char *who, struct hy_err *err);

/* The source of the checkpoint tensor named hf: false when there is none (out untouched). */
typedef bool (*hy_convert_find_fn)(void *ctx, const char *hf, struct hy_convert_part *out);

/* convert_hyv3.c: a hy_v3 checkpoint (src->cfg; its tensors by model/hy_v3.h's names, found
 * by find) as llama.cpp's "hy_v3" GGUF at path, tokenizer keys when tok is not NULL;
 * *n_tensors: how many the file holds. `who` prefixes progress lines. */
hy_status hy_convert_hyv3_gguf(const char *path, const char *name, hy_convert_find_fn find,
                               void *find_ctx, const struct hy_convert_src *src,
                               const struct hy_tok *tok, enum hy_convert_type type,
                               const char *who, int *n_tensors, struct hy_err *err);
/* The same from an open safetensors checkpoint st (1-D or 2-D F32/F16/BF16 tensors). */
struct hy_st;
hy_status hy_convert_hyv3(const char *path, const char *name, const struct hy_st *st,
                          const struct hy_convert_src *src, const struct hy_tok *tok,
                          enum hy_convert_type type, int *n_tensors, struct hy_err *err);

/* The tokenizer part of a checkpoint folder, as convert embeds it: tokenizer.json (loaded
 * and as JSON), tokenizer_config.json, generation_config.json and the chat template
 * (tokenizer_config's, else chat_template.jinja); each absent file leaves its field NULL
 * (no tokenizer.json: tok NULL). */
struct hy_convert_toks {
    struct hy_tok *tok;
    json_t *tok_json, *tok_config, *gen_config;
    char *chat_template;
};
hy_status hy_convert_toks_open(struct hy_convert_toks *t, const char *dir, struct hy_err *err);
void hy_convert_toks_close(struct hy_convert_toks *t);

#endif
