/* hy_v3.c: hy_v3's tensors and its mixture-of-experts block (hy_v3.h has the contract). */
#include "model/hy_v3.h"

#include "backend/cpu/moe.h"
#include "formats/safetensors.h"
#include "model/load_gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hy_moe_scratch {
    bool dev;              /* the device path (the backend's MoE ops); else the CPU one */
    int chunk;             /* tokens a chunk of the device path */
    struct hy_moe_route r; /* device: routing of a chunk (backend.h) */
    float *act, *y;        /* device [chunk*k, F], [chunk*k, hidden] */
    float *logits;         /* backend [T, E] router logits */
    float *xe, *ye;        /* backend [T, hidden]: one expert's routed rows, its output */
    float *acc;            /* backend [T, hidden]: the block's sum */
    int32_t *ids, *rows;   /* host [T*k] */
    float *w, *rw;         /* host [T*k] */
    int32_t *off;          /* host [E+1] */
};

/* Binds name (printf-style with the layer index) and checks the dtype the ops read. */
static hy_status bindf(struct hy_weight *w, const struct hy_st *st, int64_t rows, int64_t cols,
                       struct hy_err *err, const char *fmt, int layer, int expert)
{
    char name[HY_ST_MAX_NAME];
    snprintf(name, sizeof name, fmt, layer, expert);
    hy_status s = hy_model_bind_st(w, st, name, rows, cols, err);
    /* F8_B128: block-scaled fp8 the loader kept for a backend that runs it (load_quant.h) */
    if (!s && w->dtype != HY_DTYPE_F32 && w->dtype != HY_DTYPE_F16 && w->dtype != HY_DTYPE_BF16 &&
        w->dtype != HY_DTYPE_F8_B128)
        s = hy_err_set(err, HY_E_UNSUPPORTED, "tensor %s is %s; hy_v3 reads F32, F16 and BF16",
                       name, hy_dtype_name(w->dtype));
    return s;
}

void hy_v3_attn_tensors(const struct hy_config *c, struct hy_layer_weights *l,
                        struct hy_layer_tensor out[HY_V3_ATTN_TENSORS])
{
    const int64_t d = c->hidden_size, hd = c->head_dim;
    const int64_t qd = c->num_attention_heads * hd, kvd = c->num_key_value_heads * hd;
    const struct hy_layer_tensor t[HY_V3_ATTN_TENSORS] = {
        {"input_layernorm", "attn_norm", 0, d, l ? &l->attn_norm : NULL},
        {"self_attn.q_proj", "attn_q", qd, d, l ? &l->wq : NULL},
        {"self_attn.k_proj", "attn_k", kvd, d, l ? &l->wk : NULL},
        {"self_attn.v_proj", "attn_v", kvd, d, l ? &l->wv : NULL},
        {"self_attn.o_proj", "attn_output", d, qd, l ? &l->wo : NULL},
        {"self_attn.q_norm", "attn_q_norm", 0, hd, l ? &l->q_norm : NULL},
        {"self_attn.k_norm", "attn_k_norm", 0, hd, l ? &l->k_norm : NULL},
        {"post_attention_layernorm", "ffn_norm", 0, d, l ? &l->ffn_norm : NULL},
    };
    memcpy(out, t, sizeof t);
}

hy_status hy_v3_bind_attn(struct hy_layer_weights *l, const struct hy_st *st,
                          const struct hy_gguf *g, const struct hy_config *c, int i,
                          struct hy_err *err)
{
    struct hy_layer_tensor t[HY_V3_ATTN_TENSORS];
    hy_v3_attn_tensors(c, l, t);
    hy_status s = HY_OK;
    for (size_t k = 0; k < HY_V3_ATTN_TENSORS && !s; k++) {
        char fmt[96], name[HY_GGUF_MAX_NAME];
        snprintf(fmt, sizeof fmt, "model.layers.%%d.%s.weight", t[k].hf);
        snprintf(name, sizeof name, "blk.%d.%s.weight", i, t[k].gguf);
        s = st ? bindf(t[k].w, st, t[k].rows, t[k].cols, err, fmt, i, 0)
               : hy_load_gguf_bind(t[k].w, g, name, t[k].rows, t[k].cols, err);
    }
    return s;
}

/* A SwiGLU's three matrices under prefix "model.layers.%d.<p>" (%d: layer, then expert). */
static hy_status bind_swiglu(struct hy_weight *g, struct hy_weight *u, struct hy_weight *dn,
                             const struct hy_st *st, int64_t d, int64_t f, const char *p, int i,
                             int e, struct hy_err *err)
{
    char fmt[160];
    snprintf(fmt, sizeof fmt, "model.layers.%%d.%s.gate_proj.weight", p);
    hy_status s = bindf(g, st, f, d, err, fmt, i, e);
    snprintf(fmt, sizeof fmt, "model.layers.%%d.%s.up_proj.weight", p);
    if (!s)
        s = bindf(u, st, f, d, err, fmt, i, e);
    snprintf(fmt, sizeof fmt, "model.layers.%%d.%s.down_proj.weight", p);
    if (!s)
        s = bindf(dn, st, d, f, err, fmt, i, e);
    return s;
}

/* A MoE layer's names: as released (experts one by one), or as transformers' modules hold
 * them (what Tencent's convert_ckpt_to_outer.py writes: experts fused into 3-D tensors). */
struct moe_names {
    const char *router, *bias, *shared;
};
static const struct moe_names released = {"mlp.router.gate.weight", "mlp.expert_bias",
                                          "mlp.shared_mlp"};
static const struct moe_names fused = {"mlp.gate.weight", "mlp.e_score_correction_bias",
                                       "mlp.shared_experts"};

/* The selection bias as float32 host memory (zeros when the config says none is stored). */
static hy_status bind_bias(struct hy_moe_weights *mw, const struct hy_st *st,
                           const struct hy_config *c, int i, const char *name,
                           struct hy_err *err)
{
    const int64_t E = c->num_experts;
    mw->bias = calloc((size_t)E, sizeof *mw->bias);
    if (!mw->bias)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (!c->moe_expert_bias)
        return HY_OK;
    struct hy_weight b;
    char fmt[96];
    snprintf(fmt, sizeof fmt, "model.layers.%%d.%s", name);
    hy_status s = bindf(&b, st, 0, E, err, fmt, i, 0);
    if (!s)
        hy_dtype_to_f32(mw->bias, b.data, b.dtype, (size_t)E);
    return s;
}

/* w[e] = rows row0 .. row0+rows-1 of expert e's [stack_rows, cols] slab of the 3-D tensor
 * model.layers.i.mlp.experts.<what>, [E, stack_rows, cols]. */
static hy_status bind_stack(struct hy_weight *w, const struct hy_st *st, int i, const char *what,
                            int64_t E, int64_t stack_rows, int64_t row0, int64_t rows,
                            int64_t cols, struct hy_err *err)
{
    char name[HY_ST_MAX_NAME];
    snprintf(name, sizeof name, "model.layers.%d.mlp.experts.%s", i, what);
    const struct hy_st_tensor *t = hy_st_find(st, name);
    if (!t || t->n_dims != 3 || t->shape[0] != E || t->shape[1] != stack_rows ||
        t->shape[2] != cols)
        return hy_err_set(err, HY_E_FORMAT, "%s tensor %s: the config needs [%lld,%lld,%lld]",
                          t ? "shape of" : "missing", name, (long long)E, (long long)stack_rows,
                          (long long)cols);
    if (t->dtype != HY_DTYPE_F32 && t->dtype != HY_DTYPE_F16 && t->dtype != HY_DTYPE_BF16)
        return hy_err_set(err, HY_E_UNSUPPORTED, "tensor %s is %s; hy_v3 reads F32, F16 and BF16",
                          name, hy_dtype_name(t->dtype));
    const size_t rb = hy_dtype_row_bytes(t->dtype, cols);
    for (int64_t e = 0; e < E; e++)
        w[e] = (struct hy_weight){t->dtype, rows, cols,
                                  (const char *)t->data + (size_t)(e * stack_rows + row0) * rb};
    return HY_OK;
}

static hy_status bind_moe(struct hy_moe_weights *mw, const struct hy_st *st,
                          const struct hy_config *c, int i, struct hy_err *err)
{
    const int64_t d = c->hidden_size, f = c->moe_intermediate_size, E = c->num_experts;
    char name[HY_ST_MAX_NAME], fmt[96];
    snprintf(name, sizeof name, "model.layers.%d.mlp.experts.gate_up_proj", i);
    const struct moe_names *nm = hy_st_find(st, name) ? &fused : &released;
    snprintf(fmt, sizeof fmt, "model.layers.%%d.%s", nm->router);
    hy_status s = bindf(&mw->router, st, E, d, err, fmt, i, 0);
    if (!s)
        s = bind_bias(mw, st, c, i, nm->bias, err);
    if (!s)
        s = bind_swiglu(&mw->sh_gate, &mw->sh_up, &mw->sh_down, st, d, f * c->num_shared_experts,
                        nm->shared, i, 0, err);
    if (nm == &fused) { /* gate rows first in gate_up_proj, as HYV3Experts chunks it */
        if (!s)
            s = bind_stack(mw->gate, st, i, "gate_up_proj", E, 2 * f, 0, f, d, err);
        if (!s)
            s = bind_stack(mw->up, st, i, "gate_up_proj", E, 2 * f, f, f, d, err);
        if (!s)
            s = bind_stack(mw->down, st, i, "down_proj", E, d, 0, d, f, err);
        return s;
    }
    for (int e = 0; !s && e < E; e++)
        s = bind_swiglu(&mw->gate[e], &mw->up[e], &mw->down[e], st, d, f, "mlp.experts.%d", i, e,
                        err);
    return s;
}

static int64_t elems(const struct hy_weight *w) { return w->rows * w->cols; }

/* Parameters: all of them, and those one token uses (k of the E experts a MoE layer). */
void hy_v3_count_params(struct hy_model *m)
{
    const struct hy_config *c = &m->cfg;
    int64_t n = elems(&m->tok_embd) + elems(&m->out_norm) + elems(&m->lm_head), idle = 0;
    for (int i = 0; i < c->num_hidden_layers; i++) {
        const struct hy_layer_weights *l = &m->layers[i];
        const struct hy_weight *ws[] = {&l->attn_norm, &l->wq, &l->wk,     &l->wv,
                                        &l->q_norm,    &l->k_norm, &l->wo, &l->ffn_norm};
        for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++)
            n += elems(ws[k]);
        if (!l->moe) {
            n += elems(&l->w_gate) + elems(&l->w_up) + elems(&l->w_down);
            continue;
        }
        const struct hy_moe_weights *mw = l->moe;
        int64_t expert = elems(&mw->gate[0]) + elems(&mw->up[0]) + elems(&mw->down[0]);
        n += elems(&mw->router) + c->num_experts + c->num_experts * expert + elems(&mw->sh_gate) +
             elems(&mw->sh_up) + elems(&mw->sh_down);
        idle += (c->num_experts - c->num_experts_per_tok) * expert;
    }
    m->n_params = n;
    m->n_active_params = n - idle;
}

static hy_status bind_layers(struct hy_model *m, struct hy_err *err)
{
    const struct hy_config *c = &m->cfg;
    const size_t E = (size_t)c->num_experts;
    m->layers = calloc((size_t)c->num_hidden_layers, sizeof *m->layers);
    m->moe = calloc((size_t)c->n_moe_layers + 1, sizeof *m->moe);
    if (!m->layers || !m->moe)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for %lld layers",
                          (long long)c->num_hidden_layers);
    hy_status s = HY_OK;
    for (int i = 0, j = 0; !s && i < c->num_hidden_layers; i++) {
        struct hy_layer_weights *l = &m->layers[i];
        s = hy_v3_bind_attn(l, m->st, NULL, c, i, err);
        if (s)
            break;
        if (!c->layer_moe[i]) {
            s = bind_swiglu(&l->w_gate, &l->w_up, &l->w_down, m->st, c->hidden_size,
                            c->intermediate_size, "mlp", i, 0, err);
            continue;
        }
        struct hy_moe_weights *mw = &m->moe[j++];
        mw->gate = calloc(3 * E, sizeof *mw->gate);
        if (!mw->gate)
            s = hy_err_set(err, HY_E_NOMEM, "out of memory");
        if (!s) {
            mw->up = mw->gate + E;
            mw->down = mw->gate + 2 * E;
            s = bind_moe(mw, m->st, c, i, err);
        }
        l->moe = mw;
    }
    return s;
}

hy_status hy_v3_check_load(const struct hy_model *m, enum hy_dtype quant, struct hy_err *err)
{
    if (m->be->i->weight_upload && !m->be->i->moe_route)
        return hy_err_set(err, HY_E_UNSUPPORTED, "hy_v3 needs the mixture-of-experts ops on a "
                          "backend with device memory (the %s backend has none)",
                          m->be->i->name);
    if (quant == HY_DTYPE_F8_E4M3)
        return hy_err_set(err, HY_E_UNSUPPORTED, "hy_v3: --quant fp8 is not supported yet (q8 "
                          "and the 4-bit types are; fp8 checkpoints load as bf16)");
    return HY_OK;
}

int hy_v3_n_projections(const struct hy_config *c)
{
    return (int)(c->num_hidden_layers * 4 + (c->num_hidden_layers - c->n_moe_layers) * 3 +
                 c->n_moe_layers * (3 * c->num_experts + 3));
}

bool hy_v3_sh_fits(const struct hy_moe_weights *mw)
{
    const struct hy_weight *a[3] = {&mw->sh_gate, &mw->sh_up, &mw->sh_down};
    const struct hy_weight *b[3] = {&mw->gate[0], &mw->up[0], &mw->down[0]};
    for (int i = 0; i < 3; i++)
        if (a[i]->dtype != b[i]->dtype || a[i]->rows != b[i]->rows || a[i]->cols != b[i]->cols)
            return false;
    return true;
}

int hy_v3_projections(struct hy_model *m, struct hy_weight **ws, int cap)
{
    int n = 0;
    for (int i = 0; i < m->cfg.num_hidden_layers; i++) {
        struct hy_layer_weights *l = &m->layers[i];
        struct hy_moe_weights *mw = (struct hy_moe_weights *)l->moe;
        struct hy_weight *a[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        for (int k = 0; k < (mw ? 4 : 7); k++) {
            HY_ASSERT(n < cap);
            ws[n++] = a[k];
        }
        if (!mw)
            continue;
        struct hy_weight *sh[] = {&mw->sh_gate, &mw->sh_up, &mw->sh_down};
        const bool stacked = m->be->i->weight_upload_n && hy_v3_sh_fits(mw); /* hy_v3_upload's */
        for (int k = 0; k < (stacked ? 0 : 3); k++) {
            HY_ASSERT(n < cap);
            ws[n++] = sh[k];
        }
        for (int64_t e = 0; !m->be->i->weight_upload_n && e < 3 * m->cfg.num_experts; e++) {
            /* gate, up, down: one array */
            HY_ASSERT(n < cap);
            ws[n++] = &mw->gate[e];
        }
    }
    return n;
}

hy_status hy_v3_bind(struct hy_model *m, struct hy_err *err)
{
    const struct hy_config *c = &m->cfg;
    hy_status s = bindf(&m->tok_embd, m->st, c->vocab_size, c->hidden_size, err,
                        "model.embed_tokens.weight", 0, 0);
    if (!s)
        s = bindf(&m->out_norm, m->st, 0, c->hidden_size, err, "model.norm.weight", 0, 0);
    if (!s && c->tie_word_embeddings) /* transformers ties only when the config says so */
        m->lm_head = m->tok_embd;
    else if (!s)
        s = bindf(&m->lm_head, m->st, c->vocab_size, c->hidden_size, err, "lm_head.weight", 0, 0);
    if (!s)
        s = bind_layers(m, err);
    if (!s)
        hy_v3_count_params(m);
    return s;
}

void hy_v3_unbind(struct hy_model *m)
{
    hy_v3_dev_free(m);
    for (int64_t j = 0; m->moe && j < m->cfg.n_moe_layers; j++) {
        free(m->moe[j].bias);
        free(m->moe[j].gate);
    }
    free(m->moe);
    m->moe = NULL;
}

/* The device path's buffers: a chunk's logits, shared-expert sum, routing, the experts'
 * SwiGLU outputs and down projections, all in backend memory. */
static bool dev_scratch(struct hy_moe_scratch *ms, struct hy_backend *be,
                        const struct hy_config *c, int max_tokens)
{
    const size_t T = (size_t)(max_tokens < HY_V3_DEV_CHUNK ? max_tokens : HY_V3_DEV_CHUNK);
    const size_t d = (size_t)c->hidden_size, E = (size_t)c->num_experts;
    const size_t P = T * (size_t)c->num_experts_per_tok, F = (size_t)c->moe_intermediate_size;
    ms->dev = true;
    ms->chunk = (int)T;
    ms->logits = be->i->alloc(be, T * E * sizeof(float));
    ms->acc = be->i->alloc(be, T * d * sizeof(float));
    /* + the shared expert's rows when it rides along (hy_moe_route.shared) */
    const size_t Ps = P + HY_MOE_SHARED_MAX_T;
    ms->act = be->i->alloc(be, Ps * F * sizeof(float));
    ms->y = be->i->alloc(be, Ps * d * sizeof(float));
    ms->r.ids = be->i->alloc(be, P * sizeof(int32_t));
    ms->r.rows = be->i->alloc(be, P * sizeof(int32_t));
    ms->r.sel = be->i->alloc(be, P * sizeof(int32_t));
    ms->r.w = be->i->alloc(be, P * sizeof(float));
    ms->r.off = be->i->alloc(be, (E + 1) * sizeof(int32_t));
    ms->r.act = be->i->alloc(be, (E + 1) * sizeof(int32_t));
    ms->r.xq = be->i->alloc(be, hy_moe_xq_bytes((int64_t)T, c->num_experts_per_tok,
                                                c->hidden_size, c->moe_intermediate_size));
    return ms->logits && ms->acc && ms->act && ms->y && ms->r.ids && ms->r.rows && ms->r.sel &&
           ms->r.w && ms->r.off && ms->r.act && ms->r.xq;
}

/* Whether the MoE layers run through the backend's grouped MoE ops (backend.h): always on
 * a backend with device memory (hy_v3_upload put the experts there); on a host-memory
 * backend that has them (the fast CPU one) when in every layer the gate and up experts
 * share one dtype, the down experts one, and the backend takes both. Else expert by
 * expert through matmul (the reference backend: the specification). */
static bool grouped(const struct hy_model *m)
{
    const struct hy_backend_i *op = m->be->i;
    if (m->v3dev)
        return true;
    if (!op->moe_route || op->weight_upload)
        return false;
    for (int64_t j = 0; j < m->cfg.n_moe_layers; j++) {
        const struct hy_moe_weights *mw = &m->moe[j];
        for (int64_t e = 0; e < m->cfg.num_experts; e++)
            if (mw->gate[e].dtype != mw->gate[0].dtype || mw->up[e].dtype != mw->gate[0].dtype ||
                mw->down[e].dtype != mw->down[0].dtype)
                return false;
        if (!op->moe_takes(mw->gate[0].dtype) || !op->moe_takes(mw->down[0].dtype))
            return false;
    }
    return true;
}

hy_status hy_v3_scratch_create(struct hy_scratch *s, const struct hy_model *m,
                               struct hy_err *err)
{
    const struct hy_config *c = &m->cfg;
    struct hy_backend *be = m->be;
    if (c->arch != HY_ARCH_HYV3)
        return HY_OK;
    const size_t T = (size_t)s->max_tokens, d = (size_t)c->hidden_size;
    const size_t E = (size_t)c->num_experts, Tk = T * (size_t)c->num_experts_per_tok;
    struct hy_moe_scratch *ms = calloc(1, sizeof *ms);
    s->moe = ms;
    if (!ms)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    if (grouped(m))
        return dev_scratch(ms, be, c, s->max_tokens)
                   ? HY_OK
                   : hy_err_set(err, HY_E_NOMEM, "out of backend memory for the routing of a "
                                "%d-token chunk", ms->chunk);
    ms->logits = be->i->alloc(be, T * E * sizeof(float));
    ms->xe = be->i->alloc(be, T * d * sizeof(float));
    ms->ye = be->i->alloc(be, T * d * sizeof(float));
    ms->acc = be->i->alloc(be, T * d * sizeof(float));
    ms->ids = malloc(Tk * sizeof *ms->ids);
    ms->rows = malloc(Tk * sizeof *ms->rows);
    ms->w = malloc(Tk * sizeof *ms->w);
    ms->rw = malloc(Tk * sizeof *ms->rw);
    ms->off = malloc((E + 1) * sizeof *ms->off);
    if (!ms->logits || !ms->xe || !ms->ye || !ms->acc || !ms->ids || !ms->rows || !ms->w ||
        !ms->rw || !ms->off)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for the routing of a %zu-token step",
                          T);
    return HY_OK;
}

void hy_v3_scratch_destroy(struct hy_scratch *s, const struct hy_model *m)
{
    struct hy_moe_scratch *ms = s->moe;
    if (!ms)
        return;
    void *bufs[] = {ms->logits, ms->xe,     ms->ye,    ms->acc,   ms->act,   ms->y,   ms->r.ids,
                    ms->r.rows, ms->r.sel,  ms->r.w,   ms->r.off, ms->r.act, ms->r.xq};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            m->be->i->free(m->be, bufs[i]);
    free(ms->ids);
    free(ms->rows);
    free(ms->w);
    free(ms->rw);
    free(ms->off);
    free(ms);
    s->moe = NULL;
}

/* out [n, hidden] = down(silu(gate(x)) * up(x)) over n rows of x, in s->gate / s->up. */
static void swiglu(const struct hy_model *m, struct hy_scratch *s, float *out, const float *x,
                   const struct hy_weight *g, const struct hy_weight *u,
                   const struct hy_weight *dn, int n)
{
    const struct hy_backend_i *op = m->be->i;
    if (op->matmul_glu) { /* one quantization of x, one pool call (the fast CPU backend) */
        op->matmul_glu(m->be, s->gate, s->up, x, g, u, n);
    } else {
        op->matmul(m->be, s->gate, x, g, n);
        op->matmul(m->be, s->up, x, u, n);
        op->silu_mul(m->be, s->gate, s->gate, s->up, (int64_t)n * g->rows);
    }
    op->matmul(m->be, out, s->gate, dn, n);
}

/* The grouped path (device, or the fast CPU backend's host memory): per chunk, router
 * logits (float32 weights: SGEMM on CUDA), routing and grouping, the shared expert into
 * acc, the routed experts grouped, the weighted sum; every op reads the routing from
 * backend memory. */
static void moe_block_dev(const struct hy_model *m, struct hy_scratch *s, int il, int T)
{
    const struct hy_config *c = &m->cfg;
    const struct hy_moe_weights *mw = m->layers[il].moe;
    struct hy_moe_scratch *ms = s->moe;
    const struct hy_backend_i *op = m->be->i;
    const int E = (int)c->num_experts, k = (int)c->num_experts_per_tok;
    const int64_t d = c->hidden_size;
    for (int t0 = 0; t0 < T; t0 += ms->chunk) {
        const int n = T - t0 < ms->chunk ? T - t0 : ms->chunk;
        float *x = s->h + (int64_t)t0 * d;
        /* a decode step's shared expert is one more group of the grouped ops (its sum
         * then in y after the routed places), larger ones go through the matmuls */
        const bool sh = mw->sh_stacked && n <= HY_MOE_SHARED_MAX_T;
        const float *acc = sh ? ms->y + (int64_t)n * k * d : ms->acc;
        ms->r.shared = sh;
        op->matmul(m->be, ms->logits, x, &mw->router, n); /* [n, E] */
        op->moe_route(m->be, &ms->r, ms->logits, mw->dbias ? mw->dbias : mw->bias, n, E, k,
                      (float)c->router_scaling_factor);
        if (!sh)
            swiglu(m, s, ms->acc, x, &mw->sh_gate, &mw->sh_up, &mw->sh_down, n);
        op->moe_gate_up(m->be, ms->act, x, &mw->gate[0], &mw->up[0], E, &ms->r, n, k);
        op->moe_down(m->be, ms->y, ms->act, &mw->down[0], E, &ms->r, n, k);
        op->moe_combine(m->be, x, acc, ms->y, &ms->r, n, k, d);
    }
}

/* The CPU backends keep activations in host memory, so the routing reads the logits and
 * the combine writes the sum where they lie. */
void hy_v3_moe_block(const struct hy_model *m, struct hy_scratch *s, int il, int T)
{
    const struct hy_config *c = &m->cfg;
    const struct hy_moe_weights *mw = m->layers[il].moe;
    struct hy_moe_scratch *ms = s->moe;
    const struct hy_backend_i *op = m->be->i;
    const int E = (int)c->num_experts, k = (int)c->num_experts_per_tok;
    const int64_t d = c->hidden_size;
    HY_ASSERT(mw && ms && T <= s->max_tokens);
    if (ms->dev) {
        moe_block_dev(m, s, il, T);
        return;
    }
    op->matmul(m->be, ms->logits, s->h, &mw->router, T); /* [T, E], float32 */
    hy_moe_route(ms->logits, mw->bias, T, E, k, (float)c->router_scaling_factor, ms->ids, ms->w);
    hy_moe_group(ms->ids, ms->w, T, k, E, ms->off, ms->rows, ms->rw);
    swiglu(m, s, ms->acc, s->h, &mw->sh_gate, &mw->sh_up, &mw->sh_down, T); /* shared expert */
    for (int e = 0; e < E; e++) {
        const int n = ms->off[e + 1] - ms->off[e];
        if (n == 0)
            continue;
        op->copy_rows(m->be, ms->xe, s->h, ms->rows + ms->off[e], n, d);
        swiglu(m, s, ms->ye, ms->xe, &mw->gate[e], &mw->up[e], &mw->down[e], n);
        hy_moe_combine(ms->acc, ms->ye, ms->rows + ms->off[e], ms->rw + ms->off[e], n, d);
    }
    memcpy(s->h, ms->acc, (size_t)T * (size_t)d * sizeof(float));
}
