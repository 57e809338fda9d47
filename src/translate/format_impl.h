/* format_impl.h: what the format splitters share (internal to translate/format*.c).
 * A splitter appends regions of translatable text to a run list; fmt_region cuts a region
 * at blank lines, trims each piece and keeps those with a letter. Lines are walked with
 * fmt_line. No state besides the list; allocation only in the list. */
#ifndef HY_TRANSLATE_FORMAT_IMPL_H
#define HY_TRANSLATE_FORMAT_IMPL_H

#include "translate/format.h"

#include <stdbool.h>

struct fmt_runs {
    const char *t; /* the document */
    size_t len;
    struct hy_format_run *r;
    size_t n, cap;
    bool oom;
    bool inline_tags; /* html: inline formatting tags stay inside runs (format_tags.c) */
};

/* Adds t[a..b) as runs (see above). Records running out of memory in oom. */
void fmt_region(struct fmt_runs *k, size_t a, size_t b);

/* The line starting at a: *end is where its content ends (before CR LF or LF), *next the
 * start of the next line (len at the end). */
void fmt_line(const struct fmt_runs *k, size_t a, size_t *end, size_t *next);

/* Whether t[a..b) holds only spaces and tabs. */
bool fmt_blank(const struct fmt_runs *k, size_t a, size_t b);

/* Adds the text of t[a..b) as runs around tags: <...> (a letter, '/', '!' or '?' after the
 * '<', up to the next '>' within the range) and, when braces is set, {\...} overrides. */
void fmt_inline_tags(struct fmt_runs *k, size_t a, size_t b, bool braces);

void fmt_split_markdown(struct fmt_runs *k);
void fmt_split_srt(struct fmt_runs *k);
void fmt_split_vtt(struct fmt_runs *k);
void fmt_split_html(struct fmt_runs *k);

#endif
