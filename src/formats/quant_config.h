/* quant_config.h: the quantization description of a checkpoint folder, read from
 * config.json's "quantization_config" (or the older "compression_config") and the optional
 * hf_quant_config.json (model doc section 6).
 *
 * FP8 (AngelSlim / compressed-tensors, doc 6.1): quant_method "compressed-tensors", format
 * "naive-quantized" or "float-quantized" (or absent), config_groups.* with weights
 * {num_bits 8, type "float", strategy "tensor" or "channel"} and input_activations absent,
 * null, dynamic, or static per tensor ({num_bits 8, type "float", strategy "tensor",
 * dynamic false}: every fp8 linear then stores an input_scale). The ignore list may be
 * called "ignore" or "ignored_layers" (the MT-7B-fp8 README renames one to the other; both
 * are read and merged); entries are exact module names, "re:" + a Python regex that must
 * match at the start of the name (compressed-tensors' re.match, compiled with Oniguruma's
 * Python syntax), or a class name ("Linear" matches every projection).
 * hf_quant_config.json, when present: {"quantization": {"quant_algo": "FP8",
 * "exclude_modules": [...], "kv_cache_quant_algo": ...}}; its exclude_modules (fnmatch
 * wildcards, as ModelOpt writes them) join the ignore list. A folder with only
 * hf_quant_config.json (quant_algo FP8) is read as FP8 too (per-tensor or per-channel scales
 * as stored, static input scales optional).
 * FP8 (transformers' FineGrainedFP8Config, vLLM's Fp8Config, DeepSeek-V3's layout; the
 * Hy-MT2-30B-A3B-FP8 repo's tags point here): quant_method "fp8", activation_scheme
 * "dynamic" (the default) or "static", weight_block_size [rows, cols] (each 1 to 65536) or
 * absent/null, fmt "e4m3" when present, scale_fmt "ue8m0" or absent (power-of-two scales,
 * stored as float all the same), modules_to_not_convert (transformers: an entry matches a
 * module whose name, or that name with every digit run replaced by "*", contains it;
 * "lm_head" is always added, as transformers does) and ignored_layers (vLLM's: exact or
 * "re:"). With weight_block_size every fp8 linear stores weight_scale_inv [ceil(out/rows),
 * ceil(in/cols)] (block_rows/block_cols set); block scales with static activations are
 * HY_E_UNSUPPORTED (transformers and vLLM refuse them too). Without it the checkpoint is
 * AutoFP8's per-tensor form (weight_scale, and input_scale when static), read as the
 * compressed-tensors one.
 * GPTQ (doc 6.2): quant_method "gptq", bits 4, group_size (-1 for one group per column, or a
 * positive size; the loader checks it divides in-features), desc_act, sym,
 * checkpoint_format "gptq" (zeros stored minus one, the default) or "gptq_v2" (zeros as is).
 * Anything else (awq, bitsandbytes, int8 compressed-tensors, nvfp4, ...) is
 * HY_E_UNSUPPORTED naming what was found; malformed values are HY_E_FORMAT / HY_E_RANGE
 * naming the file and key. No quantization config at all is method HY_QUANT_NONE.
 * The struct owns its ignore list (hy_quant_config_free); reading it is thread-safe. */
#ifndef HY_FORMATS_QUANT_CONFIG_H
#define HY_FORMATS_QUANT_CONFIG_H

#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>

#define HY_QUANT_MAX_IGNORE 4096 /* ignore entries; more is HY_E_RANGE */
#define HY_QUANT_MAX_GROUPS 16   /* config_groups entries */

enum hy_quant_method { HY_QUANT_NONE = 0, HY_QUANT_FP8, HY_QUANT_GPTQ };

struct hy_quant_ignore; /* one ignore entry (exact, regex, wildcard or class) */

struct hy_quant_config {
    enum hy_quant_method method;
    char source[32];         /* "compressed-tensors", "fp8", "hf_quant_config", "gptq" ("" for none) */
    /* FP8 */
    bool w_per_tensor;       /* some group has weights strategy "tensor" */
    bool w_per_channel;      /* some group has weights strategy "channel" */
    bool act_static;         /* some group has static per-tensor input activations */
    bool kv_cache_scheme;    /* kv_cache_scheme / kv_cache_quant_algo set (not used: logged) */
    int block_rows, block_cols; /* quant_method "fp8" weight_block_size; 0: no block scales */
    struct hy_quant_ignore *ignore;
    int n_ignore;
    /* GPTQ */
    int bits;                /* 4 */
    int group_size;          /* -1: one group over all in-features */
    bool desc_act, sym;
    bool zero_minus_one;     /* checkpoint_format "gptq" (v1): stored zero = zero - 1 */
};

/* Reads dir/config.json and dir/hf_quant_config.json (optional). On error *q is empty
 * (method NONE, nothing to free). */
hy_status hy_quant_config_load(struct hy_quant_config *q, const char *dir, struct hy_err *err);
/* The same from JSON texts: config_json is config.json's text, hf_json that of
 * hf_quant_config.json or NULL; `what` names the source in errors. */
hy_status hy_quant_config_parse(struct hy_quant_config *q, const char *config_json,
                                const char *hf_json, const char *what, struct hy_err *err);
void hy_quant_config_free(struct hy_quant_config *q); /* leaves it empty; accepts empty */

/* True when module `name` (e.g. "model.layers.0.mlp.down_proj") is on the ignore list;
 * `is_linear` lets the class name "Linear" match. */
bool hy_quant_config_ignored(const struct hy_quant_config *q, const char *name, bool is_linear);

const char *hy_quant_config_method_name(enum hy_quant_method m); /* "none", "fp8", "gptq" */

#endif
