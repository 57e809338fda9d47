/* hy_v3_dev.c: hy_v3's weights into device memory (hy_v3_upload; hy_v3.h has the contract).
 * Every buffer made here is listed in m->v3dev and freed from that list, so a failure
 * halfway leaves nothing behind once the model is destroyed. */
#include "model/hy_v3.h"

#include "core/log.h"
#include "core/quant.h"
#include "core/threads.h"

#include <stdlib.h>
#include <string.h>

struct hy_v3_dev {
    void **bufs;
    int n, cap;
    struct hy_pool *pool; /* host quantization of the experts (NULL: this thread) */
    float *rows;          /* [pool size, max cols] quantization scratch */
};

static hy_status keep(struct hy_model *m, const void *p, struct hy_err *err)
{
    struct hy_v3_dev *v = m->v3dev;
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 256;
        void **b = realloc(v->bufs, (size_t)cap * sizeof *b);
        if (!b) {
            m->be->i->free(m->be, (void *)p);
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        }
        v->bufs = b;
        v->cap = cap;
    }
    v->bufs[v->n++] = (void *)p;
    return HY_OK;
}

static hy_status up(struct hy_model *m, struct hy_weight *w, struct hy_err *err)
{
    hy_status s = m->be->i->weight_upload(m->be, w, err);
    return s ? s : keep(m, w->data, err);
}

/* n float32 values from host memory into a new device buffer. */
static hy_status up_floats(struct hy_model *m, float **out, const float *host, size_t n,
                           struct hy_err *err)
{
    float *d = m->be->i->alloc(m->be, n * sizeof *d);
    if (!d)
        return hy_err_set(err, HY_E_NOMEM, "out of device memory (%zu floats)", n);
    m->be->i->upload(m->be, d, host, n * sizeof *d);
    *out = d;
    return keep(m, d, err);
}

/* w as float32 in device memory (exact from bf16/f16/f32). */
static hy_status up_f32(struct hy_model *m, struct hy_weight *w, struct hy_err *err)
{
    const size_t n = (size_t)(w->rows * w->cols);
    float *host = malloc(n * sizeof *host), *d = NULL;
    if (!host)
        return hy_err_set(err, HY_E_NOMEM, "out of memory for a float32 copy (%zu values)", n);
    hy_dtype_to_f32(host, w->data, w->dtype, n);
    hy_status s = up_floats(m, &d, host, n, err);
    free(host);
    if (!s)
        *w = (struct hy_weight){HY_DTYPE_F32, w->rows, w->cols, d};
    return s;
}

/* The type an expert matrix of `cols` in-features is quantized to (load.c's rule). */
static enum hy_dtype quant_for(enum hy_dtype q, int64_t cols)
{
    return q == HY_DTYPE_Q4_G128 && cols % HY_Q4_G128_BLOCK ? HY_DTYPE_Q4_0 : q;
}

struct qjob {
    const struct hy_weight *src;
    unsigned char *dst;
    enum hy_dtype dt;
    float *rows;
};

static void quant_rows(void *ctx, int64_t r0, int64_t r1, int tid)
{
    const struct qjob *j = ctx;
    const struct hy_weight *w = j->src;
    float *row = j->rows + (size_t)tid * (size_t)w->cols;
    const size_t src_rb = hy_dtype_row_bytes(w->dtype, w->cols);
    const size_t rb = hy_dtype_row_bytes(j->dt, w->cols);
    for (int64_t r = r0; r < r1; r++) {
        hy_dtype_to_f32(row, (const unsigned char *)w->data + (size_t)r * src_rb, w->dtype,
                        (size_t)w->cols);
        hy_dtype_from_f32(j->dst + (size_t)r * rb, row, j->dt, (size_t)w->cols);
    }
}

/* E experts' matrices as one stack; quantized on the host first when m is. */
static hy_status up_experts(struct hy_model *m, struct hy_weight *ws, int E, struct hy_err *err)
{
    struct hy_v3_dev *v = m->v3dev;
    const struct hy_backend_i *op = m->be->i;
    enum hy_dtype dt = m->weights_quantized ? quant_for(m->quant, ws[0].cols) : HY_DTYPE_BF16;
    if (!op->moe_takes(dt))
        return hy_err_set(err, HY_E_UNSUPPORTED, "hy_v3 on the %s backend: experts in %s are "
                          "not supported (bf16, q8 and q4 are)", op->name, hy_dtype_name(dt));
    if (!m->weights_quantized) { /* block types (GGUF files) are kept as they are */
        hy_status s = op->weight_upload_n(m->be, ws, E, err);
        if (!s)
            s = keep(m, ws[0].data, err);
        if (!s && !op->moe_takes(ws[0].dtype))
            s = hy_err_set(err, HY_E_UNSUPPORTED, "hy_v3 on the %s backend: experts in %s are "
                           "not supported (bf16, q8_0, q4_0 and --quant q8/q4 are)", op->name,
                           hy_dtype_name(ws[0].dtype));
        return s;
    }
    if (ws[0].cols % hy_dtype_block_elems(dt))
        return hy_err_set(err, HY_E_UNSUPPORTED, "%s needs in-features that are multiples of "
                          "%lld; an expert has %lld", hy_dtype_name(dt),
                          (long long)hy_dtype_block_elems(dt), (long long)ws[0].cols);
    const size_t bytes = hy_dtype_row_bytes(dt, ws[0].cols) * (size_t)ws[0].rows;
    struct hy_weight *q = malloc((size_t)E * sizeof *q);
    unsigned char *host = malloc((size_t)E * bytes);
    hy_status s = HY_OK;
    if (!q || !host) {
        s = hy_err_set(err, HY_E_NOMEM, "out of host memory quantizing %d experts", E);
        goto out;
    }
    for (int e = 0; e < E; e++) {
        struct qjob j = {&ws[e], host + (size_t)e * bytes, dt, v->rows};
        hy_pool_for(v->pool, ws[e].rows, 16, quant_rows, &j);
        q[e] = (struct hy_weight){dt, ws[e].rows, ws[e].cols, j.dst};
    }
    s = op->weight_upload_n(m->be, q, E, err);
    if (!s) {
        memcpy(ws, q, (size_t)E * sizeof *q);
        s = keep(m, ws[0].data, err);
    }
out:
    free(q);
    free(host);
    return s;
}

/* The E experts' gate (or up, or down) matrices as one stack, with the shared expert's sh
 * as matrix E when stack_sh (then sh points there). */
static hy_status up_stack(struct hy_model *m, struct hy_weight *ws, struct hy_weight *sh, int E,
                          bool stack_sh, struct hy_err *err)
{
    if (!stack_sh)
        return up_experts(m, ws, E, err);
    struct hy_weight *all = malloc((size_t)(E + 1) * sizeof *all);
    if (!all)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    memcpy(all, ws, (size_t)E * sizeof *all);
    all[E] = *sh;
    hy_status s = up_experts(m, all, E + 1, err);
    if (!s) {
        memcpy(ws, all, (size_t)E * sizeof *all);
        *sh = all[E];
    }
    free(all);
    return s;
}

static hy_status up_layer(struct hy_model *m, struct hy_layer_weights *l, struct hy_err *err)
{
    const bool q = m->weights_quantized;
    struct hy_weight *norms[] = {&l->attn_norm, &l->q_norm, &l->k_norm, &l->ffn_norm};
    struct hy_weight *proj[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
    hy_status s = HY_OK;
    for (size_t i = 0; i < 4 && !s; i++)
        s = up(m, norms[i], err);
    for (int i = 0; !q && i < (l->moe ? 4 : 7) && !s; i++)
        s = up(m, proj[i], err);
    struct hy_moe_weights *mw = (struct hy_moe_weights *)l->moe;
    if (s || !mw)
        return s;
    const int E = (int)m->cfg.num_experts;
    s = up_f32(m, &mw->router, err);
    if (!s)
        s = up_floats(m, &mw->dbias, mw->bias, (size_t)E, err);
    struct hy_weight *sh[] = {&mw->sh_gate, &mw->sh_up, &mw->sh_down};
    const bool stack_sh = hy_v3_sh_fits(mw);
    for (int i = 0; !q && !stack_sh && i < 3 && !s; i++)
        s = up(m, sh[i], err);
    if (!s)
        s = up_stack(m, mw->gate, sh[0], E, stack_sh, err);
    if (!s)
        s = up_stack(m, mw->up, sh[1], E, stack_sh, err);
    if (!s)
        s = up_stack(m, mw->down, sh[2], E, stack_sh, err);
    mw->sh_stacked = !s && stack_sh;
    return s;
}

hy_status hy_v3_upload(struct hy_model *m, struct hy_err *err)
{
    const struct hy_backend_i *op = m->be->i;
    HY_ASSERT(op->weight_upload && op->weight_upload_n && !m->v3dev);
    struct hy_v3_dev *v = calloc(1, sizeof *v);
    if (!v)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    m->v3dev = v;
    if (hy_pool_create(&v->pool, 0, err) != HY_OK)
        v->pool = NULL; /* quantize on this thread alone */
    const int64_t maxc = m->cfg.hidden_size > m->cfg.moe_intermediate_size
                             ? m->cfg.hidden_size
                             : m->cfg.moe_intermediate_size;
    v->rows = malloc((size_t)hy_pool_size(v->pool) * (size_t)maxc * sizeof(float));
    if (!v->rows)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    const bool tied = m->lm_head.data == m->tok_embd.data;
    /* a 4-bit model's table is Q8_0 on the device already (the loader's quantize_embedding) */
    hy_status s = m->embd_quantized ? HY_OK : up(m, &m->tok_embd, err);
    if (!s)
        s = up(m, &m->out_norm, err);
    if (!s && tied && !m->weights_quantized)
        m->lm_head = m->tok_embd;
    else if (!s && !m->weights_quantized)
        s = up_f32(m, &m->lm_head, err); /* the head in float32, as transformers computes it */
    for (int i = 0; i < m->cfg.num_hidden_layers && !s; i++)
        s = up_layer(m, &m->layers[i], err);
    hy_pool_destroy(v->pool);
    v->pool = NULL;
    free(v->rows);
    v->rows = NULL;
    if (!s)
        HY_LOGI("hy_v3 on the %s backend: %lld MoE layers of %lld experts, routing and experts "
                "on the device (%s)", op->name, (long long)m->cfg.n_moe_layers,
                (long long)m->cfg.num_experts,
                m->weights_quantized ? hy_dtype_name(m->quant) : "bf16, head float32");
    return s;
}

void hy_v3_dev_free(struct hy_model *m)
{
    struct hy_v3_dev *v = m->v3dev;
    if (!v)
        return;
    for (int i = 0; i < v->n; i++)
        m->be->i->free(m->be, v->bufs[i]);
    hy_pool_destroy(v->pool);
    free(v->rows);
    free(v->bufs);
    free(v);
    m->v3dev = NULL;
}
