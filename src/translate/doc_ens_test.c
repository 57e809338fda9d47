/* doc_ens_test.c: the Chimera ensemble of a document (hy_doc_opts.ensemble) on tiny-mqa,
 * with tiny-mqa loaded a second time as the "Chimera" model (every weight shared, its own
 * backend and engine). Each segment's k candidates are sampled (the recommended settings,
 * seeds seed+1..seed+k) and handed to the candidates hook; the fusion is greedy here, so
 * the output is checked against an independent reference: for each segment, the Chimera
 * prompt of the candidates the hook reported (prompt_chimera.h), decoded greedily alone
 * through a hy_ctx, joined with the original separators. Then: the same seed gives the same
 * candidates and output, another seed other candidates; the progress hook reports k of k;
 * k out of 2..6, no Chimera engine, a source language neither given nor detected:
 * HY_E_INVAL. */
#include "backend/cpu/cpu.h"
#include "test.h"
#include "logits_util.h"
#include "translate/doc.h"
#include "translate/prompt_chimera.h"
#include "translate/segment.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SEQ 512   /* the translation engine's */
#define CMAX_SEQ 1024 /* Chimera's: a prompt with three candidates */
#define MAX_NEW 24

static struct hy_model *model, *chimera;
static struct hy_tok *tok;

static const char text[] = "The weather is nice today. We should go to the park!\n\n"
                           "A second paragraph, short.\n";

struct run {
    char out[1 << 15];
    size_t n;
    char cands[8][HY_DOC_MAX_ENSEMBLE][2048]; /* [segment][candidate] */
    size_t cand_len[8][HY_DOC_MAX_ENSEMBLE];
    int n_cand_calls, full_progress;
};

static hy_status sink(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    struct run *r = ctx;
    if (r->n + n > sizeof r->out)
        return hy_err_set(err, HY_E_NOSPACE, "test buffer full");
    memcpy(r->out + r->n, s, n);
    r->n += n;
    return HY_OK;
}

static hy_status on_cands(void *ctx, const struct hy_doc_cands *c, struct hy_err *err)
{
    struct run *r = ctx;
    (void)err;
    CHECK(c->segment < 8 && c->k == 3 && (int)c->segment == r->n_cand_calls);
    for (int k = 0; k < c->k && c->segment < 8; k++) {
        CHECK(c->len[k] < 2048);
        memcpy(r->cands[c->segment][k], c->text[k], c->len[k]);
        r->cand_len[c->segment][k] = c->len[k];
    }
    r->n_cand_calls++;
    return HY_OK;
}

static void on_progress(void *ctx, const struct hy_doc_cand_progress *p)
{
    struct run *r = ctx;
    CHECK(p->k == 3 && p->done >= 0 && p->done <= 3);
    r->full_progress += p->done == p->k;
}

static size_t count(const char *s, size_t n)
{
    static int32_t ids[65536];
    size_t got = 0;
    hy_tok_encode(tok, s, n, false, ids, 65536, &got, NULL);
    return got;
}

static size_t count_cb(void *ctx, const char *s, size_t n)
{
    (void)ctx;
    return count(s, n);
}

/* The document as the fusion of the candidates r reported, built without the engine. */
static size_t reference(struct run *r, const struct hy_lang *src, const struct hy_lang *tgt,
                        char *out, size_t cap)
{
    struct hy_err err = {{0}};
    int32_t stop[8];
    int n_stop = (int)hy_prompt_stop_ids(tok, HY_PROMPT_7B, stop, 8);
    struct hy_seg segs[8];
    size_t n = 0, trail = 0, written = 0;
    struct hy_seg_opts so = {256, count_cb, NULL, false};
    CHECK(hy_seg_split(text, sizeof text - 1, &so, segs, 8, &n, &trail, &err) == HY_OK);
    CHECKF(n >= 2 && r->n_cand_calls == (int)n, "%zu segments, %d candidate calls", n,
           r->n_cand_calls);
    char *outs[8] = {0};
    size_t lens[8];
    for (size_t i = 0; i < n && i < 8; i++) {
        static int32_t prompt[CMAX_SEQ], gen[CMAX_SEQ];
        size_t np = 0;
        const struct hy_prompt_kind k7 = {HY_PROMPT_7B, HY_PROMPT_GEN_MT1};
        CHECK(hy_prompt_translate(tok, &k7, src, tgt, text + segs[i].off, segs[i].len, prompt,
                                  MAX_SEQ, &np, &err) == HY_OK);
        int max_new = MAX_NEW < MAX_SEQ - (int)np ? MAX_NEW : MAX_SEQ - (int)np;
        struct hy_chimera_cand c[3];
        for (int k = 0; k < 3; k++)
            c[k] = (struct hy_chimera_cand){r->cands[i][k], r->cand_len[i][k]};
        CHECK(hy_prompt_chimera(tok, HY_PROMPT_7B, src, tgt, text + segs[i].off, segs[i].len, c,
                                3, prompt, CMAX_SEQ - 1, &np, &err) == HY_OK);
        max_new = max_new < CMAX_SEQ - (int)np ? max_new : CMAX_SEQ - (int)np;
        int k = tu_greedy(chimera, prompt, (int)np, max_new, stop, n_stop, gen);
        outs[i] = malloc(64 * (size_t)k + 64);
        CHECK(hy_tok_decode(tok, gen, (size_t)k, true, outs[i], 64 * (size_t)k + 64, &lens[i],
                            &err) == HY_OK);
    }
    CHECK(hy_seg_join(text, sizeof text - 1, segs, n, trail, (const char *const *)outs, lens,
                      out, cap, &written, &err) == HY_OK);
    for (size_t i = 0; i < n && i < 8; i++)
        free(outs[i]);
    return written;
}

static hy_status run_doc(struct hy_engine *e, struct hy_engine *ce, int k, uint64_t seed,
                         const char *src, struct run *r, struct hy_doc_result *res,
                         struct hy_err *err)
{
    struct hy_doc_opts o = {.src = src ? hy_lang_find(src) : NULL, .tgt = hy_lang_find("de"),
                            .write = sink, .write_ctx = r, .ensemble = k, .chimera = ce,
                            .chimera_tok = tok, .candidates = on_cands, .candidates_ctx = r,
                            .cand_progress = on_progress, .cand_progress_ctx = r};
    o.sampling = (struct hy_sampler_params){0, 0, 1, 1, seed}; /* a greedy fusion */
    o.max_new_tokens = MAX_NEW;
    memset(r, 0, sizeof *r);
    return hy_doc_translate(e, tok, text, sizeof text - 1, &o, res, err);
}

int main(void)
{
    char dir[4096];
    struct hy_err err = {{0}};
    struct hy_backend *be = NULL, *be2 = NULL;
    struct hy_engine *e = NULL, *ce = NULL;
    test_path(dir, sizeof dir, "HYMT_SRC", "tests/data/tiny-mqa");
    CHECK(hy_cpu_backend_create(&be, 1, &err) == HY_OK);
    CHECK(hy_cpu_backend_create(&be2, 1, &err) == HY_OK);
    struct hy_model_opts mo = {0};
    CHECKF(hy_model_load(&model, dir, be, &err) == HY_OK, "%s", err.msg);
    mo.share_from = model;
    CHECKF(model && hy_model_load_opts(&chimera, dir, be2, &mo, &err) == HY_OK, "%s", err.msg);
    CHECKF(hy_tok_load(&tok, dir, &err) == HY_OK, "%s", err.msg);
    struct hy_engine_params p = hy_engine_params_default();
    p.max_running = 4;
    p.max_seq_tokens = MAX_SEQ;
    p.kv_bytes = 4 << 20;
    struct hy_engine_params pc = p;
    pc.max_seq_tokens = CMAX_SEQ;
    CHECKF(chimera && tok && hy_engine_create(&e, model, &p, &err) == HY_OK &&
               hy_engine_create(&ce, chimera, &pc, &err) == HY_OK, "%s", err.msg);
    CHECK(chimera && chimera->n_shared == chimera->n_slots);
    if (e && ce) {
        static struct run a, b, c;
        static char want[1 << 15];
        struct hy_doc_result ra, rb, rc;
        CHECKF(run_doc(e, ce, 3, 7, "en", &a, &ra, &err) == HY_OK, "%s", err.msg);
        CHECKF(ra.segments >= 2 && ra.fused == ra.segments && ra.fuse_fallback == 0 &&
                   ra.failed == 0, "%zu segments, %zu fused, %zu fallbacks", ra.segments,
               ra.fused, ra.fuse_fallback);
        CHECK(a.full_progress >= (int)ra.segments);
        bool differ = false; /* the k candidates are k samples */
        for (size_t s = 0; s < ra.segments && s < 8; s++)
            differ |= a.cand_len[s][0] != a.cand_len[s][1] ||
                      memcmp(a.cands[s][0], a.cands[s][1], a.cand_len[s][0]) != 0;
        CHECK(differ);
        size_t nw = reference(&a, hy_lang_find("en"), hy_lang_find("de"), want, sizeof want);
        CHECKF(a.n == nw && !memcmp(a.out, want, nw), "output differs from the fusion of the "
               "reported candidates (%zu vs %zu bytes)", a.n, nw);
        /* the same seed: the same answer; another seed: other candidates */
        CHECK(run_doc(e, ce, 3, 7, "en", &b, &rb, &err) == HY_OK);
        CHECK(b.n == a.n && !memcmp(a.out, b.out, a.n) && !memcmp(a.cands, b.cands, sizeof a.cands));
        CHECK(run_doc(e, ce, 3, 8, "en", &c, &rc, &err) == HY_OK);
        CHECK(memcmp(a.cands, c.cands, sizeof a.cands) != 0);
        fprintf(stderr, "ensemble of 3: %zu segments fused, %lld tokens in, %lld out\n", ra.fused,
                (long long)ra.tokens_in, (long long)ra.tokens_out);
        /* a fusion prompt longer than Chimera's limit: the first candidate answers */
        struct hy_engine *small = NULL;
        struct hy_engine_params ps = p;
        ps.max_seq_tokens = 64;
        CHECK(hy_engine_create(&small, chimera, &ps, &err) == HY_OK);
        CHECK(small && run_doc(e, small, 3, 7, "en", &c, &rc, &err) == HY_OK);
        CHECKF(rc.fused == 0 && rc.fuse_fallback == rc.segments && rc.failed == 0,
               "%zu fused, %zu fallbacks", rc.fused, rc.fuse_fallback);
        hy_engine_destroy(small);
        /* refusals, before anything runs */
        CHECK(run_doc(e, ce, 1, 7, "en", &b, &rb, &err) == HY_E_INVAL && strstr(err.msg, "2 to 6"));
        CHECK(run_doc(e, ce, 7, 7, "en", &b, &rb, &err) == HY_E_INVAL);
        CHECK(run_doc(e, NULL, 3, 7, "en", &b, &rb, &err) == HY_E_INVAL &&
              strstr(err.msg, "--chimera"));
        /* a source the text does not show (digits only): refused, the prompt names it */
        struct hy_doc_opts od = {.tgt = hy_lang_find("de"), .write = sink, .write_ctx = &b,
                                 .ensemble = 3, .chimera = ce, .chimera_tok = tok};
        CHECK(hy_lang_detect("2026-12-01 10:00", 16) == NULL);
        CHECK(hy_doc_translate(e, tok, "2026-12-01 10:00", 16, &od, &rb, &err) == HY_E_INVAL &&
              strstr(err.msg, "source language"));
        struct hy_engine_stats s1, s2;
        hy_engine_stats(e, &s1);
        hy_engine_stats(ce, &s2);
        CHECK(s1.slots_in_use == 0 && s2.slots_in_use == 0);
    }
    hy_engine_destroy(ce);
    hy_engine_destroy(e);
    hy_tok_destroy(tok);
    hy_model_destroy(chimera);
    hy_model_destroy(model);
    be->i->destroy(be);
    be2->i->destroy(be2);
    return test_result();
}
