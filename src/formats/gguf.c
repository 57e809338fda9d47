/* gguf.c: the GGUF reader (gguf.h has the contract; the writer is gguf_write.c).
 * The header is read through a bounds-checked cursor: every length and count is checked
 * against what is left of the file before anything is allocated or skipped, so a hostile
 * count cannot make us allocate or read past the end. */
#include "formats/gguf.h"

#include "formats/fmap.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct hy_gguf {
    char path[512];
    struct hy_fmap map; /* zeroed for hy_gguf_open_mem */
    const unsigned char *base;
    size_t size;
    uint32_t alignment;
    size_t data_off;
    struct hy_gguf_kv *kv;
    size_t n_kv;
    char *key_pool;
    const struct hy_gguf_kv **kv_sorted; /* by key, for lookups */
    struct hy_gguf_tensor *t;
    size_t n_t;
    const struct hy_gguf_tensor **t_sorted; /* by name */
};

static const struct {
    uint32_t id;
    const char *name;
    uint64_t blk, bytes;
} ggml_types[] = {
    {0, "F32", 1, 4},     {1, "F16", 1, 2},     {2, "Q4_0", 32, 18},  {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},  {7, "Q5_1", 32, 24},  {8, "Q8_0", 32, 34},  {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84}, {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {24, "I8", 1, 1},    {25, "I16", 1, 2},
    {26, "I32", 1, 4},    {27, "I64", 1, 8},    {28, "F64", 1, 8},    {30, "BF16", 1, 2},
};

bool hy_ggml_type_info(uint32_t t, uint64_t *block_elems, uint64_t *block_bytes)
{
    for (size_t i = 0; i < sizeof ggml_types / sizeof ggml_types[0]; i++)
        if (ggml_types[i].id == t) {
            *block_elems = ggml_types[i].blk;
            *block_bytes = ggml_types[i].bytes;
            return true;
        }
    return false;
}

const char *hy_ggml_type_name(uint32_t t)
{
    for (size_t i = 0; i < sizeof ggml_types / sizeof ggml_types[0]; i++)
        if (ggml_types[i].id == t)
            return ggml_types[i].name;
    return "?";
}

uint64_t hy_ggml_nbytes(uint32_t t, uint64_t n)
{
    uint64_t be = 1, bb = 0;
    HY_ASSERT(hy_ggml_type_info(t, &be, &bb) && n % be == 0);
    return n / be * bb;
}

int hy_ggml_to_dtype(uint32_t t)
{
    switch (t) {
    case HY_GGML_F32: return HY_DTYPE_F32;
    case HY_GGML_F16: return HY_DTYPE_F16;
    case HY_GGML_BF16: return HY_DTYPE_BF16;
    case HY_GGML_Q8_0: return HY_DTYPE_Q8_0;
    case HY_GGML_Q4_0: return HY_DTYPE_Q4_0;
    case HY_GGML_Q4_K: return HY_DTYPE_Q4_K;
    case HY_GGML_Q6_K: return HY_DTYPE_Q6_K;
    default: return -1;
    }
}

uint32_t hy_dtype_to_ggml(enum hy_dtype d)
{
    switch (d) {
    case HY_DTYPE_F32: return HY_GGML_F32;
    case HY_DTYPE_F16: return HY_GGML_F16;
    case HY_DTYPE_BF16: return HY_GGML_BF16;
    case HY_DTYPE_Q8_0: return HY_GGML_Q8_0;
    case HY_DTYPE_Q4_0: return HY_GGML_Q4_0;
    case HY_DTYPE_Q4_K: return HY_GGML_Q4_K;
    case HY_DTYPE_Q6_K: return HY_GGML_Q6_K;
    default: break;
    }
    HY_ASSERT(!"dtype without a ggml type");
    return 0;
}

/* ---- bounds-checked cursor ---- */

struct rd {
    const unsigned char *p;
    size_t size, off;
    const char *what;
    struct hy_err *err;
};

static hy_status truncated(struct rd *r, const char *field)
{
    return hy_err_set(r->err, HY_E_FORMAT, "%s: truncated file: %s at offset %zu runs past the end "
                      "(%zu bytes)", r->what, field, r->off, r->size);
}

static hy_status rd_bytes(struct rd *r, size_t n, const unsigned char **out, const char *field)
{
    if (n > r->size - r->off)
        return truncated(r, field);
    *out = r->p + r->off;
    r->off += n;
    return HY_OK;
}

static hy_status rd_u32(struct rd *r, uint32_t *v, const char *field)
{
    const unsigned char *b = NULL;
    hy_status s = rd_bytes(r, 4, &b, field);
    if (!s)
        memcpy(v, b, 4);
    return s;
}

static hy_status rd_u64(struct rd *r, uint64_t *v, const char *field)
{
    const unsigned char *b = NULL;
    hy_status s = rd_bytes(r, 8, &b, field);
    if (!s)
        memcpy(v, b, 8);
    return s;
}

/* A string: u64 length, then the bytes (at most max). */
static hy_status rd_str(struct rd *r, uint64_t max, const unsigned char **s, uint64_t *len,
                        const char *field)
{
    hy_status st = rd_u64(r, len, field);
    if (st)
        return st;
    if (*len > max)
        return hy_err_set(r->err, HY_E_RANGE, "%s: %s at offset %zu has length %" PRIu64
                          ", the limit is %" PRIu64, r->what, field, r->off - 8, *len, max);
    return rd_bytes(r, (size_t)*len, s, field);
}

static size_t scalar_size(uint32_t t)
{
    switch (t) {
    case HY_GGUF_U8: case HY_GGUF_I8: case HY_GGUF_BOOL: return 1;
    case HY_GGUF_U16: case HY_GGUF_I16: return 2;
    case HY_GGUF_U32: case HY_GGUF_I32: case HY_GGUF_F32: return 4;
    case HY_GGUF_U64: case HY_GGUF_I64: case HY_GGUF_F64: return 8;
    default: return 0;
    }
}

static const char *type_name(uint32_t t)
{
    static const char *names[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32",  "f32",
                                  "bool", "string", "array", "u64", "i64", "f64"};
    return t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* Skips one value of type t (not an array), checking it. */
static hy_status skip_scalar(struct rd *r, uint32_t t, const char *key)
{
    if (t == HY_GGUF_STRING) {
        const unsigned char *s;
        uint64_t len;
        return rd_str(r, HY_GGUF_MAX_STRING, &s, &len, key);
    }
    size_t n = scalar_size(t);
    if (!n)
        return hy_err_set(r->err, HY_E_FORMAT, "%s: key %s has unknown value type %" PRIu32,
                          r->what, key, t);
    const unsigned char *b = NULL;
    hy_status s = rd_bytes(r, n, &b, key);
    if (!s && t == HY_GGUF_BOOL && *b > 1)
        return hy_err_set(r->err, HY_E_FORMAT, "%s: key %s: bool value %u is neither 0 nor 1",
                          r->what, key, *b);
    return s;
}

static hy_status read_value(struct rd *r, struct hy_gguf_kv *kv)
{
    uint32_t t;
    hy_status s = rd_u32(r, &t, kv->key);
    if (s)
        return s;
    kv->type = (enum hy_gguf_type)t;
    if (t != HY_GGUF_ARRAY) {
        kv->val = r->p + r->off;
        return skip_scalar(r, t, kv->key);
    }
    uint32_t at;
    uint64_t n;
    if ((s = rd_u32(r, &at, kv->key)) || (s = rd_u64(r, &n, kv->key)))
        return s;
    if (at == HY_GGUF_ARRAY)
        return hy_err_set(r->err, HY_E_FORMAT, "%s: key %s: nested arrays are not supported",
                          r->what, kv->key);
    if (at != HY_GGUF_STRING && !scalar_size(at))
        return hy_err_set(r->err, HY_E_FORMAT, "%s: key %s: array of unknown type %" PRIu32,
                          r->what, kv->key, at);
    if (n > HY_GGUF_MAX_ARRAY)
        return hy_err_set(r->err, HY_E_RANGE, "%s: key %s: array of %" PRIu64 " elements, the "
                          "limit is %u", r->what, kv->key, n, HY_GGUF_MAX_ARRAY);
    kv->arr_type = (enum hy_gguf_type)at;
    kv->arr_n = n;
    kv->val = r->p + r->off;
    if (at != HY_GGUF_STRING && at != HY_GGUF_BOOL) {
        const unsigned char *b = NULL;
        return rd_bytes(r, (size_t)n * scalar_size(at), &b, kv->key);
    }
    for (uint64_t i = 0; i < n && !s; i++)
        s = skip_scalar(r, at, kv->key);
    return s;
}

static int cmp_kv(const void *a, const void *b)
{
    return strcmp((*(const struct hy_gguf_kv *const *)a)->key,
                  (*(const struct hy_gguf_kv *const *)b)->key);
}

static int cmp_tensor_name(const void *a, const void *b)
{
    return strcmp((*(const struct hy_gguf_tensor *const *)a)->name,
                  (*(const struct hy_gguf_tensor *const *)b)->name);
}

static int cmp_tensor_off(const void *a, const void *b)
{
    uint64_t x = (*(const struct hy_gguf_tensor *const *)a)->offset;
    uint64_t y = (*(const struct hy_gguf_tensor *const *)b)->offset;
    return x < y ? -1 : x > y;
}

static hy_status read_kvs(struct hy_gguf *g, struct rd *r)
{
    /* a key-value pair takes at least 8 (key length) + 1 + 4 (type) + 1 bytes */
    if (g->n_kv > (r->size - r->off) / 14)
        return hy_err_set(r->err, HY_E_FORMAT, "%s: %zu metadata pairs cannot fit in the file",
                          r->what, g->n_kv);
    g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->key_pool = malloc(g->n_kv * HY_GGUF_MAX_KEY + 1);
    g->kv_sorted = malloc((g->n_kv ? g->n_kv : 1) * sizeof *g->kv_sorted);
    if (!g->kv || !g->key_pool || !g->kv_sorted)
        return hy_err_set(r->err, HY_E_NOMEM, "%s: out of memory", r->what);
    hy_status s = HY_OK;
    for (size_t i = 0; i < g->n_kv && !s; i++) {
        const unsigned char *k;
        uint64_t len;
        if ((s = rd_str(r, HY_GGUF_MAX_KEY - 1, &k, &len, "metadata key")))
            break;
        if (len == 0 || memchr(k, 0, (size_t)len))
            return hy_err_set(r->err, HY_E_FORMAT, "%s: metadata key %zu is empty or holds a NUL",
                              r->what, i);
        char *key = g->key_pool + i * HY_GGUF_MAX_KEY;
        memcpy(key, k, (size_t)len);
        key[len] = 0;
        g->kv[i].key = key;
        g->kv_sorted[i] = &g->kv[i];
        s = read_value(r, &g->kv[i]);
    }
    if (s)
        return s;
    qsort(g->kv_sorted, g->n_kv, sizeof *g->kv_sorted, cmp_kv);
    for (size_t i = 1; i < g->n_kv; i++)
        if (!strcmp(g->kv_sorted[i]->key, g->kv_sorted[i - 1]->key))
            return hy_err_set(r->err, HY_E_FORMAT, "%s: duplicate metadata key %s", r->what,
                              g->kv_sorted[i]->key);
    return HY_OK;
}

static hy_status read_tensor_info(struct rd *r, struct hy_gguf_tensor *t, size_t i)
{
    const unsigned char *name;
    uint64_t len;
    uint32_t nd;
    hy_status s = rd_str(r, HY_GGUF_MAX_NAME - 1, &name, &len, "tensor name");
    if (s)
        return s;
    if (len == 0 || memchr(name, 0, (size_t)len))
        return hy_err_set(r->err, HY_E_FORMAT, "%s: tensor %zu: name is empty or holds a NUL",
                          r->what, i);
    memcpy(t->name, name, (size_t)len);
    t->name[len] = 0;
    if ((s = rd_u32(r, &nd, t->name)))
        return s;
    if (nd < 1 || nd > HY_GGUF_MAX_DIMS)
        return hy_err_set(r->err, HY_E_FORMAT, "%s: tensor %s has %" PRIu32 " dims (1..%d)",
                          r->what, t->name, nd, HY_GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    t->n_elems = 1;
    for (int d = 0; d < HY_GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d < t->n_dims && (s = rd_u64(r, &t->ne[d], t->name)))
            return s;
        if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX / t->n_elems)
            return hy_err_set(r->err, HY_E_FORMAT, "%s: tensor %s: dim %d is %" PRIu64
                              " (zero, or the element count overflows)", r->what, t->name, d,
                              t->ne[d]);
        t->n_elems *= t->ne[d];
    }
    if ((s = rd_u32(r, &t->ggml_type, t->name)) || (s = rd_u64(r, &t->offset, t->name)))
        return s;
    uint64_t be, bb;
    if (!hy_ggml_type_info(t->ggml_type, &be, &bb))
        return hy_err_set(r->err, HY_E_UNSUPPORTED, "%s: tensor %s has unknown ggml type %" PRIu32,
                          r->what, t->name, t->ggml_type);
    if (t->ne[0] % be)
        return hy_err_set(r->err, HY_E_FORMAT, "%s: tensor %s: ne[0] = %" PRIu64 " is not a "
                          "multiple of the %s block (%" PRIu64 ")", r->what, t->name, t->ne[0],
                          hy_ggml_type_name(t->ggml_type), be);
    uint64_t nb = t->n_elems / be * bb; /* n_elems < 2^63 and bb <= 292: check the product */
    if (t->n_elems / be > SIZE_MAX / bb)
        return hy_err_set(r->err, HY_E_RANGE, "%s: tensor %s is too large", r->what, t->name);
    t->nbytes = (size_t)nb;
    return HY_OK;
}

static hy_status read_alignment(struct hy_gguf *g, struct hy_err *err)
{
    g->alignment = HY_GGUF_DEFAULT_ALIGNMENT;
    const struct hy_gguf_kv *kv = hy_gguf_find_kv(g, "general.alignment");
    if (!kv)
        return HY_OK;
    if (kv->type != HY_GGUF_U32)
        return hy_err_set(err, HY_E_FORMAT, "%s: general.alignment has type %s, not u32", g->path,
                          type_name(kv->type));
    uint32_t a;
    memcpy(&a, kv->val, 4);
    if (a == 0 || (a & (a - 1)) || a > (1u << 20))
        return hy_err_set(err, HY_E_FORMAT, "%s: general.alignment %" PRIu32 " is not a power of "
                          "two up to 2^20", g->path, a);
    g->alignment = a;
    return HY_OK;
}

static hy_status read_tensors(struct hy_gguf *g, struct rd *r)
{
    if (g->n_t > (r->size - r->off) / 33) /* name length 8 + 1, n_dims 4, ne 8, type 4, offset 8 */
        return hy_err_set(r->err, HY_E_FORMAT, "%s: %zu tensors cannot fit in the file", r->what,
                          g->n_t);
    g->t = calloc(g->n_t ? g->n_t : 1, sizeof *g->t);
    g->t_sorted = malloc((g->n_t ? g->n_t : 1) * sizeof *g->t_sorted);
    if (!g->t || !g->t_sorted)
        return hy_err_set(r->err, HY_E_NOMEM, "%s: out of memory", r->what);
    for (size_t i = 0; i < g->n_t; i++) {
        hy_status s = read_tensor_info(r, &g->t[i], i);
        if (s)
            return s;
        g->t_sorted[i] = &g->t[i];
    }
    size_t a = g->alignment;
    g->data_off = r->off + (a - r->off % a) % a;
    if (g->n_t && g->data_off > r->size)
        return hy_err_set(r->err, HY_E_FORMAT, "%s: truncated file: the data section would start "
                          "at %zu, past the end (%zu bytes)", r->what, g->data_off, r->size);
    uint64_t room = g->n_t ? (uint64_t)(r->size - g->data_off) : 0;
    for (size_t i = 0; i < g->n_t; i++) {
        struct hy_gguf_tensor *t = &g->t[i];
        if (t->offset % a)
            return hy_err_set(r->err, HY_E_FORMAT, "%s: tensor %s: offset %" PRIu64 " is not a "
                              "multiple of the alignment %zu", r->what, t->name, t->offset, a);
        if (t->offset > room || t->nbytes > room - t->offset)
            return hy_err_set(r->err, HY_E_FORMAT, "%s: tensor %s: data [%" PRIu64 ", +%zu) runs "
                              "past the end of the file (data section %" PRIu64 " bytes)",
                              r->what, t->name, t->offset, t->nbytes, room);
        t->data = r->p + g->data_off + t->offset;
    }
    qsort(g->t_sorted, g->n_t, sizeof *g->t_sorted, cmp_tensor_off);
    for (size_t i = 1; i < g->n_t; i++) {
        const struct hy_gguf_tensor *p = g->t_sorted[i - 1], *q = g->t_sorted[i];
        if (p->offset + p->nbytes > q->offset)
            return hy_err_set(r->err, HY_E_FORMAT, "%s: tensors %s and %s overlap", r->what,
                              p->name, q->name);
    }
    qsort(g->t_sorted, g->n_t, sizeof *g->t_sorted, cmp_tensor_name);
    for (size_t i = 1; i < g->n_t; i++)
        if (!strcmp(g->t_sorted[i]->name, g->t_sorted[i - 1]->name))
            return hy_err_set(r->err, HY_E_FORMAT, "%s: duplicate tensor name %s", r->what,
                              g->t_sorted[i]->name);
    return HY_OK;
}

static hy_status parse(struct hy_gguf *g, struct hy_err *err)
{
    struct rd r = {g->base, g->size, 0, g->path, err};
    const unsigned char *magic = NULL;
    uint32_t version;
    uint64_t n_t, n_kv;
    hy_status s = rd_bytes(&r, 4, &magic, "magic");
    if (s)
        return s;
    if (memcmp(magic, "GGUF", 4))
        return hy_err_set(err, HY_E_FORMAT, "%s: not a GGUF file (bad magic)", g->path);
    if ((s = rd_u32(&r, &version, "version")))
        return s;
    if (version != HY_GGUF_VERSION)
        return hy_err_set(err, version == 1 || version == 2 ? HY_E_UNSUPPORTED : HY_E_FORMAT,
                          "%s: GGUF version %" PRIu32 " (hymt reads version 3; a big-endian "
                          "file would also show this)", g->path, version);
    if ((s = rd_u64(&r, &n_t, "tensor count")) || (s = rd_u64(&r, &n_kv, "metadata count")))
        return s;
    if (n_t > HY_GGUF_MAX_TENSORS || n_kv > HY_GGUF_MAX_KV)
        return hy_err_set(err, HY_E_RANGE, "%s: %" PRIu64 " tensors and %" PRIu64 " metadata "
                          "pairs (limits %u and %u)", g->path, n_t, n_kv, HY_GGUF_MAX_TENSORS,
                          HY_GGUF_MAX_KV);
    g->n_t = (size_t)n_t;
    g->n_kv = (size_t)n_kv;
    if ((s = read_kvs(g, &r)) || (s = read_alignment(g, err)))
        return s;
    return read_tensors(g, &r);
}

hy_status hy_gguf_open_mem(struct hy_gguf **out, const void *data, size_t size, const char *what,
                           struct hy_err *err)
{
    *out = NULL;
    struct hy_gguf *g = calloc(1, sizeof *g);
    if (!g)
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", what);
    snprintf(g->path, sizeof g->path, "%s", what);
    g->base = data;
    g->size = size;
    hy_status s = parse(g, err);
    if (s) {
        hy_gguf_close(g);
        return s;
    }
    *out = g;
    return HY_OK;
}

hy_status hy_gguf_open(struct hy_gguf **out, const char *path, struct hy_err *err)
{
    *out = NULL;
    struct hy_fmap map;
    hy_status s = hy_fmap_open(&map, path, err);
    if (s)
        return s;
    struct hy_gguf *g = NULL;
    s = hy_gguf_open_mem(&g, map.data, map.size, path, err);
    if (s) {
        hy_fmap_close(&map);
        return s;
    }
    g->map = map;
    *out = g;
    return HY_OK;
}

void hy_gguf_release_pages(const struct hy_gguf *g)
{
    if (g)
        hy_fmap_release(&g->map);
}

void hy_gguf_close(struct hy_gguf *g)
{
    if (!g)
        return;
    hy_fmap_close(&g->map);
    free(g->kv);
    free(g->key_pool);
    free(g->kv_sorted);
    free(g->t);
    free(g->t_sorted);
    free(g);
}

bool hy_gguf_is_gguf(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
    if (fd < 0)
        return false;
    struct stat sb;
    char m[4];
    bool yes = !fstat(fd, &sb) && S_ISREG(sb.st_mode) && read(fd, m, 4) == 4 &&
               !memcmp(m, "GGUF", 4);
    close(fd);
    return yes;
}

const char *hy_gguf_path(const struct hy_gguf *g) { return g->path; }
uint32_t hy_gguf_alignment(const struct hy_gguf *g) { return g->alignment; }
size_t hy_gguf_kv_count(const struct hy_gguf *g) { return g->n_kv; }
size_t hy_gguf_tensor_count(const struct hy_gguf *g) { return g->n_t; }

const struct hy_gguf_kv *hy_gguf_kv_at(const struct hy_gguf *g, size_t i)
{
    HY_ASSERT(i < g->n_kv);
    return &g->kv[i];
}

const struct hy_gguf_tensor *hy_gguf_tensor_at(const struct hy_gguf *g, size_t i)
{
    HY_ASSERT(i < g->n_t);
    return &g->t[i];
}

const struct hy_gguf_kv *hy_gguf_find_kv(const struct hy_gguf *g, const char *key)
{
    struct hy_gguf_kv k = {.key = key};
    const struct hy_gguf_kv *kp = &k;
    const struct hy_gguf_kv *const *r = bsearch(&kp, g->kv_sorted, g->n_kv, sizeof *g->kv_sorted, cmp_kv);
    return r ? *r : NULL;
}

const struct hy_gguf_tensor *hy_gguf_find_tensor(const struct hy_gguf *g, const char *name)
{
    if (strlen(name) >= HY_GGUF_MAX_NAME)
        return NULL;
    struct hy_gguf_tensor t;
    snprintf(t.name, sizeof t.name, "%s", name);
    const struct hy_gguf_tensor *tp = &t;
    const struct hy_gguf_tensor *const *r =
        bsearch(&tp, g->t_sorted, g->n_t, sizeof *g->t_sorted, cmp_tensor_name);
    return r ? *r : NULL;
}

/* ---- typed getters ---- */

static hy_status lookup(const struct hy_gguf *g, const char *key, bool required,
                        const struct hy_gguf_kv **kv, struct hy_err *err)
{
    *kv = hy_gguf_find_kv(g, key);
    if (!*kv && required)
        return hy_err_set(err, HY_E_NOTFOUND, "%s: missing metadata key %s", g->path, key);
    return HY_OK;
}

static hy_status wrong_type(const struct hy_gguf *g, const struct hy_gguf_kv *kv, const char *want,
                            struct hy_err *err)
{
    return hy_err_set(err, HY_E_FORMAT, "%s: metadata key %s has type %s, expected %s", g->path,
                      kv->key, type_name(kv->type), want);
}

/* Integer value at p of type t (an integer type) as int64; false for other types. */
static bool int_at(const unsigned char *p, uint32_t t, int64_t *v)
{
    union {
        uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
        uint64_t u64; int64_t i64;
    } u;
    size_t n = scalar_size(t);
    if (!n || t == HY_GGUF_F32 || t == HY_GGUF_F64 || t == HY_GGUF_BOOL)
        return false;
    memcpy(&u, p, n);
    switch (t) {
    case HY_GGUF_U8: *v = u.u8; break;
    case HY_GGUF_I8: *v = u.i8; break;
    case HY_GGUF_U16: *v = u.u16; break;
    case HY_GGUF_I16: *v = u.i16; break;
    case HY_GGUF_U32: *v = u.u32; break;
    case HY_GGUF_I32: *v = u.i32; break;
    case HY_GGUF_U64: *v = u.u64 > (uint64_t)INT64_MAX ? -1 : (int64_t)u.u64; break;
    default: *v = u.i64; break;
    }
    return true;
}

hy_status hy_gguf_get_uint(const struct hy_gguf *g, const char *key, bool required, uint64_t *out,
                           struct hy_err *err)
{
    const struct hy_gguf_kv *kv;
    hy_status s = lookup(g, key, required, &kv, err);
    if (s || !kv)
        return s;
    int64_t v;
    if (!int_at(kv->val, kv->type, &v))
        return wrong_type(g, kv, "an integer", err);
    if (v < 0)
        return hy_err_set(err, HY_E_RANGE, "%s: metadata key %s is negative or too large", g->path,
                          key);
    *out = (uint64_t)v;
    return HY_OK;
}

hy_status hy_gguf_get_real(const struct hy_gguf *g, const char *key, bool required, double *out,
                           struct hy_err *err)
{
    const struct hy_gguf_kv *kv;
    hy_status s = lookup(g, key, required, &kv, err);
    if (s || !kv)
        return s;
    if (kv->type == HY_GGUF_F32) {
        float f;
        memcpy(&f, kv->val, 4);
        *out = f;
    } else if (kv->type == HY_GGUF_F64) {
        memcpy(out, kv->val, 8);
    } else {
        return wrong_type(g, kv, "f32 or f64", err);
    }
    return HY_OK;
}

hy_status hy_gguf_get_bool(const struct hy_gguf *g, const char *key, bool required, bool *out,
                           struct hy_err *err)
{
    const struct hy_gguf_kv *kv;
    hy_status s = lookup(g, key, required, &kv, err);
    if (s || !kv)
        return s;
    if (kv->type != HY_GGUF_BOOL)
        return wrong_type(g, kv, "bool", err);
    *out = kv->val[0] != 0;
    return HY_OK;
}

hy_status hy_gguf_get_str(const struct hy_gguf *g, const char *key, bool required, const char **str,
                          size_t *len, struct hy_err *err)
{
    const struct hy_gguf_kv *kv;
    hy_status s = lookup(g, key, required, &kv, err);
    if (s || !kv)
        return s;
    if (kv->type != HY_GGUF_STRING)
        return wrong_type(g, kv, "string", err);
    uint64_t n;
    memcpy(&n, kv->val, 8);
    *str = (const char *)kv->val + 8;
    *len = (size_t)n;
    return HY_OK;
}

hy_status hy_gguf_get_arr(const struct hy_gguf *g, const char *key, bool required, int arr_type,
                          const struct hy_gguf_kv **out, struct hy_err *err)
{
    const struct hy_gguf_kv *kv;
    hy_status s = lookup(g, key, required, &kv, err);
    *out = NULL;
    if (s || !kv)
        return s;
    if (kv->type != HY_GGUF_ARRAY)
        return wrong_type(g, kv, "an array", err);
    if (arr_type >= 0 && kv->arr_type != (enum hy_gguf_type)arr_type)
        return hy_err_set(err, HY_E_FORMAT, "%s: metadata key %s is an array of %s, expected %s",
                          g->path, key, type_name(kv->arr_type), type_name((uint32_t)arr_type));
    *out = kv;
    return HY_OK;
}

int64_t hy_gguf_arr_int(const struct hy_gguf_kv *kv, uint64_t i)
{
    HY_ASSERT(kv->type == HY_GGUF_ARRAY && i < kv->arr_n);
    int64_t v = 0;
    HY_ASSERT(int_at(kv->val + i * scalar_size(kv->arr_type), kv->arr_type, &v));
    return v;
}

void hy_gguf_arr_str_next(const struct hy_gguf_kv *kv, size_t *pos, const char **s, size_t *len)
{
    HY_ASSERT(kv->type == HY_GGUF_ARRAY && kv->arr_type == HY_GGUF_STRING);
    uint64_t n;
    memcpy(&n, kv->val + *pos, 8);
    *s = (const char *)kv->val + *pos + 8;
    *len = (size_t)n;
    *pos += 8 + (size_t)n;
}
