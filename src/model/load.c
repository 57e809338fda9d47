/* load.c: binding a checkpoint's tensors to the HunYuanDenseV1 weight structs, with every
 * name, shape and dtype checked against the config (hunyuan.h has the contract). */
#include "formats/safetensors.h"
#include "model/load_gguf.h"
#include "model/hunyuan.h"
#include "model/hy_v3.h"
#include "model/load_quant.h"
#include "model/share.h"

#include "core/log.h"
#include "core/proc.h"
#include "core/quant.h"
#include "core/threads.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Binds tensor `name` with the expected shape (rows, cols; rows == 0 means a vector). */
static hy_status bind(struct hy_weight *w, const struct hy_st *st, const char *name,
                      int64_t rows, int64_t cols, struct hy_err *err)
{
    return hy_model_bind_st(w, st, name, rows, cols, err);
}

hy_status hy_model_bind_st(struct hy_weight *w, const struct hy_st *st, const char *name,
                           int64_t rows, int64_t cols, struct hy_err *err)
{
    const struct hy_st_tensor *t = hy_st_find(st, name);
    if (!t) /* the file that should have it; of shards, the first (the index is beside it) */
        return hy_err_set(err, HY_E_FORMAT, "%s%s: missing tensor %s", hy_st_file_path(st, 0),
                          hy_st_file_count(st) > 1 ? " (and the other shards)" : "", name);
    const char *file = hy_st_file_path(st, t->file);
    bool ok = rows == 0 ? (t->n_dims == 1 && t->shape[0] == cols)
                        : (t->n_dims == 2 && t->shape[0] == rows && t->shape[1] == cols);
    if (!ok) {
        char got[96] = "", *p = got;
        for (int d = 0; d < t->n_dims; d++)
            p += snprintf(p, (size_t)(got + sizeof got - p), "%s%lld", d ? "," : "",
                          (long long)t->shape[d]);
        if (rows == 0)
            return hy_err_set(err, HY_E_FORMAT,
                              "%s: tensor %s has shape [%s], the config needs [%lld]", file, name,
                              got, (long long)cols);
        return hy_err_set(err, HY_E_FORMAT,
                          "%s: tensor %s has shape [%s], the config needs [%lld,%lld]", file,
                          name, got, (long long)rows, (long long)cols);
    }
    w->dtype = t->dtype;
    w->rows = rows == 0 ? 1 : rows;
    w->cols = cols;
    w->data = t->data;
    return HY_OK;
}

void hy_layer_tensors(const struct hy_config *c, struct hy_layer_weights *l,
                      struct hy_layer_tensor out[HY_LAYER_TENSORS])
{
    const int64_t d = c->hidden_size, hd = c->head_dim, f = c->intermediate_size;
    const int64_t qd = c->num_attention_heads * hd, kvd = c->num_key_value_heads * hd;
    const struct hy_layer_tensor t[HY_LAYER_TENSORS] = {
        {"input_layernorm", "attn_norm", 0, d, l ? &l->attn_norm : NULL},
        {"self_attn.q_proj", "attn_q", qd, d, l ? &l->wq : NULL},
        {"self_attn.k_proj", "attn_k", kvd, d, l ? &l->wk : NULL},
        {"self_attn.v_proj", "attn_v", kvd, d, l ? &l->wv : NULL},
        {"self_attn.query_layernorm", "attn_q_norm", 0, hd, l ? &l->q_norm : NULL},
        {"self_attn.key_layernorm", "attn_k_norm", 0, hd, l ? &l->k_norm : NULL},
        {"self_attn.o_proj", "attn_output", d, qd, l ? &l->wo : NULL},
        {"post_attention_layernorm", "ffn_norm", 0, d, l ? &l->ffn_norm : NULL},
        {"mlp.gate_proj", "ffn_gate", f, d, l ? &l->w_gate : NULL},
        {"mlp.up_proj", "ffn_up", f, d, l ? &l->w_up : NULL},
        {"mlp.down_proj", "ffn_down", d, f, l ? &l->w_down : NULL},
    };
    memcpy(out, t, sizeof t);
}

hy_status hy_model_bind_layers(struct hy_model *m, const struct hy_st *st,
                               const struct hy_gguf *g, struct hy_err *err)
{
    const struct hy_config *c = &m->cfg;
    m->layers = calloc((size_t)c->num_hidden_layers, sizeof *m->layers);
    if (!m->layers)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for %lld layers",
                          (long long)c->num_hidden_layers);
    char name[HY_ST_MAX_NAME > HY_GGUF_MAX_NAME ? HY_ST_MAX_NAME : HY_GGUF_MAX_NAME];
    for (int i = 0; i < c->num_hidden_layers; i++) {
        struct hy_layer_tensor t[HY_LAYER_TENSORS];
        hy_layer_tensors(c, &m->layers[i], t);
        for (int k = 0; k < HY_LAYER_TENSORS; k++) {
            hy_status s;
            if (st) {
                snprintf(name, sizeof name, "model.layers.%d.%s.weight", i, t[k].hf);
                s = hy_model_bind_st(t[k].w, st, name, t[k].rows, t[k].cols, err);
            } else {
                snprintf(name, sizeof name, "blk.%d.%s.weight", i, t[k].gguf);
                s = hy_load_gguf_bind(t[k].w, g, name, t[k].rows, t[k].cols, err);
            }
            if (s)
                return s;
            m->n_params += t[k].w->rows * t[k].w->cols;
        }
    }
    return HY_OK;
}

static int64_t weight_elems(const struct hy_weight *w) { return w->rows * w->cols; }

/* Tied config with a stored lm_head.weight (the released checkpoints have one, model doc
 * 3.5). transformers 5.17 ties only when the two tensors are equal; when they differ it
 * warns and uses the stored lm_head ("both are present in the checkpoints with different
 * values, so we will NOT tie them"). The goldens come from transformers, so hymt does the
 * same (vLLM, llama.cpp and mlx always use embed_tokens; the results agree when equal). */
static hy_status check_stored_head(struct hy_model *m, struct hy_err *err)
{
    const struct hy_st_tensor *t = hy_st_find(m->st, "lm_head.weight");
    if (!t)
        return HY_OK;
    const struct hy_st_tensor *e = hy_st_find(m->st, "model.embed_tokens.weight");
    m->lm_head_stored = true;
    m->lm_head_equal = e && e->dtype == t->dtype && e->nbytes == t->nbytes &&
                       memcmp(e->data, t->data, t->nbytes) == 0;
    if (m->lm_head_equal)
        return HY_OK;
    HY_LOGW("config ties the head to embed_tokens, but the stored lm_head.weight differs from "
            "it: using lm_head.weight, as transformers does");
    return bind(&m->lm_head, m->st, "lm_head.weight", m->cfg.vocab_size, m->cfg.hidden_size, err);
}

/* Every distinct weight of the model, the head only when it is not the embedding. Once
 * quantize_weights has run, the projections and the head are its own (in backend memory
 * already, freed by free_quantized) and left out. */
static int all_weights(struct hy_model *m, struct hy_weight **ws, int cap)
{
    int n = 0;
    const bool q = m->weights_quantized;
    if (!hy_model_is_shared(m, &m->tok_embd) && !m->embd_quantized)
        ws[n++] = &m->tok_embd;
    if (!hy_model_is_shared(m, &m->out_norm))
        ws[n++] = &m->out_norm;
    if (m->lm_head.data != m->tok_embd.data && !q && !hy_model_is_shared(m, &m->lm_head))
        ws[n++] = &m->lm_head;
    for (int i = 0; i < m->cfg.num_hidden_layers; i++) {
        struct hy_layer_weights *l = &m->layers[i];
        struct hy_weight *lw[] = {&l->attn_norm, &l->q_norm, &l->k_norm, &l->ffn_norm,
                                  &l->wq,        &l->wk,     &l->wv,     &l->wo,
                                  &l->w_gate,    &l->w_up,   &l->w_down};
        for (size_t k = 0; k < (q ? 4 : sizeof lw / sizeof lw[0]); k++) {
            HY_ASSERT(n < cap);
            if (!hy_model_is_shared(m, lw[k])) /* another model's: not ours to load or free */
                ws[n++] = lw[k];
        }
    }
    return n;
}

/* The fp8 form of w (a layer projection of an fp8 checkpoint, or made by --quant fp8:
 * load_quant.h) when the backend keeps fp8 weights (weight_upload_fp8); false otherwise. */
static bool fp8_source(const struct hy_model *m, const struct hy_weight *w,
                       struct hy_load_quant_view *v)
{
    const int nl = (int)m->cfg.num_hidden_layers;
    if (!m->st || !m->be->i->weight_upload_fp8 || !m->layers ||
        (const char *)w < (const char *)m->layers || (const char *)w >= (const char *)(m->layers + nl))
        return false;
    const int i = (int)(((const char *)w - (const char *)m->layers) / (ptrdiff_t)sizeof *m->layers);
    struct hy_layer_tensor t[HY_LAYER_TENSORS];
    char name[HY_ST_MAX_NAME];
    hy_layer_tensors(&m->cfg, &m->layers[i], t);
    for (int k = 0; k < HY_LAYER_TENSORS; k++) {
        if (t[k].w != w || t[k].rows == 0)
            continue;
        snprintf(name, sizeof name, "model.layers.%d.%s.weight", i, t[k].hf);
        return hy_load_quant_fp8_view(m->st, name, v) && v->rows == w->rows && v->cols == w->cols;
    }
    return false;
}

/* Backends with device memory (weight_upload set) get their copy of every weight once; the
 * fp8 projections stay fp8 where the backend can run them (weight_upload_fp8: the bf16 form
 * the loader made for the CPU is then not uploaded). All or nothing: on failure the copies
 * made so far are freed and the weights point at the mapped file again. */
static hy_status upload_weights(struct hy_model *m, struct hy_err *err)
{
    struct hy_backend *be = m->be;
    if (!be->i->weight_upload)
        return HY_OK;
    bool tied = m->lm_head.data == m->tok_embd.data;
    int cap = 3 + 11 * (int)m->cfg.num_hidden_layers;
    struct hy_weight **ws = malloc((size_t)cap * sizeof *ws), *saved = malloc((size_t)cap * sizeof *saved);
    if (!ws || !saved) {
        free(ws);
        free(saved);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    int n = all_weights(m, ws, cap), k = 0;
    hy_status s = HY_OK;
    int n_fp8 = 0;
    for (; k < n && !s; k++) {
        struct hy_load_quant_view v;
        saved[k] = *ws[k];
        if (fp8_source(m, ws[k], &v)) {
            s = be->i->weight_upload_fp8(be, ws[k], v.codes, v.scale, v.n_scale, v.input_scale,
                                         err);
            n_fp8++;
        } else {
            s = be->i->weight_upload(be, ws[k], err);
        }
    }
    if (!s && n_fp8)
        HY_LOGI("%d fp8 projections kept in fp8 on the %s backend", n_fp8, be->i->name);
    if (s) {
        for (int i = 0; i < k - 1; i++) {
            be->i->free(be, (void *)ws[i]->data);
            *ws[i] = saved[i];
        }
    } else {
        if (tied)
            m->lm_head = m->tok_embd;
        m->weights_uploaded = true;
    }
    free(ws);
    free(saved);
    return s;
}

/* Backends that can (weight_fuse) get each layer's q/k/v and gate/up in one allocation
 * each, for one product (matmul_n, matmul_glu). Best effort: a group left apart (a dtype the
 * backend does not fuse, a weight shared with another model, no memory) is multiplied
 * apart, as before. */
static void fuse_weights(struct hy_model *m)
{
    struct hy_backend *be = m->be;
    if (!be->i->weight_fuse || !m->weights_uploaded)
        return;
    int n = 0;
    for (int i = 0; i < m->cfg.num_hidden_layers; i++) {
        struct hy_layer_weights *l = &m->layers[i];
        struct hy_weight *qkv[3] = {&l->wq, &l->wk, &l->wv}, *gu[2] = {&l->w_gate, &l->w_up};
        if (!hy_model_is_shared(m, qkv[0]) && !hy_model_is_shared(m, qkv[1]) &&
            !hy_model_is_shared(m, qkv[2]))
            n += be->i->weight_fuse(be, qkv, 3);
        if (!l->moe && !hy_model_is_shared(m, gu[0]) && !hy_model_is_shared(m, gu[1]))
            n += be->i->weight_fuse(be, gu, 2);
    }
    if (n)
        HY_LOGI("%d weight groups fused (q/k/v, gate/up) on the %s backend", n, be->i->name);
}

static void free_weights(struct hy_model *m)
{
    int cap = 3 + 11 * (int)m->cfg.num_hidden_layers;
    struct hy_weight **ws = malloc((size_t)cap * sizeof *ws);
    HY_ASSERT(ws);
    int n = all_weights(m, ws, cap);
    for (int i = 0; i < n; i++)
        m->be->i->free(m->be, (void *)ws[i]->data);
    free(ws);
}

/* The 2-D projections of every layer (7 a layer). */
static int projections(struct hy_model *m, struct hy_weight **ws, int cap)
{
    int n = 0;
    for (int i = 0; i < m->cfg.num_hidden_layers; i++) {
        struct hy_layer_weights *l = &m->layers[i];
        struct hy_weight *lw[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        for (size_t k = 0; k < sizeof lw / sizeof lw[0]; k++) {
            HY_ASSERT(n < cap);
            if (!hy_model_is_shared(m, lw[k]))
                ws[n++] = lw[k];
        }
    }
    return n;
}

/* How many weights quant_targets gives. */
static int n_quant_targets(const struct hy_model *m)
{
    const int nl = (int)m->cfg.num_hidden_layers;
    return (m->cfg.arch == HY_ARCH_HYV3 ? hy_v3_n_projections(&m->cfg) : 7 * nl) + 1;
}

/* What load-time quantization replaces: every projection, then the head (last). */
static int quant_targets(struct hy_model *m, struct hy_weight **ws, int cap)
{
    int n = m->cfg.arch == HY_ARCH_HYV3 ? hy_v3_projections(m, ws, cap) : projections(m, ws, cap);
    HY_ASSERT(n < cap);
    if (!hy_model_is_shared(m, &m->lm_head))
        ws[n++] = &m->lm_head;
    return n;
}

/* Frees what quantize_weights made (only after it succeeded: all or nothing). */
static void free_quantized(struct hy_model *m)
{
    int cap = n_quant_targets(m);
    struct hy_weight **ws = malloc((size_t)cap * sizeof *ws);
    HY_ASSERT(ws);
    int n = quant_targets(m, ws, cap);
    for (int i = 0; i < n; i++)
        m->be->i->free(m->be, (void *)ws[i]->data);
    free(ws);
}

struct quant_job {
    const struct hy_weight *src;
    enum hy_dtype dt;
    unsigned char *dst;
    size_t rb, src_rb;
    float *rows; /* [threads, cols] scratch */
};

static void quant_rows(void *ctx, int64_t r0, int64_t r1, int tid)
{
    const struct quant_job *j = ctx;
    const struct hy_weight *w = j->src;
    float *row = j->rows + (size_t)tid * (size_t)w->cols;
    for (int64_t r = r0; r < r1; r++) {
        hy_dtype_to_f32(row, (const unsigned char *)w->data + (size_t)r * j->src_rb, w->dtype,
                        (size_t)w->cols);
        hy_dtype_from_f32(j->dst + (size_t)r * j->rb, row, j->dt, (size_t)w->cols);
    }
}

/* The dtype a weight with `cols` in-features gets for the requested one: as requested, but
 * Q4_G128 falls back to Q4_0 where cols is not a multiple of 128 (the tiny test models,
 * hidden 64); -1 where the blocks do not fit at all. */
static int quant_dtype_for(enum hy_dtype quant, int64_t cols)
{
    if (quant == HY_DTYPE_Q4_G128 && cols % HY_Q4_G128_BLOCK)
        quant = HY_DTYPE_Q4_0;
    return cols % hy_dtype_block_elems(quant) ? -1 : (int)quant;
}

/* Quantizes one weight into new backend memory; *w points at it on success. */
static hy_status quantize_one(struct hy_backend *be, struct hy_pool *pool, struct quant_job *j,
                              struct hy_weight *w, enum hy_dtype quant, struct hy_err *err)
{
    int dt = quant_dtype_for(quant, w->cols);
    if (dt < 0)
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s needs in-features that are multiples of "
                          "%lld; a weight has %lld", hy_dtype_name(quant),
                          (long long)hy_dtype_block_elems(quant), (long long)w->cols);
    j->src = w;
    j->dt = (enum hy_dtype)dt;
    j->rb = hy_dtype_row_bytes(j->dt, w->cols);
    j->src_rb = hy_dtype_row_bytes(w->dtype, w->cols);
    /* a device backend: quantize into host memory, then weight_upload copies it */
    const bool dev = be->i->weight_upload != NULL;
    j->dst = dev ? malloc(j->rb * (size_t)w->rows) : be->i->alloc(be, j->rb * (size_t)w->rows);
    if (!j->dst)
        return hy_err_set(err, HY_E_NOMEM, "out of %s memory for %s weights",
                          dev ? "host" : "backend", hy_dtype_name(j->dt));
    hy_pool_for(pool, w->rows, 16, quant_rows, j);
    struct hy_weight q = {j->dt, w->rows, w->cols, j->dst};
    if (dev) {
        hy_status s = be->i->weight_upload(be, &q, err);
        free(j->dst);
        if (s)
            return s;
    }
    *w = q;
    return HY_OK;
}

/* The token embedding of a device backend whose projections are quantized to fewer than 8
 * bits becomes Q8_0 in device memory: the lookup reads one row a token, so its bytes only
 * take memory (the 7B table: 1.05 GB bf16, 0.56 GB Q8_0). Q8_0 rounds an element by at most
 * 1/254 of its block's largest |value|, a sixteenth of the 4-bit weights' step (the tiny
 * checkpoints' logits stay within cuda_qmatmul_test's limits of the CPU's with the stored
 * table). A q8 model keeps the stored table: sharing the head's Q8_0 copy moved the tiny
 * checkpoints' logits past quant_accuracy_test's q8 limits. A CPU backend reads the
 * mapped table, which costs no memory beyond the rows it touches. A failure leaves the
 * table as stored (and is returned). */
static hy_status quantize_embedding(struct hy_model *m, struct hy_pool *pool,
                                    struct quant_job *j, enum hy_dtype quant, struct hy_err *err)
{
    struct hy_weight *e = &m->tok_embd;
    const struct hy_weight saved = *e;
    if (!m->be->i->weight_upload || quant == HY_DTYPE_Q8_0 || m->cfg.arch == HY_ARCH_HYV3 ||
        hy_model_is_shared(m, e) || /* the other model's table (its Q8_0 copy) */
        (e->dtype != HY_DTYPE_BF16 && e->dtype != HY_DTYPE_F16 && e->dtype != HY_DTYPE_F32) ||
        e->cols % hy_dtype_block_elems(HY_DTYPE_Q8_0))
        return HY_OK;
    hy_status s = quantize_one(m->be, pool, j, e, HY_DTYPE_Q8_0, err);
    if (s) {
        *e = saved;
        return s;
    }
    m->embd_quantized = true; /* the head is a quantized copy of its own (quantize_weights) */
    HY_LOGI("token embedding in %s on the device (%lld x %lld)", hy_dtype_name(e->dtype),
            (long long)e->rows, (long long)e->cols);
    return HY_OK;
}

/* Quantizes every projection and the head (for a tied head: a quantized copy of the
 * embedding, whose lookup keeps the stored table; the head is read in full every token, so
 * it matters as much as a layer) into backend memory (a device backend: through a host
 * buffer a weight, handed to weight_upload; upload_weights then skips them). The
 * embedding and the norms stay as stored. Rows are split over a temporary pool of all online
 * CPUs (each row is quantized alone: the result does not depend on the split). All or
 * nothing: on failure every copy made is freed and the weights are as they were. */
static hy_status quantize_weights(struct hy_model *m, enum hy_dtype quant, struct hy_err *err)
{
    struct hy_backend *be = m->be;
    if (quant == HY_DTYPE_F32)
        return HY_OK;
    if (quant != HY_DTYPE_Q8_0 && quant != HY_DTYPE_Q4_G128 && quant != HY_DTYPE_Q4_0 &&
        quant != HY_DTYPE_Q4_K && quant != HY_DTYPE_Q6_K)
        return hy_err_set(err, HY_E_INVAL, "load-time quantization to %s is not supported "
                          "(Q8_0, Q4_G128, Q4_0, Q4_K and Q6_K are)", hy_dtype_name(quant));
    int cap = n_quant_targets(m);
    struct hy_weight **ws = malloc((size_t)cap * sizeof *ws);
    struct hy_weight *saved = malloc((size_t)cap * sizeof *saved);
    struct hy_pool *pool = NULL;
    struct quant_job j = {0};
    hy_status s = HY_OK;
    int n = 0, done = 0;
    if (!ws || !saved) {
        s = hy_err_set(err, HY_E_NOMEM, "out of memory");
        goto out;
    }
    n = quant_targets(m, ws, cap);
    int64_t maxc = 1;
    for (int i = 0; i < n; i++) {
        saved[i] = *ws[i];
        maxc = ws[i]->cols > maxc ? ws[i]->cols : maxc;
    }
    if (hy_pool_create(&pool, 0, err) != HY_OK)
        pool = NULL; /* quantize on this thread alone */
    j.rows = malloc((size_t)hy_pool_size(pool) * (size_t)maxc * sizeof(float));
    if (!j.rows) {
        s = hy_err_set(err, HY_E_NOMEM, "out of memory");
        goto out;
    }
    for (; done < n && !s; done++)
        s = quantize_one(be, pool, &j, ws[done], quant, err);
    if (s) {
        for (int i = 0; i < done - 1; i++) {
            be->i->free(be, (void *)ws[i]->data);
            *ws[i] = saved[i];
        }
        goto out;
    }
    m->weights_quantized = true;
    HY_LOGI("quantized %d projections and the head to %s%s at load (norms as stored)", n - 1,
            hy_dtype_name(quant),
            quant == HY_DTYPE_Q4_G128 ? " (Q4_0 where in-features % 128 != 0)" : "");
    s = quantize_embedding(m, pool, &j, quant, err);
out:
    hy_pool_destroy(pool);
    free(j.rows);
    free(ws);
    free(saved);
    return s;
}

static hy_status bind_all(struct hy_model *m, struct hy_err *err)
{
    const struct hy_config *c = &m->cfg;
    hy_status s = bind(&m->tok_embd, m->st, "model.embed_tokens.weight", c->vocab_size,
                       c->hidden_size, err);
    if (!s)
        s = bind(&m->out_norm, m->st, "model.norm.weight", 0, c->hidden_size, err);
    if (s)
        return s;
    if (c->tie_word_embeddings) {
        m->lm_head = m->tok_embd;
        s = check_stored_head(m, err);
        if (s)
            return s;
    } else {
        s = bind(&m->lm_head, m->st, "lm_head.weight", c->vocab_size, c->hidden_size, err);
        if (s)
            return s;
    }
    m->n_params = weight_elems(&m->tok_embd) + weight_elems(&m->out_norm) +
                  (m->lm_head.data == m->tok_embd.data ? 0 : weight_elems(&m->lm_head));
    return hy_model_bind_layers(m, m->st, NULL, err);
}

/* With every weight in device memory the host needs none of the mapped checkpoint: its
 * pages go back (hy_fmap_release; the maps stay valid, so the tokenizer of a GGUF file or
 * a later read still finds its bytes, paged in again). */
static void release_host_pages(const struct hy_model *m)
{
    const double before = (double)hy_proc_rss_bytes() / (1 << 20);
    hy_st_release_pages(m->st);
    hy_gguf_release_pages(m->gguf);
    HY_LOGI("weights on the %s backend: host pages of the checkpoint released (RSS %.0f MiB -> "
            "%.0f MiB)", m->be->i->name, before, (double)hy_proc_rss_bytes() / (1 << 20));
}

static uint64_t device_used(struct hy_backend *be)
{
    uint64_t used = 0, total = 0;
    if (be->i->mem_info)
        be->i->mem_info(be, &used, &total);
    return used;
}

/* Whether block-scaled fp8 projections can stay fp8 on be (HY_DTYPE_F8_B128): its matmul
 * keeps them, and for hy_v3 its grouped expert ops take them too. */
static bool keeps_fp8_blocks(const struct hy_backend *be, bool hyv3)
{
    const struct hy_backend_i *op = be->i;
    return op->weight_upload && op->weight_keeps && op->weight_keeps(HY_DTYPE_F8_B128) &&
           (!hyv3 || (op->moe_takes && op->moe_takes(HY_DTYPE_F8_B128)));
}

hy_status hy_model_load(struct hy_model **out, const char *dir, struct hy_backend *be,
                        struct hy_err *err)
{
    return hy_model_load_opts(out, dir, be, NULL, err);
}

hy_status hy_model_load_opts(struct hy_model **out, const char *dir, struct hy_backend *be,
                             const struct hy_model_opts *opts, struct hy_err *err)
{
    enum hy_dtype quant = opts ? opts->quant : HY_DTYPE_F32;
    *out = NULL;
    struct stat sb;
    bool gguf = stat(dir, &sb) == 0 && S_ISREG(sb.st_mode) && hy_gguf_is_gguf(dir);
    if (!gguf && (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        return hy_err_set(err, HY_E_IO, "%s: not a directory (expected a checkpoint folder "
                          "with config.json and model.safetensors) and not a GGUF file", dir);
    struct hy_model *m = calloc(1, sizeof *m);
    if (!m)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    m->be = be;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    hy_status s = gguf ? hy_model_bind_gguf(m, dir, err) : hy_config_load(&m->cfg, path, err);
    if (!s && !gguf)
        s = hy_st_open(&m->st, dir, err);
    const bool hyv3 = !s && m->cfg.arch == HY_ARCH_HYV3;
    if (hyv3) /* its own limits and tensors (hy_v3.h; a GGUF file's are bound already) */
        s = hy_v3_check_load(m, quant, err);
    if (!s && !gguf) /* fp8 checkpoints and --quant fp8: BF16 tensors put into the set (load_quant.h) */
        s = hy_load_quant_prepare(m->st, dir, &m->cfg, quant, false, keeps_fp8_blocks(be, hyv3),
                                  err);
    if (!s && hyv3 && !gguf)
        s = hy_v3_bind(m, err);
    if (!s && !gguf && !hyv3)
        s = bind_all(m, err);
    m->quant = quant;
    if (!s && !gguf && !hyv3)
        s = hy_model_slots_keep(m, err);
    if (!s && opts && opts->share_from)
        s = hy_model_share(m, opts->share_from, err);
    const uint64_t used0 = device_used(be);
    if (!s)
        s = quantize_weights(m, quant == HY_DTYPE_F8_E4M3 ? HY_DTYPE_F32 : quant, err);
    if (!s && !hyv3)
        s = upload_weights(m, err);
    if (!s && !hyv3)
        fuse_weights(m);
    if (!s && hyv3 && be->i->weight_upload) /* its experts stacked for the grouped ops */
        s = hy_v3_upload(m, err);
    if (!s && (m->weights_uploaded || m->v3dev)) {
        m->weight_device_bytes = (int64_t)(device_used(be) - used0);
        release_host_pages(m);
    }
    if (!s) {
        size_t bytes = (size_t)(m->cfg.head_dim / 2) * sizeof(float);
        float host[512];
        hy_config_inv_freq(&m->cfg, host);
        m->inv_freq = be->i->alloc(be, bytes);
        if (!m->inv_freq)
            s = hy_err_set(err, HY_E_NOMEM, "out of backend memory");
        else
            be->i->upload(be, m->inv_freq, host, bytes);
    }
    if (s) {
        hy_model_destroy(m);
        return s;
    }
    if (!m->n_active_params)
        m->n_active_params = m->n_params;
    *out = m;
    return HY_OK;
}

void hy_model_destroy(struct hy_model *m)
{
    if (!m)
        return;
    if (m->inv_freq)
        m->be->i->free(m->be, m->inv_freq);
    if (m->weights_uploaded)
        free_weights(m);
    if (m->weights_quantized)
        free_quantized(m);
    if (m->embd_quantized)
        m->be->i->free(m->be, (void *)m->tok_embd.data);
    hy_v3_unbind(m);
    free(m->layers);
    free(m->bound);
    free(m->shared);
    hy_st_close(m->st);
    hy_gguf_close(m->gguf);
    free(m);
}
