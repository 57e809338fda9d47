/* quant_kernels_test.c: the CPU kernels of the block dtypes (Q4_0, Q8_0, Q4_K, Q6_K, Q4_G128)
 * on every SIMD level this machine runs, against the references:
 *  - quantize_x of every ISA gives the reference's bytes exactly;
 *  - float-activation kernels (rows4, toks4, dot, tile4x4) against a double dot product of
 *    the dequantized weights;
 *  - int8-activation kernels (q_rows4, q_dot, q_tile4x4) against hy_cpu_q_dot_ref (the same
 *    integers, another float summation order: float rounding only), and against the exact
 *    fp32-activation product (the activation quantization error, bounded below);
 *  - the packed prefill kernels (q_pack, q_gemm) and q_row_tokens against hy_cpu_q_dot_ref,
 *    and each token's result independent of the other tokens of the call;
 *  - the backend's matmul (1, 2, 3 threads; T = 1, 2, 5, 6, 9, 17, 18) against hy_ref_matmul,
 *    and the thread counts against each other bit for bit;
 *  - matmul_n and matmul_glu (several weights of one input) against separate matmul (and
 *    silu_mul) calls, bit for bit.
 * Weights sit at odd addresses. Worst error/bound ratios are printed. */
#include "backend/cpu/cpu_impl.h"
#include "core/quant.h"
#include "ops_test_util.h"

static const enum hy_dtype block_dtypes[] = {HY_DTYPE_Q4_0, HY_DTYPE_Q8_0, HY_DTYPE_Q4_K,
                                             HY_DTYPE_Q6_K, HY_DTYPE_Q4_G128};

/* Under the sanitizers (make test-asan, clang's ASan) this test takes ten times the CPU of
 * its Release run, and what the sanitizers add is the memory and UB checks, which the tails
 * and block boundaries of the small shapes exercise as the large ones do: there the widest
 * shapes are left to the Release run, and the thread-split cases (T = 17, 18) run at
 * narrower widths. */
#if defined(__SANITIZE_ADDRESS__)
#define QK_SMALL 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QK_SMALL 1
#endif
#endif
#ifdef QK_SMALL
static const int64_t cols_list[] = {256, 512, 1280};
static const int64_t mm_shapes[][3] = {{37, 256, 1}, {70, 512, 2}, {9, 1280, 5}, {131, 512, 17},
                                       {45, 768, 18}, {33, 512, 6}, {20, 1024, 9}};
#else
static const int64_t cols_list[] = {256, 512, 1280, 2048, 4096};
static const int64_t mm_shapes[][3] = {{37, 256, 1}, {70, 512, 2}, {9, 1280, 5}, {131, 2048, 17},
                                       {6, 4096, 1}, {45, 2304, 18}, {33, 512, 6}, {20, 1024, 9}};
#endif
static double worst_float, worst_q, worst_qx, worst_mm;

/* rows x cols weights of dtype dt at an odd address, and their dequantized values. */
struct qweight {
    unsigned char *buf, *data;
    float *val;
    size_t row_bytes;
};

static void qweight_make(struct qweight *q, struct rng *r, enum hy_dtype dt, int64_t rows,
                         int64_t cols)
{
    q->row_bytes = hy_dtype_row_bytes(dt, cols);
    q->buf = malloc(q->row_bytes * (size_t)rows + 1);
    q->data = q->buf + 1;
    q->val = fmalloc(rows * cols);
    float *row = fmalloc(cols);
    for (int64_t i = 0; i < rows; i++) {
        rng_fill(r, row, cols, 1.0f);
        if (i % 3 == 1) /* an outlier now and then */
            row[(i * 7) % cols] = 9.0f;
        hy_dtype_from_f32(q->data + (size_t)i * q->row_bytes, row, dt, (size_t)cols);
        hy_dtype_to_f32(q->val + i * cols, q->data + (size_t)i * q->row_bytes, dt, (size_t)cols);
    }
    free(row);
}

static void qweight_free(struct qweight *q)
{
    free(q->buf);
    free(q->val);
}

/* Quantized activations of T tokens, owning their arrays. */
struct qx {
    int8_t *q;
    float *d, *s, *d8, *deq; /* deq: the dequantized activations d*q */
    struct hy_cpu_xq *tok;
};

static void qx_make(struct qx *x, const struct hy_cpu_kernels *k, const float *src, int T,
                    int64_t cols, int block)
{
    int64_t n = T * cols;
    x->q = malloc((size_t)n);
    x->d = fmalloc(n / 32);
    x->s = fmalloc(n / 32);
    x->d8 = fmalloc(n / 4);
    x->deq = fmalloc(n);
    x->tok = malloc((size_t)T * sizeof *x->tok);
    for (int t = 0; t < T; t++) {
        int64_t o = t * cols;
        k->quantize_x(x->q + o, x->d + o / 32, x->s + o / 32, x->d8 + o / 4, src + o, cols, block);
        x->tok[t] = (struct hy_cpu_xq){x->q + o, x->d + o / 32, x->s + o / 32, x->d8 + o / 4, NULL};
    }
    for (int64_t i = 0; i < n; i++)
        x->deq[i] = x->d[i / 32] * (float)x->q[i];
}

static void qx_free(struct qx *x)
{
    free(x->q);
    free(x->d);
    free(x->s);
    free(x->d8);
    free(x->deq);
    free(x->tok);
}

static void test_quantize_x(const struct hy_cpu_kernels *k, struct rng *r)
{
    enum { N = 4096 };
    float *x = fmalloc(N);
    rng_fill(r, x, N, 3.0f);
    for (int i = 0; i < 32; i++)
        x[64 + i] = 0.0f; /* an all-zero block */
    for (int i = 0; i < 32; i++)
        x[128 + i] = (float)(i - 16) * 0.5f; /* halves: ties of the rounding */
    struct hy_cpu_kernels ref;
    hy_cpu_kernels_scalar(&ref);
    for (int block = 32; block <= 128; block *= 4) {
        struct qx a, b;
        qx_make(&a, k, x, 1, N, block);
        qx_make(&b, &ref, x, 1, N, block);
        CHECKF(!memcmp(a.q, b.q, N) && !memcmp(a.d, b.d, N / 32 * 4) &&
                   !memcmp(a.s, b.s, N / 32 * 4) && !memcmp(a.d8, b.d8, N / 4 * 4),
               "%s quantize_x (block %d) differs from the reference", k->name, block);
        /* |x - d*q| <= d/2 plus the float rounding, d = max|x|/127: t = x * (1/d) (|t| <=
         * 127) is off x/d by up to 2 * 127 ulp-halves u = 2^-24 (1/d and the product), and
         * d*q rounds by up to 127 u times d: d * (1/2 + 3 * 127 u) in all */
        int bad = 0;
        for (int i = 0; i < N; i++) {
            float amax = 0.0f;
            for (int j = i / block * block; j < (i / block + 1) * block; j++)
                amax = fmaxf(amax, fabsf(x[j]));
            bad += a.d[i / 32] != amax / 127.0f ||
                   fabsf(x[i] - a.deq[i]) > a.d[i / 32] * (0.5f + 3 * 127 * 0x1p-24f) * (1.0f + 1e-6f) + 1e-30f;
        }
        CHECKF(bad == 0, "block %d: %d activations with a wrong scale or more than d/2 off", block,
               bad);
        qx_free(&a);
        qx_free(&b);
    }
    free(x);
}

static double ratio(double err, double bound)
{
    return bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
}

/* The float bound of the int8 kernels against hy_cpu_q_dot_ref: the integer parts are exact;
 * each float step (scale products, lane sums over cols/32 blocks, the reduction, the
 * offset sum) rounds once per term: (cols/32 + 40) * U32 * sum over values of
 * |dequantized activation| * (|scale| * (|q| + 8) + |min|) (the +8: Q4_G128 sums the
 * nibbles and their offset of 8 apart, so cancellation is against that larger sum). */
static double q_bound(enum hy_dtype dt, const struct hy_cpu_xq *x, const unsigned char *w,
                      int64_t cols)
{
    double a = 0;
    int8_t q[32];
    float sc[2], mn[2];
    for (int64_t b = 0; b < cols / 32; b++) {
        hy_cpu_unpack32(dt, w, b, q, sc, mn);
        for (int i = 0; i < 32; i++)
            a += fabs((double)x->d[b] * x->q[32 * b + i]) *
                 (fabs(sc[i / 16]) * (abs(q[i]) + 8) + fabs(mn[i / 16]));
    }
    return (double)(cols / 32 + 40) * U32 * a;
}

/* Bound of any int8 result against the exact fp32-activation product: each activation is
 * within d_b/2 of its quantized value, so the sum moves by at most sum d_b/2 |w|; plus the
 * float rounding of both sides. */
static double qx_bound(const float *x, const struct qx *xq, const float *wv, int64_t cols,
                       double qb)
{
    double a = 0, r = 0;
    for (int64_t c = 0; c < cols; c++) {
        a += 0.5 * xq->d[c / 32] * fabs(wv[c]);
        r += fabs((double)x[c] * wv[c]);
    }
    return a * (1 + 1e-6) + (cols + 4) * U32 * r + qb;
}

/* q_dot with x->aux from q_prep (cols/128 whole groups, any tail from the plain arrays)
 * against hy_cpu_q_dot_ref: the worst error/bound over T tokens x 4 rows. */
static double prep_case(const struct hy_cpu_mm_kernels *mk, enum hy_dtype dt, const struct qx *xq,
                        const struct qweight *w, int T, int64_t cols)
{
    unsigned char *aux = malloc((size_t)(cols / 128 + 1) * HY_CPU_AUX_PER_128);
    double wq = 0;
    for (int t = 0; t < T; t++) {
        struct hy_cpu_xq xa = xq->tok[t];
        mk->q_prep(aux, &xa, cols);
        xa.aux = aux;
        for (int i = 0; i < 4; i++) {
            const unsigned char *wr = w->data + (size_t)i * w->row_bytes;
            double ref = hy_cpu_q_dot_ref(dt, &xq->tok[t], wr, cols);
            wq = fmax(wq, ratio(fabs(mk->q_dot(&xa, wr, cols) - ref), q_bound(dt, &xq->tok[t], wr, cols)));
        }
    }
    free(aux);
    return wq;
}

static void kernels_case(const struct hy_cpu_kernels *k, struct rng *r, enum hy_dtype dt,
                         int64_t cols)
{
    const struct hy_cpu_mm_kernels *mk = &k->mm[dt];
    const int rows = 4, T = 4;
    struct qweight w;
    qweight_make(&w, r, dt, rows, cols);
    float *x = fmalloc(T * cols);
    rng_fill(r, x, T * cols, 2.0f);
    /* exact products and their float bounds */
    double want[4][4], bnd[4][4];
    for (int t = 0; t < T; t++)
        for (int i = 0; i < rows; i++) {
            double s = 0, a = 0;
            for (int64_t c = 0; c < cols; c++) {
                s += (double)x[t * cols + c] * w.val[i * cols + c];
                a += fabs((double)x[t * cols + c] * w.val[i * cols + c]);
            }
            want[t][i] = s;
            bnd[t][i] = (double)(cols + 4) * U32 * a;
        }
    /* float-activation kernels */
    float y[16], yt[16];
    double worst = 0;
    mk->rows4(y, x, w.data, w.row_bytes, cols);
    for (int i = 0; i < 4; i++)
        worst = fmax(worst, ratio(fabs(y[i] - want[0][i]), bnd[0][i]));
    for (int i = 0; i < 4; i++)
        worst = fmax(worst, ratio(fabs(mk->dot(x + cols, w.data + i * w.row_bytes, cols) - want[1][i]),
                                  bnd[1][i]));
    mk->toks4(yt, 1, x, cols, w.data + 2 * w.row_bytes, cols);
    for (int t = 0; t < 4; t++)
        worst = fmax(worst, ratio(fabs(yt[t] - want[t][2]), bnd[t][2]));
    mk->tile4x4(y, 4, x, cols, w.data, w.row_bytes, cols, false);
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 4; i++)
            worst = fmax(worst, ratio(fabs(y[4 * t + i] - want[t][i]), bnd[t][i]));
    CHECKF(worst <= 1.0, "%s %s cols %lld: float kernels error/bound %.3g", k->name,
           hy_dtype_name(dt), (long long)cols, worst);
    worst_float = fmax(worst_float, worst);
    /* int8-activation kernels */
    if (mk->q_dot) {
        struct qx xq;
        qx_make(&xq, k, x, T, cols, mk->xq_block ? mk->xq_block : 32);
        double wq = 0, wx = 0;
        for (int t = 0; t < T; t++) {
            float yr[4];
            mk->q_rows4(yr, &xq.tok[t], w.data, w.row_bytes, cols);
            float yd = mk->q_dot(&xq.tok[t], w.data + (size_t)t * w.row_bytes, cols);
            for (int i = 0; i < 4; i++) {
                const unsigned char *wr = w.data + (size_t)i * w.row_bytes;
                double ref = hy_cpu_q_dot_ref(dt, &xq.tok[t], wr, cols);
                double qb = q_bound(dt, &xq.tok[t], wr, cols);
                wq = fmax(wq, ratio(fabs(yr[i] - ref), qb));
                if (i == t)
                    wq = fmax(wq, ratio(fabs(yd - ref), qb));
                wx = fmax(wx, ratio(fabs(yr[i] - want[t][i]),
                                    qx_bound(x + t * cols, &xq, w.val + i * cols, cols, qb)));
            }
        }
        mk->q_tile4x4(y, 4, xq.tok, w.data, w.row_bytes, cols, false);
        for (int t = 0; t < 4; t++)
            for (int i = 0; i < 4; i++) {
                const unsigned char *wr = w.data + (size_t)i * w.row_bytes;
                double ref = hy_cpu_q_dot_ref(dt, &xq.tok[t], wr, cols);
                wq = fmax(wq, ratio(fabs(y[4 * t + i] - ref), q_bound(dt, &xq.tok[t], wr, cols)));
            }
        if (mk->q_prep) /* q_dot through the prepared activations (decode's path) */
            wq = fmax(wq, prep_case(mk, dt, &xq, &w, T, cols));
        CHECKF(wq <= 1.0, "%s %s cols %lld: int8 kernels vs int8 reference %.3g", k->name,
               hy_dtype_name(dt), (long long)cols, wq);
        CHECKF(wx <= 1.0, "%s %s cols %lld: int8 kernels vs fp32 %.3g", k->name,
               hy_dtype_name(dt), (long long)cols, wx);
        worst_q = fmax(worst_q, wq);
        worst_qx = fmax(worst_qx, wx);
        qx_free(&xq);
    }
    free(x);
    qweight_free(&w);
}

/* The packed prefill kernels (q_pack, q_gemm): `rows` rows (panels of HY_CPU_PANEL, the
 * last one short) against T tokens, each output against hy_cpu_q_dot_ref within q_bound;
 * a token's results the same bit for bit whatever the number of tokens of the call
 * (1..HY_CPU_GEMM_TOKENS), and adding (add) a second pass doubles them exactly. */
static void packed_case(const struct hy_cpu_kernels *k, struct rng *r, enum hy_dtype dt,
                        int64_t rows, int64_t cols)
{
    const struct hy_cpu_mm_kernels *mk = &k->mm[dt];
    if (!mk->q_pack)
        return;
    enum { T = HY_CPU_GEMM_TOKENS };
    struct qweight w;
    qweight_make(&w, r, dt, rows, cols);
    float *x = fmalloc(T * cols), *y = fmalloc(T * rows), *y1 = fmalloc(T * rows);
    rng_fill(r, x, T * cols, 2.0f);
    struct qx xq;
    qx_make(&xq, k, x, T, cols, mk->xq_block ? mk->xq_block : 32);
    void *buf = aligned_alloc(64, (size_t)(cols / 128) * mk->pack_group_bytes);
    CHECK(buf != NULL);
    double worst = 0;
    int differ = 0, not_double = 0;
    for (int64_t r0 = 0; r0 < rows; r0 += HY_CPU_PANEL) {
        int nr = (int)(rows - r0 < HY_CPU_PANEL ? rows - r0 : HY_CPU_PANEL);
        mk->q_pack(buf, w.data + (size_t)r0 * w.row_bytes, w.row_bytes, nr, cols);
        mk->q_gemm(y + r0, rows, xq.tok, T, buf, nr, cols, false);
        for (int t = 0; t < T; t++) /* one token a call, then added once more */
            mk->q_gemm(y1 + t * rows + r0, rows, &xq.tok[t], 1, buf, nr, cols, false);
        for (int t = 0; t < T; t++)
            for (int i = 0; i < nr; i++)
                differ += y[t * rows + r0 + i] != y1[t * rows + r0 + i];
        mk->q_gemm(y1 + r0, rows, xq.tok, T - 1, buf, nr, cols, true);
        for (int t = 0; t < T - 1; t++)
            for (int i = 0; i < nr; i++)
                not_double += y1[t * rows + r0 + i] != 2.0f * y[t * rows + r0 + i];
    }
    for (int t = 0; t < T; t++)
        for (int64_t o = 0; o < rows; o++) {
            const unsigned char *wr = w.data + (size_t)o * w.row_bytes;
            double ref = hy_cpu_q_dot_ref(dt, &xq.tok[t], wr, cols);
            worst = fmax(worst, ratio(fabs(y[t * rows + o] - ref), q_bound(dt, &xq.tok[t], wr, cols)));
        }
    CHECKF(worst <= 1.0, "%s %s packed %lldx%lld: vs int8 reference %.3g", k->name,
           hy_dtype_name(dt), (long long)rows, (long long)cols, worst);
    CHECKF(differ == 0, "%s %s packed: %d results change with the tokens of the call", k->name,
           hy_dtype_name(dt), differ);
    CHECKF(not_double == 0, "%s %s packed: add is not exact (%d)", k->name, hy_dtype_name(dt),
           not_double);
    worst_q = fmax(worst_q, worst);
    free(buf);
    qx_free(&xq);
    free(x);
    free(y);
    free(y1);
    qweight_free(&w);
}

/* q_row_tokens (a few tokens against one row): each of 8 tokens, in calls of nt = 1..8
 * tokens, against hy_cpu_q_dot_ref within q_bound, and the same bit for bit whatever nt. */
static void row_tokens_case(const struct hy_cpu_kernels *k, struct rng *r, enum hy_dtype dt,
                            int64_t cols)
{
    const struct hy_cpu_mm_kernels *mk = &k->mm[dt];
    if (!mk->q_row_tokens)
        return;
    enum { T = HY_CPU_ROW_TOKENS, ROWS = 3 };
    struct qweight w;
    qweight_make(&w, r, dt, ROWS, cols);
    float *x = fmalloc(T * cols), *gs = fmalloc(T * (cols / 128));
    rng_fill(r, x, T * cols, 2.0f);
    struct qx xq;
    qx_make(&xq, k, x, T, cols, mk->xq_block ? mk->xq_block : 32);
    for (int t = 0; t < T && cols % 128 == 0; t++)
        hy_cpu_xq_half_sums(gs + t * (cols / 128), &xq.tok[t], cols);
    double worst = 0;
    int differ = 0;
    for (int i = 0; i < ROWS; i++) {
        const unsigned char *wr = w.data + (size_t)i * w.row_bytes;
        float y[T], y1[T];
        mk->q_row_tokens(y, 1, xq.tok, gs, cols / 128, T, wr, cols);
        for (int nt = 1; nt < T; nt++)
            for (int t0 = 0; t0 < T; t0 += nt) {
                int m = T - t0 < nt ? T - t0 : nt;
                mk->q_row_tokens(y1 + t0, 1, xq.tok + t0, gs + t0 * (cols / 128), cols / 128, m,
                                 wr, cols);
                for (int t = t0; t < t0 + m; t++)
                    differ += y1[t] != y[t];
            }
        for (int t = 0; t < T; t++)
            worst = fmax(worst, ratio(fabs(y[t] - hy_cpu_q_dot_ref(dt, &xq.tok[t], wr, cols)),
                                      q_bound(dt, &xq.tok[t], wr, cols)));
    }
    CHECKF(worst <= 1.0, "%s %s row_tokens cols %lld: vs int8 reference %.3g", k->name,
           hy_dtype_name(dt), (long long)cols, worst);
    CHECKF(differ == 0, "%s %s row_tokens: %d results change with the tokens of the call",
           k->name, hy_dtype_name(dt), differ);
    worst_q = fmax(worst_q, worst);
    qx_free(&xq);
    free(x);
    free(gs);
    qweight_free(&w);
}

/* The backend's matmul with n threads against the reference (dequantized weights, float
 * activations): the int8 bound qx_bound per output; all thread counts bit-identical. */
static void matmul_case(struct hy_backend *be[3], struct rng *r, enum hy_dtype dt, int64_t rows,
                        int64_t cols, int T)
{
    struct qweight w;
    qweight_make(&w, r, dt, rows, cols);
    struct hy_weight hw = {dt, rows, cols, w.data};
    float *x = fmalloc(T * cols), *ref = fmalloc(T * rows), *got[3];
    rng_fill(r, x, T * cols, 2.0f);
    hy_ref_matmul(ref, x, &hw, T);
    /* the activations the backend quantized (its ISA's xq_block; every ISA gives the same
     * bytes), for the bounds */
    struct hy_cpu_kernels bk;
    const char *isa = hy_cpu_backend_isa(be[0]);
    if (!strcmp(isa, "avx512"))
        hy_cpu_kernels_avx512(&bk);
    else if (!strcmp(isa, "avx2"))
        hy_cpu_kernels_avx2(&bk);
    else
        hy_cpu_kernels_scalar(&bk);
    struct qx xq;
    int xb = bk.mm[dt].xq_block ? bk.mm[dt].xq_block : 32;
    qx_make(&xq, &bk, x, T, cols, xb);
    for (int n = 0; n < 3; n++) {
        got[n] = fmalloc(T * rows);
        be[n]->i->matmul(be[n], got[n], x, &hw, T);
    }
    double worst = 0;
    for (int t = 0; t < T; t++)
        for (int64_t o = 0; o < rows; o++) {
            const unsigned char *wr = w.data + (size_t)o * w.row_bytes;
            double b = qx_bound(x + t * cols, &xq, w.val + o * cols, cols,
                                q_bound(dt, &xq.tok[t], wr, cols));
            worst = fmax(worst, ratio(fabs(got[0][t * rows + o] - ref[t * rows + o]), b));
        }
    CHECKF(worst <= 1.0, "%s matmul %s %lldx%lld T=%d: error/bound %.3g",
           hy_cpu_backend_isa(be[0]), hy_dtype_name(dt), (long long)rows, (long long)cols, T,
           worst);
    CHECKF(!memcmp(got[0], got[1], (size_t)(T * rows) * 4) &&
               !memcmp(got[0], got[2], (size_t)(T * rows) * 4),
           "%s matmul %s: results depend on the thread count", hy_cpu_backend_isa(be[0]),
           hy_dtype_name(dt));
    worst_mm = fmax(worst_mm, worst);
    for (int n = 0; n < 3; n++)
        free(got[n]);
    qx_free(&xq);
    free(x);
    free(ref);
    qweight_free(&w);
}

/* matmul_n against separate matmul calls, bit for bit, on each thread count: n weights of
 * one input (dtypes mixed, as Q4_K_M files mix Q4_K and Q6_K), T tokens; matmul_glu against
 * matmul, matmul, silu_mul where two weights have the same rows. */
static void multi_case(struct hy_backend *be[3], struct rng *r, int n, const enum hy_dtype *dt,
                       const int64_t *rows, int64_t cols, int T)
{
    struct qweight w[4];
    struct hy_weight hw[4];
    const struct hy_weight *wp[4];
    float *x = fmalloc(T * cols), *sep[4], *got[4];
    rng_fill(r, x, T * cols, 2.0f);
    for (int i = 0; i < n; i++) {
        qweight_make(&w[i], r, dt[i], rows[i], cols);
        hw[i] = (struct hy_weight){dt[i], rows[i], cols, w[i].data};
        wp[i] = &hw[i];
        sep[i] = fmalloc(T * rows[i]);
        got[i] = fmalloc(T * rows[i]);
    }
    for (int b = 0; b < 3; b++) {
        for (int i = 0; i < n; i++) {
            be[b]->i->matmul(be[b], sep[i], x, &hw[i], T);
            for (int64_t o = 0; o < T * rows[i]; o++)
                got[i][o] = -1.0f; /* every output must be written */
        }
        be[b]->i->matmul_n(be[b], got, x, wp, n, T);
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad += memcmp(sep[i], got[i], (size_t)(T * rows[i]) * 4) != 0;
        if (n == 2 && rows[0] == rows[1]) { /* matmul_glu: silu(gate) * up */
            be[b]->i->silu_mul(be[b], sep[0], sep[0], sep[1], T * rows[0]);
            be[b]->i->matmul_glu(be[b], got[0], got[1], x, wp[0], wp[1], T);
            bad += memcmp(sep[0], got[0], (size_t)(T * rows[0]) * 4) != 0;
        }
        CHECKF(bad == 0, "%s matmul_n (%d weights, first %s, cols %lld, T=%d, %d threads): "
               "%d outputs differ from matmul", hy_cpu_backend_isa(be[b]), n,
               hy_dtype_name(dt[0]), (long long)cols, T, b + 1, bad);
    }
    for (int i = 0; i < n; i++) {
        qweight_free(&w[i]);
        free(sep[i]);
        free(got[i]);
    }
    free(x);
}

static void multi_cases(struct hy_backend *be[3], struct rng *r)
{
    static const enum hy_dtype km[3] = {HY_DTYPE_Q4_K, HY_DTYPE_Q4_K, HY_DTYPE_Q6_K};
    static const enum hy_dtype q0[2] = {HY_DTYPE_Q4_0, HY_DTYPE_Q8_0};
    static const enum hy_dtype mix[2] = {HY_DTYPE_Q4_G128, HY_DTYPE_Q4_0}; /* runs apart */
    static const enum hy_dtype g128[2] = {HY_DTYPE_Q4_G128, HY_DTYPE_Q4_G128};
    static const int64_t r3[3] = {70, 18, 37}, r2[2] = {45, 64}, rg[2] = {46, 46};
    static const int toks[] = {1, 3, 9, 12};
    for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++) {
        multi_case(be, r, 3, km, r3, 512, toks[t]);
        multi_case(be, r, 2, q0, r2, 640, toks[t]);
        multi_case(be, r, 2, mix, r2, 512, toks[t]);
        multi_case(be, r, 2, g128, r2, 1024, toks[t]);
        multi_case(be, r, 2, km, rg, 256, toks[t]); /* gate/up */
    }
}

/* The embedding lookup of a block-typed table (GGUF files may store token_embd as Q4_K,
 * Q6_K, ...): each row exactly its dequantized values. */
static void embed_case(struct hy_backend *be, struct rng *r, enum hy_dtype dt)
{
    struct qweight w;
    qweight_make(&w, r, dt, 5, 512);
    struct hy_weight hw = {dt, 5, 512, w.data};
    const int32_t ids[3] = {3, 0, 4};
    float *out = fmalloc(3 * 512);
    be->i->embed(be, out, &hw, ids, 3);
    int bad = 0;
    for (int t = 0; t < 3; t++)
        for (int c = 0; c < 512; c++)
            bad += out[t * 512 + c] != w.val[ids[t] * 512 + c];
    CHECKF(bad == 0, "%s embed %s: %d values differ", hy_cpu_backend_isa(be), hy_dtype_name(dt),
           bad);
    free(out);
    qweight_free(&w);
}

int main(void)
{
    struct rng r = {0x9e3779b97f4a7c15ull};
    static const enum hy_cpu_isa isas[] = {HY_CPU_ISA_SCALAR, HY_CPU_ISA_AVX2, HY_CPU_ISA_AVX512};
    for (int ii = 0; ii < 3; ii++) {
        struct hy_cpu_kernels k;
        bool ok = true;
        if (isas[ii] == HY_CPU_ISA_SCALAR)
            hy_cpu_kernels_scalar(&k);
        else
            ok = isas[ii] == HY_CPU_ISA_AVX2 ? hy_cpu_kernels_avx2(&k) : hy_cpu_kernels_avx512(&k);
        if (!ok) {
            fprintf(stderr, "skipping isa %d: not supported here\n", (int)isas[ii]);
            continue;
        }
        test_quantize_x(&k, &r);
        for (size_t d = 0; d < sizeof block_dtypes / sizeof block_dtypes[0]; d++)
            for (size_t c = 0; c < sizeof cols_list / sizeof cols_list[0]; c++)
                kernels_case(&k, &r, block_dtypes[d], cols_list[c]);
        kernels_case(&k, &r, HY_DTYPE_Q4_0, 1312); /* 41 blocks: a tail past 128-value groups */
        kernels_case(&k, &r, HY_DTYPE_Q4_0, 1376); /* 43 blocks: a three-block tail */
        kernels_case(&k, &r, HY_DTYPE_Q8_0, 1312);
        for (size_t d = 0; d < sizeof block_dtypes / sizeof block_dtypes[0]; d++)
            for (size_t c = 0; c < sizeof cols_list / sizeof cols_list[0]; c++)
                packed_case(&k, &r, block_dtypes[d], c % 2 ? 45 : 16, cols_list[c]);
        for (size_t d = 0; d < sizeof block_dtypes / sizeof block_dtypes[0]; d++)
            for (size_t c = 0; c < sizeof cols_list / sizeof cols_list[0]; c++)
                row_tokens_case(&k, &r, block_dtypes[d], cols_list[c]);
        struct hy_backend *be[3] = {NULL, NULL, NULL};
        hy_status st = HY_OK;
        for (int n = 0; n < 3 && st == HY_OK; n++)
            st = hy_cpu_backend_create_isa(&be[n], n + 1, isas[ii], NULL);
        CHECK(st == HY_OK);
        for (size_t d = 0; d < sizeof block_dtypes / sizeof block_dtypes[0] && st == HY_OK; d++)
            embed_case(be[1], &r, block_dtypes[d]);
        for (size_t d = 0; d < sizeof block_dtypes / sizeof block_dtypes[0] && st == HY_OK; d++)
            for (size_t s = 0; s < sizeof mm_shapes / sizeof mm_shapes[0]; s++)
                matmul_case(be, &r, block_dtypes[d], mm_shapes[s][0], mm_shapes[s][1],
                            (int)mm_shapes[s][2]);
        if (st == HY_OK)
            multi_cases(be, &r);
        for (int n = 0; n < 3; n++)
            if (be[n])
                be[n]->i->destroy(be[n]);
    }
    fprintf(stderr,
            "worst error/bound: float kernels %.3g, int8 vs int8 ref %.3g, int8 vs fp32 %.3g, "
            "matmul %.3g\n",
            worst_float, worst_q, worst_qx, worst_mm);
    return test_result();
}
