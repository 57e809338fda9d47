/* doc_test.c: document translation mechanics on the tiny checkpoint with greedy decoding.
 * The expected output is built independently: segment the text, build each segment's
 * prompt, decode it greedily alone through a hy_ctx, decode the ids, and join with the
 * original separators (hy_seg_join). hy_doc_translate, which batches every segment through
 * the engine, must write exactly that: same segments, same order, same whitespace. */
#include "backend/cpu/cpu.h"
#include "test.h"
#include "logits_util.h"
#include "translate/doc.h"
#include "translate/prompt.h"
#include "translate/segment.h"

#include <stdlib.h>
#include <string.h>

static struct hy_backend *be;
static struct hy_model *model;
static struct hy_tok *tok;

struct buf {
    char *p;
    size_t n, cap;
    int calls;
};

static hy_status sink(void *ctx, const char *s, size_t n, struct hy_err *err)
{
    struct buf *b = ctx;
    if (b->n + n > b->cap)
        return hy_err_set(err, HY_E_NOSPACE, "test buffer full");
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->calls++;
    return HY_OK;
}

static size_t count(void *ctx, const char *s, size_t n)
{
    static int32_t ids[65536];
    size_t got = 0;
    (void)ctx;
    hy_tok_encode(tok, s, n, false, ids, 65536, &got, NULL);
    return got;
}

static const char doc_text[] =
    "  The first paragraph has two sentences. It ends here!\n"
    "\n"
    "\n"
    "今天天气很好。我们去公园吧！\r\n"
    "Zweiter Absatz, mit Umlauten: äöü. Noch ein Satz?\n"
    "\t- a list item\n"
    "- another one, which is long enough to be cut into pieces when the limit is small\n"
    "\n"
    "Последний абзац.   \n\n";

/* What hy_doc_translate must write, built segment by segment without the engine. */
static size_t expected(const char *text, size_t len, const struct hy_doc_opts *o, char *out,
                       size_t cap, size_t *n_segs)
{
    struct hy_prompt_kind kind;
    struct hy_err err = {{0}};
    CHECK(hy_prompt_style_detect(tok, &kind.chat, &err) == HY_OK);
    kind.gen = hy_prompt_gen_of_style(kind.chat);
    int32_t stop[8];
    int n_stop = (int)hy_prompt_stop_ids(tok, kind.chat, stop, 8);
    struct hy_seg segs[64];
    size_t n = 0, trail = 0, written = 0;
    struct hy_seg_opts so = {(size_t)o->max_seg_tokens, count, NULL, o->keep_lines};
    CHECK(hy_seg_split(text, len, &so, segs, 64, &n, &trail, &err) == HY_OK);
    char *outs[64];
    size_t lens[64];
    const struct hy_lang *src = o->src ? o->src : hy_lang_detect(text, len);
    for (size_t i = 0; i < n; i++) {
        int32_t prompt[1024], gen[1024];
        size_t np = 0;
        CHECK(hy_prompt_translate(tok, &kind, src, o->tgt, text + segs[i].off, segs[i].len, prompt,
                                  1024, &np, &err) == HY_OK);
        int max_new = 2 * (int)count(NULL, text + segs[i].off, segs[i].len) + 64;
        max_new = max_new < 512 - (int)np ? max_new : 512 - (int)np;
        int k = tu_greedy(model, prompt, (int)np, max_new, stop, n_stop, gen);
        outs[i] = malloc(64 * (size_t)k + 64);
        CHECKF(hy_tok_decode(tok, gen, (size_t)k, true, outs[i], 64 * (size_t)k + 64, &lens[i],
                            &err) == HY_OK, "%s", err.msg);
        bool blank = true;
        for (size_t b = 0; b < lens[i]; b++)
            blank &= outs[i][b] == ' ' || outs[i][b] == '\n' || outs[i][b] == '\t';
        CHECKF(!blank, "segment %zu translated to whitespace only: pick another input", i);
    }
    CHECK(hy_seg_join(text, len, segs, n, trail, (const char *const *)outs, lens, out, cap,
                      &written, &err) == HY_OK);
    for (size_t i = 0; i < n; i++)
        free(outs[i]);
    *n_segs = n;
    return written;
}

static void check_doc(struct hy_engine *e, const char *tgt, const char *src, int max_seg,
                      bool keep_lines)
{
    struct hy_doc_opts o = {.src = src ? hy_lang_find(src) : NULL, .tgt = hy_lang_find(tgt),
                            .max_seg_tokens = max_seg, .keep_lines = keep_lines, .write = sink};
    o.sampling = (struct hy_sampler_params){0, 0, 1, 1, 0}; /* greedy, no penalty */
    static char want[1 << 16], got_buf[1 << 16];
    struct buf got = {got_buf, 0, sizeof got_buf, 0};
    o.write_ctx = &got;
    size_t n_segs = 0, len = sizeof doc_text - 1;
    size_t n_want = expected(doc_text, len, &o, want, sizeof want, &n_segs);
    struct hy_doc_result r;
    struct hy_err err = {{0}};
    CHECKF(hy_doc_translate(e, tok, doc_text, len, &o, &r, &err) == HY_OK, "%s", err.msg);
    CHECKF(r.segments == n_segs && r.failed == 0, "%zu segments (want %zu), %zu failed",
           r.segments, n_segs, r.failed);
    if (getenv("DOC_TEST_DUMP") && (got.n != n_want || memcmp(got.p, want, n_want))) {
        FILE *f1 = fopen("/tmp/doc_got.txt", "wb"), *f2 = fopen("/tmp/doc_want.txt", "wb");
        fwrite(got.p, 1, got.n, f1);
        fwrite(want, 1, n_want, f2);
        fclose(f1);
        fclose(f2);
    }
    CHECKF(got.n == n_want && memcmp(got.p, want, n_want) == 0,
           "to %s, max_seg %d: output differs (%zu vs %zu bytes)", tgt, max_seg, got.n, n_want);
    CHECK(r.tokens_out > 0 && r.tokens_in > 0);
    /* streamed: the front segment's text goes out as its tokens arrive, not in one write */
    CHECKF(got.calls > 2 * (int)r.segments + 1, "%d writes for %zu segments", got.calls,
           r.segments);
    fprintf(stderr, "to %s from %s, max_seg %d: %zu segments, %lld tokens out, %d writes\n", tgt,
            r.src ? r.src->code : "?", max_seg, r.segments, (long long)r.tokens_out, got.calls);
}

int main(void)
{
    char dir[4096];
    struct hy_err err = {{0}};
    struct hy_engine *e = NULL;
    test_path(dir, sizeof dir, "HYMT_SRC", "tests/data/tiny-mqa");
    CHECK(hy_cpu_backend_create(&be, 2, &err) == HY_OK);
    CHECKF(hy_model_load(&model, dir, be, &err) == HY_OK, "%s", err.msg);
    CHECKF(hy_tok_load(&tok, dir, &err) == HY_OK, "%s", err.msg);
    struct hy_engine_params p = hy_engine_params_default();
    p.max_running = 3; /* fewer than the segments: the rest wait in the queue */
    p.max_queue = 4;   /* ... and some wait for room in it */
    p.max_seq_tokens = 512;
    p.kv_bytes = 4 << 20;
    CHECKF(model && tok && hy_engine_create(&e, model, &p, &err) == HY_OK, "%s", err.msg);
    if (e) {
        check_doc(e, "en", "zh", 24, false);
        check_doc(e, "zh", NULL, 16, true);
        check_doc(e, "de", "en", 256, false);
        /* invalid UTF-8 is refused, naming the byte */
        struct hy_doc_opts o = {.tgt = hy_lang_find("en"), .write = sink};
        struct hy_doc_result r;
        CHECK(hy_doc_translate(e, tok, "ok \xff bad", 8, &o, &r, &err) == HY_E_INVAL);
        CHECKF(strstr(err.msg, "byte 3") != NULL, "%s", err.msg);
        struct hy_engine_stats s;
        hy_engine_stats(e, &s);
        CHECK(s.slots_in_use == 0);
    }
    hy_engine_destroy(e);
    hy_tok_destroy(tok);
    hy_model_destroy(model);
    be->i->destroy(be);
    return test_result();
}
