/* config_test.c: the real 7B config.json, the rope_parameters form, defaults, and each
 * invalid value rejected with the file and the key named. */
#include "formats/config.h"

#include "core/json.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WHAT "hunyuan/config.json"

/* Hunyuan-7B config.json (model doc 2.1), every key including the unused ones. */
/* clang-format off */
static const char real_7b[] =
    "{\n"
    "  \"add_classification_head\": false,\n"
    "  \"architectures\": [\"HunYuanDenseV1ForCausalLM\"],\n"
    "  \"attention_bias\": false,\n"
    "  \"attention_dropout\": 0.1,\n"
    "  \"attention_head_dim\": 128,\n"
    "  \"bos_token_id\": 1,\n"
    "  \"cla_share_factor\": 2,\n"
    "  \"class_num\": 0,\n"
    "  \"dense_list\": [4096, 0],\n"
    "  \"eod_token_id\": 127967,\n"
    "  \"eos_token_id\": 127960,\n"
    "  \"head_dim\": 128,\n"
    "  \"hidden_act\": \"silu\",\n"
    "  \"hidden_size\": 4096,\n"
    "  \"im_end_id\": 5,\n"
    "  \"im_newline_id\": 11,\n"
    "  \"im_start_id\": 4,\n"
    "  \"initializer_range\": 0.02,\n"
    "  \"intermediate_size\": 14336,\n"
    "  \"mask_init_id\": 12,\n"
    "  \"max_position_embeddings\": 32768,\n"
    "  \"mlp_bias\": false,\n"
    "  \"model_type\": \"hunyuan_v1_dense\",\n"
    "  \"norm_type\": \"rms\",\n"
    "  \"num_attention_heads\": 32,\n"
    "  \"num_hidden_layers\": 32,\n"
    "  \"num_key_value_heads\": 8,\n"
    "  \"org_vocab_size\": 128167,\n"
    "  \"pad_id\": 127961,\n"
    "  \"pad_token_id\": 127961,\n"
    "  \"pool_type\": \"last\",\n"
    "  \"pretraining_tp\": 1,\n"
    "  \"rms_norm_eps\": 1e-05,\n"
    "  \"rope_scaling\": {\n"
    "    \"alpha\": 1000.0,\n"
    "    \"beta_fast\": 32,\n"
    "    \"beta_slow\": 1,\n"
    "    \"factor\": 1.0,\n"
    "    \"mscale\": 1.0,\n"
    "    \"mscale_all_dim\": 1.0,\n"
    "    \"type\": \"dynamic\"\n"
    "  },\n"
    "  \"rope_theta\": 10000.0,\n"
    "  \"sep_token_id\": 127962,\n"
    "  \"text_end_id\": 7,\n"
    "  \"text_start_id\": 6,\n"
    "  \"tie_word_embeddings\": true,\n"
    "  \"torch_dtype\": \"bfloat16\",\n"
    "  \"transformers_version\": \"4.41.2\",\n"
    "  \"use_cache\": true,\n"
    "  \"use_cla\": false,\n"
    "  \"use_qk_norm\": true,\n"
    "  \"use_rotary_pos_emb\": true,\n"
    "  \"vocab_size\": 128167\n"
    "}\n";
/* clang-format on */

#define BASE_7B 11158839.925077485 /* 10000 * 1000^(128/126) */

static int near(double a, double b, double rel)
{
    return fabs(a - b) <= rel * fabs(b);
}

static hy_status parse_text(struct hy_config *c, const char *text, struct hy_err *e)
{
    return hy_config_parse(c, text, strlen(text), WHAT, e);
}

/* Parses real_7b with `edit` applied: key set to the JSON value `val`, or deleted when val
 * is NULL. Keys "rope_scaling.x" edit inside rope_scaling. */
static hy_status parse_edit(struct hy_config *c, const char *key, const char *val, struct hy_err *e)
{
    json_t *root = json_loads(real_7b, 0, NULL);
    json_t *obj = root;
    const char *dot = strchr(key, '.');
    char head[64];
    if (dot) {
        snprintf(head, sizeof head, "%.*s", (int)(dot - key), key);
        obj = json_object_get(root, head);
        key = dot + 1;
    }
    if (val)
        json_object_set_new(obj, key, json_loads(val, JSON_DECODE_ANY, NULL));
    else
        json_object_del(obj, key);
    char *text = json_dumps(root, 0);
    json_decref(root);
    hy_status s = parse_text(c, text, e);
    free(text);
    return s;
}

static void expect_edit(const char *key, const char *val, hy_status want, const char *what,
                        int line)
{
    struct hy_config c, before;
    memset(&c, 0x5a, sizeof c);
    memcpy(&before, &c, sizeof c);
    struct hy_err e = {{0}};
    hy_status s = parse_edit(&c, key, val, &e);
    CHECKF(s == want, "line %d: %s=%s: status %s, want %s (%s)", line, key, val ? val : "(del)",
           hy_status_str(s), hy_status_str(want), e.msg);
    CHECKF(strstr(e.msg, WHAT) != NULL, "line %d: message does not name the file: %s", line, e.msg);
    CHECKF(strstr(e.msg, what) != NULL, "line %d: message lacks '%s': %s", line, what, e.msg);
    CHECKF(!memcmp(&c, &before, sizeof c), "line %d: cfg changed on error", line);
}

#define BAD(key, val, want, what) expect_edit(key, val, want, what, __LINE__)

static void check_7b(const struct hy_config *c)
{
    CHECK(!strcmp(c->model_type, "hunyuan_v1_dense"));
    CHECK(!strcmp(c->architecture, "HunYuanDenseV1ForCausalLM"));
    CHECK(c->vocab_size == 128167 && c->org_vocab_size == 128167);
    CHECK(c->hidden_size == 4096 && c->intermediate_size == 14336);
    CHECK(c->num_hidden_layers == 32 && c->num_attention_heads == 32);
    CHECK(c->num_key_value_heads == 8 && c->head_dim == 128);
    CHECK(c->max_position_embeddings == 32768);
    CHECK(c->rms_norm_eps == 1e-5);
    CHECK(c->rope_theta == 10000.0 && c->rope_alpha == 1000.0 && c->rope_factor == 1.0);
    CHECK(!strcmp(c->rope_type, "dynamic"));
    CHECKF(near(c->rope_base, BASE_7B, 1e-6), "base %.6f", c->rope_base);
    CHECK(!strcmp(c->hidden_act, "silu"));
    CHECK(c->tie_word_embeddings && c->use_qk_norm);
    CHECK(!c->use_cla && !c->attention_bias && !c->mlp_bias);
    CHECK(c->bos_token_id == 1 && c->pad_token_id == 127961 && c->sep_token_id == 127962);
    CHECK(c->eod_token_id == 127967);
    CHECK(c->n_eos == 1 && c->eos_token_id[0] == 127960);
    CHECK(!strcmp(c->torch_dtype, "bfloat16"));
}

static void test_real_7b(void)
{
    struct hy_config c;
    struct hy_err e = {{0}};
    CHECKF(parse_text(&c, real_7b, &e) == HY_OK, "%s", e.msg);
    check_7b(&c);
    float inv[64];
    hy_config_inv_freq(&c, inv);
    CHECK(inv[0] == 1.0f);
    CHECK(near(inv[1], pow(BASE_7B, -2.0 / 128), 1e-6));
    CHECK(near(inv[32], pow(BASE_7B, -64.0 / 128), 1e-6));
    CHECK(near(inv[63], pow(BASE_7B, -126.0 / 128), 1e-6));
    for (int i = 1; i < 64; i++)
        CHECK(inv[i] < inv[i - 1] && inv[i] > 0);
    CHECK(hy_config_validate(&c, WHAT, &e) == HY_OK); /* validating twice changes nothing */
    CHECK(near(c.rope_base, BASE_7B, 1e-12));
}

static void test_rope_forms(void)
{
    struct hy_config c;
    struct hy_err e = {{0}};
    /* transformers' newer form: rope_theta inside rope_parameters, none at the top. */
    json_t *root = json_loads(real_7b, 0, NULL);
    json_object_del(root, "rope_theta");
    json_object_del(root, "rope_scaling");
    json_object_set_new(root, "rope_parameters",
                        json_pack("{s:s, s:f, s:f, s:f}", "rope_type", "dynamic", "rope_theta",
                                  10000.0, "alpha", 1000.0, "factor", 1.0));
    char *text = json_dumps(root, 0);
    json_decref(root);
    CHECKF(parse_text(&c, text, &e) == HY_OK, "%s", e.msg);
    free(text);
    CHECKF(near(c.rope_base, BASE_7B, 1e-6) && c.rope_theta == 10000.0, "%f", c.rope_base);
    CHECK(!strcmp(c.rope_type, "dynamic"));

    CHECK(parse_edit(&c, "rope_scaling", "{\"rope_type\": \"dynamic\", \"alpha\": 1000.0}", &e) ==
          HY_OK);
    CHECK(near(c.rope_base, BASE_7B, 1e-6));
    CHECK(parse_edit(&c, "rope_scaling", "null", &e) == HY_OK);
    CHECK(c.rope_base == 10000.0 && !strcmp(c.rope_type, "default") && c.rope_alpha == 0);
    CHECK(parse_edit(&c, "rope_scaling", NULL, &e) == HY_OK && c.rope_base == 10000.0);
    CHECK(parse_edit(&c, "rope_scaling", "{\"type\": \"dynamic\", \"factor\": 2.0}", &e) == HY_OK);
    CHECK(c.rope_base == 10000.0 && c.rope_factor == 2.0);
    /* transformers applies alpha only to the "dynamic" type. */
    CHECK(parse_edit(&c, "rope_scaling", "{\"type\": \"default\", \"alpha\": 1000.0}", &e) ==
          HY_OK);
    CHECK(c.rope_base == 10000.0);
    CHECK(parse_edit(&c, "rope_theta", "500000", &e) == HY_OK); /* an integer is fine */
    CHECK(near(c.rope_base, 50.0 * BASE_7B, 1e-6));
    /* a base below 1 (inv_freq > 1): refused whatever the rope type (found by fuzz_config) */
    CHECK(parse_edit(&c, "rope_theta", "0.01", &e) == HY_E_RANGE && strstr(e.msg, "rope_theta"));
    CHECK(parse_edit(&c, "rope_scaling", "{\"type\": \"default\", \"alpha\": 100}", &e) ==
          HY_OK);
    CHECK(parse_edit(&c, "rope_scaling", "{\"type\": \"dynamic\", \"alpha\": 0.0001}", &e) ==
          HY_E_RANGE && strstr(e.msg, "rope base"));
}

static void test_variants(void)
{
    struct hy_config c;
    struct hy_err e = {{0}};
    CHECK(parse_edit(&c, "torch_dtype", NULL, &e) == HY_OK && c.torch_dtype[0] == '\0');
    CHECK(parse_edit(&c, "dtype", "\"float16\"", &e) == HY_OK && !strcmp(c.torch_dtype, "float16"));
    CHECK(parse_edit(&c, "eos_token_id", "[127960, 127967]", &e) == HY_OK);
    CHECK(c.n_eos == 2 && c.eos_token_id[0] == 127960 && c.eos_token_id[1] == 127967);
    CHECK(parse_edit(&c, "eos_token_id", "[]", &e) == HY_OK && c.n_eos == 0);
    CHECK(parse_edit(&c, "eos_token_id", "null", &e) == HY_OK && c.n_eos == 0);
    CHECK(parse_edit(&c, "pad_token_id", "-1", &e) == HY_OK && c.pad_token_id == -1);
    CHECK(parse_edit(&c, "bos_token_id", NULL, &e) == HY_OK && c.bos_token_id == -1);
    CHECK(parse_edit(&c, "head_dim", NULL, &e) == HY_OK && c.head_dim == 128);
    CHECK(parse_edit(&c, "model_type", NULL, &e) == HY_OK);

    const char *min = "{\"vocab_size\": 1000, \"hidden_size\": 256, \"intermediate_size\": 512,"
                      " \"num_hidden_layers\": 2, \"num_attention_heads\": 4}";
    CHECKF(parse_text(&c, min, &e) == HY_OK, "%s", e.msg);
    CHECK(c.num_key_value_heads == 4 && c.head_dim == 64 && c.org_vocab_size == 1000);
    CHECK(c.use_qk_norm && !c.tie_word_embeddings && !c.use_cla);
    CHECK(c.bos_token_id == -1 && c.eod_token_id == -1 && c.n_eos == 0);
    CHECK(c.rms_norm_eps == 1e-5 && c.rope_theta == 10000.0 && c.rope_base == 10000.0);
    CHECK(c.max_position_embeddings == 2048 && !strcmp(c.hidden_act, "silu"));
    CHECK(c.torch_dtype[0] == '\0' && c.model_type[0] == '\0' && c.architecture[0] == '\0');
}

static void test_invalid(void)
{
    BAD("num_attention_heads", "0", HY_E_RANGE, "num_attention_heads");
    BAD("num_key_value_heads", "5", HY_E_RANGE, "does not divide");
    BAD("num_key_value_heads", "0", HY_E_RANGE, "num_key_value_heads");
    BAD("num_key_value_heads", "64", HY_E_RANGE, "num_key_value_heads");
    BAD("head_dim", "127", HY_E_FORMAT, "disagree"); /* attention_head_dim says 128 */
    BAD("head_dim", "1025", HY_E_FORMAT, "head_dim");
    BAD("use_cla", "true", HY_E_UNSUPPORTED, "use_cla");
    BAD("attention_bias", "true", HY_E_UNSUPPORTED, "attention_bias");
    BAD("mlp_bias", "true", HY_E_UNSUPPORTED, "mlp_bias");
    BAD("hidden_act", "\"gelu\"", HY_E_UNSUPPORTED, "gelu");
    BAD("model_type", "\"llama\"", HY_E_UNSUPPORTED, "llama");
    BAD("hidden_size", NULL, HY_E_NOTFOUND, "hidden_size");
    BAD("vocab_size", NULL, HY_E_NOTFOUND, "vocab_size");
    BAD("num_hidden_layers", "null", HY_E_NOTFOUND, "num_hidden_layers");
    BAD("vocab_size", "-5", HY_E_RANGE, "vocab_size");
    BAD("vocab_size", "16777217", HY_E_RANGE, "vocab_size");
    BAD("hidden_size", "\"4096\"", HY_E_FORMAT, "hidden_size");
    BAD("hidden_size", "4096.0", HY_E_FORMAT, "hidden_size");
    BAD("hidden_size", "65537", HY_E_RANGE, "hidden_size");
    BAD("intermediate_size", "0", HY_E_RANGE, "intermediate_size");
    BAD("num_hidden_layers", "1025", HY_E_RANGE, "num_hidden_layers");
    BAD("max_position_embeddings", "0", HY_E_RANGE, "max_position_embeddings");
    BAD("max_position_embeddings", "1", HY_E_RANGE, "max_position_embeddings 1 is outside [64,");
    BAD("max_position_embeddings", "63", HY_E_RANGE, "max_position_embeddings");
    BAD("max_position_embeddings", "16777217", HY_E_RANGE, "max_position_embeddings");
    BAD("org_vocab_size", "0", HY_E_RANGE, "org_vocab_size");
    BAD("rms_norm_eps", "0", HY_E_RANGE, "rms_norm_eps");
    BAD("rms_norm_eps", "1.5", HY_E_RANGE, "rms_norm_eps");
    BAD("rms_norm_eps", "\"1e-5\"", HY_E_FORMAT, "rms_norm_eps");
    BAD("use_qk_norm", "1", HY_E_FORMAT, "use_qk_norm");
    BAD("tie_word_embeddings", "\"true\"", HY_E_FORMAT, "tie_word_embeddings");
    BAD("bos_token_id", "128167", HY_E_RANGE, "bos_token_id");
    BAD("pad_token_id", "-2", HY_E_RANGE, "pad_token_id");
    BAD("eod_token_id", "\"127967\"", HY_E_FORMAT, "eod_token_id");
    BAD("eos_token_id", "200000", HY_E_RANGE, "eos_token_id");
    BAD("eos_token_id", "[1, 2, 3, 4, 5, 6, 7, 8, 9]", HY_E_RANGE, "eos_token_id");
    BAD("eos_token_id", "[1, \"2\"]", HY_E_FORMAT, "eos_token_id");
    BAD("eos_token_id", "\"x\"", HY_E_FORMAT, "eos_token_id");
    BAD("rope_theta", "0", HY_E_RANGE, "rope_theta");
    BAD("rope_theta", "\"10000\"", HY_E_FORMAT, "rope_theta");
    BAD("rope_scaling", "5", HY_E_FORMAT, "rope_scaling");
    BAD("rope_scaling.alpha", "-1.0", HY_E_RANGE, "alpha");
    BAD("rope_scaling.alpha", "\"1000\"", HY_E_FORMAT, "alpha");
    BAD("rope_scaling.type", "\"yarn\"", HY_E_UNSUPPORTED, "yarn");
    BAD("rope_scaling.rope_type", "\"linear\"", HY_E_FORMAT, "disagree");
    BAD("rope_scaling.factor", "0", HY_E_RANGE, "factor");
    BAD("rope_scaling.alpha", "1e300", HY_E_RANGE, "rope base");
    BAD("architectures", "\"HunYuanDenseV1ForCausalLM\"", HY_E_FORMAT, "architectures");
    BAD("architectures", "[\"LlamaForCausalLM\"]", HY_E_UNSUPPORTED,
        "architectures 'LlamaForCausalLM' is not supported (supported: HunYuanDenseV1ForCausalLM)");
    BAD("architectures", "[\"HunYuanMoEV1ForCausalLM\", \"HunYuanDenseV1ForCausalLM\"]",
        HY_E_UNSUPPORTED, "HunYuanMoEV1ForCausalLM");
    BAD("model_type", "\"hunyuan_v1_dense_but_far_too_long_to_fit_in_the_sixty_four_bytes_field\"",
        HY_E_RANGE, "model_type");
}

static void test_invalid_whole(void)
{
    struct hy_config c;
    struct hy_err e = {{0}};
    CHECK(parse_text(&c, "{\n  \"vocab_size\": 10,\n  oops\n}", &e) == HY_E_FORMAT);
    CHECKF(strstr(e.msg, WHAT) && strstr(e.msg, "line 3"), "%s", e.msg);
    CHECK(parse_text(&c, "[1]", &e) == HY_E_FORMAT && strstr(e.msg, WHAT));
    /* No head_dim keys and hidden_size not divisible by the heads. */
    const char *t = "{\"vocab_size\": 1000, \"hidden_size\": 257, \"intermediate_size\": 512,"
                    " \"num_hidden_layers\": 2, \"num_attention_heads\": 4}";
    CHECK(parse_text(&c, t, &e) == HY_E_FORMAT);
    CHECKF(strstr(e.msg, "not divisible") && strstr(e.msg, WHAT), "%s", e.msg);
    /* hidden/heads odd: head_dim 3. */
    t = "{\"vocab_size\": 1000, \"hidden_size\": 12, \"intermediate_size\": 512,"
        " \"num_hidden_layers\": 2, \"num_attention_heads\": 4}";
    CHECK(parse_text(&c, t, &e) == HY_E_RANGE);
    CHECKF(strstr(e.msg, "head_dim 3 is odd"), "%s", e.msg);
    t = "{\"vocab_size\": 1000, \"hidden_size\": 256, \"intermediate_size\": 512,"
        " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"head_dim\": 127,"
        " \"attention_head_dim\": 127}";
    CHECK(parse_text(&c, t, &e) == HY_E_RANGE && strstr(e.msg, "odd"));
}

static void test_load(void)
{
    char dir[64] = "/tmp/hymt-cfg-XXXXXX", path[128], big[128];
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && fputs(real_7b, f) >= 0 && fclose(f) == 0);
    struct hy_config c;
    struct hy_err e = {{0}};
    CHECKF(hy_config_load(&c, dir, &e) == HY_OK, "%s", e.msg);
    check_7b(&c);
    memset(&c, 0, sizeof c);
    CHECKF(hy_config_load(&c, path, &e) == HY_OK, "%s", e.msg);
    check_7b(&c);

    snprintf(big, sizeof big, "%s/big.json", dir);
    f = fopen(big, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(real_7b, f);
        for (unsigned i = 0; i < HY_CONFIG_MAX_BYTES / 64 + 1; i++)
            fputs("                                                               \n", f);
        fclose(f);
    }
    CHECK(hy_config_load(&c, big, &e) == HY_E_RANGE);
    CHECKF(strstr(e.msg, big) != NULL, "%s", e.msg);
    unlink(big);

    f = fopen(path, "wb");
    CHECK(f && fputs("{\"vocab_size\": 10}", f) >= 0 && fclose(f) == 0);
    CHECK(hy_config_load(&c, dir, &e) == HY_E_NOTFOUND);
    CHECKF(strstr(e.msg, path) && strstr(e.msg, "hidden_size"), "%s", e.msg);
    unlink(path);
    CHECK(hy_config_load(&c, dir, &e) == HY_E_IO);
    CHECKF(strstr(e.msg, path) != NULL, "%s", e.msg);
    CHECK(rmdir(dir) == 0);
}

/* Configs built in code (GGUF metadata) pass hy_config_validate: the same limits hold. */
static void test_validate_built(void)
{
    struct hy_config c;
    struct hy_err e = {{0}};
    CHECK(parse_edit(&c, "max_position_embeddings", "64", &e) == HY_OK);
    struct hy_config v = c;
    v.max_position_embeddings = 1; /* a GGUF context_length of 1 */
    CHECK(hy_config_validate(&v, "x.gguf", &e) == HY_E_RANGE);
    CHECKF(strstr(e.msg, "x.gguf") && strstr(e.msg, "max_position_embeddings"), "%s", e.msg);
    v = c;
    snprintf(v.architecture, sizeof v.architecture, "Qwen2ForCausalLM");
    CHECK(hy_config_validate(&v, "x.gguf", &e) == HY_E_UNSUPPORTED);
    CHECKF(strstr(e.msg, "'Qwen2ForCausalLM'") && strstr(e.msg, "HunYuanDenseV1ForCausalLM"), "%s",
           e.msg);
    v = c;
    v.architecture[0] = '\0'; /* absent: accepted */
    CHECK(hy_config_validate(&v, "x.gguf", &e) == HY_OK);
}

int main(void)
{
    test_validate_built();
    test_real_7b();
    test_rope_forms();
    test_variants();
    test_invalid();
    test_invalid_whole();
    test_load();
    return test_result();
}
