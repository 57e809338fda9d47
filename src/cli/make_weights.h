/* make_weights.h: what the two writers of `hymt make-test-model` share (the dense model in
 * cmd_make_test_model.c, hy_v3 in make_hyv3.c): a tensor's deterministic random values and
 * writing the JSON files. The values: norms uniform in [0.5, 1.5] (never all ones); the
 * hy_v3 selection bias (a tensor named *expert_bias) in [-0.1, 0.1], enough to change some
 * top-k choices of sigmoid scores; matrices uniform with standard deviation 1/sqrt(in) so
 * each projection keeps unit variance, except o_proj and down_proj at 3/sqrt(in) so the
 * layers' output outweighs the input embedding (otherwise a tied head mostly repeats the
 * last token); embedding and head 4/sqrt(hidden) so logits spread over a few units. Each
 * tensor's stream is seeded by the seed and the tensor's name: a value depends on neither
 * the tensor order nor the chunk size. No state; no errors beyond the return codes. */
#ifndef HY_CLI_MAKE_WEIGHTS_H
#define HY_CLI_MAKE_WEIGHTS_H

#include "formats/safetensors.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* A tensor's value stream: element k (row-major) depends only on k, so any range of it can
 * be made on any thread (cli_mk_gen_values) and equals what cli_mk_fill writes there. */
struct cli_mk_gen {
    uint64_t state0; /* from the seed and the tensor's name */
    double a, off;   /* values uniform in [off - a, off + a) */
};

/* The stream of tensor `name` (n_dims dims, cols in-features) for seed in a model of width
 * hidden. */
void cli_mk_gen_init(struct cli_mk_gen *g, const char *name, int n_dims, int64_t cols,
                     uint64_t seed, int64_t hidden);
/* out[j] = element k0 + j of the stream, j < n (float32, before any rounding to a dtype). */
void cli_mk_gen_values(const struct cli_mk_gen *g, uint64_t k0, float *out, size_t n);

/* Fills buf (nbytes: all of tensor t, in t->dtype) with t's values for seed, in a model of
 * width hidden, on pool's threads (NULL: the caller's); the bytes do not depend on it. */
struct hy_pool;
void cli_mk_fill(struct hy_pool *pool, const struct hy_st_wtensor *t, uint64_t seed,
                 int64_t hidden, void *buf, size_t nbytes);

/* Writes j (NULL: out of memory, an error) to dir/file, two-space indented, reals with 17
 * significant digits; takes the reference. 0, or 1 with "hymt make-test-model: cannot
 * write PATH" printed. */
int cli_mk_write_json(json_t *j, const char *dir, const char *file);

#endif
