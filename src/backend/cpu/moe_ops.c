/* moe_ops.c: the fast CPU backend's mixture-of-experts ops (backend.h: moe_route,
 * moe_gate_up, moe_down, moe_combine, moe_takes), on host memory.
 *
 * moe_route is moe.h's reference (hy_moe_route, then hy_moe_plan's grouping). The expert
 * products run all of a step's routed experts in one pool call: the work items are
 * (expert with places, 32-row panel of its matrix), handed out by matmul.c's balanced
 * split, so at batch 1 the threads share the k experts' rows instead of waiting on one
 * expert's. An item reads its panel's weights from memory once and runs every place of its
 * expert against them, four at a time. gate_up computes the gate and up panels of the same
 * rows together and writes silu(g) * u; down writes each place's row of y.
 *
 * The activations are quantized (and q_prep'd) once per token for gate_up, once per place
 * for down, into the context's xq arrays (a slab of rows at a time when they do not fit;
 * a slab's items skip the places outside it). One arithmetic for every place of a call,
 * chosen from the dtype and the call's shape (T, k, E) alone: where the kernels pack
 * weights (q_pack / q_gemm: the GGUF types and Q4_G128 on AVX-512 VNNI) and the experts
 * have pack_min_places() places on average (prompts), every place goes through q_gemm
 * against the packed panel, whose outputs do not depend on the other tokens of its tile;
 * else (decode, small batches) through the dtype's q_dot (with q_prep's form where the
 * dtype has one), or for float weights dot. So for a given call size a token's outputs do
 * not depend on which tokens share its experts (how many places an expert has), nor on
 * the thread count, bit for bit; like the dense matmul's, they may differ between call
 * sizes (float sums in another order). */
#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/moe.h"

#include <math.h>

/* Rows of an item's panel (the packed kernels' panel). */
#define PANEL HY_CPU_PANEL
/* Places an item runs together: q_gemm's token tile. */
#define GROUP HY_CPU_GEMM_TOKENS

/* Most panels one piece of the balanced split holds: two thirds of a 30B-A3B expert's gate
 * and up rows (24 panels), a quarter of its down rows (64 panels). */
#define MAX_GRAB_PANELS 16

enum moe_path { PATH_FLOAT, PATH_DOT, PATH_PACKED };

struct moe_job {
    struct hy_cpu_ctx *c;
    const struct hy_cpu_mm_kernels *k;
    enum moe_path path;
    const struct hy_weight *w0, *w1; /* the E gate (or down) weights; the E up weights or NULL */
    const int32_t *off, *rows, *act; /* the routing (struct hy_moe_route) */
    const float *x;                  /* float input rows [.., cols]: tokens or places */
    float *out;                      /* out + p * rows: place p's outputs */
    int64_t rows_w, cols;            /* a matrix's shape */
    size_t row_bytes;
    int64_t panels;           /* panels of a matrix */
    bool by_token;            /* x's rows are tokens (place p reads row rows[p]); else places */
    int lo, hi;               /* the slab: x rows [lo, hi) are quantized (xq row i - lo) */
    const unsigned char *aux; /* q_prep's form of the slab, or NULL */
};

/* Fewest routed places an expert has on average (T * k / E) for packing to pay: packing a
 * panel costs a few dot passes over its rows, less where q_dot itself unpacks much (4-bit
 * nibbles; Q8_0's sign handling). 8-layer 30B-A3B GGUF files, 2 threads, 64-token prompts
 * (4 places an expert), two alternating rounds at load 4-5: Q4_0 109 / 96 tok/s packed from
 * 2 places against 80 / 84 from 8, Q8_0 72 / 74 against 57 / 64, Q4_K_M 81 / 86 against
 * 96 / 102 (Q4_K and Q6_K's q_dot read q_prep's form, their packing unpacks scales and
 * mins); decode (1 place) 17 tok/s through q_dot against 10 packed (Q8_0). */
static int pack_min_places(enum hy_dtype dt)
{
    return dt == HY_DTYPE_Q4_K || dt == HY_DTYPE_Q6_K ? 8 : 2;
}

/* How the kernels k run a matrix of dtype dt and `cols` columns in a call of T tokens, kk
 * choices and E experts (module comment): a function of the call's shape only, never of
 * the routing. */
static enum moe_path path_of(const struct hy_cpu_mm_kernels *k, enum hy_dtype dt, int64_t cols,
                             int T, int kk, int E)
{
    int xb = k->xq_block ? k->xq_block : HY_CPU_XQ_BLOCK;
    if (!k->q_dot || cols % xb != 0 || cols > HY_CPU_XQ_ELEMS)
        return PATH_FLOAT;
    if (k->q_pack && cols % 128 == 0 && cols <= HY_CPU_PACK_COLS &&
        (int64_t)T * kk >= (int64_t)pack_min_places(dt) * E)
        return PATH_PACKED;
    return PATH_DOT;
}

/* The first place in [a, b) whose token is >= t (an expert's tokens ascend). */
static int first_token(const int32_t *rows, int a, int b, int t)
{
    while (a < b) {
        int m = a + (b - a) / 2;
        if (rows[m] < t)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

static int x_row(const struct moe_job *j, int p)
{
    return j->by_token ? j->rows[p] : p;
}

/* t[u * PANEL + i] = x(place a + u) · row i of the panel, u < nt, i < nr: through the packed
 * panel buf, or row by row (each row stays in L1 while the places pass). */
static void panel_tile(const struct moe_job *j, const unsigned char *w, const void *buf, int nr,
                       int a, int nt, float *t)
{
    struct hy_cpu_xq xt[GROUP];
    for (int u = 0; u < nt && j->path != PATH_FLOAT; u++)
        xt[u] = hy_cpu_xq_row(j->c, j->aux, j->cols, x_row(j, a + u) - j->lo, 0);
    if (j->path == PATH_PACKED) {
        j->k->q_gemm(t, PANEL, xt, nt, buf, nr, j->cols, false);
        return;
    }
    for (int i = 0; i < nr; i++) {
        const unsigned char *row = w + (size_t)i * j->row_bytes;
        for (int u = 0; u < nt; u++)
            t[u * PANEL + i] =
                j->path == PATH_DOT
                    ? j->k->q_dot(&xt[u], row, j->cols)
                    : j->k->dot(j->x + (int64_t)x_row(j, a + u) * j->cols, row, j->cols);
    }
}

/* The places of expert e that the slab holds. */
static void slab_places(const struct moe_job *j, int e, int *a, int *b)
{
    int p0 = j->off[e], p1 = j->off[e + 1];
    if (j->by_token) {
        *a = first_token(j->rows, p0, p1, j->lo);
        *b = first_token(j->rows, *a, p1, j->hi);
        return;
    }
    *a = p0 > j->lo ? p0 : j->lo;
    *b = p1 < j->hi ? p1 : j->hi;
}

/* GCC counts prefetches as no effect at all and deletes the calls of a function that only
 * prefetches (as matmul.c's KEEP_CALLS says). */
#if defined(__GNUC__) && !defined(__clang__)
#define KEEP_CALLS __attribute__((noipa))
#else
#define KEEP_CALLS
#endif

/* Item i's panel of w (its nr rows lie one after the other) requested into L2: packing
 * reads 16 rows side by side, more streams than the hardware prefetcher follows, so the
 * next item's panels are asked for before this one is packed. */
KEEP_CALLS static void prefetch_panel(const struct moe_job *j, const struct hy_weight *w, int64_t i)
{
    int e = j->act[1 + i / j->panels];
    int64_t r0 = i % j->panels * PANEL;
    int64_t nr = j->rows_w - r0 < PANEL ? j->rows_w - r0 : PANEL;
    const unsigned char *p = (const unsigned char *)w[e].data + (size_t)r0 * j->row_bytes;
    for (size_t b = 0; b < (size_t)nr * j->row_bytes; b += 64)
        __builtin_prefetch(p + b, 0, 2);
}

/* Items [i0, i1): item i is panel i % panels of the (i / panels)-th expert with places. */
static void moe_items(void *ctx, int64_t i0, int64_t i1, int tid)
{
    const struct moe_job *j = ctx;
    unsigned char *buf = j->path == PATH_PACKED ? j->c->pack[tid] : NULL;
    float g[GROUP * PANEL], u[GROUP * PANEL];
    for (int64_t i = i0; i < i1; i++) {
        int e = j->act[1 + i / j->panels], a, b;
        int64_t r0 = i % j->panels * PANEL;
        int nr = (int)(j->rows_w - r0 < PANEL ? j->rows_w - r0 : PANEL);
        slab_places(j, e, &a, &b);
        if (a >= b)
            continue;
        const unsigned char *wg = (const unsigned char *)j->w0[e].data + (size_t)r0 * j->row_bytes;
        const unsigned char *wu =
            j->w1 ? (const unsigned char *)j->w1[e].data + (size_t)r0 * j->row_bytes : NULL;
        if (buf && i + 1 < i1) {
            prefetch_panel(j, j->w0, i + 1);
            if (j->w1)
                prefetch_panel(j, j->w1, i + 1);
        }
        if (buf) {
            j->k->q_pack(buf, wg, j->row_bytes, nr, j->cols);
            if (wu)
                j->k->q_pack(buf + HY_CPU_PACK_BYTES, wu, j->row_bytes, nr, j->cols);
        }
        for (int p = a; p < b; p += GROUP) {
            int nt = b - p < GROUP ? b - p : GROUP;
            panel_tile(j, wg, buf, nr, p, nt, g);
            if (wu)
                panel_tile(j, wu, buf ? buf + HY_CPU_PACK_BYTES : NULL, nr, p, nt, u);
            for (int v = 0; v < nt; v++) {
                float *o = j->out + (int64_t)(p + v) * j->rows_w + r0;
                for (int r = 0; r < nr; r++) { /* hy_ref_silu_mul's arithmetic */
                    float gv = g[v * PANEL + r];
                    o[r] = wu ? gv / (1.0f + expf(-gv)) * u[v * PANEL + r] : gv;
                }
            }
        }
    }
}

/* Runs the job over x's rows [0, n) (tokens or places), a slab of quantized rows at a time. */
static void run_slabs(struct moe_job *j, int n)
{
    struct hy_cpu_ctx *c = j->c;
    const int xb = j->k->xq_block ? j->k->xq_block : HY_CPU_XQ_BLOCK;
    const bool prep = j->path == PATH_DOT && j->k->q_prep && j->cols % 128 == 0;
    const size_t aux_row = (size_t)(j->cols / 128) * HY_CPU_AUX_PER_128;
    int64_t slab = j->path == PATH_FLOAT ? n : HY_CPU_XQ_ELEMS / j->cols;
    if (prep && (int64_t)(HY_CPU_AUX_BYTES / aux_row) < slab)
        slab = (int64_t)(HY_CPU_AUX_BYTES / aux_row);
    HY_ASSERT(slab >= 1);
    for (int lo = 0; lo < n; lo += (int)slab) {
        j->lo = lo;
        j->hi = n - lo < slab ? n : lo + (int)slab;
        if (j->path != PATH_FLOAT)
            hy_cpu_quantize_rows(c, j->x + (int64_t)lo * j->cols, j->hi - lo, j->cols, xb);
        j->aux = prep ? c->xq_aux : NULL;
        for (int t = 0; prep && t < j->hi - lo; t++) { /* a few microseconds a row */
            struct hy_cpu_xq xt = hy_cpu_xq_row(c, j->aux, j->cols, t, 0);
            j->k->q_prep((unsigned char *)xt.aux, &xt, j->cols);
        }
        /* pieces of at most MAX_GRAB_PANELS panels: a thread the machine deschedules
         * while it holds a piece leaves the others at most that much to wait for */
        hy_cpu_pool_for_balanced(c->pool, j->act[0] * j->panels, 1, MAX_GRAB_PANELS, moe_items, j);
    }
}

/* A job over the E matrices w0 (and w1, of the same dtype and shape, or NULL). */
static struct moe_job job_for(struct hy_cpu_ctx *c, const struct hy_weight *w0,
                              const struct hy_weight *w1, int E, const struct hy_moe_route *r,
                              const float *x, float *out, int T, int k)
{
    for (int e = 1; e < E; e++) /* every expert in the dtype and shape the job is made for */
        HY_ASSERT(w0[e].dtype == w0->dtype && w0[e].rows == w0->rows && w0[e].cols == w0->cols &&
                  (!w1 ||
                   (w1[e].dtype == w0->dtype && w1[e].rows == w0->rows && w1[e].cols == w0->cols)));
    HY_ASSERT(w0->dtype >= 0 && w0->dtype < HY_DTYPE_COUNT);
    HY_ASSERT(!r->shared); /* the shared expert rides along on CUDA only (hy_v3.c's sh_stacked) */
    HY_ASSERT(!w1 || (w1->dtype == w0->dtype && w1->rows == w0->rows && w1->cols == w0->cols));
    struct moe_job j = {
        .c = c,
        .k = &c->k.mm[w0->dtype],
        .w0 = w0,
        .w1 = w1,
        .off = r->off,
        .rows = r->rows,
        .act = r->act,
        .x = x,
        .out = out,
        .rows_w = w0->rows,
        .cols = w0->cols,
        .row_bytes = hy_dtype_row_bytes(w0->dtype, w0->cols),
        .panels = (w0->rows + PANEL - 1) / PANEL,
    };
    j.path = path_of(j.k, w0->dtype, j.cols, T, k, E);
    return j;
}

void hy_cpu_moe_route(struct hy_cpu_ctx *c, const struct hy_moe_route *r, const float *logits,
                      const float *bias, int T, int E, int k, float scale)
{
    (void)c;
    HY_ASSERT(k >= 1 && k <= E && E <= 1024);
    hy_moe_route(logits, bias, T, E, k, scale, r->ids, r->w);
    hy_moe_plan(r->ids, T, k, E, r->off, r->rows, r->sel, r->act);
}

void hy_cpu_moe_gate_up(struct hy_cpu_ctx *c, float *act, const float *x,
                        const struct hy_weight *gate, const struct hy_weight *up, int E,
                        const struct hy_moe_route *r, int T, int k)
{
    struct moe_job j = job_for(c, gate, up, E, r, x, act, T, k);
    j.by_token = true;
    run_slabs(&j, T);
}

void hy_cpu_moe_down(struct hy_cpu_ctx *c, float *y, const float *act, const struct hy_weight *down,
                     int E, const struct hy_moe_route *r, int T, int k)
{
    struct moe_job j = job_for(c, down, NULL, E, r, act, y, T, k);
    run_slabs(&j, T * k);
}

struct combine_job {
    float *out;
    const float *acc, *y, *w;
    const int32_t *sel;
    int k;
    int64_t d;
};

static void combine_tokens(void *ctx, int64_t t0, int64_t t1, int tid)
{
    const struct combine_job *j = ctx;
    (void)tid;
    for (int64_t t = t0; t < t1; t++) {
        float *o = j->out + t * j->d;
        const float *a = j->acc + t * j->d;
        for (int64_t c = 0; c < j->d; c++)
            o[c] = a[c];
        for (int i = 0; i < j->k; i++) { /* choices in order, product then add */
            const float w = j->w[t * j->k + i];
            const float *yi = j->y + (int64_t)j->sel[t * j->k + i] * j->d;
            for (int64_t c = 0; c < j->d; c++)
                o[c] += w * yi[c];
        }
    }
}

void hy_cpu_moe_combine(struct hy_cpu_ctx *c, float *out, const float *acc, const float *y,
                        const struct hy_moe_route *r, int T, int k, int64_t d)
{
    struct combine_job j = {out, acc, y, r->w, r->sel, k, d};
    hy_pool_for(c->pool, T, d >= 4096 ? 1 : 4096 / (d > 0 ? d : 1), combine_tokens, &j);
}

bool hy_cpu_moe_takes(enum hy_dtype dt)
{
    return dt >= 0 && dt < HY_DTYPE_COUNT && dt != HY_DTYPE_F8_E4M3;
}
