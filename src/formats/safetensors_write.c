/* safetensors_write.c: hy_st_write, the streaming writer (the reader is safetensors.c). */
#include "formats/safetensors.h"

#include <jansson.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"
#define PATH_CAP 4096

/* What hy_st_write decided before writing a byte. */
struct plan {
    size_t *nbytes; /* [n] bytes of each tensor */
    size_t *shard_at; /* [n_shards + 1] first tensor of each shard; shard_at[n_shards] = n */
    int n_shards;
    size_t max_nbytes; /* the fill buffer's size */
    uint64_t total; /* sum of nbytes */
};

static void plan_free(struct plan *p)
{
    free(p->nbytes);
    free(p->shard_at);
}

static hy_status check_tensor(const struct hy_st_wtensor *t, size_t *nbytes, struct hy_err *err)
{
    if (!t->name)
        return hy_err_set(err, HY_E_INVAL, "tensor without a name");
    size_t len = strlen(t->name);
    if (len >= HY_ST_MAX_NAME || !strcmp(t->name, "__metadata__"))
        return hy_err_set(err, HY_E_INVAL, "tensor name '%.80s' is reserved or too long", t->name);
    if ((int)t->dtype < 0 || t->dtype >= HY_DTYPE_COUNT || hy_dtype_block_elems(t->dtype) != 1)
        return hy_err_set(err, HY_E_INVAL, "tensor '%.80s': bad dtype %d", t->name, (int)t->dtype);
    if (t->n_dims < 0 || t->n_dims > HY_ST_MAX_DIMS)
        return hy_err_set(err, HY_E_INVAL, "tensor '%.80s': %d dims", t->name, t->n_dims);
    uint64_t n = hy_dtype_size(t->dtype);
    for (int d = 0; d < t->n_dims; d++) {
        int64_t x = t->shape[d];
        if (x < 0)
            return hy_err_set(err, HY_E_INVAL, "tensor '%.80s': negative dim", t->name);
        if (x != 0 && n > (uint64_t)INT64_MAX / (uint64_t)x)
            return hy_err_set(err, HY_E_INVAL, "tensor '%.80s': size overflows", t->name);
        n *= (uint64_t)x;
    }
    if (n > SIZE_MAX)
        return hy_err_set(err, HY_E_INVAL, "tensor '%.80s': too large", t->name);
    *nbytes = (size_t)n;
    return HY_OK;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static hy_status check_unique(const struct hy_st_wtensor *t, size_t n, struct hy_err *err)
{
    const char **names = malloc((n ? n : 1) * sizeof *names);
    if (!names)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        names[i] = t[i].name;
    qsort(names, n, sizeof *names, cmp_str_ptr);
    hy_status s = HY_OK;
    for (size_t i = 1; i < n && s == HY_OK; i++)
        if (!strcmp(names[i - 1], names[i]))
            s = hy_err_set(err, HY_E_INVAL, "duplicate tensor name '%.80s'", names[i]);
    free(names);
    return s;
}

/* Greedy split: a shard is closed before the tensor that would take it past max. */
static hy_status plan_shards(struct plan *p, size_t n, uint64_t max, struct hy_err *err)
{
    p->shard_at = malloc((n + 2) * sizeof *p->shard_at);
    if (!p->shard_at)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    p->n_shards = 0;
    p->shard_at[0] = 0;
    bool single = max == 0 || p->total <= max;
    uint64_t cur = 0;
    for (size_t i = 0; i < n && !single; i++) {
        if (i > p->shard_at[p->n_shards] && cur + p->nbytes[i] > max) {
            if (p->n_shards + 1 >= HY_ST_MAX_SHARDS)
                return hy_err_set(err, HY_E_RANGE,
                                  "more than %d shards of at most %" PRIu64 " bytes are needed",
                                  HY_ST_MAX_SHARDS, max);
            p->shard_at[++p->n_shards] = i;
            cur = 0;
        }
        cur += p->nbytes[i];
    }
    p->shard_at[++p->n_shards] = n;
    return HY_OK;
}

static hy_status make_plan(struct plan *p, const struct hy_st_wtensor *t, size_t n, uint64_t max,
                           struct hy_err *err)
{
    memset(p, 0, sizeof *p);
    p->nbytes = malloc((n ? n : 1) * sizeof *p->nbytes);
    if (!p->nbytes)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        hy_status s = check_tensor(&t[i], &p->nbytes[i], err);
        if (s != HY_OK)
            return s;
        if (p->nbytes[i] > p->max_nbytes)
            p->max_nbytes = p->nbytes[i];
        p->total += p->nbytes[i];
    }
    hy_status s = check_unique(t, n, err);
    if (s == HY_OK)
        s = plan_shards(p, n, max, err);
    return s;
}

/* ---- one file ---- */

static hy_status write_bytes(FILE *f, const void *buf, size_t len, const char *path,
                             struct hy_err *err)
{
    if (len && fwrite(buf, 1, len, f) != len)
        return hy_err_set(err, HY_E_IO, "%s: write failed: %s", path, strerror(errno));
    return HY_OK;
}

static json_t *tensor_json(const struct hy_st_wtensor *t, uint64_t begin, uint64_t end)
{
    json_t *shape = json_array();
    for (int d = 0; d < t->n_dims; d++)
        json_array_append_new(shape, json_integer(t->shape[d]));
    json_t *offs = json_array();
    json_array_append_new(offs, json_integer((json_int_t)begin));
    json_array_append_new(offs, json_integer((json_int_t)end));
    return json_pack("{s:s, s:o, s:o}", "dtype", hy_dtype_name(t->dtype), "shape", shape,
                     "data_offsets", offs);
}

/* The shard's header JSON, padded with spaces to a multiple of 8 bytes (as the reference
 * writer does, so that the data section starts 8-byte aligned). Caller frees. */
static char *build_header(const struct hy_st_wtensor *t, const size_t *nbytes, size_t n,
                          size_t *len)
{
    json_t *root = json_pack("{s:{s:s}}", "__metadata__", "format", "pt");
    uint64_t off = 0;
    for (size_t i = 0; root && i < n; i++) {
        json_t *e = tensor_json(&t[i], off, off + nbytes[i]);
        if (!e || json_object_set_new(root, t[i].name, e) != 0) {
            json_decref(root);
            return NULL;
        }
        off += nbytes[i];
    }
    char *s = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (!s)
        return NULL;
    size_t l = strlen(s), padded = (l + 7) / 8 * 8;
    char *h = realloc(s, padded + 1);
    if (!h) {
        free(s);
        return NULL;
    }
    memset(h + l, ' ', padded - l);
    h[padded] = '\0';
    *len = padded;
    return h;
}

static hy_status write_header(FILE *f, const struct hy_st_wtensor *t, const size_t *nbytes,
                              size_t n, const char *path, struct hy_err *err)
{
    size_t len;
    char *h = build_header(t, nbytes, n, &len);
    if (!h)
        return hy_err_set(err, HY_E_INVAL,
                          "%s: cannot build the header (out of memory, or a "
                          "tensor name that is not UTF-8)",
                          path);
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)((uint64_t)len >> (8 * i));
    hy_status s = write_bytes(f, le, 8, path, err);
    if (s == HY_OK)
        s = write_bytes(f, h, len, path, err);
    free(h);
    return s;
}

/* Writes tensors [a, b) (indices into the whole list) to path. */
static hy_status write_file(const char *path, const struct hy_st_wtensor *t, const struct plan *p,
                            size_t a, size_t b, void *buf, hy_st_fill_fn fill, void *ctx,
                            struct hy_err *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return hy_err_set(err, HY_E_IO, "%s: cannot create: %s", path, strerror(errno));
    hy_status s = write_header(f, t + a, p->nbytes + a, b - a, path, err);
    for (size_t i = a; i < b && s == HY_OK; i++) {
        s = fill(ctx, i, buf, p->nbytes[i], err);
        if (s != HY_OK)
            hy_err_prefix(err, "%s: tensor '%.80s'", path, t[i].name);
        else
            s = write_bytes(f, buf, p->nbytes[i], path, err);
    }
    if (s == HY_OK && fflush(f) != 0)
        s = hy_err_set(err, HY_E_IO, "%s: write failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && s == HY_OK)
        s = hy_err_set(err, HY_E_IO, "%s: close failed: %s", path, strerror(errno));
    if (s != HY_OK)
        unlink(path);
    return s;
}

static hy_status write_text(const char *path, const char *text, struct hy_err *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return hy_err_set(err, HY_E_IO, "%s: cannot create: %s", path, strerror(errno));
    hy_status s = write_bytes(f, text, strlen(text), path, err);
    if (s == HY_OK && fflush(f) != 0)
        s = hy_err_set(err, HY_E_IO, "%s: write failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && s == HY_OK)
        s = hy_err_set(err, HY_E_IO, "%s: close failed: %s", path, strerror(errno));
    if (s != HY_OK)
        unlink(path);
    return s;
}

/* ---- the set ---- */

static hy_status shard_path(char *buf, const char *dir, const struct plan *p, int k,
                            struct hy_err *err)
{
    int len = p->n_shards == 1 ? snprintf(buf, PATH_CAP, "%s/%s", dir, SINGLE_NAME)
                               : snprintf(buf, PATH_CAP, "%s/model-%05d-of-%05d.safetensors", dir,
                                          k + 1, p->n_shards);
    if (len < 0 || len >= PATH_CAP)
        return hy_err_set(err, HY_E_RANGE, "%s: path too long", dir);
    return HY_OK;
}

static hy_status write_index(const char *dir, const struct hy_st_wtensor *t, const struct plan *p,
                             struct hy_err *err)
{
    char path[PATH_CAP];
    json_t *wm = json_object();
    for (int k = 0; wm && k < p->n_shards; k++) {
        hy_status s = shard_path(path, dir, p, k, err);
        if (s != HY_OK) {
            json_decref(wm);
            return s;
        }
        const char *name = path + strlen(dir) + 1;
        for (size_t i = p->shard_at[k]; i < p->shard_at[k + 1]; i++)
            json_object_set_new(wm, t[i].name, json_string(name));
    }
    json_t *root = json_pack("{s:{s:I}, s:o}", "metadata", "total_size", (json_int_t)p->total,
                             "weight_map", wm);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(root);
    if (!text)
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory for the index", dir);
    size_t len = strlen(text);
    char *nl = realloc(text, len + 2);
    if (!nl) {
        free(text);
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory for the index", dir);
    }
    memcpy(nl + len, "\n", 2);
    int plen = snprintf(path, PATH_CAP, "%s/%s", dir, INDEX_NAME);
    hy_status s = plen < 0 || plen >= PATH_CAP
                      ? hy_err_set(err, HY_E_RANGE, "%s: path too long", dir)
                      : write_text(path, nl, err);
    free(nl);
    return s;
}

static hy_status remove_stale_index(const char *dir, struct hy_err *err)
{
    char path[PATH_CAP];
    int len = snprintf(path, PATH_CAP, "%s/%s", dir, INDEX_NAME);
    if (len < 0 || len >= PATH_CAP)
        return hy_err_set(err, HY_E_RANGE, "%s: path too long", dir);
    if (unlink(path) != 0 && errno != ENOENT)
        return hy_err_set(err, HY_E_IO, "%s: cannot remove the stale index: %s", path,
                          strerror(errno));
    return HY_OK;
}

hy_status hy_st_write(const char *dir, const struct hy_st_wtensor *t, size_t n,
                      uint64_t max_shard_bytes, hy_st_fill_fn fill, void *ctx, struct hy_err *err)
{
    struct plan p;
    hy_status s = make_plan(&p, t, n, max_shard_bytes, err);
    void *buf = s == HY_OK ? malloc(p.max_nbytes ? p.max_nbytes : 1) : NULL;
    if (s == HY_OK && !buf)
        s = hy_err_set(err, HY_E_NOMEM, "out of memory for a %zu-byte tensor buffer", p.max_nbytes);
    char path[PATH_CAP];
    for (int k = 0; s == HY_OK && k < p.n_shards; k++) {
        s = shard_path(path, dir, &p, k, err);
        if (s == HY_OK)
            s = write_file(path, t, &p, p.shard_at[k], p.shard_at[k + 1], buf, fill, ctx, err);
    }
    if (s == HY_OK)
        s = p.n_shards > 1 ? write_index(dir, t, &p, err) : remove_stale_index(dir, err);
    free(buf);
    plan_free(&p);
    return s;
}
