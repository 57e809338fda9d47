/* noalloc_test.c: the engine allocates nothing in steady state. This binary is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free (tests/tests.cmake), so every
 * allocation made by hymt code goes through the counters below. After a warm-up request,
 * counting is switched on and one request runs 1000 decode steps (plus a second, batched
 * pair): the counters must stay at zero. The check can fail: library code that allocates
 * (creating a hy_ctx) is seen by the hook first. */
#include "backend/cpu/cpu.h"
#include "engine/engine.h"
#include "test.h"

#include <stdatomic.h>
#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

static atomic_int counting;
static atomic_long allocs;

void *__wrap_malloc(size_t n)
{
    if (atomic_load(&counting))
        atomic_fetch_add(&allocs, 1);
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t m)
{
    if (atomic_load(&counting))
        atomic_fetch_add(&allocs, 1);
    return __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n)
{
    if (atomic_load(&counting))
        atomic_fetch_add(&allocs, 1);
    return __real_realloc(p, n);
}
void __wrap_free(void *p)
{
    if (p && atomic_load(&counting))
        atomic_fetch_add(&allocs, 1);
    __real_free(p);
}

static int run(struct hy_engine *e, int n_req, int gen)
{
    int32_t prompt[8] = {497, 11, 22, 33, 44, 55, 66, 77};
    uint64_t h[2];
    struct hy_err err;
    struct hy_engine_request r = {.prompt = prompt, .n_prompt = 8, .max_new_tokens = gen};
    r.sampling = hy_sampler_params_default(); /* full sampling path: penalty, top-k, top-p */
    for (int i = 0; i < n_req; i++) {
        r.sampling.seed = (uint64_t)i;
        if (hy_engine_submit(e, &r, &h[i], &err) != HY_OK)
            return -1;
    }
    int total = 0;
    for (int i = 0; i < n_req; i++) {
        int32_t ids[64];
        struct hy_engine_status st = {0};
        for (;;) {
            int k = hy_engine_read(e, h[i], ids, 64, 10.0, &st);
            if (k <= 0 && (k < 0 || st.done))
                break;
            total += k;
        }
        hy_engine_release(e, h[i]);
    }
    return total;
}

int main(void)
{
    char dir[4096];
    struct hy_err err = {{0}};
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    struct hy_engine *e = NULL;
    test_path(dir, sizeof dir, "HYMT_SRC", "tests/data/tiny-mqa");
    CHECK(hy_cpu_backend_create(&be, 2, &err) == HY_OK);
    CHECKF(hy_model_load(&m, dir, be, &err) == HY_OK, "%s", err.msg);
    struct hy_engine_params p = hy_engine_params_default();
    p.max_seq_tokens = 1100;
    p.kv_bytes = 8 << 20;
    CHECKF(m && hy_engine_create(&e, m, &p, &err) == HY_OK, "%s", err.msg);
    if (!e)
        return test_result();
    CHECK(run(e, 2, 50) == 100); /* warm-up */
    atomic_store(&counting, 1);
    /* positive control: library code that does allocate is seen by the hook */
    struct hy_ctx *c = NULL;
    CHECK(hy_ctx_create(&c, m, 16, 4, &err) == HY_OK);
    hy_ctx_destroy(c);
    CHECKF(atomic_load(&allocs) > 0, "the allocation hook saw nothing");
    atomic_store(&allocs, 0);
    int n = run(e, 1, 1000);
    long one = atomic_load(&allocs);
    n += run(e, 2, 300);
    long two = atomic_load(&allocs);
    atomic_store(&counting, 0);
    CHECK(n == 1600);
    CHECKF(one == 0 && two == 0, "%ld allocations in 1000 decode steps, %ld in 300 batched", one,
           two - one);
    fprintf(stderr, "%d tokens generated with %ld allocations\n", n, two);
    hy_engine_destroy(e);
    hy_model_destroy(m);
    be->i->destroy(be);
    return test_result();
}
