/* make_hyv3.h: the hy_v3 presets of `hymt make-test-model` (tiny-hyv3, 30b-a3b): a
 * HYV3ForCausalLM checkpoint in the released layout (model/hy_v3.h has the tensor names)
 * with deterministic random weights. */
#ifndef HY_CLI_MAKE_HYV3_H
#define HY_CLI_MAKE_HYV3_H

#include "core/dtype.h"

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

#endif
