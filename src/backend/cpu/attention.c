/* attention.c: causal GQA attention on the thread pool.
 * Work items are (head, batch row) pairs numbered head-major (i = h*rows + r), so a
 * thread's contiguous range covers whole heads: every thread gets the same mix of short
 * (early) and long (late) causal rows, and the K/V rows of one KV head stay hot in its
 * cache. K/V are read through each sequence's block table (paged pool).
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
    const float *q, *kp, *vp;
    int bs;
    const struct hy_attn_seq *seqs;
    int n_seqs, rows, n_head, n_kv, hd;
    float scale;
};

/* One query row q against positions 0..n-1 of one KV head, found through the block table
 * (kb, vb are the pools offset to the head; pool rows `stride` floats apart). Keys are
 * taken in runs that stay inside one KV block, at most KEY_BLOCK at a time. */
static void attend(const struct hy_cpu_kernels *k, float *out, const float *q, const float *kb,
                   const float *vb, int64_t stride, const int32_t *blocks, int bs, int n, int hd,
                   float scale)
{
    float acc[HY_CPU_MAX_HEAD_DIM];
    float s[KEY_BLOCK];
    float max = -INFINITY, sum = 0.0f;
    for (int i = 0; i < hd; i++)
        acc[i] = 0.0f;
    for (int j0 = 0; j0 < n;) {
        int off = j0 % bs, nb = bs - off;
        nb = nb < KEY_BLOCK ? nb : KEY_BLOCK;
        nb = nb < n - j0 ? nb : n - j0;
        int64_t row = (int64_t)blocks[j0 / bs] * bs + off;
        k->scores(s, q, kb + row * stride, stride, nb, hd, scale);
        float bmax = max;
        for (int j = 0; j < nb; j++)
            bmax = s[j] > bmax ? s[j] : bmax;
        float c = expf(max - bmax); /* rescales what was summed so far; 0 on the first run */
        max = bmax;
        float bsum = 0.0f;
        for (int j = 0; j < nb; j++) {
            s[j] = expf(s[j] - max);
            bsum += s[j];
        }
        sum = sum * c + bsum;
        k->accum(acc, c, s, vb + row * stride, stride, nb, hd);
        j0 += nb;
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < hd; i++)
        out[i] = acc[i] * inv;
}

/* The sequence owning batch row r (seqs are packed in row order). */
static const struct hy_attn_seq *seq_of(const struct attn_job *a, int r)
{
    int lo = 0, hi = a->n_seqs - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (a->seqs[mid].row <= r)
            lo = mid;
        else
            hi = mid - 1;
    }
    return &a->seqs[lo];
}

static void attn_range(void *ctx, int64_t i0, int64_t i1, int tid)
{
    const struct attn_job *a = ctx;
    (void)tid;
    int group = a->n_head / a->n_kv;
    int64_t stride = (int64_t)a->n_kv * a->hd;
    for (int64_t i = i0; i < i1; i++) {
        int h = (int)(i / a->rows), r = (int)(i % a->rows);
        const struct hy_attn_seq *sq = seq_of(a, r);
        int t = r - sq->row;
        int64_t qo = ((int64_t)r * a->n_head + h) * a->hd;
        int64_t ko = (int64_t)(h / group) * a->hd;
        attend(a->k, a->out + qo, a->q + qo, a->kp + ko, a->vp + ko, stride, sq->blocks, a->bs,
               sq->pos0 + t + 1, a->hd, a->scale);
    }
}

void hy_cpu_attention(struct hy_cpu_ctx *c, float *out, const float *q, const float *k_pool,
                      const float *v_pool, int bs, const struct hy_attn_seq *seqs, int n_seqs,
                      int n_head, int n_kv, int hd, float scale)
{
    HY_ASSERT(n_kv > 0 && n_head % n_kv == 0 && bs > 0 && n_seqs >= 0);
    HY_ASSERT(hd > 0 && hd <= HY_CPU_MAX_HEAD_DIM);
    int rows = 0;
    for (int i = 0; i < n_seqs; i++) { /* packed: each sequence's rows follow the previous */
        HY_ASSERT(seqs[i].row == rows && seqs[i].n_tokens >= 0 && seqs[i].pos0 >= 0);
        rows += seqs[i].n_tokens;
    }
    struct attn_job a = {&c->k, out, q, k_pool, v_pool, bs, seqs, n_seqs, rows, n_head, n_kv,
                         hd, scale};
    hy_pool_for(c->pool, (int64_t)n_head * rows, 1, attn_range, &a);
}
