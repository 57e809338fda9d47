/* segment.h: splitting a document into segments to translate, and reassembling it.
 * A segment is the whitespace before it (kept verbatim, never translated) plus its
 * content (never empty; starts and ends with non-whitespace). The separators and contents
 * of all segments in order, then the trailing whitespace, give back the input byte for
 * byte. Splits fall at blank lines, line breaks and sentence ends of every supported
 * script; consecutive sentences of one paragraph are merged while the merged text stays
 * within max_tokens; a longer sentence is cut at the best safe point (after a comma,
 * at a space, between grapheme clusters, never inside a character). Rules: segment.c.
 * Invalid UTF-8 is tolerated (each bad byte is one character). Pure functions: no
 * allocation, thread-safe if the count callback is. HY_E_NOSPACE never drops anything:
 * the count needed is returned. */
#ifndef HY_TRANSLATE_SEGMENT_H
#define HY_TRANSLATE_SEGMENT_H

#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>

struct hy_seg {
    size_t sep_off, sep_len; /* whitespace before the content (may be empty) */
    size_t off, len;         /* the content to translate, len >= 1 */
};

/* Number of tokens in s[0..len): the tokenizer in production, bytes or characters in
 * tests. Should grow with len (a longer text never has fewer tokens); the splitter checks
 * every segment it emits and copes with a count that does not. */
typedef size_t (*hy_seg_count_fn)(void *ctx, const char *s, size_t len);

struct hy_seg_opts {
    size_t max_tokens;     /* >= 1: no segment counts more, unless it is one character */
    hy_seg_count_fn count; /* NULL: count bytes */
    void *ctx;             /* passed to count */
    bool keep_lines;       /* true: never merge across a line break (lists, verse, code) */
};

/* Splits text[0..len) into segs[0..cap). On HY_OK and HY_E_NOSPACE, *n_out is the number
 * of segments (the first cap of them are written) and *trail_off the start of the trailing
 * whitespace (len when there is none; 0 and no segments for a blank text). HY_E_RANGE
 * when max_tokens is 0. */
hy_status hy_seg_split(const char *text, size_t len, const struct hy_seg_opts *opts,
                       struct hy_seg *segs, size_t cap, size_t *n_out, size_t *trail_off,
                       struct hy_err *err);

/* Reassembles the document: for each segment its original separator, then outs[i]
 * (out_lens[i] bytes, with its leading and trailing whitespace trimmed, since the
 * separators are restored verbatim) or the original content when outs[i] is NULL; then
 * text[trail_off..len). Writes into buf (cap bytes, not NUL-terminated); *n_out is the
 * size written, or needed on HY_E_NOSPACE. HY_E_INVAL when segs do not tile text. */
hy_status hy_seg_join(const char *text, size_t len, const struct hy_seg *segs, size_t n,
                      size_t trail_off, const char *const *outs, const size_t *out_lens, char *buf,
                      size_t cap, size_t *n_out, struct hy_err *err);

#endif
