/* load_quant.h: quantized checkpoints, and fp8 quantization at load, turned into weights the
 * CPU kernels run (model doc section 6). Projections are named as released: dense
 * model.layers.N.{self_attn.{q,k,v,o},mlp.{gate,up,down}}_proj, hy_v3 MoE layers also
 * mlp.shared_mlp.* and mlp.experts.J.* (hy_v3.h).
 *
 * hy_load_quant_prepare runs between opening the safetensors set and binding the weights
 * (hy_model_load_opts). It reads the folder's quantization config (formats/quant_config.h)
 * and puts in-memory tensors into the set (hy_st_put) under the names the binder looks for,
 * so nothing else in the loader changes:
 *
 * - fp8 checkpoints (compressed-tensors / AngelSlim, and any F8_E4M3 tensor): each
 *   `<linear>.weight` in F8_E4M3 [out, in] needs `<linear>.weight_scale` (F32/BF16/F16;
 *   [], [1] or [1,1]: per tensor; [out] or [out,1]: per output channel; finite, >= 0) and,
 *   when the config declares static input activations, `<linear>.input_scale` (one finite
 *   value > 0). It is dequantized to BF16: w = bf16_rne(float(e4m3) * scale), computed in
 *   float32 exactly as PyTorch's (w8.float() * scale).to(bfloat16), held in host memory owned
 *   by the set (freed with the model) and bound as a BF16 weight. k_scale / v_scale tensors
 *   are ignored (logged: the KV cache stays float32). A weight_scale beside a non-fp8
 *   weight, an fp8 tensor not named `.weight` or not 2-D, a scale of the wrong shape, dtype
 *   or value, and a missing input_scale are errors naming the tensor. Disagreements between
 *   the ignore list and the stored dtypes are warnings (the tensors decide). One log line
 *   says how many linears were fp8 and which were kept as stored.
 * - quant_method "fp8" with weight_block_size [br, bc] (transformers' FineGrainedFP8,
 *   DeepSeek-V3's layout; quant_config.h): each fp8 `<linear>.weight` [out, in] needs
 *   `<linear>.weight_scale_inv` (F32/BF16/F16, [ceil(out/br), ceil(in/bc)], finite, >= 0;
 *   the last blocks of a row or column may be shorter) and is dequantized the same way with
 *   its block's scale: w[r][c] = bf16_rne(float(e4m3) * scale_inv[r/br][c/bc]), as
 *   transformers' Fp8Dequantize (w.float() * scale) then the cast to the bf16 model dtype.
 *   A weight_scale where block scales are configured (or a weight_scale_inv where they are
 *   not), both beside one weight, a scale beside a non-fp8 weight, a missing one or one of
 *   the wrong shape, dtype or value are errors naming the tensor. No per-row fp8 view is
 *   kept for block-scaled weights (hy_load_quant_fp8_view: false). With keep_blocks (the
 *   backend keeps HY_DTYPE_F8_B128: backend.h weight_keeps) and quant HY_DTYPE_F32 (or
 *   fp8, which changes nothing here), a decoder layer's projection
 *   (model.layers.*_proj.weight) in 128x128 blocks with in-features a multiple of
 *   HY_F8_B128_COLS is not dequantized: it is put as an HY_DTYPE_F8_B128 tensor whose data
 *   is a struct hy_f8b_src (backend.h) pointing at the codes where they lie (the mapped
 *   file) and at a float32 copy of the scales (also put, as "<name>_scale_inv@f32"), so
 *   the binder binds an F8_B128 weight and nothing of it is copied on the host (the scales
 *   are 1/16384 of the weights). Other block sizes, shapes and tensors are dequantized.
 *   Without weight_block_size, "fp8" is AutoFP8's per-tensor form, read as above. The same
 *   runs for hy_v3 (every expert, the shared expert, attention, the dense layer; router
 *   and expert_bias as stored); a GPTQ hy_v3 checkpoint is HY_E_UNSUPPORTED.
 * - GPTQ-Int4 checkpoints (doc 6.2; AngelSlim GPTQQuantLinear, the AutoGPTQ layout; in
 *   load_gptq.c): `<linear>.qweight` I32 [in/8, out] (input row 8r+j in bits 4j..4j+3 of
 *   row r, out a multiple of 8), `.qzeros` I32 [G, out/8] (output column 8c+j in bits
 *   4j..4j+3 of column c; the stored value is zero-1 (v1, checkpoint_format "gptq", and the
 *   assumption without a config) or the zero itself (gptq_v2)), `.scales` F16/BF16/F32 [G, out]
 *   (finite), `.g_idx` I32 [in] (each in [0, G); any order, so desc_act works; optional
 *   without desc_act: i / group_size), G = in / group_size (group_size -1: G = 1; without a
 *   config: read from the scales' rows). Dequantized to BF16 `<linear>.weight` [out, in]:
 *   w[o][i] = bf16_rne(scale[g][o] * (q[i][o] - zero[g][o])), g = g_idx[i], the product
 *   exact in float32 (as PyTorch's (scales.float() * (q - z).float()).to(bfloat16)), owned
 *   by the set. A `.bias` must be all zeros (ignored: the projections have none). Errors
 *   naming the tensor: a wrong dtype or shape, group_size not dividing in, g_idx out of
 *   range, a missing qzeros/scales (or g_idx with desc_act), a float `.weight` beside a
 *   qweight, qzeros/scales/g_idx without their qweight, any other integer tensor. v1 zeros
 *   are (stored + 1) mod 16: a zero of 0 is stored as -1, i.e. 15, and AutoGPTQ's reference
 *   dequantizer masks the sum the same way.
 *   `--quant fp8` on a GPTQ checkpoint is refused; --quant q8/q4 requantize the bf16.
 * - quant == HY_DTYPE_F8_E4M3 on an unquantized checkpoint (`--quant fp8`): every
 *   projection (q/k/v/o, gate/up/down) is quantized: scale = max|w| / 448 over the tensor
 *   (or over each output row when per_channel), codes = e4m3(clamp(w / scale, +-448)), then
 *   dequantized as above (embeddings, lm_head and norms stay as stored). On an fp8
 *   checkpoint it changes nothing; on a GPTQ one it is refused.
 *
 * The fp8 form stays reachable for a backend that runs fp8 itself (hy_load_quant_fp8_view): the
 * codes (the mapped file, or host memory for --quant fp8), the scales as float32 and the
 * input scale, by weight name; load.c hands it to the backend's weight_upload_fp8 op (CUDA)
 * in place of the bf16 tensor, which then stays in host memory only. Load-time only, not
 * thread-safe (it modifies the set). */
#ifndef HY_MODEL_LOAD_QUANT_H
#define HY_MODEL_LOAD_QUANT_H

#include "core/dtype.h"
#include "core/status.h"
#include "formats/config.h"
#include "formats/safetensors.h"

#include <stdbool.h>
#include <stdint.h>

hy_status hy_load_quant_prepare(struct hy_st *st, const char *dir, const struct hy_config *cfg,
                                enum hy_dtype quant, bool per_channel, bool keep_blocks,
                                struct hy_err *err);


/* The fp8 form of weight `weight_name` (e.g. "model.layers.0.mlp.up_proj.weight") after
 * hy_load_quant_prepare: w[r][c] = e4m3(codes[r*cols + c]) * scale[n_scale == 1 ? 0 : r]. */
struct hy_load_quant_view {
    const uint8_t *codes; /* [rows, cols] */
    const float *scale;   /* [n_scale] */
    int64_t rows, cols, n_scale;
    float input_scale;    /* static activation scale; 0 when there is none */
};
bool hy_load_quant_fp8_view(const struct hy_st *st, const char *weight_name,
                            struct hy_load_quant_view *v);

#endif
