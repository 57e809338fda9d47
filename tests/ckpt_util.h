/* ckpt_util.h: small checkpoints built in memory and written as safetensors folders, for
 * the loader tests of quantized formats (include after test.h), and the checks those tests
 * share: loading, the projections against expected tensors and an expected load error. A tensor's dtype is its safetensors spelling
 * ("BF16", "F8_E4M3", "I32", ...), so integer tensors fit too. */
#ifndef HY_TESTS_CKPT_UTIL_H
#define HY_TESTS_CKPT_UTIL_H

#include "backend/cpu/cpu.h"
#include "core/dtype.h"
#include "formats/safetensors.h"
#include "model/hunyuan.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CK_MAXT 320

struct ck_tensor {
    char name[HY_ST_MAX_NAME];
    char dtype[12];
    int nd;
    int64_t shape[4];
    unsigned char *data;
    size_t nbytes;
};

struct ckpt {
    struct ck_tensor t[CK_MAXT];
    int n;
};

static inline size_t ck_esize(const char *dt)
{
    static const char *const four[] = {"F32", "I32"}, *const one[] = {"U8", "I8", "F8_E4M3"};
    for (size_t i = 0; i < sizeof four / sizeof four[0]; i++)
        if (strncmp(dt, four[i], 8) == 0)
            return 4;
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        if (strncmp(dt, one[i], 8) == 0)
            return 1;
    return 2; /* F16, BF16, I16 */
}

static inline struct ck_tensor *ck_find(struct ckpt *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->t[i].name, name))
            return &c->t[i];
    return NULL;
}

/* A zeroed tensor appended to c. */
static inline struct ck_tensor *ck_add(struct ckpt *c, const char *name, const char *dt, int nd,
                                       const int64_t *shape)
{
    HY_ASSERT(c->n < CK_MAXT && nd >= 0 && nd <= 4);
    struct ck_tensor *t = &c->t[c->n++];
    memset(t, 0, sizeof *t);
    HY_ASSERT(strlen(name) < sizeof t->name && strlen(dt) < sizeof t->dtype);
    memcpy(t->name, name, strlen(name) + 1);
    memcpy(t->dtype, dt, strlen(dt) + 1);
    t->nd = nd;
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= (t->shape[d] = shape[d]);
    t->nbytes = (size_t)n * ck_esize(dt);
    t->data = calloc(t->nbytes ? t->nbytes : 1, 1);
    HY_ASSERT(t->data);
    return t;
}

static inline void ck_drop(struct ckpt *c, const char *name)
{
    struct ck_tensor *t = ck_find(c, name);
    HY_ASSERT(t);
    free(t->data);
    *t = c->t[--c->n];
}

static inline void ck_free(struct ckpt *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->t[i].data);
    c->n = 0;
}

static inline void ck_copy(struct ckpt *dst, const struct ckpt *src)
{
    dst->n = 0;
    for (int i = 0; i < src->n; i++) {
        const struct ck_tensor *s = &src->t[i];
        memcpy(ck_add(dst, s->name, s->dtype, s->nd, s->shape)->data, s->data, s->nbytes);
    }
}

/* Every tensor of the checkpoint at dir. */
static inline void ck_read(struct ckpt *c, const char *dir)
{
    struct hy_st *st = NULL;
    struct hy_err e = {{0}};
    HY_ASSERT(hy_st_open(&st, dir, &e) == HY_OK);
    c->n = 0;
    for (size_t i = 0; i < hy_st_count(st); i++) {
        const struct hy_st_tensor *s = hy_st_at(st, i);
        struct ck_tensor *t = ck_add(c, s->name, hy_dtype_name(s->dtype), s->n_dims, s->shape);
        HY_ASSERT(t->nbytes == s->nbytes);
        memcpy(t->data, s->data, t->nbytes);
    }
    hy_st_close(st);
}

/* Writes dir (created): config.json = src_dir's (or `{}` when src_dir is NULL) plus
 * quantization_config `qc` (JSON text or NULL), hf_quant_config.json = `hf` (or none), and
 * model.safetensors written by hand (any dtype spelling, integer ones included). */
static inline void ck_write(const struct ckpt *c, const char *dir, const char *src_dir,
                            const char *qc, const char *hf)
{
    char path[4200];
    mkdir(dir, 0700);
    json_t *cfg = json_object();
    if (src_dir) {
        json_decref(cfg);
        snprintf(path, sizeof path, "%s/config.json", src_dir);
        cfg = json_load_file(path, 0, NULL);
    }
    HY_ASSERT(cfg);
    if (qc)
        json_object_set_new(cfg, "quantization_config", json_loads(qc, 0, NULL));
    snprintf(path, sizeof path, "%s/config.json", dir);
    HY_ASSERT(json_dump_file(cfg, path, JSON_INDENT(1)) == 0);
    json_decref(cfg);
    snprintf(path, sizeof path, "%s/hf_quant_config.json", dir);
    remove(path);
    if (hf) {
        FILE *f = fopen(path, "w");
        HY_ASSERT(f);
        fputs(hf, f);
        fclose(f);
    }
    json_t *h = json_object();
    size_t off = 0;
    for (int i = 0; i < c->n; i++) {
        json_t *shape = json_array();
        for (int d = 0; d < c->t[i].nd; d++)
            json_array_append_new(shape, json_integer(c->t[i].shape[d]));
        json_object_set_new(h, c->t[i].name,
                            json_pack("{s:s, s:o, s:[I, I]}", "dtype", c->t[i].dtype, "shape",
                                      shape, "data_offsets", (json_int_t)off,
                                      (json_int_t)(off + c->t[i].nbytes)));
        off += c->t[i].nbytes;
    }
    char *text = json_dumps(h, JSON_COMPACT);
    json_decref(h);
    HY_ASSERT(text);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    HY_ASSERT(f);
    uint64_t n = strlen(text);
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(n >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(text, 1, n, f);
    for (int i = 0; i < c->n; i++)
        fwrite(c->t[i].data, 1, c->t[i].nbytes, f);
    HY_ASSERT(fclose(f) == 0);
    free(text);
}

/* The seven projections of a layer, as named after "model.layers.N." and in the struct. */
static const char *const ck_projs[7] = {"self_attn.q_proj", "self_attn.k_proj",
                                        "self_attn.v_proj", "self_attn.o_proj",
                                        "mlp.gate_proj",    "mlp.up_proj",
                                        "mlp.down_proj"};

static inline const struct hy_weight *ck_proj(const struct hy_model *m, int l, int k)
{
    const struct hy_layer_weights *w = &m->layers[l];
    const struct hy_weight *ws[7] = {&w->wq, &w->wk, &w->wv, &w->wo, &w->w_gate, &w->w_up,
                                     &w->w_down};
    return ws[k];
}

/* The model at dir on be (quant: hy_model_opts.quant), or NULL with a failed check. */
static inline struct hy_model *ck_load(struct hy_backend *be, const char *dir,
                                       enum hy_dtype quant)
{
    struct hy_model *m = NULL;
    struct hy_err e = {{0}};
    struct hy_model_opts o = {.quant = quant};
    CHECKF(hy_model_load_opts(&m, dir, be, &o, &e) == HY_OK, "%s: %s", dir, e.msg);
    return m;
}

/* Every projection of layers 0 and 1 of m is bf16 and byte-equal to want's BF16 tensor of
 * the same name (`rule`: how want was made, for the message). */
static inline void ck_check_weights(const struct hy_model *m, struct ckpt *want,
                                    const char *what, const char *rule)
{
    char name[HY_ST_MAX_NAME];
    int bad = 0;
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 7; k++) {
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, ck_projs[k]);
            const struct hy_weight *w = ck_proj(m, l, k);
            const struct ck_tensor *t = ck_find(want, name);
            bool ok = t && w->dtype == HY_DTYPE_BF16 && !strcmp(t->dtype, "BF16") &&
                      (size_t)(w->rows * w->cols * 2) == t->nbytes &&
                      !memcmp(w->data, t->data, t->nbytes);
            if (!ok && bad++ < 3)
                fprintf(stderr, "%s: %s differs from %s\n", what, name, rule);
        }
    CHECKF(bad == 0, "%s: %d projections differ", what, bad);
}

/* Loading dir fails with status want, leaves the model NULL, and the message names what
 * (and name, when not NULL); line is the caller's, for the messages. */
static inline void ck_expect_load_error(struct hy_backend *be, const char *dir,
                                        enum hy_dtype quant, hy_status want, const char *name,
                                        const char *what, int line)
{
    struct hy_model *m = (struct hy_model *)1;
    struct hy_err e = {{0}};
    struct hy_model_opts o = {.quant = quant};
    hy_status s = hy_model_load_opts(&m, dir, be, &o, &e);
    if (s == HY_OK)
        hy_model_destroy(m);
    CHECKF(s == want, "line %d: status %s, want %s (%s)", line, hy_status_str(s),
           hy_status_str(want), e.msg);
    CHECKF(m == NULL || s == HY_OK, "line %d: model not NULL on error", line);
    CHECKF(strstr(e.msg, what) && (!name || strstr(e.msg, name)),
           "line %d: message '%s' lacks '%s' / '%s'", line, e.msg, what, name ? name : "");
}

/* A loader test's start: a fresh folder from the mkdtemp template tmpl in root, the path of
 * tests/data/tiny-mqa in src_dir and its tensors in *src (zeroed by the caller), a 2-thread
 * CPU backend in *be (NULL and a failed check if it cannot be made). False, with a message,
 * when the folder cannot be made. */
static inline bool ck_begin(char *root, size_t root_cap, const char *tmpl, char *src_dir,
                            size_t src_cap, struct hy_backend **be, struct ckpt *src)
{
    snprintf(root, root_cap, "%s", tmpl);
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return false;
    }
    test_path(src_dir, src_cap, "HYMT_SRC", "tests/data/tiny-mqa");
    struct hy_err e = {{0}};
    CHECKF(hy_cpu_backend_create(be, 2, &e) == HY_OK, "%s", e.msg);
    ck_read(src, src_dir);
    CHECK(ck_find(src, "lm_head.weight") == NULL && src->n > 20);
    return true;
}

#endif
