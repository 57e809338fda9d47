/* sampler.c: repetition penalty, temperature, top-k, top-p and the draw (sampler.h).
 *
 * One pass writes every score (logit, penalized where the seen bitmap says so, divided by
 * the temperature, in float as torch does) to scratch; the loop vectorizes and only the
 * 64-id words of the bitmap with bits set take the slow path. Candidates are ordered by
 * score, then lower id (a strict total order, so every result is deterministic).
 * Top-k keeps a min-heap of the k best in one pass, O(V log k); ids tied with the k-th
 * score are appended, as transformers keeps every score >= the k-th. Top-p after top-k
 * cuts the sorted candidates; top-p alone runs a quickselect on probability mass, O(V)
 * expected, and never sorts the vocabulary. Probabilities and sums are in double. */
#include "engine/sampler.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The kept candidates are sc->val/id/w[0..n): score, id, weight exp(score - vmax);
 * z is the sum of the weights. */
struct cands {
    size_t n;
    double vmax, z;
};

struct hy_sampler_params hy_sampler_params_default(void)
{
    struct hy_sampler_params p = {
        .temperature = 0.7f, .top_k = 20, .top_p = 0.6f, .repetition_penalty = 1.05f, .seed = 0};
    return p;
}

hy_status hy_sampler_params_check(const struct hy_sampler_params *p, struct hy_err *err)
{
    if (!(isfinite(p->temperature) && p->temperature >= 0))
        return hy_err_set(err, HY_E_RANGE, "temperature %g: must be >= 0", p->temperature);
    if (p->top_k < 0)
        return hy_err_set(err, HY_E_RANGE, "top_k %d: must be >= 0 (0: off)", (int)p->top_k);
    if (!(p->top_p > 0 && p->top_p <= 1))
        return hy_err_set(err, HY_E_RANGE, "top_p %g: must be in (0, 1]", p->top_p);
    if (!(isfinite(p->repetition_penalty) && p->repetition_penalty > 0))
        return hy_err_set(err, HY_E_RANGE, "repetition_penalty %g: must be > 0",
                          p->repetition_penalty);
    return HY_OK;
}

/* ---- PRNG: splitmix64 seeds xoshiro256** (Blackman and Vigna) ---- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t s[4])
{
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_uniform(uint64_t s[4])
{
    return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

static void rng_seed(uint64_t s[4], uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        s[i] = splitmix64(&seed);
}

/* ---- init, reset, accept ---- */

hy_status hy_sampler_scratch_init(struct hy_sampler_scratch *sc, int32_t n_vocab,
                                  struct hy_err *err)
{
    memset(sc, 0, sizeof *sc);
    if (n_vocab <= 0)
        return hy_err_set(err, HY_E_RANGE, "sampler: vocabulary size %d", (int)n_vocab);
    sc->score = malloc((size_t)n_vocab * sizeof *sc->score);
    sc->val = malloc((size_t)n_vocab * sizeof *sc->val);
    sc->id = malloc((size_t)n_vocab * sizeof *sc->id);
    sc->w = malloc((size_t)n_vocab * sizeof *sc->w);
    if (!sc->score || !sc->val || !sc->id || !sc->w) {
        hy_sampler_scratch_deinit(sc);
        return hy_err_set(err, HY_E_NOMEM, "sampler: scratch for %d ids", (int)n_vocab);
    }
    sc->n_vocab = n_vocab;
    return HY_OK;
}

void hy_sampler_scratch_deinit(struct hy_sampler_scratch *sc)
{
    free(sc->score);
    free(sc->val);
    free(sc->id);
    free(sc->w);
    memset(sc, 0, sizeof *sc);
}

static size_t seen_words(int32_t n_vocab)
{
    return ((size_t)n_vocab + 63) / 64;
}

hy_status hy_sampler_init(struct hy_sampler *s, int32_t n_vocab, const struct hy_sampler_params *p,
                          struct hy_err *err)
{
    memset(s, 0, sizeof *s);
    hy_status st = hy_sampler_params_check(p, err);
    if (st != HY_OK)
        return st;
    if (n_vocab <= 0)
        return hy_err_set(err, HY_E_RANGE, "sampler: vocabulary size %d", (int)n_vocab);
    s->seen = calloc(seen_words(n_vocab), sizeof *s->seen);
    if (!s->seen)
        return hy_err_set(err, HY_E_NOMEM, "sampler: bitmap for %d ids", (int)n_vocab);
    s->n_vocab = n_vocab;
    s->p = *p;
    rng_seed(s->rng, p->seed);
    return HY_OK;
}

void hy_sampler_deinit(struct hy_sampler *s)
{
    free(s->seen);
    memset(s, 0, sizeof *s);
}

void hy_sampler_accept(struct hy_sampler *s, int32_t id)
{
    HY_ASSERT(id >= 0 && id < s->n_vocab);
    s->seen[id >> 6] |= 1ull << (id & 63);
}

void hy_sampler_reset(struct hy_sampler *s, const int32_t *prompt, size_t n)
{
    memset(s->seen, 0, seen_words(s->n_vocab) * sizeof *s->seen);
    rng_seed(s->rng, s->p.seed);
    for (size_t i = 0; i < n; i++)
        hy_sampler_accept(s, prompt[i]);
}

/* ---- scores ---- */

/* out[i] = logits[i] / t for i in [lo, lo + n); returns whether any logit is NaN. The
 * full blocks (n = 64) have a constant trip count, so the compiler vectorizes them. */
static inline bool divide_block(const float *restrict logits, size_t lo, size_t n, float t,
                                float *restrict out)
{
    int bad = 0;
    if (t == 1.0f) { /* greedy: no division */
        for (size_t j = 0; j < n; j++) {
            float x = logits[lo + j];
            out[lo + j] = x;
            bad |= x != x;
        }
    } else {
        for (size_t j = 0; j < n; j++) {
            float x = logits[lo + j];
            out[lo + j] = x / t;
            bad |= x != x;
        }
    }
    return bad != 0;
}

/* NaN becomes -inf; the penalty where bits (bit j: id lo + j) say. */
static void fix_block(const float *logits, size_t lo, size_t n, bool nan, uint64_t bits, float t,
                      float rp, float *out)
{
    for (size_t j = 0; nan && j < n; j++) {
        if (logits[lo + j] != logits[lo + j])
            out[lo + j] = -INFINITY;
    }
    for (; bits; bits &= bits - 1) {
        size_t i = lo + (size_t)__builtin_ctzll(bits);
        float x = logits[i];
        if (x == x)
            out[i] = (x < 0 ? x * rp : x / rp) / t;
    }
}

/* out[i] = penalized logit i / t for every id (NaN as -inf). */
static void compute_scores(const struct hy_sampler *s, const float *logits, float t, float *out)
{
    const float rp = s->p.repetition_penalty;
    size_t n = (size_t)s->n_vocab, lo = 0;
    for (; lo + 64 <= n; lo += 64) {
        bool nan = divide_block(logits, lo, 64, t, out);
        uint64_t bits = s->seen[lo / 64];
        if (nan || bits)
            fix_block(logits, lo, 64, nan, bits, t, rp, out);
    }
    if (lo < n)
        fix_block(logits, lo, n - lo, divide_block(logits, lo, n - lo, t, out), s->seen[lo / 64], t,
                  rp, out);
}

/* Largest of the 64 scores at x (eight lanes, so the compiler vectorizes it). */
static inline float block_max(const float *restrict x)
{
    float m[8];
    for (int j = 0; j < 8; j++)
        m[j] = x[j];
    for (int i = 8; i < 64; i += 8) {
        for (int j = 0; j < 8; j++)
            m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    }
    for (int j = 1; j < 8; j++)
        m[0] = m[j] > m[0] ? m[j] : m[0];
    return m[0];
}

/* First id with the largest score, as torch.argmax: the first 64-id block whose maximum
 * beats every earlier block, then the first id in it. */
static int32_t argmax(const float *score, int32_t n)
{
    int32_t lo = 0, best_lo = 0;
    float best = -INFINITY;
    for (; lo + 64 <= n; lo += 64) {
        float m = block_max(score + lo);
        if (m > best)
            best = m, best_lo = lo;
    }
    for (int32_t i = lo; i < n; i++) {
        if (score[i] > best)
            best = score[i], best_lo = i;
    }
    for (int32_t i = best_lo; i < n; i++) {
        if (score[i] == best)
            return i;
    }
    return 0; /* all -inf */
}

/* ---- ordering: score descending, then id ascending ---- */

static inline bool better(float va, int32_t ia, float vb, int32_t ib)
{
    return va > vb || (va == vb && ia < ib);
}

static inline void swap_at(struct hy_sampler_scratch *sc, size_t a, size_t b)
{
    float tv = sc->val[a];
    int32_t ti = sc->id[a];
    double tw = sc->w[a];
    sc->val[a] = sc->val[b], sc->id[a] = sc->id[b], sc->w[a] = sc->w[b];
    sc->val[b] = tv, sc->id[b] = ti, sc->w[b] = tw;
}

#define BETTER(sc, a, b) better((sc)->val[a], (sc)->id[a], (sc)->val[b], (sc)->id[b])

/* A min-heap in val/id[0..n): the root is the worst kept candidate. */
static void sift_down(struct hy_sampler_scratch *sc, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && BETTER(sc, w, l))
            w = l;
        if (r < n && BETTER(sc, w, r))
            w = r;
        if (w == i)
            return;
        swap_at(sc, i, w);
        i = w;
    }
}

static void sift_up(struct hy_sampler_scratch *sc, size_t i)
{
    while (i > 0 && BETTER(sc, (i - 1) / 2, i)) {
        swap_at(sc, (i - 1) / 2, i);
        i = (i - 1) / 2;
    }
}

/* Sorts the heap best first (the root, the worst, goes to the end first). */
static void heap_sort(struct hy_sampler_scratch *sc, size_t n)
{
    for (size_t m = n; m > 1; m--) {
        swap_at(sc, 0, m - 1);
        sift_down(sc, m - 1, 0);
    }
}

/* ---- top-k ---- */

/* Whether any of the 64 scores at x is >= root (vectorized: most blocks are skipped). */
static inline bool any_at_least(const float *restrict x, float root)
{
    int r = 0;
    for (int j = 0; j < 64; j++)
        r |= x[j] >= root;
    return r != 0;
}

/* Offers ids [lo, hi) to the full heap of n; updates *root and *ties. */
static void offer(struct hy_sampler_scratch *sc, size_t n, int32_t lo, int32_t hi, float *root,
                  bool *ties)
{
    for (int32_t i = lo; i < hi; i++) {
        float x = sc->score[i];
        if (x > *root) {
            sc->val[0] = x, sc->id[0] = i;
            sift_down(sc, n, 0);
            *ties |= sc->val[0] == *root;
            *root = sc->val[0];
        } else {
            *ties |= x == *root;
        }
    }
}

/* Puts the k best scores into val/id, best first; returns min(k, V). *maybe_ties is
 * set when an id left out may equal the k-th score: it was rejected while equal to the
 * root, or evicted when the new root equalled it; otherwise no tie exists. */
static size_t select_top(struct hy_sampler_scratch *sc, int32_t n_vocab, size_t k, bool *maybe_ties)
{
    size_t n = 0;
    int32_t i = 0;
    bool ties = false;
    for (; i < n_vocab && n < k; i++) {
        sc->val[n] = sc->score[i], sc->id[n] = i;
        sift_up(sc, n++);
    }
    float root = sc->val[0];
    for (; i + 64 <= n_vocab; i += 64) {
        if (any_at_least(sc->score + i, root))
            offer(sc, n, i, i + 64, &root, &ties);
    }
    offer(sc, n, i, n_vocab, &root, &ties);
    heap_sort(sc, n);
    *maybe_ties = ties;
    return n;
}

/* Appends the ids after the last kept one whose score equals the last kept score. */
static size_t add_ties(struct hy_sampler_scratch *sc, int32_t n_vocab, size_t n)
{
    float t = sc->val[n - 1];
    for (int32_t i = sc->id[n - 1] + 1; i < n_vocab; i++) {
        if (sc->score[i] == t)
            sc->val[n] = t, sc->id[n++] = i;
    }
    return n;
}

/* ---- top-p ---- */

static void weigh(struct hy_sampler_scratch *sc, size_t n, double vmax)
{
    for (size_t j = 0; j < n; j++)
        sc->w[j] = exp((double)sc->val[j] - vmax);
}

static double mass(const double *w, size_t n)
{
    double z = 0;
    for (size_t j = 0; j < n; j++)
        z += w[j];
    return z;
}

/* Over candidates sorted best first: keeps j while the probability before it is < p. */
static size_t top_p_sorted(const double *w, size_t n, double z, double p)
{
    double cum = 0;
    size_t j = 0;
    for (; j < n; j++) {
        if (j > 0 && cum / z >= p)
            break;
        cum += w[j];
    }
    return j;
}

/* Moves a median-of-three pivot to hi - 1 and partitions [lo, hi - 1) into the ones
 * better than it, then the rest; returns the pivot's final index. */
static size_t partition(struct hy_sampler_scratch *sc, size_t lo, size_t hi)
{
    size_t mid = lo + (hi - lo) / 2, last = hi - 1;
    if (BETTER(sc, mid, lo))
        swap_at(sc, mid, lo);
    if (BETTER(sc, last, lo))
        swap_at(sc, last, lo);
    if (BETTER(sc, mid, last))
        swap_at(sc, mid, last); /* now lo >= last >= mid: the median is at last */
    size_t store = lo;
    for (size_t j = lo; j < last; j++) {
        if (BETTER(sc, j, last))
            swap_at(sc, store++, j);
    }
    swap_at(sc, store, last);
    return store;
}

/* Top-p over unsorted candidates [0, n) with total weight z: quickselect on mass. The
 * kept set is the smallest best-first prefix whose mass reaches p * z; it ends up in
 * [0, returned count), in no particular order. */
static size_t top_p_select(struct hy_sampler_scratch *sc, size_t n, double z, double p)
{
    double need = p * z, acc = 0; /* [0, lo) is kept and weighs acc < need */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t piv = partition(sc, lo, hi);
        double left = mass(sc->w + lo, piv - lo);
        if (acc + left >= need) {
            hi = piv; /* the cut falls among the ones better than the pivot */
        } else if (acc + left + sc->w[piv] >= need) {
            return piv + 1; /* the pivot is the last one kept */
        } else {
            acc += left + sc->w[piv];
            lo = piv + 1;
        }
    }
    return lo > 0 ? lo : 1;
}

/* ---- the pipeline ---- */

/* Over the c->n best candidates in val/id, sorted best first: weights and top-p. */
static void finish_top_k(const struct hy_sampler *s, struct hy_sampler_scratch *sc,
                         struct cands *c)
{
    c->vmax = sc->val[0];
    if (!isfinite(c->vmax))
        return;
    weigh(sc, c->n, c->vmax);
    if (s->p.top_p < 1)
        c->n = top_p_sorted(sc->w, c->n, mass(sc->w, c->n), s->p.top_p);
}

static void build_top_k(const struct hy_sampler *s, struct hy_sampler_scratch *sc, struct cands *c)
{
    bool ties;
    c->n = select_top(sc, s->n_vocab, (size_t)s->p.top_k, &ties);
    if (ties)
        c->n = add_ties(sc, s->n_vocab, c->n);
    finish_top_k(s, sc, c);
}

static void build_all(const struct hy_sampler *s, struct hy_sampler_scratch *sc, struct cands *c)
{
    c->n = (size_t)s->n_vocab;
    c->vmax = -INFINITY;
    for (int32_t i = 0; i < s->n_vocab; i++) {
        sc->val[i] = sc->score[i], sc->id[i] = i;
        c->vmax = fmax(c->vmax, sc->score[i]);
    }
    if (!isfinite(c->vmax))
        return;
    weigh(sc, c->n, c->vmax);
    if (s->p.top_p < 1)
        c->n = top_p_select(sc, c->n, mass(sc->w, c->n), s->p.top_p);
}

/* Applies every transform: the kept candidates and their weights end up in sc. */
static void build(const struct hy_sampler *s, struct hy_sampler_scratch *sc, const float *logits,
                  struct cands *c)
{
    const struct hy_sampler_params *p = &s->p;
    HY_ASSERT(sc->n_vocab >= s->n_vocab);
    memset(c, 0, sizeof *c);
    compute_scores(s, logits, p->temperature > 0 ? p->temperature : 1.0f, sc->score);
    if (p->temperature > 0 && p->top_k > 0 && p->top_k < s->n_vocab)
        build_top_k(s, sc, c);
    else if (p->temperature > 0)
        build_all(s, sc, c);
    /* Greedy, and the degenerate cases without a finite maximum (all -inf, or +inf
     * logits), where softmax is undefined: the first largest score. */
    if (p->temperature == 0 || !isfinite(c->vmax)) {
        c->n = 1;
        sc->id[0] = argmax(sc->score, s->n_vocab);
        sc->val[0] = 0, sc->w[0] = 1, c->vmax = 0;
    }
    c->z = mass(sc->w, c->n);
}

/* A draw from the kept candidates (no randomness for a single one). */
static int32_t draw(struct hy_sampler *s, const struct hy_sampler_scratch *sc,
                    const struct cands *c0)
{
    const struct cands c = *c0;
    if (c.n == 1)
        return sc->id[0];
    double target = rng_uniform(s->rng) * c.z, cum = 0;
    size_t last = 0; /* the last one with weight, for a target rounded up to z */
    for (size_t j = 0; j < c.n; j++) {
        if (sc->w[j] <= 0)
            continue;
        cum += sc->w[j];
        last = j;
        if (cum > target)
            return sc->id[j];
    }
    return sc->id[last];
}

int32_t hy_sampler_sample(struct hy_sampler *s, struct hy_sampler_scratch *sc, const float *logits)
{
    struct cands c;
    build(s, sc, logits, &c);
    return draw(s, sc, &c);
}

/* The score compute_scores gives id with logit x (NaN already -inf). */
static float cand_score(const struct hy_sampler *s, float x, int32_t id, float t)
{
    if (x != x)
        return -INFINITY;
    if ((s->seen[id >> 6] >> (id & 63)) & 1)
        return (x < 0 ? x * s->p.repetition_penalty : x / s->p.repetition_penalty) / t;
    return t == 1.0f ? x : x / t;
}

/* Every id outside the k candidates has a logit <= the last candidate's, and a penalty
 * >= 1 only lowers scores, so no outside id scores above `bound`, the last candidate's
 * unpenalized score. A choice whose cut-off score is strictly above bound is then the
 * whole vocabulary's choice, made by the same arithmetic in the same order. */
bool hy_sampler_sample_cands(struct hy_sampler *s, struct hy_sampler_scratch *sc,
                             const struct hy_cand *cand, int k, int32_t *out)
{
    const struct hy_sampler_params *p = &s->p;
    const bool greedy = p->temperature == 0;
    const float t = greedy ? 1.0f : p->temperature;
    if (k < 1 || k > sc->n_vocab || p->repetition_penalty < 1)
        return false;
    if (!greedy && (p->top_k <= 0 || p->top_k >= s->n_vocab || p->top_k > k))
        return false; /* needs the whole vocabulary */
    const float last = cand[k - 1].val;
    if (!isfinite(last))
        return false;
    const float bound = t == 1.0f ? last : last / t;
    for (int j = 0; j < k; j++) { /* insertion sort by score, then id */
        HY_ASSERT(cand[j].id >= 0 && cand[j].id < s->n_vocab);
        float v = cand_score(s, cand[j].val, cand[j].id, t);
        int i = j;
        for (; i > 0 && better(v, cand[j].id, sc->val[i - 1], sc->id[i - 1]); i--)
            sc->val[i] = sc->val[i - 1], sc->id[i] = sc->id[i - 1];
        sc->val[i] = v, sc->id[i] = cand[j].id;
    }
    struct cands c = {0};
    if (greedy) {
        if (!(sc->val[0] > bound))
            return false;
        *out = sc->id[0];
        return true;
    }
    c.n = (size_t)p->top_k;
    const float cut = sc->val[c.n - 1];
    if (!(cut > bound))
        return false;
    while (c.n < (size_t)k && sc->val[c.n] == cut) /* ties at the k-th score are kept */
        c.n++;
    finish_top_k(s, sc, &c);
    if (!isfinite(c.vmax))
        return false;
    c.z = mass(sc->w, c.n);
    *out = draw(s, sc, &c);
    return true;
}

void hy_sampler_dist(const struct hy_sampler *s, struct hy_sampler_scratch *sc, const float *logits,
                     double *probs)
{
    struct cands c;
    build(s, sc, logits, &c);
    memset(probs, 0, (size_t)s->n_vocab * sizeof *probs);
    for (size_t j = 0; j < c.n; j++)
        probs[sc->id[j]] = sc->w[j] / c.z;
}
