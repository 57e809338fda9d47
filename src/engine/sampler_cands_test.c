/* sampler_cands_test.c: hy_sampler_sample_cands against hy_sampler_sample. For random
 * logits (with deliberate ties, NaN and infinities), random seen ids and many parameter
 * sets, two samplers in the same state choose: one from the whole row, one from its K best
 * (computed here as a backend's topk op must: value descending, id ascending, NaN as
 * -inf). Whenever the candidate path accepts, the ids and the PRNG states must be equal;
 * the path must also accept most of the time for the translation defaults, or it would
 * save nothing. */
#include "engine/sampler.h"

#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define V 3000
#define K 32

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 11;
}

static double unit(uint64_t *x)
{
    return (double)lcg(x) * 0x1.0p-53;
}

static const float *g_logits; /* for the qsort comparator */

static float key_val(float v)
{
    return v != v ? -INFINITY : v;
}

static int cmp_cand(const void *a, const void *b)
{
    int32_t ia = *(const int32_t *)a, ib = *(const int32_t *)b;
    float va = key_val(g_logits[ia]), vb = key_val(g_logits[ib]);
    if (va != vb)
        return va > vb ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

/* The K best of l as the topk op gives them. */
static void top_cands(const float *l, struct hy_cand *c, int32_t *order)
{
    for (int i = 0; i < V; i++)
        order[i] = i;
    g_logits = l;
    qsort(order, V, sizeof *order, cmp_cand);
    for (int j = 0; j < K; j++)
        c[j] = (struct hy_cand){key_val(l[order[j]]), order[j]};
}

/* Logits of one of several shapes: spread, peaked, coarse (many ties), with specials. */
static void make_logits(float *l, uint64_t *x, int shape)
{
    for (int i = 0; i < V; i++) {
        double u = unit(x);
        switch (shape) {
        case 0: l[i] = (float)(u * 16 - 8); break;
        case 1: l[i] = (float)(u * 4 - 2) + (i % 97 == 5 ? 9.0f : 0.0f); break;
        case 2: l[i] = (float)floor(u * 6) - 3; break; /* six values: ties everywhere */
        default: l[i] = (float)(u * 10 - 5); break;
        }
    }
    if (shape == 3) {
        l[lcg(x) % V] = NAN;
        l[lcg(x) % V] = -INFINITY;
        l[lcg(x) % V] = NAN;
    }
}

static void test_equal_choices(void)
{
    static float l[V];
    static int32_t order[V], seen[64];
    struct hy_cand c[K];
    struct hy_sampler_scratch sc;
    CHECK(hy_sampler_scratch_init(&sc, V, NULL) == HY_OK);
    const struct hy_sampler_params ps[] = {
        {0.7f, 20, 0.6f, 1.05f, 1}, /* the translation defaults */
        {0.0f, 0, 1.0f, 1.0f, 2},   /* greedy */
        {0.0f, 0, 1.0f, 1.3f, 3},   /* greedy with a penalty */
        {1.0f, 31, 1.0f, 1.0f, 4},  /* top_k = K - 1 */
        {1.3f, 5, 0.9f, 2.0f, 5},
        {0.5f, 1, 1.0f, 1.05f, 6},
        {1.0f, 0, 0.9f, 1.0f, 7},   /* top_k off: must refuse */
        {0.7f, 20, 0.6f, 0.8f, 8},  /* penalty < 1: must refuse */
        {0.7f, 40, 0.6f, 1.0f, 9},  /* top_k > K: must refuse */
    };
    const int NP = (int)(sizeof ps / sizeof ps[0]);
    uint64_t x = 12345;
    int accepted[16] = {0}, tried[16] = {0};
    for (int iter = 0; iter < 600; iter++) {
        const int pi = iter % NP, shape = (iter / NP) % 4;
        make_logits(l, &x, shape);
        top_cands(l, c, order);
        int n_seen = (int)(lcg(&x) % 40);
        for (int i = 0; i < n_seen; i++) /* seen ids mostly among the best, as in text */
            seen[i] = i % 2 ? (int32_t)(lcg(&x) % V) : order[lcg(&x) % K];
        struct hy_sampler a, b;
        CHECK(hy_sampler_init(&a, V, &ps[pi], NULL) == HY_OK);
        CHECK(hy_sampler_init(&b, V, &ps[pi], NULL) == HY_OK);
        hy_sampler_reset(&a, seen, (size_t)n_seen);
        hy_sampler_reset(&b, seen, (size_t)n_seen);
        for (int draw = 0; draw < 3; draw++) { /* the PRNG moves on between draws */
            int32_t want = hy_sampler_sample(&a, &sc, l), got = -1;
            tried[pi]++;
            bool ok = hy_sampler_sample_cands(&b, &sc, c, K, &got);
            if (!ok) { /* the caller then samples the whole row */
                got = hy_sampler_sample(&b, &sc, l);
            } else {
                accepted[pi]++;
            }
            CHECKF(got == want, "params %d shape %d: %d from candidates, %d from the row", pi,
                   shape, got, want);
            CHECK(memcmp(a.rng, b.rng, sizeof a.rng) == 0);
        }
        hy_sampler_deinit(&a);
        hy_sampler_deinit(&b);
    }
    for (int pi = 0; pi < NP; pi++)
        fprintf(stderr, "params %d: candidates enough %d of %d\n", pi, accepted[pi], tried[pi]);
    /* three of the four shapes have no ties at the cut-off: most draws take candidates */
    CHECK(accepted[0] >= tried[0] / 2);
    CHECK(accepted[1] >= tried[1] / 2);
    CHECK(accepted[3] > 0 && accepted[4] > 0);
    CHECK(accepted[6] == 0 && accepted[7] == 0 && accepted[8] == 0);
    hy_sampler_scratch_deinit(&sc);
}

/* A seen id just outside the K that the penalty could not lift, and a cut-off tied with
 * the K-th value: both must refuse rather than guess. */
static void test_refusals(void)
{
    static float l[V];
    struct hy_cand c[K];
    struct hy_sampler_scratch sc;
    CHECK(hy_sampler_scratch_init(&sc, V, NULL) == HY_OK);
    for (int i = 0; i < V; i++)
        l[i] = -1.0f - (float)i * 1e-3f; /* strictly decreasing: the K best are ids 0..K-1 */
    for (int j = 0; j < K; j++)
        c[j] = (struct hy_cand){l[j], j};
    struct hy_sampler_params q = {0.0f, 0, 1.0f, 1.05f, 0};
    struct hy_sampler s;
    CHECK(hy_sampler_init(&s, V, &q, NULL) == HY_OK);
    int32_t seen_all[K], id = -1;
    for (int j = 0; j < K; j++)
        seen_all[j] = j;
    hy_sampler_reset(&s, seen_all, K); /* every candidate penalized below the outside ones */
    CHECK(!hy_sampler_sample_cands(&s, &sc, c, K, &id));
    CHECK(hy_sampler_sample(&s, &sc, l) == K); /* the first outside id wins */
    hy_sampler_reset(&s, NULL, 0);
    CHECK(hy_sampler_sample_cands(&s, &sc, c, K, &id) && id == 0);
    for (int j = 0; j < K; j++) /* best equal to the boundary: an outside id could tie */
        c[j].val = c[K - 1].val;
    CHECK(!hy_sampler_sample_cands(&s, &sc, c, K, &id));
    hy_sampler_deinit(&s);
    hy_sampler_scratch_deinit(&sc);
}

int main(void)
{
    test_equal_choices();
    test_refusals();
    return test_result();
}
