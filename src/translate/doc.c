/* doc.c: document translation on the engine (doc.h has the contract). */
#include "translate/doc.h"
#include "translate/doc_impl.h"

#include "core/clock.h"
#include "core/utf8.h"
#include "translate/prompt.h"
#include "translate/prompt_ext.h"
#include "translate/segment.h"
#include "translate/text.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DOC_STARVED_S 0.01 /* hy_doc_translate's retry when others' requests fill the queue */

/* Tokens in s: the segmenter's length measure. */
static size_t count_tokens(void *ctx, const char *s, size_t n)
{
    struct hy_doc *d = ctx;
    size_t got = 0;
    if (hy_tok_encode(d->tok, s, n, false, d->count_buf, d->len + 1, &got, NULL) != HY_OK)
        return n; /* cannot happen for valid UTF-8 within the document; bytes bound tokens */
    return got;
}

static hy_status split(struct hy_doc *d, struct hy_err *err)
{
    struct hy_seg_opts so = {(size_t)(d->o->max_seg_tokens > 0 ? d->o->max_seg_tokens : 256),
                             count_tokens, d, d->o->keep_lines};
    size_t n = 0, trail = 0;
    hy_status st = hy_seg_split(d->text, d->len, &so, NULL, 0, &n, &trail, err);
    if (st && st != HY_E_NOSPACE)
        return st;
    d->segs = calloc(n ? n : 1, sizeof *d->segs);
    d->jobs = calloc(n ? n : 1, sizeof *d->jobs);
    if (!d->segs || !d->jobs)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for %zu segments", n);
    st = hy_seg_split(d->text, d->len, &so, d->segs, n, &d->n, &d->trail, err);
    d->res->segments = d->n;
    return st;
}

static void finish(struct hy_doc *d, size_t i, enum hy_finish why);

static struct hy_tm_key tm_key(const struct hy_doc *d, size_t i)
{
    const struct hy_seg *g = &d->segs[i];
    return (struct hy_tm_key){d->src ? d->src->code : "", d->o->tgt->code,
                              d->o->tm_model ? d->o->tm_model : "", d->jobs[i].tm_settings,
                              d->text + g->off, g->len};
}

/* Segment i's memory settings (what shaped its prompt besides the text: tm.h), and its
 * translation if the memory has one. A failed lookup is counted and translated. */
static hy_status tm_lookup(struct hy_doc *d, size_t i, const struct hy_prompt_ext *x,
                           struct hy_err *err)
{
    struct seg_job *j = &d->jobs[i];
    size_t need = 16;
    for (size_t t = 0; t < x->n_terms; t++)
        need += x->terms[t].src_len + x->terms[t].tgt_len + 2;
    const struct hy_prompt_instr *in = x->instr;
    if (hy_prompt_instr_any(in)) {
        need += 32 + (in->style ? strlen(in->style) : 0) +
                (in->data_format ? strlen(in->data_format) : 0);
        for (size_t k = 0; k < in->n_prefs; k++)
            need += strlen(in->prefs[k]) + 1;
    }
    if (!(j->tm_settings = malloc(need + 32)))
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    char *p = j->tm_settings;
    if (hy_prompt_instr_any(in)) { /* the instruction shapes the output as terms do */
        p += in->style ? sprintf(p, "style\t%s\n", in->style)
             : in->data_format ? sprintf(p, "data\t%s\n", in->data_format)
             : in->delimiters ? sprintf(p, "delimiters\n")
                              : sprintf(p, "preferences\n");
        for (size_t k = 0; k < in->n_prefs; k++)
            p += sprintf(p, "%s\n", in->prefs[k]);
        *p = '\0';
    } else if (x->n_terms) {
        p += sprintf(p, "terms\n");
        for (size_t t = 0; t < x->n_terms; t++)
            p += sprintf(p, "%s\t%s\n", x->terms[t].src, x->terms[t].tgt);
    } else if (x->formatted) {
        strcpy(p, "formatted");
    } else if (x->context_len) {
        hy_tm_settings_context(x->context, x->context_len, p, need + 32);
    } else {
        *p = '\0';
    }
    struct hy_tm_key k = tm_key(d, i);
    struct hy_err e2 = {{0}};
    hy_status st = hy_tm_get(d->o->tm, &k, &j->tm_text, &j->tm_len, &e2);
    if (st && st != HY_E_NOTFOUND)
        d->res->tm_errors++;
    return HY_OK;
}

/* Segment i's context with its k previous segments: the given context (if given), a line
 * break when both are there, and the source text from segment i-k to the end of i-1. */
static size_t context_of(struct hy_doc *d, size_t i, size_t k, bool given)
{
    size_t n = 0;
    if (given) {
        memcpy(d->ctx, d->o->context, d->o->context_len);
        n = d->o->context_len;
    }
    if (k) {
        size_t a = d->segs[i - k].off, b = d->segs[i - 1].off + d->segs[i - 1].len;
        if (n)
            d->ctx[n++] = '\n';
        memcpy(d->ctx + n, d->text + a, b - a);
        n += b - a;
    }
    return n;
}

/* Whether s[0..n) holds a formatted-text marker <sN> (N a number). */
static bool has_markers(const char *s, size_t n)
{
    for (size_t i = 0; i + 3 < n; i++)
        if (s[i] == '<' && s[i + 1] == 's' && s[i + 2] >= '0' && s[i + 2] <= '9')
            return true;
    return false;
}

/* Segment i's prompt ids (*n): its glossary terms, else the formatted-text prompt for
 * a segment with markers (opts.formatted), else its context (the previous
 * segments dropped from the oldest while the prompt does not fit), else the plain one. */
static hy_status build_prompt(struct hy_doc *d, size_t i, size_t cap, size_t *n, struct hy_err *err)
{
    const struct hy_seg *g = &d->segs[i];
    struct hy_glossary_term terms[HY_GLOSSARY_MAX_HITS];
    struct hy_prompt_ext x = {.terms = terms, .instr = d->o->instr};
    hy_status st;
    if (d->o->glossary) {
        st = hy_glossary_match(d->o->glossary, d->text + g->off, g->len, terms,
                               HY_GLOSSARY_MAX_HITS, &x.n_terms, err);
        if (st)
            return st;
        if (x.n_terms > HY_GLOSSARY_MAX_HITS) {
            d->res->terms_left_out += x.n_terms - HY_GLOSSARY_MAX_HITS;
            x.n_terms = HY_GLOSSARY_MAX_HITS;
        }
    }
    /* inline tags as <sN> markers: HY-MT1.5's formatted-text prompt (Hy-MT2 has none) */
    if (d->o->formatted && !x.n_terms && !hy_prompt_instr_any(x.instr) &&
        hy_prompt_ext_has_formatted(d->kind.gen) && has_markers(d->text + g->off, g->len)) {
        x.formatted = true;
        st = hy_prompt_ext_translate(d->tok, &d->kind, d->src, d->o->tgt, &x, d->text + g->off,
                                     g->len, d->prompt, cap, n, err);
        d->res->with_format += !st;
        if (!st && d->o->tm && !d->jobs[i].tm_settings)
            st = tm_lookup(d, i, &x, err);
        return st;
    }
    size_t k = d->o->context_segs > 0 ? (size_t)d->o->context_segs : 0;
    k = k < i ? k : i;
    size_t want = k;
    bool given = d->o->context_len > 0;
    x.context = d->ctx;
    for (;;) {
        x.context_len = x.n_terms || (!given && k == 0) ? 0 : context_of(d, i, k, given);
        st = hy_prompt_ext_translate(d->tok, &d->kind, d->src, d->o->tgt, &x, d->text + g->off,
                                     g->len, d->prompt, cap, n, err);
        if (st != HY_E_NOSPACE || x.context_len == 0)
            break;
        if (k > 0)
            k--;
        else
            given = false; /* even the given context alone does not fit: none */
    }
    d->res->with_terms += !st && x.n_terms;
    d->res->with_context += !st && x.context_len;
    d->res->context_cut += !st && !x.n_terms && (k < want || given != (d->o->context_len > 0));
    if (!st && d->o->tm && !d->jobs[i].tm_settings)
        st = tm_lookup(d, i, &x, err);
    return st;
}

/* Builds segment i's prompt and submits it. HY_E_NOSPACE: the engine's queue is full. */
static hy_status submit(struct hy_doc *d, size_t i, struct hy_err *err)
{
    const struct hy_engine_params *ep = hy_engine_get_params(d->e);
    const struct hy_seg *g = &d->segs[i];
    struct seg_job *j = &d->jobs[i];
    size_t n = 0;
    hy_status st = build_prompt(d, i, (size_t)ep->max_seq_tokens - 1, &n, err);
    if (st)
        return st == HY_E_NOSPACE ? HY_E_RANGE : st;
    if (j->tm_text) { /* answered by the memory: no engine */
        d->res->tm_hits++;
        finish(d, i, HY_FINISH_STOP);
        return HY_OK;
    }
    int room = ep->max_seq_tokens - (int)n;
    int want = d->o->max_new_tokens > 0 ? d->o->max_new_tokens
                                        : 2 * (int)count_tokens(d, d->text + g->off, g->len) + 64;
    j->max_new = want < room ? want : room;
    if (j->max_new < 1)
        return hy_err_set(err, HY_E_RANGE, "segment %zu's prompt fills the %d-token limit", i,
                          ep->max_seq_tokens);
    struct hy_engine_request r = {.prompt = d->prompt, .n_prompt = (int)n,
                                  .max_new_tokens = j->max_new, .sampling = d->o->sampling,
                                  .timeout_s = d->o->timeout_s, .n_stop = d->n_stop};
    memcpy(r.stop_ids, d->stop, sizeof d->stop);
    r.notify = d->o->notify;
    r.notify_ctx = d->o->notify_ctx;
    if (!j->ids && !(j->ids = malloc((size_t)j->max_new * sizeof *j->ids)))
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    hy_detok_init(&j->dt, d->tok, true); /* special ids, the stop token among them, vanish */
    j->eng = d->e;
    if (d->o->ensemble) /* k candidates now, Chimera's request once they are done */
        return doc_ens_submit(d, i, &r, err);
    st = hy_engine_submit(d->e, &r, &j->h, err);
    if (!st) {
        j->submitted = true;
        d->res->tokens_in += (int64_t)n;
    }
    return st;
}

void doc_finish(struct hy_doc *d, size_t i, enum hy_finish why)
{
    finish(d, i, why);
}

/* Marks segment i done: decodes its ids (special tokens such as the stop token dropped). */
static void finish(struct hy_doc *d, size_t i, enum hy_finish why)
{
    struct seg_job *j = &d->jobs[i];
    j->done = true;
    j->finish = why;
    d->n_done++;
    if (why == HY_FINISH_LENGTH)
        d->res->cut++;
    if (why != HY_FINISH_STOP && why != HY_FINISH_LENGTH)
        d->res->failed++; /* the original text stands in, unless some was already written */
    if (d->o->progress) {
        struct hy_doc_progress p = {d->n_done, d->n, d->res->tokens_in, d->res->tokens_out,
                                    hy_clock_now() - d->t0};
        d->o->progress(d->o->progress_ctx, &p);
    }
}

/* Reads what the engine produced for the running segments, without waiting; true when
 * something was read or finished. The engine admits requests in FIFO order, so only the
 * first unfinished ones (a window of twice its running limit) can have made progress. */
static bool poll_engine(struct hy_doc *d)
{
    bool progress = false;
    int window = 2 * hy_engine_get_params(d->e)->max_running + 8;
    for (size_t i = d->next_write; i < d->next_submit && window > 0; i++) {
        struct seg_job *j = &d->jobs[i];
        if (!j->submitted || j->done)
            continue;
        window--;
        if (j->ens && !j->fusing) { /* an ensemble's candidates, not yet fused */
            progress |= doc_ens_poll(d, i);
            continue;
        }
        struct hy_engine_status st;
        int k = hy_engine_read(j->eng, j->h, j->ids + j->n_ids, j->max_new - j->n_ids, 0, &st);
        if (k < 0) {
            finish(d, i, HY_FINISH_ERROR);
            progress = true;
            continue;
        }
        j->n_ids += k;
        d->res->tokens_out += k;
        progress |= k > 0;
        if (st.done && st.n_generated == j->n_ids) {
            hy_engine_release(j->eng, j->h);
            finish(d, i, st.finish);
            progress = true;
        }
    }
    return progress;
}

static hy_status put(struct hy_doc *d, const char *s, size_t n, struct hy_err *err)
{
    return n ? d->o->write(d->o->write_ctx, s, n, err) : HY_OK;
}

/* Appends written translation text to the front segment's copy for the memory. */
static hy_status keep(struct hy_doc *d, const char *s, size_t n, struct hy_err *err)
{
    if (n == 0)
        return HY_OK; /* s may be NULL then (no whitespace held yet) */
    if (d->n_out + n > d->cap_out) {
        size_t cap = 2 * (d->n_out + n) + 256;
        char *p = realloc(d->out, cap);
        if (!p)
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        d->out = p;
        d->cap_out = cap;
    }
    memcpy(d->out + d->n_out, s, n);
    d->n_out += n;
    return HY_OK;
}

/* Writes text of segment i, the front of the output, as it is generated, with the effect
 * of trimming the whole translation: leading whitespace is dropped, the original
 * separator goes out just before the first visible character, and whitespace is held back
 * until something visible follows it (trailing whitespace is never written). */
static hy_status emit(struct hy_doc *d, size_t i, const char *s, size_t n, struct hy_err *err)
{
    struct seg_job *j = &d->jobs[i];
    const struct hy_seg *g = &d->segs[i];
    const unsigned char *p = (const unsigned char *)s;
    hy_status st = HY_OK;
    for (size_t a = 0; a < n && !st;) {
        int l;
        uint32_t c = text_decode(p + a, n - a, &l);
        if (text_is_space(c)) {
            if (j->started && d->n_ws + (size_t)l > d->cap_ws) {
                size_t cap = 2 * d->cap_ws + 64;
                char *w = realloc(d->ws, cap);
                if (!w)
                    return hy_err_set(err, HY_E_NOMEM, "out of memory");
                d->ws = w;
                d->cap_ws = cap;
            }
            if (j->started && d->o->keep_lines && text_is_newline(c)) {
                /* one line out per line in: a run of line breaks becomes one space */
                if (d->n_ws == 0 || d->ws[d->n_ws - 1] != ' ')
                    d->ws[d->n_ws++] = ' ';
            } else if (j->started) {
                memcpy(d->ws + d->n_ws, p + a, (size_t)l);
                d->n_ws += (size_t)l;
            }
            a += (size_t)l;
            continue;
        }
        size_t b = a;
        while (b < n && !text_is_space(text_decode(p + b, n - b, &l)))
            b += (size_t)l;
        if (!j->started) {
            st = put(d, d->text + g->sep_off, g->sep_len, err);
            j->started = true;
        }
        if (!st)
            st = put(d, d->ws, d->n_ws, err);
        if (!st && d->o->tm)
            st = keep(d, d->ws, d->n_ws, err);
        d->n_ws = 0;
        if (!st)
            st = put(d, s + a, b - a, err);
        if (!st && d->o->tm)
            st = keep(d, s + a, b - a, err);
        a = b;
    }
    return st;
}

/* Feeds the front segment's new ids through its detokenizer and writes the text. */
static hy_status stream_front(struct hy_doc *d, struct hy_err *err)
{
    struct seg_job *j = &d->jobs[d->next_write];
    char buf[HY_DETOK_MAX_OUT];
    hy_status st = HY_OK;
    while (!st && j->ids && j->n_fed < j->n_ids) {
        int k = hy_detok_push(&j->dt, j->ids[j->n_fed++], buf, sizeof buf);
        st = emit(d, d->next_write, buf, k > 0 ? (size_t)k : 0, err);
    }
    return st;
}

/* Streams the front segment and writes out every finished one, in order. A segment that
 * produced nothing visible, or failed before writing anything, keeps its original text. */
static hy_status flush(struct hy_doc *d, struct hy_err *err)
{
    while (d->next_write < d->n) {
        struct seg_job *j = &d->jobs[d->next_write];
        const struct hy_seg *g = &d->segs[d->next_write];
        bool ok = j->finish == HY_FINISH_STOP || j->finish == HY_FINISH_LENGTH;
        hy_status st = ok || !j->done ? stream_front(d, err) : HY_OK;
        if (st || !j->done)
            return st;
        if (ok && j->ids) {
            char buf[64];
            int k = hy_detok_flush(&j->dt, buf, sizeof buf);
            st = emit(d, d->next_write, buf, k > 0 ? (size_t)k : 0, err);
        }
        if (!st && ok && j->tm_text)
            st = emit(d, d->next_write, j->tm_text, j->tm_len, err);
        if (!st && j->ens)
            st = doc_ens_flush(d, d->next_write, err);
        if (!st && d->o->tm && j->finish == HY_FINISH_STOP && !j->tm_text && j->started) {
            struct hy_tm_key k = tm_key(d, d->next_write);
            bool stored = hy_tm_put(d->o->tm, &k, d->out, d->n_out, NULL) == HY_OK;
            d->res->tm_stored += stored;
            d->res->tm_errors += !stored;
        }
        d->n_out = 0;
        if (!st && !j->started) {
            st = put(d, d->text + g->sep_off, g->sep_len, err);
            if (!st)
                st = put(d, d->text + g->off, g->len, err);
        }
        free(j->ids);
        j->ids = NULL;
        d->n_ws = 0; /* trailing whitespace of the translation is dropped */
        d->next_write++;
        if (st)
            return st;
    }
    return HY_OK;
}

/* Queues segments while the engine takes them: true when one was queued (or failed for
 * good); *full when the queue refused one. */
static bool submit_more(struct hy_doc *d, bool *full, struct hy_err *err)
{
    bool progress = false;
    *full = false;
    while (d->next_submit < d->n) {
        hy_status st = submit(d, d->next_submit, err);
        if (st == HY_E_NOSPACE) {
            *full = true;
            break;
        }
        if (st)
            finish(d, d->next_submit, HY_FINISH_ERROR); /* keeps the original text */
        d->next_submit++;
        progress = true;
    }
    return progress;
}

/* True when a segment of the document is in the engine (a notification will come). */
static bool in_flight(const struct hy_doc *d)
{
    for (size_t i = d->next_write; i < d->next_submit; i++)
        if (d->jobs[i].submitted && !d->jobs[i].done && !doc_ens_waiting(d, i))
            return true;
    return false;
}

hy_status hy_doc_pump(struct hy_doc *d, bool *done, bool *starved, struct hy_err *err)
{
    *done = *starved = false;
    if (d->finished)
        return *done = true, HY_OK;
    bool progress = true, full = false;
    while (progress && d->next_write < d->n) {
        struct hy_err e2 = {{0}};
        progress = submit_more(d, &full, &e2);
        d->fuse_waiting = false; /* set again by an ensemble whose fusion still waits */
        progress |= poll_engine(d);
        size_t before = d->next_write;
        hy_status st = flush(d, err);
        if (st)
            return st;
        progress |= d->next_write != before;
    }
    if (d->next_write < d->n) {
        *starved = (full || d->fuse_waiting) && !in_flight(d);
        return HY_OK;
    }
    d->finished = true;
    *done = true;
    return d->o->write(d->o->write_ctx, d->text + d->trail, d->len - d->trail, err);
}

void hy_doc_end(struct hy_doc *d)
{
    if (!d)
        return;
    for (size_t i = 0; d->jobs && i < d->n; i++) {
        if (d->jobs[i].ens)
            doc_ens_end(d, i); /* its candidates or its fusion, and their memory */
        else if (d->jobs[i].submitted && !d->jobs[i].done)
            hy_engine_release(d->jobs[i].eng, d->jobs[i].h); /* cancels it */
        free(d->jobs[i].ids);
        free(d->jobs[i].tm_settings);
        free(d->jobs[i].tm_text);
    }
    if (d->res)
        d->res->elapsed_s = hy_clock_now() - d->t0;
    free(d->jobs);
    free(d->segs);
    free(d->prompt);
    free(d->fuse_prompt);
    free(d->count_buf);
    free(d->ctx);
    free(d->ws);
    free(d->out);
    free(d);
}

/* The document's prompt kind, and the checks that refuse it before anything runs: the
 * languages, terms or context without such prompts, a bad or misplaced instruction.
 * HY_E_INVAL, never HY_E_UNSUPPORTED (that means cancelled here). */
static hy_status begin_prompt(struct hy_doc *d, struct hy_err *err)
{
    const struct hy_doc_opts *o = d->o;
    hy_status st = HY_OK;
    if (o->prompt)
        d->kind = *o->prompt;
    else if (!(st = hy_prompt_style_detect(d->tok, &d->kind.chat, err)))
        d->kind.gen = hy_prompt_gen_of_style(d->kind.chat);
    if (!st)
        st = hy_prompt_check_langs(d->kind.gen, d->src, o->tgt, err);
    bool ext = o->glossary || o->context_len || o->context_segs > 0;
    if (!st && ext && !hy_prompt_ext_supported(d->kind.gen))
        st = hy_err_set(err, HY_E_INVAL, "a glossary or context needs a HY-MT1.5 or Hy-MT2 "
                        "model; this one takes %s prompts, which have no such form",
                        hy_prompt_gen_title(d->kind.gen));
    if (!st && ext && hy_prompt_instr_any(o->instr))
        st = hy_err_set(err, HY_E_INVAL, "a style, preferences, delimiters or data format "
                        "cannot go with a glossary or context: Hy-MT2 publishes no combined "
                        "prompt");
    if (!st && (st = hy_prompt_instr_check(d->kind.gen, o->instr, err)) == HY_E_UNSUPPORTED)
        st = HY_E_INVAL;
    return st;
}

hy_status hy_doc_begin(struct hy_doc **out, struct hy_engine *e, const struct hy_tok *tok,
                       const char *text, size_t len, const struct hy_doc_opts *o,
                       struct hy_doc_result *res, struct hy_err *err)
{
    *out = NULL;
    memset(res, 0, sizeof *res);
    if (!o->tgt || !o->write)
        return hy_err_set(err, HY_E_INVAL, "a target language and an output are required");
    size_t bad = hy_utf8_validate(text, len);
    if (bad < len)
        return hy_err_set(err, HY_E_INVAL, "the text is not valid UTF-8 (byte %zu)", bad);
    struct hy_doc *d = calloc(1, sizeof *d);
    if (!d)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    *d = (struct hy_doc){.e = e, .tok = tok, .o = o, .text = text, .len = len, .res = res,
                         .t0 = hy_clock_now()};
    d->src = o->src ? o->src : hy_lang_detect(text, len);
    res->src = d->src;
    hy_status st = begin_prompt(d, err);
    bool ext = o->glossary || o->context_len || o->context_segs > 0;
    if (!st && o->context_len && hy_utf8_validate(o->context, o->context_len) < o->context_len)
        st = hy_err_set(err, HY_E_INVAL, "the context is not valid UTF-8");
    if (!st && o->ensemble)
        st = doc_ens_check(d, err);
    if (!st) {
        d->n_stop = (int)hy_prompt_stop_ids(tok, d->kind.chat, d->stop, HY_ENGINE_MAX_STOP);
        d->prompt = malloc((size_t)hy_engine_get_params(e)->max_seq_tokens * sizeof *d->prompt);
        d->count_buf = malloc((len + 1) * sizeof *d->count_buf);
        if (ext)
            d->ctx = malloc(o->context_len + 1 + len);
        if (!d->prompt || !d->count_buf || (ext && !d->ctx))
            st = hy_err_set(err, HY_E_NOMEM, "out of memory for a %zu-byte document", len);
    }
    if (!st)
        st = split(d, err);
    bool full = false;
    if (!st && d->n > 0 && !submit_more(d, &full, err) && full)
        st = hy_err_set(err, HY_E_NOSPACE, "the engine's queue is full");
    if (st) {
        hy_doc_end(d);
        return st;
    }
    *out = d;
    return HY_OK;
}

/* hy_doc_translate's wait: the segments' notify hook signals it. */
struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool news;
};

static void wake(void *ctx)
{
    struct waiter *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->news = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Sleeps until a notification (or, starved, for DOC_STARVED_S: nothing will notify). */
static void wait_news(struct waiter *w, bool starved)
{
    pthread_mutex_lock(&w->mu);
    if (starved && !w->news) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(DOC_STARVED_S * 1e9);
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    while (!starved && !w->news)
        pthread_cond_wait(&w->cv, &w->mu);
    w->news = false;
    pthread_mutex_unlock(&w->mu);
}

hy_status hy_doc_translate(struct hy_engine *e, const struct hy_tok *tok, const char *text,
                           size_t len, const struct hy_doc_opts *o, struct hy_doc_result *res,
                           struct hy_err *err)
{
    struct waiter w = {.news = false};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    struct hy_doc_opts o2 = *o;
    o2.notify = wake;
    o2.notify_ctx = &w;
    struct hy_doc *d = NULL;
    hy_status st = hy_doc_begin(&d, e, tok, text, len, &o2, res, err);
    bool starved = st == HY_E_NOSPACE, done = false;
    if (starved) /* others' requests fill the queue: keep trying, as the first pump does */
        st = HY_OK;
    while (!st && !done) {
        if (d) {
            st = hy_doc_pump(d, &done, &starved, err);
            if (st || done)
                break;
        }
        if (o->cancelled && o->cancelled(o->cancel_ctx)) {
            res->cancelled = true; /* hy_doc_end cancels and releases what is in flight */
            st = hy_err_set(err, HY_DOC_CANCELLED, "translation cancelled");
            break;
        }
        wait_news(&w, starved);
        if (!d) {
            st = hy_doc_begin(&d, e, tok, text, len, &o2, res, err);
            starved = st == HY_E_NOSPACE;
            if (starved)
                st = HY_OK;
        }
    }
    hy_doc_end(d); /* no notification comes after this: the segments are released */
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    return st;
}
