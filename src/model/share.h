/* share.h: a model's weight slots and sharing them with another model loaded beside it
 * (hy_model_opts.share_from in hunyuan.h, for --chimera's second model). For the loader
 * (model/load.c): slots are numbered tok_embd 0, out_norm 1, lm_head 2, then 11 per layer
 * in struct hy_layer_weights order. hy_model_slots_keep records each slot as bound to the
 * checkpoint; hy_model_share then points every slot whose tensor equals share_from's at
 * share_from's final weight and marks it, so quantization, upload and free skip it.
 * Load-time only; allocates m->bound and m->shared (freed by hy_model_destroy). */
#ifndef HY_MODEL_SHARE_H
#define HY_MODEL_SHARE_H

#include "model/hunyuan.h"

/* Records m's slots as bound (dense safetensors models, after binding). HY_E_NOMEM. */
hy_status hy_model_slots_keep(struct hy_model *m, struct hy_err *err);
/* The weight in slot s (0 <= s < m->n_slots). */
struct hy_weight *hy_model_slot(struct hy_model *m, int s);
/* Whether w (a weight inside m) is borrowed from the model m shares with. */
bool hy_model_is_shared(const struct hy_model *m, const struct hy_weight *w);
/* Shares what m (bound, not yet quantized or uploaded) has in common with from (fully
 * loaded); logs how much. Nothing shared when the two differ in backend kind or quant, or
 * either has no recorded slots. HY_E_NOMEM. */
hy_status hy_model_share(struct hy_model *m, const struct hy_model *from, struct hy_err *err);

#endif
