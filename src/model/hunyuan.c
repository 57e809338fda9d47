/* hunyuan.c: the HunYuanDenseV1 forward pass (model doc 3.1), one step per line, batched
 * over sequences with K/V in a paged pool; hy_v3 runs it too, with QK-norm before RoPE and
 * its mixture-of-experts block in the sparse layers (hy_v3.h).
 * Shapes: T tokens in the step, d = hidden, hd = head_dim, H = query heads, Hkv = KV heads,
 * F = ffn, kvd = Hkv*hd. */
#include "model/hunyuan.h"
#include "model/hy_v3.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct step {
    const struct hy_model *m;
    struct hy_backend *be;
    struct hy_kvstore *kv;
    struct hy_scratch *s;
    int T, n_seqs;
    /* Each block's residual add is fused into the next block's RMSNorm (add_rmsnorm):
     * the blocks then leave x += h pending. Off without the op, and with a dump hook
     * (which sees x after every layer). */
    bool fuse;
};

/* h = RMSNorm(x) * w, after x += h when a block left its residual add pending. */
static void norm_in(const struct step *st, const struct hy_weight *w, bool pending)
{
    const struct hy_config *cf = &st->m->cfg;
    struct hy_scratch *s = st->s;
    const int d = (int)cf->hidden_size;
    if (pending)
        st->be->i->add_rmsnorm(st->be, s->h, s->x, s->h, w, st->T, d, (float)cf->rms_norm_eps);
    else
        st->be->i->rmsnorm(st->be, s->h, s->x, w, st->T, d, (float)cf->rms_norm_eps);
}

static void dump(const struct step *st, const char *name, int layer, const float *x, int64_t rows,
                 int64_t cols)
{
    if (st->s->dump)
        st->s->dump(st->s->dump_ctx, name, layer, x, rows, cols);
}

/* RoPE on q and k, then (HunYuan quirk) QK-norm after RoPE, per head over hd values,
 * then K and V rows into the paged pool; in one op when the backend has it. hy_v3 norms
 * first, then rotates (cfg.qk_norm_before_rope; the op's norm_first). */
static void rope_norm_store(const struct step *st, int il)
{
    const struct hy_config *cf = &st->m->cfg;
    const struct hy_layer_weights *l = &st->m->layers[il];
    const struct hy_backend_i *op = st->be->i;
    struct hy_backend *be = st->be;
    struct hy_scratch *s = st->s;
    const int T = st->T, hd = (int)cf->head_dim;
    const int H = (int)cf->num_attention_heads, Hkv = (int)cf->num_key_value_heads;
    const float eps = (float)cf->rms_norm_eps;
    if (st->fuse && op->rope_norm_store) { /* hy_v3 norms always (below) */
        const bool qk = cf->use_qk_norm || cf->qk_norm_before_rope;
        op->rope_norm_store(be, s->q, s->k, s->v, s->pos, s->slots, T, H, Hkv, hd,
                            st->m->inv_freq, qk ? &l->q_norm : NULL, qk ? &l->k_norm : NULL,
                            eps, cf->qk_norm_before_rope, st->kv->k[il], st->kv->v[il]);
        return;
    }
    if (cf->qk_norm_before_rope) {
        op->rmsnorm(be, s->q, s->q, &l->q_norm, (int64_t)T * H, hd, eps);
        op->rmsnorm(be, s->k, s->k, &l->k_norm, (int64_t)T * Hkv, hd, eps);
        dump(st, "q_norm", il, s->q, T, (int64_t)H * hd);
        op->rope(be, s->q, s->pos, T, H, hd, st->m->inv_freq);
        op->rope(be, s->k, s->pos, T, Hkv, hd, st->m->inv_freq);
        dump(st, "q_rope", il, s->q, T, (int64_t)H * hd);
        op->kv_store(be, st->kv->k[il], s->k, s->slots, T, st->kv->kvd);
        op->kv_store(be, st->kv->v[il], s->v, s->slots, T, st->kv->kvd);
        return;
    }
    op->rope(be, s->q, s->pos, T, H, hd, st->m->inv_freq);
    op->rope(be, s->k, s->pos, T, Hkv, hd, st->m->inv_freq);
    dump(st, "q_rope", il, s->q, T, (int64_t)H * hd);
    if (cf->use_qk_norm) {
        op->rmsnorm(be, s->q, s->q, &l->q_norm, (int64_t)T * H, hd, eps);
        op->rmsnorm(be, s->k, s->k, &l->k_norm, (int64_t)T * Hkv, hd, eps);
    }
    dump(st, "q_norm", il, s->q, T, (int64_t)H * hd);
    dump(st, "k_norm", il, s->k, T, (int64_t)Hkv * hd);
    op->kv_store(be, st->kv->k[il], s->k, s->slots, T, st->kv->kvd);
    op->kv_store(be, st->kv->v[il], s->v, s->slots, T, st->kv->kvd);
}

/* Attention block: x += o_proj(attn(qknorm(rope(q)), qknorm(rope(k)) -> pool, v -> pool)). */
static void attn_block(const struct step *st, int il)
{
    const struct hy_config *cf = &st->m->cfg;
    const struct hy_layer_weights *l = &st->m->layers[il];
    const struct hy_backend_i *op = st->be->i;
    struct hy_backend *be = st->be;
    struct hy_scratch *s = st->s;
    const int T = st->T, d = (int)cf->hidden_size, hd = (int)cf->head_dim;
    const int H = (int)cf->num_attention_heads, Hkv = (int)cf->num_key_value_heads;

    norm_in(st, &l->attn_norm, st->fuse && il > 0);
    dump(st, "attn_norm", il, s->h, T, d);
    if (op->matmul_n) { /* one product where the backend fused the three (weight_fuse) */
        float *outs[3] = {s->q, s->k, s->v};
        const struct hy_weight *ws[3] = {&l->wq, &l->wk, &l->wv};
        op->matmul_n(be, outs, s->h, ws, 3, T);
    } else {
        op->matmul(be, s->q, s->h, &l->wq, T); /* [T, H*hd] */
        op->matmul(be, s->k, s->h, &l->wk, T); /* [T, Hkv*hd] */
        op->matmul(be, s->v, s->h, &l->wv, T); /* [T, Hkv*hd] */
    }
    rope_norm_store(st, il);
    op->attention(be, s->att, s->q, st->kv->k[il], st->kv->v[il], st->kv->block_size, s->aseqs,
                  st->n_seqs, H, Hkv, hd, 1.0f / sqrtf((float)hd));
    dump(st, "attn", il, s->att, T, (int64_t)H * hd);
    op->matmul(be, s->h, s->att, &l->wo, T); /* [T, d] */
    dump(st, "attn_out", il, s->h, T, d);
    if (!st->fuse)
        op->add(be, s->x, s->h, (int64_t)T * d);
}

/* MLP block: x += down(silu(gate(h)) * up(h)), h = RMSNorm(x). */
static void ffn_block(const struct step *st, int il)
{
    const struct hy_config *cf = &st->m->cfg;
    const struct hy_layer_weights *l = &st->m->layers[il];
    const struct hy_backend_i *op = st->be->i;
    struct hy_backend *be = st->be;
    struct hy_scratch *s = st->s;
    const int T = st->T, d = (int)cf->hidden_size;
    const int64_t F = cf->intermediate_size;

    norm_in(st, &l->ffn_norm, st->fuse);
    if (l->moe) {
        hy_v3_moe_block(st->m, s, il, T); /* [T, d] */
    } else {
        if (op->matmul_glu) {
            op->matmul_glu(be, s->gate, s->up, s->h, &l->w_gate, &l->w_up, T);
        } else {
            op->matmul(be, s->gate, s->h, &l->w_gate, T); /* [T, F] */
            op->matmul(be, s->up, s->h, &l->w_up, T);     /* [T, F] */
            op->silu_mul(be, s->gate, s->gate, s->up, (int64_t)T * F);
        }
        op->matmul(be, s->h, s->gate, &l->w_down, T); /* [T, d] */
    }
    dump(st, "ffn_out", il, s->h, T, d);
    if (!st->fuse) {
        op->add(be, s->x, s->h, (int64_t)T * d);
        dump(st, "x", il, s->x, T, d);
    }
}

/* Checks the step and packs ids, positions, pool rows and logit rows into the scratch.
 * Returns the number of logit rows, or -1 (err set) with nothing else changed. */
static int pack(const struct step *st, const struct hy_batch_seq *seqs, struct hy_err *err)
{
    const struct hy_config *cf = &st->m->cfg;
    struct hy_scratch *s = st->s;
    const int bs = st->kv->block_size;
    int T = 0, n_out = 0, n_want = 0;
    if (st->n_seqs < 1 || st->n_seqs > s->max_seqs)
        return hy_err_set(err, HY_E_RANGE, "%d sequences in one step; the scratch takes 1..%d",
                          st->n_seqs, s->max_seqs), -1;
    for (int i = 0; i < st->n_seqs; i++) {
        const struct hy_batch_seq *q = &seqs[i];
        if (q->n_tokens < 1 || q->n_logits < 0 || q->n_logits > q->n_tokens || q->pos0 < 0 ||
            T + q->n_tokens > s->max_tokens)
            return hy_err_set(err, HY_E_RANGE, "step of more than %d tokens, or sequence %d has "
                              "%d tokens, %d logits at position %d", s->max_tokens, i,
                              q->n_tokens, q->n_logits, q->pos0), -1;
        for (int t = 0; t < q->n_tokens; t++)
            if (q->ids[t] < 0 || q->ids[t] >= cf->vocab_size)
                return hy_err_set(err, HY_E_RANGE, "token id %d out of the vocabulary (0..%lld)",
                                  q->ids[t], (long long)cf->vocab_size - 1), -1;
        T += q->n_tokens;
        n_want += q->n_logits;
    }
    if (n_want > s->max_logits)
        return hy_err_set(err, HY_E_RANGE, "%d logit rows in one step; the scratch holds %d",
                          n_want, s->max_logits), -1;
    T = 0;
    for (int i = 0; i < st->n_seqs; i++) {
        const struct hy_batch_seq *q = &seqs[i];
        s->aseqs[i] = (struct hy_attn_seq){T, q->n_tokens, q->pos0, q->blocks};
        for (int t = 0; t < q->n_tokens; t++, T++) {
            int p = q->pos0 + t;
            s->ids[T] = q->ids[t];
            s->pos[T] = p;
            s->slots[T] = q->blocks[p / bs] * bs + p % bs;
            if (t >= q->n_tokens - q->n_logits)
                s->rows[n_out++] = T;
        }
    }
    return n_out;
}

/* Everything of a step but getting the logits out: the layers, then the final norm and
 * the head over the wanted rows into s->logits. Returns the number of logit rows, or -1
 * (err set, nothing changed). With key > 0 the ops run as one recorded step (step_begin /
 * step_end), the head's candidates included when cand_k > 0; cand_k < 0 skips the head. */
static int run_step(const struct hy_model *m, struct hy_kvstore *kv, struct hy_scratch *s,
                    const struct hy_batch_seq *seqs, int n_seqs, int key, int cand_k,
                    struct hy_err *err)
{
    struct step st = {m, m->be, kv, s, 0, n_seqs, m->be->i->add_rmsnorm && !s->dump};
    int n_out = pack(&st, seqs, err);
    if (n_out < 0)
        return -1;
    for (int i = 0; i < n_seqs; i++)
        st.T += seqs[i].n_tokens;
    const struct hy_config *cf = &m->cfg;
    const struct hy_backend_i *op = m->be->i;
    const int d = (int)cf->hidden_size;
    bool recorded = key > 0 && op->step_begin(m->be, s, key, s->graph_max_blocks);

    op->embed(m->be, s->x, &m->tok_embd, s->ids, st.T); /* [T, d], no embedding scale */
    dump(&st, "embd", -1, s->x, st.T, d);
    for (int il = 0; il < cf->num_hidden_layers; il++) {
        attn_block(&st, il);
        ffn_block(&st, il);
    }
    if (st.fuse) /* the last layer's residual */
        op->add(m->be, s->x, s->h, (int64_t)st.T * d);
    if (n_out > 0 && cand_k >= 0) {
        /* final norm and head, only over the rows whose logits are wanted */
        op->copy_rows(m->be, s->h, s->x, s->rows, n_out, d);
        op->rmsnorm(m->be, s->h, s->h, &m->out_norm, n_out, d, (float)cf->rms_norm_eps);
        dump(&st, "out_norm", -1, s->h, n_out, d);
        op->matmul(m->be, s->logits, s->h, &m->lm_head, n_out); /* [n_out, vocab] */
        if (cand_k > 0)
            op->topk(m->be, s->cand, s->logits, n_out, cf->vocab_size, cand_k, s->topk_scratch);
    }
    if (recorded)
        op->step_end(m->be);
    return n_out;
}

hy_status hy_model_forward_batch(const struct hy_model *m, struct hy_kvstore *kv,
                                 struct hy_scratch *s, const struct hy_batch_seq *seqs, int n_seqs,
                                 float *logits, struct hy_err *err)
{
    int n_out = run_step(m, kv, s, seqs, n_seqs, 0, logits ? 0 : -1, err);
    if (n_out < 0)
        return HY_E_RANGE;
    if (n_out > 0 && logits)
        m->be->i->download(m->be, logits, s->logits,
                           (size_t)n_out * (size_t)m->cfg.vocab_size * sizeof(float));
    return HY_OK;
}

/* The key a step is recorded under, with s->pad_seqs holding it padded; 0 when it is not
 * a step to record (prefill tokens, no recording backend, a dump hook, too long a table). */
static int pad_for_recording(const struct hy_model *m, struct hy_kvstore *kv,
                             struct hy_scratch *s, const struct hy_batch_seq *seqs, int n_seqs)
{
    static const int32_t pad_id = 0;
    if (!m->be->i->step_begin || s->graph_max_blocks <= 0 || s->dump || n_seqs < 1 ||
        n_seqs > s->max_seqs || (s->graph_kv && s->graph_kv != kv))
        return 0;
    s->graph_kv = kv; /* recordings hold its pool's addresses: only ever this one */
    for (int i = 0; i < n_seqs; i++)
        if (seqs[i].n_tokens != 1 || seqs[i].n_logits != 1 || seqs[i].pos0 < 0 ||
            seqs[i].pos0 / kv->block_size >= s->graph_max_blocks)
            return 0;
    int P = 1;
    while (P < n_seqs)
        P <<= 1;
    if (P > s->max_seqs)
        P = s->max_seqs;
    memcpy(s->pad_seqs, seqs, (size_t)n_seqs * sizeof *seqs);
    for (int i = n_seqs; i < P; i++)
        s->pad_seqs[i] = (struct hy_batch_seq){&pad_id, 1, 0, kv->pad_table, 1};
    return P;
}

hy_status hy_model_forward_batch_topk(const struct hy_model *m, struct hy_kvstore *kv,
                                      struct hy_scratch *s, const struct hy_batch_seq *seqs,
                                      int n_seqs, struct hy_cand *cand, struct hy_err *err)
{
    HY_ASSERT(s->topk_k > 0 && s->cand);
    for (int i = 0; i < n_seqs; i++)
        if (seqs[i].n_logits > 1)
            return hy_err_set(err, HY_E_RANGE, "sequence %d wants %d logit rows; candidates "
                              "take at most 1 per sequence", i, seqs[i].n_logits);
    int n_real = 0;
    for (int i = 0; i < n_seqs; i++)
        n_real += seqs[i].n_logits;
    int key = pad_for_recording(m, kv, s, seqs, n_seqs);
    int n_out = key > 0 ? run_step(m, kv, s, s->pad_seqs, key, key, s->topk_k, err)
                        : run_step(m, kv, s, seqs, n_seqs, 0, s->topk_k, err);
    if (n_out < 0)
        return HY_E_RANGE;
    if (n_real > 0) /* the real rows come first; padding rows after them */
        m->be->i->download(m->be, cand, s->cand,
                           (size_t)n_real * (size_t)s->topk_k * sizeof *cand);
    return HY_OK;
}

void hy_model_logits_row(const struct hy_model *m, const struct hy_scratch *s, int row,
                         float *dst)
{
    HY_ASSERT(row >= 0 && row < s->max_logits);
    const size_t V = (size_t)m->cfg.vocab_size;
    m->be->i->download(m->be, dst, s->logits + (size_t)row * V, V * sizeof(float));
}
