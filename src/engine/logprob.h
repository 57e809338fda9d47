/* logprob.h: log-probabilities of generated tokens for the OpenAI routes' `logprobs`.
 * Values are the log-softmax of the model's raw logits over the whole vocabulary, before
 * the repetition penalty, temperature, top-k and top-p: the distribution of the model
 * itself, as vLLM reports by default (its "raw_logprobs" mode), not the one a token was
 * drawn from. The logits are fp32; the log-sum-exp is accumulated in double and the
 * results stored as fp32. The top alternatives are the n best logits (ties: lower id
 * first, NaN counts as -inf), best first; the chosen token is among them when it is one of
 * the n best, so its logprob then equals its entry's.
 * Pure function over caller memory: thread-safe, no allocation. */
#ifndef HY_ENGINE_LOGPROB_H
#define HY_ENGINE_LOGPROB_H

#include <stdint.h>

#define HY_LOGPROB_MAX_TOP 20 /* OpenAI's limit on top_logprobs */

struct hy_logprob_alt {
    int32_t id;
    float logprob;
};

/* One generated token: its own log-probability and the n_top best alternatives. */
struct hy_logprob {
    int32_t id;
    float logprob;
    int32_t n_top; /* 0..HY_LOGPROB_MAX_TOP */
    struct hy_logprob_alt top[HY_LOGPROB_MAX_TOP];
};

/* Fills out for token `chosen` from the n_vocab raw logits (read only); n_top is clamped
 * to 0..HY_LOGPROB_MAX_TOP and to n_vocab. */
void hy_logprob_compute(const float *logits, int32_t n_vocab, int32_t chosen, int n_top,
                        struct hy_logprob *out);

#endif
