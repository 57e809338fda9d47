/* cuda_mmvq_test.c: the int8-activation decode GEMV (qmmvq.h) for Q8_0, Q4_0 and Q4_G128
 * against the plain C reference, T = 1..8, several shapes with row tails (rows not a
 * multiple of the block's R rows), short and long rows, every R the kernel takes.
 * Weights random (row and block scales spread over 2^-5..2^5, never zero, ct_make_qweight),
 * x uniform in [-1, 1) with blocks of 32 scaled by 2^-6..2^6 and, in some cases, one block
 * of zeros (its scale is 0). Three checks a case:
 *  1. the quantized activations are exactly those of the host model of qmmvq.h (the same
 *     float32 operations: d = max|x|/127, q = rint(x·(127/max|x|)), d·Σq a half-block);
 *  2. out against Σ_c w·(d q) in double (the kernel's arithmetic apart from the float32
 *     roundings): within (cols/4 + 64)·2^-24·Σ_c |d_w|·24·(|x| + max|x|_b/254);
 *  3. out against the exact Σ_c w·x (double, ct_reference): within qmmvq.h's bound, the
 *     int8 rounding Σ_c |w_c|·max|x|_b/254 plus that float32 term (ct_mmvq_bound).
 * Outputs are poisoned with NaN first, so an unwritten element fails. Prints the worst
 * error/bound of checks 2 and 3 per type, and the typical size of the int8 error against
 * the product's magnitude. Exits 77 when no CUDA device is present. */
#include "backend/cuda/cuda.h"
#include "backend/cuda/qmatmul.h"
#include "backend/cuda/qmmvq.h"
#include "core/quant.h"
#include "test.h"
#include "backend/cuda/cuda_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct rng rng = {0x2545f4914f6cdd1dull};

static const struct ct_qtype qtypes[] = {CT_QTYPE(Q8_0, 32), CT_QTYPE(Q4_0, 32),
                                         CT_QTYPE(Q4_G128, 128)};
#define NQ 3

static double worst_hat[NQ], worst_exact[NQ], rel_err[NQ];
static int n_rel[NQ];

/* The host model of the quantization: q [T, cols], d [T, cols/32], s [T, cols/16]. */
static void host_quantize(const float *x, int T, int64_t cols, int8_t *q, float *d, float *s)
{
    for (int64_t b = 0; b < T * cols / 32; b++) {
        const float *xb = x + b * 32;
        float m = 0;
        for (int j = 0; j < 32; j++)
            m = fmaxf(m, fabsf(xb[j]));
        const float dq = m / 127.0f, id = m > 0.0f ? 127.0f / m : 0.0f;
        int sum[2] = {0, 0};
        for (int j = 0; j < 32; j++) {
            const float p = xb[j] * id;
            q[b * 32 + j] = (int8_t)lrintf(p);
            sum[j / 16] += q[b * 32 + j];
        }
        d[b] = dq;
        s[2 * b] = dq * (float)sum[0];
        s[2 * b + 1] = dq * (float)sum[1];
    }
}

static void run_case(const struct ct_qtype *q, int64_t rows, int64_t cols, int T, int R,
                     bool zero_block)
{
    void *hq = ct_make_qweight(&rng, q->dt, rows, cols, q->block);
    struct hy_weight hw = {q->dt, rows, cols, hq};
    const int64_t nx = (int64_t)T * cols, no = (int64_t)T * rows;
    float *x = malloc((size_t)nx * sizeof *x), *xh = malloc((size_t)nx * sizeof *xh);
    float *ref = malloc((size_t)no * sizeof *ref), *refh = malloc((size_t)no * sizeof *refh);
    float *got = malloc((size_t)no * sizeof *got);
    double *sabs = malloc((size_t)no * sizeof *sabs), *bound = malloc((size_t)no * sizeof *bound);
    double *fterm = malloc((size_t)no * sizeof *fterm);
    const size_t xbytes = hy_cuda_mmvq_x_bytes(T, cols), qbytes = hy_cuda_q_bytes(q->qt, rows, cols);
    unsigned char *packed = malloc(qbytes), *xq_got = malloc(xbytes), *xq_want = calloc(1, xbytes);
    HY_ASSERT(x && xh && ref && refh && got && sabs && bound && fterm && packed && xq_got && xq_want);
    for (int64_t i = 0; i < nx; i++)
        x[i] = ldexpf(rng_unit(&rng), (int)((i / 32 * 7 + i / cols) % 13) - 6);
    if (zero_block)
        memset(x + (nx / 64) * 32, 0, 32 * sizeof *x); /* one block of 32 zeros */
    hy_cuda_q_repack(packed, hq, q->qt, rows, cols);

    /* the host model of xq, laid out as qmmvq.h says */
    const size_t nq = ((size_t)nx + 15) & ~(size_t)15;
    const size_t nd = ((size_t)(nx / 32) * 4 + 15) & ~(size_t)15;
    host_quantize(x, T, cols, (int8_t *)xq_want, (float *)(xq_want + nq),
                  (float *)(xq_want + nq + nd));

    cudaStream_t st;
    void *dw, *dx, *dxq, *dout;
    HY_CUDA_CHECK(cudaStreamCreate(&st));
    HY_CUDA_CHECK(cudaMalloc(&dw, qbytes));
    HY_CUDA_CHECK(cudaMalloc(&dx, (size_t)nx * sizeof(float)));
    HY_CUDA_CHECK(cudaMalloc(&dxq, xbytes));
    HY_CUDA_CHECK(cudaMalloc(&dout, (size_t)no * sizeof(float)));
    for (int64_t i = 0; i < no; i++)
        got[i] = NAN;
    HY_CUDA_CHECK(cudaMemcpy(dw, packed, qbytes, cudaMemcpyHostToDevice));
    HY_CUDA_CHECK(cudaMemcpy(dx, x, (size_t)nx * sizeof(float), cudaMemcpyHostToDevice));
    HY_CUDA_CHECK(cudaMemcpy(dout, got, (size_t)no * sizeof(float), cudaMemcpyHostToDevice));
    HY_CUDA_CHECK(cudaMemcpy(dxq, xq_want, xbytes, cudaMemcpyHostToDevice)); /* gaps as host */
    hy_cuda_mmvq_quantize(st, dxq, dx, T, cols);
    hy_cuda_mmvq(st, dout, dxq, dw, q->qt, rows, cols, T, R);
    HY_CUDA_CHECK(cudaStreamSynchronize(st));
    HY_CUDA_CHECK(cudaMemcpy(got, dout, (size_t)no * sizeof(float), cudaMemcpyDeviceToHost));
    HY_CUDA_CHECK(cudaMemcpy(xq_got, dxq, xbytes, cudaMemcpyDeviceToHost));

    char what[160];
    snprintf(what, sizeof what, "%s rows=%lld cols=%lld T=%d R=%d%s", q->name, (long long)rows,
             (long long)cols, T, R, zero_block ? " (a zero block)" : "");
    int diff = 0;
    for (size_t i = 0; i < xbytes; i++)
        diff += xq_got[i] != xq_want[i];
    CHECKF(diff == 0, "%s: %d bytes of the quantized activations differ from the host model",
           what, diff);

    /* 2: against the product with the quantized x */
    const int8_t *hq8 = (const int8_t *)xq_want;
    const float *hd = (const float *)(xq_want + nq);
    for (int64_t i = 0; i < nx; i++)
        xh[i] = hd[i / 32] * (float)hq8[i];
    ct_reference(&hw, xh, T, refh, sabs, NULL, NULL, 0);
    ct_mmvq_bound(&hw, x, T, bound, fterm); /* bound: the int8 term, for now */
    for (int64_t i = 0; i < no; i++)
        bound[i] += fterm[i];
    const int qi = (int)(q - qtypes);
    double wl;
    int bad = ct_compare(what, got, refh, fterm, rows, no, 1.0, 0.0, &wl);
    worst_hat[qi] = fmax(worst_hat[qi], wl);
    CHECKF(bad == 0, "%s: %d of %lld outside the float32 bound of the quantized-x product", what,
           bad, (long long)no);

    /* 3: against the exact product */
    ct_reference(&hw, x, T, ref, sabs, NULL, NULL, 0);
    bad = ct_compare(what, got, ref, bound, rows, no, 1.0, 0.0, &wl);
    worst_exact[qi] = fmax(worst_exact[qi], wl);
    CHECKF(bad == 0, "%s: %d of %lld outside qmmvq.h's bound", what, bad, (long long)no);
    for (int64_t i = 0; i < no; i++) {
        rel_err[qi] += fabs((double)got[i] - ref[i]) / sabs[i];
        n_rel[qi]++;
    }

    cudaFree(dw);
    cudaFree(dx);
    cudaFree(dxq);
    cudaFree(dout);
    cudaStreamDestroy(st);
    free(hq);
    free(x);
    free(xh);
    free(ref);
    free(refh);
    free(got);
    free(sabs);
    free(bound);
    free(fterm);
    free(packed);
    free(xq_got);
    free(xq_want);
}

int main(void)
{
    if (!hy_cuda_available()) {
        fprintf(stderr, "no CUDA device: skipping\n");
        return 77;
    }
    HY_CUDA_CHECK(cudaSetDevice(0));
    CHECK(!hy_cuda_mmvq_fits(HY_CUDA_Q4_K, 8, 256, 1, NULL));
    CHECK(!hy_cuda_mmvq_fits(HY_CUDA_Q8_0, 8, 256, 9, NULL));
    CHECK(!hy_cuda_mmvq_fits(HY_CUDA_Q8_0, 8, 256, 0, NULL));
    CHECK(!hy_cuda_mmvq_fits(HY_CUDA_Q4_G128, 8, 96, 1, NULL));
    CHECK(!hy_cuda_mmvq_fits(HY_CUDA_Q8_0, 8, (int64_t)HY_CUDA_MMVQ_MAX_COLS + 32, 1, NULL));
    CHECK(!hy_cuda_mmvq_fits(HY_CUDA_Q8_0, 8, 256, 1, (void *)(uintptr_t)8));
    CHECK(hy_cuda_mmvq_fits(HY_CUDA_Q4_G128, 8, 256, 8, NULL));
    /* rows, cols, T, R (0: the default) */
    static const int shapes[][4] = {
        {1, 32, 1, 0},    {3, 96, 2, 0},    {37, 256, 3, 0},  {9, 896, 7, 0},
        {17, 128, 4, 2},  {33, 640, 5, 8},  {64, 384, 6, 4},  {8, 1024, 8, 0},
        {1000, 4096, 1, 0}, {515, 4096, 2, 2}, {257, 4096, 4, 8}, {130, 4096, 8, 0},
        {301, 14336, 3, 0}, {77, 14336, 1, 4}, {1024, 4096, 8, 8}, {5, 2048, 1, 0},
    };
    for (int qi = 0; qi < NQ; qi++) {
        const struct ct_qtype *q = &qtypes[qi];
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            if (shapes[s][1] % q->block)
                continue;
            run_case(q, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], s % 3 == 1);
        }
        fprintf(stderr, "%s: worst error/bound: against the quantized-x product %.3g, against "
                "the exact product %.3g; mean |error| / Σ|x w| %.3g\n", q->name, worst_hat[qi],
                worst_exact[qi], rel_err[qi] / (n_rel[qi] ? n_rel[qi] : 1));
    }
    return test_result();
}
