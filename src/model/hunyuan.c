/* hunyuan.c: the HunYuanDenseV1 forward pass (model doc 3.1), one step per line.
 * Shapes: T tokens, d = hidden, hd = head_dim, H = query heads, Hkv = KV heads, F = ffn. */
#include "model/hunyuan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OPS(c) ((c)->m->be->i)
#define BE(c) ((c)->m->be)

static void dump(struct hy_ctx *c, const char *name, int layer, const float *x, int64_t rows,
                 int64_t cols)
{
    if (c->dump)
        c->dump(c->dump_ctx, name, layer, x, rows, cols);
}

/* Attention block: x += o_proj(attn(rope+qknorm(q, k), v)). K/V go straight into the cache. */
static void attn_block(struct hy_ctx *c, int il, int T)
{
    const struct hy_config *cf = &c->m->cfg;
    const struct hy_layer_weights *l = &c->m->layers[il];
    const int d = (int)cf->hidden_size, hd = (int)cf->head_dim;
    const int H = (int)cf->num_attention_heads, Hkv = (int)cf->num_key_value_heads;
    float *k = c->k_cache[il] + (size_t)c->pos * Hkv * hd; /* [T, Hkv*hd] rows of the cache */
    float *v = c->v_cache[il] + (size_t)c->pos * Hkv * hd;

    OPS(c)->rmsnorm(BE(c), c->h, c->x, &l->attn_norm, T, d, (float)cf->rms_norm_eps);
    dump(c, "attn_norm", il, c->h, T, d);
    OPS(c)->matmul(BE(c), c->q, c->h, &l->wq, T); /* [T, H*hd] */
    OPS(c)->matmul(BE(c), k, c->h, &l->wk, T);    /* [T, Hkv*hd] */
    OPS(c)->matmul(BE(c), v, c->h, &l->wv, T);    /* [T, Hkv*hd] */
    OPS(c)->rope(BE(c), c->q, c->pos_ids, T, H, hd, c->m->inv_freq);
    OPS(c)->rope(BE(c), k, c->pos_ids, T, Hkv, hd, c->m->inv_freq);
    dump(c, "q_rope", il, c->q, T, (int64_t)H * hd);
    /* HunYuan quirk: QK-norm comes after RoPE, per head over hd values */
    if (cf->use_qk_norm) {
        OPS(c)->rmsnorm(BE(c), c->q, c->q, &l->q_norm, (int64_t)T * H, hd, (float)cf->rms_norm_eps);
        OPS(c)->rmsnorm(BE(c), k, k, &l->k_norm, (int64_t)T * Hkv, hd, (float)cf->rms_norm_eps);
    }
    dump(c, "q_norm", il, c->q, T, (int64_t)H * hd);
    dump(c, "k_norm", il, k, T, (int64_t)Hkv * hd);
    OPS(c)->attention(BE(c), c->att, c->q, c->k_cache[il], c->v_cache[il], c->pos, T, H, Hkv, hd,
                      1.0f / sqrtf((float)hd));
    dump(c, "attn", il, c->att, T, (int64_t)H * hd);
    OPS(c)->matmul(BE(c), c->h, c->att, &l->wo, T); /* [T, d] */
    dump(c, "attn_out", il, c->h, T, d);
    OPS(c)->add(BE(c), c->x, c->h, (int64_t)T * d);
}

/* MLP block: x += down(silu(gate(h)) * up(h)), h = RMSNorm(x). */
static void ffn_block(struct hy_ctx *c, int il, int T)
{
    const struct hy_config *cf = &c->m->cfg;
    const struct hy_layer_weights *l = &c->m->layers[il];
    const int d = (int)cf->hidden_size;
    const int64_t F = cf->intermediate_size;

    OPS(c)->rmsnorm(BE(c), c->h, c->x, &l->ffn_norm, T, d, (float)cf->rms_norm_eps);
    OPS(c)->matmul(BE(c), c->gate, c->h, &l->w_gate, T); /* [T, F] */
    OPS(c)->matmul(BE(c), c->up, c->h, &l->w_up, T);     /* [T, F] */
    OPS(c)->silu_mul(BE(c), c->gate, c->gate, c->up, (int64_t)T * F);
    OPS(c)->matmul(BE(c), c->h, c->gate, &l->w_down, T); /* [T, d] */
    dump(c, "ffn_out", il, c->h, T, d);
    OPS(c)->add(BE(c), c->x, c->h, (int64_t)T * d);
    dump(c, "x", il, c->x, T, d);
}

hy_status hy_model_forward(struct hy_ctx *c, const int32_t *ids, int T, bool all_logits,
                           float *logits, struct hy_err *err)
{
    const struct hy_model *m = c->m;
    const struct hy_config *cf = &m->cfg;
    if (T < 1 || T > c->max_tokens)
        return hy_err_set(err, HY_E_RANGE, "%d tokens in one call; this context takes 1..%d", T,
                          c->max_tokens);
    if (c->pos + T > c->n_ctx)
        return hy_err_set(err, HY_E_RANGE, "context full: %d cached + %d new > %d tokens", c->pos,
                          T, c->n_ctx);
    for (int t = 0; t < T; t++) {
        if (ids[t] < 0 || ids[t] >= cf->vocab_size)
            return hy_err_set(err, HY_E_RANGE, "token id %d out of the vocabulary (0..%lld)",
                              ids[t], (long long)cf->vocab_size - 1);
        c->pos_ids[t] = c->pos + t;
    }
    const int d = (int)cf->hidden_size;

    OPS(c)->embed(BE(c), c->x, &m->tok_embd, ids, T); /* [T, d], no embedding scale */
    dump(c, "embd", -1, c->x, T, d);
    for (int il = 0; il < cf->num_hidden_layers; il++) {
        attn_block(c, il, T);
        ffn_block(c, il, T);
    }
    c->pos += T;
    if (!logits)
        return HY_OK;
    /* final norm and head, only over the rows whose logits are wanted */
    int rows = all_logits ? T : 1;
    const float *xin = c->x + (size_t)(T - rows) * d;
    OPS(c)->rmsnorm(BE(c), c->h, xin, &m->out_norm, rows, d, (float)cf->rms_norm_eps);
    dump(c, "out_norm", -1, c->h, rows, d);
    OPS(c)->matmul(BE(c), c->logits, c->h, &m->lm_head, rows); /* [rows, vocab] */
    OPS(c)->download(BE(c), logits, c->logits, (size_t)rows * cf->vocab_size * sizeof(float));
    return HY_OK;
}

static float *balloc(struct hy_backend *be, size_t n, bool *ok)
{
    float *p = be->i->alloc(be, n * sizeof(float));
    if (!p)
        *ok = false;
    return p;
}

hy_status hy_ctx_create(struct hy_ctx **out, const struct hy_model *m, int n_ctx, int max_tokens,
                        struct hy_err *err)
{
    *out = NULL;
    const struct hy_config *cf = &m->cfg;
    if (n_ctx < 1 || max_tokens < 1 || max_tokens > n_ctx)
        return hy_err_set(err, HY_E_RANGE, "context of %d tokens with %d per call is invalid",
                          n_ctx, max_tokens);
    struct hy_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    c->m = m;
    c->n_ctx = n_ctx;
    c->max_tokens = max_tokens;
    const size_t L = (size_t)cf->num_hidden_layers, T = (size_t)max_tokens;
    const size_t kvd = (size_t)(cf->num_key_value_heads * cf->head_dim);
    const size_t qd = (size_t)(cf->num_attention_heads * cf->head_dim);
    bool ok = true;
    c->k_cache = calloc(L, sizeof *c->k_cache);
    c->v_cache = calloc(L, sizeof *c->v_cache);
    c->pos_ids = calloc(T, sizeof *c->pos_ids);
    ok = c->k_cache && c->v_cache && c->pos_ids;
    for (size_t i = 0; ok && i < L; i++) {
        c->k_cache[i] = balloc(m->be, (size_t)n_ctx * kvd, &ok);
        c->v_cache[i] = balloc(m->be, (size_t)n_ctx * kvd, &ok);
    }
    if (ok) {
        c->x = balloc(m->be, T * (size_t)cf->hidden_size, &ok);
        c->h = balloc(m->be, T * (size_t)cf->hidden_size, &ok);
        c->q = balloc(m->be, T * qd, &ok);
        c->att = balloc(m->be, T * qd, &ok);
        c->gate = balloc(m->be, T * (size_t)cf->intermediate_size, &ok);
        c->up = balloc(m->be, T * (size_t)cf->intermediate_size, &ok);
        c->logits = balloc(m->be, T * (size_t)cf->vocab_size, &ok);
    }
    if (!ok) {
        hy_ctx_destroy(c);
        return hy_err_set(err, HY_E_NOMEM, "out of memory for a %d-token context", n_ctx);
    }
    *out = c;
    return HY_OK;
}

void hy_ctx_destroy(struct hy_ctx *c)
{
    if (!c)
        return;
    struct hy_backend *be = c->m->be;
    float *bufs[] = {c->x, c->h, c->q, c->att, c->gate, c->up, c->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            be->i->free(be, bufs[i]);
    for (int64_t i = 0; i < c->m->cfg.num_hidden_layers; i++) {
        if (c->k_cache && c->k_cache[i])
            be->i->free(be, c->k_cache[i]);
        if (c->v_cache && c->v_cache[i])
            be->i->free(be, c->v_cache[i]);
    }
    free(c->k_cache);
    free(c->v_cache);
    free(c->pos_ids);
    free(c);
}

void hy_ctx_reset(struct hy_ctx *c) { c->pos = 0; }
