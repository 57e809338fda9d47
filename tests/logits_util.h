/* logits_util.h: comparing two models' logits in tests (include after test.h).
 * tu_run feeds a prompt and then greedy (or given) tokens through a model with hy_ctx;
 * tu_compare runs model b on model a's greedy tokens, so every position has the same
 * context, and checks the logits identical (exact) or close by cosine. tu_greedy is the
 * plain greedy continuation a test's independent reference decodes with. */
#ifndef HY_TESTS_LOGITS_UTIL_H
#define HY_TESTS_LOGITS_UTIL_H

#include "model/hunyuan.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline int64_t tu_argmax(const float *x, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

static inline double tu_cosine(const float *a, const float *b, int64_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0.0;
}

/* Logits of the n_prompt prompt positions, then steps-1 decode steps fed with feed's ids
 * (or the model's own greedy ids when feed is NULL): out [n_prompt + steps - 1, V]; the ids
 * fed go to greedy [steps - 1]. */
static inline void tu_run(const struct hy_model *m, const int32_t *prompt, int n_prompt,
                          int steps, float *out, const int32_t *feed, int32_t *greedy)
{
    struct hy_ctx *c = NULL;
    struct hy_err e = {{0}};
    const int64_t V = m->cfg.vocab_size;
    CHECKF(hy_ctx_create(&c, m, n_prompt + steps + 1, n_prompt, &e) == HY_OK, "%s", e.msg);
    if (!c)
        return;
    CHECK(hy_model_forward(c, prompt, n_prompt, true, out, &e) == HY_OK);
    for (int s = 1; s < steps; s++) {
        const float *last = out + (int64_t)(n_prompt - 1 + s - 1) * V;
        int32_t id = feed ? feed[s - 1] : (int32_t)tu_argmax(last, V);
        greedy[s - 1] = id;
        CHECK(hy_model_forward(c, &id, 1, false, out + (int64_t)(n_prompt - 1 + s) * V, &e) ==
              HY_OK);
    }
    hy_ctx_destroy(c);
}

/* Greedy continuation of prompt [n] on m through a hy_ctx (the first of equal maxima),
 * stopping after a stop id (kept in out) or after max_new tokens; returns the count. */
static inline int tu_greedy(const struct hy_model *m, const int32_t *prompt, int n, int max_new,
                            const int32_t *stop, int n_stop, int32_t *out)
{
    struct hy_ctx *c = NULL;
    struct hy_err err = {{0}};
    const int64_t V = m->cfg.vocab_size;
    float *logits = malloc((size_t)V * sizeof *logits);
    int k = 0;
    HY_ASSERT(logits);
    CHECK(hy_ctx_create(&c, m, n + max_new, n, &err) == HY_OK);
    CHECK(hy_model_forward(c, prompt, n, false, logits, &err) == HY_OK);
    while (c && k < max_new) {
        int32_t best = (int32_t)tu_argmax(logits, V);
        out[k++] = best;
        bool stopped = false;
        for (int i = 0; i < n_stop; i++)
            stopped |= best == stop[i];
        if (stopped || k == max_new || hy_model_forward(c, &best, 1, false, logits, &err))
            break;
    }
    hy_ctx_destroy(c);
    free(logits);
    return k;
}

/* a and b identical (exact), or close: mean cosine >= min_mean and every position
 * >= min_pos; prints the mean, the minimum and the top-1 agreement (HYMT_VERBOSE: every
 * position's cosine). */
static inline void tu_compare(const struct hy_model *a, const struct hy_model *b,
                              const int32_t *prompt, int n_prompt, int steps, bool exact,
                              double min_mean, double min_pos, const char *what)
{
    if (!a || !b)
        return;
    const int64_t V = a->cfg.vocab_size, npos = n_prompt + steps - 1;
    float *la = malloc((size_t)(npos * V) * 4), *lb = malloc((size_t)(npos * V) * 4);
    int32_t *ga = malloc((size_t)steps * 4), *gb = malloc((size_t)steps * 4);
    HY_ASSERT(la && lb && ga && gb);
    tu_run(a, prompt, n_prompt, steps, la, NULL, ga);
    tu_run(b, prompt, n_prompt, steps, lb, ga, gb);
    if (exact) {
        CHECKF(!memcmp(la, lb, (size_t)(npos * V) * 4), "%s: logits differ", what);
    } else {
        double mc = 1, sum = 0;
        int agree = 0;
        for (int64_t p = 0; p < npos; p++) {
            double c = tu_cosine(la + p * V, lb + p * V, V);
            mc = c < mc ? c : mc;
            sum += c;
            if (getenv("HYMT_VERBOSE"))
                printf("  %s: position %lld cosine %.5f\n", what, (long long)p, c);
            agree += tu_argmax(la + p * V, V) == tu_argmax(lb + p * V, V);
            CHECKF(c >= min_pos, "%s: position %lld cosine %.5f < %.3f", what, (long long)p, c,
                   min_pos);
        }
        CHECKF(sum / (double)npos >= min_mean, "%s: mean cosine %.5f < %.3f", what,
               sum / (double)npos, min_mean);
        printf("%s: mean cosine %.5f, min %.5f over %lld positions, top-1 agreement %d/%lld\n",
               what, sum / (double)npos, mc, (long long)npos, agree, (long long)npos);
    }
    free(la);
    free(lb);
    free(ga);
    free(gb);
}

#endif
