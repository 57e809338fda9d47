/* text.h: lenient UTF-8 stepping and character classes shared by translate/ (internal).
 * Text handed to language detection and segmentation may hold invalid UTF-8: each byte
 * that does not start a valid sequence is one "character" of length 1 (code point
 * TEXT_BAD), so callers never read past the end and never split a valid character.
 * Pure static inline functions; no state. */
#ifndef HY_TRANSLATE_TEXT_H
#define HY_TRANSLATE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TEXT_BAD 0xFFFDu /* what an invalid byte decodes to */

/* Decodes the character at s[0..n) (n >= 1); *len receives 1..4. Strict RFC 3629: no
 * overlongs, no surrogates, nothing above U+10FFFF; anything else is one TEXT_BAD byte. */
static inline uint32_t text_decode(const unsigned char *s, size_t n, int *len)
{
    unsigned c = s[0];
    int need;
    uint32_t cp, min;
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3, cp = c & 0x07, min = 0x10000;
    } else {
        *len = 1;
        return TEXT_BAD;
    }
    if ((size_t)need >= n) {
        *len = 1;
        return TEXT_BAD;
    }
    for (int i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *len = 1;
            return TEXT_BAD;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        *len = 1;
        return TEXT_BAD;
    }
    *len = need + 1;
    return cp;
}

/* Unicode White_Space (PropList.txt). */
static inline bool text_is_space(uint32_t c)
{
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Line breaks (CR LF counts as one, handled by the caller). U+2029 is a paragraph break. */
static inline bool text_is_newline(uint32_t c)
{
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x85 || c == 0x2028 ||
           c == 0x2029;
}

/* Whitespace at which a line may be broken (not the no-break spaces). */
static inline bool text_is_break_space(uint32_t c)
{
    return text_is_space(c) && c != 0xA0 && c != 0x2007 && c != 0x202F;
}

#endif
