/* doc.h: translating a whole document on the engine: the library call behind
 * `hymt translate` (and the HTTP API). The text is split into segments (segment.h), each
 * becomes a translation prompt (prompt.h), all segments are submitted to the engine at once
 * (as many as its queue takes, the rest as room frees up) so continuous batching
 * translates them together, and the translations are written out in document order, with
 * the original whitespace and paragraph structure: the first unfinished segment streams
 * token by token (its leading and trailing whitespace trimmed), the later ones follow as
 * soon as all before them are out. Nothing is dropped: a segment that fails before
 * writing anything keeps its original text, and failures are counted in the result.
 * Two ways to run it: hy_doc_translate runs on the calling thread and sleeps until the
 * engine signals one of its segments (the requests' notify hooks; no polling); or
 * begin / pump / end for an event loop or worker pool: the opts' notify hook says when
 * pumping would make progress, and pump never waits. Allocates per document (segments,
 * outputs), never on the engine thread.
 * Errors: HY_E_INVAL for bad options or text that is not UTF-8; the sink's own error;
 * HY_DOC_CANCELLED when the optional cancelled hook said stop (segments in flight are
 * cancelled and released first; what was written stays written); HY_E_NOSPACE from begin
 * when the engine's queue is full so that not even the first segment could be queued (the
 * server's 429: one admission rule with the single-prompt routes). */
#ifndef HY_TRANSLATE_DOC_H
#define HY_TRANSLATE_DOC_H

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"
#include "translate/glossary.h"
#include "translate/lang.h"
#include "translate/prompt_ext.h"
#include "translate/tm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The status of a translation stopped by hy_doc_opts.cancelled. hy_doc_translate returns
 * HY_E_UNSUPPORTED for nothing else, so a sink must not return it either. */
#define HY_DOC_CANCELLED HY_E_UNSUPPORTED

struct hy_doc_progress {
    size_t done, total;  /* segments finished / in the document */
    int64_t tokens_in;   /* prompt tokens submitted so far */
    int64_t tokens_out;  /* tokens generated so far */
    double elapsed_s;
};

/* Chimera ensemble (hy_doc_opts.ensemble): at most this many candidates a segment (the
 * fusion prompt's slots, prompt_chimera.h). */
#define HY_DOC_MIN_ENSEMBLE 2
#define HY_DOC_MAX_ENSEMBLE 6

/* An ensemble segment's finished candidates (hy_doc_opts.candidates), borrowed for the
 * call: each trimmed; a candidate that failed is empty. */
struct hy_doc_cands {
    size_t segment;
    const char *sep;    /* the source's whitespace before the segment */
    size_t sep_len;
    const char *source; /* the segment's source text */
    size_t source_len;
    int k;
    const char *text[HY_DOC_MAX_ENSEMBLE];
    size_t len[HY_DOC_MAX_ENSEMBLE];
};

/* An ensemble segment's candidates so far (hy_doc_opts.cand_progress). */
struct hy_doc_cand_progress {
    size_t segment;  /* its index in the document */
    int done, k;     /* candidates finished, sampled */
    int64_t tokens;  /* tokens the k candidates generated so far */
    const struct hy_doc_cands *cands; /* once all k are done (before the fusion): their
                                       * texts, borrowed for the call; else NULL */
};

struct hy_doc_opts {
    const struct hy_lang *src;         /* NULL: detect from the text (may stay unknown) */
    const struct hy_lang *tgt;         /* required */
    struct hy_sampler_params sampling; /* hy_sampler_params_default() for translation */
    int max_seg_tokens;                /* longest segment in tokens (default 256) */
    int max_new_tokens;                /* per segment; 0: 2 x its tokens + 64, within limits */
    bool keep_lines;                   /* line-true output: segments never span a line
                                        * break, and line breaks a translation writes
                                        * become one space, so the output has the input's
                                        * lines, blank ones where they were */
    double timeout_s;                  /* per segment; 0: none */
    /* The prompts the model takes (prompt_detect.h decides them); NULL: what the tokenizer
     * alone suggests (hy_prompt_gen_of_style). Borrowed. */
    const struct hy_prompt_kind *prompt;
    /* Hy-MT2's style, preferences, delimiters or data format (prompt_ext.h), for every
     * segment; NULL: none. Not with a glossary or context; another generation's model:
     * HY_E_INVAL before anything runs. Borrowed. */
    const struct hy_prompt_instr *instr;
    /* Terminology and context (prompt_ext.h), for HY-MT1.5 and Hy-MT2 models only: with
     * a Hunyuan-MT (mt1) model any of them is HY_E_INVAL before anything runs. */
    const struct hy_glossary *glossary; /* borrowed; a segment with terms gets them */
    const char *context;               /* text before the document (borrowed, UTF-8) */
    size_t context_len;
    int context_segs;                  /* also the document's previous N segments (source) */
    bool formatted;                    /* a segment holding <sN>...</sN> markers (format.h's
                                        * inline tags) gets the formatted-text prompt
                                        * unless it has glossary terms */
    /* Optional translation memory (tm.h, borrowed): a segment found there (same languages,
     * prompt settings, model or an imported entry, exact source) is written from it without
     * the engine; every segment the model finishes (stop token, not cut) is stored. */
    struct hy_tm *tm;
    const char *tm_model;              /* the model's name in the memory ("" if NULL) */
    /* Chimera ensemble, 0: off. With k (HY_DOC_MIN_ENSEMBLE..HY_DOC_MAX_ENSEMBLE) each
     * segment's prompt is sampled k times at once on the engine (one batch; the prompt's KV
     * blocks shared through the prefix cache) with the model doc's recommended settings
     * (hy_sampler_params_default: 0.7, top-k 20, top-p 0.6, repetition penalty 1.05) and
     * the seeds sampling.seed + 1 .. + k; once all k are done, the chimera engine (its
     * tokenizer chimera_tok; both borrowed) gets the fusion prompt (prompt_chimera.h) with
     * `sampling` as given, and its answer is the segment's translation, streamed as any.
     * A fusion prompt too long for Chimera's max_seq_tokens falls back to the first
     * candidate (counted). Needs the source language (given or detected) and no
     * translation memory: else HY_E_INVAL before anything runs. */
    int ensemble;
    struct hy_engine *chimera;
    const struct hy_tok *chimera_tok;
    /* Optional: an ensemble segment's candidates made progress (tokens, one finished, or
     * all done: then with their texts). Any order of segments. */
    void (*cand_progress)(void *ctx, const struct hy_doc_cand_progress *p);
    void *cand_progress_ctx;
    /* Optional: each ensemble segment's candidates, in document order, just before its
     * translation is complete in the sink; a non-OK return stops the translation. */
    hy_status (*candidates)(void *ctx, const struct hy_doc_cands *c, struct hy_err *err);
    void *candidates_ctx;
    /* Output sink, called in document order; a non-OK return stops the translation. */
    hy_status (*write)(void *ctx, const char *s, size_t n, struct hy_err *err);
    void *write_ctx;
    /* Optional: called when a segment finishes. */
    void (*progress)(void *ctx, const struct hy_doc_progress *p);
    void *progress_ctx;
    /* Optional, hy_doc_translate only: asked each time it wakes (a segment produced tokens
     * or finished); true stops the translation with HY_DOC_CANCELLED (a client that went
     * away, a deadline, a shutdown). */
    bool (*cancelled)(void *ctx);
    void *cancel_ctx;
    /* begin/pump only: called (engine thread, engine lock held: quick, no hy_engine_* call)
     * when one of the document's segments has news; the caller should then pump. */
    void (*notify)(void *ctx);
    void *notify_ctx;
};

struct hy_doc_result {
    size_t segments;
    size_t cut;             /* segments that hit max_new_tokens */
    size_t failed;          /* segments kept in the original (engine error, timeout) */
    size_t with_terms;      /* segments translated with the terminology prompt */
    size_t with_context;    /* segments translated with the context prompt */
    size_t terms_left_out;  /* terms found beyond HY_GLOSSARY_MAX_HITS in a segment */
    size_t context_cut;     /* segments whose context was shortened to fit the prompt */
    size_t with_format;     /* segments translated with the formatted-text prompt */
    size_t tagged_runs;     /* hy_format_doc_translate: runs sent with <sN> markers, */
    size_t tags_moved;      /* and those whose markers did not come back (format.h) */
    size_t tm_hits;         /* segments answered from the translation memory */
    size_t tm_stored;       /* segments stored into it */
    size_t tm_errors;       /* lookups or stores that failed (locked file, disk): translated
                             * or written all the same */
    size_t fused;           /* ensemble segments Chimera fused */
    size_t fuse_fallback;   /* ... answered with the first candidate (prompt too long) */
    int64_t tokens_in, tokens_out; /* all engines: candidates and fusions included */
    const struct hy_lang *src; /* the source language used (detected or given); may be NULL */
    double elapsed_s;
    bool cancelled;         /* stopped by the cancelled hook */
};

struct hy_doc;

/* Validates, splits and queues as many segments as the engine takes (at least the first,
 * else HY_E_NOSPACE). o, text and res are borrowed until hy_doc_end. */
hy_status hy_doc_begin(struct hy_doc **out, struct hy_engine *e, const struct hy_tok *tok,
                       const char *text, size_t len, const struct hy_doc_opts *o,
                       struct hy_doc_result *res, struct hy_err *err);
/* Takes in what the engine produced, writes what is ready (the sink, in order), queues more
 * segments; never waits. *done when everything is written (the document's trailing
 * whitespace too). *starved when nothing of the document is in the engine and its queue is
 * full (no notification will come: pump again later). */
hy_status hy_doc_pump(struct hy_doc *d, bool *done, bool *starved, struct hy_err *err);
/* Cancels and releases the segments still in the engine, frees the document. NULL is fine. */
void hy_doc_end(struct hy_doc *d);

hy_status hy_doc_translate(struct hy_engine *e, const struct hy_tok *tok, const char *text,
                           size_t len, const struct hy_doc_opts *o, struct hy_doc_result *res,
                           struct hy_err *err);

#endif
