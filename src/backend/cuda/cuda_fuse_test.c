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
 * matmul calls, and freeing every member returns the device memory. Exits 77 without a
 * CUDA device. */
#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_test_util.h"

static double worst_n, worst_glu;

static float *dput(struct hy_backend *be, const float *h, int64_t n)
{
    float *d = be->i->alloc(be, (size_t)n * sizeof(float));
    HY_ASSERT(d);
    be->i->upload(be, d, h, (size_t)n * sizeof(float));
    return d;
}

static float *dnan(struct hy_backend *be, int64_t n)
{
    float *h = fmalloc(n);
    for (int64_t i = 0; i < n; i++)
        h[i] = NAN;
    float *d = dput(be, h, n);
    free(h);
    return d;
}

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
    be->i->destroy(be);
    test_invariant(&r);
    fprintf(stderr, "worst error/bound: matmul_n %.3g, matmul_glu %.3g\n", worst_n, worst_glu);
    return test_result();
}
