/* load_gguf.h: a HunYuanDense or hy_v3 model from a GGUF file (llama.cpp's "hunyuan-dense"
 * and "hy_v3" layouts; hy_v3: model/hy_v3.h and below),
 * model doc 3.4 and 3.6), internal to src/model (hy_model_load dispatches here when its path
 * is a GGUF file).
 * Config: from the hunyuan-dense.* keys; rope.freq_base is the effective base, already
 * scaled by the NTK alpha, and is used as is (only a hunyuan-dense.rope.scaling.alpha key,
 * which llama.cpp's loader also honours, scales it). hymt's writer also stores the base as
 * f64 in hymt.rope.freq_base (f32 loses ~1e-8 of it, enough to change RoPE frequencies);
 * it is used only when it rounds to the f32 key, so an edited file falls back to the
 * standard key. vocab_size comes from token_embd; tied when `output` is absent.
 * Weights: bound by GGUF name with shapes checked in ggml order (ne[0] = in-features), in
 * place in the map; dtypes F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K (others: HY_E_UNSUPPORTED naming the
 * tensor and its type). Errors name the file and the key or tensor. */
#ifndef HY_MODEL_LOAD_GGUF_H
#define HY_MODEL_LOAD_GGUF_H

#include "formats/gguf.h"
#include "model/hunyuan.h"

/* Fills cfg from the metadata of g (validated with hy_config_validate). */
hy_status hy_load_gguf_config(struct hy_config *cfg, const struct hy_gguf *g, struct hy_err *err);

/* Opens path into m->gguf, fills m->cfg and binds every weight (m->layers allocated,
 * m->n_params set). On failure what was set is freed by hy_model_destroy. */
hy_status hy_model_bind_gguf(struct hy_model *m, const char *path, struct hy_err *err);

/* Binds tensor `name` of shape [rows, cols] (rows 0: a vector of cols; ggml order
 * ne = {cols, rows}) in a type hymt reads. For the GGUF binders of src/model. */
hy_status hy_load_gguf_bind(struct hy_weight *w, const struct hy_gguf *g, const char *name,
                            int64_t rows, int64_t cols, struct hy_err *err);

/* hy_v3 (llama.cpp's "hy_v3", hy_v3_gguf.c): the expert keys of the metadata into c (after
 * the common ones; which layers are MoE: those with blk.N.ffn_gate_inp.weight), and every
 * weight of m (config already read), the experts as slices of the stacked 3-D tensors. */
hy_status hy_load_gguf_hyv3_config(struct hy_config *c, const struct hy_gguf *g,
                                   struct hy_err *err);
hy_status hy_load_gguf_hyv3_bind(struct hy_model *m, struct hy_err *err);

#endif
