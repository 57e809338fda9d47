/* attention.c: causal GQA attention on the thread pool.
 * Work items are (head, token) pairs numbered head-major (i = h*T + t), so a thread's
 * contiguous range covers whole heads: every thread gets the same mix of short (early) and
 * long (late) causal rows, and the K/V rows of one KV head stay hot in its cache.
 * Each pair runs a one-pass ("online") softmax over blocks of keys: scores for a block,
 * then the running maximum, denominator and weighted sum of V are rescaled to the block's
 * new maximum. The scratch (one block of scores, one head of accumulators) is on the
 * stack, so no buffer sized by the context length is needed. */
#include "backend/cpu/cpu_impl.h"

#include <math.h>

#define KEY_BLOCK 64

struct attn_job {
    const struct hy_cpu_kernels *k;
    float *out;
    const float *q, *kc, *vc;
    int pos0, T, n_head, n_kv, hd;
    float scale;
};

/* One query row q against keys/values 0..n-1 (rows `stride` floats apart). */
static void attend(const struct hy_cpu_kernels *k, float *out, const float *q, const float *kb,
                   const float *vb, int64_t stride, int n, int hd, float scale)
{
    float acc[HY_CPU_MAX_HEAD_DIM];
    float s[KEY_BLOCK];
    float max = -INFINITY, sum = 0.0f;
    for (int i = 0; i < hd; i++)
        acc[i] = 0.0f;
    for (int j0 = 0; j0 < n; j0 += KEY_BLOCK) {
        int nb = n - j0 < KEY_BLOCK ? n - j0 : KEY_BLOCK;
        k->scores(s, q, kb + (int64_t)j0 * stride, stride, nb, hd, scale);
        float bmax = max;
        for (int j = 0; j < nb; j++)
            bmax = s[j] > bmax ? s[j] : bmax;
        float c = expf(max - bmax); /* rescales what was summed so far; 0 on the first block */
        max = bmax;
        float bsum = 0.0f;
        for (int j = 0; j < nb; j++) {
            s[j] = expf(s[j] - max);
            bsum += s[j];
        }
        sum = sum * c + bsum;
        k->accum(acc, c, s, vb + (int64_t)j0 * stride, stride, nb, hd);
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < hd; i++)
        out[i] = acc[i] * inv;
}

static void attn_range(void *ctx, int64_t i0, int64_t i1, int tid)
{
    const struct attn_job *a = ctx;
    (void)tid;
    int group = a->n_head / a->n_kv;
    int64_t stride = (int64_t)a->n_kv * a->hd;
    for (int64_t i = i0; i < i1; i++) {
        int h = (int)(i / a->T), t = (int)(i % a->T);
        int64_t qo = ((int64_t)t * a->n_head + h) * a->hd;
        int64_t ko = (int64_t)(h / group) * a->hd;
        attend(a->k, a->out + qo, a->q + qo, a->kc + ko, a->vc + ko, stride, a->pos0 + t + 1,
               a->hd, a->scale);
    }
}

void hy_cpu_attention(struct hy_cpu_ctx *c, float *out, const float *q, const float *kc,
                      const float *vc, int pos0, int T, int n_head, int n_kv, int hd, float scale)
{
    HY_ASSERT(n_kv > 0 && n_head % n_kv == 0 && pos0 >= 0 && T >= 0);
    HY_ASSERT(hd > 0 && hd <= HY_CPU_MAX_HEAD_DIM);
    struct attn_job a = {&c->k, out, q, kc, vc, pos0, T, n_head, n_kv, hd, scale};
    hy_pool_for(c->pool, (int64_t)n_head * T, 1, attn_range, &a);
}
