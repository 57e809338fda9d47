/* format.h: documents whose markup must survive translation: Markdown, SRT, WebVTT, HTML.
 * A format's splitter finds the translatable runs of a document (byte ranges, ascending,
 * never overlapping); everything outside them is markup and is written back untouched.
 * The reassembler replaces each run by its translation, so a "translation" that returns
 * every run as it is gives back the input byte for byte. What each format translates:
 * - markdown: paragraph, heading, list and quote text, table cells one by one, link and
 *   image texts; kept: fenced and indented code, inline code, URLs, autolinks, link
 *   targets and reference labels, reference definitions, HTML blocks and inline tags,
 *   front matter, heading and list markers, quote prefixes, table pipes and delimiter rows.
 * - srt: cue text (multi-line cues stay multi-line); kept: cue numbers, timings, tags
 *   such as <i> and {\an8}.
 * - vtt: cue text; kept: the WEBVTT header, NOTE, STYLE and REGION blocks, cue ids and
 *   timings with their settings, cue tags (<v Name>, <c.x>, <00:01.000>, ...).
 * - html: text nodes and the values of alt, title and placeholder; kept: tags, other
 *   attributes, comments, doctype, and the content of script, style, pre, code, kbd,
 *   samp, svg and math. Inline tags split the text around them (or travel inside it as
 *   <sN> markers: hy_format_doc_prepare_tags).
 * - text: the whole document is one run (hy_format_doc_translate hands it to doc.h).
 * Runs: trimmed of surrounding whitespace, never holding a blank line, and only those
 * with at least one letter (numbers and punctuation alone are left as they are). A run
 * may span lines: a Markdown paragraph's soft-wrapped lines (not across quote prefixes or
 * hard breaks), an HTML text node, a cue's lines. hy_format_doc_translate translates a
 * Markdown or HTML run as one text (its line breaks are soft: the translation comes back
 * on one line) and a cue line by line (multi-line cues stay multi-line).
 * Pure functions, thread-safe; the split allocates the run array (caller frees), the
 * translate call the output. Errors: HY_E_INVAL for an unknown format name or runs that
 * do not fit the text, HY_E_NOMEM, the callback's own status. */
#ifndef HY_TRANSLATE_FORMAT_H
#define HY_TRANSLATE_FORMAT_H

#include "core/status.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"
#include "translate/doc.h"

#include <stdbool.h>
#include <stddef.h>

enum hy_format { HY_FORMAT_TEXT, HY_FORMAT_MARKDOWN, HY_FORMAT_SRT, HY_FORMAT_VTT, HY_FORMAT_HTML };

struct hy_format_run {
    size_t off, len;
};

/* "text", "markdown", "srt", "vtt", "html". */
const char *hy_format_name(enum hy_format f);

/* By name: text|txt, markdown|md, srt, vtt|webvtt, html|htm. HY_E_INVAL otherwise. */
hy_status hy_format_from_name(const char *name, enum hy_format *f, struct hy_err *err);

/* By the file name's extension (.md .markdown, .srt, .vtt, .html .htm .xhtml, any case);
 * anything else is text. */
enum hy_format hy_format_from_path(const char *path);

/* The runs of text[0..len): *runs is malloc'd (free it; NULL when *n is 0). */
hy_status hy_format_split(enum hy_format f, const char *text, size_t len,
                          struct hy_format_run **runs, size_t *n, struct hy_err *err);

/* The document with run i replaced by outs[i] (out_lens[i] bytes; NULL keeps the run):
 * *out is malloc'd, *out_len its size. HY_E_INVAL if runs are not ascending within len. */
hy_status hy_format_join(const char *text, size_t len, const struct hy_format_run *runs,
                         size_t n, const char *const *outs, const size_t *out_lens, char **out,
                         size_t *out_len, struct hy_err *err);

/* Translates runs texts[0..n) (lens[i] bytes each): sets outs[i] to a malloc'd
 * translation of out_lens[i] bytes, or leaves it NULL to keep the run. */
typedef hy_status (*hy_format_translate_fn)(void *ctx, const char *const *texts,
                                            const size_t *lens, size_t n, char **outs,
                                            size_t *out_lens, struct hy_err *err);

/* Split, translate every run with one call of fn, reassemble into *out (malloc'd). */
hy_status hy_format_translate(enum hy_format f, const char *text, size_t len,
                              hy_format_translate_fn fn, void *ctx, char **out, size_t *out_len,
                              struct hy_err *err);

/* The engine path: text goes to hy_doc_translate as is; any other format is split, its
 * runs translated as one document (runs apart by a blank line, keep_lines on, so each
 * run's translation comes back on its own lines), reassembled and written to o->write
 * once, whole. The rest of o (languages, glossary, context, sampling, hooks) applies as
 * for hy_doc_translate; res counts the segments of the runs. */
hy_status hy_format_doc_translate(struct hy_engine *e, const struct hy_tok *tok,
                                  enum hy_format f, const char *text, size_t len,
                                  const struct hy_doc_opts *o, struct hy_doc_result *res,
                                  struct hy_err *err);

/* The runs texts[0..n) through the engine as hy_format_doc_translate does with a format's
 * runs (one document, a blank line between runs, keep_lines; with reflow a run's line
 * breaks are soft and become spaces): outs and out_lens as hy_format_translate_fn's. For
 * other containers of runs (docx.h). */
hy_status hy_format_doc_runs(struct hy_engine *e, const struct hy_tok *tok,
                             const struct hy_doc_opts *o, struct hy_doc_result *res, bool reflow,
                             const char *const *texts, const size_t *lens, size_t n, char **outs,
                             size_t *out_lens, struct hy_err *err);

/* The same in pieces, for a caller that drives the document itself (doc.h's begin/pump,
 * the server): prepare splits text[0..len) (borrowed until free) and gives the plain
 * document its runs make (*plain, *plain_len: owned by fd; empty when there are no runs);
 * the caller translates that with keep_lines on (reflow done) and hands the output to
 * finish, which puts it back into the markup (*out malloc'd). HY_E_FORMAT from finish when
 * the translation lost a run boundary. */
struct hy_format_doc;
hy_status hy_format_doc_prepare(enum hy_format f, const char *text, size_t len,
                                struct hy_format_doc **fd, const char **plain,
                                size_t *plain_len, struct hy_err *err);
/* With inline_tags (HTML only; for a model with the formatted-text prompt, whose caller
 * sets hy_doc_opts.formatted): a run keeps its inline formatting tags when they pair, sent
 * as <sN> markers (hy_format_tags_encode); finish puts them back. */
hy_status hy_format_doc_prepare_tags(enum hy_format f, const char *text, size_t len,
                                     bool inline_tags, struct hy_format_doc **fd,
                                     const char **plain, size_t *plain_len, struct hy_err *err);
/* The number of runs (0: nothing to translate). */
size_t hy_format_doc_n_runs(const struct hy_format_doc *fd);
/* Runs sent with markers, and (after finish) those whose markers did not all come back. */
void hy_format_doc_tag_counts(const struct hy_format_doc *fd, size_t *tagged, size_t *moved);
hy_status hy_format_doc_finish(struct hy_format_doc *fd, const char *translated, size_t n,
                               char **out, size_t *out_len, struct hy_err *err);
void hy_format_doc_free(struct hy_format_doc *fd);

/* HTML's inline tags through the formatted-text prompt (prompt_ext.h): encode turns the
 * tags of a run (a, b, i, em, strong, span, ... pairs, as hy_format_doc_prepare_tags finds
 * them) into <sN>...</sN> markers numbered in the order they open (*text malloc'd);
 * HY_E_FORMAT when the tags do not pair by name or there are more than 64 pairs. decode
 * turns a translation's markers back into the run's tags when every marker came back
 * once, opening before it closes, properly nested; otherwise it drops the markers and
 * keeps every tag around the whole translation (*moved: the markup is all there, its
 * place inside the run is not). Pure functions. */
struct hy_format_tags;
hy_status hy_format_tags_encode(const char *run, size_t len, struct hy_format_tags **tags,
                                char **text, size_t *text_len, struct hy_err *err);
hy_status hy_format_tags_decode(const struct hy_format_tags *tags, const char *tr, size_t n,
                                char **out, size_t *out_len, bool *moved, struct hy_err *err);
size_t hy_format_tags_count(const struct hy_format_tags *tags);
void hy_format_tags_free(struct hy_format_tags *tags);

#endif
