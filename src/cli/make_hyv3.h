/* make_hyv3.h: the hy_v3 presets of `hymt make-test-model` (tiny-hyv3, 30b-a3b): a
 * HYV3ForCausalLM checkpoint in the released layout (model/hy_v3.h has the tensor names)
 * with deterministic random weights. */
#ifndef HY_CLI_MAKE_HYV3_H
#define HY_CLI_MAKE_HYV3_H

#include "cli/convert.h"
#include "core/dtype.h"
#include "formats/safetensors.h"

#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>

struct hy_hyv3_shape {
    int64_t layers, hidden, heads, kv, hd, ffn, vocab;
    int64_t experts, topk, moe_ffn, shared, dense_layers;
    int64_t shard; /* bytes a shard, 0: one file */
};

/* Fills *s with preset `name`'s shapes; false when it is not a hy_v3 preset. */
bool hy_hyv3_preset(struct hy_hyv3_shape *s, const char *name);
/* Writes the checkpoint into dir (or with dry_run prints its tensor count, parameters and
 * bytes). transformers_form: config.json as transformers >= 5.6 writes it (mlp_layer_types,
 * rope_parameters) instead of the released form; fp8: the projections as make_fp8.h writes
 * them. Returns the exit code (0, or 1 with the error printed). */
int hy_hyv3_make(const struct hy_hyv3_shape *s, const char *dir, uint64_t seed,
                 enum hy_dtype dtype, bool transformers_form, bool fp8, bool dry_run);

/* The checkpoint's tensors as the writer lists them (names, shapes, dtype; the selection
 * bias F32): *t and *names malloc'ed (the caller frees both), *n entries. False when out of
 * memory. */
bool hy_hyv3_list(const struct hy_hyv3_shape *s, enum hy_dtype dtype, struct hy_st_wtensor **t,
                  char (**names)[HY_ST_MAX_NAME], size_t *n);
/* config.json and generation_config.json as the writer makes them (new references, NULL
 * when out of memory). */
json_t *hy_hyv3_config(const struct hy_hyv3_shape *s, enum hy_dtype dt, bool transformers_form,
                       bool fp8);
json_t *hy_hyv3_gen_config(const struct hy_hyv3_shape *s);

/* make_gguf.c: the same model written directly as one GGUF file at path, laid out as `hymt
 * convert --type TYPE` writes it from the checkpoint above (the same tensor bytes: values
 * rounded to dtype first, then converted), tokenizer keys from tok_dir's files (NULL: none).
 * Streams tensor by tensor through convert_write.c (threads over rows, 64 MiB chunks);
 * written to PATH.tmp-PID and renamed at the end, removed on any error. Returns the exit
 * code (0, or 1 with a one-line error printed). */
int hy_hyv3_make_gguf(const struct hy_hyv3_shape *s, const char *path, uint64_t seed,
                      enum hy_dtype dtype, enum hy_convert_type type, const char *tok_dir);

#endif
