/* moe_ops_test.c: the fast CPU backend's mixture-of-experts ops (backend.h moe_route,
 * moe_gate_up, moe_down, moe_combine; moe_ops.c) on every SIMD level this CPU runs, for
 * the weight types hymt's --quant and GGUF files give experts (Q4_0, Q8_0, Q4_K with Q6_K
 * down as in Q4_K_M files, Q6_K, Q4_G128, bf16), with random never-zero data.
 *   route: ids and weights exactly hy_moe_route's, the grouping exactly hy_moe_group's
 *     (off, rows), sel pointing at the place of each choice, act the experts with places.
 *   gate_up / down: every place against sums in double over the exactly dequantized
 *     weights (down from the op's own act, so errors do not compound). The int8 paths
 *     quantize each activation with error at most d/2 = amax/254 of its 32- or 128-value
 *     block, so |dot error| <= sum_c |w_c|·amax_c/254·(1 + 2^-20) + 2·cols·U·S', U = 2^-24,
 *     S' = sum_c |x_c w_c| (float32 scales, products and sums; the float paths have only
 *     the second term). silu(g)·u then within 1.1·(|u|·Bg + |silu(g)|·Bu + Bg·Bu) +
 *     8·U·|silu(g)·u| (silu' <= 1.1; expf, the add, the division and the product).
 *   combine: the contract's order (acc, then each choice's product added, j ascending):
 *     the same bits as that loop.
 *   batch and threads: each of a subset of tokens, put in a second batch of the same size
 *     whose other tokens are new random ones (its experts then hold other places), gives
 *     its act, y and output rows bit for bit as in the first; where a call of one token
 *     takes the same path (T·k < 2E: decode sizes), alone too; 1 and 3 threads give the
 *     same bits. Shapes include experts with many places (37 tokens over 8 experts, top 3,
 *     the packed path on AVX-512) and calls long enough to take several slabs of quantized
 *     activations (960 places of Q6_K on AVX2 for down, 900 tokens for gate_up). */
#include "backend/cpu/moe.h"
#include "backend/cpu/ops_test_util.h"

#define MAXE 8

struct layer {
    int E, d, F;
    struct tweight g[MAXE], u[MAXE], dn[MAXE];
    struct hy_weight gw[MAXE], uw[MAXE], dw[MAXE];
};

static void layer_make(struct layer *L, struct rng *r, int E, int d, int F, enum hy_dtype gdt,
                       enum hy_dtype ddt)
{
    *L = (struct layer){.E = E, .d = d, .F = F};
    for (int e = 0; e < E; e++) {
        tweight_make(&L->g[e], r, gdt, F, d, 0.5f);
        tweight_make(&L->u[e], r, gdt, F, d, 0.5f);
        tweight_make(&L->dn[e], r, ddt, d, F, 0.5f);
        L->gw[e] = L->g[e].w, L->uw[e] = L->u[e].w, L->dw[e] = L->dn[e].w;
    }
}

static void layer_free(struct layer *L)
{
    for (int e = 0; e < L->E; e++)
        tweight_free(&L->g[e]), tweight_free(&L->u[e]), tweight_free(&L->dn[e]);
}

/* One call's buffers: routing and outputs for T tokens, k choices. */
struct run {
    struct hy_moe_route r;
    float *act, *y, *out;
};

static void run_alloc(struct run *o, int T, int k, const struct layer *L)
{
    size_t P = (size_t)T * (size_t)k;
    o->r = (struct hy_moe_route){.xq = NULL, .shared = false};
    o->r.ids = malloc(P * 4), o->r.rows = malloc(P * 4), o->r.sel = malloc(P * 4);
    o->r.w = fmalloc((int64_t)P), o->r.off = malloc(4 * (MAXE + 1)),
    o->r.act = malloc(4 * (MAXE + 1));
    o->act = fmalloc((int64_t)P * L->F), o->y = fmalloc((int64_t)P * L->d);
    o->out = fmalloc((int64_t)T * L->d);
    if (!o->r.ids || !o->r.rows || !o->r.sel || !o->r.off || !o->r.act)
        abort();
}

static void run_free(struct run *o)
{
    free(o->r.ids), free(o->r.rows), free(o->r.sel), free(o->r.w), free(o->r.off);
    free(o->r.act), free(o->act), free(o->y), free(o->out);
}

static void run_ops(struct hy_backend *be, struct run *o, const struct layer *L,
                    const float *logits, const float *bias, const float *x, const float *acc, int T,
                    int k)
{
    be->i->moe_route(be, &o->r, logits, bias, T, L->E, k, 2.5f);
    be->i->moe_gate_up(be, o->act, x, L->gw, L->uw, L->E, &o->r, T, k);
    be->i->moe_down(be, o->y, o->act, L->dw, L->E, &o->r, T, k);
    be->i->moe_combine(be, o->out, acc, o->y, &o->r, T, k, L->d);
}

/* x · row of w in double, and the bound on the op's error (module comment). */
static double ref_dot(const float *x, const float *w, int64_t n, double *bound)
{
    double s = 0, sa = 0, qe = 0;
    for (int64_t b = 0; b < n; b += 32) {
        double amax = 0;
        for (int64_t c = b; c < b + 32 && c < n; c++)
            amax = fmax(amax, fabs((double)x[c]));
        for (int64_t c = b; c < b + 32 && c < n; c++) {
            s += (double)x[c] * w[c];
            sa += fabs((double)x[c] * w[c]);
            qe += fabs((double)w[c]) * amax / 254.0 * (1 + 0x1p-20);
        }
    }
    *bound = qe * 4 + 2.0 * (double)n * U32 * sa; /* 4: a 128-value block's amax >= a 32's */
    return s;
}

static double silu(double z)
{
    return z / (1 + exp(-z));
}

/* Routing exactly the reference's; act and y within the bounds; combine the same bits. */
static void check_ref(const struct run *o, const struct layer *L, const float *logits,
                      const float *bias, const float *x, const float *acc, int T, int k,
                      const char *what)
{
    const int P = T * k, E = L->E, d = L->d, F = L->F;
    int32_t *ids = malloc((size_t)P * 4), *rows = malloc((size_t)P * 4), off[MAXE + 1];
    float *w = fmalloc(P), *rw = fmalloc(P);
    hy_moe_route(logits, bias, T, E, k, 2.5f, ids, w);
    hy_moe_group(ids, w, T, k, E, off, rows, rw);
    CHECKF(!memcmp(ids, o->r.ids, (size_t)P * 4) && !memcmp(w, o->r.w, (size_t)P * 4) &&
               !memcmp(off, o->r.off, (size_t)(E + 1) * 4) &&
               !memcmp(rows, o->r.rows, (size_t)P * 4),
           "%s: routing differs from moe.h's", what);
    int n_act = 0;
    for (int e = 0; e < E; e++)
        if (off[e + 1] > off[e])
            CHECKF(o->r.act[1 + n_act++] == e, "%s: act list", what);
    CHECKF(o->r.act[0] == n_act, "%s: %d active experts, want %d", what, o->r.act[0], n_act);
    double worst = 0;
    for (int i = 0; i < P; i++) {
        const int t = i / k, e = ids[i], p = o->r.sel[i];
        CHECKF(p >= off[e] && p < off[e + 1] && rows[p] == t, "%s: sel[%d] = %d", what, i, p);
        for (int r = 0; r < F; r++) {
            double bg, bu;
            double g = ref_dot(x + (int64_t)t * d, L->g[e].val + (int64_t)r * d, d, &bg);
            double u = ref_dot(x + (int64_t)t * d, L->u[e].val + (int64_t)r * d, d, &bu);
            double want = silu(g) * u, got = o->act[(int64_t)p * F + r];
            double b = 1.1 * (fabs(u) * bg + fabs(silu(g)) * bu + bg * bu) + 8 * U32 * fabs(want);
            worst = fmax(worst, fabs(got - want) / b);
        }
        for (int r = 0; r < d; r++) {
            double b, want = ref_dot(o->act + (int64_t)p * F, L->dn[e].val + (int64_t)r * F, F, &b);
            worst = fmax(worst, fabs(o->y[(int64_t)p * d + r] - want) / b);
        }
    }
    CHECKF(worst <= 1.0, "%s: act/y error %.3g of the bound", what, worst);
    int bad = 0;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < d; c++) {
            float v = acc[(int64_t)t * d + c];
            for (int j = 0; j < k; j++)
                v += o->r.w[t * k + j] * o->y[(int64_t)o->r.sel[t * k + j] * d + c];
            bad += memcmp(&v, &o->out[(int64_t)t * d + c], 4) != 0;
        }
    CHECKF(!bad, "%s: combine differs in %d values", what, bad);
    printf("  %s: worst act/y error %.3f of the bound\n", what, worst);
    free(ids), free(rows), free(w), free(rw);
}

/* Rows of token t (in o) that differ from those of token u in a (act, y, out). */
static int rows_differ(const struct run *o, int t, const struct run *a, int u,
                       const struct layer *L, int k)
{
    int bad = 0;
    for (int j = 0; j < k; j++) {
        int p = o->r.sel[t * k + j], q = a->r.sel[u * k + j];
        bad +=
            memcmp(o->act + (int64_t)p * L->F, a->act + (int64_t)q * L->F, (size_t)L->F * 4) != 0;
        bad += memcmp(o->y + (int64_t)p * L->d, a->y + (int64_t)q * L->d, (size_t)L->d * 4) != 0;
    }
    return bad +
           (memcmp(o->out + (int64_t)t * L->d, a->out + (int64_t)u * L->d, (size_t)L->d * 4) != 0);
}

/* A token's rows do not depend on the other tokens of its call: token t in a batch of T
 * other random tokens (so its experts hold other places) gives the same bits; and, where
 * the call is small enough that alone it takes the same path (T * k < 2E, decode), token t
 * alone too. */
static void check_batch(struct hy_backend *be, const struct run *o, const struct layer *L,
                        const float *logits, const float *bias, const float *x, const float *acc,
                        int T, int k, struct rng *r, const char *what)
{
    const int E = L->E, d = L->d;
    struct run a, b;
    run_alloc(&a, 1, k, L), run_alloc(&b, T, k, L);
    float *lo = fmalloc((int64_t)T * E), *xo = fmalloc((int64_t)T * d),
          *ao = fmalloc((int64_t)T * d);
    int bad = 0, bad1 = 0, step = T > 40 ? 37 : 1;
    for (int t = 0; t < T; t += step) {
        rng_fill(r, lo, (int64_t)T * E, 3.0f), rng_fill(r, xo, (int64_t)T * d, 1.0f);
        rng_fill(r, ao, (int64_t)T * d, 1.0f);
        memcpy(lo + (int64_t)t * E, logits + (int64_t)t * E, (size_t)E * 4);
        memcpy(xo + (int64_t)t * d, x + (int64_t)t * d, (size_t)d * 4);
        memcpy(ao + (int64_t)t * d, acc + (int64_t)t * d, (size_t)d * 4);
        run_ops(be, &b, L, lo, bias, xo, ao, T, k);
        bad += rows_differ(o, t, &b, t, L, k);
        if ((int64_t)T * k >= 2 * E)
            continue;
        run_ops(be, &a, L, logits + (int64_t)t * E, bias, x + (int64_t)t * d, acc + (int64_t)t * d,
                1, k);
        bad1 += rows_differ(o, t, &a, 0, L, k);
    }
    CHECKF(!bad, "%s: %d rows differ between two batches holding the token", what, bad);
    CHECKF(!bad1, "%s: %d rows differ between the batch and the token alone", what, bad1);
    run_free(&a), run_free(&b), free(lo), free(xo), free(ao);
}

static void one_case(enum hy_cpu_isa isa, enum hy_dtype gdt, enum hy_dtype ddt, int E, int d, int F,
                     int T, int k)
{
    struct hy_backend *be1 = NULL, *be3 = NULL;
    struct hy_err err = {0};
    if (hy_cpu_backend_create_isa(&be1, 1, isa, &err) != HY_OK)
        return; /* this CPU lacks the level */
    CHECK(hy_cpu_backend_create_isa(&be3, 3, isa, &err) == HY_OK);
    char what[96];
    snprintf(what, sizeof what, "%s %s/%s E%d d%d F%d T%d k%d", hy_cpu_backend_isa(be1),
             hy_dtype_name(gdt), hy_dtype_name(ddt), E, d, F, T, k);
    struct rng r = {0x1234567ull + (uint64_t)T * 7919 + (uint64_t)gdt * 31 + (uint64_t)isa};
    struct layer L;
    layer_make(&L, &r, E, d, F, gdt, ddt);
    float *logits = fmalloc((int64_t)T * E), *bias = fmalloc(E), *x = fmalloc((int64_t)T * d);
    float *acc = fmalloc((int64_t)T * d);
    rng_fill(&r, logits, (int64_t)T * E, 3.0f), rng_fill(&r, bias, E, 0.3f);
    rng_fill(&r, x, (int64_t)T * d, 1.0f), rng_fill(&r, acc, (int64_t)T * d, 1.0f);
    struct run o1, o3;
    run_alloc(&o1, T, k, &L), run_alloc(&o3, T, k, &L);
    run_ops(be1, &o1, &L, logits, bias, x, acc, T, k);
    run_ops(be3, &o3, &L, logits, bias, x, acc, T, k);
    check_ref(&o3, &L, logits, bias, x, acc, T, k, what);
    CHECKF(!memcmp(o1.act, o3.act, (size_t)T * k * F * 4) &&
               !memcmp(o1.out, o3.out, (size_t)T * d * 4),
           "%s: 1 and 3 threads differ", what);
    check_batch(be3, &o3, &L, logits, bias, x, acc, T, k, &r, what);
    run_free(&o1), run_free(&o3), layer_free(&L);
    free(logits), free(bias), free(x), free(acc);
    be1->i->destroy(be1), be3->i->destroy(be3);
}

int main(void)
{
    const enum hy_cpu_isa isas[] = {HY_CPU_ISA_AVX512, HY_CPU_ISA_AVX2, HY_CPU_ISA_SCALAR};
    struct {
        enum hy_dtype g, dn;
        int d, F;
    } ts[] = {
        {HY_DTYPE_Q4_0, HY_DTYPE_Q4_0, 256, 96}, /* down's 96 columns: not packed */
        {HY_DTYPE_Q8_0, HY_DTYPE_Q8_0, 384, 128}, {HY_DTYPE_Q4_K, HY_DTYPE_Q6_K, 256, 256},
        {HY_DTYPE_Q6_K, HY_DTYPE_Q6_K, 256, 256}, {HY_DTYPE_Q4_G128, HY_DTYPE_Q4_G128, 256, 128},
        {HY_DTYPE_BF16, HY_DTYPE_BF16, 96, 64},
    };
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
        for (size_t j = 0; j < sizeof ts / sizeof ts[0]; j++) {
            /* the scalar kernels share the op's code with the others: two types suffice */
            if (isas[i] == HY_CPU_ISA_SCALAR && ts[j].g != HY_DTYPE_Q4_0 &&
                ts[j].g != HY_DTYPE_BF16)
                continue;
            one_case(isas[i], ts[j].g, ts[j].dn, 8, ts[j].d, ts[j].F, 1, 3);
            one_case(isas[i], ts[j].g, ts[j].dn, 8, ts[j].d, ts[j].F, 37, 3);
        }
    /* several slabs: q_prep'd Q6_K (AVX2) holds 896 rows of 256 columns in the scratch */
    one_case(HY_CPU_ISA_AVX2, HY_DTYPE_Q6_K, HY_DTYPE_Q6_K, 8, 256, 256, 120, 8);
    one_case(HY_CPU_ISA_AVX2, HY_DTYPE_Q6_K, HY_DTYPE_Q6_K, 4, 256, 256, 900, 1);
    /* a decode batch that stays off the packed path on AVX-512 (T·k < 2E) */
    one_case(HY_CPU_ISA_AVX512, HY_DTYPE_Q8_0, HY_DTYPE_Q8_0, 8, 384, 128, 5, 3);
    return test_result();
}
