/* config.h: HunYuanDenseV1 and hy_v3 (HYV3ForCausalLM, the mixture of experts of
 * Hy-MT2-30B-A3B) config.json, parsed and validated.
 * Accepts the real checkpoint form ("rope_scaling": {"type": "dynamic", "alpha": ...}) and
 * transformers' newer "rope_parameters": {"rope_type", "rope_theta", "alpha", ...} form, and
 * computes the effective RoPE base (model doc 3.3). Every value from the file is checked:
 * errors name the file and the key (zero heads, heads not divisible by KV heads, ...):
 * HY_E_FORMAT for wrong JSON or types, HY_E_NOTFOUND for a missing required key (vocab_size,
 * hidden_size, intermediate_size, num_hidden_layers, num_attention_heads), HY_E_RANGE for
 * values out of range, HY_E_UNSUPPORTED for valid features hymt does not run (use_cla,
 * biases, hidden_act other than silu, another model_type or architectures[0], rope types
 * other than default/dynamic). max_position_embeddings must be at least 64 (room for a
 * translation prompt and its answer). Absent keys take transformers' defaults (noted per field); a null value
 * counts as absent. On error *cfg is unchanged.
 * Plain data; no allocation survives the call; thread-safe. */
#ifndef HY_FORMATS_CONFIG_H
#define HY_FORMATS_CONFIG_H

#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_CONFIG_MAX_BYTES (1u << 20) /* config.json larger than this is rejected */
#define HY_CONFIG_MAX_EOS 8
#define HY_CONFIG_MAX_LAYERS 1024 /* num_hidden_layers above this is rejected */
#define HY_CONFIG_MAX_TOPK 64     /* num_experts_per_tok above this is rejected */

/* Which forward pass a config describes (model_type). */
enum hy_arch {
    HY_ARCH_DENSE = 0, /* hunyuan_v1_dense */
    HY_ARCH_HYV3 = 1,  /* hy_v3: config_hyv3.h has the keys read and their checks */
};

struct hy_config {
    char model_type[64];          /* "hunyuan_v1_dense" */
    char architecture[64];        /* architectures[0], e.g. "HunYuanDenseV1ForCausalLM" */
    int64_t vocab_size;
    int64_t org_vocab_size;       /* = vocab_size when absent */
    int64_t hidden_size;
    int64_t intermediate_size;
    int64_t num_hidden_layers;
    int64_t num_attention_heads;
    int64_t num_key_value_heads;  /* = num_attention_heads when absent */
    int64_t head_dim;             /* head_dim, else attention_head_dim, else hidden/heads */
    int64_t max_position_embeddings; /* default 2048 */
    double rms_norm_eps;          /* default 1e-5 */
    double rope_theta;            /* as written, top level or in rope_parameters (default 10000) */
    char rope_type[32];           /* "default" (when absent) or "dynamic"; others are rejected */
    double rope_alpha;            /* 0 when absent */
    double rope_factor;           /* 1 when absent; read, not used (model doc 3.3) */
    double rope_base;             /* effective: theta * alpha^(d/(d-2)) if dynamic and alpha > 0 */
    char hidden_act[32];          /* must be "silu" */
    bool tie_word_embeddings;     /* default false */
    bool use_qk_norm;             /* default true */
    bool use_cla;                 /* must be false */
    bool attention_bias;          /* must be false */
    bool mlp_bias;                /* must be false */
    int64_t bos_token_id;         /* -1 when absent (or -1 in the file); else < vocab_size */
    int64_t pad_token_id;
    int64_t sep_token_id;
    int64_t eod_token_id;
    int n_eos;                    /* eos_token_id may be an int or a list */
    int64_t eos_token_id[HY_CONFIG_MAX_EOS];
    char torch_dtype[32];         /* torch_dtype or dtype; "" when absent */

    /* hy_v3 (arch HY_ARCH_HYV3); all zero for hunyuan_v1_dense. */
    enum hy_arch arch;
    bool qk_norm_before_rope;     /* hy_v3: QK RMSNorm, then RoPE (dense: RoPE first) */
    int64_t num_experts;          /* routed experts */
    int64_t num_experts_per_tok;  /* top-k, <= HY_CONFIG_MAX_TOPK */
    int64_t num_shared_experts;   /* the always-on expert is this many widths wide */
    int64_t moe_intermediate_size; /* width of one expert (= expert_hidden_dim) */
    double router_scaling_factor; /* renormalised top-k weights are multiplied by it */
    bool moe_expert_bias;         /* a selection-only bias per expert is stored */
    bool enable_lm_head_fp32;     /* recorded; hymt computes every head in float32 */
    bool enable_moe_fp32_combine; /* recorded; hymt adds expert outputs in float32 */
    int64_t n_moe_layers;         /* layers with layer_moe set */
    unsigned char layer_moe[HY_CONFIG_MAX_LAYERS]; /* 1: MoE layer, 0: dense SwiGLU */
};

/* Reads dir/config.json (or a path to a .json file). */
hy_status hy_config_load(struct hy_config *cfg, const char *path, struct hy_err *err);
/* Parses JSON text; `what` names the source in errors. Validates (hy_config_validate). */
hy_status hy_config_parse(struct hy_config *cfg, const char *json, size_t len, const char *what,
                          struct hy_err *err);
/* Range and consistency checks; also fills derived fields (rope_base; rope_type "" becomes
 * "default"). For configs built in code too (e.g. from GGUF metadata). */
hy_status hy_config_validate(struct hy_config *cfg, const char *what, struct hy_err *err);
/* RoPE inverse frequencies: inv_freq[i] = base^(-2i/hd), i < hd/2. */
void hy_config_inv_freq(const struct hy_config *cfg, float *inv_freq);

#endif
