/* fast_ops_test.c: the fast CPU backend against the reference ops, for every SIMD level
 * this machine runs (scalar, avx2, avx512), with 1, 2 and 3 threads, every weight dtype,
 * and odd shapes: cols not a multiple of 8/16/32, rows not a multiple of the thread count,
 * T = 1, 2, 3, 5, 17, chunked prefill (pos0 > 0, T > 1) and decode. Weights sit at odd
 * addresses. Each tolerance is derived in a comment; the worst error/bound ratio seen per
 * op is printed so that a creeping loss of accuracy is visible before it fails. */
#include "backend/cpu/cpu_impl.h"
#include "ops_test_util.h"

static const enum hy_dtype all_dtypes[] = {HY_DTYPE_F32, HY_DTYPE_F16, HY_DTYPE_BF16};

static double worst_matmul, worst_attn;

/* Set while Q8_0 runs on a kernel set with int8 activations (AVX2, AVX-512: activations
 * quantized per 32 values, d_b = max|x|/127, each within d_b/2 of its int8 value): the
 * bound then adds sum over blocks of d_b/2 * sum|w| (the activation rounding) and the int8
 * kernels' float steps, (cols/32 + 40)*U32 * sum|x w| with 1% for |x^| > |x|. */
static bool int8_acts;

/* matmul: the fast kernels multiply in float32 (or fuse the multiply into the add) and
 * sum the cols products in some order in float32: |err| <= cols*U32 * sum|x_c w_c| (the
 * standard bound for any summation order, to first order). The reference is within
 * 2*U32 * sum|x_c w_c| of exact. Bound: (cols + 4)*U32 * sum|x_c w_c|. */
static bool matmul_case(struct hy_backend *be, struct rng *r, enum hy_dtype dt, int64_t rows,
                        int64_t cols, int T, int64_t bump)
{
    struct tweight w;
    tweight_make(&w, r, dt, rows, cols, 1.0f);
    float *x = fmalloc(T * cols), *got = fmalloc(T * rows), *ref = fmalloc(T * rows);
    double *want = dmalloc(T * rows), *bound = dmalloc(T * rows);
    rng_fill(r, x, T * cols, 2.0f);
    hy_ref_matmul(ref, x, &w.w, T);
    for (int t = 0; t < T; t++)
        for (int64_t o = 0; o < rows; o++) {
            double a = 0;
            for (int64_t c = 0; c < cols; c++)
                a += fabs((double)x[t * cols + c] * w.val[o * cols + c]);
            want[t * rows + o] = ref[t * rows + o];
            bound[t * rows + o] = (double)(cols + 4) * U32 * a;
            for (int64_t b0 = 0; int8_acts && b0 < cols; b0 += 32) {
                double amax = 0, sw = 0;
                for (int64_t c = b0; c < b0 + 32; c++) {
                    amax = fmax(amax, fabs(x[t * cols + c]));
                    sw += fabs(w.val[o * cols + c]);
                }
                bound[t * rows + o] += amax / 127 * 0.5 * (1 + 1e-6) * sw;
            }
            if (int8_acts)
                bound[t * rows + o] += (double)(cols / 32 + 40) * U32 * a * 1.01;
        }
    if (bump >= 0) { /* make the fast side see row `bump`'s largest term 1/64 off */
        int64_t cm = 0;
        for (int64_t c = 1; c < cols; c++)
            if (fabs(x[c] * w.val[bump * cols + c]) > fabs(x[cm] * w.val[bump * cols + cm]))
                cm = c;
        tweight_set(&w, bump * cols + cm, w.val[bump * cols + cm] * (1.0f + 1.0f / 64));
    }
    be->i->matmul(be, got, x, &w.w, T);
    bool ok = close_all("matmul", got, want, bound, T * rows, bump >= 0,
                        bump >= 0 ? NULL : &worst_matmul);
    free(x);
    free(got);
    free(ref);
    free(want);
    free(bound);
    tweight_free(&w);
    return ok;
}

static void test_matmul(struct hy_backend *be, struct rng *r)
{
    static const int64_t shapes[][3] = {
        {1, 1, 1},    {5, 3, 2},    {37, 45, 3},   {100, 67, 5},  {64, 128, 17}, {130, 1000, 4},
        {33, 257, 1}, {8, 16, 1},   {300, 96, 17}, {200, 33, 1},  {4, 4100, 2},  {41, 31, 5},
        {97, 15, 17}, {250, 512, 1}, {24, 200, 2}, {37, 2100, 5}, {12, 1030, 4}, {70, 2048, 8},
    };
    for (int d = 0; d < 3; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            CHECKF(matmul_case(be, r, all_dtypes[d], shapes[s][0], shapes[s][1], (int)shapes[s][2],
                               -1),
                   "%s matmul %s rows=%lld cols=%lld T=%d", hy_cpu_backend_isa(be),
                   hy_dtype_name(all_dtypes[d]), (long long)shapes[s][0], (long long)shapes[s][1],
                   (int)shapes[s][2]);
    /* Q8_0 (cols a multiple of 32; odd row counts; decode, tails of T % 4, 4x4 tiles and the
     * 1024-column chunks): each weight element is d*q, exact in float32 (11 + 8 significant
     * bits) and the same value the reference reads, so the bound above holds unchanged. */
    static const int64_t q8_shapes[][3] = {
        {1, 32, 1},   {5, 64, 2},    {37, 96, 3},  {101, 320, 5}, {33, 2048, 17},
        {7, 1056, 4}, {250, 512, 1}, {41, 4128, 8}, {3, 32, 6},    {130, 1024, 9},
    };
    static struct hy_cpu_kernels ks;
    const char *isa = hy_cpu_backend_isa(be);
    if (!strcmp(isa, "avx512"))
        hy_cpu_kernels_avx512(&ks);
    else if (!strcmp(isa, "avx2"))
        hy_cpu_kernels_avx2(&ks);
    else
        hy_cpu_kernels_scalar(&ks);
    int8_acts = ks.mm[HY_DTYPE_Q8_0].q_dot != NULL;
    for (size_t s = 0; s < sizeof q8_shapes / sizeof q8_shapes[0]; s++)
        CHECKF(matmul_case(be, r, HY_DTYPE_Q8_0, q8_shapes[s][0], q8_shapes[s][1],
                           (int)q8_shapes[s][2], -1),
               "%s matmul Q8_0 rows=%lld cols=%lld T=%d", hy_cpu_backend_isa(be),
               (long long)q8_shapes[s][0], (long long)q8_shapes[s][1], (int)q8_shapes[s][2]);
    int8_acts = false;
    /* The comparison can fail: one weight 1/64 off (two bf16 ulps) in one row is caught.
     * The row's largest term is >= sum/cols, so the change is >= sum/(64*cols), above the
     * bound (cols + 4)*U32*sum whenever cols < ~500. */
    CHECK(!matmul_case(be, r, HY_DTYPE_BF16, 37, 45, 3, 36));
    CHECK(!matmul_case(be, r, HY_DTYPE_F16, 37, 300, 1, 5));
}

/* Bound for one output row of attention against a reference that is exact to 4*U32:
 * each float32 score is off by e <= (hd + 2)*U32 * scale * sum|q_i k_i|; that moves every
 * softmax weight by a relative 2e (plus ~2*U32 for expf and the subtraction), which moves
 * the output, a convex combination of V rows, by at most 2*(2e + 2*U32)*max|v|; the
 * float32 running sums over n keys add (2n + 8)*U32*max|v|. */
static double attn_bound(const float *qh, const float *kc, int64_t stride, int n, int hd,
                         float scale, double vmax)
{
    double e = 0;
    for (int j = 0; j < n; j++) {
        double a = 0;
        for (int i = 0; i < hd; i++)
            a += fabs((double)qh[i] * kc[j * stride + i]);
        e = fmax(e, (hd + 2) * U32 * scale * a);
    }
    return vmax * (4 * e + (2.0 * n + 16) * U32);
}

/* Runs fast attention at pos0 + shift against the reference at pos0 (shift != 0 must fail:
 * a query that sees one key too many or too few). */
static bool attn_case(struct hy_backend *be, struct rng *r, int nh, int nkv, int hd, int pos0,
                      int T, int shift)
{
    int n_ctx = pos0 + T + 2, lo = pos0 + (shift < 0 ? shift : 0);
    int64_t nq = (int64_t)T * nh * hd, nkvf = (int64_t)n_ctx * nkv * hd;
    float *q = fmalloc(nq), *got = fmalloc(nq), *ref = fmalloc(nq);
    float *kc = fmalloc(nkvf), *vc = fmalloc(nkvf);
    double *want = dmalloc(nq), *bound = dmalloc(nq);
    rng_fill(r, q, nq, 3.0f);
    rng_fill(r, kc, nkvf, 2.0f);
    rng_fill(r, vc, nkvf, 3.0f);
    float scale = 1.0f / sqrtf((float)hd);
    float *kp, *vp;
    int32_t blocks[256];
    int bs = 16;
    paged_from_contig(r, kc, vc, n_ctx, (int64_t)nkv * hd, bs, &kp, &vp, blocks);
    struct hy_attn_seq sr = {0, T, pos0, blocks}, sg = {0, T, pos0 + shift, blocks};
    hy_ref_attention(ref, q, kp, vp, bs, &sr, 1, nh, nkv, hd, scale);
    be->i->attention(be, got, q, kp, vp, bs, &sg, 1, nh, nkv, hd, scale);
    free(kp);
    free(vp);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < nh; h++) {
            int64_t o = ((int64_t)t * nh + h) * hd;
            double b = attn_bound(q + o, kc + (int64_t)(h / (nh / nkv)) * hd, (int64_t)nkv * hd,
                                  lo + t + 1, hd, scale, 3.0);
            for (int i = 0; i < hd; i++) {
                want[o + i] = ref[o + i];
                bound[o + i] = b;
            }
        }
    bool ok = close_all("attention", got, want, bound, nq, shift != 0,
                        shift ? NULL : &worst_attn);
    free(q);
    free(got);
    free(ref);
    free(kc);
    free(vc);
    free(want);
    free(bound);
    return ok;
}

/* Three sequences in one call (prefill, decode, chunked prefill) give bit for bit what
 * each gives alone: batching must not change any row. */
static void test_attention_batch(struct hy_backend *be, struct rng *r)
{
    const int nh = 4, nkv = 2, hd = 64, bs = 16, n_ctx = 80;
    const int64_t kvd = (int64_t)nkv * hd;
    const struct {
        int pos0, T;
    } sp[3] = {{0, 7}, {41, 1}, {20, 9}};
    float *kc = fmalloc(n_ctx * kvd), *vc = fmalloc(n_ctx * kvd), *kp, *vp;
    rng_fill(r, kc, n_ctx * kvd, 2.0f);
    rng_fill(r, vc, n_ctx * kvd, 3.0f);
    int32_t blocks[256];
    paged_from_contig(r, kc, vc, n_ctx, kvd, bs, &kp, &vp, blocks);
    int rows = 17;
    int64_t nq = (int64_t)rows * nh * hd;
    float *q = fmalloc(nq), *all = fmalloc(nq), *one = fmalloc(nq);
    rng_fill(r, q, nq, 3.0f);
    struct hy_attn_seq seqs[3];
    for (int i = 0, row = 0; i < 3; row += sp[i].T, i++)
        seqs[i] = (struct hy_attn_seq){row, sp[i].T, sp[i].pos0, blocks};
    float scale = 0.125f;
    be->i->attention(be, all, q, kp, vp, bs, seqs, 3, nh, nkv, hd, scale);
    for (int i = 0; i < 3; i++) {
        int64_t off = (int64_t)seqs[i].row * nh * hd;
        struct hy_attn_seq alone = {0, seqs[i].n_tokens, seqs[i].pos0, blocks};
        be->i->attention(be, one + off, q + off, kp, vp, bs, &alone, 1, nh, nkv, hd, scale);
    }
    CHECKF(memcmp(all, one, (size_t)nq * sizeof(float)) == 0, "%s: batched attention differs",
           hy_cpu_backend_isa(be));
    free(kc);
    free(vc);
    free(kp);
    free(vp);
    free(q);
    free(all);
    free(one);
}

static void test_attention(struct hy_backend *be, struct rng *r)
{
    static const int heads[][3] = {{4, 4, 64}, {4, 2, 64}, {8, 2, 128}, {4, 1, 128}, {3, 1, 20}};
    static const int steps[][2] = {{0, 1}, {0, 2}, {0, 17}, {9, 1}, {13, 3}, {100, 5}, {63, 1},
                                   {64, 1}, {127, 2}, {200, 1}};
    for (int h = 0; h < 5; h++)
        for (int s = 0; s < 10; s++)
            CHECKF(attn_case(be, r, heads[h][0], heads[h][1], heads[h][2], steps[s][0],
                             steps[s][1], 0),
                   "%s attention nh=%d nkv=%d hd=%d pos0=%d T=%d", hy_cpu_backend_isa(be),
                   heads[h][0], heads[h][1], heads[h][2], steps[s][0], steps[s][1]);
    CHECK(!attn_case(be, r, 4, 2, 64, 30, 3, 1));
    CHECK(!attn_case(be, r, 4, 2, 64, 30, 3, -1));
    test_attention_batch(be, r);
}

/* embed, rmsnorm, silu_mul and add run the reference loops on row slices: bit-identical.
 * rope repeats the reference arithmetic with cos/sin hoisted out of the head loop;
 * identical too, but 2*U32*(|a|+|b|) is allowed in case a compiler contracts a*c - b*s
 * into an fma in one copy and not the other. */
static void test_rope(struct hy_backend *be, struct rng *r)
{
    static const int32_t pos[] = {5, 0, 1, 2, 300, 4096, 32767, 100003, 262143, 7, 8, 9, 10, 11,
                                  12, 13, 14};
    static const int shapes[][3] = {{1, 32, 128}, {17, 8, 128}, {5, 3, 64}, {17, 40, 128}};
    for (int s = 0; s < 4; s++) {
        int T = shapes[s][0], nh = shapes[s][1], hd = shapes[s][2];
        int64_t n = (int64_t)T * nh * hd;
        float inv[64], *a = fmalloc(n), *b = fmalloc(n);
        for (int i = 0; i < hd / 2; i++)
            inv[i] = (float)pow(11158839.925, -2.0 * i / hd);
        rng_fill(r, a, n, 3.0f);
        memcpy(b, a, (size_t)n * sizeof *a);
        hy_ref_rope(a, pos, T, nh, hd, inv);
        be->i->rope(be, b, pos, T, nh, hd, inv);
        CHECKF(close_f("rope", b, a, n, 2 * U32, 2 * U32 * 6.0), "%s rope T=%d nh=%d hd=%d",
               hy_cpu_backend_isa(be), T, nh, hd);
        free(a);
        free(b);
    }
}

static void test_rmsnorm(struct hy_backend *be, struct rng *r)
{
    static const int64_t shapes[][2] = {{1, 4096}, {3, 4096}, {200, 64}, {7, 1000}, {1, 5}};
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 5; s++) {
            int64_t rows = shapes[s][0], n = shapes[s][1];
            struct tweight w;
            tweight_make(&w, r, all_dtypes[d], 1, n, 2.0f);
            float *x = fmalloc(rows * n), *a = fmalloc(rows * n), *b = fmalloc(rows * n);
            rng_fill(r, x, rows * n, 4.0f);
            hy_ref_rmsnorm(a, x, &w.w, rows, n, 1e-5f);
            memcpy(b, x, (size_t)(rows * n) * sizeof *b);
            be->i->rmsnorm(be, b, b, &w.w, rows, n, 1e-5f); /* in place */
            CHECKF(close_f("rmsnorm", b, a, rows * n, 0, 0), "%s rmsnorm %s %lldx%lld",
                   hy_cpu_backend_isa(be), hy_dtype_name(all_dtypes[d]), (long long)rows,
                   (long long)n);
            free(x);
            free(a);
            free(b);
            tweight_free(&w);
        }
}

static void test_embed(struct hy_backend *be, struct rng *r)
{
    static const int32_t ids[] = {3, 0, 49, 3, 17, 8, 8};
    for (int d = 0; d < 3; d++)
        for (int64_t cols = 33; cols <= 4096; cols = cols * 124 + 4) {
            struct tweight tab;
            tweight_make(&tab, r, all_dtypes[d], 50, cols, 1.0f);
            float *a = fmalloc(7 * cols), *b = fmalloc(7 * cols);
            hy_ref_embed(a, &tab.w, ids, 7);
            be->i->embed(be, b, &tab.w, ids, 7);
            CHECKF(close_f("embed", b, a, 7 * cols, 0, 0), "%s embed", hy_cpu_backend_isa(be));
            free(a);
            free(b);
            tweight_free(&tab);
        }
}

static void test_elementwise(struct hy_backend *be, struct rng *r)
{
    static const int64_t sizes[] = {1, 17, 10001, 20000};
    for (int s = 0; s < 4; s++) {
        int64_t n = sizes[s];
        float *g = fmalloc(n), *u = fmalloc(n), *a = fmalloc(n), *b = fmalloc(n);
        rng_fill(r, g, n, 10.0f);
        rng_fill(r, u, n, 3.0f);
        hy_ref_silu_mul(a, g, u, n);
        be->i->silu_mul(be, g, g, u, n); /* in place: out == gate */
        CHECKF(close_f("silu_mul", g, a, n, 0, 0), "%s silu_mul n=%lld", hy_cpu_backend_isa(be),
               (long long)n);
        memcpy(b, a, (size_t)n * sizeof *a);
        hy_ref_add(a, u, n);
        be->i->add(be, b, u, n);
        CHECKF(close_f("add", b, a, n, 0, 0), "%s add n=%lld", hy_cpu_backend_isa(be),
               (long long)n);
        free(g);
        free(u);
        free(a);
        free(b);
    }
}

/* alloc is 64-byte aligned for any size; upload/download copy. */
static void test_memory(struct hy_backend *be)
{
    check_backend_memory(be, 64);
}

/* Results are the same bit for bit for 1, 2 and 3 threads (cpu.h promises it; the model's
 * thread-count determinism rests on it). */
static void test_thread_invariance(struct hy_backend *be[3], struct rng *r)
{
    static const int64_t shapes[][3] = {{37, 45, 5},  {130, 1000, 17}, {70, 2048, 8},
                                        {33, 257, 1}, {101, 64, 3},    {203, 40, 4}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t rows = shapes[s][0], cols = shapes[s][1];
        int T = (int)shapes[s][2];
        struct tweight w;
        tweight_make(&w, r, HY_DTYPE_BF16, rows, cols, 1.0f);
        float *x = fmalloc(T * cols), *out[3];
        rng_fill(r, x, T * cols, 2.0f);
        for (int n = 0; n < 3; n++) {
            out[n] = fmalloc(T * rows);
            be[n]->i->matmul(be[n], out[n], x, &w.w, T);
        }
        for (int n = 1; n < 3; n++)
            CHECKF(!memcmp(out[0], out[n], (size_t)(T * rows) * sizeof(float)),
                   "%s matmul %lldx%lld T=%d: %d threads differ from 1", hy_cpu_backend_isa(be[0]),
                   (long long)rows, (long long)cols, T, n + 1);
        for (int n = 0; n < 3; n++)
            free(out[n]);
        free(x);
        tweight_free(&w);
    }
}

static void test_backend(struct hy_backend *be, struct rng *r)
{
    fprintf(stderr, "backend %s: %s, %d threads\n", be->i->name, hy_cpu_backend_isa(be),
            hy_cpu_backend_threads(be));
    test_memory(be);
    test_matmul(be, r);
    test_attention(be, r);
    test_rope(be, r);
    test_rmsnorm(be, r);
    test_embed(be, r);
    test_elementwise(be, r);
}

int main(void)
{
    struct rng r = {0x2545f4914f6cdd1dull};
    static const enum hy_cpu_isa isas[] = {HY_CPU_ISA_SCALAR, HY_CPU_ISA_AVX2, HY_CPU_ISA_AVX512};
    for (int i = 0; i < 3; i++) {
        struct hy_backend *be[3] = {NULL, NULL, NULL};
        struct hy_err err;
        hy_status st = hy_cpu_backend_create_isa(&be[0], 1, isas[i], &err);
        if (st == HY_E_UNSUPPORTED) {
            fprintf(stderr, "skipping: %s\n", err.msg);
            continue;
        }
        for (int n = 2; n <= 3 && st == HY_OK; n++)
            st = hy_cpu_backend_create_isa(&be[n - 1], n, isas[i], &err);
        CHECKF(st == HY_OK, "create isa %d", (int)isas[i]);
        for (int n = 0; n < 3 && st == HY_OK; n++) {
            CHECK(hy_cpu_backend_threads(be[n]) == n + 1);
            test_backend(be[n], &r);
        }
        if (st == HY_OK)
            test_thread_invariance(be, &r);
        for (int n = 0; n < 3; n++)
            if (be[n])
                be[n]->i->destroy(be[n]);
    }
    struct hy_backend *be = NULL;
    CHECK(hy_cpu_backend_create(&be, 0, NULL) == HY_OK && hy_cpu_backend_threads(be) >= 1);
    fprintf(stderr, "default backend: %s, %d threads\n", hy_cpu_backend_isa(be),
            hy_cpu_backend_threads(be));
    be->i->destroy(be);
    CHECK(hy_cpu_backend_create_ref(&be, NULL) == HY_OK && hy_cpu_backend_threads(be) == 1);
    CHECK(strcmp(hy_cpu_backend_isa(be), "ref") == 0);
    test_memory(be);
    be->i->destroy(be);
    fprintf(stderr, "worst error/bound: matmul %.3g, attention %.3g\n", worst_matmul, worst_attn);
    return test_result();
}
