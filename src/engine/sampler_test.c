/* sampler_test.c: each transform on hand-computed distributions, greedy equivalences,
 * reproducibility, and empirical frequencies of many draws. */
#include "engine/sampler.h"

#include "test.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define MAXV 16

/* A sampler over n logits with the given transforms; only the listed ones are on. */
static struct hy_sampler_params params(float temp, int32_t k, float p, float rp, uint64_t seed)
{
    struct hy_sampler_params q = {
        .temperature = temp, .top_k = k, .top_p = p, .repetition_penalty = rp, .seed = seed};
    return q;
}

/* Distribution for logits under q, with `seen` ids (n_seen) as the sequence so far. */
static void dist(const float *logits, int n, struct hy_sampler_params q, const int32_t *seen,
                 size_t n_seen, double *probs)
{
    struct hy_sampler s;
    struct hy_sampler_scratch sc;
    CHECK(hy_sampler_init(&s, n, &q, NULL) == HY_OK);
    CHECK(hy_sampler_scratch_init(&sc, n, NULL) == HY_OK);
    hy_sampler_reset(&s, seen, n_seen);
    hy_sampler_dist(&s, &sc, logits, probs);
    hy_sampler_scratch_deinit(&sc);
    hy_sampler_deinit(&s);
}

/* softmax of hand-transformed scores */
static void softmax(const double *x, int n, double *out)
{
    double m = -INFINITY, z = 0;
    for (int i = 0; i < n; i++)
        m = fmax(m, x[i]);
    for (int i = 0; i < n; i++)
        z += isinf(x[i]) ? 0 : exp(x[i] - m);
    for (int i = 0; i < n; i++)
        out[i] = isinf(x[i]) ? 0 : exp(x[i] - m) / z;
}

static void check_dist(const double *got, const double *want, int n, double tol, const char *what)
{
    for (int i = 0; i < n; i++)
        CHECKF(fabs(got[i] - want[i]) <= tol, "%s: p[%d] = %.9f, want %.9f", what, i, got[i],
               want[i]);
}

static void test_penalty(void)
{
    /* [2, -2, 1, 0.5] with ids 0 and 1 seen (0 three times), penalty 2:
     * 2 -> 2/2 = 1, -2 -> -2*2 = -4, once per distinct id. */
    const float logits[4] = {2, -2, 1, 0.5f};
    const int32_t seen[] = {0, 0, 1, 0};
    const double want_scores[4] = {1, -4, 1, 0.5};
    double want[4], got[4];
    softmax(want_scores, 4, want);
    dist(logits, 4, params(1, 0, 1, 2, 0), seen, 4, got);
    check_dist(got, want, 4, 1e-12, "penalty 2");

    /* penalty 1 is off */
    const double plain[4] = {2, -2, 1, 0.5};
    softmax(plain, 4, want);
    dist(logits, 4, params(1, 0, 1, 1, 0), seen, 4, got);
    check_dist(got, want, 4, 1e-12, "penalty 1");

    /* accept() marks ids incrementally, the same as a prompt */
    struct hy_sampler s;
    struct hy_sampler_scratch sc;
    struct hy_sampler_params q = params(1, 0, 1, 2, 0);
    CHECK(hy_sampler_init(&s, 4, &q, NULL) == HY_OK);
    CHECK(hy_sampler_scratch_init(&sc, 4, NULL) == HY_OK);
    hy_sampler_reset(&s, NULL, 0);
    hy_sampler_accept(&s, 0);
    hy_sampler_accept(&s, 1);
    hy_sampler_accept(&s, 0);
    hy_sampler_dist(&s, &sc, logits, got);
    softmax(want_scores, 4, want);
    check_dist(got, want, 4, 1e-12, "accept");
    /* a reset forgets them */
    hy_sampler_reset(&s, NULL, 0);
    hy_sampler_dist(&s, &sc, logits, got);
    softmax(plain, 4, want);
    check_dist(got, want, 4, 1e-12, "reset");

    /* greedy uses the penalized logits: 2.0/1.05 = 1.905 < 1.95 */
    const float close[2] = {2.0f, 1.95f};
    const int32_t zero = 0;
    q = params(0, 0, 1, 1.05f, 0);
    hy_sampler_deinit(&s);
    CHECK(hy_sampler_init(&s, 2, &q, NULL) == HY_OK);
    hy_sampler_reset(&s, NULL, 0);
    CHECK(hy_sampler_sample(&s, &sc, close) == 0);
    hy_sampler_reset(&s, &zero, 1);
    CHECK(hy_sampler_sample(&s, &sc, close) == 1);
    hy_sampler_scratch_deinit(&sc);
    hy_sampler_deinit(&s);
}

static void test_temperature(void)
{
    const float logits[3] = {1, 2, 3};
    const double t05[3] = {2, 4, 6}, t2[3] = {0.5, 1, 1.5};
    double want[3], got[4];
    softmax(t05, 3, want);
    dist(logits, 3, params(0.5f, 0, 1, 1, 0), NULL, 0, got);
    check_dist(got, want, 3, 1e-12, "temperature 0.5");
    softmax(t2, 3, want);
    dist(logits, 3, params(2, 0, 1, 1, 0), NULL, 0, got);
    check_dist(got, want, 3, 1e-12, "temperature 2");
    /* temperature 0: one-hot at the first maximum */
    const float tie[4] = {1, 5, 5, 2};
    const double onehot[4] = {0, 1, 0, 0};
    dist(tie, 4, params(0, 0, 1, 1, 0), NULL, 0, got);
    check_dist(got, onehot, 4, 0, "greedy");
}

static void test_top_k(void)
{
    double got[5];
    /* [1, 4, 2, 3, 0], k = 2: ids 1 and 3 remain, p = softmax(4, 3) */
    const float a[5] = {1, 4, 2, 3, 0};
    const double e = exp(-1.0);
    const double want_a[5] = {0, 1 / (1 + e), 0, e / (1 + e), 0};
    dist(a, 5, params(1, 2, 1, 1, 0), NULL, 0, got);
    check_dist(got, want_a, 5, 1e-12, "top_k 2");
    /* ties at the k-th value are all kept: [3, 2, 2, 1, 2], k = 2 keeps 3, 2, 2, 2 */
    const float b[5] = {3, 2, 2, 1, 2};
    const double s = exp(1.0) + 3;
    const double want_b[5] = {exp(1.0) / s, 1 / s, 1 / s, 0, 1 / s};
    dist(b, 5, params(1, 2, 1, 1, 0), NULL, 0, got);
    check_dist(got, want_b, 5, 1e-12, "top_k ties");
    /* the same with the tie found only after an eviction: [2, 2, 9], k = 2 */
    const float c[3] = {2, 2, 9};
    const double s2 = exp(7.0) + 2;
    const double want_c[3] = {1 / s2, 1 / s2, exp(7.0) / s2};
    dist(c, 3, params(1, 2, 1, 1, 0), NULL, 0, got);
    check_dist(got, want_c, 3, 1e-12, "top_k tie after eviction");
    /* k >= V is off */
    const double raw[5] = {1, 4, 2, 3, 0};
    double want[5];
    softmax(raw, 5, want);
    dist(a, 5, params(1, 5, 1, 1, 0), NULL, 0, got);
    check_dist(got, want, 5, 1e-12, "top_k = V");
}

static void test_top_p(void)
{
    /* probabilities 0.5, 0.25, 0.125, 0.0625, 0.0625 (scrambled order) */
    const float l[5] = {logf(0.125f), logf(0.5f), logf(0.0625f), logf(0.25f), logf(0.0625f)};
    double got[5];
    /* p = 0.7: 0.5 (< 0.7 before it: 0) kept, 0.25 (0.5 before) kept, 0.125 (0.75) cut */
    const double w70[5] = {0, 2.0 / 3, 0, 1.0 / 3, 0};
    dist(l, 5, params(1, 0, 0.7f, 1, 0), NULL, 0, got);
    check_dist(got, w70, 5, 1e-6, "top_p 0.7");
    /* p = 0.8: 0.125 (0.75 before it) kept too */
    const double w80[5] = {0.125 / 0.875, 0.5 / 0.875, 0, 0.25 / 0.875, 0};
    dist(l, 5, params(1, 0, 0.8f, 1, 0), NULL, 0, got);
    check_dist(got, w80, 5, 1e-6, "top_p 0.8");
    /* p = 0.9: of the tied 0.0625s the lower id (2) comes first and is kept (0.875
     * before it), the other is cut (0.9375 before it) */
    const double s = 0.9375;
    const double w90[5] = {0.125 / s, 0.5 / s, 0.0625 / s, 0.25 / s, 0};
    dist(l, 5, params(1, 0, 0.9f, 1, 0), NULL, 0, got);
    check_dist(got, w90, 5, 1e-6, "top_p 0.9");
    /* top-k then top-p renormalized over the top-k survivors: k = 3 leaves 0.5, 0.25,
     * 0.125 -> 4/7, 2/7, 1/7; p = 0.6 keeps 4/7 and 2/7 (4/7 < 0.6 before the second) */
    const double wkp[5] = {0, 2.0 / 3, 0, 1.0 / 3, 0};
    dist(l, 5, params(1, 3, 0.6f, 1, 0), NULL, 0, got);
    check_dist(got, wkp, 5, 1e-6, "top_k 3 + top_p 0.6");
}

/* A vocabulary of n random logits in [-8, 8) without ties. */
static void random_logits(float *l, int n, uint64_t *x)
{
    for (int i = 0; i < n; i++) {
        *x = *x * 6364136223846793005ull + 1442695040888963407ull;
        l[i] = (float)((double)(*x >> 11) * 0x1.0p-53 * 16 - 8) + (float)i * 1e-6f;
    }
}

static int32_t first_max(const float *l, int n)
{
    int32_t b = 0;
    for (int i = 1; i < n; i++)
        b = l[i] > l[b] ? i : b;
    return b;
}

static void test_greedy_equivalences(void)
{
    enum { V = 1000 };
    static float l[V];
    uint64_t x = 42;
    struct hy_sampler_scratch sc;
    CHECK(hy_sampler_scratch_init(&sc, V, NULL) == HY_OK);
    const struct hy_sampler_params qs[] = {
        params(0, 0, 1, 1, 1),       params(0, 20, 0.6f, 1, 2),    params(0.7f, 1, 1, 1, 3),
        params(1.5f, 1, 0.9f, 1, 4), params(0.7f, 0, 1e-6f, 1, 5), params(1, 50, 1e-6f, 1, 6),
    };
    for (size_t qi = 0; qi < sizeof qs / sizeof qs[0]; qi++) {
        struct hy_sampler s;
        CHECK(hy_sampler_init(&s, V, &qs[qi], NULL) == HY_OK);
        for (int rep = 0; rep < 50; rep++) {
            random_logits(l, V, &x);
            int32_t id = hy_sampler_sample(&s, &sc, l);
            CHECKF(id == first_max(l, V), "params %zu rep %d: %d, want %d", qi, rep, (int)id,
                   (int)first_max(l, V));
        }
        hy_sampler_deinit(&s);
    }
    hy_sampler_scratch_deinit(&sc);
}

/* Greedy over vocabularies around the 64-id block size, the maximum everywhere. */
static void test_argmax_blocks(void)
{
    static const int sizes[] = {1, 2, 63, 64, 65, 127, 128, 129, 200};
    static float l[200];
    struct hy_sampler_scratch sc;
    struct hy_sampler_params q = params(0, 0, 1, 1, 0);
    CHECK(hy_sampler_scratch_init(&sc, 200, NULL) == HY_OK);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int n = sizes[si];
        struct hy_sampler s;
        CHECK(hy_sampler_init(&s, n, &q, NULL) == HY_OK);
        for (int at = 0; at < n; at++) {
            for (int i = 0; i < n; i++)
                l[i] = (float)(i % 7) - 10;
            l[at] = 5;
            if (at + 1 < n)
                l[n - 1] = at % 2 ? 5 : 4; /* a later tie, or a near miss, in the tail */
            CHECKF(hy_sampler_sample(&s, &sc, l) == at, "n %d, max at %d", n, at);
        }
        hy_sampler_deinit(&s);
    }
    hy_sampler_scratch_deinit(&sc);
}

/* Reference top-k/top-p: sort everything (score desc, id asc), cut, renormalize. */
static int cmp_desc(const void *a, const void *b)
{
    const float *x = a, *y = b; /* pairs {score, id} */
    if (x[0] != y[0])
        return x[0] > y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static void reference_dist(const float *l, int n, float t, int k, double p, double *out)
{
    static float pairs[2 * 4096];
    for (int i = 0; i < n; i++)
        pairs[2 * i] = l[i] / t, pairs[2 * i + 1] = (float)i;
    qsort(pairs, (size_t)n, 2 * sizeof(float), cmp_desc);
    int keep = n;
    if (k > 0 && k < n) {
        keep = k;
        while (keep < n && pairs[2 * keep] == pairs[2 * (k - 1)])
            keep++;
    }
    double z = 0, cum = 0;
    for (int j = 0; j < keep; j++)
        z += exp((double)pairs[2 * j] - pairs[0]);
    int cut = 0;
    for (; cut < keep && (cut == 0 || cum / z < p); cut++)
        cum += exp((double)pairs[2 * cut] - pairs[0]);
    memset(out, 0, (size_t)n * sizeof *out);
    for (int j = 0; j < cut; j++)
        out[(int)pairs[2 * j + 1]] = exp((double)pairs[2 * j] - pairs[0]) / cum;
}

/* Random vocabularies (with ties from rounding) against the reference. */
static void test_against_reference(void)
{
    enum { V = 4096 };
    static float l[V];
    static double got[V], want[V];
    uint64_t x = 5;
    const float ps[] = {0.05f, 0.3f, 0.6f, 0.9f, 0.99f, 1};
    const int ks[] = {0, 1, 20, 100, 5000};
    for (int rep = 0; rep < 4; rep++) {
        random_logits(l, V, &x);
        for (int i = 0; i < V; i++)
            l[i] = rep % 2 ? roundf(l[i] * 4) / 4 : l[i] * (float)(rep + 1); /* ties, peaks */
        for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                reference_dist(l, V, 0.8f, ks[ki], ps[pi], want);
                dist(l, V, params(0.8f, ks[ki], ps[pi], 1, 0), NULL, 0, got);
                int bad = 0;
                for (int i = 0; i < V; i++)
                    bad += fabs(got[i] - want[i]) > 1e-9;
                CHECKF(bad == 0, "rep %d top_p %g top_k %d: %d ids differ", rep, ps[pi], ks[ki],
                       bad);
            }
        }
    }
}

/* Runs n steps of sample + accept on a fixed logits stream; writes the ids. */
static void run_seq(uint64_t seed, struct hy_sampler_params q, int32_t *ids, int n)
{
    enum { V = 500 };
    static float l[V];
    uint64_t x = 7;
    struct hy_sampler s;
    struct hy_sampler_scratch sc;
    q.seed = seed;
    CHECK(hy_sampler_init(&s, V, &q, NULL) == HY_OK);
    CHECK(hy_sampler_scratch_init(&sc, V, NULL) == HY_OK);
    const int32_t prompt[3] = {1, 2, 3};
    hy_sampler_reset(&s, prompt, 3);
    for (int i = 0; i < n; i++) {
        random_logits(l, V, &x);
        for (int j = 0; j < V; j++)
            l[j] *= 0.3f; /* flat enough that sampling has choices */
        ids[i] = hy_sampler_sample(&s, &sc, l);
        hy_sampler_accept(&s, ids[i]);
    }
    hy_sampler_scratch_deinit(&sc);
    hy_sampler_deinit(&s);
}

static void test_seed(void)
{
    enum { N = 300 };
    static int32_t a[N], b[N], c[N];
    struct hy_sampler_params q[3] = {hy_sampler_params_default(), params(1, 0, 1, 1, 0),
                                     params(0.8f, 0, 0.9f, 1.1f, 0)};
    for (int qi = 0; qi < 3; qi++) {
        run_seq(1234, q[qi], a, N);
        run_seq(1234, q[qi], b, N);
        run_seq(99, q[qi], c, N);
        CHECKF(memcmp(a, b, sizeof a) == 0, "params %d: same seed differs", qi);
        CHECKF(memcmp(a, c, sizeof a) != 0, "params %d: other seed the same", qi);
    }
}

/* Draws N times and checks every count within 5 standard deviations of N*p (a false
 * alarm per bin has probability < 6e-7). */
static void check_freq(const float *l, int n, struct hy_sampler_params q, const char *what)
{
    enum { N = 200000 };
    double p[MAXV];
    long count[MAXV] = {0};
    struct hy_sampler s;
    struct hy_sampler_scratch sc;
    CHECK(hy_sampler_init(&s, n, &q, NULL) == HY_OK);
    CHECK(hy_sampler_scratch_init(&sc, n, NULL) == HY_OK);
    hy_sampler_dist(&s, &sc, l, p);
    for (int i = 0; i < N; i++)
        count[hy_sampler_sample(&s, &sc, l)]++;
    for (int i = 0; i < n; i++) {
        double mean = N * p[i], sd = sqrt(N * p[i] * (1 - p[i]));
        CHECKF(fabs((double)count[i] - mean) <= 5 * sd, "%s: id %d drawn %ld times, expected %.0f",
               what, i, count[i], mean);
    }
    hy_sampler_scratch_deinit(&sc);
    hy_sampler_deinit(&s);
}

static void test_frequencies(void)
{
    const float l[6] = {logf(0.4f), logf(0.05f), logf(0.3f), logf(0.1f), logf(0.1f), logf(0.05f)};
    check_freq(l, 6, params(1, 0, 1, 1, 11), "plain");
    check_freq(l, 6, params(0.7f, 4, 1, 1, 12), "temperature + top_k");
    check_freq(l, 6, params(1.3f, 0, 0.8f, 1, 13), "top_p");
    check_freq(l, 6, hy_sampler_params_default(), "defaults");
}

static void test_degenerate(void)
{
    double got[4];
    const float nan_l[4] = {NAN, 1, NAN, 0};
    const double e = exp(-1.0);
    const double want[4] = {0, 1 / (1 + e), 0, e / (1 + e)};
    dist(nan_l, 4, params(1, 0, 1, 1, 0), NULL, 0, got);
    check_dist(got, want, 4, 1e-12, "NaN as -inf");
    const float ninf[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    const double first[4] = {1, 0, 0, 0};
    dist(ninf, 4, params(1, 2, 0.5f, 1, 0), NULL, 0, got);
    check_dist(got, first, 4, 0, "all -inf");
    const float pinf[4] = {0, INFINITY, 3, INFINITY};
    const double second[4] = {0, 1, 0, 0};
    dist(pinf, 4, params(1, 0, 1, 1, 0), NULL, 0, got);
    check_dist(got, second, 4, 0, "+inf");
    /* masked tokens (-inf) are never drawn */
    const float masked[4] = {-INFINITY, 0, -INFINITY, 0};
    const double half[4] = {0, 0.5, 0, 0.5};
    dist(masked, 4, params(1, 3, 1, 1, 0), NULL, 0, got);
    check_dist(got, half, 4, 1e-12, "masked");
}

static void test_params(void)
{
    struct hy_sampler_params d = hy_sampler_params_default();
    CHECK(d.temperature == 0.7f && d.top_k == 20 && d.top_p == 0.6f &&
          d.repetition_penalty == 1.05f);
    CHECK(hy_sampler_params_check(&d, NULL) == HY_OK);
    const struct hy_sampler_params bad[] = {
        params(-1, 0, 1, 1, 0),       params(NAN, 0, 1, 1, 0),  params(1, -1, 1, 1, 0),
        params(1, 0, 0, 1, 0),        params(1, 0, 1.5f, 1, 0), params(1, 0, 1, 0, 0),
        params(1, 0, 1, INFINITY, 0),
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct hy_err err = {{0}};
        struct hy_sampler s;
        CHECKF(hy_sampler_init(&s, 10, &bad[i], &err) == HY_E_RANGE, "bad params %zu", i);
        CHECK(err.msg[0] != 0);
        hy_sampler_deinit(&s);
    }
    struct hy_sampler s;
    CHECK(hy_sampler_init(&s, 0, &d, NULL) == HY_E_RANGE);
    hy_sampler_deinit(&s);
}

/* The recommended settings over a 128k vocabulary: top-k by selection stays cheap. */
static void test_speed(void)
{
    enum { V = 128167, STEPS = 200 };
    static float l[V];
    uint64_t x = 3;
    random_logits(l, V, &x);
    struct hy_sampler_params qs[2] = {hy_sampler_params_default(), params(1, 0, 0.9f, 1.05f, 0)};
    struct hy_sampler_scratch sc;
    CHECK(hy_sampler_scratch_init(&sc, V, NULL) == HY_OK);
    for (int qi = 0; qi < 2; qi++) {
        struct hy_sampler s;
        CHECK(hy_sampler_init(&s, V, &qs[qi], NULL) == HY_OK);
        hy_sampler_reset(&s, NULL, 0);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < STEPS; i++) {
            int32_t id = hy_sampler_sample(&s, &sc, l);
            CHECK(id >= 0 && id < V);
            hy_sampler_accept(&s, id);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
                    1e3 / STEPS;
        fprintf(stderr, "vocab %d, %s: %.0f us per sample\n", V, qi ? "top_p 0.9 only" : "defaults",
                us);
        hy_sampler_deinit(&s);
    }
    hy_sampler_scratch_deinit(&sc);
}

int main(void)
{
    test_penalty();
    test_temperature();
    test_top_k();
    test_top_p();
    test_greedy_equivalences();
    test_argmax_blocks();
    test_against_reference();
    test_seed();
    test_frequencies();
    test_degenerate();
    test_params();
    test_speed();
    return test_result();
}
