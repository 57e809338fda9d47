/* cmd_make_test_model.c: `hymt make-test-model`: writes a HunYuanDenseV1 checkpoint in the
 * Hugging Face layout (config.json in the real checkpoint's style, generation_config.json,
 * model.safetensors or shards + index) with deterministic random weights. Tests use tiny
 * ones; benchmarks use the 1.8b and 7b presets, which have the real models' shapes.
 * Weights are scaled so activations keep unit size through the layers and logits spread
 * over a few units, which keeps greedy choices well separated for parity tests. */
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/make_fp8.h"
#include "cli/make_hyv3.h"
#include "cli/make_weights.h"
#include "core/log.h"
#include "formats/safetensors.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct cli_cmd cmd = {
    "make-test-model",
    "usage: hymt make-test-model --out DIR [options]\n"
    "\n"
    "Writes a HunYuanDenseV1 (or, with a hy_v3 preset, a HYV3ForCausalLM mixture-of-experts)\n"
    "checkpoint with deterministic random weights.\n"
    "\n"
    "  --out DIR           output folder (created; existing model files are replaced)\n"
    "  --preset NAME       tiny (default; 2 layers, hidden 64, vocab 512), 1.8b, 7b\n"
    "                      (Hunyuan-MT-7B's exact shapes, about 15 GB in bf16); hy_v3:\n"
    "                      tiny-hyv3 (4 layers, 8 experts top-2 + a shared one, vocab 512),\n"
    "                      30b-a3b (Hy-MT2-30B-A3B's shapes, about 60 GB in bf16)\n"
    "  --seed N            random seed (default 1)\n"
    "  --dtype T           bf16 (default), f16 or f32\n"
    "  --fp8               write the projections as quant_method \"fp8\" with 128x128\n"
    "                      block scales (weight_scale_inv), from the values --dtype gives\n"
    "  --untied            separate lm_head.weight (tie_word_embeddings false)\n"
    "  --store-lm-head     tied config, but also store a different lm_head.weight, as the\n"
    "                      released checkpoints do; it differs from the\n"
    "                      embedding, so transformers (and hymt) use it as the head)\n"
    "  --rope-form F       scaling (default: rope_scaling with alpha, as the released\n"
    "                      config.json) or parameters (transformers' rope_parameters; for\n"
    "                      hy_v3 also mlp_layer_types: the config transformers >= 5.6 writes)\n"
    "  --layers N --hidden N --heads N --kv-heads N --head-dim N --ffn N --vocab N\n"
    "                      override the preset's shapes\n"
    "  --expert-ffn N      hy_v3: the experts' width (moe_intermediate_size)\n"
    "  --shard-size BYTES  split into shards of at most this many bytes, with an index\n"
    "                      (default: 7b preset 5e9, others one file)\n"
    "  --dry-run           print the tensor count, parameters and bytes; write nothing\n"
    "  -h, --help          this text\n",
};

struct shape {
    int64_t layers, hidden, heads, kv, hd, ffn, vocab;
    double alpha;
    int64_t shard;
};

struct mk {
    struct shape s;
    enum hy_dtype dtype;
    uint64_t seed;
    bool untied, store_head, dry_run, fp8;
    struct hy_st_wtensor *t; /* [n] */
    char (*names)[HY_ST_MAX_NAME];
    size_t n;
    float *tmp; /* float32 staging for one tensor */
    size_t tmp_cap;
};

static void add_tensor(struct mk *k, const char *name, int64_t rows, int64_t cols)
{
    struct hy_st_wtensor *t = &k->t[k->n];
    snprintf(k->names[k->n], HY_ST_MAX_NAME, "%s", name);
    t->name = k->names[k->n];
    t->dtype = k->dtype;
    t->n_dims = rows ? 2 : 1;
    t->shape[0] = rows ? rows : cols;
    t->shape[1] = cols;
    k->n++;
}

static void list_tensors(struct mk *k)
{
    const struct shape *s = &k->s;
    char nm[HY_ST_MAX_NAME];
    add_tensor(k, "model.embed_tokens.weight", s->vocab, s->hidden);
    for (int64_t i = 0; i < s->layers; i++) {
        const struct {
            const char *suffix;
            int64_t rows, cols;
        } w[] = {
            {"input_layernorm.weight", 0, s->hidden},
            {"self_attn.q_proj.weight", s->heads * s->hd, s->hidden},
            {"self_attn.k_proj.weight", s->kv * s->hd, s->hidden},
            {"self_attn.v_proj.weight", s->kv * s->hd, s->hidden},
            {"self_attn.o_proj.weight", s->hidden, s->heads * s->hd},
            {"self_attn.query_layernorm.weight", 0, s->hd},
            {"self_attn.key_layernorm.weight", 0, s->hd},
            {"post_attention_layernorm.weight", 0, s->hidden},
            {"mlp.gate_proj.weight", s->ffn, s->hidden},
            {"mlp.up_proj.weight", s->ffn, s->hidden},
            {"mlp.down_proj.weight", s->hidden, s->ffn},
        };
        for (size_t j = 0; j < sizeof w / sizeof w[0]; j++) {
            snprintf(nm, sizeof nm, "model.layers.%lld.%s", (long long)i, w[j].suffix);
            add_tensor(k, nm, w[j].rows, w[j].cols);
        }
    }
    add_tensor(k, "model.norm.weight", 0, s->hidden);
    if (k->untied || k->store_head)
        add_tensor(k, "lm_head.weight", s->vocab, s->hidden);
}

/* The values of make_weights.h. */
static hy_status fill(void *ctx, size_t i, void *buf, size_t nbytes, struct hy_err *err)
{
    struct mk *k = ctx;
    bool done = false;
    hy_status s = k->fp8 ? cli_mk_fp8_fill(k->t, i, k->seed, k->s.hidden, k->dtype, buf, nbytes,
                                           &done, err)
                         : HY_OK;
    if (!s && !done)
        cli_mk_fill(&k->t[i], k->seed, k->s.hidden, buf, nbytes, k->tmp, k->tmp_cap);
    return s;
}

/* Special ids laid out as the 7B vocabulary's (model doc 4.1): first special id S is
 * endoftext, S+1 startoftext, S+3 eos, S+4 pad, S+5 extra_0 (sep), S+10 extra_5 (eod). */
static int64_t first_special(int64_t vocab) { return vocab >= 1024 ? vocab - 210 : vocab - 16; }

static int write_configs(const struct mk *k, const char *dir, bool rope_params)
{
    const struct shape *s = &k->s;
    int64_t S = first_special(s->vocab);
    const char *dt = k->dtype == HY_DTYPE_F32 ? "float32"
                     : k->dtype == HY_DTYPE_F16 ? "float16" : "bfloat16";
    json_t *c = json_pack(
        "{s:[s], s:f, s:b, s:I, s:I, s:I, s:s, s:I, s:f, s:I, s:I, s:I, s:I, s:s, s:I, s:I, "
        "s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:b, s:b, s:b, s:b, s:s, s:s, s:I, s:I, s:b}",
        "architectures", "HunYuanDenseV1ForCausalLM", "attention_dropout", 0.0,
        "attention_bias", 0, "attention_head_dim", (json_int_t)s->hd, "head_dim",
        (json_int_t)s->hd, "bos_token_id", (json_int_t)(S + 1), "hidden_act", "silu",
        "hidden_size", (json_int_t)s->hidden, "initializer_range", 0.02, "intermediate_size",
        (json_int_t)s->ffn, "max_position_embeddings", (json_int_t)32768,
        "num_attention_heads", (json_int_t)s->heads, "num_hidden_layers",
        (json_int_t)s->layers, "model_type", "hunyuan_v1_dense", "num_key_value_heads",
        (json_int_t)s->kv, "eos_token_id", (json_int_t)(S + 3), "pad_token_id",
        (json_int_t)(S + 4), "sep_token_id", (json_int_t)(S + 5), "eod_token_id",
        (json_int_t)(S + 10), "vocab_size", (json_int_t)s->vocab, "org_vocab_size",
        (json_int_t)s->vocab, "rms_norm_eps", 1e-5, "pretraining_tp", (json_int_t)1,
        "tie_word_embeddings", !k->untied, "use_cache", 1, "use_qk_norm", 1, "use_cla", 0,
        "torch_dtype", dt, "transformers_version", "4.56.0", "cla_share_factor",
        (json_int_t)2, "num_experts", (json_int_t)1, "mlp_bias", 0);
    if (!c)
        return 1;
    if (k->fp8)
        json_object_set_new(c, "quantization_config", cli_mk_fp8_config());
    if (rope_params) {
        json_object_set_new(c, "rope_parameters",
                            json_pack("{s:s, s:f, s:f, s:f}", "rope_type", "dynamic",
                                      "rope_theta", 10000.0, "alpha", s->alpha, "factor", 1.0));
    } else {
        json_object_set_new(c, "rope_theta", json_real(10000.0));
        json_object_set_new(c, "rope_scaling",
                            json_pack("{s:s, s:f, s:f, s:I, s:I, s:f, s:f}", "type", "dynamic",
                                      "alpha", s->alpha, "factor", 1.0, "beta_fast",
                                      (json_int_t)32, "beta_slow", (json_int_t)1, "mscale", 1.0,
                                      "mscale_all_dim", 1.0));
    }
    if (cli_mk_write_json(c, dir, "config.json"))
        return 1;
    json_t *g = json_pack("{s:I, s:[I,I], s:I, s:b, s:I, s:f, s:f, s:f, s:s}", "bos_token_id",
                          (json_int_t)(S + 1), "eos_token_id", (json_int_t)(S + 3),
                          (json_int_t)S, "pad_token_id", (json_int_t)(S + 4), "do_sample", 1,
                          "top_k", (json_int_t)20, "top_p", 0.6, "repetition_penalty", 1.05,
                          "temperature", 0.7, "transformers_version", "4.56.0");
    return g ? cli_mk_write_json(g, dir, "generation_config.json") : 1;
}

static int preset(struct shape *s, const char *name)
{
    static const struct {
        const char *name;
        struct shape s;
    } presets[] = {
        {"tiny", {2, 64, 4, 1, 64, 128, 512, 1000.0, 0}},
        {"1.8b", {32, 2048, 16, 4, 128, 6144, 120818, 1000.0, 0}},
        {"7b", {32, 4096, 32, 8, 128, 14336, 128167, 1000.0, 5000000000LL}},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(name, presets[i].name)) {
            *s = presets[i].s;
            return 0;
        }
    return -1;
}

/* Prints the tensor count, parameters and bytes the checkpoint has (or would have). */
static void print_summary(const struct mk *k)
{
    uint64_t elems = 0, bytes = 0;
    for (size_t i = 0; i < k->n; i++) {
        uint64_t e = 1;
        for (int d = 0; d < k->t[i].n_dims; d++)
            e *= (uint64_t)k->t[i].shape[d];
        elems += strstr(k->t[i].name, "_scale_inv") ? 0 : e; /* --fp8 scales: not parameters */
        bytes += e * hy_dtype_size(k->t[i].dtype);
    }
    printf("%zu tensors, %llu parameters, %llu bytes\n", k->n, (unsigned long long)elems,
           (unsigned long long)bytes);
}

static int make(struct mk *k, const char *dir, bool rope_params)
{
    if (!k->dry_run && mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "hymt make-test-model: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    size_t cap = (size_t)(k->s.layers * 18 + 3); /* with --fp8, 7 scales a layer */
    k->t = calloc(cap, sizeof *k->t);
    k->names = calloc(cap, sizeof *k->names);
    k->tmp_cap = 1 << 16;
    k->tmp = malloc(k->tmp_cap * sizeof *k->tmp);
    int rc = 1;
    bool listed = k->t && k->names && k->tmp;
    if (listed)
        list_tensors(k);
    if (listed && k->fp8 && !cli_mk_fp8_list(k->t, k->names, &k->n, cap)) {
        fprintf(stderr, "hymt make-test-model: out of memory\n");
        listed = false;
    }
    if (listed && k->dry_run) {
        print_summary(k);
        rc = 0;
    } else if (listed) {
        struct hy_err err = {{0}};
        /* remove stale files of another layout so the folder holds exactly one checkpoint */
        char p[4096];
        snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
        unlink(p);
        snprintf(p, sizeof p, "%s/model.safetensors", dir);
        unlink(p);
        if (write_configs(k, dir, rope_params) == 0) {
            hy_status s = hy_st_write(dir, k->t, k->n, (uint64_t)k->s.shard, fill, k, &err);
            if (s)
                fprintf(stderr, "hymt make-test-model: %s\n", err.msg);
            rc = s ? 1 : 0;
            if (!s)
                print_summary(k);
        }
    }
    free(k->t);
    free(k->names);
    free(k->tmp);
    return rc;
}

int cmd_make_test_model(int argc, char **argv)
{
    const char *out = NULL, *pname = "tiny", *dtype = "bf16", *rope_form = "scaling";
    int64_t seed = 1, shard = -1, expert_ffn = -1;
    struct shape ov = {-1, -1, -1, -1, -1, -1, -1, 0, 0};
    struct mk k = {0};
    struct cli_opt opts[] = {
        {"out", CLI_STR, &out, 0, 0, false},
        {"preset", CLI_STR, &pname, 0, 0, false},
        {"seed", CLI_INT, &seed, 0, 9007199254740991.0, false},
        {"dtype", CLI_STR, &dtype, 0, 0, false},
        {"untied", CLI_FLAG, &k.untied, 0, 0, false},
        {"store-lm-head", CLI_FLAG, &k.store_head, 0, 0, false},
        {"dry-run", CLI_FLAG, &k.dry_run, 0, 0, false},
        {"fp8", CLI_FLAG, &k.fp8, 0, 0, false},
        {"rope-form", CLI_STR, &rope_form, 0, 0, false},
        {"layers", CLI_INT, &ov.layers, 1, 256, false},
        {"hidden", CLI_INT, &ov.hidden, 1, 65536, false},
        {"heads", CLI_INT, &ov.heads, 1, 1024, false},
        {"kv-heads", CLI_INT, &ov.kv, 1, 1024, false},
        {"head-dim", CLI_INT, &ov.hd, 2, 1024, false},
        {"ffn", CLI_INT, &ov.ffn, 1, 1 << 20, false},
        {"vocab", CLI_INT, &ov.vocab, 32, 1 << 24, false},
        {"expert-ffn", CLI_INT, &expert_ffn, 1, 1 << 20, false},
        {"shard-size", CLI_INT, &shard, 1, 1e15, false},
    };
    const char *pos[1];
    int n_pos;
    int r = cli_parse(&cmd, argc, argv, opts, sizeof opts / sizeof opts[0], pos, 0, &n_pos);
    if (r)
        return r == CLI_HELP ? 0 : 2;
    if (expert_ffn > 0 && !hy_hyv3_preset(&(struct hy_hyv3_shape){0}, pname))
        return cli_fail(&cmd, "--expert-ffn applies to the hy_v3 presets only");
    if (!out && !k.dry_run)
        return cli_fail(&cmd, "--out DIR is required");
    struct hy_hyv3_shape hs;
    bool hyv3 = hy_hyv3_preset(&hs, pname);
    if (!hyv3 && preset(&k.s, pname))
        return cli_fail(&cmd, "--preset: unknown preset '%s' (tiny, 1.8b, 7b, tiny-hyv3, "
                        "30b-a3b)", pname);
    if (hyv3) /* the shape flags below override its shapes as they do the dense ones' */
        k.s = (struct shape){hs.layers, hs.hidden, hs.heads, hs.kv, hs.hd, hs.ffn, hs.vocab, 0,
                             hs.shard};
    int64_t *dst[] = {&k.s.layers, &k.s.hidden, &k.s.heads, &k.s.kv, &k.s.hd, &k.s.ffn, &k.s.vocab};
    int64_t *src[] = {&ov.layers, &ov.hidden, &ov.heads, &ov.kv, &ov.hd, &ov.ffn, &ov.vocab};
    for (size_t i = 0; i < sizeof dst / sizeof dst[0]; i++)
        if (*src[i] > 0)
            *dst[i] = *src[i];
    if (shard > 0)
        k.s.shard = shard;
    if (k.s.heads % k.s.kv)
        return cli_fail(&cmd, "--heads %lld is not a multiple of --kv-heads %lld",
                        (long long)k.s.heads, (long long)k.s.kv);
    if (k.s.hd % 2)
        return cli_fail(&cmd, "--head-dim must be even, got %lld", (long long)k.s.hd);
    if (!strcmp(dtype, "bf16"))
        k.dtype = HY_DTYPE_BF16;
    else if (!strcmp(dtype, "f16"))
        k.dtype = HY_DTYPE_F16;
    else if (!strcmp(dtype, "f32"))
        k.dtype = HY_DTYPE_F32;
    else
        return cli_fail(&cmd, "--dtype: expected bf16, f16 or f32, got '%s'", dtype);
    if (strcmp(rope_form, "scaling") && strcmp(rope_form, "parameters"))
        return cli_fail(&cmd, "--rope-form: expected scaling or parameters, got '%s'", rope_form);
    if (k.untied && k.store_head)
        return cli_fail(&cmd, "--untied and --store-lm-head exclude each other");
    k.seed = (uint64_t)seed;
    if (hyv3) {
        if (k.untied || k.store_head)
            return cli_fail(&cmd, "--untied and --store-lm-head do not apply to %s (its head is "
                            "untied)", pname);
        if (k.s.layers < 2)
            return cli_fail(&cmd, "%s needs --layers 2 or more (layer 0 is dense)", pname);
        hs.layers = k.s.layers, hs.hidden = k.s.hidden, hs.heads = k.s.heads, hs.kv = k.s.kv;
        hs.hd = k.s.hd, hs.ffn = k.s.ffn, hs.vocab = k.s.vocab, hs.shard = k.s.shard;
        hs.moe_ffn = expert_ffn > 0 ? expert_ffn : hs.moe_ffn;
        return hy_hyv3_make(&hs, out, k.seed, k.dtype, !strcmp(rope_form, "parameters"),
                            k.fp8, k.dry_run);
    }
    int rc = make(&k, out, !strcmp(rope_form, "parameters"));
    if (!rc && !k.dry_run)
        HY_LOGI("wrote %s: %lld layers, hidden %lld, heads %lld/%lld x %lld, ffn %lld, vocab %lld, "
                "%s%s%s", out, (long long)k.s.layers, (long long)k.s.hidden, (long long)k.s.heads,
                (long long)k.s.kv, (long long)k.s.hd, (long long)k.s.ffn, (long long)k.s.vocab,
                dtype, k.fp8 ? " (projections fp8, 128x128 blocks)" : "",
                k.untied ? ", untied" : k.store_head ? ", tied + stored lm_head" : ", tied");
    return rc;
}
