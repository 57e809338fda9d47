/* cpu.c: the two CPU backend objects. The reference backend calls the hy_ref_* ops
 * directly. The fast backend runs matmul and attention through the SIMD kernels chosen at
 * creation (matmul.c, attention.c); the cheap element-wise ops split their rows over the
 * pool and run the reference loop on each slice, or, for rope, the same arithmetic with
 * cos/sin computed once per token instead of once per head, so they match the reference
 * bit for bit. Memory is aligned_alloc(64) host memory. */
#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Fewest elements a thread gets in the element-wise ops (below: fewer threads). */
#define ELEM_GRAIN 4096

static struct hy_cpu_ctx *ctx_of(struct hy_backend *be)
{
    return be->ctx;
}

static void ctx_free(struct hy_cpu_ctx *c)
{
    hy_pool_destroy(c->pool);
    for (int i = 0; i < HY_POOL_MAX_THREADS; i++)
        free(c->pack[i]);
    free(c);
}

static void cpu_destroy(struct hy_backend *be)
{
    if (!be)
        return;
    ctx_free(ctx_of(be));
    free(be);
}

/* Buffers of at least this size (weights, the KV pool) start on a 2 MiB boundary and ask for
 * transparent huge pages on their whole 2 MiB pages (a hint; the tail stays in small pages,
 * so no memory is added): streaming reads are faster on huge pages than through 4 KiB
 * pages (figures in bench/RESULTS.md). */
#define HUGE_BYTES ((size_t)2 << 20)

static void *cpu_alloc(struct hy_backend *be, size_t bytes)
{
    (void)be;
    size_t n = (bytes + 63) & ~(size_t)63;
    if (n < bytes)
        return NULL; /* overflow */
    if (n < HUGE_BYTES)
        return aligned_alloc(64, n ? n : 64);
    size_t m = (n + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
    if (m < n)
        return NULL;
    void *p = aligned_alloc(HUGE_BYTES, m);
#ifdef MADV_HUGEPAGE
    if (p)
        (void)madvise(p, n & ~(HUGE_BYTES - 1), MADV_HUGEPAGE); /* a hint: errors are harmless */
#endif
    return p;
}

static void cpu_free(struct hy_backend *be, void *p)
{
    (void)be;
    free(p);
}

static void cpu_copy(struct hy_backend *be, void *dst, const void *src, size_t bytes)
{
    (void)be;
    if (bytes)
        memcpy(dst, src, bytes);
}

/* ---- reference backend: the hy_ref_* ops behind the interface ---- */

static void ref_embed(struct hy_backend *be, float *out, const struct hy_weight *table,
                      const int32_t *ids, int T)
{
    (void)be;
    hy_ref_embed(out, table, ids, T);
}

static void ref_rmsnorm(struct hy_backend *be, float *out, const float *x,
                        const struct hy_weight *w, int64_t rows, int64_t d, float eps)
{
    (void)be;
    hy_ref_rmsnorm(out, x, w, rows, d, eps);
}

static void ref_matmul(struct hy_backend *be, float *out, const float *x,
                       const struct hy_weight *w, int T)
{
    (void)be;
    hy_ref_matmul(out, x, w, T);
}

static void ref_rope(struct hy_backend *be, float *x, const int32_t *pos, int T, int n_heads,
                     int hd, const float *inv_freq)
{
    (void)be;
    hy_ref_rope(x, pos, T, n_heads, hd, inv_freq);
}

static void ref_attention(struct hy_backend *be, float *out, const float *q, const void *kp,
                          const void *vp, int bs, const struct hy_attn_seq *seqs, int n_seqs,
                          int n_head, int n_kv, int hd, float scale)
{
    (void)be;
    hy_ref_attention(out, q, kp, vp, bs, seqs, n_seqs, n_head, n_kv, hd, scale);
}

/* kv_store and copy_rows move a few rows per step: plain copies for both backends. */
static void cpu_kv_store(struct hy_backend *be, void *pool, const float *rows,
                         const int32_t *slots, int T, int64_t cols)
{
    (void)be;
    hy_ref_kv_store(pool, rows, slots, T, cols);
}

static void cpu_copy_rows(struct hy_backend *be, float *dst, const float *src, const int32_t *idx,
                          int n, int64_t cols)
{
    (void)be;
    hy_ref_copy_rows(dst, src, idx, n, cols);
}

static void ref_silu_mul(struct hy_backend *be, float *out, const float *gate, const float *up,
                         int64_t n)
{
    (void)be;
    hy_ref_silu_mul(out, gate, up, n);
}

static void ref_add(struct hy_backend *be, float *x, const float *y, int64_t n)
{
    (void)be;
    hy_ref_add(x, y, n);
}

static const struct hy_backend_i ref_iface = {
    .name = "cpu-ref",
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .embed = ref_embed,
    .rmsnorm = ref_rmsnorm,
    .matmul = ref_matmul,
    .rope = ref_rope,
    .attention = ref_attention,
    .kv_store = cpu_kv_store,
    .copy_rows = cpu_copy_rows,
    .silu_mul = ref_silu_mul,
    .add = ref_add,
};

/* ---- fast backend ---- */

/* Arguments of the element-wise ops, shared by their slice functions. */
struct ew_job {
    float *out;
    const float *a, *b;
    const struct hy_weight *w;
    const int32_t *ids;
    const float *inv_freq;
    int64_t d;
    int n_heads, hd;
    float eps;
};

static int64_t grain_rows(int64_t row_len)
{
    return row_len >= ELEM_GRAIN ? 1 : ELEM_GRAIN / (row_len > 0 ? row_len : 1);
}

static void embed_slice(void *ctx, int64_t t0, int64_t t1, int tid)
{
    const struct ew_job *j = ctx;
    (void)tid;
    hy_ref_embed(j->out + t0 * j->w->cols, j->w, j->ids + t0, (int)(t1 - t0));
}

static void fast_embed(struct hy_backend *be, float *out, const struct hy_weight *table,
                       const int32_t *ids, int T)
{
    struct ew_job j = {.out = out, .w = table, .ids = ids};
    hy_pool_for(ctx_of(be)->pool, T, grain_rows(table->cols), embed_slice, &j);
}

static void rmsnorm_slice(void *ctx, int64_t r0, int64_t r1, int tid)
{
    const struct ew_job *j = ctx;
    (void)tid;
    hy_ref_rmsnorm(j->out + r0 * j->d, j->a + r0 * j->d, j->w, r1 - r0, j->d, j->eps);
}

static void fast_rmsnorm(struct hy_backend *be, float *out, const float *x,
                         const struct hy_weight *w, int64_t rows, int64_t d, float eps)
{
    struct ew_job j = {.out = out, .a = x, .w = w, .d = d, .eps = eps};
    hy_pool_for(ctx_of(be)->pool, rows, grain_rows(d), rmsnorm_slice, &j);
}

static void fast_matmul(struct hy_backend *be, float *out, const float *x,
                        const struct hy_weight *w, int T)
{
    hy_cpu_matmul(ctx_of(be), out, x, w, T);
}

/* q/k/v, gate/up: one quantization of x and one pool call for decode (matmul.c) */
static void fast_matmul_n(struct hy_backend *be, float *const *outs, const float *x,
                          const struct hy_weight *const *ws, int n, int T)
{
    hy_cpu_matmul_multi(ctx_of(be), n, outs, x, ws, T);
}

static void fast_silu_mul(struct hy_backend *be, float *out, const float *gate, const float *up,
                          int64_t n);

static void fast_matmul_glu(struct hy_backend *be, float *out, float *tmp, const float *x,
                            const struct hy_weight *gate, const struct hy_weight *up, int T)
{
    float *const outs[2] = {out, tmp};
    const struct hy_weight *const ws[2] = {gate, up};
    hy_cpu_matmul_multi(ctx_of(be), 2, outs, x, ws, T);
    fast_silu_mul(be, out, out, tmp, (int64_t)T * up->rows);
}

/* Tokens [t0, t1): the reference's arithmetic, with cos/sin shared by all heads. */
static void rope_slice(void *ctx, int64_t t0, int64_t t1, int tid)
{
    const struct ew_job *j = ctx;
    (void)tid;
    int half = j->hd / 2;
    float cs[HY_CPU_MAX_HEAD_DIM / 2], sn[HY_CPU_MAX_HEAD_DIM / 2];
    for (int64_t t = t0; t < t1; t++) {
        for (int i = 0; i < half; i++) {
            float theta = (float)j->ids[t] * j->inv_freq[i];
            cs[i] = cosf(theta);
            sn[i] = sinf(theta);
        }
        for (int h = 0; h < j->n_heads; h++) {
            float *v = j->out + (t * j->n_heads + h) * j->hd;
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half];
                v[i] = a * cs[i] - b * sn[i];
                v[i + half] = b * cs[i] + a * sn[i];
            }
        }
    }
}

static void fast_rope(struct hy_backend *be, float *x, const int32_t *pos, int T, int n_heads,
                      int hd, const float *inv_freq)
{
    HY_ASSERT(hd % 2 == 0 && hd > 0 && hd <= HY_CPU_MAX_HEAD_DIM);
    struct ew_job j = {.out = x, .ids = pos, .inv_freq = inv_freq, .n_heads = n_heads, .hd = hd};
    hy_pool_for(ctx_of(be)->pool, T, grain_rows((int64_t)n_heads * hd), rope_slice, &j);
}

static void fast_attention(struct hy_backend *be, float *out, const float *q, const void *kp,
                           const void *vp, int bs, const struct hy_attn_seq *seqs, int n_seqs,
                           int n_head, int n_kv, int hd, float scale)
{
    hy_cpu_attention(ctx_of(be), out, q, kp, vp, bs, seqs, n_seqs, n_head, n_kv, hd, scale);
}

static void silu_mul_slice(void *ctx, int64_t i0, int64_t i1, int tid)
{
    const struct ew_job *j = ctx;
    (void)tid;
    hy_ref_silu_mul(j->out + i0, j->a + i0, j->b + i0, i1 - i0);
}

static void fast_silu_mul(struct hy_backend *be, float *out, const float *gate, const float *up,
                          int64_t n)
{
    struct ew_job j = {.out = out, .a = gate, .b = up};
    hy_pool_for(ctx_of(be)->pool, n, ELEM_GRAIN, silu_mul_slice, &j);
}

static void add_slice(void *ctx, int64_t i0, int64_t i1, int tid)
{
    const struct ew_job *j = ctx;
    (void)tid;
    hy_ref_add(j->out + i0, j->a + i0, i1 - i0);
}

static void fast_add(struct hy_backend *be, float *x, const float *y, int64_t n)
{
    struct ew_job j = {.out = x, .a = y};
    hy_pool_for(ctx_of(be)->pool, n, ELEM_GRAIN, add_slice, &j);
}

/* The MoE ops: moe_ops.c (the experts' weights stay where they lie: no weight_upload_n) */
static void fast_moe_route(struct hy_backend *be, const struct hy_moe_route *r,
                           const float *logits, const float *bias, int T, int E, int k,
                           float scale)
{
    hy_cpu_moe_route(ctx_of(be), r, logits, bias, T, E, k, scale);
}

static void fast_moe_gate_up(struct hy_backend *be, float *act, const float *x,
                             const struct hy_weight *gate, const struct hy_weight *up, int E,
                             const struct hy_moe_route *r, int T, int k)
{
    hy_cpu_moe_gate_up(ctx_of(be), act, x, gate, up, E, r, T, k);
}

static void fast_moe_down(struct hy_backend *be, float *y, const float *act,
                          const struct hy_weight *down, int E, const struct hy_moe_route *r,
                          int T, int k)
{
    hy_cpu_moe_down(ctx_of(be), y, act, down, E, r, T, k);
}

static void fast_moe_combine(struct hy_backend *be, float *out, const float *acc,
                             const float *y, const struct hy_moe_route *r, int T, int k,
                             int64_t d)
{
    hy_cpu_moe_combine(ctx_of(be), out, acc, y, r, T, k, d);
}

static const struct hy_backend_i fast_iface = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .embed = fast_embed,
    .rmsnorm = fast_rmsnorm,
    .matmul = fast_matmul,
    .matmul_n = fast_matmul_n,
    .matmul_glu = fast_matmul_glu,
    .rope = fast_rope,
    .attention = fast_attention,
    .kv_store = cpu_kv_store,
    .copy_rows = cpu_copy_rows,
    .silu_mul = fast_silu_mul,
    .add = fast_add,
    .moe_route = fast_moe_route,
    .moe_gate_up = fast_moe_gate_up,
    .moe_down = fast_moe_down,
    .moe_combine = fast_moe_combine,
    .moe_takes = hy_cpu_moe_takes,
};

/* ---- creation ---- */

static bool pick_kernels(struct hy_cpu_kernels *k, enum hy_cpu_isa isa)
{
    switch (isa) {
    case HY_CPU_ISA_AUTO:
        if (hy_cpu_kernels_avx512(k) || hy_cpu_kernels_avx2(k))
            return true;
        hy_cpu_kernels_scalar(k);
        return true;
    case HY_CPU_ISA_SCALAR: hy_cpu_kernels_scalar(k); return true;
    case HY_CPU_ISA_AVX2: return hy_cpu_kernels_avx2(k);
    case HY_CPU_ISA_AVX512: return hy_cpu_kernels_avx512(k);
    default: return false;
    }
}

/* Whether some dtype's kernels pack weights (the threads then get pack buffers). */
static bool has_pack(const struct hy_cpu_kernels *k)
{
    for (int d = 0; d < HY_DTYPE_COUNT; d++)
        if (k->mm[d].q_pack)
            return true;
    return false;
}

static hy_status make_backend(struct hy_backend **out, const struct hy_backend_i *iface,
                              struct hy_cpu_ctx *c, struct hy_err *err)
{
    struct hy_backend *be = calloc(1, sizeof *be);
    if (!be) {
        ctx_free(c);
        return hy_err_set(err, HY_E_NOMEM, "cpu backend: out of memory");
    }
    be->i = iface;
    be->ctx = c;
    *out = be;
    return HY_OK;
}

hy_status hy_cpu_backend_create_isa(struct hy_backend **out, int n_threads, enum hy_cpu_isa isa,
                                    struct hy_err *err)
{
    *out = NULL;
    struct hy_cpu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return hy_err_set(err, HY_E_NOMEM, "cpu backend: out of memory");
    if (!pick_kernels(&c->k, isa)) {
        free(c);
        return hy_err_set(err, HY_E_UNSUPPORTED, "cpu backend: %s kernels not supported here",
                          isa == HY_CPU_ISA_AVX2 ? "avx2" : isa == HY_CPU_ISA_AVX512 ? "avx512" : "?");
    }
    hy_status st = hy_pool_create(&c->pool, n_threads, err);
    if (st != HY_OK) {
        free(c);
        return st;
    }
    c->n_threads = hy_pool_size(c->pool);
    if (has_pack(&c->k))
        for (int i = 0; i < c->n_threads; i++)
            if (!(c->pack[i] = aligned_alloc(64, HY_CPU_PACK_BUF_BYTES))) {
                ctx_free(c);
                return hy_err_set(err, HY_E_NOMEM, "cpu backend: out of memory");
            }
    return make_backend(out, &fast_iface, c, err);
}

hy_status hy_cpu_backend_create(struct hy_backend **out, int n_threads, struct hy_err *err)
{
    return hy_cpu_backend_create_isa(out, n_threads, HY_CPU_ISA_AUTO, err);
}

hy_status hy_cpu_backend_create_ref(struct hy_backend **out, struct hy_err *err)
{
    *out = NULL;
    struct hy_cpu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return hy_err_set(err, HY_E_NOMEM, "cpu backend: out of memory");
    c->n_threads = 1;
    c->ref = true;
    return make_backend(out, &ref_iface, c, err);
}

int hy_cpu_backend_threads(const struct hy_backend *be)
{
    return ((const struct hy_cpu_ctx *)be->ctx)->n_threads;
}

const char *hy_cpu_backend_isa(const struct hy_backend *be)
{
    const struct hy_cpu_ctx *c = be->ctx;
    return c->ref ? "ref" : c->k.name;
}
