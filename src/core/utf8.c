/* utf8.c: strict UTF-8 (RFC 3629) validation and Python-compatible repair.
 * Repair follows the Unicode "maximal subpart" practice that Python's errors="replace" and
 * Rust's String::from_utf8_lossy both use: each maximal prefix of a well-formed sequence
 * that cannot be completed becomes one U+FFFD, and so does each byte that cannot start one. */
#include "core/utf8.h"

#include <string.h>

/* Allowed range of the second byte for lead byte b (RFC 3629 table 3-7); the third and
 * fourth bytes are always 80..BF. Returns the sequence length, or 0 for a bad lead byte. */
static int lead_info(unsigned char b, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        return 2;
    if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0)
            *lo = 0xA0;
        else if (b == 0xED)
            *hi = 0x9F;
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0)
            *lo = 0x90;
        else if (b == 0xF4)
            *hi = 0x8F;
        return 4;
    }
    return 0;
}

/* Number of leading bytes of s[0..n) that are a prefix of a well-formed sequence (0 when
 * s[0] cannot start one); *need receives the full length that sequence would have. */
static int valid_prefix(const unsigned char *s, size_t n, int *need)
{
    unsigned char lo, hi;
    int len = lead_info(s[0], &lo, &hi);
    *need = len;
    if (len <= 1)
        return len;
    int k = 1;
    for (; k < len && (size_t)k < n; k++) {
        unsigned char c = s[k];
        if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF))
            break;
    }
    return k;
}

int hy_utf8_seq_len(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    int need;
    int got = valid_prefix(s, n, &need);
    return got == need ? need : 0;
}

size_t hy_utf8_validate(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        /* ASCII runs 8 bytes at a time: most text is mostly ASCII. */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, u + i, 8);
            if (w & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        int len = hy_utf8_seq_len(u + i, n - i);
        if (len == 0)
            return i;
        i += (size_t)len;
    }
    return n;
}

size_t hy_utf8_repair(const char *s, size_t n, char *out)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        int need;
        int got = valid_prefix(u + i, n - i, &need);
        if (got > 0 && got == need) {
            memcpy(out + o, u + i, (size_t)got);
            o += (size_t)got;
            i += (size_t)got;
            continue;
        }
        memcpy(out + o, "\xEF\xBF\xBD", 3); /* U+FFFD */
        o += 3;
        i += got > 0 ? (size_t)got : 1;
    }
    return o;
}

uint32_t hy_utf8_decode(const unsigned char *s, int *len)
{
    unsigned char b = s[0];
    if (b < 0x80) {
        *len = 1;
        return b;
    }
    if (b < 0xE0) {
        *len = 2;
        return ((uint32_t)(b & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (b < 0xF0) {
        *len = 3;
        return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    *len = 4;
    return ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
           ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

size_t hy_utf8_incomplete_tail(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    /* A truncated sequence is at most 3 bytes; look for its lead byte. */
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char b = u[n - k];
        if (b >= 0x80 && b <= 0xBF)
            continue; /* continuation byte: keep looking left */
        int need;
        int got = valid_prefix(u + n - k, k, &need);
        return (got == (int)k && need > (int)k) ? k : 0;
    }
    return 0;
}
