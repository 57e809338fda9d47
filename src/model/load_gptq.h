/* load_gptq.h: GPTQ-Int4 checkpoints dequantized to BF16 at load (load_quant.h describes the
 * layout and the checks), internal to src/model: hy_load_quant_prepare calls it. Load-time
 * only, not thread-safe (it modifies the set). */
#ifndef HY_MODEL_LOAD_GPTQ_H
#define HY_MODEL_LOAD_GPTQ_H

#include "core/dtype.h"
#include "core/status.h"
#include "formats/config.h"
#include "formats/quant_config.h"
#include "formats/safetensors.h"

/* The GPTQ step of hy_load_quant_prepare; HY_OK and nothing done when the set holds no
 * integer tensor and the config is not gptq. */
hy_status hy_load_gptq_prepare(struct hy_st *st, const struct hy_config *cfg,
                               const struct hy_quant_config *q, enum hy_dtype quant,
                               struct hy_err *err);

#endif
