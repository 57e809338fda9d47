/* state.c: the memory the forward pass runs in (paged KV storage, step scratch) and the
 * single-sequence context built on them. Everything is allocated at creation. */
#include "model/hunyuan.h"
#include "model/hy_v3.h"

#include <stdlib.h>
#include <string.h>

static float *balloc(struct hy_backend *be, size_t n, bool *ok)
{
    float *p = *ok ? be->i->alloc(be, n * sizeof(float)) : NULL;
    if (!p)
        *ok = false;
    return p;
}

static void bfree(struct hy_backend *be, void *p)
{
    if (p)
        be->i->free(be, p);
}

static enum hy_dtype kv_dtype_of(const struct hy_backend *be)
{
    return be->i->kv_dtype ? be->i->kv_dtype(be) : HY_DTYPE_F32;
}

int64_t hy_kvstore_block_bytes(const struct hy_model *m, int block_size)
{
    const struct hy_config *cf = &m->cfg;
    return cf->num_hidden_layers * 2 * (int64_t)block_size * cf->num_key_value_heads *
           cf->head_dim * (int64_t)hy_dtype_size(kv_dtype_of(m->be));
}

int64_t hy_kvstore_bytes(const struct hy_kvstore *kv)
{
    return (int64_t)kv->n_layers * 2 * (kv->n_blocks + 1) * (int64_t)kv->block_size * kv->kvd *
           (int64_t)hy_dtype_size(kv->dtype);
}

hy_status hy_kvstore_create(struct hy_kvstore **out, const struct hy_model *m, int n_blocks,
                           int block_size, struct hy_err *err)
{
    *out = NULL;
    const struct hy_config *cf = &m->cfg;
    if (n_blocks < 1 || block_size < 1 || ((int64_t)n_blocks + 1) * block_size > INT32_MAX)
        return hy_err_set(err, HY_E_RANGE, "KV pool of %d blocks of %d tokens is invalid",
                          n_blocks, block_size);
    struct hy_kvstore *kv = calloc(1, sizeof *kv);
    if (!kv)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    kv->kvd = cf->num_key_value_heads * cf->head_dim;
    kv->n_layers = (int)cf->num_hidden_layers;
    kv->be = m->be;
    kv->dtype = kv_dtype_of(m->be);
    HY_ASSERT(kv->dtype == HY_DTYPE_F32 || kv->dtype == HY_DTYPE_BF16);
    kv->k = calloc((size_t)kv->n_layers, sizeof *kv->k);
    kv->v = calloc((size_t)kv->n_layers, sizeof *kv->v);
    bool ok = kv->k && kv->v;
    /* one block more than asked: the padding block of recorded steps (hunyuan.h) */
    kv->pad_block = n_blocks;
    kv->pad_table[0] = n_blocks;
    size_t rows = (size_t)(n_blocks + 1) * (size_t)block_size;
    size_t layer = rows * (size_t)kv->kvd * hy_dtype_size(kv->dtype);
    for (int i = 0; ok && i < kv->n_layers; i++) {
        kv->k[i] = m->be->i->alloc(m->be, layer);
        kv->v[i] = kv->k[i] ? m->be->i->alloc(m->be, layer) : NULL;
        ok = kv->v[i] != NULL;
    }
    if (!ok) {
        hy_kvstore_destroy(kv);
        return hy_err_set(err, HY_E_NOMEM, "out of memory for a KV pool of %zu tokens", rows);
    }
    *out = kv;
    return HY_OK;
}

void hy_kvstore_destroy(struct hy_kvstore *kv)
{
    if (!kv)
        return;
    for (int i = 0; i < kv->n_layers; i++) {
        if (kv->k)
            bfree(kv->be, kv->k[i]);
        if (kv->v)
            bfree(kv->be, kv->v[i]);
    }
    free(kv->k);
    free(kv->v);
    free(kv);
}

hy_status hy_scratch_create(struct hy_scratch **out, const struct hy_model *m, int max_tokens,
                            int max_seqs, int max_logits, struct hy_err *err)
{
    *out = NULL;
    const struct hy_config *cf = &m->cfg;
    if (max_tokens < 1 || max_seqs < 1 || max_seqs > max_tokens || max_logits < 1 ||
        max_logits > max_tokens)
        return hy_err_set(err, HY_E_RANGE, "scratch for %d tokens over %d sequences with %d "
                          "logit rows is invalid", max_tokens, max_seqs, max_logits);
    struct hy_scratch *s = calloc(1, sizeof *s);
    if (!s)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    s->max_tokens = max_tokens;
    s->max_seqs = max_seqs;
    s->max_logits = max_logits;
    const size_t T = (size_t)max_tokens;
    const size_t qd = (size_t)(cf->num_attention_heads * cf->head_dim);
    const size_t kvd = (size_t)(cf->num_key_value_heads * cf->head_dim);
    bool ok = true;
    s->x = balloc(m->be, T * (size_t)cf->hidden_size, &ok);
    s->h = balloc(m->be, T * (size_t)cf->hidden_size, &ok);
    s->q = balloc(m->be, T * qd, &ok);
    s->k = balloc(m->be, T * kvd, &ok);
    s->v = balloc(m->be, T * kvd, &ok);
    s->att = balloc(m->be, T * qd, &ok);
    size_t F = (size_t)cf->intermediate_size; /* hy_v3: also its experts' SwiGLUs */
    if ((size_t)(cf->moe_intermediate_size * cf->num_shared_experts) > F)
        F = (size_t)(cf->moe_intermediate_size * cf->num_shared_experts);
    s->gate = balloc(m->be, T * F, &ok);
    s->up = balloc(m->be, T * F, &ok);
    s->logits = balloc(m->be, (size_t)max_logits * (size_t)cf->vocab_size, &ok);
    s->ids = calloc(T, sizeof *s->ids);
    s->pos = calloc(T, sizeof *s->pos);
    s->slots = calloc(T, sizeof *s->slots);
    s->rows = calloc(T, sizeof *s->rows);
    s->aseqs = calloc((size_t)max_seqs, sizeof *s->aseqs);
    s->pad_seqs = calloc((size_t)max_seqs, sizeof *s->pad_seqs);
    const struct hy_backend_i *op = m->be->i;
    if (ok && op->topk) { /* sampling candidates on the backend: rows are <= max_seqs */
        s->topk_k = op->max_topk(cf->vocab_size) < HY_TOPK_K ? op->max_topk(cf->vocab_size)
                                                              : HY_TOPK_K;
        s->cand = m->be->i->alloc(m->be, (size_t)max_seqs * (size_t)s->topk_k * sizeof *s->cand);
        s->topk_scratch =
            m->be->i->alloc(m->be, op->topk_scratch_bytes(cf->vocab_size, max_seqs, s->topk_k));
        ok = s->cand && s->topk_scratch;
    }
    if (!ok || !s->ids || !s->pos || !s->slots || !s->rows || !s->aseqs || !s->pad_seqs) {
        hy_scratch_destroy(s, m);
        return hy_err_set(err, HY_E_NOMEM, "out of memory for a %d-token step", max_tokens);
    }
    hy_status st = hy_v3_scratch_create(s, m, err);
    if (st) {
        hy_scratch_destroy(s, m);
        return st;
    }
    *out = s;
    return HY_OK;
}

void hy_scratch_destroy(struct hy_scratch *s, const struct hy_model *m)
{
    if (!s)
        return;
    float *bufs[] = {s->x, s->h, s->q, s->k, s->v, s->att, s->gate, s->up, s->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        bfree(m->be, bufs[i]);
    free(s->ids);
    free(s->pos);
    free(s->slots);
    free(s->rows);
    free(s->aseqs);
    free(s->pad_seqs);
    hy_v3_scratch_destroy(s, m);
    if (m->be->i->step_forget)
        m->be->i->step_forget(m->be, s);
    bfree(m->be, s->cand);
    bfree(m->be, s->topk_scratch);
    free(s);
}

#define CTX_BLOCK 16

hy_status hy_ctx_create(struct hy_ctx **out, const struct hy_model *m, int n_ctx, int max_tokens,
                        struct hy_err *err)
{
    *out = NULL;
    if (n_ctx < 1 || max_tokens < 1 || max_tokens > n_ctx || n_ctx > INT32_MAX - CTX_BLOCK)
        return hy_err_set(err, HY_E_RANGE, "context of %d tokens with %d per call is invalid",
                          n_ctx, max_tokens);
    struct hy_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    c->m = m;
    c->n_ctx = n_ctx;
    c->max_tokens = max_tokens;
    int nb = (n_ctx + CTX_BLOCK - 1) / CTX_BLOCK;
    hy_status s = hy_kvstore_create(&c->kv, m, nb, CTX_BLOCK, err);
    if (!s)
        s = hy_scratch_create(&c->s, m, max_tokens, 1, max_tokens, err);
    if (!s && !(c->blocks = calloc((size_t)nb, sizeof *c->blocks)))
        s = hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (s) {
        hy_ctx_destroy(c);
        return s;
    }
    for (int i = 0; i < nb; i++)
        c->blocks[i] = i;
    *out = c;
    return HY_OK;
}

void hy_ctx_destroy(struct hy_ctx *c)
{
    if (!c)
        return;
    hy_kvstore_destroy(c->kv);
    hy_scratch_destroy(c->s, c->m);
    free(c->blocks);
    free(c);
}

void hy_ctx_reset(struct hy_ctx *c) { c->pos = 0; }

hy_status hy_model_forward(struct hy_ctx *c, const int32_t *ids, int T, bool all_logits,
                           float *logits, struct hy_err *err)
{
    if (T < 1 || T > c->max_tokens)
        return hy_err_set(err, HY_E_RANGE, "%d tokens in one call; this context takes 1..%d", T,
                          c->max_tokens);
    if (c->pos + T > c->n_ctx)
        return hy_err_set(err, HY_E_RANGE, "context full: %d cached + %d new > %d tokens", c->pos,
                          T, c->n_ctx);
    struct hy_batch_seq seq = {ids, T, c->pos, c->blocks, logits ? (all_logits ? T : 1) : 0};
    c->s->dump = c->dump;
    c->s->dump_ctx = c->dump_ctx;
    hy_status s = hy_model_forward_batch(c->m, c->kv, c->s, &seq, 1, logits, err);
    if (!s)
        c->pos += T;
    return s;
}
