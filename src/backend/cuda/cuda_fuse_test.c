/* cuda_fuse_test.c: fused projections (weight_fuse, matmul_n, matmul_glu; fuse.c) against a
 * double-precision reference on random, never-zero bf16 weights and inputs, at several
 * shapes: row counts off multiples of 32 (and of 8: padded at upload, so left apart and
 * multiplied apart), T in the GEMV range (separate products),
 * just past it, and large enough that the fused output takes two chunks of the 16M-float
 * output scratch with a tail of 6 rows (the GEMV again, inside the fused path).
 * Bounds per output element, S = Σ_c |x_c w_c|, U = 2^-24:
 *   matmul_n: cuda_ops_test's bf16 matmul bound (2^-8 + (cols + 4)·U)·S (x rounded to
 *     bf16 for the GEMM: 2^-9·S, float32 sums; a factor 2 to spare);
 *   matmul_glu: with g, u the two products and eg, eu their bounds, silu's slope is within
 *     [-0.1, 1.1], so |err| <= 1.1·eg·(|u| + eu) + |silu(g)|·eu + 8U·|silu(g)·u| (the
 *     float32 expf, divide and products).
 * Also: fusing moves the bytes exactly (the fused copies read back bit for bit), a product
 * of the glu output taken right after it equals that of a copy bit for bit, the
 * fallbacks (weights not adjacent; batch-invariant mode) give the same bits as separate
 * matmul calls, and freeing every member returns the device memory. Norms (rmsnorm,
 * add_rmsnorm) whose output the next product takes (with its bf16 rounding past the GEMV
 * rows, its int8 quantization up to 8 rows): that product is the bits of a copy's,
 * the norm's output the bits of the same rows normed 8 at a time, also with a matmul
 * scratch too small to hold the output and with a chunked product in between;
 * rope_norm_store right after the fused q/k/v product (which it reads unsplit) gives the
 * bits of the same ops with the product split first (K/V in bf16 and float32), and up to
 * 8 rows the fused q/k/v product is the separate products' bits. Exits 77
 * without a CUDA device. */
#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_test_util.h"

static double worst_n, worst_glu;

/* n bf16 weights of rows[i] x cols uploaded (and fused when fuse); their exact values in
 * tw[i].val. Returns whether weight_fuse took them. */
static bool make_weights(struct hy_backend *be, struct rng *r, struct tweight *tw,
                         struct hy_weight *dev, const int64_t *rows, int n, int64_t cols,
                         bool fuse)
{
    struct hy_err err;
    for (int i = 0; i < n; i++) {
        tweight_make(&tw[i], r, HY_DTYPE_BF16, rows[i], cols, 1.0f);
        dev[i] = tw[i].w;
        CHECKF(be->i->weight_upload(be, &dev[i], &err) == HY_OK, "upload: %s", err.msg);
    }
    if (!fuse)
        return false;
    struct hy_weight *ws[4] = {&dev[0], &dev[1], &dev[2], &dev[3]};
    bool ok = be->i->weight_fuse(be, ws, n);
    for (int i = 0; ok && i < n; i++) { /* the bytes moved exactly, one after another */
        size_t b = (size_t)(rows[i] * cols) * 2;
        unsigned char *h = malloc(b);
        HY_ASSERT(h);
        be->i->download(be, h, dev[i].data, b);
        CHECKF(memcmp(h, (unsigned char *)tw[i].w.data, b) == 0, "fused weight %d bytes", i);
        free(h);
        if (i > 0)
            CHECK((const char *)dev[i].data == (const char *)dev[i - 1].data + (size_t)(rows[i - 1] * cols) * 2);
    }
    return ok;
}

static void free_weights(struct hy_backend *be, struct tweight *tw, struct hy_weight *dev, int n)
{
    for (int i = 0; i < n; i++) {
        be->i->free(be, (void *)dev[i].data);
        tweight_free(&tw[i]);
    }
}

/* want[t, o] = Σ_c x[t, c] w[o, c] in double, and S = Σ|x w| into sabs. */
static void ref_product(const float *x, const float *w, int64_t rows, int64_t cols, int T,
                        double *want, double *sabs)
{
    for (int t = 0; t < T; t++)
        for (int64_t o = 0; o < rows; o++) {
            double a = 0, s = 0;
            for (int64_t c = 0; c < cols; c++) {
                double p = (double)x[t * cols + c] * w[o * cols + c];
                a += p;
                s += fabs(p);
            }
            want[t * rows + o] = a;
            sabs[t * rows + o] = s;
        }
}

static double mm_bound(double sabs, int64_t cols)
{
    return (1.0 / 256 + (double)(cols + 4) * U32) * sabs;
}

static void case_n(struct hy_backend *be, struct rng *r, const int64_t *rows, int n, int64_t cols,
                   int T, bool fuse)
{
    struct tweight tw[4];
    struct hy_weight dev[4];
    /* a row count off a multiple of 8 is padded at upload, and padded weights stay apart */
    bool aligned = true;
    for (int i = 0; i < n; i++)
        aligned &= rows[i] % 8 == 0;
    bool fused = make_weights(be, r, tw, dev, rows, n, cols, fuse);
    CHECKF(fused == (fuse && aligned), "weight_fuse n=%d cols=%lld", n, (long long)cols);
    float *x = fmalloc(T * cols);
    rng_fill(r, x, T * cols, 2.0f);
    float *dx = dput(be, x, T * cols), *douts[4];
    const struct hy_weight *ws[4];
    for (int i = 0; i < n; i++) {
        douts[i] = dnan(be, T * rows[i]);
        ws[i] = &dev[i];
    }
    be->i->matmul_n(be, douts, dx, ws, n, T);
    for (int i = 0; i < n; i++) {
        int64_t m = T * rows[i];
        float *got = fmalloc(m);
        double *want = dmalloc(m), *bound = dmalloc(m);
        be->i->download(be, got, douts[i], (size_t)m * sizeof(float));
        ref_product(x, tw[i].val, rows[i], cols, T, want, bound);
        for (int64_t k = 0; k < m; k++)
            bound[k] = mm_bound(bound[k], cols);
        CHECKF(close_all("matmul_n", got, want, bound, m, false, &worst_n),
               "matmul_n %s weight %d of %d: %lld x %lld, T=%d", fuse ? "fused" : "apart", i, n,
               (long long)rows[i], (long long)cols, T);
        free(got);
        free(want);
        free(bound);
        be->i->free(be, douts[i]);
    }
    be->i->free(be, dx);
    free(x);
    free_weights(be, tw, dev, n);
}

static void case_glu(struct hy_backend *be, struct rng *r, int64_t F, int64_t cols, int T,
                     bool fuse)
{
    struct tweight tw[2];
    struct hy_weight dev[2];
    const int64_t rows[2] = {F, F};
    CHECK(make_weights(be, r, tw, dev, rows, 2, cols, fuse) == (fuse && F % 8 == 0));
    float *x = fmalloc(T * cols), *got = fmalloc(T * F);
    rng_fill(r, x, T * cols, 2.0f);
    float *dx = dput(be, x, T * cols), *dout = dnan(be, T * F), *dtmp = dnan(be, T * F);
    /* a product of the glu output right after it (as the down projection: the fused op may
     * leave the output's bf16 rounding in the matmul scratch for it) is the same bits as
     * the product of a fresh copy */
    struct tweight twd;
    struct hy_weight wd;
    struct hy_err err;
    tweight_make(&twd, r, HY_DTYPE_BF16, 24, F, 1.0f);
    wd = twd.w;
    CHECKF(be->i->weight_upload(be, &wd, &err) == HY_OK, "upload: %s", err.msg);
    float *dd1 = dnan(be, T * 24), *dd2 = dnan(be, T * 24);
    be->i->matmul_glu(be, dout, dtmp, dx, &dev[0], &dev[1], T);
    be->i->matmul(be, dd1, dout, &wd, T);
    be->i->download(be, got, dout, (size_t)(T * F) * sizeof(float));
    float *dcopy = dput(be, got, T * F), *h1 = fmalloc(T * 24), *h2 = fmalloc(T * 24);
    be->i->matmul(be, dd2, dcopy, &wd, T);
    be->i->download(be, h1, dd1, (size_t)(T * 24) * sizeof(float));
    be->i->download(be, h2, dd2, (size_t)(T * 24) * sizeof(float));
    CHECKF(memcmp(h1, h2, (size_t)(T * 24) * sizeof(float)) == 0,
           "the product of the glu output differs from that of its copy (F=%lld, T=%d)",
           (long long)F, T);
    be->i->free(be, dcopy);
    be->i->free(be, dd1);
    be->i->free(be, dd2);
    be->i->free(be, (void *)wd.data);
    tweight_free(&twd);
    free(h1);
    free(h2);
    double *g = dmalloc(T * F), *sg = dmalloc(T * F), *u = dmalloc(T * F), *su = dmalloc(T * F);
    ref_product(x, tw[0].val, F, cols, T, g, sg);
    ref_product(x, tw[1].val, F, cols, T, u, su);
    for (int64_t k = 0; k < T * F; k++) {
        double eg = mm_bound(sg[k], cols), eu = mm_bound(su[k], cols);
        double sl = g[k] / (1 + exp(-g[k]));
        double want = sl * u[k];
        sg[k] = 1.1 * eg * (fabs(u[k]) + eu) + fabs(sl) * eu + 8 * U32 * fabs(want);
        g[k] = want;
    }
    CHECKF(close_all("matmul_glu", got, g, sg, T * F, false, &worst_glu),
           "matmul_glu %s F=%lld cols=%lld T=%d", fuse ? "fused" : "apart", (long long)F,
           (long long)cols, T);
    be->i->free(be, dx);
    be->i->free(be, dout);
    be->i->free(be, dtmp);
    free(x);
    free(got);
    free(g);
    free(sg);
    free(u);
    free(su);
    free_weights(be, tw, dev, 2);
}

/* The products of x by the consumer k (0: fused q/k/v of rows qkv, matmul_n; 1: a bf16
 * matrix; 2: a Q8_0 one), [T, 176 or 24] into out. */
static const int64_t qkv_rows[3] = {96, 40, 40};

static int64_t consume(struct hy_backend *be, int k, float *out, const float *x,
                       const struct hy_weight *qkv, const struct hy_weight *wm, int T)
{
    if (k == 0) {
        const struct hy_weight *ws[3] = {&qkv[0], &qkv[1], &qkv[2]};
        float *outs[3] = {out, out + T * qkv_rows[0], out + T * (qkv_rows[0] + qkv_rows[1])};
        be->i->matmul_n(be, outs, x, ws, 3, T);
        return 176;
    }
    be->i->matmul(be, out, x, &wm[k - 1], T);
    return 24;
}

/* A norm's output multiplied right after it (past the GEMV rows the norm leaves its bf16
 * rounding in the matmul scratch for that product: cuda.c) gives the same bits as the
 * product of a fresh copy of it, for each consumer above; and the norm's own output is the
 * same bits as that of the same rows normed 8 at a time (no bf16 output then). add: the
 * residual form, out distinct from y, or out == y when out_y. */
static void case_norm(struct hy_backend *be, struct rng *r, int64_t d, int T, bool add,
                      bool out_y)
{
    struct hy_err err;
    struct tweight tn, tm[2], tw[3];
    struct hy_weight wn, wm[2], dev[3];
    tweight_make(&tn, r, HY_DTYPE_F32, 1, d, 1.0f);
    wn = tn.w;
    CHECKF(be->i->weight_upload(be, &wn, &err) == HY_OK, "upload: %s", err.msg);
    const enum hy_dtype mt[2] = {HY_DTYPE_BF16, HY_DTYPE_Q8_0};
    const int nm = d % 32 == 0 ? 2 : 1; /* Q8_0 takes blocks of 32 */
    for (int i = 0; i < nm; i++) {
        tweight_make(&tm[i], r, mt[i], 24, d, 1.0f);
        wm[i] = tm[i].w;
        CHECKF(be->i->weight_upload(be, &wm[i], &err) == HY_OK, "upload: %s", err.msg);
    }
    CHECK(make_weights(be, r, tw, dev, qkv_rows, 3, d, true));
    const int64_t n = (int64_t)T * d, pn = T * 176;
    float *x = fmalloc(n), *y = fmalloc(n), *h = fmalloc(n), *h8 = fmalloc(n);
    float *pa = fmalloc(pn), *pb = fmalloc(pn);
    rng_fill(r, x, n, 2.0f);
    rng_fill(r, y, n, 2.0f);
    float *dx = dput(be, x, n), *dy = dput(be, y, n), *dout = out_y ? dy : dnan(be, n);
    float *da = dnan(be, pn), *db = dnan(be, pn);
    for (int t0 = 0; t0 < T; t0 += 8) { /* 8 rows a call: the GEMV rows, no bf16 output */
        const int m = T - t0 < 8 ? T - t0 : 8;
        if (add)
            be->i->add_rmsnorm(be, dout + t0 * d, dx + t0 * d, dy + t0 * d, &wn, m, d, 1e-5f);
        else
            be->i->rmsnorm(be, dout + t0 * d, dx + t0 * d, &wn, m, d, 1e-5f);
    }
    be->i->download(be, h8, dout, (size_t)n * sizeof(float));
    for (int k = 0; k < 1 + nm; k++) {
        be->i->upload(be, dx, x, (size_t)n * sizeof(float));
        be->i->upload(be, dy, y, (size_t)n * sizeof(float));
        if (add)
            be->i->add_rmsnorm(be, dout, dx, dy, &wn, T, d, 1e-5f);
        else
            be->i->rmsnorm(be, dout, dx, &wn, T, d, 1e-5f);
        const int64_t m = T * consume(be, k, da, dout, dev, wm, T);
        be->i->download(be, h, dout, (size_t)n * sizeof(float));
        CHECKF(memcmp(h, h8, (size_t)n * sizeof(float)) == 0,
               "%s d=%lld T=%d: the output differs from that of 8 rows a call",
               add ? "add_rmsnorm" : "rmsnorm", (long long)d, T);
        float *dcopy = dput(be, h, n);
        consume(be, k, db, dcopy, dev, wm, T);
        be->i->download(be, pa, da, (size_t)m * sizeof(float));
        be->i->download(be, pb, db, (size_t)m * sizeof(float));
        CHECKF(memcmp(pa, pb, (size_t)m * sizeof(float)) == 0,
               "%s d=%lld T=%d: product %d of the norm's output differs from that of its copy",
               add ? "add_rmsnorm" : "rmsnorm", (long long)d, T, k);
        be->i->free(be, dcopy);
    }
    be->i->free(be, dx);
    be->i->free(be, dy);
    if (!out_y)
        be->i->free(be, dout);
    be->i->free(be, da);
    be->i->free(be, db);
    be->i->free(be, (void *)wn.data);
    tweight_free(&tn);
    for (int i = 0; i < nm; i++) {
        be->i->free(be, (void *)wm[i].data);
        tweight_free(&tm[i]);
    }
    free_weights(be, tw, dev, 3);
    free(x);
    free(y);
    free(h);
    free(h8);
    free(pa);
    free(pb);
}

/* A matmul scratch of 16 rows of 264: a norm of 12 rows leaves its bf16 output there, a
 * norm of 37 rows does not (its product goes in chunks); and a product that goes through
 * the scratch in chunks between a norm and the norm's product must not leave the latter
 * reading the chunks (the scratch no longer holds the norm's output): the same bits as the
 * product of a copy. */
static void test_small_scratch(struct rng *r)
{
    struct hy_backend *be = NULL;
    struct hy_err err;
    const int64_t d = 264;
    const struct hy_cuda_opts o = {.matmul_scratch = 16 * 264};
    CHECKF(hy_cuda_backend_create_opts(&be, 0, &o, &err) == HY_OK, "%s", err.msg);
    if (!be)
        return;
    case_norm(be, r, d, 12, true, true);
    case_norm(be, r, d, 37, true, false);
    case_norm(be, r, d, 37, false, false);
    struct tweight tn, tm;
    struct hy_weight wn, wm;
    tweight_make(&tn, r, HY_DTYPE_F32, 1, d, 1.0f);
    tweight_make(&tm, r, HY_DTYPE_BF16, 24, d, 1.0f);
    wn = tn.w, wm = tm.w;
    CHECKF(be->i->weight_upload(be, &wn, &err) == HY_OK, "upload: %s", err.msg);
    CHECKF(be->i->weight_upload(be, &wm, &err) == HY_OK, "upload: %s", err.msg);
    const int Ta = 12, Tb = 37;
    float *x = fmalloc(Tb * d), *h = fmalloc(Ta * d), *p1 = fmalloc(Ta * 24),
          *p2 = fmalloc(Ta * 24);
    rng_fill(r, x, Tb * d, 2.0f);
    float *dx = dput(be, x, Ta * d), *dxb = dput(be, x, Tb * d), *dn = dnan(be, Ta * d);
    float *dob = dnan(be, Tb * 24), *d1 = dnan(be, Ta * 24), *d2 = dnan(be, Ta * 24);
    be->i->rmsnorm(be, dn, dx, &wn, Ta, d, 1e-5f);
    be->i->matmul(be, dob, dxb, &wm, Tb); /* 3 chunks through the scratch */
    be->i->matmul(be, d1, dn, &wm, Ta);
    be->i->download(be, h, dn, (size_t)(Ta * d) * sizeof(float));
    float *dc = dput(be, h, Ta * d);
    be->i->matmul(be, d2, dc, &wm, Ta);
    be->i->download(be, p1, d1, (size_t)(Ta * 24) * sizeof(float));
    be->i->download(be, p2, d2, (size_t)(Ta * 24) * sizeof(float));
    CHECKF(memcmp(p1, p2, (size_t)(Ta * 24) * sizeof(float)) == 0,
           "a product of a norm's output after a chunked product differs from its copy's");
    float *bufs[] = {dx, dxb, dn, dob, d1, d2, dc};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        be->i->free(be, bufs[i]);
    be->i->free(be, (void *)wn.data);
    be->i->free(be, (void *)wm.data);
    tweight_free(&tn);
    tweight_free(&tm);
    free(x);
    free(h);
    free(p1);
    free(p2);
    be->i->destroy(be);
}

/* Whether the device bytes at a and b are the same. */
static bool same_dev(struct hy_backend *be, const void *a, const void *b, size_t bytes)
{
    unsigned char *ha = malloc(bytes), *hb = malloc(bytes);
    HY_ASSERT(ha && hb);
    be->i->download(be, ha, a, bytes);
    be->i->download(be, hb, b, bytes);
    const bool same = memcmp(ha, hb, bytes) == 0;
    free(ha);
    free(hb);
    return same;
}

/* rope_norm_store right after the fused q/k/v product (past the GEMV rows, and at 1-2 rows,
 * it reads q, k, v from the product's rows: fuse.c) against the same ops with an op in
 * between (a download, which splits the product first): q, the raw k and v, and both pools
 * the same bits. norm: 0 none, 1 after RoPE, 2 before (norm_first). */
static void case_qkv_rns(struct hy_backend *be, struct rng *r, int T, int nh, int nkv, int hd,
                         int norm)
{
    struct hy_err err;
    const int64_t cols = 264, kvd = (int64_t)nkv * hd, rows[3] = {nh * hd, kvd, kvd};
    const int64_t slots_n = 3 * (int64_t)T + 5;
    struct tweight tw[3], tq, tk;
    struct hy_weight dev[3], wq, wk;
    CHECK(make_weights(be, r, tw, dev, rows, 3, cols, true));
    tweight_make(&tq, r, HY_DTYPE_F32, 1, hd, 2.0f);
    tweight_make(&tk, r, HY_DTYPE_F32, 1, hd, 2.0f);
    wq = tq.w, wk = tk.w;
    CHECKF(be->i->weight_upload(be, &wq, &err) == HY_OK, "upload: %s", err.msg);
    CHECKF(be->i->weight_upload(be, &wk, &err) == HY_OK, "upload: %s", err.msg);
    float *x = fmalloc(T * cols), *inv = fmalloc(hd / 2);
    int32_t *pos = malloc((size_t)T * sizeof *pos), *slots = malloc((size_t)T * sizeof *slots);
    HY_ASSERT(pos && slots);
    rng_fill(r, x, T * cols, 2.0f);
    for (int i = 0; i < hd / 2; i++)
        inv[i] = powf(10000.0f, -2.0f * (float)i / (float)hd);
    for (int t = 0; t < T; t++) {
        pos[t] = (int32_t)(rng_next(r) % 9000);
        slots[t] = (int32_t)(3 * (T - 1 - t) + 2); /* distinct rows, backwards, others NaN */
    }
    float *dx = dput(be, x, T * cols), *dinv = dput(be, inv, hd / 2), *o1[3], *o2[3];
    void *kp[2], *vp[2];
    const struct hy_weight *ws[3] = {&dev[0], &dev[1], &dev[2]};
    for (int i = 0; i < 3; i++) {
        o1[i] = dnan(be, T * rows[i]);
        o2[i] = dnan(be, T * rows[i]);
    }
    for (int j = 0; j < 2; j++) {
        kp[j] = kvnan(be, slots_n * kvd);
        vp[j] = kvnan(be, slots_n * kvd);
    }
    float *h = fmalloc(T * rows[0]);
    for (int j = 0; j < 2; j++) {
        float **o = j ? o2 : o1;
        be->i->matmul_n(be, o, dx, ws, 3, T);
        if (j) /* an op in between: the product is split first */
            be->i->download(be, h, o[0], (size_t)(T * rows[0]) * sizeof(float));
        be->i->rope_norm_store(be, o[0], o[1], o[2], pos, slots, T, nh, nkv, hd, dinv,
                               norm ? &wq : NULL, norm ? &wk : NULL, 1e-6f, norm == 2, kp[j],
                               vp[j]);
    }
    const size_t es = hy_dtype_size(kvt(be));
    const char *what[3] = {"q", "raw k", "raw v"};
    for (int i = 0; i < 3; i++)
        CHECKF(same_dev(be, o1[i], o2[i], (size_t)(T * rows[i]) * sizeof(float)),
               "rope_norm_store after matmul_n (T=%d, %d/%d heads of %d, norm %d): %s differs",
               T, nh, nkv, hd, norm, what[i]);
    CHECKF(same_dev(be, kp[0], kp[1], (size_t)(slots_n * kvd) * es) &&
               same_dev(be, vp[0], vp[1], (size_t)(slots_n * kvd) * es),
           "rope_norm_store after matmul_n (T=%d, %d/%d heads of %d, norm %d): pools differ", T,
           nh, nkv, hd, norm);
    /* up to the GEMV rows the fused product is the separate products' bits (at 1-2 rows one
     * GEMV over the summed rows, left unsplit; 3-8 rows separate GEMVs) */
    for (int i = 0; T <= 8 && i < 3; i++) {
        be->i->matmul_n(be, o1, dx, ws, 3, T);
        be->i->matmul(be, o2[i], dx, ws[i], T);
        CHECKF(same_dev(be, o1[i], o2[i], (size_t)(T * rows[i]) * sizeof(float)),
               "matmul_n at %d rows: product %d is not the separate matmul's bits", T, i);
    }
    for (int i = 0; i < 3; i++) {
        be->i->free(be, o1[i]);
        be->i->free(be, o2[i]);
    }
    for (int j = 0; j < 2; j++) {
        be->i->free(be, kp[j]);
        be->i->free(be, vp[j]);
    }
    be->i->free(be, dx);
    be->i->free(be, dinv);
    be->i->free(be, (void *)wq.data);
    be->i->free(be, (void *)wk.data);
    tweight_free(&tq);
    tweight_free(&tk);
    free_weights(be, tw, dev, 3);
    free(x);
    free(inv);
    free(pos);
    free(slots);
    free(h);
}

/* case_qkv_rns at several shapes and row counts, on a backend with K/V in bf16 and one in
 * float32. */
static void test_qkv_rns(struct rng *r)
{
    static const int shapes[][3] = {{4, 2, 64}, {8, 1, 128}, {6, 2, 96}};
    static const int Ts[] = {1, 2, 3, 8, 9, 37, 300};
    for (int f32 = 0; f32 < 2; f32++) {
        struct hy_backend *be = NULL;
        struct hy_err err;
        const struct hy_cuda_opts o = {.kv_f32 = f32};
        CHECKF(hy_cuda_backend_create_opts(&be, 0, &o, &err) == HY_OK, "%s", err.msg);
        if (!be)
            return;
        for (int s = 0; s < 3; s++)
            for (int t = 0; t < 7; t++)
                case_qkv_rns(be, r, Ts[t], shapes[s][0], shapes[s][1], shapes[s][2],
                             (s + t) % 3);
        be->i->destroy(be);
    }
}

/* Batch-invariant mode: matmul_n and matmul_glu are the separate ops, bit for bit. */
static void test_invariant(struct rng *r)
{
    struct hy_backend *be = NULL;
    struct hy_err err;
    CHECKF(hy_cuda_backend_create(&be, 0, &err) == HY_OK, "%s", err.msg);
    if (!be)
        return;
    CHECK(be->i->set_batch_invariant(be, true, &err) == HY_OK);
    struct tweight tw[3];
    struct hy_weight dev[3];
    const int64_t rows[3] = {96, 40, 40}, cols = 264;
    const int T = 37;
    CHECK(make_weights(be, r, tw, dev, rows, 3, cols, true));
    float *x = fmalloc(T * cols);
    rng_fill(r, x, T * cols, 2.0f);
    float *dx = dput(be, x, T * cols), *a[3], *b[3];
    const struct hy_weight *ws[3] = {&dev[0], &dev[1], &dev[2]};
    for (int i = 0; i < 3; i++) {
        a[i] = dnan(be, T * rows[i]);
        b[i] = dnan(be, T * rows[i]);
        be->i->matmul(be, b[i], dx, &dev[i], T);
    }
    be->i->matmul_n(be, a, dx, ws, 3, T);
    for (int i = 0; i < 3; i++) {
        float *ha = fmalloc(T * rows[i]), *hb = fmalloc(T * rows[i]);
        be->i->download(be, ha, a[i], (size_t)(T * rows[i]) * sizeof(float));
        be->i->download(be, hb, b[i], (size_t)(T * rows[i]) * sizeof(float));
        CHECKF(memcmp(ha, hb, (size_t)(T * rows[i]) * sizeof(float)) == 0,
               "batch-invariant matmul_n weight %d: not the separate matmul's bits", i);
        free(ha);
        free(hb);
    }
    float *g = dnan(be, T * rows[1]), *tmp = dnan(be, T * rows[1]), *h1 = fmalloc(T * rows[1]),
          *h2 = fmalloc(T * rows[1]);
    be->i->matmul_glu(be, g, tmp, dx, &dev[1], &dev[2], T);
    be->i->silu_mul(be, b[1], b[1], b[2], T * rows[1]);
    be->i->download(be, h1, g, (size_t)(T * rows[1]) * sizeof(float));
    be->i->download(be, h2, b[1], (size_t)(T * rows[1]) * sizeof(float));
    CHECK(memcmp(h1, h2, (size_t)(T * rows[1]) * sizeof(float)) == 0);
    for (int i = 0; i < 3; i++) {
        be->i->free(be, a[i]);
        be->i->free(be, b[i]);
    }
    be->i->free(be, g);
    be->i->free(be, tmp);
    be->i->free(be, dx);
    free(h1);
    free(h2);
    free(x);
    free_weights(be, tw, dev, 3);
    be->i->destroy(be);
}

int main(void)
{
    if (!hy_cuda_available()) {
        fprintf(stderr, "no CUDA device: skipping\n");
        return 77;
    }
    struct rng r = {0x9e3779b97f4a7c15ull};
    struct hy_backend *be = NULL;
    struct hy_err err;
    CHECKF(hy_cuda_backend_create(&be, 0, &err) == HY_OK, "%s", err.msg);
    if (!be)
        return test_result();
    static const int64_t qkv[][3] = {{256, 64, 64}, {96, 40, 40}, {200, 17, 33}};
    static const int64_t colss[] = {64, 264, 1000};
    static const int Ts[] = {1, 8, 9, 37, 300};
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 5; t++) {
            case_n(be, &r, qkv[s], 3, colss[s], Ts[t], true);
            case_n(be, &r, qkv[s], 2, colss[s], Ts[t], true);
        }
    uint64_t used0 = 0, used1 = 0, total = 0; /* after the first products: cuBLAS is set up */
    be->i->mem_info(be, &used0, &total);
    case_n(be, &r, qkv[1], 3, 264, 37, false); /* apart: separate products */
    case_glu(be, &r, 72, 264, 37, false);
    for (int t = 0; t < 5; t++)
        case_glu(be, &r, t % 2 ? 72 : 45, 200, Ts[t], true);
    /* 16384 floats a row: 1024 rows a chunk of the 16M-float scratch, then a 6-row tail */
    const int64_t big[2] = {8192, 8192};
    case_n(be, &r, big, 2, 64, 1030, true);
    case_glu(be, &r, 8192, 64, 1030, true);
    be->i->mem_info(be, &used1, &total);
    CHECKF(used1 == used0, "device memory in use %llu before, %llu after freeing the fused weights",
           (unsigned long long)used0, (unsigned long long)used1);
    /* norms into their products: the warp kernel (256, 264: a tail of lanes), the block
     * kernel (1000, 4096), the strided one (1002: no bf16 output); the GEMV rows (8), past
     * them, two blocks of the norm's 8 warps (37), many rows (300) */
    static const int64_t ds[] = {256, 264, 1000, 1002, 4096};
    static const int nTs[] = {8, 9, 37, 300};
    for (int i = 0; i < 5; i++)
        for (int t = 0; t < 4; t++)
            case_norm(be, &r, ds[i], nTs[t], (i + t) % 2 == 0, t == 2);
    case_norm(be, &r, 4096, 64, false, false);
    case_norm(be, &r, 4096, 64, true, true);
    /* up to 8 rows the norm also quantizes its output for the Q8_0 product (int8, the bits
     * of the product's own quantization): the warp and the block kernel, 1 and 3 rows */
    for (int t = 0; t < 2; t++) {
        case_norm(be, &r, 256, t ? 3 : 1, t == 0, false);
        case_norm(be, &r, 4096, t ? 3 : 1, t == 1, false);
    }
    be->i->destroy(be);
    test_small_scratch(&r);
    test_qkv_rns(&r);
    test_invariant(&r);
    fprintf(stderr, "worst error/bound: matmul_n %.3g, matmul_glu %.3g\n", worst_n, worst_glu);
    return test_result();
}
