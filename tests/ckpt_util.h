/* ckpt_util.h: small checkpoints built in memory and written as safetensors folders, for
 * the loader tests of quantized formats (include after test.h). A tensor's dtype is its
 * safetensors spelling ("BF16", "F8_E4M3", "I32", ...), so integer tensors fit too. */
#ifndef HY_TESTS_CKPT_UTIL_H
#define HY_TESTS_CKPT_UTIL_H

#include "core/dtype.h"
#include "formats/safetensors.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CK_MAXT 160

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

#endif
