/* logprob.c: log-softmax of a logits row and its best entries (logprob.h). */
#include "engine/logprob.h"

#include <math.h>

/* NaN as -inf, so that a broken logit never ranks or sums. */
static float clean(float x)
{
    return isnan(x) ? -INFINITY : x;
}

/* a before b: higher value, then lower id. */
static int better(float va, int32_t ia, float vb, int32_t ib)
{
    return va > vb || (va == vb && ia < ib);
}

/* x - lse; a row whose maximum is not finite has no softmax: then +inf entries get 0 and
 * everything else -inf (never NaN). */
static float log_prob(float x, float vmax, double lse)
{
    if (isfinite(vmax))
        return (float)((double)x - lse);
    return vmax > 0 && x == vmax ? 0.0f : -INFINITY;
}

void hy_logprob_compute(const float *logits, int32_t n_vocab, int32_t chosen, int n_top,
                        struct hy_logprob *out)
{
    if (n_top < 0)
        n_top = 0;
    if (n_top > HY_LOGPROB_MAX_TOP)
        n_top = HY_LOGPROB_MAX_TOP;
    if (n_top > n_vocab)
        n_top = n_vocab;
    float vmax = -INFINITY;
    for (int32_t i = 0; i < n_vocab; i++) {
        float x = clean(logits[i]);
        vmax = x > vmax ? x : vmax;
    }
    /* insertion into the kept n_top (sorted best first); most ids fail the first test */
    int n = 0;
    for (int32_t i = 0; i < n_vocab && n_top > 0; i++) {
        float x = clean(logits[i]);
        if (n == n_top && !better(x, i, out->top[n - 1].logprob, out->top[n - 1].id))
            continue;
        int j = n < n_top ? n++ : n - 1;
        for (; j > 0 && better(x, i, out->top[j - 1].logprob, out->top[j - 1].id); j--)
            out->top[j] = out->top[j - 1];
        out->top[j] = (struct hy_logprob_alt){i, x};
    }
    double sum = 0;
    if (isfinite(vmax))
        for (int32_t i = 0; i < n_vocab; i++)
            sum += exp((double)clean(logits[i]) - (double)vmax);
    const double lse = (double)vmax + log(sum);
    for (int j = 0; j < n; j++)
        out->top[j].logprob = log_prob(out->top[j].logprob, vmax, lse);
    out->n_top = n;
    out->id = chosen;
    out->logprob = log_prob(clean(logits[chosen]), vmax, lse);
}
