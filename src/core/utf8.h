/* utf8.h: UTF-8 validation and repair for text from outside (files, HTTP bodies).
 * Strict RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF. Pure functions. */
#ifndef HY_CORE_UTF8_H
#define HY_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if s[0..n) does not start with one. */
int hy_utf8_seq_len(const unsigned char *s, size_t n);
/* Offset of the first invalid byte, or n when all of s[0..n) is valid. */
size_t hy_utf8_validate(const char *s, size_t n);
/* Copies s to out replacing each maximal invalid subsequence by U+FFFD (as Python's
 * errors="replace"); out needs up to 3*n bytes. Returns bytes written. */
size_t hy_utf8_repair(const char *s, size_t n, char *out);
/* Decodes the code point at s (which must be valid); *len receives its length. */
uint32_t hy_utf8_decode(const unsigned char *s, int *len);
/* Length (0..3) of the well-formed but unfinished sequence that ends s[0..n): the bytes a
 * streaming decoder holds back until more input arrives. */
size_t hy_utf8_incomplete_tail(const char *s, size_t n);

#endif
