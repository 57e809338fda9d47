/* moe_test.c: the routing ops against a brute force over every expert (sort all E
 * biased scores, take k), a hand-worked case where the bias changes the choice but not
 * the weights, ties and NaN, and group + combine against a per-token sum. */
#include "backend/cpu/moe.h"

#include "test.h"

#include <math.h>
#include <stdlib.h>

static float sig(float x) { return 1.0f / (1.0f + expf(-x)); }

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand(void) /* [-1, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1.0p-52 - 1.0);
}

/* E = 4, k = 2: scores 0.73, 0.62, 0.50, 0.38; the bias lifts expert 3 over expert 1,
 * and its weight is still its own unbiased score's share. */
static void test_hand(void)
{
    const float logits[4] = {1.0f, 0.5f, 0.0f, -0.5f};
    const float bias[4] = {0.0f, 0.0f, 0.0f, 0.3f};
    int32_t ids[3];
    float w[3];
    hy_moe_route(logits, NULL, 1, 4, 2, 1.0f, ids, w);
    CHECK(ids[0] == 0 && ids[1] == 1);
    hy_moe_route(logits, bias, 1, 4, 2, 2.826f, ids, w);
    CHECK(ids[0] == 0 && ids[1] == 3); /* 0.731 > 0.378 + 0.3 > 0.622 */
    /* weights from the unbiased scores, renormalised, times the scale */
    float s0 = sig(1.0f), s3 = sig(-0.5f);
    CHECKF(fabsf(w[0] - s0 / (s0 + s3) * 2.826f) < 1e-6f, "w0 %g", w[0]);
    CHECKF(fabsf(w[1] - s3 / (s0 + s3) * 2.826f) < 1e-6f, "w1 %g", w[1]);
    /* ties go to the lower index; NaN is never chosen before a number */
    const float tie[4] = {0.25f, 0.25f, NAN, 0.25f};
    hy_moe_route(tie, NULL, 1, 4, 3, 1.0f, ids, w);
    CHECK(ids[0] == 0 && ids[1] == 1 && ids[2] == 3);
    CHECK(fabsf(w[0] + w[1] + w[2] - 1.0f) < 1e-6f);
}

/* Random tokens against sorting every expert's biased score. */
static void test_brute(void)
{
    enum { T = 37, E = 24, K = 6 };
    static float logits[T * E], bias[E], w[T * K];
    static int32_t ids[T * K];
    for (int i = 0; i < T * E; i++)
        logits[i] = 3.0f * urand();
    for (int e = 0; e < E; e++)
        bias[e] = 0.2f * urand();
    hy_moe_route(logits, bias, T, E, K, 2.5f, ids, w);
    int moved = 0;
    for (int t = 0; t < T; t++) {
        const float *l = logits + t * E;
        int order[E];
        for (int e = 0; e < E; e++)
            order[e] = e;
        for (int a = 0; a < E; a++) /* selection sort by biased score, descending */
            for (int b = a + 1; b < E; b++) {
                float sa = sig(l[order[a]]) + bias[order[a]], sb = sig(l[order[b]]) + bias[order[b]];
                if (sb > sa || (sb == sa && order[b] < order[a])) {
                    int x = order[a];
                    order[a] = order[b];
                    order[b] = x;
                }
            }
        double sum = 0;
        for (int j = 0; j < K; j++)
            sum += sig(l[order[j]]);
        double wsum = 0;
        for (int j = 0; j < K; j++) {
            CHECKF(ids[t * K + j] == order[j], "token %d slot %d: %d, brute force %d", t, j,
                   ids[t * K + j], order[j]);
            double want = sig(l[order[j]]) / sum * 2.5;
            CHECKF(fabs(w[t * K + j] - want) < 1e-6, "token %d slot %d: weight %g, want %g", t, j,
                   w[t * K + j], want);
            wsum += w[t * K + j];
        }
        CHECK(fabs(wsum - 2.5) < 1e-5);
        /* does the bias matter here? (the test must see it change some choices) */
        int32_t plain[K];
        float pw[K];
        hy_moe_route(l, NULL, 1, E, K, 2.5f, plain, pw);
        unsigned a = 0, b = 0;
        for (int j = 0; j < K; j++)
            a |= 1u << plain[j], b |= 1u << ids[t * K + j];
        moved += a != b;
    }
    CHECKF(moved > 0 && moved < T, "the bias changed the choice of %d of %d tokens", moved, T);
}

/* group + combine == for each token, sum over its slots of w * f_e(x_t). */
static void test_group_combine(void)
{
    enum { T = 19, E = 7, K = 3, D = 5 };
    static float logits[T * E], w[T * K], rw[T * K], y[T * K * D], out[T * D], want[T * D];
    static int32_t ids[T * K], off[E + 1], rows[T * K];
    for (int i = 0; i < T * E; i++)
        logits[i] = 2.0f * urand();
    hy_moe_route(logits, NULL, T, E, K, 1.5f, ids, w);
    hy_moe_group(ids, w, T, K, E, off, rows, rw);
    CHECK(off[0] == 0 && off[E] == T * K);
    /* f_e(x_t)[c] = e + 10 t + 100 c, computed for each grouped row */
    for (int e = 0; e < E; e++) {
        CHECK(off[e] <= off[e + 1]);
        for (int i = off[e]; i < off[e + 1]; i++) {
            CHECK(i == off[e] || rows[i] > rows[i - 1]); /* tokens ascending, once each */
            for (int c = 0; c < D; c++)
                y[i * D + c] = (float)(e + 10 * rows[i] + 100 * c);
        }
    }
    for (int i = 0; i < T * D; i++)
        out[i] = want[i] = 0.5f;
    hy_moe_combine(out, y, rows, rw, T * K, D);
    for (int t = 0; t < T; t++)
        for (int j = 0; j < K; j++)
            for (int c = 0; c < D; c++)
                want[t * D + c] += w[t * K + j] * (float)(ids[t * K + j] + 10 * t + 100 * c);
    for (int i = 0; i < T * D; i++)
        CHECKF(fabsf(out[i] - want[i]) <= 1e-4f * fabsf(want[i]), "out[%d] %g, want %g", i, out[i],
               want[i]);
}

int main(void)
{
    test_hand();
    test_brute();
    test_group_combine();
    return test_result();
}
