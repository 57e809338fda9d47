/* make_weights.c: test checkpoints' random values and JSON files (make_weights.h). */
#include "cli/make_weights.h"

#include "core/threads.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

#define GOLDEN 0x9e3779b97f4a7c15ull

void cli_mk_gen_init(struct cli_mk_gen *g, const char *name, int n_dims, int64_t cols,
                     uint64_t seed, int64_t hidden)
{
    bool bias = strstr(name, "expert_bias") != NULL, norm = n_dims == 1 && !bias;
    bool embed = strstr(name, "embed_tokens") || strstr(name, "lm_head");
    bool out_proj = strstr(name, "o_proj") || strstr(name, "down_proj");
    double std = embed      ? 4.0 / sqrt((double)hidden)
                 : out_proj ? 3.0 / sqrt((double)cols)
                            : 1.0 / sqrt((double)cols);
    g->state0 = mix(seed * GOLDEN ^ hash_str(name));
    g->a = bias ? 0.1 : norm ? 0.5 : std * sqrt(3.0);
    g->off = norm ? 1.0 : 0.0;
}

/* splitmix64 as a counter: the k-th draw is mix(state0 + (k + 1) * GOLDEN) */
void cli_mk_gen_values(const struct cli_mk_gen *g, uint64_t k0, float *out, size_t n)
{
    uint64_t state = g->state0 + k0 * GOLDEN;
    for (size_t j = 0; j < n; j++) {
        state += GOLDEN;
        double u = (double)(mix(state) >> 11) * 0x1.0p-53; /* [0,1) */
        out[j] = (float)(g->off + g->a * (2.0 * u - 1.0));
    }
}

#define FILL_CHUNK 4096 /* values a staging step */

struct fill_job {
    struct cli_mk_gen g;
    enum hy_dtype dtype;
    char *buf;
    size_t n;
};

static void fill_chunks(void *ctx, int64_t c0, int64_t c1, int tid)
{
    (void)tid;
    const struct fill_job *j = ctx;
    float tmp[FILL_CHUNK];
    for (int64_t c = c0; c < c1; c++) {
        const size_t at = (size_t)c * FILL_CHUNK, m = j->n - at < FILL_CHUNK ? j->n - at : FILL_CHUNK;
        cli_mk_gen_values(&j->g, at, tmp, m);
        hy_dtype_from_f32(j->buf + at * hy_dtype_size(j->dtype), tmp, j->dtype, m);
    }
}

void cli_mk_fill(struct hy_pool *pool, const struct hy_st_wtensor *t, uint64_t seed,
                 int64_t hidden, void *buf, size_t nbytes)
{
    struct fill_job j = {.dtype = t->dtype, .buf = buf, .n = nbytes / hy_dtype_size(t->dtype)};
    cli_mk_gen_init(&j.g, t->name, t->n_dims, t->shape[t->n_dims == 2 ? 1 : 0], seed, hidden);
    hy_pool_for(pool, (int64_t)((j.n + FILL_CHUNK - 1) / FILL_CHUNK), 16, fill_chunks, &j);
}

int cli_mk_write_json(json_t *j, const char *dir, const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int rc = j ? json_dump_file(j, path, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : -1;
    json_decref(j);
    if (rc)
        fprintf(stderr, "hymt make-test-model: cannot write %s\n", path);
    return rc ? 1 : 0;
}
