/* utf8_test.c: validation edge cases (RFC 3629 table), repair against Python's
 * bytes.decode("utf-8", "replace") (expected strings computed with CPython 3), and a
 * random-bytes property check: repair's output is always valid and equals the input when
 * the input is valid. */
#include "core/utf8.h"
#include "test.h"

#include <string.h>

static void check_validate(void)
{
    struct {
        const char *s;
        size_t n, bad; /* expected first invalid offset (n if valid) */
    } cases[] = {
        {"", 0, 0},
        {"hello", 5, 5},
        {"\xC3\xA9", 2, 2},         /* é */
        {"\xE4\xB8\xAD", 3, 3},     /* 中 */
        {"\xF0\x9F\x98\x80", 4, 4}, /* U+1F600 */
        {"\xF4\x8F\xBF\xBF", 4, 4}, /* U+10FFFF */
        {"\xEF\xBF\xBD", 3, 3},     /* U+FFFD */
        {"a\x00"
         "b",
         3, 3},                     /* NUL is valid */
        {"\xC0\x80", 2, 0},         /* overlong NUL */
        {"\xC1\xBF", 2, 0},         /* overlong */
        {"\xE0\x80\x80", 3, 0},     /* overlong */
        {"\xE0\x9F\xBF", 3, 0},     /* overlong */
        {"\xF0\x8F\xBF\xBF", 4, 0}, /* overlong */
        {"\xED\xA0\x80", 3, 0},     /* surrogate D800 */
        {"\xED\xBF\xBF", 3, 0},     /* surrogate DFFF */
        {"\xF4\x90\x80\x80", 4, 0}, /* > U+10FFFF */
        {"\xF5\x80\x80\x80", 4, 0},
        {"\xFF", 1, 0},
        {"abc\x80", 4, 3},      /* stray continuation */
        {"ab\xE4\xB8", 4, 2},   /* truncated */
        {"12345678\xC3", 9, 8}, /* after the 8-byte ASCII fast path */
        {"1234567\xC3\xA9xyz", 12, 12},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t got = hy_utf8_validate(cases[i].s, cases[i].n);
        CHECKF(got == cases[i].bad, "case %zu: got %zu want %zu", i, got, cases[i].bad);
    }
    CHECK(hy_utf8_seq_len((const unsigned char *)"\xE4\xB8\xAD", 3) == 3);
    CHECK(hy_utf8_seq_len((const unsigned char *)"\xE4\xB8\xAD", 2) == 0);
    CHECK(hy_utf8_seq_len((const unsigned char *)"", 0) == 0);
}

/* Expected outputs from CPython: b.decode("utf-8", "replace").encode(). */
static void check_repair(void)
{
    struct {
        const char *in;
        size_t n;
        const char *want;
    } cases[] = {
        {"\xE0\x80", 2, "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xE2\x82", 2, "\xEF\xBF\xBD"},
        {"\xE2\x82"
         "A",
         3,
         "\xEF\xBF\xBD"
         "A"},
        {"\xED\xA0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xF4\x90\x80\x80", 4, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xF0\x9F\x98", 3, "\xEF\xBF\xBD"},
        {"\xC0\xAF", 2, "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"a\x80"
         "b",
         3,
         "a\xEF\xBF\xBD"
         "b"},
        {"\xF1\x80\x80\xE1\x80\xC2", 6, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xF0\x9F\x98\x80\xFF", 5, "\xF0\x9F\x98\x80\xEF\xBF\xBD"},
    };
    char out[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = hy_utf8_repair(cases[i].in, cases[i].n, out);
        CHECKF(n == strlen(cases[i].want) && !memcmp(out, cases[i].want, n), "repair case %zu", i);
    }
}

static void check_tail(void)
{
    CHECK(hy_utf8_incomplete_tail("ab", 2) == 0);
    CHECK(hy_utf8_incomplete_tail("a\xE2", 2) == 1);
    CHECK(hy_utf8_incomplete_tail("a\xE2\x82", 3) == 2);
    CHECK(hy_utf8_incomplete_tail("a\xE2\x82\xAC", 4) == 0); /* complete */
    CHECK(hy_utf8_incomplete_tail("\xF0\x9F\x98", 3) == 3);
    CHECK(hy_utf8_incomplete_tail("\xE0\x80", 2) == 0);         /* already invalid */
    CHECK(hy_utf8_incomplete_tail("\xE2\x82\xAC\x82", 4) == 0); /* stray continuation */
    CHECK(hy_utf8_incomplete_tail("\xFF", 1) == 0);
    CHECK(hy_utf8_incomplete_tail("", 0) == 0);
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void check_random(void)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    unsigned char in[64];
    char out[3 * 64], out2[3 * 3 * 64];
    for (int iter = 0; iter < 200000; iter++) {
        size_t n = rng(&seed) % 24;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rng(&seed);
            /* bias towards bytes that build sequences */
            static const unsigned char pool[] = {0x41, 0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xDF, 0xE0,
                                                 0xE4, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0x00};
            in[i] = (r & 1) ? (unsigned char)(r >> 8) : pool[(r >> 8) % sizeof pool];
        }
        size_t bad = hy_utf8_validate((const char *)in, n);
        size_t m = hy_utf8_repair((const char *)in, n, out);
        CHECK(m <= 3 * n);
        CHECK(hy_utf8_validate(out, m) == m);
        if (bad == n)
            CHECK(m == n && !memcmp(in, out, n));
        /* repairing twice changes nothing */
        size_t m2 = hy_utf8_repair(out, m, out2);
        CHECK(m2 == m && !memcmp(out, out2, m));
        /* every valid sequence decodes to a scalar value and round-trips its length */
        for (size_t i = 0; i < m;) {
            int len;
            uint32_t cp = hy_utf8_decode((const unsigned char *)out + i, &len);
            CHECK(cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF));
            i += (size_t)len;
        }
        if (test_failures_)
            break;
    }
}

int main(void)
{
    check_validate();
    check_repair();
    check_tail();
    check_random();
    return test_result();
}
