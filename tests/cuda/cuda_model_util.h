/* cuda_model_util.h: the "model on the GPU against the CPU backend" comparison shared by
 * the CUDA model-level tests (include after test.h): a greedy run through hy_ctx, the
 * difference of two logit rows, greedy ids plus max |dlogit| / max |logit| checked
 * against a limit, the two backends and a checkpoint loaded on each, and a checkpoint
 * written by `hymt make-test-model`. Header-only, static functions: each test is one
 * executable. Buffers a helper takes are the caller's; a helper frees what it allocates. */
#ifndef HY_TESTS_CUDA_MODEL_UTIL_H
#define HY_TESTS_CUDA_MODEL_UTIL_H

#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda_test_util.h"
#include "logits_util.h"
#include "model/hunyuan.h"
#include "test.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Greedy run of m: the prompt, then steps - 1 decode steps fed with the argmax ids (or
 * feed's ids when feed is not NULL). logits [steps, V]: the prompt's last position, then
 * each decode step; ids [steps]: each row's argmax (the first of equal maxima). One check. */
static inline bool ct_greedy(const struct hy_model *m, const int32_t *prompt, int np, int steps,
                             const int32_t *feed, float *logits, int32_t *ids)
{
    struct hy_ctx *c = NULL;
    struct hy_err err = {{0}};
    const int64_t V = m->cfg.vocab_size;
    bool ok = hy_ctx_create(&c, m, np + steps, np, &err) == HY_OK &&
              hy_model_forward(c, prompt, np, false, logits, &err) == HY_OK;
    for (int s = 0; ok && s < steps; s++) {
        ids[s] = (int32_t)tu_argmax(logits + s * V, V);
        if (s + 1 < steps)
            ok = hy_model_forward(c, feed ? &feed[s] : &ids[s], 1, false, logits + (s + 1) * V,
                                  &err) == HY_OK;
    }
    CHECKF(ok, "greedy: %s", err.msg);
    hy_ctx_destroy(c);
    return ok;
}

/* One row of logits, a (the reference) against b: max |a - b|, max |a|, a's top-2 gap
 * (top1 - top2, not divided) and the cosine of the two rows. */
struct ct_row_diff {
    double diff, den, gap, cos;
};

static inline struct ct_row_diff ct_row_diff(const float *a, const float *b, int64_t V)
{
    double num = 0, den = 0, t1 = -INFINITY, t2 = -INFINITY, ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < V; i++) {
        double x = a[i], g = b[i];
        num = fmax(num, fabs(x - g));
        den = fmax(den, fabs(x));
        ab += x * g, aa += x * x, bb += g * g;
        if (x > t1) {
            t2 = t1;
            t1 = x;
        } else if (x > t2) {
            t2 = x;
        }
    }
    return (struct ct_row_diff){num, den, t1 - t2, ab / sqrt(aa * bb)};
}

/* mc (CPU) and mg (GPU) each run greedy from the prompt for `steps` steps. Checks that the
 * ids are equal at every step and that, at every step up to the first differing id (both
 * ran the same tokens up to there), max |dlogit| / max |logit| <= limit. A first
 * difference is accepted at a near-tie only: where the CPU's top-2 gap is within 2·limit
 * of max |logit| (each of the two logits may move by `limit`, so such a pair may swap:
 * the bf16 K/V cache rounds every K and V element by up to 2^-9 relative, as the matmuls
 * round their inputs). The GPU then runs again on the CPU's ids, and every step of that
 * run must hold the same: logits within limit, ids equal except at near-ties. Prints
 * those figures and the CPU's smallest top-2 gap (relative to max |logit|), prefixed
 * with `what`. */
static inline void ct_check_greedy(const char *what, const struct hy_model *mc,
                                   const struct hy_model *mg, const int32_t *prompt, int np,
                                   int steps, double limit)
{
    const int64_t V = mc->cfg.vocab_size;
    float *lc = malloc((size_t)(steps * V) * sizeof *lc);
    float *lg = malloc((size_t)(steps * V) * sizeof *lg);
    int32_t *ic = malloc((size_t)steps * sizeof *ic), *ig = malloc((size_t)steps * sizeof *ig);
    HY_ASSERT(lc && lg && ic && ig);
    if (ct_greedy(mc, prompt, np, steps, NULL, lc, ic) &&
        ct_greedy(mg, prompt, np, steps, NULL, lg, ig)) {
        int same = 0;
        while (same < steps && ic[same] == ig[same])
            same++;
        const bool forced = same < steps; /* again on the CPU's ids: every step comparable */
        if (forced && !ct_greedy(mg, prompt, np, steps, ic, lg, ig))
            goto out;
        double w = 0, gap = INFINITY;
        int ties = 0, bad = 0, first_bad = -1;
        for (int s = 0; s < steps; s++) {
            const struct ct_row_diff d = ct_row_diff(lc + s * V, lg + s * V, V);
            if (forced || s <= same)
                w = fmax(w, d.diff / d.den);
            gap = fmin(gap, d.gap / d.den);
            if (ic[s] != ig[s] && (forced || s <= same)) {
                const bool tie = d.gap / d.den <= 2 * limit;
                ties += tie;
                bad += !tie;
                first_bad = !tie && first_bad < 0 ? s : first_bad;
            }
        }
        fprintf(stderr, "%s: greedy ids equal for %d/%d steps%s; max |dlogit|/max|logit| = %.3g "
                "(limit %.0e); smallest CPU top-2 gap %.3g", what, same, steps,
                forced ? " free-running, then on the CPU's ids" : "", w, limit, gap);
        if (forced)
            fprintf(stderr, ": %d near-tie swaps (gap <= %.0e), %d other", ties, 2 * limit, bad);
        fprintf(stderr, "\n");
        CHECKF(bad == 0, "%s: greedy ids differ at step %d away from a near-tie (cpu %d, "
               "cuda %d)", what, first_bad, first_bad >= 0 ? ic[first_bad] : -1,
               first_bad >= 0 ? ig[first_bad] : -1);
        CHECKF(w <= limit, "%s: logits differ by %.3g of max |logit|", what, w);
    }
out:
    free(lc);
    free(lg);
    free(ic);
    free(ig);
}

/* The CUDA backend (device 0) and the CPU reference backend it is compared with; false
 * (a check failed; whichever was made is in *gpu or *cpu) when either cannot be made. */
static inline bool ct_backend_pair(struct hy_backend **gpu, struct hy_backend **cpu)
{
    struct hy_err err = {{0}};
    CHECKF(hy_cuda_backend_create(gpu, 0, &err) == HY_OK, "%s", err.msg);
    CHECKF(hy_cpu_backend_create_ref(cpu, &err) == HY_OK, "%s", err.msg);
    return *gpu && *cpu;
}

/* The checkpoint at dir with --quant `quant` on the CPU backend (*mc) and on the GPU (*mg);
 * false (a check failed; the caller destroys whichever loaded) when either does not load. */
static inline bool ct_load_pair(struct hy_backend *cpu, struct hy_backend *gpu, const char *dir,
                                enum hy_dtype quant, struct hy_model **mc, struct hy_model **mg)
{
    struct hy_err err = {{0}};
    struct hy_model_opts o = {.quant = quant};
    CHECKF(hy_model_load_opts(mc, dir, cpu, &o, &err) == HY_OK, "cpu %s: %s",
           hy_dtype_name(quant), err.msg);
    CHECKF(hy_model_load_opts(mg, dir, gpu, &o, &err) == HY_OK, "cuda %s: %s",
           hy_dtype_name(quant), err.msg);
    return *mc && *mg;
}

/* Writes a checkpoint with `hymt make-test-model --out DIR args` into dir (HYMT_BIN/name,
 * the build folder); false (a failed check) when hymt fails. */
static inline bool ct_make_model(char *dir, size_t cap, const char *name, const char *args)
{
    char bin[4096], cmd[10000];
    test_path(dir, cap, "HYMT_BIN", name);
    test_path(bin, sizeof bin, "HYMT_BIN", "hymt");
    snprintf(cmd, sizeof cmd, "'%s' make-test-model --out '%s' %s > /dev/null", bin, dir, args);
    int rc = system(cmd);
    CHECKF(rc == 0, "%s: exit status %d (is hymt built?)", cmd, rc);
    return rc == 0;
}

#endif
