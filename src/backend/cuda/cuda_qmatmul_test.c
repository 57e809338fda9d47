/* cuda_qmatmul_test.c: the CUDA backend's quantized weights (Q8_0, Q4_G128, Q4_0; qmatmul.h)
 * against the plain C reference. Weights are random (row scales spread over 2^-3..2^3, never
 * zero), quantized on the host by core's quantizers; the reference is hy_ref_matmul over
 * the quantized host weight (it dequantizes d*q exactly), so each comparison measures the
 * device's layout, dequantization and sums. Bounds, per output element, S = Σ_c |x_c w_c|
 * over the dequantized w, U = 2^-24:
 *   T <= 8 (register-dequantizing GEMV, float32 x): (cols + 32)·U·S — float32 products
 *     and sums of exactly dequantized weights; each term passes through at most 8 (a
 *     word's sum) + 1 (times d) + cols/4 (a thread's words) + 13 (warp and block sums)
 *     roundings, fewer than cols + 32 for every cols >= 32;
 *   T > 8, or x not 16-byte aligned (chunked dequantize + cuBLAS): (2^-8 + (cols+4)·U)·S —
 *     x and the dequantized w each rounded to bf16 (2^-9 relative each), float32 sums (as
 *     cuda_ops_test's matmul bound).
 * Outputs are poisoned with NaN first, so an unwritten element fails. The row-chunking of
 * the large-T path is exercised by calling the launcher with tiny scratch buffers (a few
 * rows of W, a few rows of x a chunk; rows % 8 != 0 goes through the aligned output
 * scratch). Embedding lookup of quantized tables must be exact. Then the model: tiny-mqa
 * with --quant q8 and q4 on the GPU against the same on the CPU reference backend: greedy
 * ids for 16 steps equal and logits within 2e-2 of max |logit|.
 * Prints the worst error/bound per type and path. Exits 77 when no CUDA device is present. */
#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/qmatmul.h"
#include "core/quant.h"
#include "model/hunyuan.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define U32 (1.0 / 16777216.0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* Uniform in [-1, 1), never exactly 0. */
static float urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    float f = (float)((rng_state >> 40) + 0.5) / (float)(1 << 23) - 1.0f;
    return f;
}

struct qtype {
    const char *name;
    enum hy_dtype dt;
    int qt;
    int block;
};
static const struct qtype qtypes[] = {
    {"Q8_0", HY_DTYPE_Q8_0, HY_CUDA_Q8_0, 32},
    {"Q4_G128", HY_DTYPE_Q4_G128, HY_CUDA_Q4_G128, 128},
    {"Q4_0", HY_DTYPE_Q4_0, HY_CUDA_Q4_0, 32},
};
#define NQ 3

/* worst error/bound per type: [0] GEMV, [1] chunked */
static double worst[NQ][2];

/* A random rows x cols weight quantized to q (host, block layout); scales vary by row. */
static void *make_weight(const struct qtype *q, int64_t rows, int64_t cols)
{
    size_t rb = hy_dtype_row_bytes(q->dt, cols);
    unsigned char *w = malloc(rb * (size_t)rows);
    float *row = malloc((size_t)cols * sizeof *row);
    HY_ASSERT(w && row);
    for (int64_t r = 0; r < rows; r++) {
        float s = ldexpf(1.0f, (int)(r % 7) - 3);
        for (int64_t c = 0; c < cols; c++)
            row[c] = s * urand();
        hy_dtype_from_f32(w + (size_t)r * rb, row, q->dt, (size_t)cols);
    }
    free(row);
    return w;
}

/* ref[t*rows + r] = hy_ref_matmul's sum (double, each row dequantized once by the same
 * host dequantizer hy_ref_matmul uses element by element: too slow for 4096 x 4096 with
 * the 4-bit types, so small cases check that the two agree exactly) and sabs = S. */
static void reference(const struct hy_weight *hw, const float *x, int T, float *ref, double *sabs)
{
    float *wrow = malloc((size_t)hw->cols * sizeof *wrow);
    size_t rb = hy_dtype_row_bytes(hw->dtype, hw->cols);
    for (int64_t r = 0; r < hw->rows; r++) {
        hy_dtype_to_f32(wrow, (const unsigned char *)hw->data + (size_t)r * rb, hw->dtype,
                        (size_t)hw->cols);
        for (int t = 0; t < T; t++) {
            const float *xt = x + (int64_t)t * hw->cols;
            double s = 0, a = 0;
            for (int64_t c = 0; c < hw->cols; c++) {
                a += (double)xt[c] * wrow[c];
                s += fabs((double)xt[c] * wrow[c]);
            }
            ref[(int64_t)t * hw->rows + r] = (float)a;
            sabs[(int64_t)t * hw->rows + r] = s;
        }
    }
    free(wrow);
    if (hw->rows * hw->cols * T <= (1 << 20)) {
        float *want = malloc((size_t)(hw->rows * T) * sizeof *want);
        hy_ref_matmul(want, x, hw, T);
        CHECKF(memcmp(want, ref, (size_t)(hw->rows * T) * sizeof *want) == 0,
               "the test's reference equals hy_ref_matmul (%s %lldx%lld)",
               hy_dtype_name(hw->dtype), (long long)hw->rows, (long long)hw->cols);
        free(want);
    }
}

/* Compares; returns the number of elements outside the bound and updates *w. */
static int compare(const char *what, const float *got, const float *ref, const double *sabs,
                   int64_t n, double rel, double cols_ulps, double *w)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double bound = (rel + cols_ulps * U32) * sabs[i] + 1e-30;
        double err = fabs((double)got[i] - ref[i]);
        if (!(err <= bound)) {
            if (bad < 5)
                fprintf(stderr, "  %s: element %lld: got %.9g want %.9g err %.3g bound %.3g\n",
                        what, (long long)i, got[i], ref[i], err, bound);
            bad++;
        }
        if (err / bound > *w || isnan(err))
            *w = isnan(err) ? INFINITY : err / bound;
    }
    return bad;
}

/* One case through the backend's weight_upload and matmul; xoff floats of misalignment. */
static void backend_case(struct hy_backend *be, const struct qtype *q, int64_t rows,
                         int64_t cols, int T, int xoff)
{
    struct hy_err err = {{0}};
    void *hq = make_weight(q, rows, cols);
    struct hy_weight hw = {q->dt, rows, cols, hq}, dw = hw;
    CHECKF(be->i->weight_upload(be, &dw, &err) == HY_OK, "weight_upload %s: %s", q->name,
           err.msg);
    /* a one-row weight becomes float32 (a vector: cuda.h); the launcher case below takes
     * one-row matrices through the kernel */
    CHECKF(dw.dtype == (rows == 1 ? HY_DTYPE_F32 : q->dt) && dw.data != hq,
           "%s rows=%lld on the device as %s", q->name, (long long)rows, hy_dtype_name(dw.dtype));
    const int64_t nx = (int64_t)T * cols, no = (int64_t)T * rows;
    float *x = malloc((size_t)nx * sizeof *x), *ref = malloc((size_t)no * sizeof *ref);
    float *got = malloc((size_t)no * sizeof *got);
    double *sabs = malloc((size_t)no * sizeof *sabs);
    for (int64_t i = 0; i < nx; i++)
        x[i] = urand();
    reference(&hw, x, T, ref, sabs);
    float *dx = be->i->alloc(be, (size_t)(nx + xoff) * sizeof(float));
    float *dout = be->i->alloc(be, (size_t)no * sizeof(float));
    HY_ASSERT(dx && dout);
    for (int64_t i = 0; i < no; i++)
        got[i] = NAN;
    be->i->upload(be, dout, got, (size_t)no * sizeof(float));
    be->i->upload(be, dx + xoff, x, (size_t)nx * sizeof(float));
    be->i->matmul(be, dout, dx + xoff, &dw, T);
    be->i->download(be, got, dout, (size_t)no * sizeof(float));
    const bool gemv = T <= 8 && xoff % 4 == 0;
    const int qi = (int)(q - qtypes);
    char what[128];
    snprintf(what, sizeof what, "%s rows=%lld cols=%lld T=%d xoff=%d (%s)", q->name,
             (long long)rows, (long long)cols, T, xoff, gemv ? "gemv" : "chunked");
    int bad = compare(what, got, ref, sabs, no, gemv ? 0.0 : 1.0 / 256,
                      gemv ? (double)cols + 32 : (double)cols + 4, &worst[qi][gemv ? 0 : 1]);
    CHECKF(bad == 0, "%s: %d of %lld outside the bound", what, bad, (long long)no);
    be->i->free(be, dx);
    be->i->free(be, dout);
    be->i->free(be, (void *)dw.data);
    free(hq);
    free(x);
    free(ref);
    free(got);
    free(sabs);
}

/* Through the launcher hy_cuda_matmul_q with its own stream, handle and (tiny) scratch:
 * the chunked path's row and x chunking, and one-row matrices through the GEMV. */
static void chunk_case(const struct qtype *q, int64_t rows, int64_t cols, int T,
                       size_t xbf_cap, size_t wbf_cap, size_t cbuf_cap)
{
    void *hq = make_weight(q, rows, cols);
    struct hy_weight hw = {q->dt, rows, cols, hq};
    const int64_t nx = (int64_t)T * cols, no = (int64_t)T * rows;
    float *x = malloc((size_t)nx * sizeof *x), *ref = malloc((size_t)no * sizeof *ref);
    float *got = malloc((size_t)no * sizeof *got);
    double *sabs = malloc((size_t)no * sizeof *sabs);
    size_t qbytes = hy_cuda_q_bytes(q->qt, rows, cols);
    void *packed = malloc(qbytes);
    for (int64_t i = 0; i < nx; i++)
        x[i] = urand();
    reference(&hw, x, T, ref, sabs);
    hy_cuda_q_repack(packed, hq, q->qt, rows, cols);
    for (int64_t i = 0; i < no; i++)
        got[i] = NAN;
    cudaStream_t st;
    cublasHandle_t blas;
    void *dw, *dx, *dout, *xbf, *wbf, *cbuf;
    HY_CUDA_CHECK(cudaStreamCreate(&st));
    HY_CUBLAS_CHECK(cublasCreate(&blas));
    HY_CUBLAS_CHECK(cublasSetStream(blas, st));
    HY_CUDA_CHECK(cudaMalloc(&dw, qbytes));
    HY_CUDA_CHECK(cudaMalloc(&dx, (size_t)nx * sizeof(float)));
    HY_CUDA_CHECK(cudaMalloc(&dout, (size_t)no * sizeof(float)));
    HY_CUDA_CHECK(cudaMalloc(&xbf, xbf_cap * 2));
    HY_CUDA_CHECK(cudaMalloc(&wbf, wbf_cap * 2));
    HY_CUDA_CHECK(cudaMalloc(&cbuf, cbuf_cap * 4));
    HY_CUDA_CHECK(cudaMemcpy(dw, packed, qbytes, cudaMemcpyHostToDevice));
    HY_CUDA_CHECK(cudaMemcpy(dx, x, (size_t)nx * sizeof(float), cudaMemcpyHostToDevice));
    HY_CUDA_CHECK(cudaMemcpy(dout, got, (size_t)no * sizeof(float), cudaMemcpyHostToDevice));
    bool holds = hy_cuda_matmul_q(st, blas, dout, dx, dw, q->qt, rows, cols, T, false, xbf,
                                  xbf_cap, wbf, wbf_cap, cbuf, cbuf_cap);
    HY_CUDA_CHECK(cudaStreamSynchronize(st));
    HY_CUDA_CHECK(cudaMemcpy(got, dout, (size_t)no * sizeof(float), cudaMemcpyDeviceToHost));
    char what[160];
    const bool gemv = T <= 8; /* cudaMalloc'd x: aligned */
    snprintf(what, sizeof what, "%s rows=%lld cols=%lld T=%d scratch x %zu w %zu c %zu (%s)",
             q->name, (long long)rows, (long long)cols, T, xbf_cap, wbf_cap, cbuf_cap,
             gemv ? "gemv" : "chunked");
    int bad = compare(what, got, ref, sabs, no, gemv ? 0.0 : 1.0 / 256,
                      gemv ? (double)cols + 32 : (double)cols + 4, &worst[q - qtypes][gemv ? 0 : 1]);
    CHECKF(bad == 0, "%s: %d of %lld outside the bound", what, bad, (long long)no);
    CHECKF(holds == (T > 8 && (size_t)nx <= xbf_cap && (rows % 8 == 0 || (size_t)T * 8 <= cbuf_cap)),
           "%s: returned %d (xbf holds x)", what, holds);
    cudaFree(dw);
    cudaFree(dx);
    cudaFree(dout);
    cudaFree(xbf);
    cudaFree(wbf);
    cudaFree(cbuf);
    cublasDestroy(blas);
    cudaStreamDestroy(st);
    free(packed);
    free(hq);
    free(x);
    free(ref);
    free(got);
    free(sabs);
}

/* embed of a quantized table (GGUF token tables): exact. */
static void embed_case(struct hy_backend *be, const struct qtype *q)
{
    struct hy_err err = {{0}};
    const int64_t rows = 77, cols = 256;
    const int T = 5;
    const int32_t ids[5] = {0, 76, 13, 13, 40};
    void *hq = make_weight(q, rows, cols);
    struct hy_weight hw = {q->dt, rows, cols, hq}, dw = hw;
    CHECKF(be->i->weight_upload(be, &dw, &err) == HY_OK, "%s", err.msg);
    float *want = malloc((size_t)(T * cols) * sizeof *want), *got = malloc((size_t)(T * cols) * sizeof *got);
    hy_ref_embed(want, &hw, ids, T);
    float *dout = be->i->alloc(be, (size_t)(T * cols) * sizeof(float));
    be->i->embed(be, dout, &dw, ids, T);
    be->i->download(be, got, dout, (size_t)(T * cols) * sizeof(float));
    int bad = 0;
    for (int64_t i = 0; i < T * cols; i++)
        bad += got[i] != want[i];
    CHECKF(bad == 0, "embed %s: %d of %lld values differ", q->name, bad, (long long)(T * cols));
    be->i->free(be, dout);
    be->i->free(be, (void *)dw.data);
    free(hq);
    free(want);
    free(got);
}

#define STEPS 16
#define NP 9
static const int32_t prompt[NP] = {305, 3, 77, 250, 12, 319, 8, 8, 130};

static bool greedy(struct hy_model *m, float *logits, int32_t *ids)
{
    struct hy_ctx *c = NULL;
    struct hy_err err = {{0}};
    const int64_t V = m->cfg.vocab_size;
    bool ok = hy_ctx_create(&c, m, NP + STEPS, NP, &err) == HY_OK &&
              hy_model_forward(c, prompt, NP, false, logits, &err) == HY_OK;
    for (int s = 0; ok && s < STEPS; s++) {
        int64_t b = 0;
        for (int64_t i = 1; i < V; i++)
            if (logits[s * V + i] > logits[s * V + b])
                b = i;
        ids[s] = (int32_t)b;
        if (s + 1 < STEPS)
            ok = hy_model_forward(c, &ids[s], 1, false, logits + (s + 1) * V, &err) == HY_OK;
    }
    CHECKF(ok, "greedy: %s", err.msg);
    hy_ctx_destroy(c);
    return ok;
}

static void model_case(struct hy_backend *cpu, struct hy_backend *gpu, enum hy_dtype quant)
{
    char dir[4096];
    struct hy_err err = {{0}};
    struct hy_model *mc = NULL, *mg = NULL;
    struct hy_model_opts o = {quant};
    test_path(dir, sizeof dir, "HYMT_SRC", "tests/data/tiny-mqa");
    CHECKF(hy_model_load_opts(&mc, dir, cpu, &o, &err) == HY_OK, "cpu %s: %s",
           hy_dtype_name(quant), err.msg);
    CHECKF(hy_model_load_opts(&mg, dir, gpu, &o, &err) == HY_OK, "cuda %s: %s",
           hy_dtype_name(quant), err.msg);
    if (!mc || !mg)
        goto out;
    CHECKF(mg->layers[0].wq.dtype == mc->layers[0].wq.dtype &&
           mg->layers[0].w_down.dtype == mc->layers[0].w_down.dtype &&
           mg->lm_head.dtype == mc->lm_head.dtype,
           "quantized dtypes on the GPU (wq %s, w_down %s, head %s) as on the CPU",
           hy_dtype_name(mg->layers[0].wq.dtype), hy_dtype_name(mg->layers[0].w_down.dtype),
           hy_dtype_name(mg->lm_head.dtype));
    const int64_t V = mc->cfg.vocab_size;
    float *lc = malloc((size_t)(STEPS * V) * sizeof *lc), *lg = malloc((size_t)(STEPS * V) * sizeof *lg);
    int32_t ic[STEPS], ig[STEPS];
    if (greedy(mc, lc, ic) && greedy(mg, lg, ig)) {
        double w = 0, gap = INFINITY;
        int same = 0;
        while (same < STEPS && ic[same] == ig[same])
            same++;
        for (int s = 0; s < STEPS; s++) {
            double num = 0, den = 0, top1 = -INFINITY, top2 = -INFINITY;
            for (int64_t i = 0; i < V; i++) {
                double a = lc[s * V + i];
                num = fmax(num, fabs(a - lg[s * V + i]));
                den = fmax(den, fabs(a));
                if (a > top1) {
                    top2 = top1;
                    top1 = a;
                } else if (a > top2) {
                    top2 = a;
                }
            }
            if (s <= same)
                w = fmax(w, num / den);
            gap = fmin(gap, (top1 - top2) / den);
        }
        fprintf(stderr, "tiny-mqa %s (wq %s, w_down %s): greedy ids equal for %d/%d steps; "
                "max |dlogit|/max|logit| = %.3g (limit 2e-2); smallest CPU top-2 gap %.3g\n",
                hy_dtype_name(quant), hy_dtype_name(mg->layers[0].wq.dtype),
                hy_dtype_name(mg->layers[0].w_down.dtype), same, STEPS, w, gap);
        CHECKF(same == STEPS, "%s: greedy ids differ at step %d (cpu %d, cuda %d)",
               hy_dtype_name(quant), same, same < STEPS ? ic[same] : -1,
               same < STEPS ? ig[same] : -1);
        CHECKF(w <= 2e-2, "%s: logits differ by %.3g of max |logit|", hy_dtype_name(quant), w);
    }
    free(lc);
    free(lg);
out:
    hy_model_destroy(mc);
    hy_model_destroy(mg);
}

int main(void)
{
    if (!hy_cuda_available()) {
        fprintf(stderr, "no CUDA device: skipping\n");
        return 77;
    }
    struct hy_backend *gpu = NULL, *cpu = NULL;
    struct hy_err err = {{0}};
    CHECKF(hy_cuda_backend_create(&gpu, 0, &err) == HY_OK, "%s", err.msg);
    CHECKF(hy_cpu_backend_create_ref(&cpu, &err) == HY_OK, "%s", err.msg);
    if (!gpu || !cpu)
        return test_result();
    /* rows, cols, T, x misalignment (floats) */
    static const int shapes[][4] = {
        {1, 32, 1, 0},     {1, 128, 1, 0},     {37, 256, 3, 0},  {1000, 4096, 1, 0},
        {4096, 4096, 8, 0}, {300, 512, 17, 0},  {129, 1024, 64, 0}, {64, 384, 2, 0},
        {33, 640, 5, 0},   {9, 896, 7, 0},     {17, 128, 4, 0},  {8, 1024, 6, 0},
        {1003, 14336, 2, 0}, {256, 512, 20, 0}, {100, 256, 3, 1},  {5, 2048, 1, 0},
    };
    for (int qi = 0; qi < NQ; qi++) {
        const struct qtype *q = &qtypes[qi];
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            if (shapes[s][1] % q->block)
                continue;
            backend_case(gpu, q, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
        }
        /* row chunks of 16 (129 rows: 9 chunks, the last one row padded to 8, through
         * cbuf), x chunks of 4 rows; then a direct (rows % 8 == 0) one */
        chunk_case(q, 129, 1024, 19, 5000, 16 * 1024, 1 << 20);
        chunk_case(q, 129, 1024, 19, 5000, 16 * 1024, 40); /* cbuf 40: 8-row chunks */
        chunk_case(q, 256, 512, 33, 1 << 16, 24 * 512, 1 << 20);
        chunk_case(q, 64, 256, 3, 1 << 16, 8 * 256, 1 << 20); /* T <= 8: the GEMV */
        chunk_case(q, 1, 128, 1, 1 << 16, 8 * 128, 1 << 20);  /* a one-row matrix, GEMV */
        chunk_case(q, 3, 256, 8, 1 << 16, 8 * 256, 1 << 20);  /* rows < R, T = 8 */
        embed_case(gpu, q);
        fprintf(stderr, "%s: worst error/bound: gemv %.3g, chunked %.3g\n", q->name,
                worst[qi][0], worst[qi][1]);
    }
    model_case(cpu, gpu, HY_DTYPE_Q8_0);
    model_case(cpu, gpu, HY_DTYPE_Q4_G128);
    model_case(cpu, gpu, HY_DTYPE_Q4_0);
    cpu->i->destroy(cpu);
    gpu->i->destroy(gpu);
    return test_result();
}
