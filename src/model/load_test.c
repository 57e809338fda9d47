/* load_test.c: model loading against broken checkpoints (missing tensors, wrong shapes,
 * missing files, bad config) and the forward pass's own argument checks. */
#include "backend/cpu/cpu.h"
#include "formats/safetensors.h"
#include "model/hunyuan.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* tiny shapes: hidden 16, 2 heads of 8, 1 KV head, ffn 24, vocab 40, 2 layers */
#define HID 16
#define HD 8
#define NH 2
#define NKV 1
#define FFN 24
#define VOCAB 40
#define LAYERS 2

struct spec {
    const char *skip;      /* tensor left out */
    const char *bad_shape; /* tensor written with one row too many */
    bool tied, store_head, head_equal;
};

static char names[64][HY_ST_MAX_NAME];

static int list(struct hy_st_wtensor *t, const struct spec *s)
{
    int n = 0;
    struct {
        const char *name;
        int64_t r, c;
    } w[] = {{"input_layernorm.weight", 0, HID},       {"self_attn.q_proj.weight", NH * HD, HID},
             {"self_attn.k_proj.weight", NKV * HD, HID}, {"self_attn.v_proj.weight", NKV * HD, HID},
             {"self_attn.o_proj.weight", HID, NH * HD},  {"self_attn.query_layernorm.weight", 0, HD},
             {"self_attn.key_layernorm.weight", 0, HD},  {"post_attention_layernorm.weight", 0, HID},
             {"mlp.gate_proj.weight", FFN, HID},         {"mlp.up_proj.weight", FFN, HID},
             {"mlp.down_proj.weight", HID, FFN}};
    for (int l = -1; l <= LAYERS; l++) {
        for (size_t k = 0; k < (l >= 0 && l < LAYERS ? sizeof w / sizeof w[0] : 1); k++) {
            int64_t r = 0, c = 0;
            if (l == -1) {
                snprintf(names[n], HY_ST_MAX_NAME, "model.embed_tokens.weight");
                r = VOCAB, c = HID;
            } else if (l == LAYERS) {
                snprintf(names[n], HY_ST_MAX_NAME, "model.norm.weight");
                c = HID;
            } else {
                snprintf(names[n], HY_ST_MAX_NAME, "model.layers.%d.%s", l, w[k].name);
                r = w[k].r, c = w[k].c;
            }
            if (s->skip && !strcmp(s->skip, names[n]))
                continue;
            if (s->bad_shape && !strcmp(s->bad_shape, names[n]))
                r = r ? r + 1 : 0, c = r ? c : c + 1;
            t[n] = (struct hy_st_wtensor){names[n], HY_DTYPE_F32, r ? 2 : 1, {r ? r : c, c}};
            n++;
        }
    }
    if ((!s->tied || s->store_head) && !(s->skip && !strcmp(s->skip, "lm_head.weight"))) {
        snprintf(names[n], HY_ST_MAX_NAME, "lm_head.weight");
        t[n] = (struct hy_st_wtensor){names[n], HY_DTYPE_F32, 2, {VOCAB, HID}};
        n++;
    }
    return n;
}

static hy_status fill(void *ctx, size_t i, void *buf, size_t nbytes, struct hy_err *err)
{
    const struct spec *s = ctx;
    float *f = buf;
    bool head = !strcmp(names[i], "lm_head.weight");
    uint32_t seed = head && s->head_equal ? 0 : (uint32_t)i; /* embed is tensor 0 */
    for (size_t k = 0; k < nbytes / 4; k++) {
        seed = seed * 1664525u + 1013904223u;
        f[k] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f + (nbytes / 4 <= HID ? 1.0f : 0.0f);
    }
    return HY_OK;
}

static void write_ckpt(const char *dir, const struct spec *s, const char *config_extra)
{
    mkdir(dir, 0700);
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"model_type\": \"hunyuan_v1_dense\", \"vocab_size\": %d, \"hidden_size\": %d, "
               "\"intermediate_size\": %d, \"num_hidden_layers\": %d, \"num_attention_heads\": %d, "
               "\"num_key_value_heads\": %d, \"head_dim\": %d, \"rms_norm_eps\": 1e-5, "
               "\"rope_theta\": 10000.0, \"rope_scaling\": {\"type\": \"dynamic\", \"alpha\": 1000.0},"
               " \"hidden_act\": \"silu\", \"tie_word_embeddings\": %s, "
               "\"max_position_embeddings\": 64%s}",
            VOCAB, HID, FFN, LAYERS, NH, NKV, HD, s->tied ? "true" : "false",
            config_extra ? config_extra : "");
    fclose(f);
    struct hy_st_wtensor t[64];
    int n = list(t, s);
    struct hy_err err;
    CHECKF(hy_st_write(dir, t, (size_t)n, 0, fill, (void *)s, &err) == HY_OK, "%s", err.msg);
}

static hy_status try_load(const char *dir, struct hy_err *err, struct hy_model **keep,
                          struct hy_backend *be)
{
    struct hy_model *m = NULL;
    hy_status st = hy_model_load(&m, dir, be, err);
    if (keep)
        *keep = m;
    else
        hy_model_destroy(m);
    return st;
}

static void expect_fail(struct hy_backend *be, const char *dir, const struct spec *s,
                        const char *extra, hy_status want, const char *needle)
{
    write_ckpt(dir, s, extra);
    struct hy_err err = {{0}};
    hy_status st = try_load(dir, &err, NULL, be);
    CHECKF(st == want, "status %d (%s), want %d", st, err.msg, want);
    CHECKF(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
}

static void check_forward_errors(struct hy_model *m)
{
    struct hy_err err = {{0}};
    struct hy_ctx *c = NULL;
    CHECK(hy_ctx_create(&c, m, 0, 1, &err) == HY_E_RANGE);
    CHECK(hy_ctx_create(&c, m, 8, 4, &err) == HY_OK);
    float logits[VOCAB], again[VOCAB];
    int32_t ids[4] = {3, 7, 39, 1};
    int32_t bad = VOCAB;
    CHECK(hy_model_forward(c, &bad, 1, false, logits, &err) == HY_E_RANGE);
    CHECKF(strstr(err.msg, "vocabulary") != NULL, "%s", err.msg);
    CHECK(c->pos == 0);
    CHECK(hy_model_forward(c, ids, 5, false, logits, &err) == HY_E_RANGE); /* > max_tokens */
    CHECK(hy_model_forward(c, ids, 4, false, logits, &err) == HY_OK);
    CHECK(hy_model_forward(c, ids, 4, false, logits, &err) == HY_OK);
    CHECK(c->pos == 8);
    CHECK(hy_model_forward(c, ids, 1, false, logits, &err) == HY_E_RANGE); /* context full */
    CHECKF(strstr(err.msg, "context full") != NULL, "%s", err.msg);
    CHECK(c->pos == 8);
    /* after a reset the same tokens give the same logits, and they are finite, non-zero */
    hy_ctx_reset(c);
    CHECK(hy_model_forward(c, ids, 4, false, again, &err) == HY_OK);
    hy_ctx_reset(c);
    CHECK(hy_model_forward(c, ids, 4, false, logits, &err) == HY_OK);
    double norm = 0;
    for (int i = 0; i < VOCAB; i++) {
        CHECK(isfinite(logits[i]) && logits[i] == again[i]);
        norm += fabs(logits[i]);
    }
    CHECK(norm > 0);
    hy_ctx_destroy(c);
}

int main(void)
{
    char root[] = "/tmp/hymt-load-XXXXXX", dir[600];
    CHECK(mkdtemp(root) != NULL);
    snprintf(dir, sizeof dir, "%s/m", root);
    struct hy_backend *be = NULL;
    struct hy_err err = {{0}};
    CHECK(hy_cpu_backend_create_ref(&be, &err) == HY_OK);

    /* a good checkpoint loads, counts its parameters and runs */
    struct spec good = {.tied = true};
    write_ckpt(dir, &good, NULL);
    struct hy_model *m = NULL;
    CHECKF(try_load(dir, &err, &m, be) == HY_OK, "%s", err.msg);
    if (m) {
        int64_t per_layer = 2 * HID + 2 * HD + 2 * NH * HD * HID + 2 * NKV * HD * HID + 3 * FFN * HID;
        CHECK(m->n_params == VOCAB * HID + HID + LAYERS * per_layer);
        CHECK(m->lm_head.data == m->tok_embd.data && !m->lm_head_stored);
        check_forward_errors(m);
        hy_model_destroy(m);
    }
    /* stored lm_head next to a tied config: embed_tokens when equal, lm_head when not
     * (transformers 5.17's rule) */
    struct spec stored = {.tied = true, .store_head = true, .head_equal = true};
    write_ckpt(dir, &stored, NULL);
    CHECK(try_load(dir, &err, &m, be) == HY_OK);
    CHECK(m && m->lm_head_stored && m->lm_head_equal && m->lm_head.data == m->tok_embd.data);
    hy_model_destroy(m);
    stored.head_equal = false;
    write_ckpt(dir, &stored, NULL);
    CHECK(try_load(dir, &err, &m, be) == HY_OK);
    CHECK(m && m->lm_head_stored && !m->lm_head_equal && m->lm_head.data != m->tok_embd.data);
    CHECK(m && m->n_params == (VOCAB * HID) * 2 + HID + LAYERS * (2 * HID + 2 * HD + 2 * NH * HD * HID +
                                                              2 * NKV * HD * HID + 3 * FFN * HID));
    hy_model_destroy(m);
    /* untied: lm_head is its own tensor */
    struct spec untied = {.tied = false};
    write_ckpt(dir, &untied, NULL);
    CHECK(try_load(dir, &err, &m, be) == HY_OK);
    CHECK(m && m->lm_head.data != m->tok_embd.data);
    hy_model_destroy(m);

    /* broken checkpoints: each a clear error naming the tensor or file */
    struct spec s = {.tied = true, .skip = "model.layers.1.mlp.up_proj.weight"};
    expect_fail(be, dir, &s, NULL, HY_E_FORMAT, "missing tensor model.layers.1.mlp.up_proj.weight");
    s = (struct spec){.tied = false, .skip = "lm_head.weight"};
    expect_fail(be, dir, &s, NULL, HY_E_FORMAT, "missing tensor lm_head.weight");
    s = (struct spec){.tied = true, .bad_shape = "model.layers.0.self_attn.k_proj.weight"};
    expect_fail(be, dir, &s, NULL, HY_E_FORMAT, "k_proj.weight has shape [9,16], the config needs [8,16]");
    s = (struct spec){.tied = true, .bad_shape = "model.layers.1.self_attn.query_layernorm.weight"};
    expect_fail(be, dir, &s, NULL, HY_E_FORMAT, "query_layernorm.weight has shape [9]");
    s = (struct spec){.tied = true, .bad_shape = "model.embed_tokens.weight"};
    expect_fail(be, dir, &s, NULL, HY_E_FORMAT, "embed_tokens.weight has shape [41,16]");
    /* config problems are reported by the config reader with the file name */
    s = (struct spec){.tied = true};
    expect_fail(be, dir, &s, ", \"use_cla\": true", HY_E_UNSUPPORTED, "use_cla");

    write_ckpt(dir, &good, NULL);
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    hy_status st = try_load(dir, &err, NULL, be);
    CHECKF(st == HY_E_IO, "status %d: %s", st, err.msg);
    CHECKF(strstr(err.msg, dir) != NULL, "%s", err.msg);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    CHECK(try_load(dir, &err, NULL, be) != HY_OK);
    CHECKF(strstr(err.msg, "config.json") != NULL, "%s", err.msg);
    CHECK(try_load("/nonexistent/hymt", &err, NULL, be) == HY_E_IO);
    CHECKF(strstr(err.msg, "not a directory") != NULL, "%s", err.msg);

    be->i->destroy(be);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
    return test_result();
}
