/* make_fp8.h: `hymt make-test-model --fp8`, for both writers (dense and hy_v3): every
 * projection (a tensor named *_proj.weight: attention, the MLPs, the shared expert and
 * each expert; not the router, embeddings, head or norms) is written as quant_method "fp8"
 * with 128x128 block scales, the layout transformers' FineGrainedFP8 and DeepSeek-V3 use
 * (model/load_quant.h reads it): weight F8_E4M3 [out, in] and weight_scale_inv F32
 * [ceil(out/128), ceil(in/128)], scale = max|block| / 448 (1 for an all-zero block), codes
 * e4m3(clamp(w / scale, +-448)). The values quantized are those the same command writes
 * without --fp8 (make_weights.h, rounded to the checkpoint's dtype first), so an fp8 and a
 * bf16 checkpoint of one seed hold the same model up to fp8 rounding. No state. */
#ifndef HY_CLI_MAKE_FP8_H
#define HY_CLI_MAKE_FP8_H

#include "core/dtype.h"
#include "core/status.h"
#include "formats/safetensors.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLI_MK_FP8_BLOCK 128

/* Turns each projection of t[0..*n) into an F8_E4M3 entry followed by its weight_scale_inv
 * entry (t[k].name points into names[k]; both arrays hold cap entries). False, changing
 * nothing, when cap is too small or memory runs out. */
bool cli_mk_fp8_list(struct hy_st_wtensor *t, char (*names)[HY_ST_MAX_NAME], size_t *n,
                     size_t cap);
/* The number of projections among t[0..n): how many entries cli_mk_fp8_list adds. */
size_t cli_mk_fp8_count(const struct hy_st_wtensor *t, size_t n);
/* Fills entry i of such a list when it is an fp8 weight or a scale (*done true); else
 * leaves it to cli_mk_fill (*done false). src: the checkpoint's dtype the values are
 * rounded to first; pool, seed and hidden as cli_mk_fill's. HY_E_NOMEM when out of
 * memory. */
struct hy_pool;
hy_status cli_mk_fp8_fill(struct hy_pool *pool, const struct hy_st_wtensor *t, size_t i,
                          uint64_t seed, int64_t hidden, enum hy_dtype src, void *buf,
                          size_t nbytes, bool *done, struct hy_err *err);
/* config.json's quantization_config for such a checkpoint (a new reference; NULL when out
 * of memory). */
json_t *cli_mk_fp8_config(void);

#endif
