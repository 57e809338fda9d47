/* cuda_qmma_test.c: the tensor-core matmul for quantized weights (qmma.h) against the plain
 * C reference, for Q8_0, Q4_0 and Q4_G128. Weights are random, never zero, with block
 * scales over 2^-5..2^5 (a row factor times a block factor), quantized on the host by
 * core's quantizers; the reference is hy_ref_matmul over the quantized host weight (exact
 * d*q; computed here in double with S = Σ_c |x_c w_c|, checked equal to hy_ref_matmul on the
 * small cases). Bound per output element, U = 2^-24: (2^-8 + (cols+4)·U)·S, the chunked
 * path's (cuda_qmatmul_test): x and w each rounded to bf16 (2^-9 relative each; the kernel
 * rounds d*q exactly as the chunked dequantize does), exact bf16 products, float32 sums (a
 * K split adds up to 8 float32 parts: 8 more roundings, inside the slack of the 2^-8 term,
 * which real errors stay far below).
 * For each type and shape (T = 9 .. 1000, rows not a multiple of the 128-row tile, T not
 * of the 64-row tile): hy_cuda_matmul_q (the engine's entry: the kernel when it fits, with
 * its automatic K split), hy_cuda_qmma with 1 and 3 splits, a run of the entry with a tiny
 * x scratch (x in chunks of rows), and the chunked path for comparison; shapes the kernel
 * does not take (cols % 128 != 0) through the entry's fallback. Outputs are poisoned with
 * NaN first; the entry must give bitwise the same result twice. Prints the worst
 * error/bound per type and path. Exits 77 when no CUDA device is present. */
#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/qmatmul.h"
#include "backend/cuda/qmma.h"
#include "core/quant.h"
#include "test.h"
#include "backend/cuda/cuda_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct rng rng = {0x243f6a8885a308d3ull};

static const struct ct_qtype qtypes[] = {CT_QTYPE(Q8_0, 32), CT_QTYPE(Q4_0, 32),
                                         CT_QTYPE(Q4_G128, 128)};
#define NQ 3

enum { P_ENTRY, P_SPLIT1, P_SPLIT3, P_XCHUNK, P_CHUNKED, P_FALLBACK, NP };
static const char *const pnames[NP] = {"entry",       "splits=1", "splits=3",
                                       "x in chunks", "chunked",  "fallback"};
static double worst[NQ][NP];

/* Device buffers shared by the cases (sized for the largest). */
struct dev {
    cudaStream_t st;
    cublasHandle_t blas;
    void *w;
    float *x, *out, *part, *cbuf;
    uint16_t *xbf, *wbf;
    size_t w_cap, x_cap, out_cap, part_cap, xbf_cap, wbf_cap, cbuf_cap;
};

/* Compares got with the bound; returns the elements outside it, updates *w. */
static int compare(const char *what, const float *got, const float *ref, const double *sabs,
                   int64_t rows, int64_t n, double cols, double *w)
{
    double wl;
    int bad = ct_compare(what, got, ref, sabs, rows, n, 1.0 / 256, cols + 4, &wl);
    *w = wl > *w ? wl : *w;
    fprintf(stderr, "  %-58s worst err/bound %.3g%s\n", what, wl, bad ? "  FAIL" : "");
    return bad;
}

/* Runs path p into d->out (poisoned first) and downloads it into got. Returns what the
 * launcher returned (xbf holds x) or false. */
static bool run_path(struct dev *d, int p, const struct ct_qtype *q, int64_t rows, int64_t cols, int T,
                     float *got)
{
    const int64_t no = (int64_t)T * rows;
    bool holds = false;
    for (int64_t i = 0; i < no; i++)
        got[i] = NAN;
    HY_CUDA_CHECK(cudaMemcpy(d->out, got, (size_t)no * sizeof(float), cudaMemcpyHostToDevice));
    const struct hy_cuda_mm_scratch s = {d->xbf, d->xbf_cap, d->wbf, d->wbf_cap, d->cbuf,
                                         d->cbuf_cap};
    const struct hy_cuda_mm_scratch s5 = {d->xbf, (size_t)(5 * cols + 3), d->wbf, d->wbf_cap,
                                          d->cbuf, d->cbuf_cap};
    if (p == P_ENTRY || p == P_FALLBACK) {
        holds = hy_cuda_matmul_q(d->st, d->blas, d->out, d->x, d->w, q->qt, rows, cols, T, false,
                                 &s);
    } else if (p == P_XCHUNK) { /* x in chunks of 5 rows */
        holds = hy_cuda_matmul_q(d->st, d->blas, d->out, d->x, d->w, q->qt, rows, cols, T, false,
                                 &s5);
    } else if (p == P_CHUNKED) {
        holds = hy_cuda_matmul_q_chunked(d->st, d->blas, d->out, d->x, d->w, q->qt, rows, cols, T,
                                         false, &s);
    } else {
        hy_cuda_f32_to_bf16(d->st, d->xbf, d->x, (int64_t)T * cols);
        HY_ASSERT((size_t)(3 * no) <= d->part_cap);
        hy_cuda_qmma(d->st, d->out, d->xbf, d->w, q->qt, rows, cols, T, p == P_SPLIT1 ? 1 : 3,
                     d->part);
    }
    HY_CUDA_CHECK(cudaStreamSynchronize(d->st));
    HY_CUDA_CHECK(cudaMemcpy(got, d->out, (size_t)no * sizeof(float), cudaMemcpyDeviceToHost));
    return holds;
}

static void qcase(struct dev *d, const struct ct_qtype *q, int64_t rows, int64_t cols, int T)
{
    void *hq = ct_make_qweight(&rng, q->dt, rows, cols, q->block); /* block scales 2^-5..2^5 */
    struct hy_weight hw = {q->dt, rows, cols, hq};
    const int64_t nx = (int64_t)T * cols, no = (int64_t)T * rows;
    const size_t qbytes = hy_cuda_q_bytes(q->qt, rows, cols);
    HY_ASSERT(qbytes <= d->w_cap && (size_t)nx <= d->x_cap && (size_t)no <= d->out_cap);
    float *x = malloc((size_t)nx * sizeof *x), *ref = malloc((size_t)no * sizeof *ref);
    float *got = malloc((size_t)no * sizeof *got), *again = malloc((size_t)no * sizeof *again);
    double *sabs = malloc((size_t)no * sizeof *sabs);
    void *packed = malloc(qbytes);
    HY_ASSERT(x && ref && got && again && sabs && packed);
    for (int64_t i = 0; i < nx; i++)
        x[i] = rng_unit(&rng);
    ct_reference(&hw, x, T, ref, sabs, NULL, NULL, 1 << 21);
    hy_cuda_q_repack(packed, hq, q->qt, rows, cols);
    HY_CUDA_CHECK(cudaMemcpy(d->w, packed, qbytes, cudaMemcpyHostToDevice));
    HY_CUDA_CHECK(cudaMemcpy(d->x, x, (size_t)nx * sizeof(float), cudaMemcpyHostToDevice));
    const bool fits = hy_cuda_qmma_fits(q->qt, rows, cols, d->w);
    const int qi = (int)(q - qtypes);
    int dev = 0, n_sm = 0;
    HY_CUDA_CHECK(cudaGetDevice(&dev));
    HY_CUDA_CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
    fprintf(stderr, "%s rows=%lld cols=%lld T=%d: %s (auto splits %d)\n", q->name, (long long)rows,
            (long long)cols, T, fits ? "tensor-core kernel" : "fallback",
            hy_cuda_qmma_splits(rows, cols, T, d->cbuf_cap, n_sm));
    for (int p = 0; p < NP; p++) {
        if ((p == P_FALLBACK) == fits) /* the kernel's paths, or the fallback alone */
            continue;
        char what[160];
        snprintf(what, sizeof what, "%s rows=%lld cols=%lld T=%d %s", q->name, (long long)rows,
                 (long long)cols, T, pnames[p]);
        bool holds = run_path(d, p, q, rows, cols, T, got);
        int bad = compare(what, got, ref, sabs, rows, no, (double)cols, &worst[qi][p]);
        CHECKF(bad == 0, "%s: %d of %lld outside the bound", what, bad, (long long)no);
        if (p == P_ENTRY || p == P_XCHUNK)
            CHECKF(holds == (p == P_ENTRY && (size_t)nx <= d->xbf_cap),
                   "%s: returned %d (xbf holds x)", what, holds);
        if (p == P_ENTRY) { /* the same call again: bitwise the same */
            run_path(d, p, q, rows, cols, T, again);
            CHECKF(memcmp(got, again, (size_t)no * sizeof *got) == 0, "%s: a second run differs",
                   what);
        }
    }
    free(hq);
    free(x);
    free(ref);
    free(got);
    free(again);
    free(sabs);
    free(packed);
}

int main(void)
{
    if (!hy_cuda_available()) {
        fprintf(stderr, "no CUDA device: skipping\n");
        return 77;
    }
    struct dev d = {0};
    d.w_cap = (size_t)64 << 20;
    d.x_cap = d.out_cap = (size_t)1 << 22;
    d.part_cap = d.cbuf_cap = (size_t)16 << 20;
    d.xbf_cap = (size_t)1 << 22;
    d.wbf_cap = (size_t)4 << 20;
    HY_CUDA_CHECK(cudaStreamCreate(&d.st));
    HY_CUBLAS_CHECK(cublasCreate(&d.blas));
    HY_CUBLAS_CHECK(cublasSetStream(d.blas, d.st));
    HY_CUDA_CHECK(cudaMalloc(&d.w, d.w_cap));
    HY_CUDA_CHECK(cudaMalloc((void **)&d.x, d.x_cap * sizeof(float)));
    HY_CUDA_CHECK(cudaMalloc((void **)&d.out, d.out_cap * sizeof(float)));
    HY_CUDA_CHECK(cudaMalloc((void **)&d.part, d.part_cap * sizeof(float)));
    d.cbuf = d.part; /* as the backend: one float32 scratch */
    HY_CUDA_CHECK(cudaMalloc((void **)&d.xbf, d.xbf_cap * sizeof(uint16_t)));
    HY_CUDA_CHECK(cudaMalloc((void **)&d.wbf, d.wbf_cap * sizeof(uint16_t)));
    /* rows, cols, T: tiles of 128 rows x 64 T x 128 cols; partial row and T tiles,
     * rows below one tile, K splits (few tiles), long K (14336), prefill-sized T */
    static const int shapes[][3] = {
        {128, 128, 9},
        {256, 512, 16},
        {200, 384, 33},
        {1024, 4096, 64},
        {1000, 1024, 100},
        {129, 2048, 256},
        {77, 1536, 64},
        {64, 14336, 40},
        {300, 512, 1000},
        {4096, 4096, 17},
        /* the fallback (cols % 128 != 0; Q8_0 and Q4_0 only) */
        {100, 96, 20},
        {130, 1056, 33},
    };
    for (int qi = 0; qi < NQ; qi++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            if (shapes[s][1] % qtypes[qi].block == 0)
                qcase(&d, &qtypes[qi], shapes[s][0], shapes[s][1], shapes[s][2]);
        fprintf(stderr, "%s: worst error/bound:", qtypes[qi].name);
        for (int p = 0; p < NP; p++)
            fprintf(stderr, " %s %.3g%s", pnames[p], worst[qi][p], p + 1 < NP ? "," : "\n");
    }
    cudaFree(d.w);
    cudaFree(d.x);
    cudaFree(d.out);
    cudaFree(d.part);
    cudaFree(d.xbf);
    cudaFree(d.wbf);
    cublasDestroy(d.blas);
    cudaStreamDestroy(d.st);
    return test_result();
}
