/* make_weights.c: test checkpoints' random values and JSON files (make_weights.h). */
#include "cli/make_weights.h"

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

void cli_mk_fill(const struct hy_st_wtensor *t, uint64_t seed, int64_t hidden, void *buf,
                 size_t nbytes, float *tmp, size_t tmp_cap)
{
    size_t n = nbytes / hy_dtype_size(t->dtype);
    uint64_t state = mix(seed * 0x9e3779b97f4a7c15ull ^ hash_str(t->name));
    bool bias = strstr(t->name, "expert_bias") != NULL, norm = t->n_dims == 1 && !bias;
    bool embed = strstr(t->name, "embed_tokens") || strstr(t->name, "lm_head");
    bool out_proj = strstr(t->name, "o_proj") || strstr(t->name, "down_proj");
    double std = embed      ? 4.0 / sqrt((double)hidden)
                 : out_proj ? 3.0 / sqrt((double)t->shape[1])
                            : 1.0 / sqrt((double)t->shape[1]);
    double a = bias ? 0.1 : norm ? 0.5 : std * sqrt(3.0), off = norm ? 1.0 : 0.0;
    for (size_t done = 0; done < n; done += tmp_cap) {
        size_t m = n - done < tmp_cap ? n - done : tmp_cap;
        for (size_t j = 0; j < m; j++) {
            state += 0x9e3779b97f4a7c15ull;
            double u = (double)(mix(state) >> 11) * 0x1.0p-53; /* [0,1) */
            tmp[j] = (float)(off + a * (2.0 * u - 1.0));
        }
        hy_dtype_from_f32((char *)buf + done * hy_dtype_size(t->dtype), tmp, t->dtype, m);
    }
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
