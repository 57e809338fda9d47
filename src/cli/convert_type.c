/* convert_type.c: which ggml type each GGUF tensor gets (convert.h), as llama.cpp makes it:
 *   every 1-D tensor (norms, the hy_v3 selection bias exp_probs_b) and the MoE router
 *   (ffn_gate_inp, which llama-quantize never quantizes) stay F32;
 *   f32 / f16 / bf16: all other matrices in that type (convert_hf_to_gguf --outtype);
 *   q8_0: Q8_0;
 *   q4_0 / q4_k_m / q6_k (llama-quantize's llama_tensor_get_type): Q4_0 / Q4_K / Q6_K, except
 *     the head (output.weight, or token_embd.weight when tied) Q6_K; for q4_k_m also attn_v
 *     and every ffn_down tensor (dense ffn_down, the expert stack ffn_down_exps, the shared
 *     ffn_down_shexp) Q6_K in the layers where use_more_bits(i, n) holds. With hy_v3's 128
 *     experts none of llama.cpp's 8-expert rules (attn_k and attn_v Q8_0, attn_output Q5_K)
 *     apply, so its Q4_K_M has no Q5_K.
 * A type whose block does not divide the in-features falls back as llama.cpp's
 * tensor_type_fallback: Q6_K -> Q8_0; Q4_K -> Q8_0 (llama.cpp's Q5_0, a type hymt does not
 * have); Q8_0 and Q4_0 -> F16. */
#include "cli/convert.h"

#include <stdio.h>
#include <string.h>

/* llama.cpp's use_more_bits: the first and last eighth of the layers and every third one
 * between them. */
static bool use_more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static bool fits(uint32_t t, uint64_t ne0)
{
    uint64_t be = 1, bb = 0;
    return hy_ggml_type_info(t, &be, &bb) && ne0 % be == 0;
}

static uint32_t fallback(uint32_t t, uint64_t ne0)
{
    if (fits(t, ne0))
        return t;
    if ((t == HY_GGML_Q6_K || t == HY_GGML_Q4_K) && fits(HY_GGML_Q8_0, ne0))
        return HY_GGML_Q8_0;
    return HY_GGML_F16;
}

uint32_t hy_convert_tensor_type(enum hy_convert_type ty, const char *name, int n_dims,
                                uint64_t ne0, int n_layers, bool tied)
{
    if (n_dims == 1 || ty == HY_CONVERT_F32 || strstr(name, "ffn_gate_inp") ||
        strstr(name, "exp_probs_b"))
        return HY_GGML_F32;
    if (ty == HY_CONVERT_F16)
        return HY_GGML_F16;
    if (ty == HY_CONVERT_BF16)
        return HY_GGML_BF16;
    if (ty == HY_CONVERT_Q8_0)
        return fallback(HY_GGML_Q8_0, ne0);
    const bool head = !strcmp(name, "output.weight") || (tied && !strcmp(name, "token_embd.weight"));
    if (head)
        return fallback(HY_GGML_Q6_K, ne0);
    int layer = -1;
    if (ty == HY_CONVERT_Q4_K_M && sscanf(name, "blk.%d.", &layer) == 1 &&
        (strstr(name, ".attn_v.") || strstr(name, ".ffn_down")) && use_more_bits(layer, n_layers))
        return fallback(HY_GGML_Q6_K, ne0);
    return fallback(ty == HY_CONVERT_Q4_0 ? HY_GGML_Q4_0 : ty == HY_CONVERT_Q6_K ? HY_GGML_Q6_K
                                                                                 : HY_GGML_Q4_K,
                    ne0);
}

static const char *const type_names[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m", "q6_k"};

bool hy_convert_type_parse(const char *name, enum hy_convert_type *out)
{
    for (size_t k = 0; k < sizeof type_names / sizeof type_names[0]; k++)
        if (!strcmp(name, type_names[k])) {
            *out = (enum hy_convert_type)k;
            return true;
        }
    return false;
}

const char *hy_convert_type_name(enum hy_convert_type t) { return type_names[t]; }
