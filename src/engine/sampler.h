/* sampler.h: next-token choice with transformers' semantics (model doc 5.6).
 * Order: repetition penalty over the DISTINCT ids of the sequence (prompt + generated:
 * positive logit / p, negative * p), temperature, top-k (ties at the k-th value kept),
 * top-p (the smallest prefix, by probability, reaching p; at least one token), then a
 * draw from a seeded xoshiro256** PRNG. Temperature 0 is argmax (first maximum) and
 * uses no randomness. Ties are ordered by value, then by lower id: deterministic.
 * struct hy_sampler is per sequence (params, PRNG, a seen-id bitmap of n_vocab bits);
 * struct hy_sampler_scratch holds the vocabulary-sized work arrays and is shared by the
 * samplers one thread runs. Both allocate only at init; sampling never allocates.
 * Errors: HY_E_RANGE for parameters out of range, HY_E_NOMEM at init. */
#ifndef HY_ENGINE_SAMPLER_H
#define HY_ENGINE_SAMPLER_H

#include "backend/backend.h"
#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hy_sampler_params {
    float temperature;        /* >= 0; 0: greedy (argmax of the penalized logits) */
    int32_t top_k;            /* >= 0; 0: off */
    float top_p;              /* (0, 1]; 1: off */
    float repetition_penalty; /* > 0; 1: off */
    uint64_t seed;            /* PRNG seed: same seed, same logits -> same tokens */
};

/* The recommended translation settings: temperature 0.7, top_k 20, top_p 0.6,
 * repetition_penalty 1.05 (model doc 5.6), seed 0. */
struct hy_sampler_params hy_sampler_params_default(void);
/* HY_E_RANGE naming the first parameter out of range. */
hy_status hy_sampler_params_check(const struct hy_sampler_params *p, struct hy_err *err);

/* Work arrays, 20 bytes per vocabulary entry (2.5 MiB for 128k). One per thread. */
struct hy_sampler_scratch {
    int32_t n_vocab;
    float *score; /* [n_vocab] penalized logit / temperature, by id */
    float *val;   /* [n_vocab] candidate scores */
    int32_t *id;  /* [n_vocab] candidate ids */
    double *w;    /* [n_vocab] candidate weights exp(score - max score) */
};
hy_status hy_sampler_scratch_init(struct hy_sampler_scratch *sc, int32_t n_vocab,
                                  struct hy_err *err);
void hy_sampler_scratch_deinit(struct hy_sampler_scratch *sc);

struct hy_sampler {
    int32_t n_vocab;
    struct hy_sampler_params p;
    uint64_t rng[4]; /* xoshiro256** state */
    uint64_t *seen;  /* [ceil(n_vocab / 64)] bit i: id i is in the sequence */
};

/* Checks p, allocates the bitmap, seeds the PRNG; the sequence starts empty. */
hy_status hy_sampler_init(struct hy_sampler *s, int32_t n_vocab, const struct hy_sampler_params *p,
                          struct hy_err *err);
void hy_sampler_deinit(struct hy_sampler *s); /* accepts a zeroed or deinited sampler */

/* Starts a new sequence: clears the seen ids, reseeds the PRNG from p.seed, and marks
 * the n prompt ids as seen. Ids must be in [0, n_vocab). */
void hy_sampler_reset(struct hy_sampler *s, const int32_t *prompt, size_t n);
/* Marks id as part of the sequence (call for each token appended). */
void hy_sampler_accept(struct hy_sampler *s, int32_t id);

/* Chooses the next id from n_vocab logits (read only; NaN counts as -inf). Does not
 * accept it: the caller appends it and calls hy_sampler_accept. */
int32_t hy_sampler_sample(struct hy_sampler *s, struct hy_sampler_scratch *sc, const float *logits);
/* The same choice from the k best logits only (struct hy_cand, best first by value then
 * id, NaN as -inf: what a backend's topk op gives), when they are enough to make it
 * exactly as hy_sampler_sample would from the whole row: then *out is set, the PRNG
 * advanced as hy_sampler_sample would, and true returned. false (nothing changed) when
 * the whole row is needed: top_k off or above k, a penalty below 1, or a cut-off that an
 * id outside the k could reach. */
bool hy_sampler_sample_cands(struct hy_sampler *s, struct hy_sampler_scratch *sc,
                             const struct hy_cand *cand, int k, int32_t *out);
/* The distribution hy_sampler_sample draws from: probs[n_vocab], zero for removed ids
 * (one-hot for greedy). For tests and debugging; changes no state. */
void hy_sampler_dist(const struct hy_sampler *s, struct hy_sampler_scratch *sc, const float *logits,
                     double *probs);

#endif
