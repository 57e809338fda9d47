/* glossary.h: a terminology glossary (source term -> target term) and the terms a segment
 * contains, for the terminology prompt (prompt_ext.h; model doc 5.4).
 * Matching rule. The segment and every source term are compared in a folded form: NFKC,
 * Unicode full case folding (utf8proc), each run of whitespace one space. A term is found
 * where its folded form occurs in the folded segment and, at each end where both the
 * term's character and the segment's neighbouring character are letters, digits or marks
 * of a script that separates words with spaces, the match ends at a word boundary ("cat"
 * is not found in "category"; "混元珠" is found in "孕育出一颗混元珠", "서울" in "서울에서":
 * Han, kana, Hangul, Thai, Lao, Khmer, Myanmar and Tibetan characters never need one).
 * The segment is scanned left to right; at each character the longest term found there
 * wins and the scan resumes after it (so "machine learning" hides "learning" inside it).
 * Each term is reported once, in order of first occurrence, with the glossary's own
 * spelling of both sides.
 * Ownership: the glossary copies what is added. Threads: build it on one thread; after
 * that hy_glossary_match may run on any number of threads at once (it only reads).
 * Errors: HY_E_INVAL naming the row and what is wrong (empty side, control character, too
 * long, duplicate source term, bad CSV quoting), HY_E_RANGE past HY_GLOSSARY_MAX_ENTRIES,
 * HY_E_NOMEM. A failed add or parse leaves the glossary as it was. */
#ifndef HY_TRANSLATE_GLOSSARY_H
#define HY_TRANSLATE_GLOSSARY_H

#include "core/status.h"

#include <stddef.h>

#define HY_GLOSSARY_MAX_ENTRIES 100000
#define HY_GLOSSARY_MAX_TERM 256    /* bytes per side of an entry, as given */
#define HY_GLOSSARY_MAX_FILE (16 << 20)
#define HY_GLOSSARY_MAX_HITS 32     /* terms put into one prompt (see hy_glossary_match) */

struct hy_glossary;

struct hy_glossary_term {
    const char *src, *tgt; /* borrowed from the glossary, NUL-terminated */
    size_t src_len, tgt_len;
};

enum hy_glossary_format {
    HY_GLOSSARY_AUTO, /* TSV when the first row holds a tab, else CSV */
    HY_GLOSSARY_CSV,  /* RFC 4180: comma-separated, "..." quoting with "" for a quote */
    HY_GLOSSARY_TSV,  /* tab-separated, no quoting (DeepL's TSV) */
};

hy_status hy_glossary_create(struct hy_glossary **out, struct hy_err *err);
void hy_glossary_destroy(struct hy_glossary *g);

/* Adds one entry; both sides are trimmed of surrounding whitespace first and must then be
 * non-empty, valid UTF-8 without control characters (no line breaks), at most
 * HY_GLOSSARY_MAX_TERM bytes. A source term whose folded form is already present is
 * HY_E_INVAL. */
hy_status hy_glossary_add(struct hy_glossary *g, const char *src, size_t src_len,
                          const char *tgt, size_t tgt_len, struct hy_err *err);

/* Adds every row of a CSV or TSV file's text (at most HY_GLOSSARY_MAX_FILE bytes; a UTF-8
 * BOM is skipped; blank rows are skipped; LF or CRLF row ends). A row is source,target or
 * source,target,source_lang,target_lang (DeepL's form); the language columns are not
 * checked here: the caller reads them back with hy_glossary_langs. Errors name the row. */
hy_status hy_glossary_parse(struct hy_glossary *g, const char *text, size_t len,
                            enum hy_glossary_format fmt, struct hy_err *err);

/* The language codes of the 4-column rows ("" when none; HY_E_INVAL at parse time if two
 * rows disagree). Borrowed. */
void hy_glossary_langs(const struct hy_glossary *g, const char **src, const char **tgt);

size_t hy_glossary_size(const struct hy_glossary *g);

/* Entry i (0 <= i < size) in the order added, borrowed. */
void hy_glossary_get(const struct hy_glossary *g, size_t i, struct hy_glossary_term *t);

/* Adds terms[0..n) as rows 1..n at once (a JSON list, a TBX file: one sort, not n
 * insertions). Rules and errors as hy_glossary_add, naming the entry. */
hy_status hy_glossary_add_many(struct hy_glossary *g, const struct hy_glossary_term *terms,
                               size_t n, struct hy_err *err);

/* Adds the terms of a TBX file xml[0..len) (TBX-Basic / TBX 2008 `martif` or TBX 2019
 * `tbx`): each termEntry (conceptEntry) gives one entry, its first term in a langSet
 * (langSec) of language src as the source and its first in one of language tgt as the
 * target (xml:lang compared as lang.h codes: "en-US" is en, "zh-TW" zh-Hant); entries
 * lacking either side are counted in *skipped. Needs expat (a build without it:
 * HY_E_UNSUPPORTED). HY_E_FORMAT for XML that is not well-formed or no TBX root. */
hy_status hy_glossary_parse_tbx(struct hy_glossary *g, const char *xml, size_t len,
                                const char *src, const char *tgt, size_t *skipped,
                                struct hy_err *err);

/* The terms found in text[0..len) (see the rule above): the first cap of them in order of
 * first occurrence are written to out, *n_found counts them all (more than cap: the caller
 * decides, e.g. reports the ones left out). HY_E_NOMEM for the folded copy of the text. */
hy_status hy_glossary_match(const struct hy_glossary *g, const char *text, size_t len,
                            struct hy_glossary_term *out, size_t cap, size_t *n_found,
                            struct hy_err *err);

#endif
