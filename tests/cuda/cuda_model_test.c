/* cuda_model_test.c: the whole model on the CUDA backend against the fast CPU backend on
 * the committed tiny checkpoints (bf16, f16 sharded, f32 untied): a 9-token prompt and 24
 * greedy steps run independently on each backend must give identical ids, and at every
 * step the logits must agree within 2e-2 of max |logit| (the GPU multiplies bf16 operands:
 * weights rounded at upload, activations at each matmul). The CPU path's smallest top-1/
 * top-2 gap is printed: a tie closer than the tolerance would make the ids check
 * meaningless. Twice: with the 9-token prompt and with a 40-token one, whose prefill rows go
 * through the tensor-core attention kernel (attention_tc.cu, tf32). Then batching: three sequences in one kvstore with interleaved blocks
 * (prefills of different lengths in one step, then batched decodes) give, on the GPU, the
 * same greedy ids as each alone, and logits within 1e-2 of max |logit|: a decode-sized
 * matmul keeps activations in float32, a prefill-sized one rounds them to bf16 (cuda.h),
 * so a row batched into a larger call differs from the row alone by that rounding
 * (the measured figure: bench/RESULTS.md).
 * The same on a second GPU backend with batch-invariant numerics (set_batch_invariant):
 * parity with the CPU under the same limits, and batched logits equal to alone bit for bit
 * (alone prefills the whole sequence each time, so a decode row must also equal the last
 * row of a prefill).
 * The K/V cache is bf16 (the default): greedy ids may then swap at a near-tie of the CPU's
 * top-2 logits (within 2x the logit limit; ct_check_greedy); the parity runs once more on
 * a backend with float32 K/V (hy_cuda_opts.kv_f32).
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
#define NP_LONG 40 /* prefill rows of one sequence >= 16: the tensor-core attention kernel */

static const int32_t prompt[NP] = {305, 3, 77, 250, 12, 319, 8, 8, 130}; /* < every vocab */

static void check_parity(const char *name, struct hy_backend *cpu, struct hy_backend *gpu,
                         int np)
{
    int32_t p[NP_LONG];
    for (int i = 0; i < np; i++) /* the prompt, then more tokens below every vocab size */
        p[i] = i < NP ? prompt[i] : (prompt[i % NP] + 7 * i) % 320;
    char dir[4096];
    struct hy_err err = {{0}};
    struct hy_model *mc = NULL, *mg = NULL;
    test_path(dir, sizeof dir, "HYMT_SRC", name);
    CHECKF(hy_model_load(&mc, dir, cpu, &err) == HY_OK, "%s", err.msg);
    CHECKF(hy_model_load(&mg, dir, gpu, &err) == HY_OK, "%s", err.msg);
    if (!mc || !mg)
        goto out;
    CHECK(mg->weights_uploaded && !mc->weights_uploaded);
    char what[256];
    snprintf(what, sizeof what, "%s, %d-token prompt", name, np);
    ct_check_greedy(what, mc, mg, p, np, STEPS, 2e-2);
out:
    hy_model_destroy(mc);
    hy_model_destroy(mg);
}

/* As forward_test's check_batch, on the GPU; exact: logits equal bit for bit. */
static void check_batch(const char *name, struct hy_backend *gpu, bool exact)
{
    char dir[4096];
    struct hy_err err = {{0}};
    struct hy_model *m = NULL;
    struct hy_kvstore *kv = NULL;
    struct hy_scratch *s = NULL;
    test_path(dir, sizeof dir, "HYMT_SRC", name);
    CHECKF(hy_model_load(&m, dir, gpu, &err) == HY_OK, "%s", err.msg);
    if (!m)
        return;
    CHECK(hy_kvstore_create(&kv, m, 12, 4, &err) == HY_OK);
    CHECK(hy_scratch_create(&s, m, 24, 3, 24, &err) == HY_OK);
    const int64_t V = m->cfg.vocab_size;
    const int len[3] = {9, 3, 6};
    int32_t tables[3][4] = {{0, 3, 6, 9}, {1, 4, 7, 10}, {2, 5, 8, 11}};
    int32_t toks[3][12];
    for (int q = 0; q < 3; q++)
        for (int t = 0; t < 12; t++)
            toks[q][t] = prompt[(t + 3 * q) % 9];
    float *got = malloc(3 * (size_t)V * sizeof(float)), *want = malloc((size_t)V * sizeof(float));
    struct hy_batch_seq b[3];
    double worst = 0;
    for (int step = 0; kv && s && step < 4; step++) {
        for (int q = 0; q < 3; q++) {
            int pos0 = step ? len[q] + step - 1 : 0, n = step ? 1 : len[q];
            b[q] = (struct hy_batch_seq){toks[q] + pos0, n, pos0, tables[q], 1};
        }
        CHECKF(hy_model_forward_batch(m, kv, s, b, 3, got, &err) == HY_OK, "%s", err.msg);
        for (int q = 0; q < 3; q++) {
            struct hy_ctx *c = NULL;
            CHECK(hy_ctx_create(&c, m, 16, 16, &err) == HY_OK);
            CHECK(c && hy_model_forward(c, toks[q], len[q] + step, false, want, &err) == HY_OK);
            double num = 0, den = 0;
            for (int64_t i = 0; i < V; i++) {
                num = fmax(num, fabs((double)got[q * V + i] - want[i]));
                den = fmax(den, fabs((double)want[i]));
            }
            worst = fmax(worst, num / den);
            CHECKF(den > 0 && num <= (exact ? 0 : 1e-2) * den, "%s step %d seq %d: batched vs "
                   "alone %.3g%s", name, step, q, num / den, exact ? " (batch-invariant)" : "");
            CHECKF(tu_argmax(got + q * V, V) == tu_argmax(want, V), "%s step %d seq %d: greedy id "
                   "changes with batching", name, step, q);
            hy_ctx_destroy(c);
        }
    }
    fprintf(stderr, "%s: batched vs alone on the GPU%s: %.3g of max |logit| (limit %s)\n",
            name, exact ? ", batch-invariant" : "", worst, exact ? "0" : "1e-2");
    free(got);
    free(want);
    hy_scratch_destroy(s, m);
    hy_kvstore_destroy(kv);
    hy_model_destroy(m);
}

int main(void)
{
    if (!hy_cuda_available()) {
        fprintf(stderr, "no CUDA device: skipping\n");
        return 77;
    }
    struct hy_backend *cpu = NULL, *gpu = NULL, *inv = NULL, *g32 = NULL;
    const struct hy_cuda_opts o32 = {.kv_f32 = 1};
    struct hy_err err = {{0}};
    CHECKF(hy_cpu_backend_create(&cpu, 2, &err) == HY_OK, "%s", err.msg);
    CHECKF(hy_cuda_backend_create(&gpu, 0, &err) == HY_OK, "%s", err.msg);
    CHECKF(hy_cuda_backend_create_opts(&g32, 0, &o32, &err) == HY_OK, "%s", err.msg);
    CHECKF(hy_cuda_backend_create(&inv, 0, &err) == HY_OK &&
               inv->i->set_batch_invariant(inv, true, &err) == HY_OK, "%s", err.msg);
    if (cpu && gpu && inv && g32) {
        static const char *models[] = {"tests/data/tiny-mqa", "tests/data/tiny-dense18",
                                       "tests/data/tiny-mha-sharded",
                                       "tests/data/tiny-gqa2-untied"};
        for (int i = 0; i < 4; i++) {
            check_parity(models[i], cpu, gpu, NP);
            check_parity(models[i], cpu, gpu, NP_LONG);
        }
        fprintf(stderr, "float32 K/V:\n");
        for (int i = 0; i < 4; i++)
            check_parity(models[i], cpu, g32, NP_LONG);
        check_batch("tests/data/tiny-mqa", gpu, false);
        check_batch("tests/data/tiny-mha-sharded", gpu, false);
        fprintf(stderr, "batch-invariant numerics:\n");
        for (int i = 0; i < 4; i++)
            check_parity(models[i], cpu, inv, NP_LONG);
        for (int i = 0; i < 4; i++)
            check_batch(models[i], inv, true);
    }
    if (cpu)
        cpu->i->destroy(cpu);
    if (gpu)
        gpu->i->destroy(gpu);
    if (inv)
        inv->i->destroy(inv);
    if (g32)
        g32->i->destroy(g32);
    return test_result();
}
