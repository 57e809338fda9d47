/* cuda_ops_test.c: every CUDA op against the plain C reference (cpu/ref.c) on random,
 * never-zero inputs at several shapes, weights of every checkpoint dtype at odd host
 * addresses. The reference runs on the values the device holds (weights after upload), so
 * each comparison measures the kernel; the upload's rounding is checked on its own.
 * Tolerances, derived next to each case:
 *   matmul (bf16 operands): per element |err| <= (2^-8 + (cols+4)·U32)·Σ|x_c w_c| and
 *     normwise ‖got − ref‖/‖ref‖ <= 1e-2;
 *   attention: the float32 bound of fast_ops_test (scores, softmax, running sums), x2;
 *     prefill tiles on the tensor cores (bf16 operands): that bound with bf16 roundings;
 *     the K/V pool in the backend's KV dtype (bf16 by default, float32 with kv_f32; both
 *     run): the reference reads the values the pool holds (K/V rounded to bf16 on the
 *     host first), so the bounds measure the kernel, and bf16 -> float32 is exact;
 *   rmsnorm, rope, silu_mul: a few float32 ulps; embed, kv_store, copy_rows, add: exact.
 * Output buffers are poisoned with NaN before each op, so an unwritten element fails.
 * Exits 77 (skip) when no CUDA device is present. Prints the worst error/bound ratios. */
#include "backend/cpu/ops_test_util.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_test_util.h"

static const enum hy_dtype all_dtypes[] = {HY_DTYPE_F32, HY_DTYPE_F16, HY_DTYPE_BF16};
static double worst_matmul, worst_matmul_norm, worst_attn;

/* The weight uploaded (dev) and the same values back on the host (host, data malloc'ed). */
struct dweight {
    struct hy_weight dev, host;
};

static void dweight_make(struct hy_backend *be, const struct tweight *tw, struct dweight *dw)
{
    dw->dev = tw->w;
    struct hy_err err;
    hy_status s = be->i->weight_upload(be, &dw->dev, &err);
    CHECKF(s == HY_OK, "weight_upload: %s", err.msg);
    HY_ASSERT(s == HY_OK);
    size_t bytes = (size_t)(dw->dev.rows * dw->dev.cols) * hy_dtype_size(dw->dev.dtype);
    void *h = malloc(bytes);
    HY_ASSERT(h);
    be->i->download(be, h, dw->dev.data, bytes);
    dw->host = dw->dev;
    dw->host.data = h;
}

static void dweight_free(struct hy_backend *be, struct dweight *dw)
{
    be->i->free(be, (void *)dw->dev.data);
    free((void *)dw->host.data);
}

/* Upload: matrices become bf16 rounded to nearest even (exact for bf16), vectors f32. */
static void test_upload(struct hy_backend *be, struct rng *r)
{
    for (int d = 0; d < 3; d++)
        for (int rows = 1; rows <= 7; rows += 6) {
            struct tweight tw;
            struct dweight dw;
            tweight_make(&tw, r, all_dtypes[d], rows, 1001, 3.0f);
            dweight_make(be, &tw, &dw);
            bool ok = dw.dev.dtype == (rows == 1 ? HY_DTYPE_F32 : HY_DTYPE_BF16);
            const unsigned char *p = dw.host.data;
            for (int64_t i = 0; ok && i < rows * 1001; i++) {
                uint16_t h;
                float f, want = tw.val[i];
                if (dw.host.dtype == HY_DTYPE_F32) {
                    memcpy(&f, p + 4 * i, 4);
                } else {
                    memcpy(&h, p + 2 * i, 2);
                    f = hy_bf16_to_f32(h);
                    want = hy_bf16_to_f32(hy_f32_to_bf16(want));
                }
                ok = f == want;
            }
            CHECKF(ok, "weight_upload %s rows=%d", hy_dtype_name(all_dtypes[d]), rows);
            dweight_free(be, &dw);
            tweight_free(&tw);
        }
}

/* Element i of a host weight of dtype bf16 or f32. */
static double wval(const struct hy_weight *w, int64_t i)
{
    const unsigned char *p = w->data;
    uint16_t h;
    float f;
    if (w->dtype == HY_DTYPE_F32) {
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    memcpy(&h, p + 2 * i, 2);
    return hy_bf16_to_f32(h);
}

/* One-row weights stay float32 and go through SGEMM (tighter than the bound below).
 * bf16 operands: rounding x to bf16 moves each term by at most 2^-9 relative, so
 * |err| <= 2^-9·Σ|x w| + float32 accumulation (cols+4)·U32·Σ|x w|; 2^-8 leaves a factor 2. */
static bool matmul_case(struct hy_backend *be, struct rng *r, enum hy_dtype dt, int64_t rows,
                        int64_t cols, int T)
{
    struct tweight tw;
    struct dweight dw;
    tweight_make(&tw, r, dt, rows, cols, 1.0f);
    dweight_make(be, &tw, &dw);
    float *x = fmalloc(T * cols), *got = fmalloc(T * rows), *ref = fmalloc(T * rows);
    double *want = dmalloc(T * rows), *bound = dmalloc(T * rows);
    rng_fill(r, x, T * cols, 2.0f);
    hy_ref_matmul(ref, x, &dw.host, T);
    float *dx = dput(be, x, T * cols), *dout = dnan(be, T * rows);
    be->i->matmul(be, dout, dx, &dw.dev, T);
    dget(be, got, dout, T * rows);
    double num = 0, den = 0;
    for (int t = 0; t < T; t++)
        for (int64_t o = 0; o < rows; o++) {
            double a = 0;
            for (int64_t c = 0; c < cols; c++)
                a += fabs((double)x[t * cols + c] * wval(&dw.host, o * cols + c));
            int64_t i = t * rows + o;
            want[i] = ref[i];
            bound[i] = (1.0 / 256 + (double)(cols + 4) * U32) * a;
            num += ((double)got[i] - ref[i]) * ((double)got[i] - ref[i]);
            den += (double)ref[i] * ref[i];
        }
    bool ok = close_all("matmul", got, want, bound, T * rows, false, &worst_matmul);
    double rel = sqrt(num / den);
    worst_matmul_norm = fmax(worst_matmul_norm, rel);
    ok = ok && rel <= 1e-2;
    be->i->free(be, dx);
    be->i->free(be, dout);
    dweight_free(be, &dw);
    tweight_free(&tw);
    free(x);
    free(got);
    free(ref);
    free(want);
    free(bound);
    return ok;
}

/* Matmuls in a row on the same input convert it to bf16 once (cuda.c); an op writing the
 * input in between must make the next matmul convert again. out2 = W(2x) must be exactly
 * 2 out1 (scaling by 2 is exact in bf16 and float32), and a repeat on the same input equal. */
static void test_matmul_reuse(struct hy_backend *be, struct rng *r)
{
    const int64_t rows = 1001, cols = 256; /* an odd row count: the padded path too */
    const int T = 16;
    struct tweight tw;
    struct dweight dw;
    tweight_make(&tw, r, HY_DTYPE_BF16, rows, cols, 1.0f);
    dweight_make(be, &tw, &dw);
    float *x = fmalloc(T * cols), *o1 = fmalloc(T * rows), *o2 = fmalloc(T * rows);
    float *o3 = fmalloc(T * rows);
    rng_fill(r, x, T * cols, 2.0f);
    float *dx = dput(be, x, T * cols), *d1 = dnan(be, T * rows), *d2 = dnan(be, T * rows);
    float *d3 = dnan(be, T * rows);
    be->i->matmul(be, d1, dx, &dw.dev, T);
    be->i->add(be, dx, dx, T * cols);
    be->i->matmul(be, d2, dx, &dw.dev, T);
    be->i->matmul(be, d3, dx, &dw.dev, T);
    dget(be, o1, d1, T * rows);
    dget(be, o2, d2, T * rows);
    dget(be, o3, d3, T * rows);
    int bad = 0;
    for (int64_t i = 0; i < T * rows; i++)
        bad += o2[i] != 2 * o1[i] || o3[i] != o2[i];
    CHECKF(bad == 0, "matmul input reuse: %d of %lld outputs wrong", bad, (long long)(T * rows));
    float *bufs[] = {dx, d1, d2, d3};
    for (int i = 0; i < 4; i++)
        be->i->free(be, bufs[i]);
    dweight_free(be, &dw);
    tweight_free(&tw);
    free(x);
    free(o1);
    free(o2);
    free(o3);
}

static void test_matmul(struct hy_backend *be, struct rng *r, const char *tag)
{
    static const int64_t shapes[][3] = {
        {1, 1, 1},   {5, 3, 2},     {37, 45, 3},  {100, 67, 5},  {64, 128, 17}, {130, 1000, 4},
        {33, 257, 1}, {8, 16, 1},   {300, 96, 17}, {4, 4100, 2}, {97, 15, 40},  {250, 512, 1},
        {37, 2100, 5}, {512, 4096, 3}, {70, 2048, 33}, {1000, 4096, 8}, {3, 8, 8},
        {129, 1024, 6}, {77, 2048, 9}, {4099, 64, 7}, {1001, 512, 64},
    };
    for (int d = 0; d < 3; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            CHECKF(matmul_case(be, r, all_dtypes[d], shapes[s][0], shapes[s][1], (int)shapes[s][2]),
                   "%s matmul %s rows=%lld cols=%lld T=%d", tag, hy_dtype_name(all_dtypes[d]),
                   (long long)shapes[s][0], (long long)shapes[s][1], (int)shapes[s][2]);
}

/* fast_ops_test's float32 attention bound (its derivation applies to the online softmax
 * too: every rescale is one more rounded factor per running sum), doubled.
 * tc (prefill tiles of >= 16 rows at head size 64 or 128: attention_tc.cu): q, k, v and the
 * probabilities are rounded to bf16 (relative 2^-9 each; k and v exact from a bf16 pool).
 * A score then moves by at most e = (2^-8 + (hd+2)·U)·scale·Σ|q k|, each softmax weight by
 * a factor within e^(±2e), so the output by 2e·vmax (the 4e of the float32 bound covers
 * it); rounding p (in P·V and in the sum l: a mean with weights moved by 2^-9 each, at
 * most ~2·2^-9·vmax) and v (2^-9·vmax) adds < 4·2^-9·vmax. Doubled likewise. */
static double attn_bound(const float *qh, const float *kc, int64_t stride, int n, int hd,
                         float scale, double vmax, bool tc)
{
    double e = 0;
    const double rq = tc ? 1.0 / 256 + (hd + 2) * U32 : (hd + 2) * U32;
    for (int j = 0; j < n; j++) {
        double a = 0;
        for (int i = 0; i < hd; i++)
            a += fabs((double)qh[i] * kc[j * stride + i]);
        e = fmax(e, rq * scale * a);
    }
    return 2 * vmax * (4 * e + (tc ? 4.0 / 512 : 0) + (2.0 * n + 16) * U32);
}

/* CUDA attention at pos0 + shift against the reference at pos0 (shift != 0 must fail). */
static bool attn_case(struct hy_backend *be, struct rng *r, int nh, int nkv, int hd, int pos0,
                      int T, int shift)
{
    int n_ctx = pos0 + T + 2, lo = pos0 + (shift < 0 ? shift : 0), bs = 16;
    int64_t nq = (int64_t)T * nh * hd, kvd = (int64_t)nkv * hd, nkvf = (int64_t)n_ctx * kvd;
    float *q = fmalloc(nq), *got = fmalloc(nq), *ref = fmalloc(nq);
    float *kc = fmalloc(nkvf), *vc = fmalloc(nkvf), *kp, *vp;
    double *want = dmalloc(nq), *bound = dmalloc(nq);
    rng_fill(r, q, nq, 3.0f);
    rng_fill(r, kc, nkvf, 2.0f);
    rng_fill(r, vc, nkvf, 3.0f);
    float scale = 1.0f / sqrtf((float)hd);
    int32_t blocks[256];
    paged_from_contig(r, kc, vc, n_ctx, kvd, bs, &kp, &vp, blocks);
    int64_t pool = (int64_t)2 * ((n_ctx + bs - 1) / bs) * bs * kvd;
    struct hy_attn_seq sr = {0, T, pos0, blocks}, sg = {0, T, pos0 + shift, blocks};
    void *dk = kvput(be, kp, pool), *dv = kvput(be, vp, pool); /* kp, vp as the pool holds them */
    hy_ref_attention(ref, q, kp, vp, bs, &sr, 1, nh, nkv, hd, scale);
    float *dq = dput(be, q, nq);
    float *dout = dnan(be, nq);
    be->i->attention(be, dout, dq, dk, dv, bs, &sg, 1, nh, nkv, hd, scale);
    dget(be, got, dout, nq);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < nh; h++) {
            int64_t o = ((int64_t)t * nh + h) * hd;
            double b = attn_bound(q + o, kc + (int64_t)(h / (nh / nkv)) * hd, kvd, lo + t + 1, hd,
                                  scale, 3.0, T >= 16 && (hd == 64 || hd == 128));
            for (int i = 0; i < hd; i++) {
                want[o + i] = ref[o + i];
                bound[o + i] = b;
            }
        }
    bool ok = close_all("attention", got, want, bound, nq, shift != 0, shift ? NULL : &worst_attn);
    void *bufs[] = {dq, dk, dv, dout};
    for (int i = 0; i < 4; i++)
        be->i->free(be, bufs[i]);
    float *hbufs[] = {q, got, ref, kc, vc, kp, vp};
    for (int i = 0; i < 7; i++)
        free(hbufs[i]);
    free(want);
    free(bound);
    return ok;
}

/* Sequences batched in one call give what each gives alone: bit for bit for the prefill
 * rows (their tiles are the same); a decode row alone may be split over key shares (its
 * keys / 64) where a call with prefill rows does not split, so within float32 rounding of
 * the softmax sums: 1e-5 of max |out|. */
static void test_attention_batch(struct hy_backend *be, struct rng *r)
{
    const int nh = 8, nkv = 2, hd = 128, bs = 16, n_ctx = 300;
    const int64_t kvd = (int64_t)nkv * hd;
    const struct {
        int pos0, T;
    } sp[4] = {{0, 7}, {41, 1}, {20, 9}, {250, 1}};
    float *kc = fmalloc(n_ctx * kvd), *vc = fmalloc(n_ctx * kvd), *kp, *vp;
    rng_fill(r, kc, n_ctx * kvd, 2.0f);
    rng_fill(r, vc, n_ctx * kvd, 3.0f);
    int32_t blocks[256];
    paged_from_contig(r, kc, vc, n_ctx, kvd, bs, &kp, &vp, blocks);
    int64_t pool = (int64_t)2 * ((n_ctx + bs - 1) / bs) * bs * kvd;
    const int rows = 18;
    int64_t nq = (int64_t)rows * nh * hd;
    float *q = fmalloc(nq), *all = fmalloc(nq), *one = fmalloc(nq);
    rng_fill(r, q, nq, 3.0f);
    float *dq = dput(be, q, nq);
    void *dk = kvput(be, kp, pool), *dv = kvput(be, vp, pool);
    float *da = dnan(be, nq), *d1 = dnan(be, nq);
    struct hy_attn_seq seqs[4];
    for (int i = 0, row = 0; i < 4; row += sp[i].T, i++)
        seqs[i] = (struct hy_attn_seq){row, sp[i].T, sp[i].pos0, blocks};
    be->i->attention(be, da, dq, dk, dv, bs, seqs, 4, nh, nkv, hd, 0.0883883f);
    for (int i = 0; i < 4; i++) {
        int64_t off = (int64_t)seqs[i].row * nh * hd;
        struct hy_attn_seq alone = {0, seqs[i].n_tokens, seqs[i].pos0, blocks};
        be->i->attention(be, d1 + off, dq + off, dk, dv, bs, &alone, 1, nh, nkv, hd, 0.0883883f);
    }
    dget(be, all, da, nq);
    dget(be, one, d1, nq);
    double num = 0, den = 0;
    for (int64_t i = 0; i < nq; i++) {
        num = fmax(num, fabs((double)all[i] - one[i]));
        den = fmax(den, fabs((double)one[i]));
    }
    CHECKF(num <= 1e-5 * den, "batched attention differs by %.3g of max |out|", num / den);
    const int64_t pre = (int64_t)sp[0].T * nh * hd; /* sequence 0: prefill rows only */
    CHECKF(memcmp(all, one, (size_t)pre * sizeof(float)) == 0, "batched prefill rows differ");
    void *bufs[] = {dq, dk, dv, da, d1};
    for (int i = 0; i < 5; i++)
        be->i->free(be, bufs[i]);
    float *hbufs[] = {kc, vc, kp, vp, q, all, one};
    for (int i = 0; i < 7; i++)
        free(hbufs[i]);
}

static void test_attention(struct hy_backend *be, struct rng *r)
{
    static const int heads[][3] = {{4, 4, 64}, {4, 2, 64}, {8, 2, 128}, {4, 1, 128}, {3, 1, 20},
                                   {2, 2, 256}, {32, 8, 128}, {8, 1, 128}, {16, 2, 64}};
    static const int steps[][2] = {{0, 1},   {0, 2},  {0, 17},  {9, 1},   {13, 3},
                                   {100, 5}, {63, 1}, {64, 1},  {127, 2}, {200, 1},
                                   {1000, 1}, {300, 40}, {0, 64}, {5, 150}};
    for (int h = 0; h < 9; h++)
        for (int s = 0; s < 14; s++)
            CHECKF(attn_case(be, r, heads[h][0], heads[h][1], heads[h][2], steps[s][0],
                             steps[s][1], 0),
                   "attention nh=%d nkv=%d hd=%d pos0=%d T=%d", heads[h][0], heads[h][1],
                   heads[h][2], steps[s][0], steps[s][1]);
    CHECK(!attn_case(be, r, 4, 2, 64, 30, 3, 1));
    CHECK(!attn_case(be, r, 4, 2, 64, 30, 3, -1));
    test_attention_batch(be, r);
}

/* rope_norm_store against the ops it fuses, on the GPU: rope, rope, rmsnorm of each head
 * of q and k (norm 1; norm 2: the norms first, then rope: norm_first), kv_store of k and v.
 * The rotations are the same arithmetic; the norm sums its squares in another order (1e-5
 * relative covers hd <= 256, as for rmsnorm); v is copied. With the norm first the rotation
 * mixes two values that are each within 1e-5 relative: a pair's outputs within 1e-5 of
 * the larger of the pair, bounded here by 1e-5 of the largest value (of q, of the k rows). */
static void rns_case(struct hy_backend *be, struct rng *r, int T, int nh, int nkv, int hd,
                     int norm)
{
    const int64_t qd = (int64_t)T * nh * hd, kvd = (int64_t)nkv * hd, rows = 3 * T + 5;
    float *q = fmalloc(qd), *k = fmalloc(T * kvd), *v = fmalloc(T * kvd), *inv = fmalloc(hd / 2);
    rng_fill(r, q, qd, 3.0f);
    rng_fill(r, k, T * kvd, 3.0f);
    rng_fill(r, v, T * kvd, 3.0f);
    for (int i = 0; i < hd / 2; i++)
        inv[i] = powf(10000.0f, -2.0f * (float)i / (float)hd);
    int32_t pos[64], slots[64];
    for (int t = 0; t < T; t++) {
        pos[t] = (int32_t)(rng_next(r) % 9000);
        slots[t] = 3 * t + 2; /* distinct rows, others left NaN */
    }
    struct tweight tq, tk;
    struct dweight wq, wk;
    tweight_make(&tq, r, HY_DTYPE_F32, 1, hd, 2.0f);
    tweight_make(&tk, r, HY_DTYPE_F32, 1, hd, 2.0f);
    dweight_make(be, &tq, &wq);
    dweight_make(be, &tk, &wk);
    float *dinv = dput(be, inv, hd / 2);
    float *q1 = dput(be, q, qd), *k1 = dput(be, k, T * kvd), *v1 = dput(be, v, T * kvd);
    float *q2 = dput(be, q, qd), *k2 = dput(be, k, T * kvd), *v2 = dput(be, v, T * kvd);
    void *kp1 = kvnan(be, rows * kvd), *vp1 = kvnan(be, rows * kvd);
    void *kp2 = kvnan(be, rows * kvd), *vp2 = kvnan(be, rows * kvd);
    be->i->rope_norm_store(be, q1, k1, v1, pos, slots, T, nh, nkv, hd, dinv,
                           norm ? &wq.dev : NULL, norm ? &wk.dev : NULL, 1e-6f, norm == 2, kp1,
                           vp1);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == (norm == 2 ? 1 : 0)) {
            be->i->rope(be, q2, pos, T, nh, hd, dinv);
            be->i->rope(be, k2, pos, T, nkv, hd, dinv);
        } else if (norm) {
            be->i->rmsnorm(be, q2, q2, &wq.dev, (int64_t)T * nh, hd, 1e-6f);
            be->i->rmsnorm(be, k2, k2, &wk.dev, (int64_t)T * nkv, hd, 1e-6f);
        }
    }
    be->i->kv_store(be, kp2, k2, slots, T, kvd);
    be->i->kv_store(be, vp2, v2, slots, T, kvd);
    float *a = fmalloc(rows * kvd), *b = fmalloc(rows * kvd), *kin = fmalloc(T * kvd);
    float *qa = fmalloc(qd), *qb = fmalloc(qd);
    dget(be, qa, q1, qd);
    dget(be, qb, q2, qd);
    double qmax = 0;
    for (int64_t i = 0; i < qd; i++)
        qmax = fmax(qmax, fabs((double)qb[i]));
    const double qabs = norm == 2 ? 1e-5 * qmax : 0;
    CHECKF(close_f("rope_norm_store q", qa, qb, qd, 1e-5, qabs), "q T=%d nh=%d hd=%d norm=%d", T,
           nh, hd, norm);
    dget(be, kin, k1, T * kvd);
    CHECKF(memcmp(kin, k, (size_t)(T * kvd) * sizeof *k) == 0, "rope_norm_store changed k");
    int bad = 0;
    /* a bf16 pool: values 1e-5 apart may round to neighbouring bf16 values, one ulp apart:
     * at most 2^-7 of the value (8 significant bits) */
    const double kbound = 1e-5 + (kvt(be) == HY_DTYPE_BF16 ? 1.0 / 128 : 0);
    kvget(be, a, kp1, rows * kvd);
    kvget(be, b, kp2, rows * kvd);
    double kmax = 0;
    for (int t = 0; t < T; t++)
        for (int64_t i = 0; i < kvd; i++)
            kmax = fmax(kmax, fabs((double)b[(int64_t)slots[t] * kvd + i]));
    for (int t = 0; t < T; t++) { /* the stored rows */
        const int64_t o = (int64_t)slots[t] * kvd;
        bad += !close_f("rope_norm_store k", a + o, b + o, kvd, kbound,
                        norm == 2 ? 1e-5 * kmax : 0);
        for (int64_t i = 0; i < kvd; i++) /* checked: now only unwritten rows may be left */
            a[o + i] = b[o + i] = NAN;
    }
    for (int64_t i = 0; i < rows * kvd; i++) /* no other row written */
        bad += a[i] == a[i];
    kvget(be, a, vp1, rows * kvd);
    kvget(be, b, vp2, rows * kvd);
    bad += memcmp(a, b, (size_t)(rows * kvd) * sizeof *a) != 0; /* v rows copied, rest NaN */
    CHECKF(bad == 0, "rope_norm_store T=%d nh=%d nkv=%d hd=%d norm=%d: %d wrong", T, nh, nkv, hd,
           norm, bad);
    void *dbufs[] = {dinv, q1, k1, v1, q2, k2, v2, kp1, vp1, kp2, vp2};
    for (int i = 0; i < 11; i++)
        be->i->free(be, dbufs[i]);
    dweight_free(be, &wq);
    dweight_free(be, &wk);
    tweight_free(&tq);
    tweight_free(&tk);
    float *hbufs[] = {q, k, v, inv, a, b, kin, qa, qb};
    for (int i = 0; i < 9; i++)
        free(hbufs[i]);
}

static void test_rope_norm_store(struct hy_backend *be, struct rng *r)
{
    rns_case(be, r, 1, 32, 8, 128, 1);
    rns_case(be, r, 5, 8, 2, 128, 1);
    rns_case(be, r, 17, 4, 1, 64, 1);
    rns_case(be, r, 3, 4, 4, 256, 1);
    rns_case(be, r, 2, 6, 2, 20, 0);
    rns_case(be, r, 1, 32, 4, 128, 2); /* hy_v3's order and heads */
    rns_case(be, r, 9, 8, 2, 128, 2);
}

/* rope: cosf/sinf within 2 ulps on the GPU (about 1 in glibc), products and the sum
 * rounded, a possible fma: about 8·U32·(|a| + |b|) of the pair; allowed 32·U32. */
static void test_rope(struct hy_backend *be, struct rng *r)
{
    static const int32_t pos[] = {5, 0, 1, 2, 300, 4096, 32767, 100003, 262143, 7, 8, 9, 10, 11,
                                  12, 13, 14};
    static const int shapes[][3] = {{1, 32, 128}, {17, 8, 128}, {5, 3, 64}, {17, 40, 128},
                                    {3, 2, 256}};
    for (int s = 0; s < 5; s++) {
        int T = shapes[s][0], nh = shapes[s][1], hd = shapes[s][2], half = hd / 2;
        int64_t n = (int64_t)T * nh * hd;
        float inv[128], *a = fmalloc(n), *b = fmalloc(n);
        double *want = dmalloc(n), *bound = dmalloc(n);
        for (int i = 0; i < half; i++)
            inv[i] = (float)pow(11158839.925, -2.0 * i / hd);
        rng_fill(r, a, n, 3.0f);
        for (int64_t k = 0; k < n; k++) {
            int64_t base = k / hd * hd, i = k % hd % half;
            bound[k] = 32 * U32 * (fabs(a[base + i]) + fabs(a[base + i + half]));
        }
        float *dx = dput(be, a, n), *dinv = dput(be, inv, half);
        hy_ref_rope(a, pos, T, nh, hd, inv);
        be->i->rope(be, dx, pos, T, nh, hd, dinv);
        dget(be, b, dx, n);
        for (int64_t k = 0; k < n; k++)
            want[k] = a[k];
        CHECKF(close_all("rope", b, want, bound, n, false, NULL), "rope T=%d nh=%d hd=%d", T, nh,
               hd);
        be->i->free(be, dx);
        be->i->free(be, dinv);
        free(a);
        free(b);
        free(want);
        free(bound);
    }
}

/* add_rmsnorm: x += y must be exact (one float32 add, as on the host), then the norm as
 * rmsnorm's bound; out = y in place, as the model calls it. */
static void test_add_rmsnorm(struct hy_backend *be, struct rng *r)
{
    static const int64_t shapes[][2] = {{1, 4096}, {5, 4096}, {64, 128}, {3, 1000}, {2, 8196}};
    for (int s = 0; s < 5; s++) {
        int64_t rows = shapes[s][0], n = shapes[s][1];
        struct tweight tw;
        struct dweight dw;
        tweight_make(&tw, r, HY_DTYPE_F32, 1, n, 2.0f);
        dweight_make(be, &tw, &dw);
        float *x = fmalloc(rows * n), *y = fmalloc(rows * n), *sum = fmalloc(rows * n);
        float *a = fmalloc(rows * n), *b = fmalloc(rows * n), *gx = fmalloc(rows * n);
        rng_fill(r, x, rows * n, 4.0f);
        rng_fill(r, y, rows * n, 2.0f);
        for (int64_t i = 0; i < rows * n; i++)
            sum[i] = x[i] + y[i];
        hy_ref_rmsnorm(a, sum, &dw.host, rows, n, 1e-5f);
        float *dx = dput(be, x, rows * n), *dy = dput(be, y, rows * n);
        be->i->add_rmsnorm(be, dy, dx, dy, &dw.dev, rows, n, 1e-5f);
        dget(be, b, dy, rows * n);
        dget(be, gx, dx, rows * n);
        CHECKF(memcmp(gx, sum, (size_t)(rows * n) * sizeof *gx) == 0, "add_rmsnorm %lldx%lld: x",
               (long long)rows, (long long)n);
        CHECKF(close_f("add_rmsnorm", b, a, rows * n, 1e-5, 0), "add_rmsnorm %lldx%lld",
               (long long)rows, (long long)n);
        be->i->free(be, dx);
        be->i->free(be, dy);
        dweight_free(be, &dw);
        tweight_free(&tw);
        float *h[] = {x, y, sum, a, b, gx};
        for (int i = 0; i < 6; i++)
            free(h[i]);
    }
}

/* rmsnorm: float32 sum of squares (see norm.cu) against double: relative 1e-5 covers
 * d up to 8196 with room. Run in place, as the model does. */
static void test_rmsnorm(struct hy_backend *be, struct rng *r)
{
    /* the warp kernel (d <= 512), the vector kernel (d <= 8192), the strided one (else) */
    static const int64_t shapes[][2] = {{1, 4096}, {3, 4096}, {200, 64}, {7, 1000}, {1, 5},
                                        {96, 128}, {9, 8192}, {2, 8196}, {33, 512}, {1, 516}};
    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 10; s++) {
            int64_t rows = shapes[s][0], n = shapes[s][1];
            struct tweight tw;
            struct dweight dw;
            tweight_make(&tw, r, all_dtypes[d], 1, n, 2.0f);
            dweight_make(be, &tw, &dw);
            float *x = fmalloc(rows * n), *a = fmalloc(rows * n), *b = fmalloc(rows * n);
            rng_fill(r, x, rows * n, 4.0f);
            hy_ref_rmsnorm(a, x, &dw.host, rows, n, 1e-5f);
            float *dx = dput(be, x, rows * n);
            be->i->rmsnorm(be, dx, dx, &dw.dev, rows, n, 1e-5f);
            dget(be, b, dx, rows * n);
            CHECKF(close_f("rmsnorm", b, a, rows * n, 1e-5, 0), "rmsnorm %s %lldx%lld",
                   hy_dtype_name(all_dtypes[d]), (long long)rows, (long long)n);
            be->i->free(be, dx);
            dweight_free(be, &dw);
            tweight_free(&tw);
            free(x);
            free(a);
            free(b);
        }
}

static void test_embed(struct hy_backend *be, struct rng *r)
{
    static const int32_t ids[] = {3, 0, 49, 3, 17, 8, 8};
    for (int d = 0; d < 3; d++)
        for (int64_t cols = 33; cols <= 4096; cols = cols * 124 + 4) {
            struct tweight tw;
            struct dweight dw;
            tweight_make(&tw, r, all_dtypes[d], 50, cols, 1.0f);
            dweight_make(be, &tw, &dw);
            float *a = fmalloc(7 * cols), *b = fmalloc(7 * cols), *dout = dnan(be, 7 * cols);
            hy_ref_embed(a, &dw.host, ids, 7);
            be->i->embed(be, dout, &dw.dev, ids, 7);
            dget(be, b, dout, 7 * cols);
            CHECKF(memcmp(a, b, (size_t)(7 * cols) * sizeof *a) == 0, "embed %s cols=%lld",
                   hy_dtype_name(all_dtypes[d]), (long long)cols);
            be->i->free(be, dout);
            dweight_free(be, &dw);
            tweight_free(&tw);
            free(a);
            free(b);
        }
}

/* kv_store scatters rows to pool slots (exact, or rounded to nearest even into a bf16
 * pool: the reference stores the rows rounded so on the host), copy_rows gathers them:
 * both exact. */
static void test_rows(struct hy_backend *be, struct rng *r)
{
    static const int64_t colss[] = {1, 33, 128, 1024, 4097};
    for (int s = 0; s < 5; s++) {
        int64_t cols = colss[s];
        const int T = 9, P = 40;
        int32_t slots[9] = {39, 0, 7, 8, 21, 22, 3, 38, 11}, idx[6] = {4, 4, 0, 8, 2, 7};
        float *rows = fmalloc(T * cols), *pool = fmalloc(P * cols), *got = fmalloc(P * cols);
        rng_fill(r, rows, T * cols, 5.0f);
        rng_fill(r, pool, P * cols, 5.0f);
        float *drows = dput(be, rows, T * cols), *rr = fmalloc(T * cols);
        void *dpool = kvput(be, pool, P * cols);
        memcpy(rr, rows, (size_t)(T * cols) * sizeof *rr);
        be->i->free(be, kvput(be, rr, T * cols)); /* rr rounded as the pool rounds */
        hy_ref_kv_store(pool, rr, slots, T, cols);
        be->i->kv_store(be, dpool, drows, slots, T, cols);
        kvget(be, got, dpool, P * cols);
        CHECKF(memcmp(got, pool, (size_t)(P * cols) * sizeof(float)) == 0, "kv_store cols=%lld",
               (long long)cols);
        float *dst = dnan(be, 6 * cols);
        hy_ref_copy_rows(got, rows, idx, 6, cols);
        be->i->copy_rows(be, dst, drows, idx, 6, cols);
        dget(be, pool, dst, 6 * cols);
        CHECKF(memcmp(got, pool, (size_t)(6 * cols) * sizeof(float)) == 0, "copy_rows cols=%lld",
               (long long)cols);
        be->i->free(be, drows);
        be->i->free(be, dpool);
        be->i->free(be, dst);
        free(rows);
        free(rr);
        free(pool);
        free(got);
    }
}

/* silu_mul: expf within 2 ulps, one division: relative 1e-6. add: exact. */
static void test_elementwise(struct hy_backend *be, struct rng *r)
{
    static const int64_t sizes[] = {1, 17, 10001, 20000, 3000001};
    for (int s = 0; s < 5; s++) {
        int64_t n = sizes[s];
        float *g = fmalloc(n), *u = fmalloc(n), *a = fmalloc(n), *b = fmalloc(n);
        rng_fill(r, g, n, 10.0f);
        rng_fill(r, u, n, 3.0f);
        float *dg = dput(be, g, n), *du = dput(be, u, n);
        hy_ref_silu_mul(a, g, u, n);
        be->i->silu_mul(be, dg, dg, du, n); /* in place: out == gate */
        dget(be, b, dg, n);
        CHECKF(close_f("silu_mul", b, a, n, 1e-6, 1e-30), "silu_mul n=%lld", (long long)n);
        hy_ref_add(a, u, n);
        be->i->add(be, dg, du, n);
        dget(be, b, dg, n);
        CHECKF(close_f("add", b, a, n, 1e-6, 1e-30), "add n=%lld", (long long)n);
        be->i->free(be, dg);
        be->i->free(be, du);
        free(g);
        free(u);
        free(a);
        free(b);
    }
}

/* Many small ops in a row through a tiny staging ring (wraps every few ops) and a matmul
 * scratch smaller than the input (chunks): results as with the default sizes. */
static void test_small_buffers(struct rng *r)
{
    struct hy_backend *be = NULL;
    struct hy_cuda_opts o = {.stage_ints = 1024, .matmul_scratch = 5000};
    struct hy_err err;
    CHECKF(hy_cuda_backend_create_opts(&be, 0, &o, &err) == HY_OK, "%s", err.msg);
    if (!be)
        return;
    struct tweight tw;
    struct dweight dw;
    tweight_make(&tw, r, HY_DTYPE_BF16, 64, 100, 1.0f);
    dweight_make(be, &tw, &dw);
    enum { N = 300, T = 40 };
    float *dout = dnan(be, (int64_t)N * T * 100), *got = fmalloc((int64_t)N * T * 100);
    float *want = fmalloc((int64_t)N * T * 100);
    int32_t ids[T];
    for (int k = 0; k < N; k++) { /* 300 x 40 ids through a 1024-entry ring */
        for (int t = 0; t < T; t++)
            ids[t] = (int32_t)(rng_next(r) % 64);
        hy_ref_embed(want + (int64_t)k * T * 100, &dw.host, ids, T);
        be->i->embed(be, dout + (int64_t)k * T * 100, &dw.dev, ids, T);
    }
    dget(be, got, dout, (int64_t)N * T * 100);
    CHECK(memcmp(got, want, (size_t)N * T * 100 * sizeof(float)) == 0);
    be->i->free(be, dout);
    free(got);
    free(want);
    dweight_free(be, &dw);
    tweight_free(&tw);
    CHECK(matmul_case(be, r, HY_DTYPE_BF16, 70, 999, 23));  /* 5 rows of x per chunk */
    CHECK(matmul_case(be, r, HY_DTYPE_F32, 33, 4000, 7));   /* 1 row per chunk */
    be->i->destroy(be);
}

/* The tests that touch the KV pool again with float32 pools (hy_cuda_opts.kv_f32), whose
 * stores are exact. */
static void test_kv_f32(struct rng *r)
{
    struct hy_backend *be = NULL;
    struct hy_err err;
    const struct hy_cuda_opts o = {.kv_f32 = 1};
    CHECKF(hy_cuda_backend_create_opts(&be, 0, &o, &err) == HY_OK, "%s", err.msg);
    if (!be)
        return;
    CHECK(kvt(be) == HY_DTYPE_F32);
    test_attention(be, r);
    test_rope_norm_store(be, r);
    test_rows(be, r);
    be->i->destroy(be);
}

static void test_memory(struct hy_backend *be)
{
    check_backend_memory(be, 256);
    CHECK(be->i->alloc(be, (size_t)1 << 50) == NULL); /* a petabyte: NULL, and ops go on */
}

int main(void)
{
    if (!hy_cuda_available()) {
        fprintf(stderr, "no CUDA device: skipping\n");
        return 77;
    }
    struct rng r = {0x2545f4914f6cdd1dull};
    struct hy_backend *be = NULL;
    struct hy_err err;
    CHECKF(hy_cuda_backend_create(&be, 0, &err) == HY_OK, "%s", err.msg);
    if (!be)
        return test_result();
    fprintf(stderr, "device: %s\n", hy_cuda_backend_device_name(be));
    CHECK(kvt(be) == HY_DTYPE_BF16); /* the default */
    test_memory(be);
    test_upload(be, &r);
    test_matmul(be, &r, "default");
    test_attention(be, &r);
    test_rope(be, &r);
    test_rmsnorm(be, &r);
    test_add_rmsnorm(be, &r);
    test_matmul_reuse(be, &r);
    test_rope_norm_store(be, &r);
    test_embed(be, &r);
    test_rows(be, &r);
    test_elementwise(be, &r);
    be->i->destroy(be);
    test_kv_f32(&r);
    test_small_buffers(&r);
    fprintf(stderr, "worst error/bound: matmul %.3g (normwise rel %.3g), attention %.3g\n",
            worst_matmul, worst_matmul_norm, worst_attn);
    return test_result();
}
