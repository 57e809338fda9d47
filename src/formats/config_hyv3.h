/* config_hyv3.h: the hy_v3 part of config.json (formats-internal; config.c calls it).
 * Both forms are read: as Tencent releases it (first_k_dense_replace, expert_hidden_dim,
 * moe_intermediate_size, num_experts, num_experts_per_tok, num_shared_experts,
 * router_scaling_factor, route_norm, moe_router_use_sigmoid, moe_router_enable_expert_bias,
 * qk_norm, enable_lm_head_fp32, enable_moe_fp32_combine, rope_theta) and as transformers
 * >= 5.6 writes it (mlp_layer_types, rope_parameters). Absent keys take transformers'
 * HYV3Config defaults (configuration_hy_v3.py): theta 11158840, head_dim 128, 8 KV heads,
 * 131072 positions, top-8, 1 shared expert, scaling 2.826, layer 0 dense and the rest
 * sparse; num_experts and the expert width are required (transformers' defaults are the
 * 295B Hy3's, never a Hy-MT2 shape). Where two keys say the same thing they must agree;
 * where transformers and vLLM would run a value differently (route_norm or sigmoid off,
 * qk_norm off, no shared expert, a rope type other than default) it is HY_E_UNSUPPORTED.
 * Thread-safe, no allocation. */
#ifndef HY_FORMATS_CONFIG_HYV3_H
#define HY_FORMATS_CONFIG_HYV3_H

#include "formats/config.h"

#include <jansson.h>

/* Defaults of a hy_v3 config, over set_defaults' (call once model_type is known). */
void hy_config_hyv3_defaults(struct hy_config *c);
/* Reads the hy_v3 keys of o into c (after the common keys). Errors name the key. */
hy_status hy_config_hyv3_read(struct hy_config *c, const json_t *o, struct hy_err *err);
/* Range and consistency checks of the hy_v3 fields; `what` names the source. */
hy_status hy_config_hyv3_check(const struct hy_config *c, const char *what, struct hy_err *err);

#endif
