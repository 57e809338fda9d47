/* cmd_info.c: `hymt info MODEL`: what a checkpoint holds, and whether hymt can run it. */
#include "backend/cpu/cpu.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/load.h"
#include "formats/gguf.h"
#include "formats/quant_config.h"
#include "formats/safetensors.h"
#include "model/hunyuan.h"
#include "tokenizer/tokenizer.h"
#include "translate/prompt_detect.h"

#include <inttypes.h>
#include <string.h>

static const struct cli_cmd cmd = {
    "info",
    "usage: hymt info MODEL [--tensors]   (MODEL: a Hugging Face repo id ORG/NAME[@REV] from\n"
    "                                     the hub cache, a checkpoint folder or a GGUF file)\n"
    "\n"
    "Prints the config summary, parameter count, bytes by dtype, and checks that every\n"
    "tensor the forward pass needs is present with the right shape; then the prompts the\n"
    "model takes (its generation and chat format, what decided them) and its sampling\n"
    "defaults.\n"
    "\n"
    "  --tensors   list every tensor with its dtype and shape\n"
    "  -h, --help  this text\n",
};

static void print_config(const struct hy_config *c)
{
    printf("architecture      %s (%s)\n", c->architecture[0] ? c->architecture : "?",
           c->model_type[0] ? c->model_type : "?");
    printf("layers            %" PRId64 "\n", c->num_hidden_layers);
    printf("hidden / ffn      %" PRId64 " / %" PRId64 "\n", c->hidden_size, c->intermediate_size);
    printf("heads             %" PRId64 " query, %" PRId64 " key/value, head_dim %" PRId64 "\n",
           c->num_attention_heads, c->num_key_value_heads, c->head_dim);
    printf("vocab             %" PRId64 "\n", c->vocab_size);
    printf("rope              %s, theta %g, alpha %g -> base %.6f\n",
           c->rope_type[0] ? c->rope_type : "default", c->rope_theta, c->rope_alpha, c->rope_base);
    printf("rms_norm_eps      %g\n", c->rms_norm_eps);
    printf("max positions     %" PRId64 "\n", c->max_position_embeddings);
    printf("tied head         %s\n", c->tie_word_embeddings ? "yes" : "no");
    printf("qk norm           %s\n", c->use_qk_norm ? "yes" : "no");
    printf("eos ids          ");
    for (int i = 0; i < c->n_eos; i++)
        printf(" %" PRId64, c->eos_token_id[i]);
    printf("%s\n", c->n_eos ? "" : " (none)");
    printf("dtype (config)    %s\n", c->torch_dtype[0] ? c->torch_dtype : "?");
    if (c->arch != HY_ARCH_HYV3)
        return;
    printf("experts           %" PRId64 " routed (top %" PRId64 ", width %" PRId64 ") + %" PRId64
           " shared, in %" PRId64 " of %" PRId64 " layers\n", c->num_experts,
           c->num_experts_per_tok, c->moe_intermediate_size, c->num_shared_experts,
           c->n_moe_layers, c->num_hidden_layers);
    printf("routing           sigmoid, top-k by score + expert bias%s, renormalised, x %g\n",
           c->moe_expert_bias ? "" : " (none stored)", c->router_scaling_factor);
    printf("qk norm order     before RoPE\n");
}

/* The prompts line: the generation, chat format and sampling defaults (prompt_detect.h);
 * a tokenizer that cannot be read or has no Hunyuan template is said so, not fatal. */
static void print_prompts(const struct cli_model *mp)
{
    struct hy_tok *tok = NULL;
    struct hy_err err = {{0}};
    struct hy_prompt_profile p;
    const struct hy_prompt_source src = {mp->path, mp->name, NULL};
    hy_status st = hy_tok_load(&tok, mp->path, &err);
    if (!st)
        st = hy_prompt_profile_detect(tok, &src, &p, &err);
    hy_tok_destroy(tok);
    if (st) {
        printf("prompts           none: %s\n", err.msg);
        return;
    }
    printf("prompts           %s (%s), chat format %s\n", hy_prompt_gen_name(p.kind.gen),
           hy_prompt_gen_title(p.kind.gen), hy_prompt_style_name(p.kind.chat));
    printf("  decided by      %s\n", p.why);
    printf("sampling          temperature %g, top_k %d, top_p %g, repetition_penalty %g (%s)\n",
           (double)p.sampling.temperature, (int)p.sampling.top_k, (double)p.sampling.top_p,
           (double)p.sampling.repetition_penalty, p.sampling_from);
}

/* The checkpoint folder's quantization config (formats/quant_config.h), as the loader read it. */
static void print_quant(const char *dir)
{
    struct hy_quant_config q;
    struct hy_err e = {{0}};
    if (hy_quant_config_load(&q, dir, &e) != HY_OK) /* the load succeeded: not reached */
        return;
    if (q.method == HY_QUANT_FP8 && q.block_rows)
        printf("quantization      fp8 e4m3 (quant_method fp8), %dx%d block scales "
               "(weight_scale_inv), %s activations: dequantized to bf16 at load\n", q.block_rows,
               q.block_cols, q.act_static ? "static" : "dynamic");
    else if (q.method == HY_QUANT_FP8)
        printf("quantization      fp8 e4m3 (%s), %s weight scales%s: dequantized to bf16 at "
               "load\n", q.source, q.w_per_channel && !q.w_per_tensor ? "per-channel"
                                   : q.w_per_channel ? "per-tensor or per-channel" : "per-tensor",
               q.act_static ? ", static input scales" : "");
    else if (q.method == HY_QUANT_GPTQ)
        printf("quantization      gptq %d-bit, group %d%s: dequantized to bf16 at load\n", q.bits,
               q.group_size, q.desc_act ? ", desc_act" : "");
    else
        printf("quantization      none\n");
    hy_quant_config_free(&q);
}

static void print_tensors(const struct hy_st *st, bool list)
{
    uint64_t bytes[HY_DTYPE_COUNT] = {0}, elems = 0, total = 0;
    for (size_t i = 0; i < hy_st_count(st); i++) {
        const struct hy_st_tensor *t = hy_st_at(st, i);
        bytes[t->dtype] += t->nbytes;
        total += t->nbytes;
        elems += (uint64_t)t->n_elems;
        if (!list)
            continue;
        printf("  %-52s %-4s [", t->name, hy_dtype_name(t->dtype));
        for (int d = 0; d < t->n_dims; d++)
            printf("%s%" PRId64, d ? ", " : "", t->shape[d]);
        printf("]\n");
    }
    printf("files             %d\n", hy_st_file_count(st));
    printf("tensors           %zu, %" PRIu64 " elements, %.3f GB\n", hy_st_count(st), elems,
           (double)total / 1e9);
    for (int d = 0; d < HY_DTYPE_COUNT; d++)
        if (bytes[d])
            printf("  %-4s            %" PRIu64 " bytes\n", hy_dtype_name((enum hy_dtype)d),
                   bytes[d]);
}

/* A GGUF file's tensors (ggml dims: in-features first), bytes by ggml type. */
static void print_gguf_tensors(const struct hy_gguf *g, bool list)
{
    uint64_t bytes[64] = {0}, elems = 0, total = 0;
    for (size_t i = 0; i < hy_gguf_tensor_count(g); i++) {
        const struct hy_gguf_tensor *t = hy_gguf_tensor_at(g, i);
        bytes[t->ggml_type < 64 ? t->ggml_type : 63] += t->nbytes;
        total += t->nbytes;
        elems += t->n_elems;
        if (!list)
            continue;
        printf("  %-52s %-4s ne [", t->name, hy_ggml_type_name(t->ggml_type));
        for (int d = 0; d < t->n_dims; d++)
            printf("%s%" PRIu64, d ? ", " : "", t->ne[d]);
        printf("]\n");
    }
    printf("file              GGUF v3, %zu metadata keys, alignment %u\n", hy_gguf_kv_count(g),
           hy_gguf_alignment(g));
    printf("tensors           %zu, %" PRIu64 " elements, %.3f GB\n", hy_gguf_tensor_count(g), elems,
           (double)total / 1e9);
    for (uint32_t d = 0; d < 64; d++)
        if (bytes[d])
            printf("  %-4s            %" PRIu64 " bytes\n", hy_ggml_type_name(d), bytes[d]);
}

int cmd_info(int argc, char **argv)
{
    bool tensors = false;
    struct cli_opt opts[] = {{"tensors", CLI_FLAG, &tensors, 0, 0, false}};
    const char *pos[1];
    int n_pos;
    int r = cli_parse(&cmd, argc, argv, opts, 1, pos, 1, &n_pos);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    if (n_pos != 1)
        return cli_fail(&cmd, "give one MODEL");
    static struct cli_model mp;
    if (cli_model_resolve(&cmd, pos[0], &mp))
        return 1;
    pos[0] = mp.path;
    struct hy_err err = {{0}};
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    hy_status s = hy_cpu_backend_create_ref(&be, &err);
    if (!s)
        s = hy_model_load(&m, pos[0], be, &err);
    if (s) {
        fprintf(stderr, "hymt info: %s\n", err.msg);
        if (be)
            be->i->destroy(be);
        return 1;
    }
    printf("model             %s\n", pos[0]);
    print_config(&m->cfg);
    if (m->gguf)
        print_gguf_tensors(m->gguf, tensors);
    else
        print_tensors(m->st, tensors);
    if (!m->gguf)
        print_quant(pos[0]);
    printf("parameters        %" PRId64 " used by the forward pass (%.3f B)\n", m->n_params,
           (double)m->n_params / 1e9);
    if (m->n_active_params != m->n_params)
        printf("active            %" PRId64 " a token (%.3f B)\n", m->n_active_params,
               (double)m->n_active_params / 1e9);
    if (m->lm_head_stored)
        printf("lm_head.weight    stored next to a tied config; %s\n",
               m->lm_head_equal ? "identical to embed_tokens, so the head uses embed_tokens"
                                : "differs from embed_tokens, so it is used as the head "
                                  "(as transformers does)");
    printf("status            ok: every tensor the forward pass needs is present\n");
    print_prompts(&mp);
    hy_model_destroy(m);
    be->i->destroy(be);
    return 0;
}
