/* safetensors_test.c: write then read back (single file and shards) with random data, then
 * every malformed input the reader must reject, each crafted byte by byte; F8_E4M3 tensors
 * read and written (other fp8/fp6/fp4 dtypes stay unsupported). */
#include "formats/safetensors.h"

#include "core/json.h"
#include "test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

/* ---- helpers ---- */

static const char *case_dir(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", root, name);
    CHECK(mkdir(buf, 0700) == 0);
    return buf;
}

static void write_raw(const char *path, const void *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK(fwrite(p, 1, len, f) == len);
    CHECK(fclose(f) == 0);
}

/* Writes an 8-byte length (hlen, or the header's real length when hlen == UINT64_MAX), the
 * header text and data_len non-zero data bytes. */
static void craft(const char *path, const char *header, uint64_t hlen, size_t data_len)
{
    size_t n = strlen(header);
    if (hlen == UINT64_MAX)
        hlen = n;
    size_t total = 8 + n + data_len;
    unsigned char *buf = malloc(total);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + 8, header, n);
    for (size_t i = 0; i < data_len; i++)
        buf[8 + n + i] = (unsigned char)(i * 37 + 11);
    write_raw(path, buf, total);
    free(buf);
}

static void expect_file(const char *path, hy_status want, const char *what, const char *line)
{
    struct hy_st *st = (struct hy_st *)1;
    struct hy_err e = {{0}};
    hy_status s = hy_st_open_file(&st, path, &e);
    if (s == HY_OK)
        hy_st_close(st);
    CHECKF(s == want, "%s: status %s, want %s (%s)", line, hy_status_str(s), hy_status_str(want),
           e.msg);
    CHECKF(st == NULL, "%s: set not NULL on error", line);
    CHECKF(strstr(e.msg, path) != NULL, "%s: message does not name the file: %s", line, e.msg);
    CHECKF(strstr(e.msg, what) != NULL, "%s: message lacks '%s': %s", line, what, e.msg);
}

static void expect_dir(const char *dir, hy_status want, const char *name, const char *what,
                       const char *line)
{
    struct hy_st *st = (struct hy_st *)1;
    struct hy_err e = {{0}};
    hy_status s = hy_st_open(&st, dir, &e);
    if (s == HY_OK)
        hy_st_close(st);
    CHECKF(s == want, "%s: status %s, want %s (%s)", line, hy_status_str(s), hy_status_str(want),
           e.msg);
    CHECKF(st == NULL, "%s: set not NULL on error", line);
    CHECKF(strstr(e.msg, name) != NULL, "%s: message does not name '%s': %s", line, name, e.msg);
    CHECKF(strstr(e.msg, what) != NULL, "%s: message lacks '%s': %s", line, what, e.msg);
}

#define STR2(x) #x
#define STR(x) STR2(x)
#define HERE __FILE__ ":" STR(__LINE__)
#define BAD(header, hlen, dlen, want, what)                                                        \
    do {                                                                                           \
        craft(path, header, hlen, dlen);                                                           \
        expect_file(path, want, what, HERE);                                                       \
    } while (0)

/* ---- round trip ---- */

static const struct hy_st_wtensor tensors[] = {
    {"model.embed_tokens.weight", HY_DTYPE_BF16, 2, {16, 8}},
    {"model.layers.0.input_layernorm.weight", HY_DTYPE_F32, 1, {8}},
    {"model.layers.0.self_attn.q_proj.weight", HY_DTYPE_F16, 2, {8, 8}},
    {"odd", HY_DTYPE_BF16, 1, {7}}, /* 14 bytes: what follows is misaligned */
    {"after_odd", HY_DTYPE_F32, 2, {3, 5}},
    {"scalar", HY_DTYPE_F32, 0, {0}},
    {"empty", HY_DTYPE_BF16, 2, {0, 4}},
    {"four_d", HY_DTYPE_F16, 4, {1, 2, 3, 2}},
    {"lm_head.weight", HY_DTYPE_BF16, 2, {16, 8}},
};
#define N_TENSORS (sizeof tensors / sizeof tensors[0])
#define TOTAL_BYTES 774u

/* Random bytes, different per tensor and never all zero. */
static void gen(size_t i, unsigned char *buf, size_t n)
{
    uint64_t x = 0x9e3779b97f4a7c15ull * (i + 1);
    for (size_t k = 0; k < n; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[k] = (unsigned char)(x >> 24) | 1u;
    }
}

struct fill_ctx {
    int calls;
    size_t fail_at; /* index whose fill fails; SIZE_MAX for none */
};

static hy_status fill(void *ctx, size_t i, void *buf, size_t nbytes, struct hy_err *err)
{
    struct fill_ctx *c = ctx;
    c->calls++;
    if (i == c->fail_at)
        return hy_err_set(err, HY_E_IO, "boom at %zu", i);
    gen(i, buf, nbytes);
    return HY_OK;
}

static void verify(const struct hy_st *st, const char *line)
{
    CHECKF(hy_st_count(st) == N_TENSORS, "%s: %zu tensors", line, hy_st_count(st));
    unsigned char want[512];
    for (size_t i = 0; i < N_TENSORS && i < hy_st_count(st); i++) {
        const struct hy_st_wtensor *w = &tensors[i];
        const struct hy_st_tensor *t = hy_st_find(st, w->name);
        CHECKF(t != NULL, "%s: %s missing", line, w->name);
        if (!t)
            continue;
        CHECKF(!strcmp(hy_st_at(st, i)->name, w->name), "%s: order at %zu", line, i);
        CHECK(t->dtype == w->dtype && t->n_dims == w->n_dims);
        int64_t n = 1;
        for (int d = 0; d < w->n_dims; d++) {
            CHECK(t->shape[d] == w->shape[d]);
            n *= w->shape[d];
        }
        CHECK(t->n_elems == n);
        CHECK(t->nbytes == (size_t)n * hy_dtype_size(w->dtype));
        gen(i, want, t->nbytes);
        CHECKF(t->nbytes == 0 || !memcmp(t->data, want, t->nbytes), "%s: data of %s", line,
               w->name);
    }
    CHECK(hy_st_find(st, "absent") == NULL);
    CHECK(hy_st_find(st, "") == NULL);
}

/* Reads the header length and text of a written file; checks the padding. */
static void check_header(const char *path, const char *odd_entry)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
        return;
    unsigned char le[8];
    CHECK(fread(le, 1, 8, f) == 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | le[i];
    CHECKF(n % 8 == 0 && n < 4096, "header length %llu", (unsigned long long)n);
    char h[4096] = {0};
    CHECK(fread(h, 1, n, f) == n);
    fclose(f);
    CHECKF(strstr(h, "\"__metadata__\":{\"format\":\"pt\"}") != NULL, "%s", h);
    CHECKF(strstr(h, odd_entry) != NULL, "%s", h);
}

static void test_single(void)
{
    char dir[128], path[256];
    case_dir(dir, sizeof dir, "single");
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_raw(path, "stale", 5); /* a stale index must go, or readers would prefer it */
    struct fill_ctx c = {0, SIZE_MAX};
    struct hy_err e = {{0}};
    CHECKF(hy_st_write(dir, tensors, N_TENSORS, 0, fill, &c, &e) == HY_OK, "%s", e.msg);
    CHECK(c.calls == (int)N_TENSORS);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    check_header(path, "\"odd\":{\"dtype\":\"BF16\",\"shape\":[7],\"data_offsets\":[416,430]}");

    struct hy_st *st = NULL;
    CHECKF(hy_st_open(&st, dir, &e) == HY_OK, "%s", e.msg);
    if (st) {
        verify(st, HERE);
        CHECK(hy_st_file_count(st) == 1 && !strcmp(hy_st_file_path(st, 0), path));
        hy_st_close(st);
    }
    CHECKF(hy_st_open_file(&st, path, &e) == HY_OK, "%s", e.msg);
    if (st)
        verify(st, HERE);
    hy_st_close(st);
    hy_st_close(NULL);

    /* max_shard_bytes at least the total: still one file. */
    CHECK(hy_st_write(dir, tensors, N_TENSORS, TOTAL_BYTES, fill, &c, &e) == HY_OK);
    CHECK(access(path, F_OK) == 0);
}

static const char *shard_of(const char *dir, int k, int n, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/model-%05d-of-%05d.safetensors", dir, k, n);
    return buf;
}

/* max 300 splits the 774 bytes into [0,1] 288 B, [2..7] 230 B and [8] 256 B. */
static void write_sharded(const char *dir)
{
    struct fill_ctx c = {0, SIZE_MAX};
    struct hy_err e = {{0}};
    CHECKF(hy_st_write(dir, tensors, N_TENSORS, 300, fill, &c, &e) == HY_OK, "%s", e.msg);
}

static void check_index(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    json_t *j = NULL;
    struct hy_err e = {{0}};
    CHECKF(hy_json_load_file(&j, path, 1 << 20, &e) == HY_OK, "%s", e.msg);
    json_t *wm = json_object_get(j, "weight_map");
    CHECK(json_integer_value(json_object_get(json_object_get(j, "metadata"), "total_size")) ==
          TOTAL_BYTES);
    CHECK(json_object_size(wm) == N_TENSORS);
    const char *want[N_TENSORS] = {"1", "1", "2", "2", "2", "2", "2", "2", "3"};
    for (size_t i = 0; i < N_TENSORS; i++) {
        char name[64];
        snprintf(name, sizeof name, "model-0000%s-of-00003.safetensors", want[i]);
        const char *got = json_string_value(json_object_get(wm, tensors[i].name));
        CHECKF(got && !strcmp(got, name), "%s -> %s", tensors[i].name, got ? got : "(none)");
    }
    json_decref(j);
}

static void test_sharded(void)
{
    char dir[128], path[256];
    case_dir(dir, sizeof dir, "sharded");
    write_sharded(dir);
    for (int k = 1; k <= 3; k++)
        CHECK(access(shard_of(dir, k, 3, path, sizeof path), F_OK) == 0);
    check_header(shard_of(dir, 2, 3, path, sizeof path),
                 "\"odd\":{\"dtype\":\"BF16\",\"shape\":[7],\"data_offsets\":[128,142]}");
    check_index(dir);

    struct hy_st *st = NULL;
    struct hy_err e = {{0}};
    CHECKF(hy_st_open(&st, dir, &e) == HY_OK, "%s", e.msg);
    if (st) {
        verify(st, HERE);
        CHECK(hy_st_file_count(st) == 3);
        const struct hy_st_tensor *t = hy_st_find(st, "lm_head.weight");
        CHECK(t && !strcmp(hy_st_file_path(st, t->file), shard_of(dir, 3, 3, path, sizeof path)));
        t = hy_st_find(st, "scalar");
        CHECK(t && !strcmp(hy_st_file_path(st, t->file), shard_of(dir, 2, 3, path, sizeof path)));
        hy_st_close(st);
    }

    /* A tensor larger than the limit gets a shard of its own. */
    case_dir(dir, sizeof dir, "sharded6");
    struct fill_ctx c = {0, SIZE_MAX};
    CHECKF(hy_st_write(dir, tensors, N_TENSORS, 100, fill, &c, &e) == HY_OK, "%s", e.msg);
    CHECKF(hy_st_open(&st, dir, &e) == HY_OK, "%s", e.msg);
    if (st) {
        verify(st, HERE);
        CHECK(hy_st_file_count(st) == 6);
        CHECK(hy_st_find(st, "odd")->file == hy_st_find(st, "empty")->file);
        hy_st_close(st);
    }
}

static void test_write_errors(void)
{
    char dir[128], path[256];
    struct hy_err e = {{0}};
    struct fill_ctx c = {0, SIZE_MAX};

    /* Disk full: the target is /dev/full, whose writes fail with ENOSPC. */
    case_dir(dir, sizeof dir, "full");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (access("/dev/full", W_OK) == 0 && symlink("/dev/full", path) == 0) {
        CHECK(hy_st_write(dir, tensors, N_TENSORS, 0, fill, &c, &e) == HY_E_IO);
        CHECKF(strstr(e.msg, path) && strstr(e.msg, "No space"), "%s", e.msg);
    }

    case_dir(dir, sizeof dir, "fillfail");
    c.fail_at = 4;
    CHECK(hy_st_write(dir, tensors, N_TENSORS, 0, fill, &c, &e) == HY_E_IO);
    CHECKF(strstr(e.msg, "after_odd") && strstr(e.msg, "boom at 4"), "%s", e.msg);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(access(path, F_OK) != 0); /* the partial file is removed */
    c.fail_at = SIZE_MAX;

    snprintf(path, sizeof path, "%s/no/such/dir", root);
    CHECK(hy_st_write(path, tensors, N_TENSORS, 0, fill, &c, &e) == HY_E_IO);
    CHECKF(strstr(e.msg, path) != NULL, "%s", e.msg);

    struct hy_st_wtensor bad[2] = {{"a", HY_DTYPE_F32, 1, {2}}, {"a", HY_DTYPE_F32, 1, {2}}};
    CHECK(hy_st_write(dir, bad, 2, 0, fill, &c, &e) == HY_E_INVAL);
    CHECKF(strstr(e.msg, "duplicate"), "%s", e.msg);
    bad[1].name = "__metadata__";
    CHECK(hy_st_write(dir, bad, 2, 0, fill, &c, &e) == HY_E_INVAL);
    bad[1].name = "b";
    bad[1].shape[0] = -2;
    CHECK(hy_st_write(dir, bad, 2, 0, fill, &c, &e) == HY_E_INVAL);
    bad[1].shape[0] = 2;
    bad[1].n_dims = HY_ST_MAX_DIMS + 1;
    CHECK(hy_st_write(dir, bad, 2, 0, fill, &c, &e) == HY_E_INVAL);

    /* More shards than HY_ST_MAX_SHARDS: refused before any file is written. */
    enum { N = HY_ST_MAX_SHARDS + 1 };
    static struct hy_st_wtensor many[N];
    static char names[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "t%d", i);
        many[i] = (struct hy_st_wtensor){names[i], HY_DTYPE_F32, 1, {1}};
    }
    case_dir(dir, sizeof dir, "toomany");
    CHECK(hy_st_write(dir, many, N, 4, fill, &c, &e) == HY_E_RANGE);
    CHECK(access(shard_of(dir, 1, N, path, sizeof path), F_OK) != 0);
}

/* ---- malformed single files ---- */

static void test_bad_files(void)
{
    char dir[128], path[256];
    case_dir(dir, sizeof dir, "bad");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);

    expect_file(path, HY_E_IO, "No such file", HERE); /* missing */
    write_raw(path, "", 0);
    expect_file(path, HY_E_FORMAT, "truncated", HERE);
    write_raw(path, "\x10\x00\x00\x00\x00", 5);
    expect_file(path, HY_E_FORMAT, "truncated", HERE);
    BAD("{}", 1000, 0, HY_E_FORMAT, "beyond the end");
    BAD("{}", (uint64_t)HY_ST_MAX_HEADER + 1, 0, HY_E_RANGE, "exceeds the limit");
    BAD("{}", UINT64_MAX - 1, 0, HY_E_RANGE, "exceeds the limit");
    BAD("", UINT64_MAX, 0, HY_E_FORMAT, "invalid JSON");
    BAD("{\"a\": {\"dtype\": ", UINT64_MAX, 8, HY_E_FORMAT, "invalid JSON");
    BAD("[1, 2]", UINT64_MAX, 0, HY_E_FORMAT, "must be a JSON object");
    BAD("{\"a\": 5}", UINT64_MAX, 0, HY_E_FORMAT, "entry must be an object");
    BAD("{\"a\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", UINT64_MAX, 8, HY_E_FORMAT,
        "missing 'dtype'");
    BAD("{\"a\": {\"dtype\": \"F32\", \"data_offsets\": [0, 8]}}", UINT64_MAX, 8, HY_E_FORMAT,
        "missing 'shape'");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [2]}}", UINT64_MAX, 8, HY_E_FORMAT,
        "missing 'data_offsets'");
    BAD("{\"a\": {\"dtype\": 5, \"shape\": [2], \"data_offsets\": [0, 8]}}", UINT64_MAX, 8,
        HY_E_FORMAT, "dtype must be a string");
    BAD("{\"a\": {\"dtype\": \"Q9\", \"shape\": [2], \"data_offsets\": [0, 8]}}", UINT64_MAX, 8,
        HY_E_FORMAT, "unknown dtype 'Q9'");
    BAD("{\"a\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [0, 8]}}", UINT64_MAX, 8,
        HY_E_UNSUPPORTED, "unsupported dtype I64");
    BAD("{\"a\": {\"dtype\": \"F8_E5M2\", \"shape\": [8], \"data_offsets\": [0, 8]}}", UINT64_MAX,
        8, HY_E_UNSUPPORTED, "unsupported dtype F8_E5M2");
    BAD("{\"a\": {\"dtype\": \"F8_E8M0\", \"shape\": [8], \"data_offsets\": [0, 8]}}", UINT64_MAX,
        8, HY_E_UNSUPPORTED, "unsupported dtype F8_E8M0");
    BAD("{\"a\": {\"dtype\": \"F8_E4M3\", \"shape\": [8], \"data_offsets\": [0, 9]}}", UINT64_MAX,
        9, HY_E_FORMAT, "8 F8_E4M3 elements need 8");
    BAD("{\"a\": {\"dtype\": \"f8_e4m3\", \"shape\": [8], \"data_offsets\": [0, 8]}}", UINT64_MAX,
        8, HY_E_FORMAT, "unknown dtype 'f8_e4m3'");
    BAD("{\"a\": {\"dtype\": \"BOOL\", \"shape\": [8], \"data_offsets\": [0, 8]}}", UINT64_MAX, 8,
        HY_E_UNSUPPORTED, "unsupported dtype BOOL");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": 2, \"data_offsets\": [0, 8]}}", UINT64_MAX, 8,
        HY_E_FORMAT, "shape must be an array");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [\"2\"], \"data_offsets\": [0, 8]}}", UINT64_MAX,
        8, HY_E_FORMAT, "shape[0] must be an integer");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [2, -1], \"data_offsets\": [0, 8]}}", UINT64_MAX,
        8, HY_E_FORMAT, "shape[1] is negative");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 4], \"data_offsets\": "
        "[0, 8]}}",
        UINT64_MAX, 8, HY_E_FORMAT, "overflows");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [1152921504606846976, 4], \"data_offsets\": "
        "[0, 8]}}",
        UINT64_MAX, 8, HY_E_FORMAT, "overflows"); /* elements fit, bytes do not */
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [1, 1, 1, 1, 2], \"data_offsets\": [0, 8]}}",
        UINT64_MAX, 8, HY_E_UNSUPPORTED, "5 dims");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}", UINT64_MAX, 8,
        HY_E_FORMAT, "[begin, end]");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, \"8\"]}}", UINT64_MAX,
        8, HY_E_FORMAT, "two integers");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [-8, 0]}}", UINT64_MAX, 8,
        HY_E_FORMAT, "negative");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [8, 4]}}", UINT64_MAX, 8,
        HY_E_FORMAT, "end 4 < begin 8");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 4]}}", UINT64_MAX, 8,
        HY_E_FORMAT, "need 8");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", UINT64_MAX, 8,
        HY_E_FORMAT, "out of bounds");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
        " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
        UINT64_MAX, 16, HY_E_FORMAT, "'a' and 'b' overlap");
    BAD("{\"b\": {\"dtype\": \"BF16\", \"shape\": [8], \"data_offsets\": [0, 16]},"
        " \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [12, 16]}}",
        UINT64_MAX, 16, HY_E_FORMAT, "overlap");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
        " \"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 16]}}",
        UINT64_MAX, 16, HY_E_FORMAT, "duplicate");
    BAD("{\"__metadata__\": [1]}", UINT64_MAX, 0, HY_E_FORMAT, "__metadata__ must be an object");
    BAD("{\"__metadata__\": {\"format\": 1}}", UINT64_MAX, 0, HY_E_FORMAT, "must be a string");

    char name[300], header[512];
    memset(name, 'n', 299);
    name[299] = '\0';
    snprintf(header, sizeof header,
             "{\"%s\": {\"dtype\": \"F32\", \"shape\": [1], "
             "\"data_offsets\": [0, 4]}}",
             name);
    BAD(header, UINT64_MAX, 4, HY_E_RANGE, "too long");
}

/* Valid but unusual: unpadded header (unaligned data), gaps, empty tensors, metadata. */
static void test_odd_but_valid(void)
{
    char dir[128], path[256];
    case_dir(dir, sizeof dir, "odd");
    snprintf(path, sizeof path, "%s/x.safetensors", dir);
    craft(path,
          "{\"__metadata__\": {\"format\": \"pt\", \"k\": \"v\"},"
          " \"z\": {\"dtype\": \"F32\", \"shape\": [0, 3], \"data_offsets\": [4, 4]},"
          " \"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [12, 20]},"
          " \"v\": {\"dtype\": \"F16\", \"shape\": [1, 2], \"data_offsets\": [0, 4]}}",
          UINT64_MAX, 24);
    struct hy_st *st = NULL;
    struct hy_err e = {{0}};
    CHECKF(hy_st_open_file(&st, path, &e) == HY_OK, "%s", e.msg);
    if (!st)
        return;
    CHECK(hy_st_count(st) == 3);
    /* Ordered by offset: v [0,4), z [4,4), w [12,20). */
    CHECK(!strcmp(hy_st_at(st, 0)->name, "v") && !strcmp(hy_st_at(st, 1)->name, "z") &&
          !strcmp(hy_st_at(st, 2)->name, "w"));
    const struct hy_st_tensor *w = hy_st_find(st, "w");
    unsigned char want[8];
    for (int i = 0; i < 8; i++)
        want[i] = (unsigned char)((12 + i) * 37 + 11);
    CHECK(w && w->nbytes == 8 && !memcmp(w->data, want, 8)); /* read through memcmp/memcpy */
    CHECK(hy_st_find(st, "z")->n_elems == 0 && hy_st_find(st, "z")->nbytes == 0);
    hy_st_close(st);
}

/* F8_E4M3 (fp8 checkpoints): read in place from a crafted file (odd offset after a 1-byte
 * tensor), and written and read back by the writer with a scale beside it. */
static void test_fp8(void)
{
    char dir[128], path[256];
    case_dir(dir, sizeof dir, "fp8");
    snprintf(path, sizeof path, "%s/x.safetensors", dir);
    craft(path,
          "{\"w\": {\"dtype\": \"F8_E4M3\", \"shape\": [2, 3], \"data_offsets\": [1, 7]},"
          " \"b\": {\"dtype\": \"F8_E4M3\", \"shape\": [], \"data_offsets\": [0, 1]},"
          " \"s\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [7, 11]}}",
          UINT64_MAX, 11);
    struct hy_st *st = NULL;
    struct hy_err e = {{0}};
    CHECKF(hy_st_open_file(&st, path, &e) == HY_OK, "%s", e.msg);
    if (st) {
        const struct hy_st_tensor *w = hy_st_find(st, "w"), *b = hy_st_find(st, "b");
        CHECK(w && w->dtype == HY_DTYPE_F8_E4M3 && w->n_dims == 2 && w->n_elems == 6 &&
              w->nbytes == 6);
        CHECK(b && b->dtype == HY_DTYPE_F8_E4M3 && b->n_dims == 0 && b->nbytes == 1);
        for (int i = 0; w && i < 6; i++) /* craft's byte pattern at data offsets 1..6 */
            CHECK(((const unsigned char *)w->data)[i] == (unsigned char)((1 + i) * 37 + 11));
        CHECK(hy_st_find(st, "s")->dtype == HY_DTYPE_F32);
        hy_st_close(st);
    }
    static const struct hy_st_wtensor ft[] = {
        {"model.layers.0.mlp.up_proj.weight", HY_DTYPE_F8_E4M3, 2, {5, 3}},
        {"model.layers.0.mlp.up_proj.weight_scale", HY_DTYPE_F32, 0, {0}},
        {"model.layers.0.mlp.up_proj.input_scale", HY_DTYPE_BF16, 1, {1}},
    };
    struct fill_ctx c = {0, SIZE_MAX};
    CHECKF(hy_st_write(dir, ft, 3, 0, fill, &c, &e) == HY_OK, "%s", e.msg);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    check_header(path, "\"model.layers.0.mlp.up_proj.weight\":{\"dtype\":\"F8_E4M3\","
                       "\"shape\":[5,3],\"data_offsets\":[0,15]}");
    CHECKF(hy_st_open(&st, dir, &e) == HY_OK, "%s", e.msg);
    if (st) {
        unsigned char want[16];
        for (size_t i = 0; i < 3; i++) {
            const struct hy_st_tensor *t = hy_st_find(st, ft[i].name);
            CHECK(t && t->dtype == ft[i].dtype);
            gen(i, want, t ? t->nbytes : 0);
            CHECK(t && t->nbytes <= sizeof want && !memcmp(t->data, want, t->nbytes));
        }
        CHECK(hy_st_find(st, ft[0].name)->nbytes == 15);
        /* puts: an override of a stored tensor, a new one, a replaced put, a failed put */
        const struct hy_st_tensor *w8 = hy_st_find(st, ft[0].name);
        const void *w8data = w8->data;
        uint16_t *bf = malloc(15 * 2), *bf2 = malloc(4 * 2), *bad = malloc(8);
        static const float sc[5] = {1, 2, 3, 4, 5};
        int64_t shp[2] = {5, 3}, one = 5, four = 4;
        CHECKF(hy_st_put(st, ft[0].name, 0, HY_DTYPE_BF16, 2, shp, bf, true, &e) == HY_OK, "%s",
               e.msg);
        CHECKF(hy_st_put(st, "x.weight_scale@f32", 0, HY_DTYPE_F32, 1, &one, (void *)sc, false,
                         &e) == HY_OK, "%s", e.msg);
        CHECK(hy_st_put(st, "y", 0, HY_DTYPE_BF16, 1, &four, bf2, true, &e) == HY_OK);
        CHECK(hy_st_put(st, "y", 0, HY_DTYPE_F32, 1, &one, (void *)sc, false, &e) == HY_OK);
        CHECK(hy_st_put(st, "z", 3, HY_DTYPE_F32, 1, &one, bad, true, &e) == HY_E_INVAL);
        CHECK(hy_st_count(st) == 3); /* the files' tensors only */
        const struct hy_st_tensor *t = hy_st_find(st, ft[0].name);
        CHECK(t && t->dtype == HY_DTYPE_BF16 && t->data == bf && t->nbytes == 30 && t->file == 0);
        t = hy_st_find_stored(st, ft[0].name);
        CHECK(t && t->dtype == HY_DTYPE_F8_E4M3 && t->data == w8data);
        t = hy_st_find(st, "x.weight_scale@f32");
        CHECK(t && t->data == sc && t->n_elems == 5 && hy_st_find_stored(st, t->name) == NULL);
        t = hy_st_find(st, "y");
        CHECK(t && t->dtype == HY_DTYPE_F32 && t->data == sc);
        CHECK(hy_st_find(st, "z") == NULL && hy_st_find(st, "x") == NULL);
        CHECK(hy_st_find(st, ft[1].name) && hy_st_find(st, ft[1].name)->dtype == HY_DTYPE_F32);
        hy_st_close(st); /* frees bf, bf2 (and bad, freed by the failed put): ASan checks */
    }
}

/* ---- malformed sharded checkpoints ---- */

/* Loads dir's index, lets the caller edit it, writes it back. */
static json_t *load_index(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    json_t *j = NULL;
    struct hy_err e = {{0}};
    CHECKF(hy_json_load_file(&j, path, 1 << 20, &e) == HY_OK, "%s", e.msg);
    return j;
}

static void save_index(const char *dir, json_t *j)
{
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    CHECK(json_dump_file(j, path, JSON_INDENT(2)) == 0);
    json_decref(j);
}

static void write_index_text(const char *dir, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_raw(path, text, strlen(text));
}

static void test_bad_index(void)
{
    char dir[128], path[256];
    const char *iname = "model.safetensors.index.json";

    case_dir(dir, sizeof dir, "none");
    expect_dir(dir, HY_E_IO, dir, "no model.safetensors or model.safetensors.index.json", HERE);
    snprintf(path, sizeof path, "%s/absent", root);
    expect_dir(path, HY_E_IO, path, "No such file", HERE);

    case_dir(dir, sizeof dir, "idx_text");
    write_sharded(dir);
    write_index_text(dir, "{\"weight_map\": ");
    expect_dir(dir, HY_E_FORMAT, iname, "invalid JSON", HERE);
    write_index_text(dir, "[]");
    expect_dir(dir, HY_E_FORMAT, iname, "must be a JSON object", HERE);
    write_index_text(dir, "{\"metadata\": {}}");
    expect_dir(dir, HY_E_FORMAT, iname, "'weight_map' must be an object", HERE);
    write_index_text(dir, "{\"metadata\": 3, \"weight_map\": {}}");
    expect_dir(dir, HY_E_FORMAT, iname, "'metadata' must be an object", HERE);
    write_index_text(dir, "{\"weight_map\": {}}");
    expect_dir(dir, HY_E_FORMAT, iname, "lists no tensors", HERE);
    write_index_text(dir, "{\"weight_map\": {\"odd\": 3}}");
    expect_dir(dir, HY_E_FORMAT, iname, "must be a string", HERE);
    write_index_text(dir, "{\"weight_map\": {\"odd\": \"sub/model.safetensors\"}}");
    expect_dir(dir, HY_E_FORMAT, iname, "not a plain file name", HERE);
    write_index_text(dir, "{\"weight_map\": {\"odd\": \"../model-00002-of-00003.safetensors\"}}");
    expect_dir(dir, HY_E_FORMAT, iname, "not a plain file name", HERE);
    write_index_text(dir, "{\"weight_map\": {\"odd\": \"..\"}}");
    expect_dir(dir, HY_E_FORMAT, iname, "not a plain file name", HERE);
    write_index_text(dir, "{\"weight_map\": {\"odd\": \"\"}}");
    expect_dir(dir, HY_E_FORMAT, iname, "not a plain file name", HERE);

    /* Too many distinct shards: refused before any shard is opened (none exists). */
    json_t *j = json_object(), *wm = json_object();
    for (int i = 0; i <= HY_ST_MAX_SHARDS; i++) {
        char t[32], f[64];
        snprintf(t, sizeof t, "t%d", i);
        snprintf(f, sizeof f, "s%d.safetensors", i);
        json_object_set_new(wm, t, json_string(f));
    }
    json_object_set_new(j, "weight_map", wm);
    save_index(dir, j);
    expect_dir(dir, HY_E_RANGE, iname, "more than", HERE);

    /* A shard file is missing. */
    case_dir(dir, sizeof dir, "idx_missing");
    write_sharded(dir);
    CHECK(unlink(shard_of(dir, 2, 3, path, sizeof path)) == 0);
    expect_dir(dir, HY_E_IO, "model-00002-of-00003.safetensors", "No such file", HERE);

    /* The index names a tensor its shard does not contain. */
    case_dir(dir, sizeof dir, "idx_ghost");
    write_sharded(dir);
    j = load_index(dir);
    json_object_set_new(json_object_get(j, "weight_map"), "ghost",
                        json_string("model-00001-of-00003.safetensors"));
    save_index(dir, j);
    expect_dir(dir, HY_E_FORMAT, "'ghost'", "is not in its shard model-00001-of-00003", HERE);

    /* The index puts a real tensor in the wrong shard. */
    j = load_index(dir);
    json_object_del(json_object_get(j, "weight_map"), "ghost");
    json_object_set_new(json_object_get(j, "weight_map"), "odd",
                        json_string("model-00003-of-00003.safetensors"));
    save_index(dir, j);
    expect_dir(dir, HY_E_FORMAT, "'odd'", "is not in its shard model-00003", HERE);

    /* A shard holds a tensor the index does not list. */
    j = load_index(dir);
    json_object_set_new(json_object_get(j, "weight_map"), "odd",
                        json_string("model-00002-of-00003.safetensors"));
    json_object_del(json_object_get(j, "weight_map"), "four_d");
    save_index(dir, j);
    expect_dir(dir, HY_E_FORMAT, "'four_d'", "is not in the index", HERE);

    /* One tensor in two shards. */
    case_dir(dir, sizeof dir, "idx_dup");
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    craft(path, "{\"x\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
          UINT64_MAX, 4);
    snprintf(path, sizeof path, "%s/b.safetensors", dir);
    craft(path,
          "{\"y\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
          " \"x\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
          UINT64_MAX, 8);
    write_index_text(dir, "{\"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"b.safetensors\"}}");
    expect_dir(dir, HY_E_FORMAT, "'x'", "duplicate", HERE);

    /* A malformed shard is reported with the shard's name. */
    craft(path, "{\"y\": {\"dtype\": \"I16\", \"shape\": [2], \"data_offsets\": [0, 4]}}",
          UINT64_MAX, 4);
    expect_dir(dir, HY_E_UNSUPPORTED, "b.safetensors", "unsupported dtype I16", HERE);

    /* Integer tensors take part in the index checks: listed in the wrong shard, unlisted,
     * and the same name as a float tensor of another shard. */
    craft(path, "{\"y\": {\"dtype\": \"I32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
          UINT64_MAX, 4);
    write_index_text(dir, "{\"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"a.safetensors\"}}");
    expect_dir(dir, HY_E_FORMAT, "'y'", "is not in its shard a.safetensors", HERE);
    craft(path,
          "{\"y\": {\"dtype\": \"I32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
          " \"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
          UINT64_MAX, 8);
    write_index_text(dir, "{\"weight_map\": {\"x\": \"a.safetensors\", \"w\": \"b.safetensors\"}}");
    expect_dir(dir, HY_E_FORMAT, "'y'", "is not in the index", HERE);
    write_index_text(dir, "{\"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"b.safetensors\", "
                          "\"w\": \"b.safetensors\"}}");
    struct hy_st *st = NULL;
    struct hy_err e = {{0}};
    CHECKF(hy_st_open(&st, dir, &e) == HY_OK, "%s", e.msg);
    if (st) {
        CHECK(hy_st_count(st) == 2 && hy_st_int_count(st) == 1);
        CHECK(hy_st_find_int(st, "y") && hy_st_find_int(st, "y")->file == 1);
        hy_st_close(st);
    }
    craft(path,
          "{\"y\": {\"dtype\": \"I32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
          " \"x\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [4, 8]}}",
          UINT64_MAX, 8);
    write_index_text(dir, "{\"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"b.safetensors\"}}");
    expect_dir(dir, HY_E_FORMAT, "'x'", "duplicate", HERE);
}

/* I32 / I8 / U8 (GPTQ checkpoints): kept apart from the float tensors, read in place at odd
 * offsets, with every check the others get. */
static void test_ints(void)
{
    char dir[128], path[256];
    case_dir(dir, sizeof dir, "ints");
    snprintf(path, sizeof path, "%s/x.safetensors", dir);
    craft(path,
          "{\"q\": {\"dtype\": \"I32\", \"shape\": [2, 3], \"data_offsets\": [3, 27]},"
          " \"f\": {\"dtype\": \"BF16\", \"shape\": [1], \"data_offsets\": [1, 3]},"
          " \"b\": {\"dtype\": \"I8\", \"shape\": [], \"data_offsets\": [0, 1]},"
          " \"u\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [27, 29]},"
          " \"a\": {\"dtype\": \"I32\", \"shape\": [0], \"data_offsets\": [29, 29]}}",
          UINT64_MAX, 29);
    struct hy_st *st = NULL;
    struct hy_err e = {{0}};
    CHECKF(hy_st_open_file(&st, path, &e) == HY_OK, "%s", e.msg);
    if (st) {
        CHECK(hy_st_count(st) == 1 && hy_st_at(st, 0) == hy_st_find(st, "f"));
        CHECK(hy_st_find(st, "q") == NULL && hy_st_find_stored(st, "q") == NULL);
        CHECK(hy_st_int_count(st) == 4 && hy_st_find_int(st, "f") == NULL);
        CHECK(!strcmp(hy_st_int_at(st, 0)->name, "a") && !strcmp(hy_st_int_at(st, 3)->name, "u"));
        const struct hy_st_itensor *q = hy_st_find_int(st, "q"), *b = hy_st_find_int(st, "b"),
                                   *u = hy_st_find_int(st, "u");
        CHECK(q && q->type == HY_ST_I32 && q->n_dims == 2 && q->shape[1] == 3 &&
              q->n_elems == 6 && q->nbytes == 24 && q->file == 0);
        CHECK(b && b->type == HY_ST_I8 && b->n_dims == 0 && b->nbytes == 1);
        CHECK(u && u->type == HY_ST_U8 && u->nbytes == 2);
        CHECK(!strcmp(hy_st_int_type_name(HY_ST_U8), "U8"));
        for (int i = 0; q && i < 6; i++) { /* craft's bytes at offsets 3+4i.., little-endian */
            uint32_t want = 0;
            for (int k = 3; k >= 0; k--)
                want = want << 8 | (unsigned char)((3 + 4 * i + k) * 37 + 11);
            CHECKF(hy_st_i32(q, i) == (int32_t)want, "q[%d] = %d", i, hy_st_i32(q, i));
        }
        hy_st_close(st);
    }
    BAD("{\"a\": {\"dtype\": \"I32\", \"shape\": [2], \"data_offsets\": [0, 6]}}", UINT64_MAX,
        8, HY_E_FORMAT, "2 I32 elements need 8");
    BAD("{\"a\": {\"dtype\": \"U8\", \"shape\": [9], \"data_offsets\": [0, 9]}}", UINT64_MAX,
        8, HY_E_FORMAT, "out of bounds");
    BAD("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
        " \"b\": {\"dtype\": \"I32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
        UINT64_MAX, 8, HY_E_FORMAT, "'a' and 'b' overlap");
    BAD("{\"a\": {\"dtype\": \"I8\", \"shape\": [2], \"data_offsets\": [0, 2]},"
        " \"b\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [1, 3]}}",
        UINT64_MAX, 8, HY_E_FORMAT, "'a' and 'b' overlap");
    BAD("{\"a\": {\"dtype\": \"I32\", \"shape\": [1, 1, 1, 1, 1], \"data_offsets\": [0, 4]}}",
        UINT64_MAX, 8, HY_E_UNSUPPORTED, "5 dims");
    BAD("{\"a\": {\"dtype\": \"i32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", UINT64_MAX,
        8, HY_E_FORMAT, "unknown dtype 'i32'");
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/hymt-st-XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_single();
    test_sharded();
    test_write_errors();
    test_bad_files();
    test_odd_but_valid();
    test_fp8();
    test_ints();
    test_bad_index();
    CHECK(test_rmtree(root) == 0);
    return test_result();
}
