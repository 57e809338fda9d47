/* gguf_write.c: the streaming GGUF writer (gguf.h has the contract; the reader is gguf.c).
 * Metadata and tensor infos are serialised into memory buffers as they are declared; the
 * header goes out at hy_gguf_w_begin_data, then the tensors' bytes in order, each padded
 * with zeros to the alignment (offsets are relative to the aligned data section). */
#include "formats/gguf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
    unsigned char *p;
    size_t n, cap;
};

struct wtensor {
    char name[HY_GGUF_MAX_NAME];
    uint64_t nbytes;
};

struct hy_gguf_w {
    FILE *f;
    char path[512];
    struct buf kv, ti;
    uint64_t n_kv;
    char **keys; /* declared keys, for duplicate checks */
    struct wtensor *t;
    size_t n_t, cap_t;
    uint64_t next_off; /* data offset of the next declared tensor */
    uint32_t alignment;
    bool started, has_alignment;
    size_t cur;       /* tensor being written */
    uint64_t cur_done; /* its bytes written so far */
};

static hy_status put(struct buf *b, const void *p, size_t n, struct hy_err *err)
{
    if (b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2 + 256;
        unsigned char *q = realloc(b->p, cap);
        if (!q)
            return hy_err_set(err, HY_E_NOMEM, "GGUF writer: out of memory");
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    return HY_OK;
}

static hy_status put_u32(struct buf *b, uint32_t v, struct hy_err *err) { return put(b, &v, 4, err); }
static hy_status put_u64(struct buf *b, uint64_t v, struct hy_err *err) { return put(b, &v, 8, err); }

static hy_status put_str(struct buf *b, const char *s, size_t n, struct hy_err *err)
{
    hy_status st = put_u64(b, n, err);
    return st ? st : put(b, s, n, err);
}

hy_status hy_gguf_w_open(struct hy_gguf_w **out, const char *path, struct hy_err *err)
{
    *out = NULL;
    struct hy_gguf_w *w = calloc(1, sizeof *w);
    if (!w)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    snprintf(w->path, sizeof w->path, "%s", path);
    w->alignment = HY_GGUF_DEFAULT_ALIGNMENT;
    w->f = fopen(path, "wb");
    if (!w->f) {
        hy_status s = hy_err_set(err, HY_E_IO, "%s: cannot create: %s", path, strerror(errno));
        free(w);
        return s;
    }
    *out = w;
    return HY_OK;
}

/* Starts a pair: checks the key and writes it with the value type. */
static hy_status key_start(struct hy_gguf_w *w, const char *key, uint32_t type, struct hy_err *err)
{
    size_t len = strlen(key);
    if (w->started)
        return hy_err_set(err, HY_E_INVAL, "%s: metadata %s after the data started", w->path, key);
    if (len == 0 || len >= HY_GGUF_MAX_KEY)
        return hy_err_set(err, HY_E_INVAL, "%s: metadata key '%.60s' is empty or too long", w->path,
                          key);
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->keys[i], key))
            return hy_err_set(err, HY_E_INVAL, "%s: duplicate metadata key %s", w->path, key);
    char **keys = realloc(w->keys, (size_t)(w->n_kv + 1) * sizeof *keys);
    if (!keys)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    w->keys = keys;
    if (!(keys[w->n_kv] = strdup(key)))
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    w->n_kv++;
    hy_status s = put_str(&w->kv, key, len, err);
    return s ? s : put_u32(&w->kv, type, err);
}

static hy_status scalar(struct hy_gguf_w *w, const char *key, uint32_t type, const void *v,
                        size_t n, struct hy_err *err)
{
    hy_status s = key_start(w, key, type, err);
    return s ? s : put(&w->kv, v, n, err);
}

hy_status hy_gguf_w_u32(struct hy_gguf_w *w, const char *key, uint32_t v, struct hy_err *err)
{
    if (!strcmp(key, "general.alignment")) {
        if (v == 0 || (v & (v - 1)) || v > (1u << 20))
            return hy_err_set(err, HY_E_INVAL, "general.alignment %" PRIu32 " is not a power of 2 "
                              "up to 2^20", v);
        if (w->n_t)
            return hy_err_set(err, HY_E_INVAL, "general.alignment must come before the tensors");
        w->alignment = v;
        w->has_alignment = true;
    }
    return scalar(w, key, HY_GGUF_U32, &v, 4, err);
}

hy_status hy_gguf_w_i32(struct hy_gguf_w *w, const char *key, int32_t v, struct hy_err *err)
{
    return scalar(w, key, HY_GGUF_I32, &v, 4, err);
}

hy_status hy_gguf_w_f32(struct hy_gguf_w *w, const char *key, float v, struct hy_err *err)
{
    return scalar(w, key, HY_GGUF_F32, &v, 4, err);
}

hy_status hy_gguf_w_f64(struct hy_gguf_w *w, const char *key, double v, struct hy_err *err)
{
    return scalar(w, key, HY_GGUF_F64, &v, 8, err);
}

hy_status hy_gguf_w_bool(struct hy_gguf_w *w, const char *key, bool v, struct hy_err *err)
{
    unsigned char b = v ? 1 : 0;
    return scalar(w, key, HY_GGUF_BOOL, &b, 1, err);
}

hy_status hy_gguf_w_str(struct hy_gguf_w *w, const char *key, const char *s, struct hy_err *err)
{
    hy_status st = key_start(w, key, HY_GGUF_STRING, err);
    return st ? st : put_str(&w->kv, s, strlen(s), err);
}

hy_status hy_gguf_w_arr_str(struct hy_gguf_w *w, const char *key, const char *const *s,
                            const size_t *lens, uint64_t n, struct hy_err *err)
{
    hy_status st = key_start(w, key, HY_GGUF_ARRAY, err);
    if (!st)
        st = put_u32(&w->kv, HY_GGUF_STRING, err);
    if (!st)
        st = put_u64(&w->kv, n, err);
    for (uint64_t i = 0; i < n && !st; i++)
        st = put_str(&w->kv, s[i], lens ? lens[i] : strlen(s[i]), err);
    return st;
}

hy_status hy_gguf_w_arr_i32(struct hy_gguf_w *w, const char *key, const int32_t *v, uint64_t n,
                            struct hy_err *err)
{
    hy_status st = key_start(w, key, HY_GGUF_ARRAY, err);
    if (!st)
        st = put_u32(&w->kv, HY_GGUF_I32, err);
    if (!st)
        st = put_u64(&w->kv, n, err);
    return st ? st : put(&w->kv, v, (size_t)n * 4, err);
}

hy_status hy_gguf_w_tensor(struct hy_gguf_w *w, const char *name, uint32_t type, int n_dims,
                           const uint64_t *ne, struct hy_err *err)
{
    size_t len = strlen(name);
    uint64_t be, bb;
    if (w->started)
        return hy_err_set(err, HY_E_INVAL, "%s: tensor %s declared after the data started",
                          w->path, name);
    if (len == 0 || len >= HY_GGUF_MAX_NAME)
        return hy_err_set(err, HY_E_INVAL, "tensor name '%.60s' is empty or too long", name);
    if (!hy_ggml_type_info(type, &be, &bb))
        return hy_err_set(err, HY_E_INVAL, "tensor %s: unknown ggml type %" PRIu32, name, type);
    if (n_dims < 1 || n_dims > HY_GGUF_MAX_DIMS)
        return hy_err_set(err, HY_E_INVAL, "tensor %s: %d dims", name, n_dims);
    uint64_t n = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > (uint64_t)INT64_MAX / n)
            return hy_err_set(err, HY_E_INVAL, "tensor %s: bad dim %d", name, d);
        n *= ne[d];
    }
    if (ne[0] % be)
        return hy_err_set(err, HY_E_INVAL, "tensor %s: ne[0] %" PRIu64 " is not a multiple of "
                          "the %s block %" PRIu64, name, ne[0], hy_ggml_type_name(type), be);
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name))
            return hy_err_set(err, HY_E_INVAL, "duplicate tensor name %s", name);
    if (w->n_t == w->cap_t) {
        size_t cap = w->cap_t * 2 + 64;
        struct wtensor *t = realloc(w->t, cap * sizeof *t);
        if (!t)
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        w->t = t;
        w->cap_t = cap;
    }
    struct wtensor *t = &w->t[w->n_t++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->nbytes = n / be * bb;
    hy_status s = put_str(&w->ti, name, len, err);
    if (!s)
        s = put_u32(&w->ti, (uint32_t)n_dims, err);
    for (int d = 0; d < n_dims && !s; d++)
        s = put_u64(&w->ti, ne[d], err);
    if (!s)
        s = put_u32(&w->ti, type, err);
    if (!s)
        s = put_u64(&w->ti, w->next_off, err);
    uint64_t a = w->alignment;
    w->next_off += (t->nbytes + a - 1) / a * a;
    return s;
}

static hy_status wr(struct hy_gguf_w *w, const void *p, size_t n, struct hy_err *err)
{
    if (n && fwrite(p, 1, n, w->f) != n)
        return hy_err_set(err, HY_E_IO, "%s: write failed: %s", w->path, strerror(errno));
    return HY_OK;
}

static hy_status pad(struct hy_gguf_w *w, uint64_t written, struct hy_err *err)
{
    static const unsigned char zeros[4096];
    uint64_t a = w->alignment, n = (a - written % a) % a;
    hy_status s = HY_OK;
    while (n && !s) {
        size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
        s = wr(w, zeros, k, err);
        n -= k;
    }
    return s;
}

hy_status hy_gguf_w_begin_data(struct hy_gguf_w *w, struct hy_err *err)
{
    if (w->started)
        return hy_err_set(err, HY_E_INVAL, "%s: begin_data called twice", w->path);
    hy_status s = HY_OK;
    if (!w->has_alignment) /* after the tensors: their offsets used the default already */
        s = scalar(w, "general.alignment", HY_GGUF_U32, &w->alignment, 4, err);
    w->started = true;
    struct buf h = {0};
    if (!s)
        s = put(&h, "GGUF", 4, err);
    if (!s)
        s = put_u32(&h, HY_GGUF_VERSION, err);
    if (!s)
        s = put_u64(&h, w->n_t, err);
    if (!s)
        s = put_u64(&h, w->n_kv, err);
    if (!s)
        s = wr(w, h.p, h.n, err);
    if (!s)
        s = wr(w, w->kv.p, w->kv.n, err);
    if (!s)
        s = wr(w, w->ti.p, w->ti.n, err);
    if (!s)
        s = pad(w, h.n + w->kv.n + w->ti.n, err);
    free(h.p);
    return s;
}

hy_status hy_gguf_w_data(struct hy_gguf_w *w, const void *data, size_t n, struct hy_err *err)
{
    if (!w->started)
        return hy_err_set(err, HY_E_INVAL, "%s: tensor data before begin_data", w->path);
    while (n) {
        if (w->cur >= w->n_t)
            return hy_err_set(err, HY_E_INVAL, "%s: more tensor data than declared", w->path);
        struct wtensor *t = &w->t[w->cur];
        uint64_t left = t->nbytes - w->cur_done;
        size_t k = n < left ? n : (size_t)left;
        hy_status s = wr(w, data, k, err);
        if (s)
            return s;
        data = (const unsigned char *)data + k;
        n -= k;
        w->cur_done += k;
        if (w->cur_done == t->nbytes) {
            if (w->cur + 1 < w->n_t && (s = pad(w, t->nbytes, err)))
                return s;
            w->cur++;
            w->cur_done = 0;
        }
    }
    return HY_OK;
}

static void w_free(struct hy_gguf_w *w)
{
    if (w->f)
        fclose(w->f);
    for (uint64_t i = 0; i < w->n_kv; i++)
        free(w->keys[i]);
    free(w->keys);
    free(w->kv.p);
    free(w->ti.p);
    free(w->t);
    free(w);
}

hy_status hy_gguf_w_finish(struct hy_gguf_w *w, struct hy_err *err)
{
    hy_status s = HY_OK;
    if (!w->started)
        s = hy_gguf_w_begin_data(w, err);
    if (!s && w->cur < w->n_t)
        s = hy_err_set(err, HY_E_INVAL, "%s: tensor %s has %" PRIu64 " of %" PRIu64 " bytes",
                       w->path, w->t[w->cur].name, w->cur_done, w->t[w->cur].nbytes);
    if (!s && (fflush(w->f) != 0 || ferror(w->f)))
        s = hy_err_set(err, HY_E_IO, "%s: write failed: %s", w->path, strerror(errno));
    if (!s) {
        int rc = fclose(w->f);
        w->f = NULL;
        if (rc != 0)
            s = hy_err_set(err, HY_E_IO, "%s: close failed: %s", w->path, strerror(errno));
    }
    w_free(w);
    return s;
}

void hy_gguf_w_abort(struct hy_gguf_w *w)
{
    if (w)
        w_free(w);
}
