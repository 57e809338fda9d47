/* quant_config_test.c: quantization_config (compressed-tensors fp8 in every variant model
 * doc 6.1 leaves open, GPTQ) and hf_quant_config.json: accepted forms, ignore matching
 * (exact, re:, wildcard, class), and every rejection with its message. */
#include "formats/quant_config.h"

#include "test.h"

#include <stdio.h>
#include <string.h>

/* The AngelSlim writer's shape (doc 6.1), with the ignore list under `ign_key`. */
static void angelslim(char *buf, size_t cap, const char *ign_key, const char *w_strategy,
                      const char *act)
{
    snprintf(buf, cap,
             "{\"hidden_size\": 64, \"quantization_config\": {\"quant_method\": "
             "\"compressed-tensors\", \"format\": \"naive-quantized\", \"quantization_status\": "
             "\"compressed\", \"kv_cache_scheme\": null, \"%s\": [\"lm_head\", "
             "\"model.layers.0.mlp.down_proj\", \"re:.*layers\\\\.1\\\\.self_attn\\\\.[qk]_proj$\"],"
             " \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": "
             "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"%s\", \"dynamic\": false, "
             "\"symmetric\": true}%s%s}}}}",
             ign_key, w_strategy, act ? ", \"input_activations\": " : "", act ? act : "");
}

#define STATIC_ACT "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"tensor\", \"dynamic\": false}"
#define DYN_ACT "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"token\", \"dynamic\": true}"

static void test_fp8(void)
{
    char buf[2048];
    struct hy_quant_config q;
    struct hy_err e = {{0}};
    const char *keys[] = {"ignore", "ignored_layers"};
    for (int k = 0; k < 2; k++) {
        angelslim(buf, sizeof buf, keys[k], "tensor", STATIC_ACT);
        CHECKF(hy_quant_config_parse(&q, buf, NULL, "t", &e) == HY_OK, "%s", e.msg);
        CHECK(q.method == HY_QUANT_FP8 && q.w_per_tensor && !q.w_per_channel && q.act_static);
        CHECK(!q.kv_cache_scheme && q.n_ignore == 3);
        CHECK(hy_quant_config_ignored(&q, "lm_head", true));
        CHECK(hy_quant_config_ignored(&q, "model.layers.0.mlp.down_proj", true));
        CHECK(!hy_quant_config_ignored(&q, "model.layers.0.mlp.down_proj.x", true)); /* exact */
        CHECK(!hy_quant_config_ignored(&q, "model.layers.1.mlp.down_proj", true));
        CHECK(hy_quant_config_ignored(&q, "model.layers.1.self_attn.q_proj", true));  /* re: */
        CHECK(hy_quant_config_ignored(&q, "model.layers.1.self_attn.k_proj", true));
        CHECK(!hy_quant_config_ignored(&q, "model.layers.1.self_attn.v_proj", true));
        CHECK(!hy_quant_config_ignored(&q, "model.layers.11.self_attn.q_proj", true)); /* \. is a dot */
        CHECK(!hy_quant_config_ignored(&q, "model.layers.1.self_attn.q_proj_x", true)); /* $ */
        hy_quant_config_free(&q);
        CHECK(q.n_ignore == 0 && q.ignore == NULL && q.method == HY_QUANT_NONE);
    }
    /* per channel, dynamic or absent activations, float-quantized, kv scheme */
    angelslim(buf, sizeof buf, "ignore", "channel", DYN_ACT);
    CHECKF(hy_quant_config_parse(&q, buf, NULL, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(q.w_per_channel && !q.w_per_tensor && !q.act_static);
    hy_quant_config_free(&q);
    angelslim(buf, sizeof buf, "ignore", "channel", NULL);
    CHECKF(hy_quant_config_parse(&q, buf, NULL, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(q.w_per_channel && !q.act_static);
    hy_quant_config_free(&q);
    angelslim(buf, sizeof buf, "ignore", "tensor", "null");
    CHECKF(hy_quant_config_parse(&q, buf, NULL, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(!q.act_static);
    hy_quant_config_free(&q);
    const char *ct2 =
        "{\"compression_config\": {\"quant_method\": \"compressed-tensors\", \"format\": "
        "\"float-quantized\", \"kv_cache_scheme\": {\"num_bits\": 8, \"type\": \"float\"}, "
        "\"ignore\": [\"re:.*down_proj\", \"Linear\"], \"config_groups\": {\"a\": {\"weights\": "
        "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"tensor\"}}, \"b\": {\"weights\": "
        "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"channel\"}}}}}";
    CHECKF(hy_quant_config_parse(&q, ct2, NULL, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(q.w_per_tensor && q.w_per_channel && q.kv_cache_scheme);
    CHECK(hy_quant_config_ignored(&q, "model.layers.3.mlp.down_proj", false)); /* re.match from start */
    CHECK(hy_quant_config_ignored(&q, "x", true) && !hy_quant_config_ignored(&q, "x", false)); /* class */
    hy_quant_config_free(&q);
    /* hf_quant_config.json: merged exclude list with wildcards; alone it means FP8 */
    const char *hf = "{\"quantization\": {\"exclude_modules\": [\"model.layers.1.mlp*\"], "
                     "\"kv_cache_quant_algo\": null, \"quant_algo\": \"FP8\"}}";
    angelslim(buf, sizeof buf, "ignored_layers", "tensor", STATIC_ACT);
    CHECKF(hy_quant_config_parse(&q, buf, hf, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(q.n_ignore == 4 && hy_quant_config_ignored(&q, "model.layers.1.mlp.up_proj", true));
    CHECK(!hy_quant_config_ignored(&q, "model.layers.2.mlp.up_proj", true));
    CHECK(!strcmp(q.source, "compressed-tensors"));
    hy_quant_config_free(&q);
    CHECKF(hy_quant_config_parse(&q, "{\"hidden_size\": 8}", hf, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(q.method == HY_QUANT_FP8 && !strcmp(q.source, "hf_quant_config") && q.n_ignore == 1);
    hy_quant_config_free(&q);
    /* no quantization at all */
    CHECK(hy_quant_config_parse(&q, "{\"quantization_config\": null}", NULL, "t", &e) == HY_OK);
    CHECK(q.method == HY_QUANT_NONE && q.n_ignore == 0);
    hy_quant_config_free(&q);
}

static void test_gptq(void)
{
    struct hy_quant_config q;
    struct hy_err e = {{0}};
    CHECKF(hy_quant_config_parse(&q, "{\"quantization_config\": {\"quant_method\": \"gptq\", "
                                 "\"bits\": 4, \"group_size\": 128, \"desc_act\": true, "
                                 "\"sym\": false}}", NULL, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(q.method == HY_QUANT_GPTQ && q.bits == 4 && q.group_size == 128 && q.desc_act &&
          !q.sym && q.zero_minus_one);
    hy_quant_config_free(&q);
    CHECKF(hy_quant_config_parse(&q, "{\"quantization_config\": {\"quant_method\": \"gptq\", "
                                 "\"bits\": 4, \"group_size\": -1, \"checkpoint_format\": "
                                 "\"gptq_v2\"}}", NULL, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(q.group_size == -1 && !q.desc_act && q.sym && !q.zero_minus_one);
    hy_quant_config_free(&q);
}

/* quant_method "fp8": transformers' FineGrainedFP8Config (DeepSeek-V3 / Hy3 form) and
 * AutoFP8's per-tensor form. */
static void test_fp8_method(void)
{
    struct hy_quant_config q;
    struct hy_err e = {{0}};
    CHECKF(hy_quant_config_parse(&q, "{\"quantization_config\": {\"quant_method\": \"fp8\", "
                                 "\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", "
                                 "\"weight_block_size\": [128, 64], \"modules_to_not_convert\": "
                                 "[\"mlp.router.gate\", \"model.layers.*.mlp.gate\"]}}",
                                 NULL, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(q.method == HY_QUANT_FP8 && !strcmp(q.source, "fp8") && q.block_rows == 128 &&
          q.block_cols == 64 && !q.act_static && !q.w_per_tensor && !q.w_per_channel);
    CHECK(hy_quant_config_ignored(&q, "lm_head", true)); /* always added */
    CHECK(hy_quant_config_ignored(&q, "model.layers.3.mlp.router.gate", true)); /* substring */
    CHECK(hy_quant_config_ignored(&q, "model.layers.12.mlp.gate", true));       /* digits as * */
    CHECK(!hy_quant_config_ignored(&q, "model.layers.12.mlp.up_proj", true));
    CHECK(!hy_quant_config_ignored(&q, "model.layers.1.self_attn.q_proj", true));
    hy_quant_config_free(&q);
    /* AutoFP8: no blocks, static activations; vLLM's ignored_layers; ue8m0 scales */
    CHECKF(hy_quant_config_parse(&q, "{\"quantization_config\": {\"quant_method\": \"fp8\", "
                                 "\"activation_scheme\": \"static\", \"weight_block_size\": "
                                 "null, \"ignored_layers\": [\"model.layers.0.mlp.down_proj\"]}}",
                                 NULL, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(q.block_rows == 0 && q.w_per_tensor && q.act_static);
    CHECK(hy_quant_config_ignored(&q, "model.layers.0.mlp.down_proj", true));
    CHECK(!hy_quant_config_ignored(&q, "model.layers.10.mlp.down_proj", true)); /* exact */
    hy_quant_config_free(&q);
    CHECKF(hy_quant_config_parse(&q, "{\"quantization_config\": {\"quant_method\": \"fp8\", "
                                 "\"scale_fmt\": \"ue8m0\", \"weight_block_size\": [1, 1]}}",
                                 NULL, "t", &e) == HY_OK, "%s", e.msg);
    CHECK(q.block_rows == 1 && q.block_cols == 1 && !q.act_static);
    hy_quant_config_free(&q);
}

static void bad(const char *cfg, const char *hf, hy_status want, const char *what, int line)
{
    struct hy_quant_config q;
    struct hy_err e = {{0}};
    hy_status s = hy_quant_config_parse(&q, cfg, hf, "cfg.json", &e);
    CHECKF(s == want, "line %d: status %s, want %s (%s)", line, hy_status_str(s),
           hy_status_str(want), e.msg);
    CHECKF(strstr(e.msg, what) && strstr(e.msg, "cfg.json"), "line %d: message '%s' lacks '%s'",
           line, e.msg, what);
    CHECK(q.method == HY_QUANT_NONE && q.ignore == NULL);
}

#define CT(body) "{\"quantization_config\": {\"quant_method\": \"compressed-tensors\", " body "}}"
#define W8(strat) "\"weights\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"" strat "\"}"
#define GROUP(x) "\"config_groups\": {\"g\": {" x "}}"

static void test_bad(void)
{
    bad("[1]", NULL, HY_E_FORMAT, "JSON object", __LINE__);
    bad("{\"quantization_config\": 3}", NULL, HY_E_FORMAT, "must be an object", __LINE__);
    bad("{\"quantization_config\": {}}", NULL, HY_E_NOTFOUND, "quant_method", __LINE__);
    bad("{\"quantization_config\": {\"quant_method\": \"awq\"}}", NULL, HY_E_UNSUPPORTED,
        "quant_method 'awq'", __LINE__);
#define FP8(body) "{\"quantization_config\": {\"quant_method\": \"fp8\"" body "}}"
    bad(FP8(", \"activation_scheme\": \"tensorwise\""), NULL, HY_E_UNSUPPORTED,
        "activation_scheme 'tensorwise'", __LINE__);
    bad(FP8(", \"fmt\": \"e5m2\""), NULL, HY_E_UNSUPPORTED, "fmt 'e5m2'", __LINE__);
    bad(FP8(", \"scale_fmt\": \"e8m0x\""), NULL, HY_E_UNSUPPORTED, "scale_fmt", __LINE__);
    bad(FP8(", \"weight_block_size\": [128]"), NULL, HY_E_FORMAT, "[rows, cols]", __LINE__);
    bad(FP8(", \"weight_block_size\": 128"), NULL, HY_E_FORMAT, "[rows, cols]", __LINE__);
    bad(FP8(", \"weight_block_size\": [128, 0]"), NULL, HY_E_RANGE, "weight_block_size[1]",
        __LINE__);
    bad(FP8(", \"weight_block_size\": [128.5, 128]"), NULL, HY_E_RANGE, "weight_block_size[0]",
        __LINE__);
    bad(FP8(", \"weight_block_size\": [128, 70000]"), NULL, HY_E_RANGE, "weight_block_size[1]",
        __LINE__);
    bad(FP8(", \"activation_scheme\": \"static\", \"weight_block_size\": [128, 128]"), NULL,
        HY_E_UNSUPPORTED, "static activations", __LINE__);
    bad(FP8(", \"modules_to_not_convert\": \"lm_head\""), NULL, HY_E_FORMAT,
        "modules_to_not_convert must be an array", __LINE__);
    bad(CT("\"format\": \"pack-quantized\", " GROUP(W8("tensor"))), NULL, HY_E_UNSUPPORTED,
        "format 'pack-quantized'", __LINE__);
    bad(CT("\"format\": \"naive-quantized\""), NULL, HY_E_FORMAT, "config_groups", __LINE__);
    bad(CT("\"config_groups\": {}"), NULL, HY_E_FORMAT, "config_groups", __LINE__);
    bad(CT("\"config_groups\": {\"g\": 1}"), NULL, HY_E_FORMAT, "config_groups.g", __LINE__);
    bad(CT(GROUP("\"targets\": [\"Linear\"]")), NULL, HY_E_FORMAT, "missing 'weights'", __LINE__);
    bad(CT(GROUP("\"weights\": {\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\"}")),
        NULL, HY_E_UNSUPPORTED, "4-bit int", __LINE__);
    bad(CT(GROUP(W8("block"))), NULL, HY_E_UNSUPPORTED, "strategy 'block'", __LINE__);
    bad(CT(GROUP("\"weights\": {\"num_bits\": 8, \"type\": \"float\"}")), NULL, HY_E_NOTFOUND,
        "strategy", __LINE__);
    bad(CT(GROUP("\"weights\": {\"num_bits\": \"8\", \"type\": \"float\", \"strategy\": "
                 "\"tensor\"}")), NULL, HY_E_FORMAT, "num_bits", __LINE__);
    bad(CT(GROUP("\"weights\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"tensor\", "
                 "\"dynamic\": true}")), NULL, HY_E_UNSUPPORTED, "dynamic weight", __LINE__);
    bad(CT(GROUP(W8("tensor") ", \"input_activations\": {\"num_bits\": 8, \"type\": \"float\", "
                 "\"strategy\": \"channel\", \"dynamic\": false}")),
        NULL, HY_E_UNSUPPORTED, "static strategy 'channel'", __LINE__);
    bad(CT(GROUP(W8("tensor") ", \"input_activations\": {\"num_bits\": 4, \"type\": \"float\", "
                 "\"strategy\": \"tensor\"}")), NULL, HY_E_UNSUPPORTED, "input_activations: 4-bit",
        __LINE__);
    bad(CT(GROUP(W8("tensor") ", \"output_activations\": {\"num_bits\": 8}")), NULL,
        HY_E_UNSUPPORTED, "output_activations", __LINE__);
    bad(CT("\"ignore\": \"lm_head\", " GROUP(W8("tensor"))), NULL, HY_E_FORMAT,
        "ignore must be an array", __LINE__);
    bad(CT("\"ignored_layers\": [\"a\", 5], " GROUP(W8("tensor"))), NULL, HY_E_FORMAT,
        "ignored_layers[1] must be a string", __LINE__);
    bad(CT("\"ignore\": [\"\"], " GROUP(W8("tensor"))), NULL, HY_E_RANGE, "ignore[0]", __LINE__);
    bad(CT("\"ignore\": [\"re:(unclosed\"], " GROUP(W8("tensor"))), NULL, HY_E_FORMAT,
        "bad regex", __LINE__);
    const char *ok = CT(GROUP(W8("tensor")));
    bad(ok, "{\"quantization\": {\"quant_algo\": \"NVFP4\"}}", HY_E_UNSUPPORTED, "NVFP4", __LINE__);
    bad(ok, "{\"quantization\": 1}", HY_E_FORMAT, "hf_quant_config.json", __LINE__);
    bad(ok, "{\"quantization\": {}}", HY_E_NOTFOUND, "quant_algo", __LINE__);
    bad(ok, "{\"quantization\": {\"quant_algo\": \"FP8\", \"exclude_modules\": {}}}", HY_E_FORMAT,
        "exclude_modules", __LINE__);
    bad(ok, "{\"quantization\": ", HY_E_FORMAT, "hf_quant_config.json", __LINE__);
    bad("{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 3}}", NULL,
        HY_E_UNSUPPORTED, "3 bits", __LINE__);
    bad("{\"quantization_config\": {\"quant_method\": \"gptq\"}}", NULL, HY_E_NOTFOUND, "bits",
        __LINE__);
    bad("{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 0}}",
        NULL, HY_E_RANGE, "group_size", __LINE__);
    bad("{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": -2}}",
        NULL, HY_E_RANGE, "group_size", __LINE__);
    bad("{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4, \"checkpoint_format\":"
        " \"marlin\"}}", NULL, HY_E_UNSUPPORTED, "marlin", __LINE__);
    /* too many entries */
    static char big[HY_QUANT_MAX_IGNORE * 8 + 512];
    char *p = big + sprintf(big, "{\"quantization_config\": {\"quant_method\": \"compressed-tensors\","
                                 " " GROUP(W8("tensor")) ", \"ignore\": [");
    for (int i = 0; i <= HY_QUANT_MAX_IGNORE; i++)
        p += sprintf(p, "%s\"m%d\"", i ? "," : "", i % 10);
    sprintf(p, "]}}");
    bad(big, NULL, HY_E_RANGE, "ignore entries", __LINE__);
}

int main(void)
{
    test_fp8();
    test_gptq();
    test_fp8_method();
    test_bad();
    return test_result();
}
