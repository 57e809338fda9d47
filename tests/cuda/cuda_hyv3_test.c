/* cuda_hyv3_test.c: hy_v3 (the mixture of experts) on the CUDA backend against the CPU, on
 * the committed tiny checkpoint (tests/data/tiny-hyv3: 1 dense + 3 MoE layers, 8 experts
 * top-2 plus a shared one). Routing is discontinuous: a token whose k-th and (k+1)-th
 * scores nearly tie takes another expert when its activations move a little, and on this
 * random checkpoint that moves the logits by a large fraction of max |logit| (the fast CPU
 * backend's int8 activations against the reference backend: up to 0.82 with --quant q8,
 * where the float32 paths agree within 1.2e-6). The GPU's default numerics round
 * activations to bf16 (or int8) at the dense matmuls and the K/V cache to bf16, so its
 * greedy runs drift from the CPU's by such flips; a limit that tolerates them would hide
 * bugs. So the parity runs on a GPU backend with float32 K/V (hy_cuda_opts.kv_f32) and
 * batch-invariant numerics (set_batch_invariant: bf16 matmuls with x split into two bf16
 * parts, quantized ones as float32 GEMVs, attention in float32 without split-K), against
 * the CPU reference backend (float32 activations), with the device path of hy_v3 as it
 * always runs (hy_v3_upload: router and head float32, the grouped expert GEMVs on float32
 * activations, the combine in the CPU's order): a 9-token and a 40-token prompt with 24
 * greedy steps give the CPU's ids (but at near-ties, ct_check_greedy) and logits within
 * 1e-3 of max |logit| at every step, in bf16 and with --quant q8 and q4 on both sides
 * (the remaining differences are float32 roundings and the split x's 2^-17, near 1e-5; one
 * routing flip moves logits by 0.1-1). The same with --quant q4_k and q6_k (every expert in
 * GGUF's K-quants: moe_mmvq.cu's float32 GEMV, the shared expert stacked with them) on a
 * 256-wide checkpoint `hymt make-test-model` writes into the build folder (3 layers, hidden
 * and expert width 256: K-quants need multiples of 256). Then recorded decode steps (CUDA graphs, three
 * sequences padded to four, default numerics) against the same steps run eagerly: top-1
 * equal, candidates within 1e-2 of max |logit|: the routing a graph replays is read from
 * device memory, so a replay that reused the recording's routing would fail this.
 * Exits 77 (skip) when no CUDA device is present. */
#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda.h"
#include "model/hunyuan.h"
#include "test.h"
#include "cuda/cuda_model_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 24
#define NP 9
#define NP_LONG 40
#define DIR "tests/data/tiny-hyv3"

static const int32_t prompt[NP] = {497, 3, 77, 250, 12, 319, 8, 8, 130};

/* The checkpoint at dir (called name) with --quant `quant` (F32: as stored) on both. */
static void check_parity(struct hy_backend *cpu, struct hy_backend *gpu, const char *dir,
                         const char *name, enum hy_dtype quant, double limit)
{
    char what[128];
    int32_t p[NP_LONG];
    struct hy_err err = {{0}};
    struct hy_model *mc = NULL, *mg = NULL;
    const struct hy_model_opts o = {.quant = quant};
    CHECKF(hy_model_load_opts(&mc, dir, cpu, &o, &err) == HY_OK, "cpu: %s", err.msg);
    CHECKF(hy_model_load_opts(&mg, dir, gpu, &o, &err) == HY_OK, "cuda: %s", err.msg);
    if (mc && mg) {
        CHECK(mg->v3dev != NULL && mc->v3dev == NULL);
        for (int i = 0; i < NP_LONG; i++)
            p[i] = i < NP ? prompt[i] : (prompt[i % NP] + 7 * i) % 512;
        for (int np = NP; np <= NP_LONG; np += NP_LONG - NP) {
            snprintf(what, sizeof what, "%s %s, %d-token prompt", name,
                     quant ? hy_dtype_name(quant) : "bf16", np);
            ct_check_greedy(what, mc, mg, p, np, STEPS, limit);
        }
    }
    hy_model_destroy(mc);
    hy_model_destroy(mg);
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

static void check_recorded(struct hy_backend *be)
{
    char dir[4096];
    struct hy_err err = {{0}};
    struct hy_model *m = NULL;
    test_path(dir, sizeof dir, "HYMT_SRC", DIR);
    CHECKF(hy_model_load(&m, dir, be, &err) == HY_OK, "%s", err.msg);
    if (!m)
        return;
    struct hy_kvstore *kv[2] = {NULL, NULL};
    struct hy_scratch *s[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        CHECK(hy_kvstore_create(&kv[i], m, 16, 4, &err) == HY_OK);
        CHECK(hy_scratch_create(&s[i], m, 32, 4, 4, &err) == HY_OK);
    }
    const int64_t V = m->cfg.vocab_size;
    float *logits = malloc(3 * (size_t)V * sizeof *logits);
    if (!kv[0] || !kv[1] || !s[0] || !s[1] || !logits)
        goto out;
    s[0]->graph_max_blocks = 5; /* recorded; s[1] runs eagerly */
    const int K = s[0]->topk_k;
    int32_t tables[3][5] = {{0, 3, 6, 9, 12}, {1, 4, 7, 10, 13}, {2, 5, 8, 11, 14}};
    int32_t toks[3][20];
    uint64_t x = 7;
    for (int q = 0; q < 3; q++)
        for (int t = 0; t < 20; t++)
            toks[q][t] = (int32_t)(lcg(&x) % (uint64_t)V);
    const int len[3] = {7, 2, 5};
    struct hy_cand cand[3 * HY_TOPK_K];
    double worst = 0;
    for (int step = 0; step < 10; step++) {
        struct hy_batch_seq b[3];
        for (int q = 0; q < 3; q++) {
            int pos0 = step ? len[q] + step - 1 : 0, n = step ? 1 : len[q];
            b[q] = (struct hy_batch_seq){toks[q] + pos0, n, pos0, tables[q], 1};
        }
        CHECKF(hy_model_forward_batch_topk(m, kv[0], s[0], b, 3, cand, &err) == HY_OK, "%s",
               err.msg);
        CHECKF(hy_model_forward_batch(m, kv[1], s[1], b, 3, logits, &err) == HY_OK, "%s",
               err.msg);
        for (int q = 0; q < 3; q++) {
            const float *row = logits + q * V;
            int32_t best = 0;
            double den = 0;
            for (int64_t i = 0; i < V; i++) {
                best = row[i] > row[best] ? (int32_t)i : best;
                den = fmax(den, fabs(row[i]));
            }
            CHECKF(cand[q * K].id == best, "step %d seq %d: top-1 %d recorded, %d eager", step,
                   q, cand[q * K].id, best);
            for (int j = 0; j < K; j++) {
                const int32_t id = cand[q * K + j].id;
                CHECK(id >= 0 && id < V);
                if (id >= 0 && id < V)
                    worst = fmax(worst, fabs(cand[q * K + j].val - row[id]) / den);
            }
        }
    }
    fprintf(stderr, "tiny-hyv3: recorded vs eager decode steps: candidates within %.3g of max "
            "|logit| (limit 1e-2)\n", worst);
    CHECK(worst <= 1e-2);
out:
    free(logits);
    for (int i = 0; i < 2; i++) {
        hy_scratch_destroy(s[i], m);
        hy_kvstore_destroy(kv[i]);
    }
    hy_model_destroy(m);
}

int main(void)
{
    if (!hy_cuda_available()) {
        fprintf(stderr, "no CUDA device: skipping\n");
        return 77;
    }
    struct hy_backend *cpu = NULL, *gpu = NULL, *plain = NULL;
    struct hy_err err = {{0}};
    const struct hy_cuda_opts o = {.kv_f32 = 1};
    CHECKF(hy_cpu_backend_create_ref(&cpu, &err) == HY_OK, "%s", err.msg);
    CHECKF(hy_cuda_backend_create_opts(&gpu, 0, &o, &err) == HY_OK &&
               gpu->i->set_batch_invariant(gpu, true, &err) == HY_OK,
           "%s", err.msg);
    CHECKF(hy_cuda_backend_create(&plain, 0, &err) == HY_OK, "%s", err.msg);
    char dir[4096];
    test_path(dir, sizeof dir, "HYMT_SRC", DIR);
    if (cpu && gpu) {
        check_parity(cpu, gpu, dir, "tiny-hyv3", HY_DTYPE_F32, 1e-3);
        check_parity(cpu, gpu, dir, "tiny-hyv3", HY_DTYPE_Q8_0, 1e-3);
        check_parity(cpu, gpu, dir, "tiny-hyv3", HY_DTYPE_Q4_G128, 1e-3);
    }
    /* K-quant experts (GGUF's Q4_K, Q6_K) need in-features that are multiples of 256 */
    if (cpu && gpu && ct_make_model(dir, sizeof dir, "cuda-hyv3-256",
                                    "--preset tiny-hyv3 --hidden 256 --ffn 512 --expert-ffn 256 "
                                    "--heads 2 --kv-heads 1 --head-dim 128 --vocab 1024 "
                                    "--layers 3 --seed 7")) {
        check_parity(cpu, gpu, dir, "256-wide hy_v3", HY_DTYPE_Q4_K, 1e-3);
        check_parity(cpu, gpu, dir, "256-wide hy_v3", HY_DTYPE_Q6_K, 1e-3);
        test_rmtree(dir);
    }
    if (plain)
        check_recorded(plain);
    struct hy_backend *bes[] = {plain, gpu, cpu};
    for (size_t i = 0; i < sizeof bes / sizeof bes[0]; i++)
        if (bes[i])
            bes[i]->i->destroy(bes[i]);
    return test_result();
}
