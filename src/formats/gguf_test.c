/* gguf_test.c: the GGUF writer and reader round trip (every value type, three tensor types,
 * alignment), the typed getters' errors, and hand-made malformed files, each of which must
 * be a clean error naming the problem (never a crash: the suite also runs under ASan).
 * Random mutations are in gguf_fuzz_test.c. */
#include "formats/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);                  \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static char tmp_path[256];

/* Tensor payloads: non-zero, distinct per tensor. */
static float f32_data[6] = {1.5f, -2.25f, 3.0f, 0.125f, -7.0f, 42.0f};
static uint16_t bf16_data[5];
static unsigned char q8_data[2 * 34];

static void make_data(void)
{
    for (int i = 0; i < 5; i++)
        bf16_data[i] = hy_f32_to_bf16((float)(i + 1) * 0.3f);
    float row[64];
    for (int i = 0; i < 64; i++)
        row[i] = (float)((i * 37) % 23 - 11) * 0.05f;
    hy_q8_0_quantize_row(q8_data, row, 64);
}

static hy_status write_sample(const char *path, uint32_t alignment, struct hy_err *err)
{
    struct hy_gguf_w *w = NULL;
    const char *toks[3] = {"a", "", "hello world"};
    int32_t types[4] = {1, -3, 2147483647, 5};
    hy_status s = hy_gguf_w_open(&w, path, err);
    if (s)
        return s;
    if (alignment)
        s = hy_gguf_w_u32(w, "general.alignment", alignment, err);
    if (!s) s = hy_gguf_w_str(w, "general.architecture", "hunyuan-dense", err);
    if (!s) s = hy_gguf_w_u32(w, "x.u32", 4096, err);
    if (!s) s = hy_gguf_w_i32(w, "x.i32", -17, err);
    if (!s) s = hy_gguf_w_f32(w, "x.f32", 1e-5f, err);
    if (!s) s = hy_gguf_w_f64(w, "x.f64", 11158839.925077, err);
    if (!s) s = hy_gguf_w_bool(w, "x.bool", true, err);
    if (!s) s = hy_gguf_w_arr_str(w, "x.strs", toks, NULL, 3, err);
    if (!s) s = hy_gguf_w_arr_i32(w, "x.i32s", types, 4, err);
    uint64_t ne1[2] = {3, 2}, ne2[1] = {5}, ne3[2] = {64, 1};
    if (!s) s = hy_gguf_w_tensor(w, "a.weight", HY_GGML_F32, 2, ne1, err);
    if (!s) s = hy_gguf_w_tensor(w, "b.weight", HY_GGML_BF16, 1, ne2, err);
    if (!s) s = hy_gguf_w_tensor(w, "c.weight", HY_GGML_Q8_0, 2, ne3, err);
    if (!s) s = hy_gguf_w_begin_data(w, err);
    if (!s) s = hy_gguf_w_data(w, f32_data, 10, err); /* a tensor in two pieces */
    if (!s) s = hy_gguf_w_data(w, (const char *)f32_data + 10, sizeof f32_data - 10, err);
    if (!s) s = hy_gguf_w_data(w, bf16_data, sizeof bf16_data, err);
    if (!s) s = hy_gguf_w_data(w, q8_data, sizeof q8_data, err);
    if (s) {
        hy_gguf_w_abort(w);
        return s;
    }
    return hy_gguf_w_finish(w, err);
}

static void test_round_trip(uint32_t alignment)
{
    struct hy_err err = {{0}};
    CHECK(write_sample(tmp_path, alignment, &err) == HY_OK);
    struct hy_gguf *g = NULL;
    hy_status s = hy_gguf_open(&g, tmp_path, &err);
    if (s) {
        fprintf(stderr, "open: %s\n", err.msg);
        failures++;
        return;
    }
    CHECK(hy_gguf_alignment(g) == (alignment ? alignment : 32));
    CHECK(hy_gguf_kv_count(g) == 9);
    const char *str;
    size_t len;
    CHECK(hy_gguf_get_str(g, "general.architecture", true, &str, &len, &err) == HY_OK);
    CHECK(len == 13 && !memcmp(str, "hunyuan-dense", 13));
    uint64_t u = 0;
    CHECK(hy_gguf_get_uint(g, "x.u32", true, &u, &err) == HY_OK && u == 4096);
    CHECK(hy_gguf_get_uint(g, "x.i32", true, &u, &err) == HY_E_RANGE); /* negative */
    double d = 0;
    CHECK(hy_gguf_get_real(g, "x.f32", true, &d, &err) == HY_OK && d == (double)1e-5f);
    CHECK(hy_gguf_get_real(g, "x.f64", true, &d, &err) == HY_OK && d == 11158839.925077);
    bool b = false;
    CHECK(hy_gguf_get_bool(g, "x.bool", true, &b, &err) == HY_OK && b);
    /* wrong types and missing keys */
    CHECK(hy_gguf_get_uint(g, "x.f32", true, &u, &err) == HY_E_FORMAT);
    CHECK(strstr(err.msg, "x.f32") != NULL);
    CHECK(hy_gguf_get_str(g, "x.u32", true, &str, &len, &err) == HY_E_FORMAT);
    CHECK(hy_gguf_get_uint(g, "nope", true, &u, &err) == HY_E_NOTFOUND);
    CHECK(strstr(err.msg, "nope") != NULL);
    u = 77;
    CHECK(hy_gguf_get_uint(g, "nope", false, &u, &err) == HY_OK && u == 77);
    const struct hy_gguf_kv *kv = NULL;
    CHECK(hy_gguf_get_arr(g, "x.strs", true, HY_GGUF_STRING, &kv, &err) == HY_OK && kv);
    if (kv) {
        CHECK(kv->arr_n == 3);
        size_t pos = 0;
        const char *want[3] = {"a", "", "hello world"};
        for (int i = 0; i < 3; i++) {
            hy_gguf_arr_str_next(kv, &pos, &str, &len);
            CHECK(len == strlen(want[i]) && !memcmp(str, want[i], len));
        }
    }
    CHECK(hy_gguf_get_arr(g, "x.strs", true, HY_GGUF_I32, &kv, &err) == HY_E_FORMAT);
    CHECK(hy_gguf_get_arr(g, "x.i32s", true, HY_GGUF_I32, &kv, &err) == HY_OK && kv);
    if (kv)
        CHECK(kv->arr_n == 4 && hy_gguf_arr_int(kv, 1) == -3 && hy_gguf_arr_int(kv, 2) == 2147483647);
    CHECK(hy_gguf_tensor_count(g) == 3);
    const struct hy_gguf_tensor *a = hy_gguf_find_tensor(g, "a.weight");
    const struct hy_gguf_tensor *bt = hy_gguf_find_tensor(g, "b.weight");
    const struct hy_gguf_tensor *c = hy_gguf_find_tensor(g, "c.weight");
    CHECK(a && bt && c && !hy_gguf_find_tensor(g, "d.weight"));
    if (a && bt && c) {
        CHECK(a->ggml_type == HY_GGML_F32 && a->n_dims == 2 && a->ne[0] == 3 && a->ne[1] == 2);
        CHECK(a->nbytes == sizeof f32_data && !memcmp(a->data, f32_data, sizeof f32_data));
        CHECK(bt->ggml_type == HY_GGML_BF16 && bt->nbytes == 10 &&
              !memcmp(bt->data, bf16_data, 10));
        CHECK(c->ggml_type == HY_GGML_Q8_0 && c->nbytes == 68 && !memcmp(c->data, q8_data, 68));
        uint32_t al = hy_gguf_alignment(g);
        CHECK(a->offset % al == 0 && bt->offset % al == 0 && c->offset % al == 0);
        CHECK(hy_gguf_tensor_at(g, 0) == a && hy_gguf_tensor_at(g, 2) == c);
    }
    hy_gguf_close(g);
    CHECK(hy_gguf_is_gguf(tmp_path));
}

/* ---- hand-made files ---- */

struct mk {
    unsigned char b[4096];
    size_t n;
};
static void p_bytes(struct mk *m, const void *p, size_t n) { memcpy(m->b + m->n, p, n); m->n += n; }
static void p_u32(struct mk *m, uint32_t v) { p_bytes(m, &v, 4); }
static void p_u64(struct mk *m, uint64_t v) { p_bytes(m, &v, 8); }
static void p_str(struct mk *m, const char *s) { p_u64(m, strlen(s)); p_bytes(m, s, strlen(s)); }
static void p_hdr(struct mk *m, uint32_t version, uint64_t n_t, uint64_t n_kv)
{
    m->n = 0;
    p_bytes(m, "GGUF", 4);
    p_u32(m, version);
    p_u64(m, n_t);
    p_u64(m, n_kv);
}
static void p_tinfo(struct mk *m, const char *name, uint32_t nd, uint64_t ne0, uint32_t type,
                    uint64_t off)
{
    p_str(m, name);
    p_u32(m, nd);
    for (uint32_t d = 0; d < nd && d < 8; d++)
        p_u64(m, d == 0 ? ne0 : 1);
    p_u32(m, type);
    p_u64(m, off);
}
static void p_zeros(struct mk *m, size_t n)
{
    memset(m->b + m->n, 0, n);
    m->n += n;
}
static void p_data(struct mk *m, size_t n)
{
    while (m->n % 32)
        m->b[m->n++] = 0;
    for (size_t i = 0; i < n; i++)
        m->b[m->n++] = (unsigned char)(i * 7 + 1);
}

/* Expects parsing to fail with status st and a message containing `want`. */
static void expect_bad(const struct mk *m, hy_status st, const char *want, int line)
{
    unsigned char *copy = malloc(m->n ? m->n : 1); /* exact size: ASan sees any overread */
    memcpy(copy, m->b, m->n);
    struct hy_gguf *g = NULL;
    struct hy_err err = {{0}};
    hy_status s = hy_gguf_open_mem(&g, copy, m->n, "bad.gguf", &err);
    if (s != st || !strstr(err.msg, want) || !strstr(err.msg, "bad.gguf") || g) {
        fprintf(stderr, "line %d: got status %d '%s', want %d containing '%s'\n", line, (int)s,
                err.msg, (int)st, want);
        failures++;
    }
    hy_gguf_close(g);
    free(copy);
}
#define BAD(st, want) expect_bad(&m, st, want, __LINE__)

static void test_malformed(void)
{
    struct mk m;
    /* the valid baseline: one F32 tensor of 8 elements, one key */
    p_hdr(&m, 3, 1, 1);
    p_str(&m, "general.architecture");
    p_u32(&m, HY_GGUF_STRING);
    p_str(&m, "hunyuan-dense");
    p_tinfo(&m, "t", 1, 8, HY_GGML_F32, 0);
    p_data(&m, 32);
    {
        struct hy_gguf *g = NULL;
        struct hy_err err = {{0}};
        CHECK(hy_gguf_open_mem(&g, m.b, m.n, "ok.gguf", &err) == HY_OK);
        hy_gguf_close(g);
        /* every strict prefix is a truncated file */
        struct mk full = m;
        for (size_t n = 0; n < full.n; n++) {
            m.n = n;
            expect_bad(&m, HY_E_FORMAT, n < 4 ? "truncated" : "", __LINE__);
        }
        m = full;
    }
    m.b[0] = 'X';
    BAD(HY_E_FORMAT, "bad magic");
    p_hdr(&m, 2, 0, 0);
    BAD(HY_E_UNSUPPORTED, "version 2");
    p_hdr(&m, 0x03000000u, 0, 0);
    BAD(HY_E_FORMAT, "version");
    p_hdr(&m, 3, 1ull << 40, 0);
    BAD(HY_E_RANGE, "tensors");
    p_hdr(&m, 3, 0, 1000);
    BAD(HY_E_FORMAT, "cannot fit");
    p_hdr(&m, 3, 0, 1);
    p_u64(&m, ~0ull); /* key length */
    p_zeros(&m, 16);
    BAD(HY_E_RANGE, "metadata key");
    p_hdr(&m, 3, 0, 1);
    p_str(&m, "k");
    p_u32(&m, HY_GGUF_STRING);
    p_u64(&m, 1ull << 62);
    BAD(HY_E_RANGE, "length");
    p_hdr(&m, 3, 0, 1);
    p_str(&m, "k");
    p_u32(&m, HY_GGUF_STRING);
    p_u64(&m, 100); /* longer than the file */
    BAD(HY_E_FORMAT, "truncated");
    p_hdr(&m, 3, 0, 1);
    p_str(&m, "k");
    p_u32(&m, 13); /* unknown value type */
    p_zeros(&m, 16);
    BAD(HY_E_FORMAT, "unknown value type");
    p_hdr(&m, 3, 0, 1);
    p_str(&m, "k");
    p_u32(&m, HY_GGUF_ARRAY);
    p_u32(&m, HY_GGUF_ARRAY);
    p_u64(&m, 0);
    BAD(HY_E_FORMAT, "nested");
    p_hdr(&m, 3, 0, 1);
    p_str(&m, "k");
    p_u32(&m, HY_GGUF_ARRAY);
    p_u32(&m, HY_GGUF_U64);
    p_u64(&m, 1ull << 60);
    BAD(HY_E_RANGE, "array");
    p_hdr(&m, 3, 0, 1);
    p_str(&m, "k");
    p_u32(&m, HY_GGUF_ARRAY);
    p_u32(&m, HY_GGUF_U32);
    p_u64(&m, 1000);
    BAD(HY_E_FORMAT, "truncated");
    p_hdr(&m, 3, 0, 1);
    p_str(&m, "k");
    p_u32(&m, HY_GGUF_BOOL);
    m.b[m.n++] = 2;
    BAD(HY_E_FORMAT, "bool");
    p_hdr(&m, 3, 0, 2);
    for (int i = 0; i < 2; i++) {
        p_str(&m, "dup.key");
        p_u32(&m, HY_GGUF_U32);
        p_u32(&m, 1);
    }
    BAD(HY_E_FORMAT, "duplicate metadata key dup.key");
    p_hdr(&m, 3, 0, 1);
    p_u64(&m, 3);
    p_bytes(&m, "a\0b", 3);
    p_u32(&m, HY_GGUF_U32);
    p_u32(&m, 1);
    BAD(HY_E_FORMAT, "NUL");
    p_hdr(&m, 3, 0, 1);
    p_str(&m, "general.alignment");
    p_u32(&m, HY_GGUF_U32);
    p_u32(&m, 24);
    BAD(HY_E_FORMAT, "power of");
    p_hdr(&m, 3, 0, 1);
    p_str(&m, "general.alignment");
    p_u32(&m, HY_GGUF_U64);
    p_u64(&m, 32);
    BAD(HY_E_FORMAT, "not u32");
    /* tensors */
    p_hdr(&m, 3, 1, 0);
    p_tinfo(&m, "t", 0, 8, HY_GGML_F32, 0);
    p_zeros(&m, 16);
    BAD(HY_E_FORMAT, "0 dims");
    p_hdr(&m, 3, 1, 0);
    p_tinfo(&m, "t", 5, 8, HY_GGML_F32, 0);
    BAD(HY_E_FORMAT, "5 dims");
    p_hdr(&m, 3, 1, 0);
    p_tinfo(&m, "t", 1, 0, HY_GGML_F32, 0);
    BAD(HY_E_FORMAT, "dim 0");
    p_hdr(&m, 3, 1, 0);
    p_str(&m, "t");
    p_u32(&m, 2);
    p_u64(&m, 1ull << 40);
    p_u64(&m, 1ull << 40);
    p_u32(&m, 0);
    p_u64(&m, 0);
    BAD(HY_E_FORMAT, "overflows");
    p_hdr(&m, 3, 1, 0);
    p_tinfo(&m, "t", 1, 8, 99, 0);
    BAD(HY_E_UNSUPPORTED, "unknown ggml type 99");
    p_hdr(&m, 3, 1, 0);
    p_tinfo(&m, "t", 1, 8, HY_GGML_Q8_0, 0);
    BAD(HY_E_FORMAT, "multiple of the Q8_0 block");
    p_hdr(&m, 3, 1, 0);
    p_tinfo(&m, "t", 1, 8, HY_GGML_F32, 16);
    p_data(&m, 64);
    BAD(HY_E_FORMAT, "not a multiple of the alignment");
    p_hdr(&m, 3, 1, 0);
    p_tinfo(&m, "t", 1, 8, HY_GGML_F32, 0);
    p_data(&m, 31);
    BAD(HY_E_FORMAT, "past the end");
    p_hdr(&m, 3, 1, 0);
    p_tinfo(&m, "t", 1, 8, HY_GGML_F32, ~0ull - 31);
    p_data(&m, 32);
    BAD(HY_E_FORMAT, "past the end");
    p_hdr(&m, 3, 2, 0);
    p_tinfo(&m, "t1", 1, 16, HY_GGML_F32, 0);
    p_tinfo(&m, "t2", 1, 8, HY_GGML_F32, 32);
    p_data(&m, 96);
    BAD(HY_E_FORMAT, "overlap");
    p_hdr(&m, 3, 2, 0);
    p_tinfo(&m, "same", 1, 8, HY_GGML_F32, 0);
    p_tinfo(&m, "same", 1, 8, HY_GGML_F32, 32);
    p_data(&m, 64);
    BAD(HY_E_FORMAT, "duplicate tensor name same");
    p_hdr(&m, 3, 1, 0);
    p_u64(&m, 0);
    p_zeros(&m, 40);
    BAD(HY_E_FORMAT, "empty");
    /* a file with no tensors and no data section is valid */
    p_hdr(&m, 3, 0, 0);
    struct hy_gguf *g = NULL;
    struct hy_err err = {{0}};
    CHECK(hy_gguf_open_mem(&g, m.b, m.n, "empty.gguf", &err) == HY_OK);
    hy_gguf_close(g);
    CHECK(hy_gguf_open(&g, "/nonexistent/x.gguf", &err) == HY_E_IO && !g);
}

static void test_writer_errors(void)
{
    struct hy_err err = {{0}};
    struct hy_gguf_w *w = NULL;
    CHECK(hy_gguf_w_open(&w, "/nonexistent/dir/x.gguf", &err) == HY_E_IO && !w);
    CHECK(hy_gguf_w_open(&w, tmp_path, &err) == HY_OK);
    CHECK(hy_gguf_w_u32(w, "k", 1, &err) == HY_OK);
    CHECK(hy_gguf_w_u32(w, "k", 2, &err) == HY_E_INVAL); /* duplicate */
    uint64_t ne[2] = {33, 2};
    CHECK(hy_gguf_w_tensor(w, "q", HY_GGML_Q8_0, 2, ne, &err) == HY_E_INVAL); /* 33 % 32 */
    ne[0] = 32;
    CHECK(hy_gguf_w_tensor(w, "q", HY_GGML_Q8_0, 2, ne, &err) == HY_OK);
    CHECK(hy_gguf_w_tensor(w, "q", HY_GGML_F32, 1, ne, &err) == HY_E_INVAL); /* duplicate */
    CHECK(hy_gguf_w_u32(w, "general.alignment", 64, &err) == HY_E_INVAL);  /* after tensors */
    CHECK(hy_gguf_w_begin_data(w, &err) == HY_OK);
    unsigned char blk[68] = {0};
    CHECK(hy_gguf_w_data(w, blk, 10, &err) == HY_OK);
    CHECK(hy_gguf_w_finish(w, &err) == HY_E_INVAL); /* 10 of 68 bytes */
    CHECK(strstr(err.msg, "10 of 68") != NULL);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(tmp_path, sizeof tmp_path, "%s/hymt_gguf_test_%d.gguf", tmp ? tmp : "/tmp",
             (int)getpid());
    make_data();
    test_round_trip(0);
    test_round_trip(64);
    test_malformed();
    test_writer_errors();
    unlink(tmp_path);
    if (failures) {
        fprintf(stderr, "gguf_test: %d failures\n", failures);
        return 1;
    }
    printf("gguf_test: ok\n");
    return 0;
}
