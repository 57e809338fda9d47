/* tm.h: a translation memory on disk (SQLite): segments translated before are answered
 * from it without the model.
 * A row: source language ("" when unknown), target language, model ("" for entries
 * imported without one: people's translations), settings (what besides the text shaped
 * the prompt: "" for the plain prompt, "terms\n" + "src\ttgt\n" per glossary term, or
 * "context " + a 64-bit FNV-1a hash of the context), source text, translation, creation
 * time. A lookup matches languages, settings and the exact source text, with the model
 * given or "" (an imported entry wins over the model's own). Sampling settings are not
 * part of the key: the first complete translation stored stays (hy_tm_put never replaces;
 * an import does).
 * Sharing: the file is in WAL mode with a 5 s busy timeout, so several hymt processes may
 * use it at once: readers never wait, writers take turns; a write still locked out after
 * the timeout fails with HY_E_IO (the caller counts it; the translation itself is written
 * out all the same, only not stored).
 * TMX 1.4: export writes every row (one <tu> per row, the model and settings as <prop>s,
 * creationdate kept), in a fixed order, so export -> import into an empty memory -> export
 * gives the same file. Import reads <tu>s with two or more <tuv>s: the one in the header's
 * srclang (or the first) is the source, every other one a target; language codes map to
 * hymt's (en-US -> en, zh-TW -> zh-Hant); inline codes (<bpt> <ept> <ph> <it> <ut>) are
 * dropped, <hi> text kept; pairs in unknown languages are counted as skipped.
 * Threads: one handle may be used from several threads (SQLite serialized mode).
 * Errors: HY_E_IO (open, locked, disk), HY_E_FORMAT (not a TMX, malformed XML, a segment
 * over HY_TM_MAX_SEG bytes), HY_E_NOTFOUND (a lookup miss), HY_E_NOMEM. */
#ifndef HY_TRANSLATE_TM_H
#define HY_TRANSLATE_TM_H

#include "core/status.h"

#include <stdint.h>
#include <stdio.h>

#define HY_TM_MAX_SEG (1 << 20) /* bytes of one stored text */

struct hy_tm;

struct hy_tm_key {
    const char *src_lang, *tgt_lang, *model, *settings; /* NUL-terminated; src_lang "" ok */
    const char *source;
    size_t source_len;
};

/* Opens or creates the memory at path. */
hy_status hy_tm_open(struct hy_tm **out, const char *path, struct hy_err *err);
void hy_tm_close(struct hy_tm *tm);

/* The translation stored for k: *text malloc'd (free it), *len bytes. HY_E_NOTFOUND. */
hy_status hy_tm_get(struct hy_tm *tm, const struct hy_tm_key *k, char **text, size_t *len,
                    struct hy_err *err);

/* Stores a translation unless the key has one already. */
hy_status hy_tm_put(struct hy_tm *tm, const struct hy_tm_key *k, const char *text, size_t len,
                    struct hy_err *err);

/* Rows in the memory. */
hy_status hy_tm_count(struct hy_tm *tm, int64_t *n, struct hy_err *err);

/* Writes the memory as TMX 1.4; *n rows written, *skipped rows holding characters XML 1.0
 * cannot carry (control characters other than tab, LF, CR). */
hy_status hy_tm_export_tmx(struct hy_tm *tm, FILE *f, size_t *n, size_t *skipped,
                           struct hy_err *err);

/* Reads TMX xml[0..len) into the memory (one transaction): *n pairs stored, *skipped
 * pairs in a language hymt does not know. */
hy_status hy_tm_import_tmx(struct hy_tm *tm, const char *xml, size_t len, size_t *n,
                           size_t *skipped, struct hy_err *err);

/* The settings string for a set of terms or a context (see above) into buf (cap bytes,
 * NUL-terminated); returns the length needed without the NUL (a result >= cap: cut). */
size_t hy_tm_settings_context(const char *ctx, size_t len, char *buf, size_t cap);

#endif
