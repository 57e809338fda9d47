/* cuda_moe_test.c: the CUDA backend's mixture-of-experts ops (backend.h: weight_upload_n,
 * moe_route, moe_gate_up, moe_down, moe_combine) against the CPU reference
 * (backend/cpu/moe.h) and sums in double, at several (T, E, k), weight types and shapes.
 * Data are random and never zero.
 *   route: logits on a grid of 1/8 (so distinct scores differ by far more than expf's
 *     error), with exact ties planted (an expert's logit and bias copied to another) and
 *     one case without a bias. The experts chosen must be hy_moe_route's, in its order,
 *     except where the CPU's two candidates are within 1e-5 (a near-tie of s + bias that
 *     expf's few-ulp difference may swap; counted and printed, none expected); weights
 *     within 1e-5 relative (k sigmoid values of a few ulps each, one sum, one division).
 *     The grouping must be hy_moe_group's of the same ids exactly: off, rows, and sel
 *     (rows[sel[i]] the token of pair i, places in CPU order), act the experts with tokens.
 *   gate_up / down: every place of every active expert against double sums over the
 *     weights as the device holds them (bf16 values; quant blocks dequantized d*q, exact).
 *     Experts with at most HY_CUDA_MOE_GEMV_MAX places (and all in the batch-invariant
 *     mode, or when T <= that or cols % 64 != 0) go through the GEMV: |dot error| <=
 *     (cols + 32)·U·S', U = 2^-24, S' = Σ|x_c w_c| (float32 products and sums of exactly
 *     dequantized weights, as qmatmul.h's GEMV bound); quantized experts outside the
 *     batch-invariant mode take int8 activations (moe_mmvq.cu) instead, within qmmvq.h's
 *     bound (dot_bound's MMVQ; at least one output past the float32 bound in each case that
 *     has such groups, so the int8 path is known to have run). Larger groups go through the
 *     tensor-core GEMM (moe_mma.cu), which rounds x, and dequantized weights, to bf16
 *     (u = 2^-8 each, bf16 weights exact): |dot error| <= (2^-8 + [quant] (2^-8 + 2^-16)
 *     + (cols + 32)·2^-23)·S' (the last term allows the tensor cores' float32 sums
 *     truncation instead of rounding). At least one of its outputs must be off by more
 *     than the GEMV's bound (its bf16 rounding visible: the GEMM ran), none of the GEMV
 *     groups'. gate_up's silu(g)·u then within 1.1·(|u|·Bg + |silu(g)|·Bu + Bg·Bu) +
 *     8·U·|silu(g)·u| (silu' <= 1.1; expf, the add, the division and the product: about 5
 *     ulps of the result). Shapes with W rows and places not multiples of the 64 x 64
 *     tile, groups of 1 to 300 places (an expert made every token's first choice).
 *     Outputs are poisoned with NaN first.
 *   combine: the CPU's order and roundings (places ascending, product then add): the
 *     same bits.
 * Exits 77 without a CUDA device. */
#include "backend/cpu/moe.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/moe.h"
#include "test.h"
#include "backend/cuda/cuda_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define U (1.0 / 16777216.0)

static int n_cases, n_near;
static double worst_route_w, worst_gu, worst_dn, worst_mm_gu, worst_mm_dn, worst_q_gu;
static double worst_q_dn;
static long n_sh_places;
static long n_mm_places;

/* Device buffers of a routing for T tokens, k choices, E experts. */
struct droute {
    struct hy_moe_route r;
};

static void *dalloc(struct hy_backend *be, size_t bytes)
{
    void *p = be->i->alloc(be, bytes);
    HY_ASSERT(p);
    return p;
}

static void route_alloc(struct hy_backend *be, struct hy_moe_route *r, int T, int E, int k)
{
    const size_t P = (size_t)T * (size_t)k;
    r->ids = dalloc(be, P * 4);
    r->rows = dalloc(be, P * 4);
    r->sel = dalloc(be, P * 4);
    r->w = dalloc(be, P * 4);
    r->off = dalloc(be, (size_t)(E + 1) * 4);
    r->act = dalloc(be, (size_t)(E + 1) * 4);
}

static void route_free(struct hy_backend *be, struct hy_moe_route *r)
{
    void *p[] = {r->ids, r->rows, r->sel, r->w, r->off, r->act};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        be->i->free(be, p[i]);
}

/* Host copies of a device routing. */
struct hroute {
    int32_t *ids, *rows, *sel, *off, *act;
    float *w;
};

static void route_get(struct hy_backend *be, struct hroute *h, const struct hy_moe_route *r,
                      int T, int E, int k)
{
    const size_t P = (size_t)T * (size_t)k;
    h->ids = malloc(P * 4), h->rows = malloc(P * 4), h->sel = malloc(P * 4);
    h->w = malloc(P * 4), h->off = malloc((size_t)(E + 1) * 4), h->act = malloc((size_t)(E + 1) * 4);
    HY_ASSERT(h->ids && h->rows && h->sel && h->w && h->off && h->act);
    be->i->download(be, h->ids, r->ids, P * 4);
    be->i->download(be, h->rows, r->rows, P * 4);
    be->i->download(be, h->sel, r->sel, P * 4);
    be->i->download(be, h->w, r->w, P * 4);
    be->i->download(be, h->off, r->off, (size_t)(E + 1) * 4);
    be->i->download(be, h->act, r->act, (size_t)(E + 1) * 4);
}

static void route_hfree(struct hroute *h)
{
    free(h->ids), free(h->rows), free(h->sel), free(h->w), free(h->off), free(h->act);
}

static float sigm(float z)
{
    return 1.0f / (1.0f + expf(-z));
}

/* Random logits on a grid of 1/8 in [-5, 5] (never 0: the grid is offset by 1/16), with
 * ties planted; bias (when not NULL) on a grid of 1/32. Routes on the device into r. */
static void make_routing(struct hy_backend *be, struct rng *rg, struct hy_moe_route *r,
                         float *logits, float *bias, int T, int E, int k, float scale, bool hot)
{
    for (int i = 0; i < T * E; i++)
        logits[i] = floorf(rng_unit(rg) * 40.0f) / 8.0f + 1.0f / 16.0f;
    if (bias)
        for (int e = 0; e < E; e++)
            bias[e] = floorf(rng_unit(rg) * 8.0f) / 32.0f + 1.0f / 64.0f;
    for (int t = 0; t < T; t += 3) { /* exact ties: expert a copied to b (logit and bias) */
        int a = (int)(rng_next(rg) % (uint64_t)E), b = (int)(rng_next(rg) % (uint64_t)E);
        logits[t * E + b] = logits[t * E + a];
        if (bias && t % 2 == 0)
            bias[b] = bias[a];
    }
    for (int t = 0; hot && t < T; t++) /* expert E - 1 every token's first choice */
        logits[t * E + E - 1] = 8.0f;
    float *dl = dalloc(be, (size_t)(T * E) * 4), *db = NULL;
    be->i->upload(be, dl, logits, (size_t)(T * E) * 4);
    if (bias) {
        db = dalloc(be, (size_t)E * 4);
        be->i->upload(be, db, bias, (size_t)E * 4);
    }
    be->i->moe_route(be, r, dl, db, T, E, k, scale);
    be->i->free(be, dl);
    be->i->free(be, db);
}

static void route_case(struct hy_backend *be, struct rng *rg, int T, int E, int k, bool with_bias)
{
    const float scale = 2.826f;
    float *logits = malloc((size_t)(T * E) * 4), *bias = with_bias ? malloc((size_t)E * 4) : NULL;
    int32_t *ids = malloc((size_t)(T * k) * 4), *off = malloc((size_t)(E + 1) * 4);
    int32_t *rows = malloc((size_t)(T * k) * 4);
    float *w = malloc((size_t)(T * k) * 4), *rw = malloc((size_t)(T * k) * 4);
    HY_ASSERT(logits && (bias || !with_bias) && ids && off && rows && w && rw);
    struct hy_moe_route r;
    route_alloc(be, &r, T, E, k);
    make_routing(be, rg, &r, logits, bias, T, E, k, scale, false);
    struct hroute h;
    route_get(be, &h, &r, T, E, k);
    hy_moe_route(logits, bias, T, E, k, scale, ids, w);
    int bad = 0;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < k; j++) {
            const int i = t * k + j, a = ids[i], b = h.ids[i];
            if (a == b) {
                worst_route_w = fmax(worst_route_w, fabs(h.w[i] - w[i]) / fabs(w[i]));
                continue;
            }
            if (b < 0 || b >= E) {
                bad++;
                continue;
            }
            const float ca = sigm(logits[t * E + a]) + (bias ? bias[a] : 0.0f);
            const float cb = sigm(logits[t * E + b]) + (bias ? bias[b] : 0.0f);
            if (fabsf(ca - cb) <= 1e-5f)
                n_near++;
            else
                bad++;
        }
    CHECKF(bad == 0, "route T=%d E=%d k=%d: %d choices differ from the CPU's", T, E, k, bad);
    /* the grouping of the device's own ids, as the CPU groups them */
    hy_moe_group(h.ids, h.w, T, k, E, off, rows, rw);
    int gbad = 0, n_act = 0;
    for (int e = 0; e <= E; e++)
        gbad += off[e] != h.off[e];
    for (int i = 0; i < T * k; i++)
        gbad += rows[i] != h.rows[i] || h.sel[i] < 0 || h.sel[i] >= T * k ||
                h.rows[h.sel[i]] != i / k || h.ids[i] < 0 || h.ids[i] >= E ||
                h.sel[i] < off[h.ids[i]] || h.sel[i] >= off[h.ids[i] + 1];
    for (int e = 0; e < E; e++)
        if (off[e + 1] > off[e])
            gbad += h.act[1 + n_act++] != e;
    gbad += h.act[0] != n_act;
    /* places in the CPU's order: each expert's pairs by pair index */
    for (int i = 0; i < T * k; i++)
        for (int i2 = i + 1; i2 < T * k; i2++)
            if (h.ids[i2] == h.ids[i])
                gbad += h.sel[i2] <= h.sel[i];
    CHECKF(gbad == 0, "group T=%d E=%d k=%d: %d entries differ from hy_moe_group's", T, E, k,
           gbad);
    CHECKF(worst_route_w <= 1e-5, "route T=%d E=%d k=%d: weights off by %.3g relative", T, E, k,
           worst_route_w);
    route_hfree(&h);
    route_free(be, &r);
    free(logits), free(bias), free(ids), free(off), free(rows), free(w), free(rw);
    n_cases++;
}

/* E random experts [rows, cols] of dtype dt (host block layout) and their values as the
 * device holds them (bf16-rounded, or dequantized). */
static void make_experts(struct rng *rg, enum hy_dtype dt, int E, int64_t rows, int64_t cols,
                         struct hy_weight *ws, float **vals, void **host)
{
    const enum hy_dtype st = dt == HY_DTYPE_BF16 ? HY_DTYPE_BF16 : dt;
    const size_t rb = hy_dtype_row_bytes(st, cols);
    unsigned char *all = malloc((size_t)E * rb * (size_t)rows);
    float *v = malloc((size_t)E * (size_t)(rows * cols) * 4);
    HY_ASSERT(all && v);
    for (int e = 0; e < E; e++) {
        void *w = ct_make_qweight(rg, st, rows, cols, 32);
        memcpy(all + (size_t)e * rb * (size_t)rows, w, rb * (size_t)rows);
        free(w);
        ws[e] = (struct hy_weight){st, rows, cols, all + (size_t)e * rb * (size_t)rows};
        hy_dtype_to_f32(v + (size_t)e * (size_t)(rows * cols), ws[e].data, st,
                        (size_t)(rows * cols));
    }
    *vals = v;
    *host = all;
}

/* dot of x and w over n in double, and S' = sum |x w|. */
static double ddot(const float *x, const float *w, int64_t n, double *sabs)
{
    double s = 0, a = 0;
    for (int64_t c = 0; c < n; c++) {
        s += (double)x[c] * w[c];
        a += fabs((double)x[c] * w[c]);
    }
    *sabs = a;
    return s;
}

/* How a group's products ran: the float32 GEMV, the tensor-core GEMM, or the GEMV from int8
 * activations (quantized experts outside the batch-invariant mode). */
enum path { GEMV, GEMM, MMVQ };

/* The bound of a dot of x and w over cols columns with S' = sabs (x, w, B needed by MMVQ):
 * the GEMV's, or the GEMM's (quant: the weights rounded to bf16 too), or qmmvq.h's: the
 * int8 rounding Σ|w_c|·max|x|_b/254·(1 + 2^-20) plus its float32 roundings (cols/4 + 64)·U
 * ·Σ(qmax + 8)·d_w·|x_c|, d_w <= max|w| over c's weight block of B (its largest quant is at
 * least 1), qmax 127 (Q8_0) or 8. */
static double dot_bound(enum path pa, bool quant, int64_t cols, double sabs, const float *x,
                        const float *w, int64_t B, int qmax)
{
    if (pa == GEMV)
        return (double)(cols + 32) * U * sabs;
    if (pa == GEMM) {
        const double ub = 1.0 / 256.0;
        return (ub + (quant ? ub + ub * ub : 0.0) + (double)(cols + 32) * 2 * U) * sabs;
    }
    double t1 = 0, t2 = 0;
    for (int64_t c0 = 0; c0 < cols; c0 += 32) {
        double mx = 0;
        for (int64_t c = c0; c < c0 + 32; c++)
            mx = fmax(mx, fabs((double)x[c]));
        for (int64_t c = c0; c < c0 + 32; c++)
            t1 += fabs((double)w[c]) * mx / 254.0 * (1.0 + 1.0 / 1048576.0);
    }
    for (int64_t c0 = 0; c0 < cols; c0 += B) {
        double mw = 0;
        for (int64_t c = c0; c < c0 + B; c++)
            mw = fmax(mw, fabs((double)w[c]));
        for (int64_t c = c0; c < c0 + B; c++)
            t2 += (qmax + 8) * mw * fabs((double)x[c]);
    }
    return t1 + (double)(cols / 4 + 64) * U * t2;
}

/* One projection's check of a place's outputs: within the bound; *loose counts outputs
 * past the GEMV's bound. */
struct pcheck {
    int bad;
    long loose, n;
    double worst;
};

static void pcheck_add(struct pcheck *pc, double got, double want, double lim, double lim32)
{
    const double e1 = fabs(got - want);
    pc->bad += !(e1 <= lim);
    pc->loose += e1 > lim32;
    pc->n++;
    pc->worst = fmax(pc->worst, e1 / fmax(lim, 1e-300));
}

/* gate_up's silu(g)·u against the double sums over x row xr (bounds Bg, Bu by pa; the
 * float32 GEMV's for the loose count). */
static void check_gu(struct pcheck *pc, const float *xr, const float *gw, const float *uw,
                     int64_t d, double got, enum path pa, bool quant, int64_t B, int qmax)
{
    double sg, su;
    const double gg = ddot(xr, gw, d, &sg), uu = ddot(xr, uw, d, &su);
    const double silu = gg / (1.0 + exp(-gg)), want = silu * uu;
    double lim[2];
    for (int i = 0; i < 2; i++) {
        const enum path p = i ? pa : GEMV;
        const double bg = dot_bound(p, quant, d, sg, xr, gw, B, qmax);
        const double bu = dot_bound(p, quant, d, su, xr, uw, B, qmax);
        lim[i] = 1.1 * (fabs(uu) * bg + fabs(silu) * bu + bg * bu) + 8 * U * fabs(want);
    }
    pcheck_add(pc, got, want, lim[1], lim[0]);
}

/* The weights of a case: E matrices of each (+ the shared expert's as matrix E), values
 * as the device holds them. */
struct xw {
    int64_t F, d, B;
    int qmax;
    bool quant;
    const float *gv, *uv, *dv;
};

/* Checks place p (input row xr, expert e) of act and y, by paths pg (gate_up), pd (down). */
static void check_place(const struct xw *w, struct pcheck *gu, struct pcheck *dnc, enum path pg,
                        enum path pd, const float *xr, int e, int p, const float *act,
                        const float *y)
{
    const int64_t F = w->F, d = w->d;
    for (int64_t o = 0; o < F; o++)
        check_gu(&gu[pg], xr, w->gv + ((int64_t)e * F + o) * d, w->uv + ((int64_t)e * F + o) * d,
                 d, act[(int64_t)p * F + o], pg, w->quant, w->B, w->qmax);
    for (int64_t o = 0; o < d; o++) {
        double sa;
        const float *ar = act + (int64_t)p * F, *wr = w->dv + ((int64_t)e * d + o) * F;
        const double want = ddot(ar, wr, F, &sa);
        pcheck_add(&dnc[pd], y[(int64_t)p * d + o], want,
                   dot_bound(pd, w->quant, F, sa, ar, wr, w->B, w->qmax),
                   dot_bound(GEMV, w->quant, F, sa, ar, wr, w->B, w->qmax));
    }
}

/* The grouped gate_up and down of T tokens routed to k of E experts (sh: the shared
 * expert rides along as matrix E, T <= HY_MOE_SHARED_MAX_T), checked place by place. */
static void experts_case(struct hy_backend *be, struct rng *rg, enum hy_dtype dt, int T, int E,
                         int k, int64_t F, int64_t d, bool hot, bool inv, bool sh)
{
    const int Ew = E + sh, P = T * k, P2 = P + (sh ? T : 0);
    struct hy_weight *g = malloc((size_t)Ew * 3 * sizeof *g), *u = g + Ew, *dn = g + 2 * Ew;
    float *gv, *uv, *dv;
    void *gh, *uh, *dh;
    HY_ASSERT(g);
    make_experts(rg, dt, Ew, F, d, g, &gv, &gh);
    make_experts(rg, dt, Ew, F, d, u, &uv, &uh);
    make_experts(rg, dt, Ew, d, F, dn, &dv, &dh);
    struct hy_err err = {{0}};
    CHECKF(be->i->weight_upload_n(be, g, Ew, &err) == HY_OK &&
               be->i->weight_upload_n(be, u, Ew, &err) == HY_OK &&
               be->i->weight_upload_n(be, dn, Ew, &err) == HY_OK,
           "%s", err.msg);
    CHECK(be->i->moe_takes(g[0].dtype));
    CHECKF(be->i->set_batch_invariant(be, inv, &err) == HY_OK, "%s", err.msg);
    float *logits = malloc((size_t)(T * E) * 4), *x = malloc((size_t)(T * d) * 4);
    float *act = malloc((size_t)P2 * (size_t)F * 4), *y = malloc((size_t)P2 * (size_t)d * 4);
    HY_ASSERT(logits && x && act && y);
    for (int64_t i = 0; i < T * d; i++)
        x[i] = ldexpf(rng_unit(rg), (int)(i % 5) - 2);
    struct hy_moe_route r;
    route_alloc(be, &r, T, E, k);
    r.xq = dalloc(be, hy_moe_xq_bytes(T, k, d, F));
    r.shared = sh;
    make_routing(be, rg, &r, logits, NULL, T, E, k, 1.0f, hot);
    float *dx = dalloc(be, (size_t)(T * d) * 4), *dact = dalloc(be, (size_t)P2 * (size_t)F * 4);
    float *dy = dalloc(be, (size_t)P2 * (size_t)d * 4);
    for (int64_t i = 0; i < (int64_t)P2 * F; i++)
        act[i] = NAN;
    for (int64_t i = 0; i < (int64_t)P2 * d; i++)
        y[i] = NAN;
    be->i->upload(be, dx, x, (size_t)(T * d) * 4);
    be->i->upload(be, dact, act, (size_t)P2 * (size_t)F * 4);
    be->i->upload(be, dy, y, (size_t)P2 * (size_t)d * 4);
    be->i->moe_gate_up(be, dact, dx, &g[0], &u[0], E, &r, T, k);
    be->i->moe_down(be, dy, dact, &dn[0], E, &r, T, k);
    be->i->download(be, act, dact, (size_t)P2 * (size_t)F * 4);
    be->i->download(be, y, dy, (size_t)P2 * (size_t)d * 4);
    CHECKF(be->i->set_batch_invariant(be, false, &err) == HY_OK, "%s", err.msg);
    struct hroute h;
    route_get(be, &h, &r, T, E, k);
    const bool quant = dt != HY_DTYPE_BF16, big = !inv && T > HY_CUDA_MOE_GEMV_MAX;
    const enum path small = quant && !inv ? MMVQ : GEMV; /* the groups the GEMV takes */
    const struct xw w = {F, d, hy_dtype_block_elems(dt), dt == HY_DTYPE_Q8_0 ? 127 : 8, quant,
                         gv, uv, dv};
    struct pcheck gu[3] = {{0}}, dnc[3] = {{0}}; /* by enum path */
    int largest = 0;
    for (int e = 0; e < E; e++) {
        const int n = h.off[e + 1] - h.off[e];
        const bool many = big && n > HY_CUDA_MOE_GEMV_MAX;
        const enum path pg = many && d % 64 == 0 ? GEMM : small;
        const enum path pd = many && F % 64 == 0 ? GEMM : small;
        largest = n > largest ? n : largest;
        n_mm_places += pg == GEMM ? n : 0;
        for (int p = h.off[e]; p < h.off[e + 1]; p++)
            check_place(&w, gu, dnc, pg, pd, x + (int64_t)h.rows[p] * d, e, p, act, y);
    }
    for (int t = 0; sh && t < T; t++) /* the shared expert: token t at place P + t */
        check_place(&w, gu, dnc, small, small, x + (int64_t)t * d, E, P + t, act, y);
    n_sh_places += sh ? T : 0;
    worst_gu = fmax(worst_gu, gu[GEMV].worst), worst_dn = fmax(worst_dn, dnc[GEMV].worst);
    worst_mm_gu = fmax(worst_mm_gu, gu[GEMM].worst);
    worst_mm_dn = fmax(worst_mm_dn, dnc[GEMM].worst);
    worst_q_gu = fmax(worst_q_gu, gu[MMVQ].worst), worst_q_dn = fmax(worst_q_dn, dnc[MMVQ].worst);
    CHECKF(gu[0].bad + gu[1].bad + gu[2].bad + dnc[0].bad + dnc[1].bad + dnc[2].bad == 0,
           "experts %s T=%d E=%d k=%d F=%lld d=%lld%s%s: %d/%d/%d (GEMV/GEMM/int8 GEMV) "
           "gate_up and %d/%d/%d down values out of bounds", hy_dtype_name(dt), T, E, k,
           (long long)F, (long long)d, inv ? " invariant" : "", sh ? " shared" : "", gu[0].bad,
           gu[1].bad, gu[2].bad, dnc[0].bad, dnc[1].bad, dnc[2].bad);
    /* the GEMM ran where it should: its bf16 rounding shows (the GEMV groups' never) */
    const bool want_mm = big && largest > HY_CUDA_MOE_GEMV_MAX;
    CHECKF(!want_mm || d % 64 || gu[GEMM].loose > 0,
           "experts %s T=%d F=%lld d=%lld: gate_up's large groups not through the GEMM",
           hy_dtype_name(dt), T, (long long)F, (long long)d);
    CHECKF(!want_mm || F % 64 || dnc[GEMM].loose > 0,
           "experts %s T=%d F=%lld d=%lld: down's large groups not through the GEMM",
           hy_dtype_name(dt), T, (long long)F, (long long)d);
    /* likewise the int8 activations (their rounding shows), and never in the float32 GEMV */
    CHECKF(gu[MMVQ].n == 0 || (gu[MMVQ].loose > 0 && dnc[MMVQ].n > 0 && dnc[MMVQ].loose > 0),
           "experts %s T=%d: the quantized experts' GEMVs did not take int8 activations",
           hy_dtype_name(dt), T);
    CHECKF(gu[GEMV].loose + dnc[GEMV].loose == 0, "experts %s T=%d: %ld GEMV values past the "
           "float32 bound", hy_dtype_name(dt), T, gu[GEMV].loose + dnc[GEMV].loose);
    CHECKF(!hot || largest == T, "hot expert: %d places of %d", largest, T);
    route_hfree(&h);
    be->i->free(be, r.xq);
    route_free(be, &r);
    be->i->free(be, dx), be->i->free(be, dact), be->i->free(be, dy);
    be->i->free(be, (void *)g[0].data), be->i->free(be, (void *)u[0].data);
    be->i->free(be, (void *)dn[0].data);
    free(gv), free(uv), free(dv), free(gh), free(uh), free(dh), free(g);
    free(logits), free(x), free(act), free(y);
    n_cases++;
}

static void combine_case(struct hy_backend *be, struct rng *rg, int T, int E, int k, int64_t d)
{
    const int P = T * k;
    float *logits = malloc((size_t)(T * E) * 4), *acc = malloc((size_t)(T * d) * 4);
    float *y = malloc((size_t)P * (size_t)d * 4), *out = malloc((size_t)(T * d) * 4);
    HY_ASSERT(logits && acc && y && out);
    for (int64_t i = 0; i < T * d; i++)
        acc[i] = rng_unit(rg);
    for (int64_t i = 0; i < (int64_t)P * d; i++)
        y[i] = ldexpf(rng_unit(rg), (int)(i % 7) - 3);
    struct hy_moe_route r;
    route_alloc(be, &r, T, E, k);
    make_routing(be, rg, &r, logits, NULL, T, E, k, 2.826f, false);
    float *dacc = dalloc(be, (size_t)(T * d) * 4), *dy = dalloc(be, (size_t)P * (size_t)d * 4);
    be->i->upload(be, dacc, acc, (size_t)(T * d) * 4);
    be->i->upload(be, dy, y, (size_t)P * (size_t)d * 4);
    be->i->moe_combine(be, dacc, dacc, dy, &r, T, k, d); /* out == acc allowed */
    be->i->download(be, out, dacc, (size_t)(T * d) * 4);
    struct hroute h;
    route_get(be, &h, &r, T, E, k);
    int bad = 0;
    for (int t = 0; t < T; t++)
        for (int64_t c = 0; c < d; c++) {
            float v = acc[t * d + c];
            for (int p = 0; p < P; p++) /* places ascending: the CPU's order */
                for (int j = 0; j < k; j++)
                    if (h.sel[t * k + j] == p) {
                        volatile float prod = h.w[t * k + j] * y[(int64_t)p * d + c];
                        v = v + prod;
                    }
            bad += memcmp(&v, &out[t * d + c], sizeof v) != 0;
        }
    CHECKF(bad == 0, "combine T=%d E=%d k=%d d=%lld: %d values differ from the CPU's bits", T, E,
           k, (long long)d, bad);
    route_hfree(&h);
    route_free(be, &r);
    be->i->free(be, dacc), be->i->free(be, dy);
    free(logits), free(acc), free(y), free(out);
    n_cases++;
}

int main(void)
{
    if (!hy_cuda_available()) {
        fprintf(stderr, "no CUDA device: skipping\n");
        return 77;
    }
    struct rng rg = {0xbb67ae8584caa73bull};
    struct hy_backend *be = NULL;
    struct hy_err err = {{0}};
    CHECKF(hy_cuda_backend_create(&be, 0, &err) == HY_OK, "%s", err.msg);
    if (!be)
        return test_result();
    CHECK(be->i->moe_route && be->i->moe_gate_up && be->i->moe_down && be->i->moe_combine &&
          be->i->weight_upload_n && be->i->moe_takes);
    static const int rc[][3] = {{1, 8, 2}, {5, 8, 2}, {3, 8, 8}, {33, 128, 8}, {64, 128, 8},
                                {17, 40, 5}, {9, 1024, 8}, {200, 128, 8}};
    for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++)
        route_case(be, &rg, rc[i][0], rc[i][1], rc[i][2], i != 2);
    static const enum hy_dtype dts[] = {HY_DTYPE_BF16, HY_DTYPE_Q8_0, HY_DTYPE_Q4_0,
                                        HY_DTYPE_Q4_G128};
    static const int ec[][6] = {/* T, E, k, F, d, hot: expert E-1 every token's choice */
                                {1, 8, 2, 32, 64, 0},      {4, 8, 2, 40, 128, 0},
                                {13, 16, 4, 96, 256, 1},   {70, 32, 4, 64, 384, 0},
                                {6, 8, 2, 128, 256, 0},    {300, 8, 2, 128, 256, 1},
                                {64, 128, 8, 128, 256, 0}, {9, 8, 2, 96, 128, 1},
                                {200, 16, 4, 128, 224, 1}, {100, 8, 3, 192, 128, 1}};
    for (size_t ti = 0; ti < sizeof dts / sizeof dts[0]; ti++)
        for (size_t i = 0; i < sizeof ec / sizeof ec[0]; i++) {
            const int64_t F = ec[i][3], d = ec[i][4], B = hy_dtype_block_elems(dts[ti]);
            if (F % B == 0 && d % B == 0)
                experts_case(be, &rg, dts[ti], ec[i][0], ec[i][1], ec[i][2], F, d, ec[i][5],
                             false, ec[i][0] <= HY_MOE_SHARED_MAX_T && i % 2 == 0);
        }
    /* the batch-invariant mode: GEMVs alone, whatever the group sizes */
    experts_case(be, &rg, HY_DTYPE_BF16, 70, 8, 2, 128, 256, true, true, false);
    experts_case(be, &rg, HY_DTYPE_Q4_0, 70, 8, 2, 128, 256, true, true, false);
    experts_case(be, &rg, HY_DTYPE_Q4_0, 6, 8, 2, 128, 256, false, true, true);
    /* a decode step of the 30B-A3B's matrix shapes: one token, 8 experts and the shared */
    experts_case(be, &rg, HY_DTYPE_Q4_G128, 1, 16, 8, 768, 2048, false, false, true);
    combine_case(be, &rg, 1, 8, 2, 64);
    combine_case(be, &rg, 37, 128, 8, 2048);
    be->i->destroy(be);
    fprintf(stderr, "%d cases; route weights worst %.3g relative, %d near-tie swaps; experts "
            "worst error/bound: GEMV gate_up %.3g, down %.3g; int8 GEMV gate_up %.3g, down "
            "%.3g; GEMM (%ld places) gate_up %.3g, down %.3g\n",
            n_cases, worst_route_w, n_near, worst_gu, worst_dn, worst_q_gu, worst_q_dn,
            n_mm_places, worst_mm_gu, worst_mm_dn);
    CHECKF(n_mm_places > 0, "no places through the grouped GEMM");
    CHECKF(worst_q_gu > 0 && worst_q_dn > 0, "no places through the int8 grouped GEMV");
    CHECKF(n_sh_places > 0, "no shared expert through the grouped ops");
    return test_result();
}
