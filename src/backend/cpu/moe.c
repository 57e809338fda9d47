/* moe.c: routing, grouping and combining for a mixture-of-experts layer (moe.h). */
#include "backend/cpu/moe.h"

#include "core/status.h"

#include <math.h>
#include <stdbool.h>

/* a beats b: larger score, NaN below everything, equal scores to the lower index */
static bool beats(float a, int ia, float b, int ib)
{
    if (isnan(a) || isnan(b))
        return !isnan(a) && isnan(b) ? true : isnan(a) && isnan(b) && ia < ib;
    return a > b || (a == b && ia < ib);
}

/* One token: insertion into the k best so far (k is small: 8 for Hy-MT2). */
static void route_one(const float *logit, const float *bias, int E, int k, float scale,
                      int32_t *ids, float *w)
{
    float best[64 + 1];
    int n = 0;
    HY_ASSERT(k <= 64);
    for (int e = 0; e < E; e++) {
        float s = 1.0f / (1.0f + expf(-logit[e]));
        float c = bias ? s + bias[e] : s;
        if (n == k && !beats(c, e, best[k - 1], ids[k - 1]))
            continue;
        int j = n < k ? n++ : k - 1;
        while (j > 0 && beats(c, e, best[j - 1], ids[j - 1])) {
            best[j] = best[j - 1];
            ids[j] = ids[j - 1];
            j--;
        }
        best[j] = c;
        ids[j] = e;
    }
    float sum = 0;
    for (int j = 0; j < k; j++) {
        w[j] = 1.0f / (1.0f + expf(-logit[ids[j]])); /* the unbiased score */
        sum += w[j];
    }
    for (int j = 0; j < k; j++)
        w[j] = w[j] / (sum + 1e-20f) * scale;
}

void hy_moe_route(const float *logits, const float *bias, int T, int E, int k, float scale,
                  int32_t *ids, float *w)
{
    HY_ASSERT(T >= 0 && k >= 1 && k <= E);
    for (int t = 0; t < T; t++)
        route_one(logits + (int64_t)t * E, bias, E, k, scale, ids + (int64_t)t * k,
                  w + (int64_t)t * k);
}

/* off[e] = the first place of expert e (off[E] = n): a count per expert, then sums. */
static void count_offsets(const int32_t *ids, int64_t n, int E, int32_t *off)
{
    for (int e = 0; e <= E; e++)
        off[e] = 0;
    for (int64_t i = 0; i < n; i++) {
        HY_ASSERT(ids[i] >= 0 && ids[i] < E);
        off[ids[i] + 1]++;
    }
    for (int e = 0; e < E; e++)
        off[e + 1] += off[e];
}

/* After filling, off[e] is where expert e's places end: back to where they begin. */
static void shift_back(int32_t *off, int E)
{
    for (int e = E; e > 0; e--)
        off[e] = off[e - 1];
    off[0] = 0;
}

void hy_moe_group(const int32_t *ids, const float *w, int T, int k, int E, int32_t *off,
                  int32_t *rows, float *rw)
{
    count_offsets(ids, (int64_t)T * k, E, off);
    /* off[e] is the next free place of expert e while filling; shifted back after */
    for (int t = 0; t < T; t++)
        for (int j = 0; j < k; j++) {
            int e = ids[(int64_t)t * k + j];
            rows[off[e]] = t;
            rw[off[e]++] = w[(int64_t)t * k + j];
        }
    shift_back(off, E);
}

void hy_moe_plan(const int32_t *ids, int T, int k, int E, int32_t *off, int32_t *rows,
                 int32_t *sel, int32_t *act)
{
    count_offsets(ids, (int64_t)T * k, E, off);
    for (int t = 0; t < T; t++) /* off[e]: the next free place of e, as hy_moe_group */
        for (int j = 0; j < k; j++) {
            int e = ids[(int64_t)t * k + j];
            rows[off[e]] = t;
            sel[(int64_t)t * k + j] = off[e]++;
        }
    shift_back(off, E);
    act[0] = 0;
    for (int e = 0; e < E; e++)
        if (off[e + 1] > off[e])
            act[1 + act[0]++] = e;
}

void hy_moe_combine(float *out, const float *y, const int32_t *rows, const float *rw, int n,
                    int64_t d)
{
    for (int i = 0; i < n; i++) {
        float *o = out + (int64_t)rows[i] * d;
        const float *yi = y + (int64_t)i * d;
        for (int64_t c = 0; c < d; c++)
            o[c] += rw[i] * yi[c];
    }
}
