/* cuda_kquant_test.c: the CUDA backend's GGUF Q4_K and Q6_K matrices (qmatmul_k.cu, layouts
 * in qlayout_k.h) against the plain C reference. Weights are random (row scales spread over
 * 2^-3..2^3, never zero), quantized on the host by core's quantizers (hy_q4_k_quantize_row,
 * hy_q6_k_quantize_row through hy_dtype_from_f32); the reference is hy_ref_matmul over the
 * quantized host weight (d*sc*q - dmin*m and d*sc*(q-32), exactly llama.cpp's), so each
 * comparison measures the device's layout, dequantization and sums. U = 2^-24; per output
 * element S = Σ_c |x_c w_c| over the dequantized w, and S' = Σ_c (|d sc_c q_c| + |dmin m_c|)
 * |x_c| (Q4_K: the two parts of each weight; Q6_K has no min, S' = S). Bounds:
 *   T <= 8 (register-dequantizing GEMV, float32 x): (cols + 32)·U·S'. The kernel sums the
 *     parts apart (ds·Σ(q·x) per 4 weights and dm·Σx per 16, llama.cpp's factoring), all in
 *     float32 with exact ds = d*sc, dm = dmin*m and exact q; each part passes through at
 *     most 4 (a word's sum) or 17 (Σx and times dm) + 1 (times ds) + 10 a unit of the thread
 *     (cols/2048 + 1 units at most) + 13 (warp and block sums) roundings, fewer than
 *     cols + 32 for every cols >= 256;
 *   T > 8, or x not 16-byte aligned (chunked dequantize + cuBLAS): (2^-8 + (cols+4)·U)·S —
 *     each w dequantized in float32 exactly as the host (bit-checked by qlayout_k_test's
 *     model and by the embedding case here), then w and x rounded to bf16 (2^-9 relative
 *     each), float32 sums (cuda_qmatmul_test's bound).
 * Outputs are poisoned with NaN first, so an unwritten element fails. The chunked path's
 * row and x chunking runs through the launcher with tiny scratch buffers. Embedding lookup
 * of Q4_K/Q6_K tables must be exact. Then a model: none of tests/data/tiny-* has in-features
 * that are multiples of 256, so `hymt make-test-model` writes one (hidden 256, ffn 512, 2
 * heads of 128) into the build folder; --quant q4_k and q6_k on the GPU against the same on
 * the CPU reference backend: greedy ids for 16 steps equal and logits within 2e-2 of
 * max |logit|. Seed 7 because its greedy choices are clear on the CPU: the smallest top-2
 * gap over the 16 steps is 1.0e-2 (q4_k) and 1.6e-2 (q6_k) of max |logit| (seeds 1-12 go
 * down to 3e-4), above the ~6e-3 a bf16 prefill may move a logit (cuda.h).
 * Prints the worst error/bound per type and path. Exits 77 without a GPU. */
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

static float urand(void) /* [-1, 1), never 0 */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) + 0.5) / (float)(1 << 23) - 1.0f;
}

struct qtype {
    const char *name;
    enum hy_dtype dt;
    int qt;
};
static const struct qtype qtypes[] = {
    {"Q4_K", HY_DTYPE_Q4_K, HY_CUDA_Q4_K},
    {"Q6_K", HY_DTYPE_Q6_K, HY_CUDA_Q6_K},
};
#define NQ 2

static double worst[NQ][2]; /* error/bound per type: [0] GEMV, [1] chunked */

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

/* |d sc q| + |dmin m| of each element of a Q4_K row (the parts the GEMV sums apart); |w|
 * for Q6_K. */
static void abs_parts(float *dst, const unsigned char *row, enum hy_dtype dt, int64_t cols)
{
    hy_dtype_to_f32(dst, row, dt, (size_t)cols);
    if (dt != HY_DTYPE_Q4_K) {
        for (int64_t c = 0; c < cols; c++)
            dst[c] = fabsf(dst[c]);
        return;
    }
    for (int64_t b = 0; b < cols / HY_QK_K; b++) {
        struct hy_q4_k_block blk;
        memcpy(&blk, row + (size_t)b * sizeof blk, sizeof blk);
        float d = hy_f16_to_f32(blk.d), dmin = hy_f16_to_f32(blk.dmin);
        for (int j = 0; j < 8; j++) {
            int sc, m;
            hy_q4_k_scale_min(j, blk.scales, &sc, &m);
            for (int l = 0; l < 32; l++) {
                int q = (blk.qs[32 * (j / 2) + l] >> (4 * (j & 1))) & 15;
                dst[b * HY_QK_K + 32 * j + l] = fabsf(d * (float)sc * (float)q) + fabsf(dmin * (float)m);
            }
        }
    }
}

/* ref = hy_ref_matmul's sums (double over the host dequantizer's rows; checked equal to
 * hy_ref_matmul on the small cases), s = S and sp = S' of every output element. */
static void reference(const struct hy_weight *hw, const float *x, int T, float *ref, double *s,
                      double *sp)
{
    float *wrow = malloc((size_t)hw->cols * sizeof *wrow), *prow = malloc((size_t)hw->cols * sizeof *prow);
    size_t rb = hy_dtype_row_bytes(hw->dtype, hw->cols);
    for (int64_t r = 0; r < hw->rows; r++) {
        const unsigned char *src = (const unsigned char *)hw->data + (size_t)r * rb;
        hy_dtype_to_f32(wrow, src, hw->dtype, (size_t)hw->cols);
        abs_parts(prow, src, hw->dtype, hw->cols);
        for (int t = 0; t < T; t++) {
            const float *xt = x + (int64_t)t * hw->cols;
            double a = 0, sa = 0, sb = 0;
            for (int64_t c = 0; c < hw->cols; c++) {
                a += (double)xt[c] * wrow[c];
                sa += fabs((double)xt[c] * wrow[c]);
                sb += fabs((double)xt[c]) * prow[c];
            }
            ref[(int64_t)t * hw->rows + r] = (float)a;
            s[(int64_t)t * hw->rows + r] = sa;
            sp[(int64_t)t * hw->rows + r] = sb;
        }
    }
    free(wrow);
    free(prow);
    if (hw->rows * hw->cols * T <= (1 << 20)) {
        float *want = malloc((size_t)(hw->rows * T) * sizeof *want);
        hy_ref_matmul(want, x, hw, T);
        CHECKF(memcmp(want, ref, (size_t)(hw->rows * T) * sizeof *want) == 0,
               "the test's reference equals hy_ref_matmul (%s %lldx%lld)",
               hy_dtype_name(hw->dtype), (long long)hw->rows, (long long)hw->cols);
        free(want);
    }
}

/* Elements outside the bound of the path (GEMV: S', chunked: S); updates *w. */
static int compare(const char *what, const float *got, const float *ref, const double *s,
                   const double *sp, int64_t n, int64_t cols, bool gemv, double *w)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double bound = gemv ? ((double)cols + 32) * U32 * sp[i]
                            : (1.0 / 256 + ((double)cols + 4) * U32) * s[i];
        bound += 1e-30;
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

struct case_bufs {
    float *x, *ref, *got;
    double *s, *sp;
};

static void bufs_init(struct case_bufs *b, const struct hy_weight *hw, int T)
{
    const int64_t nx = (int64_t)T * hw->cols, no = (int64_t)T * hw->rows;
    b->x = malloc((size_t)nx * sizeof *b->x);
    b->ref = malloc((size_t)no * sizeof *b->ref);
    b->got = malloc((size_t)no * sizeof *b->got);
    b->s = malloc((size_t)no * sizeof *b->s);
    b->sp = malloc((size_t)no * sizeof *b->sp);
    HY_ASSERT(b->x && b->ref && b->got && b->s && b->sp);
    for (int64_t i = 0; i < nx; i++)
        b->x[i] = urand();
    reference(hw, b->x, T, b->ref, b->s, b->sp);
    for (int64_t i = 0; i < no; i++)
        b->got[i] = NAN;
}

static void bufs_free(struct case_bufs *b)
{
    free(b->x);
    free(b->ref);
    free(b->got);
    free(b->s);
    free(b->sp);
}

/* One case through the backend's weight_upload and matmul; xoff floats of misalignment. */
static void backend_case(struct hy_backend *be, int qi, int64_t rows, int64_t cols, int T,
                         int xoff)
{
    const struct qtype *q = &qtypes[qi];
    struct hy_err err = {{0}};
    void *hq = make_weight(q, rows, cols);
    struct hy_weight hw = {q->dt, rows, cols, hq}, dw = hw;
    CHECKF(be->i->weight_upload(be, &dw, &err) == HY_OK, "weight_upload %s: %s", q->name,
           err.msg);
    CHECKF(dw.dtype == (rows == 1 ? HY_DTYPE_F32 : q->dt) && dw.data != hq,
           "%s rows=%lld on the device as %s", q->name, (long long)rows, hy_dtype_name(dw.dtype));
    const int64_t nx = (int64_t)T * cols, no = (int64_t)T * rows;
    struct case_bufs b;
    bufs_init(&b, &hw, T);
    float *dx = be->i->alloc(be, (size_t)(nx + xoff) * sizeof(float));
    float *dout = be->i->alloc(be, (size_t)no * sizeof(float));
    HY_ASSERT(dx && dout);
    be->i->upload(be, dout, b.got, (size_t)no * sizeof(float));
    be->i->upload(be, dx + xoff, b.x, (size_t)nx * sizeof(float));
    be->i->matmul(be, dout, dx + xoff, &dw, T);
    be->i->download(be, b.got, dout, (size_t)no * sizeof(float));
    const bool gemv = T <= 8 && xoff % 4 == 0 && rows > 1;
    char what[128];
    snprintf(what, sizeof what, "%s rows=%lld cols=%lld T=%d xoff=%d (%s)", q->name,
             (long long)rows, (long long)cols, T, xoff, gemv ? "gemv" : "chunked");
    int bad = compare(what, b.got, b.ref, b.s, b.sp, no, cols, gemv, &worst[qi][gemv ? 0 : 1]);
    CHECKF(bad == 0, "%s: %d of %lld outside the bound", what, bad, (long long)no);
    be->i->free(be, dx);
    be->i->free(be, dout);
    be->i->free(be, (void *)dw.data);
    free(hq);
    bufs_free(&b);
}

/* Through hy_cuda_matmul_q with its own stream, handle and (tiny) scratch. */
static void chunk_case(int qi, int64_t rows, int64_t cols, int T, size_t xbf_cap,
                       size_t wbf_cap, size_t cbuf_cap)
{
    const struct qtype *q = &qtypes[qi];
    void *hq = make_weight(q, rows, cols);
    struct hy_weight hw = {q->dt, rows, cols, hq};
    const int64_t nx = (int64_t)T * cols, no = (int64_t)T * rows;
    struct case_bufs b;
    bufs_init(&b, &hw, T);
    const size_t qbytes = hy_cuda_q_bytes(q->qt, rows, cols);
    CHECKF(qbytes == hy_dtype_row_bytes(q->dt, cols) * (size_t)rows,
           "%s: device bytes %zu are the blocks' own", q->name, qbytes);
    void *packed = malloc(qbytes);
    hy_cuda_q_repack(packed, hq, q->qt, rows, cols);
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
    HY_CUDA_CHECK(cudaMemcpy(dx, b.x, (size_t)nx * sizeof(float), cudaMemcpyHostToDevice));
    HY_CUDA_CHECK(cudaMemcpy(dout, b.got, (size_t)no * sizeof(float), cudaMemcpyHostToDevice));
    bool holds = hy_cuda_matmul_q(st, blas, dout, dx, dw, q->qt, rows, cols, T, false, xbf,
                                  xbf_cap, wbf, wbf_cap, cbuf, cbuf_cap);
    HY_CUDA_CHECK(cudaStreamSynchronize(st));
    HY_CUDA_CHECK(cudaMemcpy(b.got, dout, (size_t)no * sizeof(float), cudaMemcpyDeviceToHost));
    const bool gemv = T <= 8; /* cudaMalloc'd x: aligned */
    char what[160];
    snprintf(what, sizeof what, "%s rows=%lld cols=%lld T=%d scratch x %zu w %zu c %zu (%s)",
             q->name, (long long)rows, (long long)cols, T, xbf_cap, wbf_cap, cbuf_cap,
             gemv ? "gemv" : "chunked");
    int bad = compare(what, b.got, b.ref, b.s, b.sp, no, cols, gemv, &worst[qi][gemv ? 0 : 1]);
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
    bufs_free(&b);
}

/* embed of a Q4_K / Q6_K table (GGUF token tables): exact. */
static void embed_case(struct hy_backend *be, int qi)
{
    const struct qtype *q = &qtypes[qi];
    struct hy_err err = {{0}};
    const int64_t rows = 77, cols = 512;
    const int T = 5;
    const int32_t ids[5] = {0, 76, 13, 13, 40};
    void *hq = make_weight(q, rows, cols);
    struct hy_weight hw = {q->dt, rows, cols, hq}, dw = hw;
    CHECKF(be->i->weight_upload(be, &dw, &err) == HY_OK, "%s", err.msg);
    float *want = malloc((size_t)(T * cols) * sizeof *want);
    float *got = malloc((size_t)(T * cols) * sizeof *got);
    for (int64_t i = 0; i < T * cols; i++)
        got[i] = NAN;
    hy_ref_embed(want, &hw, ids, T);
    float *dout = be->i->alloc(be, (size_t)(T * cols) * sizeof(float));
    be->i->upload(be, dout, got, (size_t)(T * cols) * sizeof(float));
    be->i->embed(be, dout, &dw, ids, T);
    be->i->download(be, got, dout, (size_t)(T * cols) * sizeof(float));
    int bad = 0;
    for (int64_t i = 0; i < T * cols; i++)
        bad += memcmp(&got[i], &want[i], sizeof got[i]) != 0;
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

/* Writes the 256-wide checkpoint into dir (the build folder) with `hymt make-test-model`. */
static bool make_model(char *dir, size_t cap)
{
    char bin[4096], cmd[10000];
    test_path(dir, cap, "HYMT_BIN", "cuda-kquant-256");
    test_path(bin, sizeof bin, "HYMT_BIN", "hymt");
    snprintf(cmd, sizeof cmd,
             "'%s' make-test-model --out '%s' --hidden 256 --ffn 512 --heads 2 --kv-heads 1 "
             "--head-dim 128 --vocab 1024 --layers 2 --seed 7 > /dev/null",
             bin, dir);
    int rc = system(cmd);
    CHECKF(rc == 0, "%s: exit status %d (is hymt built?)", cmd, rc);
    return rc == 0;
}

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

/* The checkpoint at dir with --quant `quant` on the GPU and on the CPU reference backend. */
static void model_case(struct hy_backend *cpu, struct hy_backend *gpu, const char *dir,
                       enum hy_dtype quant)
{
    struct hy_err err = {{0}};
    struct hy_model *mc = NULL, *mg = NULL;
    struct hy_model_opts o = {quant};
    CHECKF(hy_model_load_opts(&mc, dir, cpu, &o, &err) == HY_OK, "cpu %s: %s",
           hy_dtype_name(quant), err.msg);
    CHECKF(hy_model_load_opts(&mg, dir, gpu, &o, &err) == HY_OK, "cuda %s: %s",
           hy_dtype_name(quant), err.msg);
    if (!mc || !mg)
        goto out;
    CHECKF(mg->layers[0].wq.dtype == quant && mg->layers[1].w_down.dtype == quant &&
               mg->lm_head.dtype == quant,
           "%s stays quantized on the GPU (wq %s, w_down %s, head %s)", hy_dtype_name(quant),
           hy_dtype_name(mg->layers[0].wq.dtype), hy_dtype_name(mg->layers[1].w_down.dtype),
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
            if (s <= same) /* after a divergence the inputs differ */
                w = fmax(w, num / den);
            gap = fmin(gap, (top1 - top2) / den);
        }
        fprintf(stderr, "256-wide model --quant %s: greedy ids equal for %d/%d steps; max "
                "|dlogit|/max|logit| = %.3g (limit 2e-2); smallest CPU top-2 gap %.3g\n",
                hy_dtype_name(quant), same, STEPS, w, gap);
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
    /* rows, cols, T, x misalignment (floats): T = 1..8 through the GEMV, 9, 17, 64 and a
     * misaligned x through the chunked path; rows off multiples of 4 and 8 */
    static const int shapes[][4] = {
        {37, 256, 1, 0},    {3, 256, 2, 0},     {17, 512, 3, 0},    {8, 1024, 4, 0},
        {33, 1280, 5, 0},   {9, 2304, 6, 0},    {64, 768, 7, 0},    {4096, 4096, 8, 0},
        {1000, 4096, 1, 0}, {1003, 14336, 2, 0}, {11, 4096, 8, 0},  {5, 2048, 1, 0},
        {256, 512, 9, 0},   {300, 512, 17, 0},  {129, 1024, 64, 0}, {100, 256, 3, 1},
        {1, 256, 1, 0},
    };
    for (int qi = 0; qi < NQ; qi++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            backend_case(gpu, qi, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
        /* row chunks of 16 (129 rows: 9 chunks, the last one row padded to 8, through
         * cbuf), x chunks of 4 rows; 8-row chunks; a direct (rows % 8 == 0) one; then the
         * GEMV through the launcher: one row, and rows < R with T = 8 */
        chunk_case(qi, 129, 1024, 19, 5000, 16 * 1024, 1 << 20);
        chunk_case(qi, 129, 1024, 19, 5000, 16 * 1024, 40);
        chunk_case(qi, 256, 512, 33, 1 << 16, 24 * 512, 1 << 20);
        chunk_case(qi, 64, 256, 3, 1 << 16, 8 * 256, 1 << 20);
        chunk_case(qi, 1, 256, 1, 1 << 16, 8 * 256, 1 << 20);
        chunk_case(qi, 3, 256, 8, 1 << 16, 8 * 256, 1 << 20);
        embed_case(gpu, qi);
        fprintf(stderr, "%s: worst error/bound: gemv %.3g, chunked %.3g\n", qtypes[qi].name,
                worst[qi][0], worst[qi][1]);
    }
    char dir[4096];
    if (make_model(dir, sizeof dir)) {
        model_case(cpu, gpu, dir, HY_DTYPE_Q4_K);
        model_case(cpu, gpu, dir, HY_DTYPE_Q6_K);
        test_rmtree(dir);
    }
    cpu->i->destroy(cpu);
    gpu->i->destroy(gpu);
    return test_result();
}
