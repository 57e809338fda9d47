/* fuzz_job.c: a queue job as a worker reads it from Redis (queue/job.h: hy_job_decode), on
 * any bytes. The input is a list of fields, each a name length byte, the name, a two-byte
 * little-endian value length and the value (values may hold any bytes, NULs too), as the
 * entries of a stream that anyone with access to the Redis server can write. Checks the
 * contract beyond the sanitizers: a decoded job has a valid id, a prompt of 1 to
 * HY_JOB_MAX_PROMPT ids, max_new within its limit, sampling parameters that
 * hy_sampler_params_check accepts and at most HY_ENGINE_MAX_STOP stop ids; encoding it and
 * decoding that gives the same job back; a refusal names the field. */
#include "fuzz/fuzz_util.h"
#include "queue/job.h"

#include <stdbool.h>

#define MAX_FIELDS 16

#ifdef HYMT_QUEUE
static bool same(const struct hy_job *a, const struct hy_job *b)
{
    return !strcmp(a->id, b->id) && a->n_prompt == b->n_prompt &&
           !memcmp(a->prompt, b->prompt, (size_t)a->n_prompt * sizeof *a->prompt) &&
           a->max_new == b->max_new && a->n_stop == b->n_stop &&
           !memcmp(a->stop_ids, b->stop_ids, (size_t)a->n_stop * sizeof *a->stop_ids) &&
           a->deadline_ms == b->deadline_ms && a->ttl_s == b->ttl_s &&
           a->sampling.top_k == b->sampling.top_k && a->sampling.seed == b->sampling.seed &&
           a->sampling.temperature == b->sampling.temperature &&
           a->sampling.top_p == b->sampling.top_p &&
           a->sampling.repetition_penalty == b->sampling.repetition_penalty;
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifndef HYMT_QUEUE /* a build without hiredis has no queue to fuzz */
    (void)data, (void)size;
    return 0;
#else
    struct hy_job_field f[MAX_FIELDS];
    size_t n = 0, p = 0;
    while (n < MAX_FIELDS && p < size) {
        size_t nl = data[p++];
        if (p + nl + 2 > size)
            break;
        f[n].name = (const char *)data + p;
        f[n].name_len = nl;
        p += nl;
        size_t vl = (size_t)data[p] | (size_t)data[p + 1] << 8;
        p += 2;
        if (vl > size - p)
            vl = size - p;
        f[n].val = (const char *)data + p;
        f[n].val_len = vl;
        p += vl;
        n++;
    }
    struct hy_job j;
    struct hy_err err = {{0}};
    if (hy_job_decode(f, n, &j, &err) != HY_OK) {
        FZ_ASSERT(err.msg[0], "a refusal without a message");
        return 0;
    }
    FZ_ASSERT(hy_job_id_valid(j.id, strlen(j.id)), "id '%s'", j.id);
    FZ_ASSERT(j.n_prompt >= 1 && j.n_prompt <= HY_JOB_MAX_PROMPT && j.prompt, "%d prompt ids",
              j.n_prompt);
    FZ_ASSERT(j.max_new >= 0 && j.max_new <= HY_JOB_MAX_NEW, "max_new %d", j.max_new);
    FZ_ASSERT(j.n_stop >= 0 && j.n_stop <= HY_ENGINE_MAX_STOP, "%d stop ids", j.n_stop);
    FZ_ASSERT(hy_sampler_params_check(&j.sampling, &err) == HY_OK, "sampling: %s", err.msg);
    char *scratch = malloc(hy_job_scratch_bytes(&j));
    FZ_ASSERT(scratch, "out of memory");
    struct hy_job_field g[HY_JOB_N_FIELDS];
    int m = hy_job_encode(&j, scratch, g);
    struct hy_job k;
    FZ_ASSERT(hy_job_decode(g, (size_t)m, &k, &err) == HY_OK, "its own encoding: %s", err.msg);
    FZ_ASSERT(same(&j, &k), "encode + decode changed the job");
    hy_job_free(&k);
    free(scratch);
    hy_job_free(&j);
    return 0;
#endif
}
