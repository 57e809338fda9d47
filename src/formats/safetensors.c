/* safetensors.c: the reader (see safetensors_write.c for the writer).
 * Layout of one file: u64 little-endian N, N bytes of JSON header, then the data section.
 * Header entries give data_offsets relative to the data section (byte 8 + N). */
#include "formats/safetensors.h"

#include "core/json.h"
#include "formats/fmap.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"
#define PATH_CAP 4096
#define MSG_NAME "%.80s" /* tensor names in messages are cut so the problem still fits */

struct st_file {
    char *path; /* as opened: dir/name */
    const char *name; /* the part after dir/ (points into path) */
    struct hy_fmap map;
};

struct hy_st {
    struct st_file *files;
    int n_files;
    struct hy_st_tensor *tensors; /* file by file; by data offset within a file */
    size_t n_tensors, cap_tensors;
    const struct hy_st_tensor **by_name; /* sorted by name, for hy_st_find */
    struct hy_st_tensor *virt;           /* hy_st_put's tensors, sorted by name */
    size_t n_virt, cap_virt;
    void **owned;                        /* buffers freed by hy_st_close */
    size_t n_owned, cap_owned;
    struct hy_st_itensor *ints;          /* integer tensors, sorted by name once opened */
    size_t n_ints, cap_ints;
};

/* While a file is parsed, its integer tensors sit among the others with these private dtype
 * codes (never seen outside this file): INT_CODE + enum hy_st_int_type. */
#define INT_CODE 64
static const char *const int_names[3] = {"I32", "I8", "U8"};
static const size_t int_sizes[3] = {4, 1, 1};

static bool is_int_code(enum hy_dtype d) { return (int)d >= INT_CODE; }
static size_t elem_size(enum hy_dtype d)
{
    return is_int_code(d) ? int_sizes[(int)d - INT_CODE] : hy_dtype_size(d);
}
static const char *elem_name(enum hy_dtype d)
{
    return is_int_code(d) ? int_names[(int)d - INT_CODE] : hy_dtype_name(d);
}

/* ---- one file ---- */

static uint64_t read_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static hy_status parse_dtype(const json_t *v, enum hy_dtype *out, struct hy_err *err)
{
    /* Valid safetensors dtypes that hymt does not read: "unsupported", not "unknown". */
    static const char *const other[] = {"F64",     "I16",     "I64",     "U16",     "U32", "U64",
                                        "BOOL",    "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2",
                                        "F4",      "C64"};
    if (!json_is_string(v))
        return hy_err_set(err, HY_E_FORMAT, "dtype must be a string, got %s", hy_json_type_name(v));
    const char *s = json_string_value(v);
    int d = hy_dtype_parse(s);
    for (int i = 0; i < 3 && d < 0; i++)
        d = strcmp(s, int_names[i]) ? -1 : INT_CODE + i;
    if (d >= 0) {
        *out = (enum hy_dtype)d;
        return HY_OK;
    }
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        if (!strcmp(s, other[i]))
            return hy_err_set(err, HY_E_UNSUPPORTED, "unsupported dtype %s (F32, F16, BF16, "
                              "F8_E4M3, I32, I8, U8 are read)", s);
    return hy_err_set(err, HY_E_FORMAT, "unknown dtype '%.32s'", s);
}

static hy_status parse_shape(const json_t *v, struct hy_st_tensor *t, struct hy_err *err)
{
    if (!json_is_array(v))
        return hy_err_set(err, HY_E_FORMAT, "shape must be an array, got %s", hy_json_type_name(v));
    size_t nd = json_array_size(v);
    if (nd > HY_ST_MAX_DIMS)
        return hy_err_set(err, HY_E_UNSUPPORTED, "shape has %zu dims (at most %d)", nd,
                          HY_ST_MAX_DIMS);
    int64_t n = 1;
    for (size_t i = 0; i < nd; i++) {
        const json_t *d = json_array_get(v, i);
        if (!json_is_integer(d))
            return hy_err_set(err, HY_E_FORMAT, "shape[%zu] must be an integer, got %s", i,
                              hy_json_type_name(d));
        int64_t x = (int64_t)json_integer_value(d);
        if (x < 0)
            return hy_err_set(err, HY_E_FORMAT, "shape[%zu] is negative (%" PRId64 ")", i, x);
        if (x != 0 && n > INT64_MAX / x)
            return hy_err_set(err, HY_E_FORMAT, "element count of the shape overflows");
        n *= x;
        t->shape[i] = x;
    }
    t->n_dims = (int)nd;
    t->n_elems = n;
    return HY_OK;
}

/* Checks data_offsets against the shape and the data section; sets t->data and t->nbytes. */
static hy_status parse_offsets(const json_t *v, const unsigned char *base, uint64_t data_size,
                               struct hy_st_tensor *t, struct hy_err *err)
{
    if (!json_is_array(v) || json_array_size(v) != 2)
        return hy_err_set(err, HY_E_FORMAT, "data_offsets must be an array [begin, end]");
    const json_t *jb = json_array_get(v, 0), *je = json_array_get(v, 1);
    if (!json_is_integer(jb) || !json_is_integer(je))
        return hy_err_set(err, HY_E_FORMAT, "data_offsets must hold two integers");
    int64_t b = (int64_t)json_integer_value(jb), e = (int64_t)json_integer_value(je);
    if (b < 0 || e < 0)
        return hy_err_set(err, HY_E_FORMAT, "data_offsets [%" PRId64 ", %" PRId64 "] are negative",
                          b, e);
    if (e < b)
        return hy_err_set(err, HY_E_FORMAT, "data_offsets end %" PRId64 " < begin %" PRId64, e, b);
    int64_t esize = (int64_t)elem_size(t->dtype);
    if (t->n_elems > INT64_MAX / esize)
        return hy_err_set(err, HY_E_FORMAT, "byte size of the shape overflows");
    if (e - b != t->n_elems * esize)
        return hy_err_set(err, HY_E_FORMAT,
                          "data_offsets [%" PRId64 ", %" PRId64 "] hold %" PRId64
                          " bytes but %" PRId64 " %s elements need %" PRId64,
                          b, e, e - b, t->n_elems, elem_name(t->dtype), t->n_elems * esize);
    if ((uint64_t)e > data_size)
        return hy_err_set(err, HY_E_FORMAT,
                          "data [%" PRId64 ", %" PRId64
                          ") is out of bounds: the data section has %" PRIu64 " bytes",
                          b, e, data_size);
    t->data = base + b;
    t->nbytes = (size_t)(e - b);
    return HY_OK;
}

static hy_status parse_entry(const char *name, const json_t *v, const unsigned char *base,
                             uint64_t data_size, struct hy_st_tensor *t, struct hy_err *err)
{
    memset(t, 0, sizeof *t);
    size_t len = strlen(name);
    if (len >= HY_ST_MAX_NAME)
        return hy_err_set(err, HY_E_RANGE, "name of %zu bytes is too long (at most %d)", len,
                          HY_ST_MAX_NAME - 1);
    memcpy(t->name, name, len + 1);
    if (!json_is_object(v))
        return hy_err_set(err, HY_E_FORMAT, "entry must be an object, got %s",
                          hy_json_type_name(v));
    const char *keys[3] = {"dtype", "shape", "data_offsets"};
    for (int i = 0; i < 3; i++)
        if (!json_object_get(v, keys[i]))
            return hy_err_set(err, HY_E_FORMAT, "missing '%s'", keys[i]);
    hy_status st = parse_dtype(json_object_get(v, "dtype"), &t->dtype, err);
    if (st == HY_OK)
        st = parse_shape(json_object_get(v, "shape"), t, err);
    if (st == HY_OK)
        st = parse_offsets(json_object_get(v, "data_offsets"), base, data_size, t, err);
    return st;
}

static hy_status check_metadata(const json_t *v, struct hy_err *err)
{
    if (!json_is_object(v))
        return hy_err_set(err, HY_E_FORMAT, "__metadata__ must be an object, got %s",
                          hy_json_type_name(v));
    const char *k;
    const json_t *x;
    json_object_foreach ((json_t *)v, k, x) {
        if (!json_is_string(x))
            return hy_err_set(err, HY_E_FORMAT,
                              "__metadata__ value '%.64s' must be a string, got %s", k,
                              hy_json_type_name(x));
    }
    return HY_OK;
}

static hy_status grow_tensors(struct hy_st *st, size_t extra, struct hy_err *err)
{
    if (st->n_tensors + extra <= st->cap_tensors)
        return HY_OK;
    size_t cap = st->cap_tensors ? st->cap_tensors : 64;
    while (cap < st->n_tensors + extra)
        cap *= 2;
    void *p = realloc(st->tensors, cap * sizeof *st->tensors);
    if (!p)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for %zu tensors", cap);
    st->tensors = p;
    st->cap_tensors = cap;
    return HY_OK;
}

static int cmp_by_data(const void *a, const void *b)
{
    const struct hy_st_tensor *x = a, *y = b;
    const unsigned char *p = x->data, *q = y->data;
    if (p != q)
        return p < q ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

/* Sorts the file's tensors by offset and rejects overlaps. Gaps are allowed; empty tensors
 * occupy no bytes and overlap nothing. */
static hy_status check_overlap(struct hy_st_tensor *t, size_t n, struct hy_err *err)
{
    qsort(t, n, sizeof *t, cmp_by_data);
    const struct hy_st_tensor *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        if (t[i].nbytes == 0)
            continue;
        if (prev &&
            (const unsigned char *)prev->data + prev->nbytes > (const unsigned char *)t[i].data)
            return hy_err_set(err, HY_E_FORMAT, "tensors '" MSG_NAME "' and '" MSG_NAME "' overlap",
                              prev->name, t[i].name);
        prev = &t[i];
    }
    return HY_OK;
}

/* Moves the integer tensors among tensors[first..] to st->ints, keeping the others' order. */
static hy_status move_ints(struct hy_st *st, size_t first, struct hy_err *err)
{
    size_t k = first;
    for (size_t i = first; i < st->n_tensors; i++) {
        const struct hy_st_tensor *t = &st->tensors[i];
        if (!is_int_code(t->dtype)) {
            st->tensors[k++] = *t;
            continue;
        }
        if (st->n_ints == st->cap_ints) {
            size_t cap = st->cap_ints ? 2 * st->cap_ints : 64;
            void *p = realloc(st->ints, cap * sizeof *st->ints);
            if (!p)
                return hy_err_set(err, HY_E_NOMEM, "out of memory for %zu tensors", cap);
            st->ints = p;
            st->cap_ints = cap;
        }
        struct hy_st_itensor *x = &st->ints[st->n_ints++];
        memcpy(x->name, t->name, sizeof x->name);
        x->type = (enum hy_st_int_type)((int)t->dtype - INT_CODE);
        x->n_dims = t->n_dims;
        memcpy(x->shape, t->shape, sizeof x->shape);
        x->n_elems = t->n_elems;
        x->data = t->data;
        x->nbytes = t->nbytes;
        x->file = t->file;
    }
    st->n_tensors = k;
    return HY_OK;
}

static hy_status parse_header(struct hy_st *st, const json_t *root, const unsigned char *base,
                              uint64_t data_size, int fi, struct hy_err *err)
{
    if (!json_is_object(root))
        return hy_err_set(err, HY_E_FORMAT, "header must be a JSON object, got %s",
                          hy_json_type_name(root));
    hy_status s = grow_tensors(st, json_object_size(root), err);
    if (s != HY_OK)
        return s;
    size_t first = st->n_tensors;
    const char *k;
    const json_t *v;
    json_object_foreach ((json_t *)root, k, v) {
        if (!strcmp(k, "__metadata__")) {
            s = check_metadata(v, err);
        } else {
            struct hy_st_tensor *t = &st->tensors[st->n_tensors];
            s = parse_entry(k, v, base, data_size, t, err);
            if (s != HY_OK)
                hy_err_prefix(err, "tensor '" MSG_NAME "'", k);
            t->file = fi;
            st->n_tensors++;
        }
        if (s != HY_OK)
            return s;
    }
    s = check_overlap(st->tensors + first, st->n_tensors - first, err);
    return s ? s : move_ints(st, first, err);
}

/* Maps file fi and appends its tensors. Errors are prefixed with the file's path. */
static hy_status parse_file(struct hy_st *st, int fi, struct hy_err *err)
{
    struct st_file *f = &st->files[fi];
    hy_status s = hy_fmap_open(&f->map, f->path, err);
    if (s != HY_OK)
        return s;
    const unsigned char *p = f->map.data;
    uint64_t size = f->map.size;
    if (size < 8)
        return hy_err_set(err, HY_E_FORMAT,
                          "%s: truncated: %" PRIu64 " bytes, need at least 8 for the header length",
                          f->path, size);
    uint64_t n = read_le64(p);
    if (n > HY_ST_MAX_HEADER)
        return hy_err_set(err, HY_E_RANGE, "%s: header length %" PRIu64 " exceeds the limit of %u",
                          f->path, n, HY_ST_MAX_HEADER);
    if (n > size - 8)
        return hy_err_set(err, HY_E_FORMAT,
                          "%s: truncated: header length %" PRIu64
                          " is beyond the end of the file (%" PRIu64 " bytes)",
                          f->path, n, size);
    json_t *root;
    s = hy_json_parse(&root, (const char *)p + 8, (size_t)n, "header", err);
    if (s == HY_OK) {
        s = parse_header(st, root, p + 8 + n, size - 8 - n, fi, err);
        json_decref(root);
    }
    if (s != HY_OK)
        hy_err_prefix(err, "%s", f->path);
    return s;
}

/* ---- the set ---- */

static int cmp_key_tensor(const void *key, const void *elem);

static int cmp_name_ptr(const void *a, const void *b)
{
    const struct hy_st_tensor *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static int cmp_key_name(const void *key, const void *elem)
{
    const struct hy_st_tensor *const *t = elem;
    return strcmp(key, (*t)->name);
}

static int cmp_iname(const void *a, const void *b)
{
    return strcmp(((const struct hy_st_itensor *)a)->name, ((const struct hy_st_itensor *)b)->name);
}

/* Builds the name index; a name in two files is an error naming both. */
static hy_status index_names(struct hy_st *st, struct hy_err *err)
{
    st->by_name = malloc((st->n_tensors ? st->n_tensors : 1) * sizeof *st->by_name);
    if (!st->by_name)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for the tensor index");
    for (size_t i = 0; i < st->n_tensors; i++)
        st->by_name[i] = &st->tensors[i];
    qsort(st->by_name, st->n_tensors, sizeof *st->by_name, cmp_name_ptr);
    for (size_t i = 1; i < st->n_tensors; i++) {
        const struct hy_st_tensor *a = st->by_name[i - 1], *b = st->by_name[i];
        if (!strcmp(a->name, b->name))
            return hy_err_set(err, HY_E_FORMAT, "duplicate tensor '" MSG_NAME "' in %s and %s",
                              a->name, st->files[a->file].path, st->files[b->file].path);
    }
    if (st->n_ints)
        qsort(st->ints, st->n_ints, sizeof *st->ints, cmp_iname);
    for (size_t i = 0; i < st->n_ints; i++) {
        const struct hy_st_itensor *a = &st->ints[i];
        const struct hy_st_tensor *f = hy_st_find_stored(st, a->name);
        int other = f ? f->file : i + 1 < st->n_ints && !strcmp(a->name, a[1].name) ? a[1].file
                                                                                    : -1;
        if (other >= 0)
            return hy_err_set(err, HY_E_FORMAT, "duplicate tensor '" MSG_NAME "' in %s and %s",
                              a->name, st->files[a->file].path, st->files[other].path);
    }
    return HY_OK;
}

static hy_status join_path(char *buf, const char *dir, const char *name, struct hy_err *err)
{
    int n = snprintf(buf, PATH_CAP, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_CAP)
        return hy_err_set(err, HY_E_RANGE, "%s: path too long", dir);
    return HY_OK;
}

/* Appends a file entry; name_off is where the short name starts within path. */
static hy_status add_file(struct hy_st *st, const char *path, size_t name_off, struct hy_err *err)
{
    void *p = realloc(st->files, (size_t)(st->n_files + 1) * sizeof *st->files);
    if (!p)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    st->files = p;
    struct st_file *f = &st->files[st->n_files];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    if (!f->path)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    f->name = f->path + name_off;
    st->n_files++;
    return HY_OK;
}

hy_status hy_st_open_file(struct hy_st **out, const char *path, struct hy_err *err)
{
    *out = NULL;
    struct hy_st *st = calloc(1, sizeof *st);
    if (!st)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    const char *slash = strrchr(path, '/');
    hy_status s = add_file(st, path, slash ? (size_t)(slash + 1 - path) : 0, err);
    if (s == HY_OK)
        s = parse_file(st, 0, err);
    if (s == HY_OK)
        s = index_names(st, err);
    if (s != HY_OK) {
        hy_st_close(st);
        return s;
    }
    *out = st;
    return HY_OK;
}

/* A shard must be a plain file name inside the checkpoint directory. */
static hy_status check_shard_name(const char *s, struct hy_err *err)
{
    size_t len = strlen(s);
    if (len == 0 || len > 255 || strchr(s, '/') || strchr(s, '\\') || strstr(s, ".."))
        return hy_err_set(err, HY_E_FORMAT, "shard name '%.64s' is not a plain file name", s);
    return HY_OK;
}

static int cmp_file_name(const void *a, const void *b)
{
    const struct st_file *x = a, *y = b;
    return strcmp(x->name, y->name);
}

static int find_file(const struct hy_st *st, const char *name, int hint)
{
    if (hint >= 0 && hint < st->n_files && !strcmp(st->files[hint].name, name))
        return hint;
    for (int i = 0; i < st->n_files; i++)
        if (!strcmp(st->files[i].name, name))
            return i;
    return -1;
}

/* Adds each distinct shard of the weight map (not yet opened). */
static hy_status collect_shards(struct hy_st *st, const json_t *wm, const char *dir,
                                struct hy_err *err)
{
    size_t off = strlen(dir) + 1;
    int last = -1;
    char path[PATH_CAP];
    const char *k;
    const json_t *v;
    json_object_foreach ((json_t *)wm, k, v) {
        if (!json_is_string(v))
            return hy_err_set(err, HY_E_FORMAT,
                              "weight_map['" MSG_NAME "'] must be a string, got %s", k,
                              hy_json_type_name(v));
        const char *name = json_string_value(v);
        hy_status s = check_shard_name(name, err);
        if (s != HY_OK)
            return s;
        last = find_file(st, name, last);
        if (last >= 0)
            continue;
        if (st->n_files >= HY_ST_MAX_SHARDS)
            return hy_err_set(err, HY_E_RANGE, "more than %d shard files", HY_ST_MAX_SHARDS);
        s = join_path(path, dir, name, err);
        if (s == HY_OK)
            s = add_file(st, path, off, err);
        if (s != HY_OK)
            return s;
        last = st->n_files - 1;
    }
    /* Shards in name order (model-00001-... first), whatever order the index lists tensors. */
    qsort(st->files, (size_t)st->n_files, sizeof *st->files, cmp_file_name);
    return HY_OK;
}

/* The index and the shards must agree exactly: every listed tensor is in its shard, and
 * every tensor of a shard is listed. */
static hy_status cross_check(const struct hy_st *st, const json_t *wm, struct hy_err *err)
{
    const char *k;
    const json_t *v;
    json_object_foreach ((json_t *)wm, k, v) {
        const struct hy_st_tensor *t = hy_st_find(st, k);
        const struct hy_st_itensor *x = t ? NULL : hy_st_find_int(st, k);
        const char *want = json_string_value(v);
        int file = t ? t->file : x ? x->file : -1;
        if (file < 0 || strcmp(st->files[file].name, want))
            return hy_err_set(err, HY_E_FORMAT, "tensor '" MSG_NAME "' is not in its shard %s", k,
                              want);
    }
    for (size_t i = 0; i < st->n_tensors; i++) {
        const struct hy_st_tensor *t = &st->tensors[i];
        if (!json_object_get(wm, t->name))
            return hy_err_set(err, HY_E_FORMAT,
                              "tensor '" MSG_NAME "' of shard %s is not in the index", t->name,
                              st->files[t->file].name);
    }
    for (size_t i = 0; i < st->n_ints; i++)
        if (!json_object_get(wm, st->ints[i].name))
            return hy_err_set(err, HY_E_FORMAT,
                              "tensor '" MSG_NAME "' of shard %s is not in the index",
                              st->ints[i].name, st->files[st->ints[i].file].name);
    return HY_OK;
}

static hy_status load_index(struct hy_st *st, const json_t *root, const char *dir,
                            struct hy_err *err)
{
    if (!json_is_object(root))
        return hy_err_set(err, HY_E_FORMAT, "index must be a JSON object, got %s",
                          hy_json_type_name(root));
    const json_t *meta = json_object_get(root, "metadata");
    if (meta && !json_is_object(meta) && !json_is_null(meta))
        return hy_err_set(err, HY_E_FORMAT, "'metadata' must be an object, got %s",
                          hy_json_type_name(meta));
    const json_t *wm = json_object_get(root, "weight_map");
    if (!json_is_object(wm))
        return hy_err_set(err, HY_E_FORMAT, "'weight_map' must be an object, got %s",
                          hy_json_type_name(wm));
    if (json_object_size(wm) == 0)
        return hy_err_set(err, HY_E_FORMAT, "'weight_map' lists no tensors");
    return collect_shards(st, wm, dir, err);
}

static hy_status open_index(struct hy_st **out, const char *dir, const char *ipath,
                            struct hy_err *err)
{
    json_t *root;
    hy_status s = hy_json_load_file(&root, ipath, HY_ST_MAX_INDEX, err);
    if (s != HY_OK)
        return s;
    struct hy_st *st = calloc(1, sizeof *st);
    if (!st) {
        json_decref(root);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    s = load_index(st, root, dir, err);
    if (s != HY_OK)
        hy_err_prefix(err, "%s", ipath);
    for (int i = 0; s == HY_OK && i < st->n_files; i++)
        s = parse_file(st, i, err); /* messages name the shard */
    if (s == HY_OK)
        s = index_names(st, err);
    if (s == HY_OK) {
        s = cross_check(st, json_object_get(root, "weight_map"), err);
        if (s != HY_OK)
            hy_err_prefix(err, "%s", ipath);
    }
    json_decref(root);
    if (s != HY_OK) {
        hy_st_close(st);
        return s;
    }
    *out = st;
    return HY_OK;
}

static bool exists(const char *path, hy_status *s, struct hy_err *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0)
        return true;
    if (errno != ENOENT)
        *s = hy_err_set(err, HY_E_IO, "%s: %s", path, strerror(errno));
    return false;
}

hy_status hy_st_open(struct hy_st **out, const char *dir, struct hy_err *err)
{
    *out = NULL;
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return hy_err_set(err, HY_E_IO, "%s: cannot open: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return hy_err_set(err, HY_E_IO, "%s: not a directory", dir);
    char path[PATH_CAP];
    hy_status s = join_path(path, dir, INDEX_NAME, err);
    if (s != HY_OK)
        return s;
    if (exists(path, &s, err))
        return open_index(out, dir, path, err);
    if (s != HY_OK)
        return s;
    s = join_path(path, dir, SINGLE_NAME, err);
    if (s != HY_OK)
        return s;
    if (exists(path, &s, err))
        return hy_st_open_file(out, path, err);
    if (s != HY_OK)
        return s;
    return hy_err_set(err, HY_E_IO, "no " SINGLE_NAME " or " INDEX_NAME " in %s", dir);
}

void hy_st_release_pages(const struct hy_st *st)
{
    for (int i = 0; st && i < st->n_files; i++)
        hy_fmap_release(&st->files[i].map);
}

void hy_st_close(struct hy_st *st)
{
    if (!st)
        return;
    for (int i = 0; i < st->n_files; i++) {
        hy_fmap_close(&st->files[i].map);
        free(st->files[i].path);
    }
    free(st->files);
    free(st->tensors);
    free(st->by_name);
    for (size_t i = 0; i < st->n_owned; i++)
        free(st->owned[i]);
    free(st->owned);
    free(st->virt);
    free(st->ints);
    free(st);
}

size_t hy_st_count(const struct hy_st *st)
{
    return st->n_tensors;
}

const struct hy_st_tensor *hy_st_at(const struct hy_st *st, size_t i)
{
    HY_ASSERT(i < st->n_tensors);
    return &st->tensors[i];
}

const struct hy_st_tensor *hy_st_find(const struct hy_st *st, const char *name)
{
    if (st->n_virt) {
        const struct hy_st_tensor *v =
            bsearch(name, st->virt, st->n_virt, sizeof *st->virt, cmp_key_tensor);
        if (v)
            return v;
    }
    return hy_st_find_stored(st, name);
}

const char *hy_st_file_path(const struct hy_st *st, int file)
{
    HY_ASSERT(file >= 0 && file < st->n_files);
    return st->files[file].path;
}

int hy_st_file_count(const struct hy_st *st)
{
    return st->n_files;
}

/* ---- in-memory tensors ---- */

static hy_status set_shape(struct hy_st_tensor *t, enum hy_dtype dtype, int n_dims,
                           const int64_t *shape, const void *data, struct hy_err *err)
{
    if (n_dims < 0 || n_dims > HY_ST_MAX_DIMS || (int)dtype < 0 || dtype >= HY_DTYPE_COUNT)
        return hy_err_set(err, HY_E_INVAL, "tensor '" MSG_NAME "': bad dtype or %d dims",
                          t->name, n_dims);
    int64_t n = 1;
    for (int d = 0; d < n_dims; d++) {
        if (shape[d] < 0 || (shape[d] && n > INT64_MAX / 64 / shape[d]))
            return hy_err_set(err, HY_E_INVAL, "tensor '" MSG_NAME "': bad shape", t->name);
        n *= shape[d];
    }
    if (n % hy_dtype_block_elems(dtype))
        return hy_err_set(err, HY_E_INVAL, "tensor '" MSG_NAME "': %lld elements are not whole "
                          "%s blocks", t->name, (long long)n, hy_dtype_name(dtype));
    t->dtype = dtype;
    t->n_dims = n_dims;
    memset(t->shape, 0, sizeof t->shape);
    if (n_dims)
        memcpy(t->shape, shape, (size_t)n_dims * sizeof *shape);
    t->n_elems = n;
    t->nbytes = (size_t)(n / hy_dtype_block_elems(dtype)) * hy_dtype_size(dtype);
    t->data = data;
    return HY_OK;
}

static int cmp_key_tensor(const void *key, const void *elem)
{
    return strcmp(key, ((const struct hy_st_tensor *)elem)->name);
}

static int cmp_key_itensor(const void *key, const void *elem)
{
    return strcmp(key, ((const struct hy_st_itensor *)elem)->name);
}

hy_status hy_st_put(struct hy_st *st, const char *name, int file, enum hy_dtype dtype, int n_dims,
                    const int64_t *shape, void *data, bool owned, struct hy_err *err)
{
    struct hy_st_tensor t;
    memset(&t, 0, sizeof t);
    size_t len = strlen(name);
    hy_status s = HY_OK;
    if (len >= HY_ST_MAX_NAME || file < 0 || file >= st->n_files)
        s = hy_err_set(err, HY_E_INVAL, "cannot put tensor '" MSG_NAME "': name too long or bad "
                       "file", name);
    if (!s) {
        memcpy(t.name, name, len + 1);
        t.file = file;
        s = set_shape(&t, dtype, n_dims, shape, data, err);
    }
    if (!s && owned && st->n_owned == st->cap_owned) {
        size_t cap = st->cap_owned ? 2 * st->cap_owned : 16;
        void **p = realloc(st->owned, cap * sizeof *p);
        if (!p)
            s = hy_err_set(err, HY_E_NOMEM, "out of memory");
        else {
            st->owned = p;
            st->cap_owned = cap;
        }
    }
    if (!s && st->n_virt == st->cap_virt) {
        size_t cap = st->cap_virt ? 2 * st->cap_virt : 16;
        struct hy_st_tensor *p = realloc(st->virt, cap * sizeof *p);
        if (!p)
            s = hy_err_set(err, HY_E_NOMEM, "out of memory");
        else {
            st->virt = p;
            st->cap_virt = cap;
        }
    }
    if (s) {
        if (owned)
            free(data);
        return s;
    }
    if (owned)
        st->owned[st->n_owned++] = data;
    /* sorted insert, or replace an earlier put of the same name */
    size_t lo = 0, hi = st->n_virt;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(name, st->virt[mid].name);
        if (c == 0) {
            st->virt[mid] = t;
            return HY_OK;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    memmove(st->virt + lo + 1, st->virt + lo, (st->n_virt - lo) * sizeof *st->virt);
    st->virt[lo] = t;
    st->n_virt++;
    return HY_OK;
}

const struct hy_st_tensor *hy_st_find_stored(const struct hy_st *st, const char *name)
{
    const struct hy_st_tensor *const *p =
        bsearch(name, st->by_name, st->n_tensors, sizeof *st->by_name, cmp_key_name);
    return p ? *p : NULL;
}

/* ---- integer tensors ---- */

size_t hy_st_int_count(const struct hy_st *st)
{
    return st->n_ints;
}

const struct hy_st_itensor *hy_st_int_at(const struct hy_st *st, size_t i)
{
    HY_ASSERT(i < st->n_ints);
    return &st->ints[i];
}

const struct hy_st_itensor *hy_st_find_int(const struct hy_st *st, const char *name)
{
    return st->n_ints ? bsearch(name, st->ints, st->n_ints, sizeof *st->ints, cmp_key_itensor)
                      : NULL;
}

const char *hy_st_int_type_name(enum hy_st_int_type t)
{
    return (int)t >= 0 && (int)t < 3 ? int_names[t] : "?";
}
