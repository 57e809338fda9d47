/* cuda_invariant_test.c: the CUDA backend's batch-invariant numerics (set_batch_invariant,
 * backend.h). A row's result must be the same bits whatever else the call holds:
 * - matmul (bimm.cu for bf16 weights, GEMVs of <= 8 rows for Q8_0): every token of a
 *   150-row input multiplied alone (T = 1), in the whole call (T = 150: the kernel that
 *   walks the segments itself), and in windows of 9, 20 and 64 rows at odd offsets (the
 *   kernel with one segment a block and the ordered sum) must agree bit for bit, on shapes
 *   with 1 to 16 segments, rows not a multiple of 16, columns not a multiple of 32 or of 8
 *   (element loads). Accuracy against the float32 reference: x keeps 16 significant bits
 *   (hi + lo, each bf16: |x - hi - lo| <= 2^-17 |x|), products of bf16 values are exact in
 *   float32, and each output passes through 2 cols/16 tensor-core accumulations plus S
 *   adds, each within 2^-22 of the running magnitude (tensor cores may truncate): so
 *   |err| <= (2^-16 + (cols/4 + 64)·2^-23)·Σ|x_c w_c| with a factor 2 to spare.
 *   The backend's x scratch is made small, so that the larger calls go in chunks of tokens.
 * - attention: a batch mixing prefill rows and decode rows, the same rows as other chunks,
 *   and each row alone must agree bit for bit.
 * Prints the worst matmul error/bound. Exits 77 (skip) when no CUDA device is present. */
#include "backend/cpu/ops_test_util.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_test_util.h"

static double worst;

#define TMAX 150

/* Row t of a (T-row call at offset t0)'s output against alone[t]: bit for bit. */
static bool same_rows(const char *what, const float *got, const float *alone, int t0, int T,
                      int64_t rows)
{
    if (memcmp(got, alone + (int64_t)t0 * rows, (size_t)T * (size_t)rows * sizeof(float)) == 0)
        return true;
    for (int64_t i = 0; i < (int64_t)T * rows; i++)
        if (memcmp(&got[i], &alone[t0 * rows + i], sizeof(float)) != 0) {
            fprintf(stderr, "  %s: token %lld row %lld: %.9g in the call, %.9g alone\n", what,
                    (long long)(t0 + i / rows), (long long)(i % rows), got[i],
                    alone[t0 * rows + i]);
            break;
        }
    return false;
}

static void matmul_case(struct hy_backend *be, struct rng *r, enum hy_dtype dt, int64_t rows,
                        int64_t cols)
{
    struct tweight tw;
    tweight_make(&tw, r, dt, rows, cols, 1.0f);
    struct hy_weight w = tw.w;
    struct hy_err err;
    CHECKF(be->i->weight_upload(be, &w, &err) == HY_OK, "weight_upload: %s", err.msg);
    const int64_t nx = (int64_t)TMAX * cols, no = (int64_t)TMAX * rows;
    float *x = fmalloc(nx), *alone = fmalloc(no), *got = fmalloc(no), *ref = fmalloc(no);
    rng_fill(r, x, nx, 2.0f);
    for (int64_t i = 0; i < no; i++)
        got[i] = NAN;
    float *dx = dput(be, x, nx), *dout = dput(be, got, no);
    for (int t = 0; t < TMAX; t++)
        be->i->matmul(be, dout + (int64_t)t * rows, dx + (int64_t)t * cols, &w, 1);
    dget(be, alone, dout, no);
    char what[96];
    snprintf(what, sizeof what, "%s %lldx%lld", hy_dtype_name(dt), (long long)rows,
             (long long)cols);
    static const int win[][2] = {{0, TMAX}, {3, 9}, {37, 64}, {101, 20}, {149, 1}, {64, 65}};
    for (int k = 0; k < 6; k++) {
        const int t0 = win[k][0], T = win[k][1];
        for (int64_t i = 0; i < no; i++)
            got[i] = NAN;
        be->i->upload(be, dout, got, (size_t)no * sizeof(float));
        be->i->matmul(be, dout, dx + (int64_t)t0 * cols, &w, T);
        dget(be, got, dout, (int64_t)T * rows);
        CHECKF(same_rows(what, got, alone, t0, T, rows),
               "%s: %d rows from %d differ from each row alone", what, T, t0);
    }
    /* accuracy of the alone results: the reference over the exact weight values */
    struct hy_weight hw = {HY_DTYPE_F32, rows, cols, tw.val};
    hy_ref_matmul(ref, x, &hw, TMAX);
    double *want = dmalloc(no), *bound = dmalloc(no);
    const double f = dt == HY_DTYPE_BF16 ? 1.0 / 65536 + (double)(cols / 4 + 64) * U32 / 2
                                         : (double)(cols + 32) * U32; /* GEMV: float32 x */
    for (int t = 0; t < TMAX; t++)
        for (int64_t o = 0; o < rows; o++) {
            double a = 0;
            for (int64_t c = 0; c < cols; c++)
                a += fabs((double)x[t * cols + c] * tw.val[o * cols + c]);
            want[t * rows + o] = ref[t * rows + o];
            bound[t * rows + o] = f * a;
        }
    CHECKF(close_all(what, alone, want, bound, no, false, &worst), "%s: beyond the bound", what);
    be->i->free(be, dx);
    be->i->free(be, dout);
    be->i->free(be, (void *)w.data);
    tweight_free(&tw);
    float *h[] = {x, alone, got, ref};
    for (int i = 0; i < 4; i++)
        free(h[i]);
    free(want);
    free(bound);
}

static void test_matmul(struct hy_backend *be, struct rng *r)
{
    static const int64_t shapes[][2] = {{100, 96},  {64, 2048}, {1000, 512}, {37, 200},
                                        {50, 50},   {16, 32},   {130, 1032}, {4100, 256}};
    for (int i = 0; i < 8; i++)
        matmul_case(be, r, HY_DTYPE_BF16, shapes[i][0], shapes[i][1]);
    matmul_case(be, r, HY_DTYPE_Q8_0, 100, 256);
    matmul_case(be, r, HY_DTYPE_Q8_0, 37, 96);
}

/* Rows of sequences batched (a 9-row prefill, two decode rows, a 30-row prefill), the same
 * prefill split into chunks, and every row alone: the same bits. */
static void test_attention(struct hy_backend *be, struct rng *r)
{
    const int nh = 8, nkv = 2, hd = 128, bs = 16, n_ctx = 400;
    const int64_t kvd = (int64_t)nkv * hd;
    const struct {
        int pos0, T;
    } sp[4] = {{20, 9}, {41, 1}, {370, 1}, {0, 30}};
    float *kc = fmalloc(n_ctx * kvd), *vc = fmalloc(n_ctx * kvd), *kp, *vp;
    rng_fill(r, kc, n_ctx * kvd, 2.0f);
    rng_fill(r, vc, n_ctx * kvd, 3.0f);
    int32_t blocks[256];
    paged_from_contig(r, kc, vc, n_ctx, kvd, bs, &kp, &vp, blocks);
    const int64_t pool = (int64_t)2 * ((n_ctx + bs - 1) / bs) * bs * kvd;
    const int rows = 41;
    const int64_t rq = (int64_t)nh * hd, nq = rows * rq;
    float *q = fmalloc(nq), *all = fmalloc(nq), *one = fmalloc(nq), *chunk = fmalloc(nq);
    rng_fill(r, q, nq, 3.0f);
    void *dk = kvput(be, kp, pool), *dv = kvput(be, vp, pool); /* kp, vp as the pool holds them */
    float *dq = dput(be, q, nq);
    float *da = dput(be, q, nq), *d1 = dput(be, q, nq), *dc = dput(be, q, nq);
    struct hy_attn_seq seqs[4];
    for (int i = 0, row = 0; i < 4; row += sp[i].T, i++)
        seqs[i] = (struct hy_attn_seq){row, sp[i].T, sp[i].pos0, blocks};
    const float sc = 0.0883883f;
    be->i->attention(be, da, dq, dk, dv, bs, seqs, 4, nh, nkv, hd, sc);
    for (int i = 0; i < 4; i++)
        for (int t = 0; t < seqs[i].n_tokens; t++) { /* each row alone */
            const int64_t off = (seqs[i].row + t) * rq;
            struct hy_attn_seq a = {0, 1, seqs[i].pos0 + t, blocks};
            be->i->attention(be, d1 + off, dq + off, dk, dv, bs, &a, 1, nh, nkv, hd, sc);
        }
    for (int i = 0; i < 4; i++) /* chunks of 4 rows */
        for (int t = 0; t < seqs[i].n_tokens; t += 4) {
            const int64_t off = (seqs[i].row + t) * rq;
            const int n = seqs[i].n_tokens - t < 4 ? seqs[i].n_tokens - t : 4;
            struct hy_attn_seq a = {0, n, seqs[i].pos0 + t, blocks};
            be->i->attention(be, dc + off, dq + off, dk, dv, bs, &a, 1, nh, nkv, hd, sc);
        }
    dget(be, all, da, nq);
    dget(be, one, d1, nq);
    dget(be, chunk, dc, nq);
    CHECKF(memcmp(all, one, (size_t)nq * sizeof(float)) == 0, "batched attention rows differ "
           "from the rows alone");
    CHECKF(memcmp(chunk, one, (size_t)nq * sizeof(float)) == 0, "attention rows in chunks of 4 "
           "differ from the rows alone");
    /* and near the reference: a loose check that the invariant path computes attention */
    float *ref = fmalloc(nq);
    hy_ref_attention(ref, q, kp, vp, bs, seqs, 4, nh, nkv, hd, sc);
    CHECK(close_f("invariant attention", one, ref, nq, 1e-4, 1e-4));
    void *bufs[] = {dq, dk, dv, da, d1, dc};
    for (int i = 0; i < 6; i++)
        be->i->free(be, bufs[i]);
    float *hbufs[] = {kc, vc, kp, vp, q, all, one, chunk, ref};
    for (int i = 0; i < 9; i++)
        free(hbufs[i]);
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
    /* a small matmul scratch: 150 tokens of 2048 columns split x in chunks of 64 tokens */
    const struct hy_cuda_opts opts = {.matmul_scratch = (size_t)1 << 18};
    CHECKF(hy_cuda_backend_create_opts(&be, 0, &opts, &err) == HY_OK, "%s", err.msg);
    if (!be)
        return test_result();
    CHECKF(be->i->set_batch_invariant &&
               be->i->set_batch_invariant(be, true, &err) == HY_OK, "set_batch_invariant");
    test_matmul(be, &r);
    test_attention(be, &r);
    be->i->destroy(be);
    fprintf(stderr, "worst matmul error/bound (batch-invariant): %.3g\n", worst);
    return test_result();
}
