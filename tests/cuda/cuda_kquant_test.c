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
#include "cuda/cuda_model_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct rng rng = {0x9e3779b97f4a7c15ull};

static const struct ct_qtype qtypes[] = {CT_QTYPE(Q4_K, 256), CT_QTYPE(Q6_K, 256)};
#define NQ 2

static double worst[NQ][2]; /* error/bound per type: [0] GEMV, [1] chunked */

struct case_bufs {
    float *x, *ref, *got;
    double *s, *sp;
};

/* Random x and the reference of hw times it: ref, S and S' (ct_reference; hy_ref_matmul
 * itself up to 2^20 products). */
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
        b->x[i] = rng_unit(&rng);
    ct_reference(hw, b->x, T, b->ref, b->s, b->sp, ct_abs_parts, 1 << 20);
}

static void bufs_free(struct case_bufs *b)
{
    free(b->x);
    free(b->ref);
    free(b->got);
    free(b->s);
    free(b->sp);
}

/* Elements of b->got outside the bound of the path (GEMV: S', chunked: S); worst[qi][path]
 * takes the case's worst error/bound. */
static int compare(const char *what, const struct case_bufs *b, int64_t rows, int64_t cols,
                   int T, bool gemv, int qi)
{
    double wl;
    int bad = ct_compare(what, b->got, b->ref, gemv ? b->sp : b->s, rows, (int64_t)T * rows,
                         gemv ? 0.0 : 1.0 / 256, gemv ? (double)cols + 32 : (double)cols + 4, &wl);
    worst[qi][gemv ? 0 : 1] = fmax(worst[qi][gemv ? 0 : 1], wl);
    return bad;
}

/* One case through the backend's weight_upload and matmul; xoff floats of misalignment. */
static void backend_case(struct hy_backend *be, int qi, int64_t rows, int64_t cols, int T,
                         int xoff)
{
    const struct ct_qtype *q = &qtypes[qi];
    struct hy_err err = {{0}};
    void *hq = ct_make_qweight(&rng, q->dt, rows, cols, 0);
    struct hy_weight hw = {q->dt, rows, cols, hq}, dw = hw;
    CHECKF(be->i->weight_upload(be, &dw, &err) == HY_OK, "weight_upload %s: %s", q->name,
           err.msg);
    CHECKF(dw.dtype == (rows == 1 ? HY_DTYPE_F32 : q->dt) && dw.data != hq,
           "%s rows=%lld on the device as %s", q->name, (long long)rows, hy_dtype_name(dw.dtype));
    const int64_t no = (int64_t)T * rows;
    struct case_bufs b;
    bufs_init(&b, &hw, T);
    ct_backend_matmul(be, &dw, b.x, T, xoff, b.got);
    const bool gemv = T <= 8 && xoff % 4 == 0 && rows > 1;
    char what[128];
    snprintf(what, sizeof what, "%s rows=%lld cols=%lld T=%d xoff=%d (%s)", q->name,
             (long long)rows, (long long)cols, T, xoff, gemv ? "gemv" : "chunked");
    int bad = compare(what, &b, rows, cols, T, gemv, qi);
    CHECKF(bad == 0, "%s: %d of %lld outside the bound", what, bad, (long long)no);
    be->i->free(be, (void *)dw.data);
    free(hq);
    bufs_free(&b);
}

/* Through hy_cuda_matmul_q with its own stream, handle and (tiny) scratch. */
static void chunk_case(int qi, int64_t rows, int64_t cols, int T, size_t xbf_cap,
                       size_t wbf_cap, size_t cbuf_cap)
{
    const struct ct_qtype *q = &qtypes[qi];
    void *hq = ct_make_qweight(&rng, q->dt, rows, cols, 0);
    struct hy_weight hw = {q->dt, rows, cols, hq};
    const int64_t nx = (int64_t)T * cols, no = (int64_t)T * rows;
    struct case_bufs b;
    bufs_init(&b, &hw, T);
    const size_t qbytes = hy_cuda_q_bytes(q->qt, rows, cols);
    CHECKF(qbytes == hy_dtype_row_bytes(q->dt, cols) * (size_t)rows,
           "%s: device bytes %zu are the blocks' own", q->name, qbytes);
    void *packed = malloc(qbytes);
    hy_cuda_q_repack(packed, hq, q->qt, rows, cols);
    bool holds = ct_matmul_q(packed, qbytes, q->qt, rows, cols, T, b.x, b.got, xbf_cap, wbf_cap,
                             cbuf_cap);
    const bool gemv = T <= 8; /* cudaMalloc'd x: aligned */
    char what[160];
    snprintf(what, sizeof what, "%s rows=%lld cols=%lld T=%d scratch x %zu w %zu c %zu (%s)",
             q->name, (long long)rows, (long long)cols, T, xbf_cap, wbf_cap, cbuf_cap,
             gemv ? "gemv" : "chunked");
    int bad = compare(what, &b, rows, cols, T, gemv, qi);
    CHECKF(bad == 0, "%s: %d of %lld outside the bound", what, bad, (long long)no);
    CHECKF(holds == (T > 8 && (size_t)nx <= xbf_cap && (rows % 8 == 0 || (size_t)T * 8 <= cbuf_cap)),
           "%s: returned %d (xbf holds x)", what, holds);
    free(packed);
    free(hq);
    bufs_free(&b);
}

#define STEPS 16
#define NP 9
static const int32_t prompt[NP] = {305, 3, 77, 250, 12, 319, 8, 8, 130};

/* The checkpoint at dir with --quant `quant` on the GPU and on the CPU reference backend. */
static void model_case(struct hy_backend *cpu, struct hy_backend *gpu, const char *dir,
                       enum hy_dtype quant)
{
    struct hy_model *mc = NULL, *mg = NULL;
    if (!ct_load_pair(cpu, gpu, dir, quant, &mc, &mg))
        goto out;
    CHECKF(mg->layers[0].wq.dtype == quant && mg->layers[1].w_down.dtype == quant &&
               mg->lm_head.dtype == quant,
           "%s stays quantized on the GPU (wq %s, w_down %s, head %s)", hy_dtype_name(quant),
           hy_dtype_name(mg->layers[0].wq.dtype), hy_dtype_name(mg->layers[1].w_down.dtype),
           hy_dtype_name(mg->lm_head.dtype));
    char what[64];
    snprintf(what, sizeof what, "256-wide model --quant %s", hy_dtype_name(quant));
    ct_check_greedy(what, mc, mg, prompt, NP, STEPS, 2e-2);
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
        ct_embed_case(gpu, &rng, qtypes[qi].dt, 512);
        fprintf(stderr, "%s: worst error/bound: gemv %.3g, chunked %.3g\n", qtypes[qi].name,
                worst[qi][0], worst[qi][1]);
    }
    char dir[4096];
    if (ct_make_model(dir, sizeof dir, "cuda-kquant-256",
                      "--hidden 256 --ffn 512 --heads 2 --kv-heads 1 --head-dim 128 "
                      "--vocab 1024 --layers 2 --seed 7")) {
        model_case(cpu, gpu, dir, HY_DTYPE_Q4_K);
        model_case(cpu, gpu, dir, HY_DTYPE_Q6_K);
        test_rmtree(dir);
    }
    cpu->i->destroy(cpu);
    gpu->i->destroy(gpu);
    return test_result();
}
