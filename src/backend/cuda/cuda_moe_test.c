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
 *     weights as the device holds them (bf16 values; quant blocks dequantized d*q, exact;
 *     block-scaled fp8, HY_DTYPE_F8_B128, e4m3(code)·scale in float32, whose GEMV sums a
 *     16-column piece's exact products before its scale: one rounding more a term).
 *     Experts with at most HY_CUDA_MOE_GEMV_MAX places (and all in the batch-invariant
 *     mode, or when T <= that or cols % 64 != 0) go through the GEMV: |dot error| <=
 *     (cols + 32)·U·S', U = 2^-24, S' = Σ|x_c w_c| (float32 products and sums of exactly
 *     dequantized weights, as qmatmul.h's GEMV bound; block-scaled fp8 always, fp8b.h);
 *     other quantized experts outside the
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
 *     GGUF's Q4_K and Q6_K experts go through moe_mmvq.cu's float32 GEMV for every group
 *     in both modes (qk_unit.cuh's units): the GEMV's bound with S' = Σ|x_c|·(|d sc q| +
 *     |dmin m|) for Q4_K (qmatmul.h: the kernel sums ds·Σ(q·x) and dm·Σx apart, so its
 *     roundings scale with both parts) and S' = S for Q6_K (d sc (q - 32) exact). A part
 *     passes through at most 6 roundings in its unit before the row sum (a word's product
 *     chain, or Σx of 16 and the min's fma), then 10 (Q4_K) or 16 (Q6_K) fmas a unit of
 *     its lane (ceil(cols/1024) or ceil(cols/2048) units), 5 shuffles, and 1 more for
 *     the host's float32 d sc q - dmin m: within cols + 32 for every cols >= 256. Shapes
 *     of 1-, 8-, 64- and 256-sequence steps, cols multiples of 256. In the modes whose
 *     sums do not depend on the batch (batch-invariant; K-quants in both), token 0 run
 *     again alone must get the same bits at its places.
 *     Outputs are poisoned with NaN first.
 *   combine: the CPU's order and roundings (places ascending, product then add): the
 *     same bits.
 *   A norm's output into gate_up (the norm's int8 quantization taken by the GEMV): the
 *     bits of gate_up of a copy.
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
static double worst_q_dn, worst_k;
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

/* Routes T tokens by host logits (and bias, or NULL) on the device into r. */
static void route_logits(struct hy_backend *be, struct hy_moe_route *r, const float *logits,
                         const float *bias, int T, int E, int k, float scale)
{
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
    route_logits(be, r, logits, bias, T, E, k, scale);
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

/* E random block-scaled fp8 experts (cuda_test_util.h ct_fp8w, 128 x 128 blocks) as
 * make_experts makes them: *host one allocation holding their host forms, codes and scales. */
static void make_fp8b_experts(struct rng *rg, int E, int64_t rows, int64_t cols,
                              struct hy_weight *ws, float *v, void **host)
{
    const int64_t n = rows * cols, ns = (rows + 127) / 128 * ((cols + 127) / 128);
    struct hy_f8b_src *src = malloc((size_t)E * (sizeof *src + (size_t)n + (size_t)ns * 4));
    float *tmp = malloc((size_t)n * sizeof *tmp);
    HY_ASSERT(src && tmp);
    float *scales = (float *)(src + E);
    uint8_t *codes = (uint8_t *)(scales + (size_t)E * (size_t)ns);
    for (int e = 0; e < E; e++) {
        src[e] = (struct hy_f8b_src){codes + (size_t)e * (size_t)n,
                                     scales + (size_t)e * (size_t)ns};
        ct_fp8w_fill(rg, rows, cols, 128, 128, (uint8_t *)src[e].codes, (float *)src[e].scale,
                     v + (size_t)e * (size_t)n, tmp);
        ws[e] = (struct hy_weight){HY_DTYPE_F8_B128, rows, cols, &src[e]};
    }
    free(tmp);
    *host = src;
}

/* E random experts [rows, cols] of dtype dt (host block layout), their values as the
 * device holds them (bf16-rounded, or dequantized) and the |w| the bounds take
 * (ct_abs_parts: |w|, or Q4_K's |d sc q| + |dmin m|). */
static void make_experts(struct rng *rg, enum hy_dtype dt, int E, int64_t rows, int64_t cols,
                         struct hy_weight *ws, float **vals, float **absv, void **host)
{
    if (dt == HY_DTYPE_F8_B128) {
        const size_t n = (size_t)E * (size_t)(rows * cols);
        *vals = malloc(n * 4);
        *absv = malloc(n * 4);
        HY_ASSERT(*vals && *absv);
        make_fp8b_experts(rg, E, rows, cols, ws, *vals, host);
        for (size_t i = 0; i < n; i++)
            (*absv)[i] = fabsf((*vals)[i]);
        return;
    }
    const size_t rb = hy_dtype_row_bytes(dt, cols);
    unsigned char *all = malloc((size_t)E * rb * (size_t)rows);
    float *v = malloc((size_t)E * (size_t)(rows * cols) * 4);
    float *a = malloc((size_t)E * (size_t)(rows * cols) * 4);
    HY_ASSERT(all && v && a);
    for (int e = 0; e < E; e++) {
        void *w = ct_make_qweight(rg, dt, rows, cols, 32);
        memcpy(all + (size_t)e * rb * (size_t)rows, w, rb * (size_t)rows);
        free(w);
        ws[e] = (struct hy_weight){dt, rows, cols, all + (size_t)e * rb * (size_t)rows};
        hy_dtype_to_f32(v + (size_t)e * (size_t)(rows * cols), ws[e].data, dt,
                        (size_t)(rows * cols));
        for (int64_t r = 0; r < rows; r++)
            ct_abs_parts(a + (size_t)e * (size_t)(rows * cols) + (size_t)(r * cols),
                         (const unsigned char *)ws[e].data + (size_t)r * rb, dt, cols);
    }
    *vals = v;
    *absv = a;
    *host = all;
}

/* dot of x and w over n in double, and S' = sum |x|·wa (wa: w's |w| parts; = sum |x w|
 * where wa = |w|: a float product is exact in double). */
static double ddot(const float *x, const float *w, const float *wa, int64_t n, double *sabs)
{
    double s = 0, a = 0;
    for (int64_t c = 0; c < n; c++) {
        s += (double)x[c] * w[c];
        a += fabs((double)x[c]) * wa[c];
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
                     const float *ga, const float *ua, int64_t d, double got, enum path pa,
                     bool quant, int64_t B, int qmax)
{
    double sg, su;
    const double gg = ddot(xr, gw, ga, d, &sg), uu = ddot(xr, uw, ua, d, &su);
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
    const float *ga, *ua, *da; /* their |w| parts (make_experts) */
};

/* Checks place p (input row xr, expert e) of act and y, by paths pg (gate_up), pd (down). */
static void check_place(const struct xw *w, struct pcheck *gu, struct pcheck *dnc, enum path pg,
                        enum path pd, const float *xr, int e, int p, const float *act,
                        const float *y)
{
    const int64_t F = w->F, d = w->d;
    for (int64_t o = 0; o < F; o++) {
        const int64_t at = ((int64_t)e * F + o) * d;
        check_gu(&gu[pg], xr, w->gv + at, w->uv + at, w->ga + at, w->ua + at, d,
                 act[(int64_t)p * F + o], pg, w->quant, w->B, w->qmax);
    }
    for (int64_t o = 0; o < d; o++) {
        double sa;
        const int64_t at = ((int64_t)e * d + o) * F;
        const float *ar = act + (int64_t)p * F, *wr = w->dv + at;
        const double want = ddot(ar, wr, w->da + at, F, &sa);
        pcheck_add(&dnc[pd], y[(int64_t)p * d + o], want,
                   dot_bound(pd, w->quant, F, sa, ar, wr, w->B, w->qmax),
                   dot_bound(GEMV, w->quant, F, sa, ar, wr, w->B, w->qmax));
    }
}

/* Token 0 of an experts case again alone (T = 1: its logits and x, the mode as set): its k
 * places' act and y must be the bits it got batched at places sel[0 .. k-1] (a place's sums
 * do not depend on the other places). */
static void alone_check(struct hy_backend *be, const struct hy_weight *g,
                        const struct hy_weight *u, const struct hy_weight *dn, int E, int k,
                        const float *logits, const float *x, const float *act, const float *y,
                        const int32_t *sel, const char *what)
{
    const int64_t F = g->rows, d = g->cols;
    struct hy_moe_route r;
    route_alloc(be, &r, 1, E, k);
    r.xq = dalloc(be, hy_moe_xq_bytes(1, k, d, F));
    r.shared = false;
    route_logits(be, &r, logits, NULL, 1, E, k, 1.0f);
    float *dx = dalloc(be, (size_t)d * 4), *dact = dalloc(be, (size_t)(k * F) * 4);
    float *dy = dalloc(be, (size_t)(k * d) * 4);
    float *a1 = malloc((size_t)(k * F) * 4), *y1 = malloc((size_t)(k * d) * 4);
    int32_t sel1[HY_CUDA_MOE_MAX_K];
    HY_ASSERT(a1 && y1 && k <= HY_CUDA_MOE_MAX_K);
    be->i->upload(be, dx, x, (size_t)d * 4);
    be->i->moe_gate_up(be, dact, dx, g, u, E, &r, 1, k);
    be->i->moe_down(be, dy, dact, dn, E, &r, 1, k);
    be->i->download(be, a1, dact, (size_t)(k * F) * 4);
    be->i->download(be, y1, dy, (size_t)(k * d) * 4);
    be->i->download(be, sel1, r.sel, (size_t)k * 4);
    int bad = 0;
    for (int j = 0; j < k; j++) /* choice j: place sel[j] batched, sel1[j] alone */
        bad += memcmp(act + (int64_t)sel[j] * F, a1 + (int64_t)sel1[j] * F, (size_t)F * 4) ||
               memcmp(y + (int64_t)sel[j] * d, y1 + (int64_t)sel1[j] * d, (size_t)d * 4);
    CHECKF(bad == 0, "%s: token 0 alone: %d of its %d places differ from its batched bits",
           what, bad, k);
    be->i->free(be, r.xq);
    route_free(be, &r);
    be->i->free(be, dx), be->i->free(be, dact), be->i->free(be, dy);
    free(a1), free(y1);
}

/* The grouped gate_up and down of T tokens routed to k of E experts (sh: the shared
 * expert rides along as matrix E, T <= HY_MOE_SHARED_MAX_T), checked place by place. */
static void experts_case(struct hy_backend *be, struct rng *rg, enum hy_dtype dt, int T, int E,
                         int k, int64_t F, int64_t d, bool hot, bool inv, bool sh)
{
    const int Ew = E + sh, P = T * k, P2 = P + (sh ? T : 0);
    struct hy_weight *g = malloc((size_t)Ew * 3 * sizeof *g), *u = g + Ew, *dn = g + 2 * Ew;
    float *gv, *uv, *dv, *ga, *ua, *da;
    void *gh, *uh, *dh;
    HY_ASSERT(g);
    make_experts(rg, dt, Ew, F, d, g, &gv, &ga, &gh);
    make_experts(rg, dt, Ew, F, d, u, &uv, &ua, &uh);
    make_experts(rg, dt, Ew, d, F, dn, &dv, &da, &dh);
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
    struct hroute h;
    route_get(be, &h, &r, T, E, k);
    /* K-quants: the float32 GEMV for every group, in both modes */
    const bool kq = dt == HY_DTYPE_Q4_K || dt == HY_DTYPE_Q6_K;
    if (T > 1 && (kq || inv)) /* the modes whose places do not depend on the batch */
        alone_check(be, &g[0], &u[0], &dn[0], E, k, logits, x, act, y, h.sel,
                    hy_dtype_name(dt));
    CHECKF(be->i->set_batch_invariant(be, false, &err) == HY_OK, "%s", err.msg);
    const bool quant = dt != HY_DTYPE_BF16, big = !inv && T > HY_CUDA_MOE_GEMV_MAX && !kq;
    /* the groups the GEMV takes (block-scaled fp8 and K-quants: float32 x always) */
    const enum path small = quant && !inv && !kq && dt != HY_DTYPE_F8_B128 ? MMVQ : GEMV;
    const struct xw w = {F, d, hy_dtype_block_elems(dt), dt == HY_DTYPE_Q8_0 ? 127 : 8, quant,
                         gv, uv, dv, ga, ua, da};
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
    CHECKF((gu[MMVQ].n == 0 || gu[MMVQ].loose > 0) && (dnc[MMVQ].n == 0 || dnc[MMVQ].loose > 0),
           "experts %s T=%d: the quantized experts' GEMVs did not take int8 activations",
           hy_dtype_name(dt), T);
    CHECKF(gu[GEMV].loose + dnc[GEMV].loose == 0, "experts %s T=%d: %ld GEMV values past the "
           "float32 bound", hy_dtype_name(dt), T, gu[GEMV].loose + dnc[GEMV].loose);
    CHECKF(!hot || largest == T, "hot expert: %d places of %d", largest, T);
    if (kq)
        worst_k = fmax(worst_k, fmax(gu[GEMV].worst, dnc[GEMV].worst));
    route_hfree(&h);
    be->i->free(be, r.xq);
    route_free(be, &r);
    be->i->free(be, dx), be->i->free(be, dact), be->i->free(be, dy);
    be->i->free(be, (void *)g[0].data), be->i->free(be, (void *)u[0].data);
    be->i->free(be, (void *)dn[0].data);
    free(gv), free(uv), free(dv), free(ga), free(ua), free(da), free(gh), free(uh), free(dh);
    free(g);
    free(logits), free(x), free(act), free(y);
    n_cases++;
}

/* A norm's output into moe_gate_up (Q4_0 experts, 3 tokens): the norm leaves it quantized
 * to int8 for the grouped GEMV (cuda.c's hold, kept by moe_route, which writes the routing
 * alone): the same bits as gate_up of a copy of it (quantized by the op itself). */
static void held_case(struct hy_backend *be, struct rng *rg)
{
    const int T = 3, E = 8, k = 2, P = T * k;
    const int64_t F = 64, d = 256;
    struct hy_weight g[2 * 8], *u = g + E;
    float *gv, *uv, *ga, *ua, *logits = malloc((size_t)(T * E) * 4);
    float *x = malloc((size_t)(T * d) * 4), *nw = malloc((size_t)d * 4);
    float *h = malloc((size_t)(T * d) * 4);
    float *a1 = malloc((size_t)P * (size_t)F * 4), *a2 = malloc((size_t)P * (size_t)F * 4);
    void *gh, *uh;
    HY_ASSERT(logits && x && nw && h && a1 && a2);
    make_experts(rg, HY_DTYPE_Q4_0, E, F, d, g, &gv, &ga, &gh);
    make_experts(rg, HY_DTYPE_Q4_0, E, F, d, u, &uv, &ua, &uh);
    struct hy_err err = {{0}};
    struct hy_weight wn = {HY_DTYPE_F32, 1, d, nw};
    for (int64_t i = 0; i < d; i++)
        nw[i] = 0.5f + rng_unit(rg);
    for (int64_t i = 0; i < T * d; i++)
        x[i] = rng_unit(rg) - 0.5f;
    CHECKF(be->i->weight_upload_n(be, g, E, &err) == HY_OK &&
               be->i->weight_upload_n(be, u, E, &err) == HY_OK &&
               be->i->weight_upload(be, &wn, &err) == HY_OK,
           "%s", err.msg);
    struct hy_moe_route r;
    route_alloc(be, &r, T, E, k);
    r.xq = dalloc(be, hy_moe_xq_bytes(T, k, d, F));
    make_routing(be, rg, &r, logits, NULL, T, E, k, 1.0f, false);
    float *dl = dalloc(be, (size_t)(T * E) * 4), *dx = dalloc(be, (size_t)(T * d) * 4);
    float *dh = dalloc(be, (size_t)(T * d) * 4), *dc = dalloc(be, (size_t)(T * d) * 4);
    float *da = dalloc(be, (size_t)P * (size_t)F * 4);
    be->i->upload(be, dl, logits, (size_t)(T * E) * 4);
    be->i->upload(be, dx, x, (size_t)(T * d) * 4);
    be->i->rmsnorm(be, dh, dx, &wn, T, d, 1e-5f);
    be->i->moe_route(be, &r, dl, NULL, T, E, k, 1.0f); /* the same routing again */
    be->i->moe_gate_up(be, da, dh, &g[0], &u[0], E, &r, T, k);
    be->i->download(be, a1, da, (size_t)P * (size_t)F * 4);
    be->i->download(be, h, dh, (size_t)(T * d) * 4);
    be->i->upload(be, dc, h, (size_t)(T * d) * 4);
    be->i->moe_gate_up(be, da, dc, &g[0], &u[0], E, &r, T, k);
    be->i->download(be, a2, da, (size_t)P * (size_t)F * 4);
    CHECKF(memcmp(a1, a2, (size_t)P * (size_t)F * 4) == 0,
           "gate_up of a norm's output differs from that of its copy");
    void *bufs[] = {dl, dx, dh, dc, da, r.xq, (void *)g[0].data, (void *)u[0].data,
                    (void *)wn.data};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        be->i->free(be, bufs[i]);
    route_free(be, &r);
    free(gv), free(uv), free(ga), free(ua), free(gh), free(uh), free(logits), free(x), free(nw);
    free(h), free(a1), free(a2);
    n_cases++;
}

/* GGUF's Q4_K and Q6_K experts (cols multiples of 256) at the steps of 1, 8, 64 and 256
 * sequences, the larger with an expert every token's choice (groups of 64 and 256 places:
 * the GEMV for all of them, NT = 4 rounds), in the default and the batch-invariant mode. */
static void kquant_cases(struct hy_backend *be, struct rng *rg)
{
    static const enum hy_dtype kdt[] = {HY_DTYPE_Q4_K, HY_DTYPE_Q6_K};
    static const int kc[][7] = {/* T, E, k, F, d, hot, shared */
                                {1, 16, 8, 256, 512, 0, 1},
                                {8, 16, 4, 512, 256, 0, 1},
                                {64, 32, 8, 256, 256, 1, 0},
                                {256, 16, 4, 256, 512, 1, 0}};
    for (size_t ti = 0; ti < sizeof kdt / sizeof kdt[0]; ti++)
        for (size_t i = 0; i < sizeof kc / sizeof kc[0]; i++)
            for (int inv = 0; inv < 2; inv++)
                experts_case(be, rg, kdt[ti], kc[i][0], kc[i][1], kc[i][2], kc[i][3], kc[i][4],
                             kc[i][5], inv, kc[i][6]);
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
                                        HY_DTYPE_Q4_G128, HY_DTYPE_F8_B128};
    static const int ec[][6] = {/* T, E, k, F, d, hot: expert E-1 every token's choice */
                                {1, 8, 2, 32, 64, 0},      {4, 8, 2, 40, 128, 0},
                                {13, 16, 4, 96, 256, 1},   {70, 32, 4, 64, 384, 0},
                                {6, 8, 2, 128, 256, 0},    {300, 8, 2, 128, 256, 1},
                                {64, 128, 8, 128, 256, 0}, {9, 8, 2, 96, 128, 1},
                                {200, 16, 4, 128, 224, 1}, {100, 8, 3, 192, 128, 1},
                                {8, 128, 8, 128, 256, 0},  {256, 128, 8, 128, 256, 0}};
    for (size_t ti = 0; ti < sizeof dts / sizeof dts[0]; ti++)
        for (size_t i = 0; i < sizeof ec / sizeof ec[0]; i++) {
            const int64_t F = ec[i][3], d = ec[i][4];
            const int64_t B = dts[ti] == HY_DTYPE_F8_B128 ? 16 : hy_dtype_block_elems(dts[ti]);
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
    experts_case(be, &rg, HY_DTYPE_F8_B128, 1, 16, 8, 768, 2048, false, false, true);
    experts_case(be, &rg, HY_DTYPE_F8_B128, 70, 8, 2, 192, 208, true, true, false);
    kquant_cases(be, &rg);
    held_case(be, &rg);
    combine_case(be, &rg, 1, 8, 2, 64);
    combine_case(be, &rg, 37, 128, 8, 2048);
    be->i->destroy(be);
    fprintf(stderr, "%d cases; route weights worst %.3g relative, %d near-tie swaps; experts "
            "worst error/bound: GEMV gate_up %.3g, down %.3g; int8 GEMV gate_up %.3g, down "
            "%.3g; GEMM (%ld places) gate_up %.3g, down %.3g; Q4_K/Q6_K GEMV %.3g\n",
            n_cases, worst_route_w, n_near, worst_gu, worst_dn, worst_q_gu, worst_q_dn,
            n_mm_places, worst_mm_gu, worst_mm_dn, worst_k);
    CHECKF(worst_k > 0, "no K-quant experts checked");
    CHECKF(n_mm_places > 0, "no places through the grouped GEMM");
    CHECKF(worst_q_gu > 0 && worst_q_dn > 0, "no places through the int8 grouped GEMV");
    CHECKF(n_sh_places > 0, "no shared expert through the grouped ops");
    return test_result();
}
