/* moe.h: the reference ops of a mixture-of-experts layer (hy_v3, model doc 3.2 step 7,
 * checked against transformers' HYV3TopKRouter and HYV3Experts), plain C on host memory.
 *
 * hy_moe_route: per token t of T, over E experts: s = sigmoid(logits[t]) in float32; the k
 * experts with the largest s + bias (bias chooses only; NULL means zero; equal scores go to
 * the lower index; a NaN score is never chosen before a number) in descending order into
 * ids[t*k ..]; their weights w = s (unbiased) / (sum of the k s + 1e-20) * scale into
 * w[t*k ..] (transformers: route_norm, then router_scaling_factor).
 * hy_moe_group: the T*k routed (token, weight) pairs grouped by expert, tokens ascending
 * within an expert: expert e's pairs are rows[off[e] .. off[e+1]) and rw[...], off has E+1
 * entries. So an expert runs once over exactly the tokens routed to it.
 * hy_moe_plan: the same grouping as backend.h's struct hy_moe_route holds it: off and rows
 * as hy_moe_group, sel[t*k + j] the place of token t's j-th choice, act[0] the number of
 * experts with tokens and act[1 ..] those experts ascending (what moe_route writes after
 * routing; the CPU fast backend's moe_route is hy_moe_route then this).
 * hy_moe_combine: out[rows[i], :] += rw[i] * y[i, :] for i < n (y is [n, d]), in order.
 * Preconditions (asserted): 1 <= k <= E, T >= 0, ids in [0, E). Thread-safe; no allocation. */
#ifndef HY_BACKEND_CPU_MOE_H
#define HY_BACKEND_CPU_MOE_H

#include <stdint.h>

void hy_moe_route(const float *logits, const float *bias, int T, int E, int k, float scale,
                  int32_t *ids, float *w);
void hy_moe_group(const int32_t *ids, const float *w, int T, int k, int E, int32_t *off,
                  int32_t *rows, float *rw);
void hy_moe_plan(const int32_t *ids, int T, int k, int E, int32_t *off, int32_t *rows,
                 int32_t *sel, int32_t *act);
void hy_moe_combine(float *out, const float *y, const int32_t *rows, const float *rw, int n,
                    int64_t d);

#endif
