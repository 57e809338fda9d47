/* ops_test.c: the reference ops (hy_ref_*) against independent double-precision
 * computations written here, on seeded random non-zero data and misaligned weights of
 * every dtype. The fast backend is checked against the reference in fast_ops_test.c.
 * Tolerances are stated per op, in units of U32 = 2^-24 (float32 unit roundoff). */
#include "ops_test_util.h"

static const enum hy_dtype all_dtypes[] = {HY_DTYPE_F32, HY_DTYPE_F16, HY_DTYPE_BF16};

/* embed converts stored elements to float: exact. */
static void test_embed(struct rng *r)
{
    for (int d = 0; d < 3; d++) {
        struct tweight tab;
        tweight_make(&tab, r, all_dtypes[d], 11, 37, 3.0f);
        int32_t ids[] = {10, 0, 3, 3, 7};
        float *out = fmalloc(5 * 37);
        hy_ref_embed(out, &tab.w, ids, 5);
        bool ok = true;
        for (int t = 0; t < 5; t++)
            ok &= memcmp(out + t * 37, tab.val + ids[t] * 37, 37 * sizeof(float)) == 0;
        CHECKF(ok, "embed %s", hy_dtype_name(all_dtypes[d]));
        free(out);
        tweight_free(&tab);
    }
}

/* rmsnorm: the reference forms 1/rms in double, rounds it, then two float multiplies:
 * at most ~4 roundings, so 8*U32 relative to the exact value. Also checked in place. */
static void test_rmsnorm(struct rng *r)
{
    static const int64_t shapes[][2] = {{1, 1}, {3, 4096}, {7, 128}, {5, 1001}};
    for (int d = 0; d < 3; d++) {
        for (int s = 0; s < 4; s++) {
            int64_t rows = shapes[s][0], n = shapes[s][1];
            struct tweight w;
            tweight_make(&w, r, all_dtypes[d], 1, n, 2.0f);
            float *x = fmalloc(rows * n), *out = fmalloc(rows * n);
            double *want = dmalloc(rows * n), *bound = dmalloc(rows * n);
            rng_fill(r, x, rows * n, 5.0f);
            const float eps = 1e-5f;
            for (int64_t i = 0; i < rows; i++) {
                double ss = 0;
                for (int64_t c = 0; c < n; c++)
                    ss += (double)x[i * n + c] * x[i * n + c];
                double inv = 1.0 / sqrt(ss / n + eps);
                for (int64_t c = 0; c < n; c++) {
                    want[i * n + c] = (double)w.val[c] * x[i * n + c] * inv;
                    bound[i * n + c] = 8 * U32 * fabs(want[i * n + c]);
                }
            }
            hy_ref_rmsnorm(out, x, &w.w, rows, n, eps);
            CHECKF(close_all("rmsnorm", out, want, bound, rows * n, false, NULL), "rmsnorm %s %lldx%lld",
                   hy_dtype_name(all_dtypes[d]), (long long)rows, (long long)n);
            hy_ref_rmsnorm(x, x, &w.w, rows, n, eps); /* out == x */
            CHECK(memcmp(x, out, (size_t)(rows * n) * sizeof(float)) == 0);
            free(x);
            free(out);
            free(want);
            free(bound);
            tweight_free(&w);
        }
    }
}

/* matmul: the reference sums in double and rounds once: |err| <= U32*|y| + tiny; we allow
 * 2*U32 * sum|x_c w_c|. Returns the worst error/bound seen. */
static double check_matmul(struct rng *r, enum hy_dtype dt, int64_t rows, int64_t cols, int T)
{
    struct tweight w;
    tweight_make(&w, r, dt, rows, cols, 1.0f);
    float *x = fmalloc(T * cols), *out = fmalloc(T * rows);
    double *want = dmalloc(T * rows), *bound = dmalloc(T * rows);
    rng_fill(r, x, T * cols, 2.0f);
    for (int t = 0; t < T; t++) {
        for (int64_t o = 0; o < rows; o++) {
            double s = 0, a = 0;
            for (int64_t c = 0; c < cols; c++) {
                double p = (double)x[t * cols + c] * w.val[o * cols + c];
                s += p;
                a += fabs(p);
            }
            want[t * rows + o] = s;
            bound[t * rows + o] = 2 * U32 * a;
        }
    }
    hy_ref_matmul(out, x, &w.w, T);
    double worst = 0;
    CHECKF(close_all("matmul", out, want, bound, T * rows, false, &worst), "matmul %s %lldx%lld T=%d",
           hy_dtype_name(dt), (long long)rows, (long long)cols, T);
    free(x);
    free(out);
    free(want);
    free(bound);
    tweight_free(&w);
    return worst;
}

static void test_matmul(struct rng *r)
{
    for (int d = 0; d < 3; d++) {
        check_matmul(r, all_dtypes[d], 1, 1, 1);
        check_matmul(r, all_dtypes[d], 13, 45, 3);
        check_matmul(r, all_dtypes[d], 64, 512, 1);
        check_matmul(r, all_dtypes[d], 7, 4096, 2);
    }
    /* Q8_0: the reference dequantizes on the fly (the same d*q values as w.val) */
    check_matmul(r, HY_DTYPE_Q8_0, 1, 32, 1);
    check_matmul(r, HY_DTYPE_Q8_0, 13, 96, 3);
    check_matmul(r, HY_DTYPE_Q8_0, 7, 4096, 2);
}

/* Hunyuan's inv_freq: base^(-2i/hd), base = 10000 * 1000^(hd/(hd-2)) (NTK-alpha 1000). */
static void make_inv_freq(float *inv, int hd, double base)
{
    for (int i = 0; i < hd / 2; i++)
        inv[i] = (float)pow(base, -2.0 * i / hd);
}

/* rope: θ is formed as the float32 product (float)pos * inv_freq (the spec, as in
 * transformers); the rest is done here in double. cosf/sinf are within an ulp and each
 * output has two products and a sum: 6*U32 * (|a| + |b|). */
static void rope_expect(double *want, double *bound, const float *x, const int32_t *pos, int T,
                        int nh, int hd, const float *inv, bool float_theta)
{
    int half = hd / 2;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < nh; h++)
            for (int i = 0; i < half; i++) {
                int64_t o = ((int64_t)t * nh + h) * hd;
                double th = float_theta ? (double)((float)pos[t] * inv[i]) : (double)pos[t] * inv[i];
                double a = x[o + i], b = x[o + i + half];
                want[o + i] = a * cos(th) - b * sin(th);
                want[o + i + half] = b * cos(th) + a * sin(th);
                bound[o + i] = bound[o + i + half] = 6 * U32 * (fabs(a) + fabs(b));
            }
}

static void test_rope(struct rng *r)
{
    static const int32_t pos[] = {0, 1, 2, 77, 1000, 4095, 32767, 100003, 262143};
    const int T = 9, nh = 3;
    for (int hd = 64; hd <= 128; hd += 64) {
        float inv[64];
        make_inv_freq(inv, hd, hd == 128 ? 10000.0 * pow(1000.0, 128.0 / 126.0) : 10000.0);
        int64_t n = (int64_t)T * nh * hd;
        float *x = fmalloc(n), *y = fmalloc(n);
        double *want = dmalloc(n), *bound = dmalloc(n);
        rng_fill(r, x, n, 3.0f);
        memcpy(y, x, (size_t)n * sizeof *x);
        hy_ref_rope(y, pos, T, nh, hd, inv);
        rope_expect(want, bound, x, pos, T, nh, hd, inv, true);
        CHECKF(close_all("rope", y, want, bound, n, false, NULL), "rope hd=%d", hd);
        /* The float32 θ matters at large positions: with θ in double the result differs by
         * far more than the bound, so this test pins the rounding choice down. */
        rope_expect(want, bound, x, pos, T, nh, hd, inv, false);
        CHECKF(!close_all("rope", y, want, bound, n, true, NULL), "rope hd=%d: double θ", hd);
        free(x);
        free(y);
        free(want);
        free(bound);
    }
}

/* Straightforward attention: full score vector, softmax, weighted sum, all in double. */
static void attn_expect(double *want, const float *q, const float *kc, const float *vc, int pos0,
                        int T, int nh, int nkv, int hd, float scale)
{
    int n_max = pos0 + T;
    double *sc = dmalloc(n_max);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < nh; h++) {
            const float *qh = q + ((int64_t)t * nh + h) * hd;
            int kvh = h / (nh / nkv), n = pos0 + t + 1;
            double m = -INFINITY, z = 0;
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int i = 0; i < hd; i++)
                    s += (double)qh[i] * kc[((int64_t)j * nkv + kvh) * hd + i];
                sc[j] = s * scale;
                m = fmax(m, sc[j]);
            }
            for (int j = 0; j < n; j++)
                z += (sc[j] = exp(sc[j] - m));
            for (int i = 0; i < hd; i++) {
                double o = 0;
                for (int j = 0; j < n; j++)
                    o += sc[j] / z * vc[((int64_t)j * nkv + kvh) * hd + i];
                want[((int64_t)t * nh + h) * hd + i] = o;
            }
        }
    free(sc);
}

/* KV rows past the last valid one hold NaN: reading them would poison the output. */
static void attn_data(struct rng *r, float *q, float *kc, float *vc, int pos0, int T, int nh,
                      int nkv, int hd, int n_ctx)
{
    rng_fill(r, q, (int64_t)T * nh * hd, 2.0f);
    int64_t valid = (int64_t)(pos0 + T) * nkv * hd, all = (int64_t)n_ctx * nkv * hd;
    rng_fill(r, kc, valid, 2.0f);
    rng_fill(r, vc, valid, 3.0f);
    for (int64_t i = valid; i < all; i++)
        kc[i] = vc[i] = NAN;
}

/* The reference works in double and rounds once, so 4*U32 * max|v| covers it (the output
 * is a convex combination of V rows). */
static void check_attention(struct rng *r, int nh, int nkv, int hd, int pos0, int T)
{
    int n_ctx = pos0 + T + 3;
    int64_t nq = (int64_t)T * nh * hd;
    float *q = fmalloc(nq), *out = fmalloc(nq);
    float *kc = fmalloc((int64_t)n_ctx * nkv * hd), *vc = fmalloc((int64_t)n_ctx * nkv * hd);
    double *want = dmalloc(nq), *bound = dmalloc(nq);
    attn_data(r, q, kc, vc, pos0, T, nh, nkv, hd, n_ctx);
    float scale = 1.0f / sqrtf((float)hd);
    attn_expect(want, q, kc, vc, pos0, T, nh, nkv, hd, scale);
    for (int64_t i = 0; i < nq; i++)
        bound[i] = 4 * U32 * 3.0;
    /* through a shuffled block table (block size 16, and 5 to cross blocks mid-run) */
    for (int bs = 5; bs <= 16; bs += 11) {
        float *kp, *vp;
        int32_t blocks[256];
        paged_from_contig(r, kc, vc, pos0 + T, (int64_t)nkv * hd, bs, &kp, &vp, blocks);
        struct hy_attn_seq sq = {0, T, pos0, blocks};
        hy_ref_attention(out, q, kp, vp, bs, &sq, 1, nh, nkv, hd, scale);
        CHECKF(close_all("attention", out, want, bound, nq, false, NULL),
               "attention nh=%d nkv=%d hd=%d pos0=%d T=%d bs=%d", nh, nkv, hd, pos0, T, bs);
        free(kp);
        free(vp);
    }
    free(q);
    free(out);
    free(kc);
    free(vc);
    free(want);
    free(bound);
}

static void test_attention(struct rng *r)
{
    static const int heads[][3] = {{4, 4, 64}, {4, 2, 64}, {8, 2, 128}, {4, 1, 128}, {2, 1, 5}};
    static const int steps[][2] = {{0, 1}, {0, 5}, {9, 1}, {13, 6}, {40, 17}};
    for (int h = 0; h < 5; h++)
        for (int s = 0; s < 5; s++)
            check_attention(r, heads[h][0], heads[h][1], heads[h][2], steps[s][0], steps[s][1]);
}

/* silu_mul: expf within an ulp, then an add, a divide and a multiply: 6*U32 relative;
 * an absolute floor for huge negative gates, where the float result underflows to 0. */
static void test_silu_mul(struct rng *r)
{
    const int64_t n = 1000;
    float *g = fmalloc(n), *u = fmalloc(n), *out = fmalloc(n);
    double *want = dmalloc(n), *bound = dmalloc(n);
    rng_fill(r, g, n, 8.0f);
    rng_fill(r, u, n, 4.0f);
    g[0] = -100.0f, g[1] = 100.0f, g[2] = -30.0f, g[3] = 1e-6f;
    for (int64_t i = 0; i < n; i++) {
        want[i] = g[i] / (1.0 + exp(-(double)g[i])) * u[i];
        bound[i] = 6 * U32 * fabs(want[i]) + 1e-37;
    }
    hy_ref_silu_mul(out, g, u, n);
    CHECK(close_all("silu_mul", out, want, bound, n, false, NULL));
    hy_ref_silu_mul(g, g, u, n); /* out == gate */
    CHECK(memcmp(g, out, (size_t)n * sizeof(float)) == 0);
    free(g);
    free(u);
    free(out);
    free(want);
    free(bound);
}

/* add: one correctly rounded float addition: exact against the double sum rounded. */
static void test_add(struct rng *r)
{
    const int64_t n = 777;
    float *x = fmalloc(n), *y = fmalloc(n);
    double *want = dmalloc(n);
    rng_fill(r, x, n, 10.0f);
    rng_fill(r, y, n, 1e-3f);
    for (int64_t i = 0; i < n; i++)
        want[i] = (double)(float)((double)x[i] + y[i]);
    hy_ref_add(x, y, n);
    bool ok = true;
    for (int64_t i = 0; i < n; i++)
        ok &= x[i] == want[i];
    CHECK(ok);
    free(x);
    free(y);
    free(want);
}

/* The comparisons can fail: a reading error of one bf16 ulp in one weight is caught. */
static void test_checks_can_fail(struct rng *r)
{
    struct tweight w;
    tweight_make(&w, r, HY_DTYPE_BF16, 4, 45, 1.0f);
    float x[45], out[4];
    double want[4], bound[4];
    rng_fill(r, x, 45, 2.0f);
    hy_ref_matmul(out, x, &w.w, 1);
    for (int o = 0; o < 4; o++) {
        double s = 0, a = 0;
        for (int c = 0; c < 45; c++) {
            /* the "wrong" expectation: weight 7 of row 2 one bf16 ulp bigger */
            double wv = w.val[o * 45 + c] * (o == 2 && c == 7 ? 1.0 + 1.0 / 128 : 1.0);
            s += x[c] * wv;
            a += fabs(x[c] * wv);
        }
        want[o] = s;
        bound[o] = 2 * U32 * a;
    }
    CHECK(!close_all("matmul", out, want, bound, 4, true, NULL));
    tweight_free(&w);
}

int main(void)
{
    struct rng r = {0x9e3779b97f4a7c15ull};
    test_embed(&r);
    test_rmsnorm(&r);
    test_matmul(&r);
    test_rope(&r);
    test_attention(&r);
    test_silu_mul(&r);
    test_add(&r);
    test_checks_can_fail(&r);
    return test_result();
}
