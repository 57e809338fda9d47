/* doc_ens.c: the Chimera ensemble of a document (hy_doc_opts.ensemble, doc.h): a segment's
 * k candidates sampled together on the document's engine, then fused by Chimera on its own
 * engine; the fusion's tokens stream like any segment's (doc.c). */
#include "translate/doc_impl.h"

#include "translate/prompt_chimera.h"
#include "translate/text.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(HY_DOC_MAX_ENSEMBLE == HY_CHIMERA_MAX_CANDIDATES,
               "an ensemble fills at most the fusion prompt's slots");

struct doc_ens_job {
    int k;
    uint64_t h[HY_DOC_MAX_ENSEMBLE];
    bool live[HY_DOC_MAX_ENSEMBLE];   /* h[c] is held in d->e */
    bool done[HY_DOC_MAX_ENSEMBLE];
    enum hy_finish finish[HY_DOC_MAX_ENSEMBLE];
    int32_t *ids[HY_DOC_MAX_ENSEMBLE]; /* [max_new] each */
    int n_ids[HY_DOC_MAX_ENSEMBLE];
    char *text[HY_DOC_MAX_ENSEMBLE];   /* decoded, once done */
    size_t len[HY_DOC_MAX_ENSEMBLE];
    int n_done;
    bool waiting; /* the fusion waits for room in Chimera's queue */
};

hy_status doc_ens_check(struct hy_doc *d, struct hy_err *err)
{
    const struct hy_doc_opts *o = d->o;
    if (o->ensemble < HY_DOC_MIN_ENSEMBLE || o->ensemble > HY_DOC_MAX_ENSEMBLE)
        return hy_err_set(err, HY_E_INVAL, "ensemble %d: must be %d to %d candidates",
                          o->ensemble, HY_DOC_MIN_ENSEMBLE, HY_DOC_MAX_ENSEMBLE);
    if (!o->chimera || !o->chimera_tok)
        return hy_err_set(err, HY_E_INVAL, "an ensemble needs the Chimera model (--chimera)");
    if (!d->src)
        return hy_err_set(err, HY_E_INVAL, "an ensemble needs the source language (the Chimera "
                          "prompt names it): give it, it was not detected from the text");
    if (o->tm)
        return hy_err_set(err, HY_E_INVAL, "an ensemble does not use the translation memory");
    hy_status st = hy_prompt_style_detect(o->chimera_tok, &d->fuse_style, err);
    if (st)
        return st;
    d->n_fuse_stop = (int)hy_prompt_stop_ids(o->chimera_tok, d->fuse_style, d->fuse_stop,
                                             HY_ENGINE_MAX_STOP);
    d->fuse_prompt = malloc((size_t)hy_engine_get_params(o->chimera)->max_seq_tokens *
                            sizeof *d->fuse_prompt);
    if (!d->fuse_prompt)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    return HY_OK;
}

static void release_all(struct hy_doc *d, struct doc_ens_job *x)
{
    for (int c = 0; c < x->k; c++)
        if (x->live[c]) {
            hy_engine_release(d->e, x->h[c]);
            x->live[c] = false;
        }
}

hy_status doc_ens_submit(struct hy_doc *d, size_t i, const struct hy_engine_request *r,
                         struct hy_err *err)
{
    struct seg_job *j = &d->jobs[i];
    struct doc_ens_job *x = j->ens;
    if (!x && !(x = j->ens = calloc(1, sizeof *x)))
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    x->k = d->o->ensemble;
    struct hy_engine_request c = *r;
    c.sampling = hy_sampler_params_default(); /* the model doc's recommended settings */
    hy_status st = HY_OK;
    for (int k = 0; k < x->k && !st; k++) {
        c.sampling.seed = d->o->sampling.seed + 1 + (uint64_t)k;
        if (!x->ids[k] && !(x->ids[k] = malloc((size_t)j->max_new * sizeof *x->ids[k])))
            st = hy_err_set(err, HY_E_NOMEM, "out of memory");
        if (!st)
            st = hy_engine_submit(d->e, &c, &x->h[k], err);
        x->live[k] = !st;
    }
    if (st) { /* all or none: a segment half queued would hold blocks and wait */
        release_all(d, x);
        return st;
    }
    j->submitted = true;
    d->res->tokens_in += (int64_t)x->k * r->n_prompt;
    return HY_OK;
}

/* Decodes candidate c's ids (special tokens dropped) into x->text[c], trimmed. */
static hy_status decode(struct hy_doc *d, struct doc_ens_job *x, int c)
{
    struct hy_detok dt;
    hy_detok_init(&dt, d->tok, true);
    size_t cap = (size_t)x->n_ids[c] * 8 + 64, n = 0;
    char *s = malloc(cap);
    for (int t = 0; s && t <= x->n_ids[c]; t++) {
        if (cap - n < HY_DETOK_MAX_OUT) {
            char *p = realloc(s, cap * 2 + HY_DETOK_MAX_OUT);
            if (!p) {
                free(s);
                s = NULL;
                break;
            }
            s = p;
            cap = cap * 2 + HY_DETOK_MAX_OUT;
        }
        int k = t < x->n_ids[c] ? hy_detok_push(&dt, x->ids[c][t], s + n, cap - n)
                                : hy_detok_flush(&dt, s + n, cap - n);
        n += k > 0 ? (size_t)k : 0;
    }
    if (!s)
        return HY_E_NOMEM;
    size_t a = 0;
    int l;
    while (a < n && text_is_space(text_decode((unsigned char *)s + a, n - a, &l)))
        a += (size_t)l;
    while (n > a && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    memmove(s, s + a, n - a);
    x->text[c] = s;
    x->len[c] = n - a;
    return HY_OK;
}

/* Chimera's request for segment i (all candidates done). HY_E_NOSPACE: its queue is full;
 * HY_E_RANGE: the prompt does not fit its max_seq_tokens (the caller falls back). */
static hy_status fuse(struct hy_doc *d, size_t i, struct hy_err *err)
{
    struct seg_job *j = &d->jobs[i];
    struct doc_ens_job *x = j->ens;
    const struct hy_seg *g = &d->segs[i];
    struct hy_chimera_cand cands[HY_DOC_MAX_ENSEMBLE];
    int n = 0;
    for (int c = 0; c < x->k; c++)
        if (x->len[c]) /* a failed or empty candidate is left out */
            cands[n++] = (struct hy_chimera_cand){x->text[c], x->len[c]};
    if (n == 0)
        return hy_err_set(err, HY_E_RANGE, "no candidate");
    const int max_seq = hy_engine_get_params(d->o->chimera)->max_seq_tokens;
    size_t np = 0;
    hy_status st = hy_prompt_chimera(d->o->chimera_tok, d->fuse_style, d->src, d->o->tgt,
                                     d->text + g->off, g->len, cands, n, d->fuse_prompt,
                                     (size_t)max_seq - 1, &np, err);
    if (st)
        return st == HY_E_NOSPACE ? HY_E_RANGE : st;
    int room = max_seq - (int)np, max_new = j->max_new < room ? j->max_new : room;
    if (max_new < 1)
        return hy_err_set(err, HY_E_RANGE, "the fusion prompt fills Chimera's token limit");
    struct hy_engine_request r = {.prompt = d->fuse_prompt, .n_prompt = (int)np,
                                  .max_new_tokens = max_new, .sampling = d->o->sampling,
                                  .timeout_s = d->o->timeout_s, .n_stop = d->n_fuse_stop,
                                  .notify = d->o->notify, .notify_ctx = d->o->notify_ctx};
    memcpy(r.stop_ids, d->fuse_stop, sizeof r.stop_ids);
    st = hy_engine_submit(d->o->chimera, &r, &j->h, err);
    if (st)
        return st;
    j->max_new = max_new;
    j->n_ids = 0;
    j->eng = d->o->chimera;
    j->fusing = true;
    hy_detok_init(&j->dt, d->o->chimera_tok, true);
    d->res->tokens_in += (int64_t)np;
    return HY_OK;
}

/* Segment i's candidates as the hooks see them (texts once decoded). */
static void cands_of(const struct hy_doc *d, size_t i, struct hy_doc_cands *c)
{
    const struct doc_ens_job *x = d->jobs[i].ens;
    const struct hy_seg *g = &d->segs[i];
    *c = (struct hy_doc_cands){i, d->text + g->sep_off, g->sep_len, d->text + g->off, g->len,
                               x->k, {0}, {0}};
    for (int k = 0; k < x->k; k++) {
        c->text[k] = x->text[k] ? x->text[k] : "";
        c->len[k] = x->text[k] ? x->len[k] : 0;
    }
}

static void progress(struct hy_doc *d, size_t i, bool with_texts)
{
    const struct doc_ens_job *x = d->jobs[i].ens;
    if (!d->o->cand_progress)
        return;
    struct hy_doc_cands c;
    struct hy_doc_cand_progress p = {i, x->n_done, x->k, 0, NULL};
    for (int k = 0; k < x->k; k++)
        p.tokens += x->n_ids[k];
    if (with_texts) {
        cands_of(d, i, &c);
        p.cands = &c;
    }
    d->o->cand_progress(d->o->cand_progress_ctx, &p);
}

/* All candidates are in: Chimera's request, or the first usable candidate as the answer. */
static void all_done(struct hy_doc *d, size_t i)
{
    struct seg_job *j = &d->jobs[i];
    struct doc_ens_job *x = j->ens;
    struct hy_err e2 = {{0}};
    for (int c = 0; c < x->k; c++)
        if (!x->text[c] && (x->finish[c] == HY_FINISH_STOP || x->finish[c] == HY_FINISH_LENGTH) &&
            decode(d, x, c) != HY_OK)
            x->len[c] = 0;
    if (!x->waiting) /* the first time: the candidates' texts, before any fused token */
        progress(d, i, true);
    hy_status st = fuse(d, i, &e2);
    x->waiting = st == HY_E_NOSPACE;
    d->fuse_waiting |= x->waiting;
    if (!st) {
        d->res->fused++;
    } else if (!x->waiting) {
        int c = 0; /* the first candidate that finished, as if sampled alone */
        while (c < x->k && x->finish[c] != HY_FINISH_STOP && x->finish[c] != HY_FINISH_LENGTH)
            c++;
        if (c == x->k) {
            doc_finish(d, i, HY_FINISH_ERROR);
            return;
        }
        memcpy(j->ids, x->ids[c], (size_t)x->n_ids[c] * sizeof *j->ids);
        j->n_ids = x->n_ids[c];
        d->res->fuse_fallback++;
        doc_finish(d, i, x->finish[c]);
    }
}

bool doc_ens_poll(struct hy_doc *d, size_t i)
{
    struct seg_job *j = &d->jobs[i];
    struct doc_ens_job *x = j->ens;
    bool moved = false;
    if (x->waiting) { /* the fusion again: Chimera's queue may have room now */
        all_done(d, i);
        return !x->waiting;
    }
    for (int c = 0; c < x->k; c++) {
        if (!x->live[c])
            continue;
        struct hy_engine_status st;
        int n = hy_engine_read(d->e, x->h[c], x->ids[c] + x->n_ids[c], j->max_new - x->n_ids[c],
                               0, &st);
        if (n < 0) {
            st.done = true;
            st.finish = HY_FINISH_ERROR;
            st.n_generated = x->n_ids[c];
            n = 0;
        }
        x->n_ids[c] += n;
        d->res->tokens_out += n;
        moved |= n > 0;
        if (st.done && st.n_generated == x->n_ids[c]) {
            hy_engine_release(d->e, x->h[c]);
            x->live[c] = false;
            x->done[c] = true;
            x->finish[c] = st.finish;
            x->n_done++;
            moved = true;
        }
    }
    if (x->n_done == x->k)
        all_done(d, i);
    else if (moved)
        progress(d, i, false);
    return moved;
}

bool doc_ens_waiting(const struct hy_doc *d, size_t i)
{
    return d->jobs[i].ens && d->jobs[i].ens->waiting;
}

hy_status doc_ens_flush(struct hy_doc *d, size_t i, struct hy_err *err)
{
    if (!d->o->candidates || !d->jobs[i].ens)
        return HY_OK;
    struct hy_doc_cands c;
    cands_of(d, i, &c);
    return d->o->candidates(d->o->candidates_ctx, &c, err);
}

void doc_ens_end(struct hy_doc *d, size_t i)
{
    struct seg_job *j = &d->jobs[i];
    struct doc_ens_job *x = j->ens;
    release_all(d, x);
    if (j->fusing && !j->done)
        hy_engine_release(j->eng, j->h); /* cancels the fusion */
    for (int c = 0; c < HY_DOC_MAX_ENSEMBLE; c++) {
        free(x->ids[c]);
        free(x->text[c]);
    }
    free(x);
    j->ens = NULL;
}
