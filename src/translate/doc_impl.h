/* doc_impl.h: the document's state, shared by doc.c (segments, prompts, streaming the
 * output) and doc_ens.c (the Chimera ensemble: candidates, then the fusion). Internal to
 * src/translate/; doc.h has the contract. */
#ifndef HY_TRANSLATE_DOC_IMPL_H
#define HY_TRANSLATE_DOC_IMPL_H

#include "translate/doc.h"
#include "translate/prompt.h"
#include "translate/segment.h"

struct doc_ens_job;

struct seg_job {
    uint64_t h;            /* its request on eng */
    struct hy_engine *eng; /* the document's engine, or Chimera's once an ensemble fuses */
    struct doc_ens_job *ens; /* ensemble: its candidates (doc_ens.c); NULL otherwise */
    bool fusing;             /* ensemble: h is the fusion on Chimera (candidates all done) */
    bool submitted, done;
    enum hy_finish finish;
    int32_t *ids; /* generated ids [max_new] */
    int n_ids, max_new;
    /* streaming, for the segment at the front of the output (see emit) */
    struct hy_detok dt;
    int n_fed;      /* ids already through the detokenizer */
    bool started;   /* its separator and first visible character are written */
    char *tm_settings; /* its translation-memory settings (tm.h), when a memory is used */
    char *tm_text;     /* the memory's translation, on a hit */
    size_t tm_len;
};

struct hy_doc {
    struct hy_engine *e;
    const struct hy_tok *tok;
    const struct hy_doc_opts *o;
    const char *text;
    size_t len;
    struct hy_prompt_kind kind;           /* the model's chat format and generation */
    const struct hy_lang *src;
    int32_t stop[HY_ENGINE_MAX_STOP];
    int n_stop;
    struct hy_seg *segs;
    struct seg_job *jobs;
    size_t n, next_submit, next_write, n_done, trail;
    int32_t *prompt; /* scratch [max_seq_tokens] */
    int32_t *count_buf; /* scratch for the token-count callback [len + 1] */
    char *ctx;          /* scratch for a segment's context [context_len + 1 + len] */
    char *ws;           /* the front segment's whitespace held back (see emit) */
    size_t n_ws, cap_ws;
    char *out;          /* the front segment's translation as written, for the memory */
    size_t n_out, cap_out;
    struct hy_doc_result *res;
    double t0;
    bool finished; /* everything written */
    int32_t *fuse_prompt; /* ensemble: scratch [Chimera's max_seq_tokens] */
    enum hy_prompt_style fuse_style;      /* ensemble: Chimera's prompt style */
    int32_t fuse_stop[HY_ENGINE_MAX_STOP]; /* ... and stop ids */
    int n_fuse_stop;
    bool fuse_waiting;    /* ensemble: a fusion the Chimera queue refused waits (pump again) */
};

/* doc.c: marks segment i finished (counts, progress hook). */
void doc_finish(struct hy_doc *d, size_t i, enum hy_finish why);

/* doc_ens.c, for a document with o->ensemble >= 2 (its checks at begin, then per segment):
 * HY_E_INVAL for options an ensemble cannot run with. */
hy_status doc_ens_check(struct hy_doc *d, struct hy_err *err);
/* Submits segment i's k candidates (request r, the prompt in d->prompt) to d->e, all or
 * none: HY_E_NOSPACE when the queue took not all of them (none is left queued). */
hy_status doc_ens_submit(struct hy_doc *d, size_t i, const struct hy_engine_request *r,
                         struct hy_err *err);
/* Reads the candidates without waiting; once all are done, submits the fusion to the
 * Chimera engine (j->h, j->eng then name it, and the segment streams from there) or, if
 * its prompt cannot fit, finishes the segment with the first candidate. True on progress. */
bool doc_ens_poll(struct hy_doc *d, size_t i);
/* Whether segment i waits for room in the Chimera queue (nothing of it in an engine). */
bool doc_ens_waiting(const struct hy_doc *d, size_t i);
/* Hands segment i's candidates to o->candidates (document order), if set. */
hy_status doc_ens_flush(struct hy_doc *d, size_t i, struct hy_err *err);
/* Releases what segment i still has in an engine and frees its candidates. */
void doc_ens_end(struct hy_doc *d, size_t i);

#endif
