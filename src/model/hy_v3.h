/* hy_v3.h: what hy_v3 (HYV3ForCausalLM: Hy-MT2-30B-A3B, Hy3) adds to the shared model of
 * hunyuan.h: its tensors, and the mixture-of-experts block of its sparse layers.
 *
 * The forward pass is hunyuan.c's with two differences (model doc 3.2, checked against
 * transformers' modeling_hy_v3.py): QK RMSNorm before RoPE (cfg.qk_norm_before_rope), and
 * in the layers cfg.layer_moe marks, instead of the SwiGLU MLP, hy_v3_moe_block: router
 * logits h·Wrᵀ in float32, scores sigmoid(logits), the top-k experts by score + expert bias
 * (the bias only chooses), weights the unbiased scores renormalised times
 * router_scaling_factor; each chosen expert is a SwiGLU of width moe_intermediate_size run
 * over exactly the tokens routed to it (backend/cpu/moe.h groups them); plus an always-on
 * shared SwiGLU of width moe_intermediate_size * num_shared_experts. RoPE is the plain one
 * with rope_theta as written; the head is untied (tie_word_embeddings false by default) and,
 * as everything here, computed in float32.
 *
 * Tensor names are those of the released checkpoints (the "inner" layout, which
 * transformers >= 5.8.1 renames and fuses at load, and writes back on save):
 *   model.layers.N.self_attn.{q,k,v,o}_proj.weight, self_attn.{q,k}_norm.weight,
 *   input_layernorm / post_attention_layernorm; dense layers mlp.{gate,up,down}_proj.weight;
 *   MoE layers mlp.router.gate.weight [E, hidden], mlp.expert_bias [E] (float32 as released;
 *   bf16/f16 read too), mlp.experts.J.{gate,up,down}_proj.weight, mlp.shared_mlp.{gate,up,
 *   down}_proj.weight; model.embed_tokens / model.norm / lm_head.weight.
 * A MoE layer may also come in the fused layout transformers' modules hold (and Tencent's
 * convert_ckpt_to_outer.py writes): mlp.gate.weight, mlp.e_score_correction_bias,
 * mlp.shared_experts.*, mlp.experts.gate_up_proj [E, 2F, hidden] (gate rows first) and
 * mlp.experts.down_proj [E, hidden, F]; each expert is then a slice, bound in place.
 * Matrices must be F32, F16 or BF16 (GGUF files: also the block types hymt reads). hy_v3
 * runs on the CPU backends, and on a backend with device memory (weight_upload) that has
 * the MoE ops (backend.h: moe_route ...; CUDA), where hy_v3_upload puts the weights and
 * hy_v3_moe_block runs routing, grouping, the experts and the combine on the device with
 * no host round trip (so decode steps are recorded as the dense model's). The fast CPU
 * backend has the same ops on host memory (the experts read where they lie) and takes that
 * path too when each layer's gate/up experts share a dtype and its down experts one; the
 * reference backend runs expert by expert through matmul (the specification). fp8 checkpoints
 * (quant_method "fp8" with block scales, or per-tensor/per-channel fp8) are dequantized to
 * bf16 before binding (load_quant.h), then run as a bf16 checkpoint; --quant fp8 is
 * HY_E_UNSUPPORTED; q8 and the 4-bit load-time types quantize every projection.
 * Engine thread only, as hunyuan.h. */
#ifndef HY_MODEL_HY_V3_H
#define HY_MODEL_HY_V3_H

#include "model/hunyuan.h"

struct hy_moe_weights {
    struct hy_weight router;       /* [E, hidden] mlp.router.gate */
    float *bias;                   /* [E] host, owned: the selection bias (zeros if none) */
    float *dbias;                  /* [E] its copy in device memory (hy_v3_upload), or NULL */
    struct hy_weight *gate, *up;   /* [E] each [F, hidden] */
    struct hy_weight *down;        /* [E] each [hidden, F] */
    struct hy_weight sh_gate, sh_up; /* [F * n_shared, hidden] */
    struct hy_weight sh_down;        /* [hidden, F * n_shared] */
    /* hy_v3_upload: the shared expert is matrix E of the device stacks gate/up/down (its
     * width and type those of an expert), so a decode step computes it in the grouped ops
     * (hy_moe_route.shared); sh_* then point into the stacks */
    bool sh_stacked;
};

/* The attention tensors of a hy_v3 layer in file order (what `hymt convert` and
 * make-test-model write): their names as released ("model.layers.N.<hf>.weight") and in
 * llama.cpp's hy_v3 GGUF ("blk.N.<gguf>.weight"), their shapes from c (rows 0: a vector)
 * and their slot in l (NULL: none), as weights.h's hy_layer_tensors for the dense model.
 * One table for both loaders, the converter and the test-model writer. */
#define HY_V3_ATTN_TENSORS 8
void hy_v3_attn_tensors(const struct hy_config *c, struct hy_layer_weights *l,
                        struct hy_layer_tensor out[HY_V3_ATTN_TENSORS]);
/* Binds layer i's attention tensors into l from the safetensors set st by their released
 * names (F32, F16 or BF16) or, when st is NULL, from the GGUF file g by their GGUF names. */
hy_status hy_v3_bind_attn(struct hy_layer_weights *l, const struct hy_st *st,
                          const struct hy_gguf *g, const struct hy_config *c, int i,
                          struct hy_err *err);

/* What hy_v3 does not run yet, refused before its weights are used: a backend with device
 * memory but without the MoE ops, fp8 made at load (quant HY_DTYPE_F8_E4M3: --quant fp8). q8 and the 4-bit types
 * quantize every projection as for the dense model (hy_v3_projections), the routers and the
 * biases stay as stored. */
hy_status hy_v3_check_load(const struct hy_model *m, enum hy_dtype quant, struct hy_err *err);
/* Binds every tensor of m->st (already open) for the hy_v3 config m->cfg: layers,
 * embedding, norm, head, and counts the parameters. On error the caller destroys m
 * (hy_v3_unbind frees what was made). GGUF files: load_gguf.h's hy_load_gguf_hyv3_bind. */
hy_status hy_v3_bind(struct hy_model *m, struct hy_err *err);
void hy_v3_unbind(struct hy_model *m); /* no-op for a dense model */
/* Whether the shared expert has an expert's shape and type as stored (one shared expert;
 * GGUF files may give it another type): hy_v3_upload then stacks it with the experts, and
 * hy_v3_projections leaves it to that on backends with weight_upload_n. */
bool hy_v3_sh_fits(const struct hy_moe_weights *mw);
/* The weights load-time quantization replaces: each layer's q/k/v/o, then its dense
 * gate/up/down, or its shared expert's three and every expert's (the router stays, so
 * routing is computed from the stored weights); at most hy_v3_n_projections of them. On a
 * backend with weight_upload_n the experts are left out: hy_v3_upload quantizes them. */
int hy_v3_n_projections(const struct hy_config *c);
int hy_v3_projections(struct hy_model *m, struct hy_weight **ws, int cap);
/* n_params and n_active_params (k of the E experts of each MoE layer) from the bound
 * weights. */
void hy_v3_count_params(struct hy_model *m);

/* Puts every weight of m (bound, and quantized by the loader where m->weights_quantized)
 * into the device memory of m->be (a backend with weight_upload and the MoE ops): the
 * embedding and norms through weight_upload, the router and the head float32 (alloc +
 * upload: routing and the head are computed in float32; a tied head stays the bf16
 * embedding), each MoE layer's gate, up and down experts as one weight_upload_n stack each,
 * quantized on the host first to m->quant's type (Q4_G128 as Q4_0 where in-features are not
 * a multiple of 128) when m->weights_quantized, so no bf16 copy of them reaches the device.
 * HY_E_UNSUPPORTED when the experts would be a type the grouped ops do not take. What it
 * allocated is freed by hy_v3_unbind, also after a failure. */
hy_status hy_v3_upload(struct hy_model *m, struct hy_err *err);
void hy_v3_dev_free(struct hy_model *m); /* what hy_v3_upload allocated; hy_v3_unbind calls it */

/* The routing buffers of a scratch for steps of up to s->max_tokens tokens. */
hy_status hy_v3_scratch_create(struct hy_scratch *s, const struct hy_model *m,
                               struct hy_err *err);
void hy_v3_scratch_destroy(struct hy_scratch *s, const struct hy_model *m); /* accepts none */

/* s->h [T, hidden] = MoE(s->h) for layer il (m->layers[il].moe set). Uses s->gate and
 * s->up as its SwiGLU buffers. On a device backend (hy_v3_upload) in chunks of at most
 * HY_V3_DEV_CHUNK tokens, each a fixed sequence of ops whatever the routing. */
#define HY_V3_DEV_CHUNK 256
void hy_v3_moe_block(const struct hy_model *m, struct hy_scratch *s, int il, int T);

#endif
