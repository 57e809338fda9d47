/* cuda_backend_ops_test.c: the weight ops of the CUDA backend from one table of cases, in
 * the manner of ggml's test-backend-ops: every weight type the backend takes (F32, F16,
 * BF16, Q8_0, Q4_0, Q4_G128, Q4_K, Q6_K through weight_upload; fp8 e4m3 codes with a scale
 * per tensor or per row through weight_upload_fp8, or per 128x128 block (HY_DTYPE_F8_B128,
 * fp8b.h, the last blocks of a row or column shorter) through weight_upload) x shapes x
 * token counts (a 1-, 8-, 64- and 256-row step among them) x x alignments
 * for matmul, and every dtype it keeps for embedding lookup, each through the backend's op
 * table against the plain C reference (cpu/ref.c). A new type or shape is a row of a table.
 * Weights are random, never zero (rows scaled over 2^-3..2^3; blocks of 32 columns over
 * 2^-2..2^2, for block-scaled fp8 blocks of 128 over 2^0..2^2), quantized on the host by
 * core's quantizers. The reference sums in
 * double over the weight as the device holds it: the quantized host bytes (the device
 * dequantizes each value exactly as the host), e4m3(code)·scale for fp8, or, for float
 * dtypes, the values read back after upload (a matrix is stored as bf16; the upload's
 * rounding is cuda_ops_test's business).
 * Bounds per output element, U = 2^-24, S' = Σ_c |x_c|·a_c with a_c = |w_c| (Q4_K:
 * |d·sc·q| + |dmin·m|, the two parts its GEMV sums apart; S' >= S = Σ_c |x_c w_c|), each
 * derived in the test named:
 *   Q8_0, Q4_0 and Q4_G128 at T <= 8 (the int8-activation GEMV, any x alignment):
 *     qmmvq.h's bound, the int8 rounding of x plus float32 roundings (ct_mmvq_bound;
 *     cuda_mmvq_test);
 *   other block dtypes at T <= 8, and fp8 at T <= 8 with cols % 16 == 0, x 16-byte aligned (the
 *     register GEMVs, float32 x and sums of exactly dequantized weights): (cols + 32)·U·S'
 *     (cuda_qmatmul_test, cuda_kquant_test, cuda_fp8_test; fp8b.h for block scales);
 *   anything else, (2^-8 + (cols + 32)·U)·S': the union of the GEMV bound and the bound of
 *     the paths that round x and w to bf16, (2^-8 + (cols + 4)·U)·S (the tensor-core
 *     kernel and the chunked dequantize + cuBLAS: cuda_qmma_test, cuda_qmatmul_test,
 *     cuda_fp8_test's bf16 activations; bf16 weights through cuBLAS or the bf16 GEMV:
 *     cuda_ops_test), so a change of which path a shape takes does not fail the table.
 * Outputs are poisoned with NaN first, so an unwritten element fails. Embedding lookup: the
 * same bits as hy_ref_embed. Prints the worst error/bound per type. Exits 77 without a
 * CUDA device. */
#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda.h"
#include "test.h"
#include "backend/cuda/cuda_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The weight types: a dtype for weight_upload, fp8 codes with a scale per tensor or per
 * row for weight_upload_fp8, or block-scaled fp8 for weight_upload (e4m3 decoded exactly;
 * activations bf16 above 8 rows, the backend's default). */
struct mm_type {
    const char *name;
    enum hy_dtype dt;
    int fp8; /* 0: weight_upload; 1: fp8, one scale; 2: fp8, a scale a row; 3: F8_B128 */
};
static const struct mm_type mm_types[] = {
    {"F32", HY_DTYPE_F32, 0},         {"F16", HY_DTYPE_F16, 0},
    {"BF16", HY_DTYPE_BF16, 0},       {"Q8_0", HY_DTYPE_Q8_0, 0},
    {"Q4_0", HY_DTYPE_Q4_0, 0},       {"Q4_G128", HY_DTYPE_Q4_G128, 0},
    {"Q4_K", HY_DTYPE_Q4_K, 0},       {"Q6_K", HY_DTYPE_Q6_K, 0},
    {"F8 tensor", HY_DTYPE_F8_E4M3, 1}, {"F8 rows", HY_DTYPE_F8_E4M3, 2},
    {"F8 blocks", HY_DTYPE_F8_B128, 3},
};
#define N_MM (sizeof mm_types / sizeof mm_types[0])

/* rows x cols; a dtype takes the shapes whose cols are a multiple of its block (F8_B128:
 * of 16). Rows off a multiple of 8 (the padded float matrices, the chunked path's output
 * copy), cols that are not a multiple of 128 (no tensor-core kernel; F8_B128's short last
 * column block) or of 8 (no bf16 GEMV), 300 x 208 (short last blocks both ways). */
static const int64_t mm_shapes[][2] = {{77, 256}, {256, 768}, {136, 1024},
                                       {40, 96},  {33, 999}, {300, 208}};
/* token counts: the GEMVs (1..8), the tensor-core kernel / chunked path / cuBLAS above */
static const int mm_T[] = {1, 2, 5, 8, 9, 33, 64, 70, 256};
#define MAX_T 256
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

/* The weight of type ti uploaded (*dev) and the host weight the reference reads (*hw; its
 * buffers in *own, to free). */
struct mm_weight {
    struct hy_weight dev, hw;
    void *own[2];
    struct ct_fp8w f8;
};

static void mm_weight_make(struct mm_weight *m, struct hy_backend *be, struct rng *rg,
                           const struct mm_type *ty, int64_t rows, int64_t cols)
{
    struct hy_err err = {{0}};
    memset(m, 0, sizeof *m);
    if (ty->fp8 == 3) { /* the host form weight_upload takes: codes and block scales */
        ct_fp8w_make_blocks(&m->f8, rg, rows, cols, 128, 128);
        m->dev = (struct hy_weight){HY_DTYPE_F8_B128, rows, cols, &m->f8.src};
        CHECKF(be->i->weight_upload(be, &m->dev, &err) == HY_OK && m->dev.dtype == ty->dt,
               "%s %lldx%lld: %s", ty->name, (long long)rows, (long long)cols, err.msg);
        m->hw = (struct hy_weight){HY_DTYPE_F32, rows, cols, m->f8.deq};
        return;
    }
    if (ty->fp8) {
        ct_fp8w_make(&m->f8, rg, rows, cols, ty->fp8 == 2);
        m->dev = (struct hy_weight){HY_DTYPE_F8_E4M3, rows, cols, NULL};
        CHECKF(be->i->weight_upload_fp8(be, &m->dev, m->f8.codes, m->f8.scale, m->f8.n_scale,
                                        0.0f, &err) == HY_OK,
               "%s %lldx%lld: %s", ty->name, (long long)rows, (long long)cols, err.msg);
        m->hw = (struct hy_weight){HY_DTYPE_F32, rows, cols, m->f8.deq};
        return;
    }
    void *hq = ct_make_qweight(rg, ty->dt, rows, cols, 32);
    m->dev = (struct hy_weight){ty->dt, rows, cols, hq};
    CHECKF(be->i->weight_upload(be, &m->dev, &err) == HY_OK, "%s %lldx%lld: %s", ty->name,
           (long long)rows, (long long)cols, err.msg);
    void *back = device_values(be, &m->dev);
    m->hw = (struct hy_weight){back ? m->dev.dtype : ty->dt, rows, cols, back ? back : hq};
    m->own[0] = hq, m->own[1] = back;
}

static void mm_weight_free(struct mm_weight *m, struct hy_backend *be, const struct mm_type *ty)
{
    be->i->free(be, (void *)m->dev.data);
    free(m->own[0]);
    free(m->own[1]);
    if (ty->fp8)
        ct_fp8w_free(&m->f8);
}

/* Whether a call takes a register GEMV for sure: block dtypes at T <= 8 and fp8 at T <= 8
 * with cols % 16 == 0, x 16-byte aligned (qmatmul.cu, fp8mm.cu, fp8b.cu). */
static bool takes_gemv(const struct mm_type *ty, int64_t cols, int T, int xoff)
{
    if (T > 8 || xoff != 0)
        return false;
    return ty->fp8 ? cols % 16 == 0 : hy_dtype_block_elems(ty->dt) > 1;
}

/* Whether a call takes the int8-activation GEMV (qmmvq.h): Q8_0, Q4_0, Q4_G128 at T <= 8,
 * whatever x's alignment (cuda.c). */
static bool takes_mmvq(const struct mm_type *ty, int T)
{
    return T <= 8 && !ty->fp8 &&
           (ty->dt == HY_DTYPE_Q8_0 || ty->dt == HY_DTYPE_Q4_0 || ty->dt == HY_DTYPE_Q4_G128);
}

/* One (type, shape): the weight uploaded once, the reference for MAX_T rows of x once, then
 * every (T, xoff) of the table against prefixes of it. */
static void matmul_shape(struct hy_backend *be, struct rng *rg, int ti, int64_t rows,
                         int64_t cols)
{
    const struct mm_type *ty = &mm_types[ti];
    struct mm_weight m;
    mm_weight_make(&m, be, rg, ty, rows, cols);
    const int64_t n = (int64_t)MAX_T * rows;
    float *x = malloc((size_t)(MAX_T * cols) * sizeof *x);
    float *ref = malloc((size_t)n * sizeof *ref), *got = malloc((size_t)n * sizeof *got);
    double *s = malloc((size_t)n * sizeof *s), *sp = malloc((size_t)n * sizeof *sp);
    HY_ASSERT(x && ref && got && s && sp);
    for (int64_t i = 0; i < MAX_T * cols; i++)
        x[i] = rng_unit(rg);
    ct_reference(&m.hw, x, MAX_T, ref, s, sp, ct_abs_parts, 1 << 20);
    double *mq = NULL; /* qmmvq.h's bound: the int8 term, then the sum */
    if (takes_mmvq(ty, 1)) {
        mq = malloc((size_t)n * sizeof *mq);
        HY_ASSERT(mq);
        ct_mmvq_bound(&m.hw, x, MAX_T, mq, s); /* s: the float32 term */
        for (int64_t i = 0; i < n; i++)
            mq[i] += s[i];
    }
    for (size_t k = 0; k < sizeof mm_T / sizeof mm_T[0]; k++)
        for (size_t oi = 0; oi < sizeof mm_xoff / sizeof mm_xoff[0]; oi++) {
            const int T = mm_T[k], xoff = mm_xoff[oi];
            char what[96];
            snprintf(what, sizeof what, "matmul %s %lldx%lld T=%d xoff=%d", ty->name,
                     (long long)rows, (long long)cols, T, xoff);
            ct_backend_matmul(be, &m.dev, x, T, xoff, got);
            const bool gemv = takes_gemv(ty, cols, T, xoff), mmvq = mq && takes_mmvq(ty, T);
            double w = 0;
            int bad = mmvq ? ct_compare(what, got, ref, mq, rows, (int64_t)T * rows, 1.0, 0.0, &w)
                           : ct_compare(what, got, ref, sp, rows, (int64_t)T * rows,
                                        gemv ? 0 : 0x1p-8, (double)(cols + 32), &w);
            CHECKF(bad == 0, "%s: %d of %lld outside the bound (worst error/bound %.3g)", what,
                   bad, (long long)((int64_t)T * rows), w);
            worst[ti] = fmax(worst[ti], w);
            cases++;
        }
    mm_weight_free(&m, be, ty);
    free(mq);
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
    for (size_t ti = 0; ti < N_MM; ti++)
        for (size_t si = 0; si < sizeof mm_shapes / sizeof mm_shapes[0]; si++)
            if (mm_shapes[si][1] % hy_dtype_block_elems(mm_types[ti].dt) == 0 &&
                (mm_types[ti].fp8 != 3 || mm_shapes[si][1] % 16 == 0))
                matmul_shape(be, &rg, (int)ti, mm_shapes[si][0], mm_shapes[si][1]);
    for (size_t di = 0; di < sizeof embed_dtypes / sizeof embed_dtypes[0]; di++) {
        ct_embed_case(be, &rg, embed_dtypes[di], 256);
        cases++;
    }
    be->i->destroy(be);
    fprintf(stderr, "%d cases; worst error/bound per type:", cases);
    for (size_t ti = 0; ti < N_MM; ti++)
        fprintf(stderr, " %s %.3g", mm_types[ti].name, worst[ti]);
    fprintf(stderr, "\n");
    return test_result();
}
