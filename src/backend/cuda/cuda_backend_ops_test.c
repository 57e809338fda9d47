/* cuda_backend_ops_test.c: the weight ops of the CUDA backend from one table of cases, in
 * the manner of ggml's test-backend-ops: every weight dtype the backend takes (F32, F16,
 * BF16, Q8_0, Q4_0, Q4_G128, Q4_K, Q6_K) x shapes x token counts x x alignments for
 * matmul, and every dtype it keeps for embedding lookup, each through the backend's op table
 * against the plain C reference (cpu/ref.c). A new dtype or shape is a row of a table.
 * Weights are random, never zero, quantized on the host by core's quantizers (rows scaled
 * over 2^-3..2^3, blocks of 32 columns over 2^-2..2^2). The reference sums in double over
 * the weight as the device holds it: the quantized host bytes (the device dequantizes each
 * value exactly as the host) or, for float dtypes, the values read back after upload (a
 * matrix is stored as bf16; the upload's rounding is cuda_ops_test's business).
 * Bounds per output element, U = 2^-24, S' = Σ_c |x_c|·a_c with a_c = |w_c| (Q4_K:
 * |d·sc·q| + |dmin·m|, the two parts its GEMV sums apart; S' >= S = Σ_c |x_c w_c|), each
 * derived in the test named:
 *   block dtypes, T <= 8 with x 16-byte aligned (the register GEMVs, float32 x and sums of
 *     exactly dequantized weights): (cols + 32)·U·S' (cuda_qmatmul_test, cuda_kquant_test);
 *   anything else, (2^-8 + (cols + 32)·U)·S': the union of the GEMV bound and the bound of
 *     the paths that round x and w to bf16, (2^-8 + (cols + 4)·U)·S (the tensor-core
 *     kernel and the chunked dequantize + cuBLAS: cuda_qmma_test, cuda_qmatmul_test; bf16
 *     weights through cuBLAS or the bf16 GEMV: cuda_ops_test), so a change of which path
 *     a shape takes does not fail the table.
 * Outputs are poisoned with NaN first, so an unwritten element fails. Embedding lookup: the
 * same bits as hy_ref_embed. Prints the worst error/bound per dtype. Exits 77 without a
 * CUDA device. */
#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda.h"
#include "test.h"
#include "backend/cuda/cuda_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const enum hy_dtype mm_dtypes[] = {HY_DTYPE_F32,  HY_DTYPE_F16,     HY_DTYPE_BF16,
                                          HY_DTYPE_Q8_0, HY_DTYPE_Q4_0,    HY_DTYPE_Q4_G128,
                                          HY_DTYPE_Q4_K, HY_DTYPE_Q6_K};
#define N_MM (sizeof mm_dtypes / sizeof mm_dtypes[0])

/* rows x cols; a dtype takes the shapes whose cols are a multiple of its block. Rows off a
 * multiple of 8 (the padded float matrices, the chunked path's output copy), cols that are
 * not a multiple of 128 (no tensor-core kernel) or of 8 (no bf16 GEMV). */
static const int64_t mm_shapes[][2] = {{77, 256}, {256, 768}, {136, 1024}, {40, 96}, {33, 999}};
/* token counts: the GEMVs (1..8), the tensor-core kernel / chunked path / cuBLAS above */
static const int mm_T[] = {1, 2, 5, 8, 9, 33, 70};
#define MAX_T 70
/* x at the start of an allocation (16-byte aligned) or one float past it (not aligned:
 * the quantized GEMVs are then not taken) */
static const int mm_xoff[] = {0, 1};

static const enum hy_dtype embed_dtypes[] = {HY_DTYPE_BF16, HY_DTYPE_Q8_0, HY_DTYPE_Q4_0,
                                             HY_DTYPE_Q4_G128, HY_DTYPE_Q4_K, HY_DTYPE_Q6_K};

static double worst[N_MM];
static int cases;

/* The values the device holds of a float weight (the upload stores a matrix as bf16), read
 * back (malloc'ed; dtype as the upload set it); NULL for a block dtype, which the device
 * keeps as the host bytes say. */
static void *device_values(struct hy_backend *be, const struct hy_weight *dev)
{
    if (hy_dtype_block_elems(dev->dtype) > 1)
        return NULL;
    size_t bytes = hy_dtype_row_bytes(dev->dtype, dev->cols) * (size_t)dev->rows;
    void *h = malloc(bytes);
    HY_ASSERT(h);
    be->i->download(be, h, dev->data, bytes);
    return h;
}

/* One (dtype, shape): the weight uploaded once, the reference for MAX_T rows of x once, then
 * every (T, xoff) of the table against prefixes of it. */
static void matmul_shape(struct hy_backend *be, struct rng *rg, int di, int64_t rows,
                         int64_t cols)
{
    const enum hy_dtype dt = mm_dtypes[di];
    struct hy_err err = {{0}};
    void *hq = ct_make_qweight(rg, dt, rows, cols, 32);
    struct hy_weight dev = {dt, rows, cols, hq};
    CHECKF(be->i->weight_upload(be, &dev, &err) == HY_OK, "%s %lldx%lld: %s", hy_dtype_name(dt),
           (long long)rows, (long long)cols, err.msg);
    void *back = device_values(be, &dev);
    const struct hy_weight hw = {back ? dev.dtype : dt, rows, cols, back ? back : hq};
    const int64_t n = (int64_t)MAX_T * rows;
    float *x = malloc((size_t)(MAX_T * cols) * sizeof *x);
    float *ref = malloc((size_t)n * sizeof *ref), *got = malloc((size_t)n * sizeof *got);
    double *s = malloc((size_t)n * sizeof *s), *sp = malloc((size_t)n * sizeof *sp);
    HY_ASSERT(x && ref && got && s && sp);
    for (int64_t i = 0; i < MAX_T * cols; i++)
        x[i] = rng_unit(rg);
    ct_reference(&hw, x, MAX_T, ref, s, sp, ct_abs_parts, 1 << 20);
    for (size_t ti = 0; ti < sizeof mm_T / sizeof mm_T[0]; ti++)
        for (size_t oi = 0; oi < sizeof mm_xoff / sizeof mm_xoff[0]; oi++) {
            const int T = mm_T[ti];
            char what[96];
            snprintf(what, sizeof what, "matmul %s %lldx%lld T=%d xoff=%d", hy_dtype_name(dt),
                     (long long)rows, (long long)cols, T, mm_xoff[oi]);
            ct_backend_matmul(be, &dev, x, T, mm_xoff[oi], got);
            const bool gemv = hy_dtype_block_elems(dt) > 1 && T <= 8 && mm_xoff[oi] == 0;
            double w = 0;
            int bad = ct_compare(what, got, ref, sp, rows, (int64_t)T * rows, gemv ? 0 : 0x1p-8,
                                 (double)(cols + 32), &w);
            CHECKF(bad == 0, "%s: %d of %lld outside the bound (worst error/bound %.3g)", what,
                   bad, (long long)((int64_t)T * rows), w);
            worst[di] = fmax(worst[di], w);
            cases++;
        }
    be->i->free(be, (void *)dev.data);
    free(back);
    free(hq);
    free(x);
    free(ref);
    free(got);
    free(s);
    free(sp);
}

int main(void)
{
    if (!hy_cuda_available()) {
        fprintf(stderr, "no CUDA device: skipping\n");
        return 77;
    }
    struct rng rg = {0x6a09e667f3bcc909ull};
    struct hy_backend *be = NULL;
    struct hy_err err = {{0}};
    CHECKF(hy_cuda_backend_create(&be, 0, &err) == HY_OK, "%s", err.msg);
    if (!be)
        return test_result();
    fprintf(stderr, "device: %s\n", hy_cuda_backend_device_name(be));
    for (size_t di = 0; di < N_MM; di++)
        for (size_t si = 0; si < sizeof mm_shapes / sizeof mm_shapes[0]; si++)
            if (mm_shapes[si][1] % hy_dtype_block_elems(mm_dtypes[di]) == 0)
                matmul_shape(be, &rg, (int)di, mm_shapes[si][0], mm_shapes[si][1]);
    for (size_t di = 0; di < sizeof embed_dtypes / sizeof embed_dtypes[0]; di++) {
        ct_embed_case(be, &rg, embed_dtypes[di], 256);
        cases++;
    }
    be->i->destroy(be);
    fprintf(stderr, "%d cases; worst error/bound per dtype:", cases);
    for (size_t di = 0; di < N_MM; di++)
        fprintf(stderr, " %s %.3g", hy_dtype_name(mm_dtypes[di]), worst[di]);
    fprintf(stderr, "\n");
    return test_result();
}
