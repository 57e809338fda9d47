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
 *   T <= 8 through the backend (rows > 1): the int8-activation GEMV (qmmvq.h), whose bound
 *     adds the int8 rounding of x: ct_mmvq_bound;
 *   T > 8, or x not 16-byte aligned (chunked dequantize + cuBLAS): (2^-8 + (cols+4)·U)·S —
 *     x and the dequantized w each rounded to bf16 (2^-9 relative each), float32 sums (as
 *     cuda_ops_test's matmul bound).
 * Outputs are poisoned with NaN first, so an unwritten element fails. The row-chunking of
 * the large-T path is exercised by calling the launcher with tiny scratch buffers (a few
 * rows of W, a few rows of x a chunk; rows % 8 != 0 goes through the aligned output
 * scratch). Embedding lookup of quantized tables must be exact (the same bits). Then the
 * models: the tiny checkpoints with --quant q8, q4 and q4_0 on the GPU (decode matmuls
 * through the int8-activation GEMV; a Q8_0 embedding table for the 4-bit types) against
 * the same on the CPU reference backend (float32 activations, the stored table): greedy
 * ids for 24 steps equal (but at near-ties, ct_check_greedy) and logits within 4e-2 of
 * max |logit|: twice cuda_model_test's bf16 limit, as the int8 rounding of an activation
 * (up to 1/254 of its block's largest |x|, qmmvq.h) is twice bf16's 2^-9 for a block's
 * largest elements and more, relative, for its smaller ones, at every matmul input
 * (measured worst 0.031, tiny-mha-sharded q4_0; 0.016-0.027 for most).
 * Prints the worst error/bound per type and path. Exits 77 when no CUDA device is present. */
#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda.h"
#include "backend/cuda/qmatmul.h"
#include "core/quant.h"
#include "model/hunyuan.h"
#include "test.h"
#include "cuda/cuda_model_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct rng rng = {0x9e3779b97f4a7c15ull};

static const struct ct_qtype qtypes[] = {CT_QTYPE(Q8_0, 32), CT_QTYPE(Q4_G128, 128),
                                         CT_QTYPE(Q4_0, 32)};
#define NQ 3

/* worst error/bound per type: [0] GEMV, [1] chunked, [2] the backend's int8 GEMV */
static double worst[NQ][3];

/* One case through the backend's weight_upload and matmul; xoff floats of misalignment. */
static void backend_case(struct hy_backend *be, const struct ct_qtype *q, int64_t rows,
                         int64_t cols, int T, int xoff)
{
    struct hy_err err = {{0}};
    void *hq = ct_make_qweight(&rng, q->dt, rows, cols, 0);
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
        x[i] = rng_unit(&rng);
    ct_reference(&hw, x, T, ref, sabs, NULL, NULL, 1 << 20);
    ct_backend_matmul(be, &dw, x, T, xoff, got);
    const bool mmvq = T <= 8 && rows > 1; /* the backend's int8-activation GEMV */
    const bool gemv = T <= 8 && xoff % 4 == 0;
    const int qi = (int)(q - qtypes);
    char what[128];
    snprintf(what, sizeof what, "%s rows=%lld cols=%lld T=%d xoff=%d (%s)", q->name,
             (long long)rows, (long long)cols, T, xoff,
             mmvq ? "mmvq" : gemv ? "gemv" : "chunked");
    double wl;
    int bad;
    if (mmvq) {
        double *quant = malloc((size_t)no * sizeof *quant);
        HY_ASSERT(quant);
        ct_mmvq_bound(&hw, x, T, quant, sabs); /* sabs: the float32 term */
        for (int64_t i = 0; i < no; i++)
            sabs[i] += quant[i];
        bad = ct_compare(what, got, ref, sabs, rows, no, 1.0, 0.0, &wl);
        worst[qi][2] = fmax(worst[qi][2], wl);
        free(quant);
    } else {
        bad = ct_compare(what, got, ref, sabs, rows, no, gemv ? 0.0 : 1.0 / 256,
                         gemv ? (double)cols + 32 : (double)cols + 4, &wl);
        worst[qi][gemv ? 0 : 1] = fmax(worst[qi][gemv ? 0 : 1], wl);
    }
    CHECKF(bad == 0, "%s: %d of %lld outside the bound", what, bad, (long long)no);
    be->i->free(be, (void *)dw.data);
    free(hq);
    free(x);
    free(ref);
    free(got);
    free(sabs);
}

/* Through the launcher hy_cuda_matmul_q with its own stream, handle and (tiny) scratch:
 * the chunked path's row and x chunking, and one-row matrices through the GEMV. */
static void chunk_case(const struct ct_qtype *q, int64_t rows, int64_t cols, int T,
                       size_t xbf_cap, size_t wbf_cap, size_t cbuf_cap)
{
    void *hq = ct_make_qweight(&rng, q->dt, rows, cols, 0);
    struct hy_weight hw = {q->dt, rows, cols, hq};
    const int64_t nx = (int64_t)T * cols, no = (int64_t)T * rows;
    float *x = malloc((size_t)nx * sizeof *x), *ref = malloc((size_t)no * sizeof *ref);
    float *got = malloc((size_t)no * sizeof *got);
    double *sabs = malloc((size_t)no * sizeof *sabs);
    size_t qbytes = hy_cuda_q_bytes(q->qt, rows, cols);
    void *packed = malloc(qbytes);
    for (int64_t i = 0; i < nx; i++)
        x[i] = rng_unit(&rng);
    ct_reference(&hw, x, T, ref, sabs, NULL, NULL, 1 << 20);
    hy_cuda_q_repack(packed, hq, q->qt, rows, cols);
    bool holds = ct_matmul_q(packed, qbytes, q->qt, rows, cols, T, x, got, xbf_cap, wbf_cap,
                             cbuf_cap);
    char what[160];
    const bool gemv = T <= 8; /* cudaMalloc'd x: aligned */
    const int qi = (int)(q - qtypes);
    snprintf(what, sizeof what, "%s rows=%lld cols=%lld T=%d scratch x %zu w %zu c %zu (%s)",
             q->name, (long long)rows, (long long)cols, T, xbf_cap, wbf_cap, cbuf_cap,
             gemv ? "gemv" : "chunked");
    double wl;
    int bad = ct_compare(what, got, ref, sabs, rows, no, gemv ? 0.0 : 1.0 / 256,
                         gemv ? (double)cols + 32 : (double)cols + 4, &wl);
    worst[qi][gemv ? 0 : 1] = fmax(worst[qi][gemv ? 0 : 1], wl);
    CHECKF(bad == 0, "%s: %d of %lld outside the bound", what, bad, (long long)no);
    CHECKF(holds == (T > 8 && (size_t)nx <= xbf_cap && (rows % 8 == 0 || (size_t)T * 8 <= cbuf_cap)),
           "%s: returned %d (xbf holds x)", what, holds);
    free(packed);
    free(hq);
    free(x);
    free(ref);
    free(got);
    free(sabs);
}

#define STEPS 24
#define NP 9
static const int32_t prompt[NP] = {305, 3, 77, 250, 12, 319, 8, 8, 130};

static void model_case(struct hy_backend *cpu, struct hy_backend *gpu, const char *name,
                       enum hy_dtype quant)
{
    char dir[4096], rel[64];
    struct hy_model *mc = NULL, *mg = NULL;
    snprintf(rel, sizeof rel, "tests/data/%s", name);
    test_path(dir, sizeof dir, "HYMT_SRC", rel);
    if (!ct_load_pair(cpu, gpu, dir, quant, &mc, &mg))
        goto out;
    CHECKF(mg->layers[0].wq.dtype == mc->layers[0].wq.dtype &&
           mg->layers[0].w_down.dtype == mc->layers[0].w_down.dtype &&
           mg->lm_head.dtype == mc->lm_head.dtype,
           "quantized dtypes on the GPU (wq %s, w_down %s, head %s) as on the CPU",
           hy_dtype_name(mg->layers[0].wq.dtype), hy_dtype_name(mg->layers[0].w_down.dtype),
           hy_dtype_name(mg->lm_head.dtype));
    char what[128];
    snprintf(what, sizeof what, "%s %s (wq %s, w_down %s)", name, hy_dtype_name(quant),
             hy_dtype_name(mg->layers[0].wq.dtype), hy_dtype_name(mg->layers[0].w_down.dtype));
    ct_check_greedy(what, mc, mg, prompt, NP, STEPS, 4e-2);
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
    if (!ct_backend_pair(&gpu, &cpu))
        return test_result();
    /* rows, cols, T, x misalignment (floats) */
    static const int shapes[][4] = {
        {1, 32, 1, 0},     {1, 128, 1, 0},     {37, 256, 3, 0},  {1000, 4096, 1, 0},
        {4096, 4096, 8, 0}, {300, 512, 17, 0},  {129, 1024, 64, 0}, {64, 384, 2, 0},
        {33, 640, 5, 0},   {9, 896, 7, 0},     {17, 128, 4, 0},  {8, 1024, 6, 0},
        {1003, 14336, 2, 0}, {256, 512, 20, 0}, {100, 256, 3, 1},  {5, 2048, 1, 0},
    };
    for (int qi = 0; qi < NQ; qi++) {
        const struct ct_qtype *q = &qtypes[qi];
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
        ct_embed_case(gpu, &rng, q->dt, 256);
        fprintf(stderr, "%s: worst error/bound: gemv %.3g, chunked %.3g, mmvq %.3g\n", q->name,
                worst[qi][0], worst[qi][1], worst[qi][2]);
    }
    static const char *const models[] = {"tiny-mqa", "tiny-gqa2-untied", "tiny-dense18",
                                         "tiny-mha-sharded"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        model_case(cpu, gpu, models[i], HY_DTYPE_Q8_0);
        model_case(cpu, gpu, models[i], HY_DTYPE_Q4_G128);
        model_case(cpu, gpu, models[i], HY_DTYPE_Q4_0);
    }
    cpu->i->destroy(cpu);
    gpu->i->destroy(gpu);
    return test_result();
}
