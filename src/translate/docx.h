/* docx.h: Word documents (.docx, Office Open XML) translated in place: the text of every
 * paragraph of word/document.xml (its w:t runs, tables' cells included) is translated as
 * one text, and the translation is written back over the same runs, so each run keeps its
 * properties (w:rPr: bold, fonts, colours) and everything else of the package (styles,
 * numbering, headers, images, relationships; in document.xml every element and attribute)
 * stays as it was; the other parts are copied as they are stored, never decompressed.
 * Distribution over runs: a paragraph's runs in order hold the translation cut at the same
 * proportions of its length (in characters) as the source's runs, each cut moved to the
 * nearest space within HY_DOCX_SNAP characters so words stay whole in one run's format; a
 * run that was empty stays empty. A paragraph whose translation equals its text (or that
 * holds no letter) is left untouched. A w:t whose new text starts or ends with a space
 * gets xml:space="preserve".
 * Untrusted input: the file is at most HY_DOCX_MAX_BYTES, at most HY_DOCX_MAX_ENTRIES
 * parts, word/document.xml at most HY_DOCX_MAX_XML bytes uncompressed (read with that cap,
 * whatever the archive declares: a zip bomb stops there), the declared sizes of all parts
 * together at most HY_DOCX_MAX_TOTAL; the XML is parsed without network access, without
 * entity substitution or DTD loading, and a document with a DTD is refused (no XXE, no
 * entity expansion). Every failure is one line (HY_E_FORMAT for a file that is not a
 * .docx, or lacks word/document.xml, or holds malformed XML; HY_E_RANGE over a limit).
 * Needs libzip and libxml2 at build time; without them HY_E_UNSUPPORTED naming the
 * packages. Thread-safe (libxml2 is initialized once); allocates the output. */
#ifndef HY_TRANSLATE_DOCX_H
#define HY_TRANSLATE_DOCX_H

#include "translate/format.h"

#include <stdbool.h>

#define HY_DOCX_MAX_BYTES (64ll << 20)   /* the .docx file */
#define HY_DOCX_MAX_XML (64ll << 20)     /* word/document.xml, uncompressed */
#define HY_DOCX_MAX_TOTAL (1ll << 30)    /* all parts' declared sizes together */
#define HY_DOCX_MAX_ENTRIES 10000        /* parts in the archive */
#define HY_DOCX_SNAP 16                  /* characters a cut moves to reach a space */

/* Whether this build reads .docx files (libzip and libxml2 found). */
bool hy_docx_available(void);
/* Whether the file name ends in .docx (any case): `hymt translate` picks the format by it. */
bool hy_docx_is_path(const char *path);

/* Translates the paragraphs of the .docx data[0..len) with one call of fn (texts: the
 * paragraphs' trimmed texts, in document order) and writes the new package to *out
 * (malloc'd, *out_len bytes). */
hy_status hy_docx_translate(const void *data, size_t len, hy_format_translate_fn fn, void *ctx,
                            void **out, size_t *out_len, struct hy_err *err);

/* The same in steps, for a caller that translates the texts itself (the server's job):
 * open checks and parses the package; texts lists the paragraphs' trimmed texts (borrowed
 * from d, in document order); finish writes outs[i] (out_lens[i] bytes, copied; NULL keeps
 * the paragraph) back and makes the new package (*out malloc'd), once; close frees d
 * (NULL is fine). */
struct hy_docx;
hy_status hy_docx_open(struct hy_docx **d, const void *data, size_t len, struct hy_err *err);
size_t hy_docx_texts(const struct hy_docx *d, const char *const **texts, const size_t **lens);
hy_status hy_docx_finish(struct hy_docx *d, const char *const *outs, const size_t *out_lens,
                         void **out, size_t *out_len, struct hy_err *err);
void hy_docx_close(struct hy_docx *d);

/* The engine path: the paragraphs go through hy_format_doc_runs (format.h) with o, the
 * new package is written to o->write once, whole. */
hy_status hy_docx_doc_translate(struct hy_engine *e, const struct hy_tok *tok, const void *data,
                                size_t len, const struct hy_doc_opts *o,
                                struct hy_doc_result *res, struct hy_err *err);

#endif
