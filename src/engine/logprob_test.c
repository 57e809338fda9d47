/* logprob_test.c: hy_logprob_compute against a double-precision reference on random
 * logits (spread over +-12, with ties, a NaN and -inf entries): the top entries are the
 * n best in order (value descending, id ascending) with exactly the reference's
 * log-softmax, the chosen token's logprob is its own, every probability is <= 1, the
 * probabilities of the whole row sum to 1 and the top ones to at most 1. Tolerance: 2e-5
 * absolute on a logprob, about 10 ulp of fp32 near |logprob| 10 (the result is rounded
 * to fp32 once from a double computation). */
#include "engine/logprob.h"

#include "test.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#define V 5000
#define TOL 2e-5

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 11;
}

static float logits[V];

/* The reference log-sum-exp in long double over the finite entries. */
static long double ref_lse(void)
{
    float m = -INFINITY;
    for (int i = 0; i < V; i++)
        if (!isnan(logits[i]) && logits[i] > m)
            m = logits[i];
    long double s = 0;
    for (int i = 0; i < V; i++)
        if (!isnan(logits[i]))
            s += expl((long double)logits[i] - m);
    return m + logl(s);
}

static void one_row(uint64_t *seed, int n_top)
{
    for (int i = 0; i < V; i++)
        logits[i] = (float)((double)(lcg(seed) % 24000) / 1000.0 - 12.0);
    logits[lcg(seed) % V] = NAN;
    logits[lcg(seed) % V] = -INFINITY;
    int a = (int)(lcg(seed) % V), b = (int)(lcg(seed) % V); /* a tie at the top */
    logits[a] = logits[b] = 13.5f;
    const int lo = a < b ? a : b;
    struct hy_logprob lp;
    memset(&lp, 0xff, sizeof lp);
    int32_t chosen = (int32_t)(lcg(seed) % V);
    if (isnan(logits[chosen]))
        chosen = lo;
    hy_logprob_compute(logits, V, chosen, n_top, &lp);
    const long double lse = ref_lse();
    const int want = n_top > HY_LOGPROB_MAX_TOP ? HY_LOGPROB_MAX_TOP : n_top < 0 ? 0 : n_top;
    CHECKF(lp.n_top == want, "n_top %d, want %d", lp.n_top, want);
    CHECK(lp.id == chosen);
    CHECKF(fabsl(lp.logprob - ((long double)logits[chosen] - lse)) < TOL || isinf(lp.logprob),
           "chosen %f", lp.logprob);
    double mass = 0;
    for (int j = 0; j < lp.n_top; j++) {
        const struct hy_logprob_alt *t = &lp.top[j];
        CHECK(t->id >= 0 && t->id < V && !isnan(logits[t->id]));
        CHECKF(fabsl(t->logprob - ((long double)logits[t->id] - lse)) < TOL, "top %d", j);
        CHECK(t->logprob <= 0); /* a probability <= 1 */
        mass += exp(t->logprob);
        if (j > 0) /* decreasing; equal values by id */
            CHECK(t->logprob < lp.top[j - 1].logprob ||
                  (t->logprob == lp.top[j - 1].logprob && t->id > lp.top[j - 1].id));
        for (int i = 0; i < V; i++) /* nothing outside the list beats the last entry */
            if (j == lp.n_top - 1 && !isnan(logits[i]) && logits[i] > logits[t->id]) {
                bool in = false;
                for (int q = 0; q < lp.n_top; q++)
                    in = in || lp.top[q].id == i;
                CHECKF(in, "id %d (%f) better than the last kept", i, logits[i]);
            }
        if (t->id == chosen) /* the chosen token's logprob equals its entry */
            CHECK(t->logprob == lp.logprob);
    }
    CHECKF(mass <= 1 + 1e-6, "top mass %f", mass);
    if (lp.n_top > 0) { /* the greedy token: the first entry, the tie broken by id */
        CHECK(lp.top[0].id == lo);
        struct hy_logprob g;
        hy_logprob_compute(logits, V, lo, 1, &g);
        CHECK(g.logprob == g.top[0].logprob && g.top[0].id == lo);
    }
    double all = 0; /* the whole row's probabilities sum to 1 */
    for (int i = 0; i < V; i++)
        if (!isnan(logits[i]))
            all += exp((double)((long double)logits[i] - lse));
    CHECKF(fabs(all - 1) < 1e-9, "row mass %f", all);
}

int main(void)
{
    uint64_t seed = 42;
    const int tops[] = {0, 1, 5, 20, 25, -3};
    for (int r = 0; r < 60; r++)
        one_row(&seed, tops[r % 6]);
    /* a row of -inf only: no distribution, nothing NaN */
    for (int i = 0; i < V; i++)
        logits[i] = -INFINITY;
    struct hy_logprob lp;
    hy_logprob_compute(logits, V, 3, 2, &lp);
    CHECK(lp.n_top == 2 && !isnan(lp.logprob) && !isnan(lp.top[0].logprob));
    return test_result();
}
