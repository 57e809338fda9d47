/* make_hyv3.c: hy_v3 checkpoints for tests and benchmarks (make_hyv3.h). Weights as the
 * dense presets' (make_weights.h), the selection bias float32 as released. */
#include "cli/make_hyv3.h"
#include "cli/make_fp8.h"
#include "cli/make_weights.h"

#include "core/log.h"
#include "core/threads.h"
#include "formats/safetensors.h"
#include "model/hy_v3.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct mkv3 {
    const struct hy_hyv3_shape *s;
    enum hy_dtype dtype;
    uint64_t seed;
    bool fp8;
    struct hy_st_wtensor *t;
    char (*names)[HY_ST_MAX_NAME];
    size_t n;
    struct hy_pool *pool; /* fills a tensor on every CPU */
};

bool hy_hyv3_preset(struct hy_hyv3_shape *s, const char *name)
{
    static const struct {
        const char *name;
        struct hy_hyv3_shape s;
    } presets[] = {
        /* 1 dense + 3 MoE layers; q width 4 x 32 != hidden, as the real model's */
        {"tiny-hyv3", {4, 64, 4, 2, 32, 128, 512, 8, 2, 32, 1, 1, 0}},
        /* Hy-MT2-30B-A3B (model doc 2.3): about 60 GB in bf16 */
        {"30b-a3b", {48, 2048, 32, 4, 128, 6912, 120832, 128, 8, 768, 1, 1, 5000000000LL}},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(name, presets[i].name)) {
            *s = presets[i].s;
            return true;
        }
    return false;
}

static void add(struct mkv3 *k, enum hy_dtype dt, int64_t rows, int64_t cols, const char *fmt,
                int64_t layer, int64_t expert)
{
    struct hy_st_wtensor *t = &k->t[k->n];
    snprintf(k->names[k->n], HY_ST_MAX_NAME, fmt, (long long)layer, (long long)expert);
    t->name = k->names[k->n];
    t->dtype = dt;
    t->n_dims = rows ? 2 : 1;
    t->shape[0] = rows ? rows : cols;
    t->shape[1] = cols;
    k->n++;
}

static void add_swiglu(struct mkv3 *k, int64_t f, const char *p, int64_t i, int64_t e)
{
    char fmt[128];
    const int64_t d = k->s->hidden;
    snprintf(fmt, sizeof fmt, "model.layers.%%lld.%s.gate_proj.weight", p);
    add(k, k->dtype, f, d, fmt, i, e);
    snprintf(fmt, sizeof fmt, "model.layers.%%lld.%s.up_proj.weight", p);
    add(k, k->dtype, f, d, fmt, i, e);
    snprintf(fmt, sizeof fmt, "model.layers.%%lld.%s.down_proj.weight", p);
    add(k, k->dtype, d, f, fmt, i, e);
}

static void list_tensors(struct mkv3 *k)
{
    const struct hy_hyv3_shape *s = k->s;
    const int64_t d = s->hidden;
    struct hy_config c = {.hidden_size = d, .head_dim = s->hd, .num_attention_heads = s->heads,
                          .num_key_value_heads = s->kv};
    struct hy_layer_tensor attn[HY_V3_ATTN_TENSORS]; /* the loaders' table (hy_v3.h) */
    hy_v3_attn_tensors(&c, NULL, attn);
    add(k, k->dtype, s->vocab, d, "model.embed_tokens.weight", 0, 0);
    for (int64_t i = 0; i < s->layers; i++) {
        for (int j = 0; j < HY_V3_ATTN_TENSORS; j++) {
            char fmt[96];
            snprintf(fmt, sizeof fmt, "model.layers.%%lld.%s.weight", attn[j].hf);
            add(k, k->dtype, attn[j].rows, attn[j].cols, fmt, i, 0);
        }
        if (i < s->dense_layers) {
            add_swiglu(k, s->ffn, "mlp", i, 0);
            continue;
        }
        add(k, k->dtype, s->experts, d, "model.layers.%lld.mlp.router.gate.weight", i, 0);
        add(k, HY_DTYPE_F32, 0, s->experts, "model.layers.%lld.mlp.expert_bias", i, 0);
        for (int64_t e = 0; e < s->experts; e++)
            add_swiglu(k, s->moe_ffn, "mlp.experts.%lld", i, e);
        add_swiglu(k, s->moe_ffn * s->shared, "mlp.shared_mlp", i, 0);
    }
    add(k, k->dtype, 0, d, "model.norm.weight", 0, 0);
    add(k, k->dtype, s->vocab, d, "lm_head.weight", 0, 0);
}

static hy_status fill(void *ctx, size_t i, void *buf, size_t nbytes, struct hy_err *err)
{
    struct mkv3 *k = ctx;
    bool done = false;
    hy_status s = k->fp8 ? cli_mk_fp8_fill(k->pool, k->t, i, k->seed, k->s->hidden, k->dtype,
                                           buf, nbytes, &done, err)
                         : HY_OK;
    if (!s && !done)
        cli_mk_fill(k->pool, &k->t[i], k->seed, k->s->hidden, buf, nbytes);
    return s;
}

/* The MoE keys: both forms carry transformers' names; the released one adds Tencent's. */
static json_t *moe_keys(const struct hy_hyv3_shape *s, bool transformers_form)
{
    json_t *c = json_pack("{s:I, s:I, s:I, s:I, s:f, s:b}", "num_experts", (json_int_t)s->experts,
                          "num_experts_per_tok", (json_int_t)s->topk, "num_shared_experts",
                          (json_int_t)s->shared, "moe_intermediate_size", (json_int_t)s->moe_ffn,
                          "router_scaling_factor", 2.826, "enable_moe_fp32_combine", 0);
    if (!c)
        return NULL;
    if (transformers_form) {
        json_t *types = json_array();
        for (int64_t i = 0; i < s->layers; i++)
            json_array_append_new(types, json_string(i < s->dense_layers ? "dense" : "sparse"));
        json_object_set_new(c, "mlp_layer_types", types);
        json_object_set_new(c, "rope_parameters", json_pack("{s:s, s:f}", "rope_type", "default",
                                                            "rope_theta", 11158840.0));
        return c;
    }
    json_t *t = json_pack("{s:I, s:I, s:b, s:b, s:b, s:b, s:b, s:b, s:f, s:n}", "expert_hidden_dim",
                          (json_int_t)s->moe_ffn, "first_k_dense_replace",
                          (json_int_t)s->dense_layers, "moe_router_use_sigmoid", 1,
                          "moe_router_enable_expert_bias", 1, "route_norm", 1, "qk_norm", 1,
                          "enable_lm_head_fp32", 1, "enable_attention_fp32_softmax", 0,
                          "rope_theta", 11158840.0, "rope_scaling");
    if (t)
        json_object_update(c, t);
    json_decref(t);
    return c;
}

/* Special ids laid out as the dense presets' (the tiny test tokenizer's, vocab - 16 on). */
static int64_t first_special(const struct hy_hyv3_shape *s)
{
    return s->vocab >= 1024 ? s->vocab - 210 : s->vocab - 16;
}

json_t *hy_hyv3_config(const struct hy_hyv3_shape *s, enum hy_dtype dt, bool transformers_form,
                       bool fp8)
{
    const int64_t S = first_special(s);
    const char *dts = dt == HY_DTYPE_F32 ? "float32" : dt == HY_DTYPE_F16 ? "float16" : "bfloat16";
    json_t *c = json_pack(
        "{s:[s], s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:f, s:I, s:b, s:b, s:b, s:f, "
        "s:I, s:I, s:I, s:s, s:s}",
        "architectures", "HYV3ForCausalLM", "model_type", "hy_v3", "vocab_size",
        (json_int_t)s->vocab, "hidden_size", (json_int_t)s->hidden, "intermediate_size",
        (json_int_t)s->ffn, "num_hidden_layers", (json_int_t)s->layers, "num_attention_heads",
        (json_int_t)s->heads, "num_key_value_heads", (json_int_t)s->kv, "head_dim",
        (json_int_t)s->hd, "hidden_act", "silu", "rms_norm_eps", 1e-5,
        "max_position_embeddings", (json_int_t)262144, "tie_word_embeddings", 0,
        "attention_bias", 0, "mlp_bias", 0, "initializer_range", 0.006, "bos_token_id",
        (json_int_t)(S + 1), "eos_token_id", (json_int_t)(S + 3), "pad_token_id",
        (json_int_t)(S + 4), "torch_dtype", dts, "transformers_version",
        transformers_form ? "5.17.0" : "4.57.1");
    json_t *m = moe_keys(s, transformers_form);
    if (c && m)
        json_object_update(c, m);
    json_decref(m);
    if (c && fp8)
        json_object_set_new(c, "quantization_config", cli_mk_fp8_config());
    return c;
}

json_t *hy_hyv3_gen_config(const struct hy_hyv3_shape *s)
{
    const int64_t S = first_special(s);
    return json_pack("{s:I, s:I, s:I, s:b, s:f, s:f, s:I}", "bos_token_id", (json_int_t)(S + 1),
                     "eos_token_id", (json_int_t)(S + 3), "pad_token_id", (json_int_t)(S + 4),
                     "do_sample", 1, "temperature", 0.7, "top_p", 1.0, "top_k", (json_int_t)-1);
}

static int write_configs(const struct hy_hyv3_shape *s, const char *dir, enum hy_dtype dt,
                         bool transformers_form, bool fp8)
{
    if (cli_mk_write_json(hy_hyv3_config(s, dt, transformers_form, fp8), dir, "config.json"))
        return 1;
    return cli_mk_write_json(hy_hyv3_gen_config(s), dir, "generation_config.json");
}

static void summary(const struct mkv3 *k)
{
    const struct hy_hyv3_shape *s = k->s;
    uint64_t elems = 0, bytes = 0;
    for (size_t i = 0; i < k->n; i++) {
        uint64_t e = 1;
        for (int d = 0; d < k->t[i].n_dims; d++)
            e *= (uint64_t)k->t[i].shape[d];
        elems += strstr(k->t[i].name, "_scale_inv") ? 0 : e; /* --fp8 scales: not parameters */
        bytes += e * hy_dtype_size(k->t[i].dtype);
    }
    uint64_t expert = 3 * (uint64_t)s->hidden * (uint64_t)s->moe_ffn;
    uint64_t idle = (uint64_t)(s->layers - s->dense_layers) * (uint64_t)(s->experts - s->topk) *
                    expert;
    printf("%zu tensors, %llu parameters (%llu active a token), %llu bytes\n", k->n,
           (unsigned long long)elems, (unsigned long long)(elems - idle),
           (unsigned long long)bytes);
}

/* twice the tensors: with --fp8 each projection gains its scale */
static size_t list_cap(const struct hy_hyv3_shape *s)
{
    return 2 * (size_t)(s->layers * (16 + 3 * s->experts) + 3);
}

static struct mkv3 *mkv3_create(const struct hy_hyv3_shape *s, enum hy_dtype dtype, uint64_t seed,
                                bool fp8)
{
    const size_t cap = list_cap(s);
    struct mkv3 *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    *k = (struct mkv3){.s = s, .dtype = dtype, .seed = seed, .fp8 = fp8};
    k->t = calloc(cap, sizeof *k->t);
    k->names = calloc(cap, sizeof *k->names);
    if (k->t && k->names) {
        list_tensors(k);
        HY_ASSERT(k->n <= cap);
        if (!fp8 || cli_mk_fp8_list(k->t, k->names, &k->n, cap))
            return k;
    }
    free(k->t);
    free(k->names);
    free(k);
    return NULL;
}

bool hy_hyv3_list(const struct hy_hyv3_shape *s, enum hy_dtype dtype, struct hy_st_wtensor **t,
                  char (**names)[HY_ST_MAX_NAME], size_t *n)
{
    struct mkv3 *k = mkv3_create(s, dtype, 0, false);
    if (!k)
        return false;
    *t = k->t;
    *names = k->names;
    *n = k->n;
    free(k);
    return true;
}

int hy_hyv3_make(const struct hy_hyv3_shape *s, const char *dir, uint64_t seed,
                 enum hy_dtype dtype, bool transformers_form, bool fp8, bool dry_run)
{
    if (!dry_run && mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "hymt make-test-model: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    struct mkv3 *k = mkv3_create(s, dtype, seed, fp8);
    if (!k) {
        fprintf(stderr, "hymt make-test-model: out of memory\n");
        return 1;
    }
    int rc = 0;
    struct hy_err err = {{0}};
    if (!dry_run && hy_pool_create(&k->pool, 0, &err)) {
        fprintf(stderr, "hymt make-test-model: %s\n", err.msg);
        rc = 1;
    }
    if (!dry_run && !rc) {
        char p[4096];
        snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
        unlink(p);
        snprintf(p, sizeof p, "%s/model.safetensors", dir);
        unlink(p);
        rc = write_configs(s, dir, dtype, transformers_form, fp8);
        if (!rc && hy_st_write(dir, k->t, k->n, (uint64_t)s->shard, fill, k, &err)) {
            fprintf(stderr, "hymt make-test-model: %s\n", err.msg);
            rc = 1;
        }
    }
    if (!rc)
        summary(k);
    hy_pool_destroy(k->pool);
    free(k->t);
    free(k->names);
    free(k);
    return rc;
}
