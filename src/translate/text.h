/* text.h: lenient UTF-8 stepping and character classes shared by translate/ (internal).
 * Text handed to language detection and segmentation may hold invalid UTF-8: each byte
 * that does not start a valid sequence is one "character" of length 1 (code point
 * TEXT_BAD), so callers never read past the end and never split a valid character.
 * Pure static inline functions; no state. */
#ifndef HY_TRANSLATE_TEXT_H
#define HY_TRANSLATE_TEXT_H

#include "core/utf8.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TEXT_BAD 0xFFFDu /* what an invalid byte decodes to */

/* Decodes the character at s[0..n) (n >= 1); *len receives 1..4. Strict RFC 3629 (core's
 * validator): anything that does not start a valid sequence is one TEXT_BAD byte. */
static inline uint32_t text_decode(const unsigned char *s, size_t n, int *len)
{
    if (s[0] < 0x80) { /* most text is mostly ASCII: no call */
        *len = 1;
        return s[0];
    }
    if (hy_utf8_seq_len(s, n) == 0) {
        *len = 1;
        return TEXT_BAD;
    }
    return hy_utf8_decode(s, len);
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
