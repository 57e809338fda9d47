/* share.c: weight slots and sharing identical weights between two models (share.h). */
#include "model/share.h"

#include "core/log.h"
#include "formats/safetensors.h"
#include "model/load_quant.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A layer's first 11 fields are its dense weights, one after the other. */
_Static_assert(offsetof(struct hy_layer_weights, w_down) == 10 * sizeof(struct hy_weight),
               "the layer's weights are 11 consecutive struct hy_weight");

#define SAMPLE_BYTES 4096 /* per sampled place: start, middle, end */

struct hy_weight *hy_model_slot(struct hy_model *m, int s)
{
    HY_ASSERT(s >= 0 && s < 3 + 11 * (int)m->cfg.num_hidden_layers);
    if (s < 3)
        return s == 0 ? &m->tok_embd : s == 1 ? &m->out_norm : &m->lm_head;
    return (struct hy_weight *)&m->layers[(s - 3) / 11] + (s - 3) % 11;
}

static int slot_of(const struct hy_model *m, const struct hy_weight *w)
{
    if (w == &m->tok_embd || w == &m->out_norm || w == &m->lm_head)
        return w == &m->tok_embd ? 0 : w == &m->out_norm ? 1 : 2;
    const char *a = (const char *)w, *l0 = (const char *)m->layers;
    if (!m->layers || a < l0 || a >= (const char *)(m->layers + m->cfg.num_hidden_layers))
        return -1;
    ptrdiff_t i = (a - l0) / (ptrdiff_t)sizeof *m->layers;
    ptrdiff_t k = (a - (const char *)&m->layers[i]) / (ptrdiff_t)sizeof *w;
    return k < 11 ? 3 + (int)(11 * i + k) : -1;
}

bool hy_model_is_shared(const struct hy_model *m, const struct hy_weight *w)
{
    int s = m->shared ? slot_of(m, w) : -1;
    return s >= 0 && m->shared[s];
}

hy_status hy_model_slots_keep(struct hy_model *m, struct hy_err *err)
{
    m->n_slots = 3 + 11 * (int)m->cfg.num_hidden_layers;
    m->bound = malloc((size_t)m->n_slots * sizeof *m->bound);
    if (!m->bound)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    for (int s = 0; s < m->n_slots; s++)
        m->bound[s] = *hy_model_slot(m, s);
    return HY_OK;
}

/* FNV-1a over n bytes. */
static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* A hash of the size and three sampled pieces: a cheap filter, so that only tensors that
 * may well be equal are read in full. */
static uint64_t sample_hash(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = fnv(0xcbf29ce484222325ull, (const unsigned char *)&n, sizeof n);
    size_t k = n < SAMPLE_BYTES ? n : SAMPLE_BYTES;
    h = fnv(h, p, k);
    h = fnv(h, p + n / 2 - (n / 2 < k / 2 ? n / 2 : k / 2), k / 2);
    return fnv(h, p + n - k, k);
}

/* Whether two bound weights hold the same tensor: dtype, shape and size, then the sampled
 * hash, then every byte (exact: a full hash would read both tensors as well). */
static bool same_tensor(const struct hy_weight *a, const struct hy_weight *b, size_t *bytes)
{
    if (!a->data || !b->data || a->dtype != b->dtype || a->rows != b->rows || a->cols != b->cols)
        return false;
    *bytes = hy_dtype_row_bytes(a->dtype, a->cols) * (size_t)a->rows;
    return a->data == b->data ||
           (sample_hash(a->data, *bytes) == sample_hash(b->data, *bytes) &&
            memcmp(a->data, b->data, *bytes) == 0);
}

/* A slot the loader keeps in fp8 on the backend (upload_weights' fp8 path) is made from
 * the checkpoint's fp8 codes, which the bound bf16 view does not show: never shared; nor
 * a block-scaled one (its bound codes do not show its scales). */
static bool fp8_kept(const struct hy_model *m, int s)
{
    struct hy_load_quant_view v;
    char name[HY_ST_MAX_NAME];
    if (m->bound && m->bound[s].dtype == HY_DTYPE_F8_B128)
        return true;
    if (s < 3 || !m->st || !m->be->i->weight_upload_fp8)
        return false;
    struct hy_layer_tensor t[HY_LAYER_TENSORS];
    hy_layer_tensors(&m->cfg, NULL, t);
    /* the table lists a layer's tensors in the struct's order */
    snprintf(name, sizeof name, "model.layers.%d.%s.weight", (s - 3) / 11, t[(s - 3) % 11].hf);
    return hy_load_quant_fp8_view(m->st, name, &v);
}

hy_status hy_model_share(struct hy_model *m, const struct hy_model *from, struct hy_err *err)
{
    if (!m->bound || !from->bound || m->n_slots != from->n_slots || m->be->i != from->be->i ||
        m->quant != from->quant) {
        HY_LOGI("weights not shared: the two models differ in %s",
                !m->bound || !from->bound ? "format (dense safetensors checkpoints only)"
                : m->n_slots != from->n_slots ? "layers"
                : m->be->i != from->be->i     ? "backend" : "--quant");
        return HY_OK;
    }
    m->shared = calloc((size_t)m->n_slots, sizeof *m->shared);
    if (!m->shared)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    struct hy_model *f = (struct hy_model *)from; /* read only: hy_model_slot takes no const */
    for (int s = 0; s < m->n_slots; s++) {
        size_t bytes = 0;
        if (fp8_kept(m, s) || fp8_kept(from, s) || /* first: F8_B128 data is no tensor */
            !same_tensor(&m->bound[s], &from->bound[s], &bytes))
            continue;
        *hy_model_slot(m, s) = *hy_model_slot(f, s);
        m->shared[s] = true;
        m->n_shared++;
        m->shared_bytes += (int64_t)bytes;
    }
    if (from->weights_uploaded)
        hy_st_release_pages(from->st); /* the comparison paged its checkpoint in again */
    HY_LOGI("weights shared with the model loaded before: %d of %d tensors (%.1f MiB)",
            m->n_shared, m->n_slots, (double)m->shared_bytes / (1 << 20));
    return HY_OK;
}
