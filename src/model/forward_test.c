/* forward_test.c: properties of the forward pass that hold for any weights, on the
 * committed tiny checkpoints: the dump hook sees every named intermediate in order;
 * the fast CPU backend gives bit-identical logits for 1, 2 and 3 threads (each output row
 * is summed by one thread in a fixed order, so results must not depend on the split);
 * and decoding through the KV cache equals recomputing the whole sequence. */
#include "backend/cpu/cpu.h"
#include "model/hunyuan.h"
#include "test.h"

#include <math.h>
#include <string.h>

struct dump_log {
    int calls, layer_calls[8];
    char first[32], last[32];
};

static void on_dump(void *ctx, const char *name, int layer, const float *x, int64_t rows,
                    int64_t cols)
{
    struct dump_log *d = ctx;
    if (!d->calls)
        snprintf(d->first, sizeof d->first, "%s", name);
    snprintf(d->last, sizeof d->last, "%s", name);
    d->calls++;
    if (layer >= 0 && layer < 8)
        d->layer_calls[layer]++;
    CHECK(rows >= 1 && cols >= 1 && x != NULL);
}

static int load(const char *name, int threads, struct hy_backend **be, struct hy_model **m)
{
    char dir[4096];
    struct hy_err err = {{0}};
    test_path(dir, sizeof dir, "HYMT_SRC", name);
    hy_status s = threads ? hy_cpu_backend_create(be, threads, &err)
                          : hy_cpu_backend_create_ref(be, &err);
    if (!s)
        s = hy_model_load(m, dir, *be, &err);
    CHECKF(s == HY_OK, "%s", err.msg);
    return s == HY_OK ? 0 : -1;
}

static const int32_t ids[9] = {305, 3, 77, 250, 12, 319, 8, 8, 130}; /* < every vocab */

static void check_dump(void)
{
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    struct hy_ctx *c = NULL;
    struct hy_err err = {{0}};
    if (!load("tests/data/tiny-mqa", 1, &be, &m))
        CHECK(hy_ctx_create(&c, m, 16, 9, &err) == HY_OK);
    if (c) {
        struct dump_log d = {0};
        c->dump = on_dump;
        c->dump_ctx = &d;
        float logits[512];
        CHECK(hy_model_forward(c, ids, 9, false, logits, &err) == HY_OK);
        CHECK(!strcmp(d.first, "embd") && !strcmp(d.last, "out_norm"));
        for (int l = 0; l < m->cfg.num_hidden_layers; l++)
            CHECKF(d.layer_calls[l] == 8, "layer %d: %d dumps", l, d.layer_calls[l]);
    }
    hy_ctx_destroy(c);
    hy_model_destroy(m);
    if (be)
        be->i->destroy(be);
}

/* all-position logits of the 9 ids with `threads` threads (0 = reference backend) */
static void run(const char *model, int threads, float *out, int64_t *vocab)
{
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    struct hy_ctx *c = NULL;
    struct hy_err err = {{0}};
    if (!load(model, threads, &be, &m) && hy_ctx_create(&c, m, 16, 9, &err) == HY_OK) {
        *vocab = m->cfg.vocab_size;
        CHECK(hy_model_forward(c, ids, 9, true, out, &err) == HY_OK);
    }
    hy_ctx_destroy(c);
    hy_model_destroy(m);
    if (be)
        be->i->destroy(be);
}

static void check_threads(const char *model)
{
    static float a[9 * 512], b[9 * 512], r[9 * 512];
    int64_t V = 0;
    run(model, 1, a, &V);
    for (int t = 2; t <= 3; t++) {
        run(model, t, b, &V);
        CHECKF(memcmp(a, b, (size_t)(9 * V) * sizeof(float)) == 0, "%s: %d threads differ",
               model, t);
    }
    /* fast vs reference: float32 sums in another order, so close, not equal */
    run(model, 0, r, &V);
    double num = 0, den = 0;
    for (int64_t i = 0; i < 9 * V; i++) {
        num = fmax(num, fabs((double)a[i] - r[i]));
        den = fmax(den, fabs((double)r[i]));
    }
    CHECKF(den > 0 && num <= 1e-5 * den, "%s: fast vs reference %.3g of %.3g", model, num, den);
}

/* decode through the cache == whole-sequence recompute, at every step */
static void check_cache(void)
{
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    struct hy_ctx *inc = NULL, *full = NULL;
    struct hy_err err = {{0}};
    if (!load("tests/data/tiny-gqa2-untied", 2, &be, &m)) {
        CHECK(hy_ctx_create(&inc, m, 16, 9, &err) == HY_OK);
        CHECK(hy_ctx_create(&full, m, 16, 9, &err) == HY_OK);
    }
    for (int n = 1; inc && full && n <= 9; n++) {
        static float li[384], lf[384];
        CHECK(hy_model_forward(inc, &ids[n - 1], 1, false, li, &err) == HY_OK);
        hy_ctx_reset(full);
        CHECK(hy_model_forward(full, ids, n, false, lf, &err) == HY_OK);
        double num = 0, den = 0;
        for (int i = 0; i < 384; i++) {
            num = fmax(num, fabs((double)li[i] - lf[i]));
            den = fmax(den, fabs((double)lf[i]));
        }
        CHECKF(den > 0 && num <= 1e-5 * den, "step %d: cached vs recomputed %.3g", n, num);
    }
    hy_ctx_destroy(inc);
    hy_ctx_destroy(full);
    hy_model_destroy(m);
    if (be)
        be->i->destroy(be);
}

/* Three sequences batched in one kvstore with interleaved blocks (prefills of different
 * lengths in one step, then batched decode steps) give the logits each gives alone through
 * a hy_ctx, within 1e-5 of the largest logit: batching changes only summation order. */
static void check_batch(const char *model)
{
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    struct hy_kvstore *kv = NULL;
    struct hy_scratch *s = NULL;
    struct hy_err err = {{0}};
    if (load(model, 2, &be, &m))
        return;
    CHECK(hy_kvstore_create(&kv, m, 12, 4, &err) == HY_OK);
    CHECK(hy_scratch_create(&s, m, 24, 3, 24, &err) == HY_OK);
    const int64_t V = m->cfg.vocab_size;
    const int len[3] = {9, 3, 6};
    /* blocks of 4 tokens, interleaved: seq0 {0,3,6}, seq1 {1,4,7}, seq2 {2,5,8} */
    int32_t tables[3][4] = {{0, 3, 6, 9}, {1, 4, 7, 10}, {2, 5, 8, 11}};
    int32_t toks[3][12];
    for (int q = 0; q < 3; q++)
        for (int t = 0; t < 12; t++)
            toks[q][t] = ids[(t + 3 * q) % 9];
    float *got = malloc(3 * (size_t)V * sizeof(float)), *want = malloc((size_t)V * sizeof(float));
    struct hy_batch_seq b[3];
    for (int step = 0; kv && s && step < 4; step++) {
        for (int q = 0; q < 3; q++) {
            int pos0 = step ? len[q] + step - 1 : 0, n = step ? 1 : len[q];
            b[q] = (struct hy_batch_seq){toks[q] + pos0, n, pos0, tables[q], 1};
        }
        CHECKF(hy_model_forward_batch(m, kv, s, b, 3, got, &err) == HY_OK, "%s", err.msg);
        for (int q = 0; q < 3; q++) {
            struct hy_ctx *c = NULL;
            int n = len[q] + step;
            CHECK(hy_ctx_create(&c, m, 16, 16, &err) == HY_OK);
            CHECK(c && hy_model_forward(c, toks[q], n, false, want, &err) == HY_OK);
            double num = 0, den = 0;
            for (int64_t i = 0; i < V; i++) {
                num = fmax(num, fabs((double)got[q * V + i] - want[i]));
                den = fmax(den, fabs((double)want[i]));
            }
            CHECKF(den > 0 && num <= 1e-5 * den, "%s step %d seq %d: batched vs alone %.3g", model,
                   step, q, num / den);
            hy_ctx_destroy(c);
        }
    }
    /* a step larger than the scratch is refused and changes nothing */
    struct hy_batch_seq big = {toks[0], 25, 0, tables[0], 1};
    CHECK(hy_model_forward_batch(m, kv, s, &big, 1, got, &err) == HY_E_RANGE);
    /* so is a step wanting more logit rows than the scratch holds */
    struct hy_scratch *s2 = NULL;
    CHECK(hy_scratch_create(&s2, m, 24, 3, 2, &err) == HY_OK);
    struct hy_batch_seq three[3] = {{toks[0], 1, 0, tables[0], 1}, {toks[1], 1, 0, tables[1], 1},
                                    {toks[2], 1, 0, tables[2], 1}};
    CHECK(s2 && hy_model_forward_batch(m, kv, s2, three, 3, got, &err) == HY_E_RANGE);
    CHECK(s2 && hy_model_forward_batch(m, kv, s2, three, 2, got, &err) == HY_OK);
    hy_scratch_destroy(s2, m);
    CHECK(hy_scratch_create(&s2, m, 24, 3, 25, &err) == HY_E_RANGE && !s2); /* > max_tokens */
    free(got);
    free(want);
    hy_scratch_destroy(s, m);
    hy_kvstore_destroy(kv);
    hy_model_destroy(m);
    be->i->destroy(be);
}

/* Prefix caching at the model level: sequence B reuses the first 16 positions' KV blocks
 * that sequence A computed (same 16 tokens) and computes only its own 4 tokens; its logits
 * equal B computed from scratch within 1e-5 of the largest logit (only the batch shapes
 * of the matmuls differ, hence the summation order). */
static void check_prefix_reuse(const char *model)
{
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    struct hy_kvstore *kv = NULL;
    struct hy_scratch *s = NULL;
    struct hy_err err = {{0}};
    if (load(model, 2, &be, &m))
        return;
    CHECK(hy_kvstore_create(&kv, m, 16, 4, &err) == HY_OK);
    CHECK(hy_scratch_create(&s, m, 24, 2, 24, &err) == HY_OK);
    const int64_t V = m->cfg.vocab_size;
    int32_t a[20], b[20];
    for (int i = 0; i < 20; i++) {
        a[i] = ids[i % 9] + i;
        b[i] = i < 16 ? a[i] : ids[(i * 5) % 9];
    }
    int32_t ta[5] = {0, 1, 2, 3, 4}, tb[5] = {0, 1, 2, 3, 9}, tf[5] = {10, 11, 12, 13, 14};
    float *la = malloc((size_t)V * sizeof(float)), *lb = malloc((size_t)V * sizeof(float));
    float *lf = malloc((size_t)V * sizeof(float));
    struct hy_batch_seq qa = {a, 20, 0, ta, 1}, qb = {b + 16, 4, 16, tb, 1}, qf = {b, 20, 0, tf, 1};
    CHECK(kv && s && hy_model_forward_batch(m, kv, s, &qa, 1, la, &err) == HY_OK);
    CHECK(kv && s && hy_model_forward_batch(m, kv, s, &qb, 1, lb, &err) == HY_OK); /* reuses */
    CHECK(kv && s && hy_model_forward_batch(m, kv, s, &qf, 1, lf, &err) == HY_OK); /* scratch */
    double num = 0, den = 0, diff_a = 0;
    for (int64_t i = 0; i < V; i++) {
        num = fmax(num, fabs((double)lb[i] - lf[i]));
        den = fmax(den, fabs((double)lf[i]));
        diff_a = fmax(diff_a, fabs((double)la[i] - lf[i]));
    }
    CHECKF(den > 0 && num <= 1e-5 * den, "%s: cached prefix vs scratch %.3g", model, num / den);
    CHECKF(diff_a > 1e-3 * den, "%s: A and B should differ (their last tokens do)", model);
    fprintf(stderr, "%s: prefix reuse vs recompute: max rel diff %.2e\n", model, num / den);
    free(la);
    free(lb);
    free(lf);
    hy_scratch_destroy(s, m);
    hy_kvstore_destroy(kv);
    hy_model_destroy(m);
    be->i->destroy(be);
}

int main(void)
{
    check_prefix_reuse("tests/data/tiny-mqa");
    check_prefix_reuse("tests/data/tiny-gqa2-untied");
    check_batch("tests/data/tiny-mqa");
    check_batch("tests/data/tiny-mha-sharded");
    check_dump();
    check_threads("tests/data/tiny-mqa");
    check_threads("tests/data/tiny-gqa2-untied");
    check_threads("tests/data/tiny-mha-sharded");
    check_cache();
    return test_result();
}
