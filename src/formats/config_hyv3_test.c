/* config_hyv3_test.c: hy_v3 config.json as Tencent releases it (Hy-MT2-30B-A3B's values,
 * model doc 2.3) and as transformers >= 5.6 writes it, their defaults, and every invalid or
 * contradictory value refused with the key named. */
#include "formats/config.h"

#include "test.h"

#include <stdio.h>
#include <string.h>

#define WHAT "hyv3/config.json"

/* The released form: Tencent's keys (first_k_dense_replace, expert_hidden_dim, route_norm,
 * ...), top-level rope_theta, no mlp_layer_types. */
static const char released[] =
    "{\"architectures\": [\"HYV3ForCausalLM\"], \"model_type\": \"hy_v3\", "
    "\"vocab_size\": 120832, \"hidden_size\": 2048, \"intermediate_size\": 6912, "
    "\"num_hidden_layers\": 48, \"num_attention_heads\": 32, \"num_key_value_heads\": 4, "
    "\"head_dim\": 128, \"hidden_act\": \"silu\", \"rms_norm_eps\": 1e-05, "
    "\"rope_theta\": 11158840.0, \"rope_scaling\": null, \"max_position_embeddings\": 262144, "
    "\"num_experts\": 128, \"num_experts_per_tok\": 8, \"num_shared_experts\": 1, "
    "\"moe_intermediate_size\": 768, \"expert_hidden_dim\": 768, \"first_k_dense_replace\": 1, "
    "\"moe_router_use_sigmoid\": true, \"moe_router_enable_expert_bias\": true, "
    "\"route_norm\": true, \"router_scaling_factor\": 2.826, \"qk_norm\": true, "
    "\"attention_bias\": false, \"tie_word_embeddings\": false, \"enable_lm_head_fp32\": true, "
    "\"enable_attention_fp32_softmax\": false, \"enable_moe_fp32_combine\": false, "
    "\"bos_token_id\": 120000, \"eos_token_id\": 120025, \"pad_token_id\": 120002, "
    "\"torch_dtype\": \"bfloat16\"}";

/* Parses `json` with the first occurrence of `from` replaced by `to`. */
static hy_status parse_edit(struct hy_config *c, const char *json, const char *from,
                            const char *to, struct hy_err *err)
{
    static char buf[8192];
    const char *at = from ? strstr(json, from) : NULL;
    if (from && !at) {
        fprintf(stderr, "edit: '%s' not in the text\n", from);
        return HY_E_INVAL;
    }
    if (!at)
        snprintf(buf, sizeof buf, "%s", json);
    else
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - json), json, to, at + strlen(from));
    return hy_config_parse(c, buf, strlen(buf), WHAT, err);
}

static void test_released(void)
{
    struct hy_config c;
    struct hy_err err = {{0}};
    CHECKF(hy_config_parse(&c, released, strlen(released), WHAT, &err) == HY_OK, "%s", err.msg);
    CHECK(c.arch == HY_ARCH_HYV3 && c.qk_norm_before_rope && c.use_qk_norm);
    CHECK(!strcmp(c.architecture, "HYV3ForCausalLM"));
    CHECK(c.num_experts == 128 && c.num_experts_per_tok == 8 && c.num_shared_experts == 1);
    CHECK(c.moe_intermediate_size == 768 && c.intermediate_size == 6912);
    CHECK(c.router_scaling_factor == 2.826 && c.moe_expert_bias);
    CHECK(c.enable_lm_head_fp32 && !c.enable_moe_fp32_combine);
    CHECK(c.num_key_value_heads == 4 && c.head_dim == 128 && !c.tie_word_embeddings);
    CHECK(c.rope_base == 11158840.0 && !strcmp(c.rope_type, "default"));
    CHECK(c.layer_moe[0] == 0 && c.layer_moe[1] == 1 && c.layer_moe[47] == 1);
    CHECK(c.n_moe_layers == 47 && c.max_position_embeddings == 262144);
    CHECK(c.n_eos == 1 && c.eos_token_id[0] == 120025);
}

/* transformers >= 5.6: mlp_layer_types and rope_parameters, no Tencent keys. */
static void test_transformers_form(void)
{
    struct hy_config c;
    struct hy_err err = {{0}};
    const char *j =
        "{\"model_type\": \"hy_v3\", \"vocab_size\": 512, \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, "
        "\"num_key_value_heads\": 2, \"head_dim\": 32, \"num_experts\": 8, "
        "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, "
        "\"mlp_layer_types\": [\"dense\", \"sparse\", \"dense\", \"sparse\"], "
        "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 5000.0}}";
    CHECKF(hy_config_parse(&c, j, strlen(j), WHAT, &err) == HY_OK, "%s", err.msg);
    CHECK(c.layer_moe[0] == 0 && c.layer_moe[1] == 1 && c.layer_moe[2] == 0 && c.layer_moe[3]);
    CHECK(c.n_moe_layers == 2 && c.rope_base == 5000.0);
    /* transformers' defaults where the file is silent */
    CHECK(c.num_shared_experts == 1 && c.router_scaling_factor == 2.826);
    CHECK(c.moe_expert_bias && c.enable_moe_fp32_combine);
    CHECK(c.max_position_embeddings == 131072);
    const char *d = "{\"model_type\": \"hy_v3\", \"vocab_size\": 512, \"hidden_size\": 64, "
                    "\"intermediate_size\": 128, \"num_hidden_layers\": 3, "
                    "\"num_attention_heads\": 16, \"num_experts\": 8, \"expert_hidden_dim\": 16}";
    CHECKF(hy_config_parse(&c, d, strlen(d), WHAT, &err) == HY_OK, "%s", err.msg);
    CHECK(c.head_dim == 128 && c.num_key_value_heads == 8 && c.num_experts_per_tok == 8);
    CHECK(c.moe_intermediate_size == 16 && c.rope_theta == 11158840.0);
    CHECK(c.layer_moe[0] == 0 && c.layer_moe[1] && c.layer_moe[2] && c.n_moe_layers == 2);
}

/* A 3-layer cut of Hy-MT2-30B-A3B as transformers 5.17 saves it: the released config.json
 * loaded with num_hidden_layers=3 (from_pretrained sets the override after __post_init__
 * has filled mlp_layer_types for 48 layers) and written by save_pretrained: to_diff_dict
 * keeps every HYV3Config field and every extra key of the file (Tencent's), rope_theta and
 * rope_scaling become rope_parameters, torch_dtype becomes dtype, keys sorted, indent 2. */
static const char tf517_cut[] =
    "{\n  \"architectures\": [\n    \"HYV3ForCausalLM\"\n  ],\n"
    "  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n  \"bos_token_id\": 120000,\n"
    "  \"dtype\": \"bfloat16\",\n  \"enable_attention_fp32_softmax\": false,\n"
    "  \"enable_lm_head_fp32\": true,\n  \"enable_moe_fp32_combine\": false,\n"
    "  \"eos_token_id\": 120025,\n  \"expert_hidden_dim\": 768,\n"
    "  \"first_k_dense_replace\": 1,\n  \"head_dim\": 128,\n  \"hidden_act\": \"silu\",\n"
    "  \"hidden_size\": 2048,\n  \"initializer_range\": 0.006,\n"
    "  \"intermediate_size\": 6912,\n  \"max_position_embeddings\": 262144,\n"
    "  \"mlp_bias\": false,\n  \"mlp_layer_types\": [\n    \"dense\",\n%s  ],\n"
    "  \"model_type\": \"hy_v3\",\n  \"moe_intermediate_size\": 768,\n"
    "  \"moe_router_enable_expert_bias\": true,\n  \"moe_router_use_sigmoid\": true,\n"
    "  \"num_attention_heads\": 32,\n  \"num_experts\": 128,\n  \"num_experts_per_tok\": 8,\n"
    "  \"num_hidden_layers\": 3,\n  \"num_key_value_heads\": 4,\n  \"num_shared_experts\": 1,\n"
    "  \"output_router_logits\": false,\n  \"pad_token_id\": 120002,\n  \"qk_norm\": true,\n"
    "  \"rms_norm_eps\": 1e-05,\n  \"rope_parameters\": {\n    \"rope_theta\": 11158840.0,\n"
    "    \"rope_type\": \"default\"\n  },\n  \"route_norm\": true,\n"
    "  \"router_scaling_factor\": 2.826,\n  \"tie_word_embeddings\": false,\n"
    "  \"transformers_version\": \"5.17.0\",\n  \"use_cache\": true,\n"
    "  \"vocab_size\": 120832\n}\n";

/* mlp_layer_types longer than the layers: read up to num_hidden_layers, as transformers. */
static void test_longer_layer_types(void)
{
    static char sparse[47 * 16], j[8192];
    size_t n = 0;
    for (int i = 1; i < 48; i++)
        n += (size_t)snprintf(sparse + n, sizeof sparse - n, "    \"sparse\"%s\n",
                              i < 47 ? "," : "");
    snprintf(j, sizeof j, tf517_cut, sparse);
    struct hy_config c;
    struct hy_err err = {{0}};
    CHECKF(hy_config_parse(&c, j, strlen(j), WHAT, &err) == HY_OK, "%s", err.msg);
    CHECK(c.num_hidden_layers == 3 && c.n_moe_layers == 2);
    CHECK(c.layer_moe[0] == 0 && c.layer_moe[1] == 1 && c.layer_moe[2] == 1);
    CHECK(c.rope_base == 11158840.0 && c.num_experts == 128 && c.moe_intermediate_size == 768);
    /* the entries past the layers are neither compared with first_k_dense_replace nor
     * read as layer kinds, but must be strings (list[str]) */
    char *tail = strstr(j, "\"sparse\"\n  ]");
    CHECK(tail != NULL);
    if (!tail)
        return;
    memcpy(tail, "\"dense\" ", 8);
    CHECKF(hy_config_parse(&c, j, strlen(j), WHAT, &err) == HY_OK, "%s", err.msg);
    CHECK(c.n_moe_layers == 2);
    memcpy(tail, "12345678", 8);
    CHECK(hy_config_parse(&c, j, strlen(j), WHAT, &err) == HY_E_FORMAT);
    CHECKF(strstr(err.msg, "mlp_layer_types") && strstr(err.msg, "item 47"), "%s", err.msg);
    /* a dense layer past first_k_dense_replace within the layers still disagrees */
    snprintf(j, sizeof j, tf517_cut, "    \"dense\",\n    \"sparse\"\n");
    CHECK(hy_config_parse(&c, j, strlen(j), WHAT, &err) == HY_E_FORMAT);
    CHECKF(strstr(err.msg, "disagree at layer 1"), "%s", err.msg);
    /* shorter than the layers: transformers fails building layer 2; so does hymt */
    snprintf(j, sizeof j, tf517_cut, "    \"sparse\"\n");
    CHECK(hy_config_parse(&c, j, strlen(j), WHAT, &err) == HY_E_FORMAT);
    CHECKF(strstr(err.msg, "at least 3"), "%s", err.msg);
}

static void test_rejected(void)
{
    const struct {
        const char *from, *to, *key;
        hy_status want;
    } bad[] = {
        {"\"num_experts\": 128", "\"num_experts\": 0", "num_experts", HY_E_RANGE},
        {"\"num_experts\": 128", "\"num_experts\": 100000", "num_experts", HY_E_RANGE},
        {"\"num_experts\": 128, ", "", "num_experts", HY_E_NOTFOUND},
        {"\"num_experts_per_tok\": 8", "\"num_experts_per_tok\": 129", "num_experts_per_tok",
         HY_E_RANGE},
        {"\"num_experts_per_tok\": 8", "\"num_experts_per_tok\": 0", "num_experts_per_tok",
         HY_E_RANGE},
        {"\"num_shared_experts\": 1", "\"num_shared_experts\": 0", "num_shared_experts",
         HY_E_UNSUPPORTED},
        {"\"num_shared_experts\": 1", "\"num_shared_experts\": -2", "num_shared_experts",
         HY_E_RANGE},
        {"\"expert_hidden_dim\": 768", "\"expert_hidden_dim\": 512", "expert_hidden_dim",
         HY_E_FORMAT},
        {"\"moe_intermediate_size\": 768, \"expert_hidden_dim\": 768, ", "",
         "moe_intermediate_size", HY_E_NOTFOUND},
        {"\"moe_intermediate_size\": 768", "\"moe_intermediate_size\": \"768\"",
         "moe_intermediate_size", HY_E_FORMAT},
        {"\"first_k_dense_replace\": 1", "\"first_k_dense_replace\": 49",
         "first_k_dense_replace", HY_E_RANGE},
        {"\"first_k_dense_replace\": 1",
         "\"first_k_dense_replace\": 1, \"mlp_layer_types\": [\"dense\"]", "mlp_layer_types",
         HY_E_FORMAT},
        {"\"route_norm\": true", "\"route_norm\": false", "route_norm", HY_E_UNSUPPORTED},
        {"\"moe_router_use_sigmoid\": true", "\"moe_router_use_sigmoid\": false",
         "moe_router_use_sigmoid", HY_E_UNSUPPORTED},
        {"\"qk_norm\": true", "\"qk_norm\": false", "qk_norm", HY_E_UNSUPPORTED},
        {"\"router_scaling_factor\": 2.826", "\"router_scaling_factor\": 0",
         "router_scaling_factor", HY_E_RANGE},
        {"\"router_scaling_factor\": 2.826", "\"router_scaling_factor\": -1",
         "router_scaling_factor", HY_E_RANGE},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"dynamic\", \"alpha\": 1000.0}",
         "rope type", HY_E_UNSUPPORTED},
        {"\"num_hidden_layers\": 48", "\"num_hidden_layers\": 5000", "num_hidden_layers",
         HY_E_RANGE},
        {"\"model_type\": \"hy_v3\"", "\"model_type\": \"hy_v4\"", "model_type",
         HY_E_UNSUPPORTED},
        {"\"HYV3ForCausalLM\"", "\"HunYuanDenseV1ForCausalLM\"", "architectures",
         HY_E_UNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct hy_config c;
        memset(&c, 0x5a, sizeof c);
        struct hy_err err = {{0}};
        hy_status s = parse_edit(&c, released, bad[i].from, bad[i].to, &err);
        CHECKF(s == bad[i].want, "case %zu (%s): status %d, want %d: %s", i, bad[i].key, s,
               bad[i].want, err.msg);
        CHECKF(strstr(err.msg, bad[i].key) && strstr(err.msg, WHAT), "case %zu: '%s'", i, err.msg);
        CHECKF(((unsigned char *)&c)[0] == 0x5a, "case %zu: config changed on error", i);
    }
    /* mlp_layer_types and first_k_dense_replace saying different things */
    struct hy_config c;
    struct hy_err err = {{0}};
    const char *j = "{\"model_type\": \"hy_v3\", \"vocab_size\": 512, \"hidden_size\": 64, "
                    "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
                    "\"num_attention_heads\": 4, \"num_experts\": 8, \"expert_hidden_dim\": 16, "
                    "\"first_k_dense_replace\": 2, \"mlp_layer_types\": [\"dense\", \"sparse\"]}";
    CHECK(hy_config_parse(&c, j, strlen(j), WHAT, &err) == HY_E_FORMAT);
    CHECKF(strstr(err.msg, "disagree at layer 1"), "%s", err.msg);
}

int main(void)
{
    test_released();
    test_transformers_form();
    test_longer_layer_types();
    test_rejected();
    return test_result();
}
