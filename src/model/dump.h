/* dump.h: the debugging hook of the forward pass. A caller that sets it (struct
 * hy_scratch, struct hy_ctx) sees every named intermediate of a step, to diff against a
 * reference layer by layer; unset (NULL), the forward pass dumps nothing. The hook runs on
 * the engine thread, inside the step. */
#ifndef HY_MODEL_DUMP_H
#define HY_MODEL_DUMP_H

#include <stdint.h>

/* Optional per-layer tensor dump for debugging numerics: called with each named
 * intermediate ("attn_norm", "q_rope", "q_norm", "attn_out", "ffn_out", "x", ...);
 * data is backend memory, [rows, cols]. layer is -1 outside the layer loop. */
typedef void (*hy_dump_fn)(void *ctx, const char *name, int layer, const float *data, int64_t rows,
                           int64_t cols);

#endif
