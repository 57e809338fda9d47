/* queue_job_test.c: the queue's wire format without Redis: a job encoded and decoded is
 * the same job; every malformed field is refused with its name; ids, integers and URLs are
 * checked strictly. */
#include "queue/job.h"
#include "queue/queue.h"

#include "test.h"

#include <string.h>

static struct hy_job sample(int32_t *prompt, int n)
{
    struct hy_job j = {.prompt = prompt, .n_prompt = n, .max_new = 77, .n_stop = 2,
                       .deadline_ms = 1796000000123ll, .ttl_s = 300,
                       .sampling = {0.7f, 20, 0.6f, 1.05f, 0xfedcba9876543210ull}};
    j.stop_ids[0] = 127960;
    j.stop_ids[1] = -0 + 5;
    hy_job_new_id(j.id);
    return j;
}

static void roundtrip(void)
{
    int32_t prompt[300];
    for (int i = 0; i < 300; i++)
        prompt[i] = (int32_t)(i * 2654435761u % 128167);
    struct hy_job j = sample(prompt, 300), d;
    char *scratch = malloc(hy_job_scratch_bytes(&j));
    struct hy_job_field f[HY_JOB_N_FIELDS];
    int n = hy_job_encode(&j, scratch, f);
    struct hy_err err = {{0}};
    CHECK(n == HY_JOB_N_FIELDS);
    CHECKF(hy_job_decode(f, (size_t)n, &d, &err) == HY_OK, "%s", err.msg);
    CHECK(!strcmp(d.id, j.id) && d.n_prompt == 300 && d.max_new == 77);
    CHECK(d.prompt && !memcmp(d.prompt, prompt, sizeof prompt));
    CHECK(d.n_stop == 2 && d.stop_ids[0] == 127960 && d.stop_ids[1] == 5);
    CHECK(d.deadline_ms == j.deadline_ms && d.ttl_s == 300);
    CHECK(d.sampling.temperature == j.sampling.temperature && d.sampling.top_k == 20 &&
          d.sampling.top_p == j.sampling.top_p &&
          d.sampling.repetition_penalty == j.sampling.repetition_penalty &&
          d.sampling.seed == j.sampling.seed);
    hy_job_free(&d);
    /* each malformed field, alone, is refused and named */
    static const struct {
        const char *field, *val;
        size_t len;
    } bad[] = {{"v", "2", 1},          {"id", "ABCDEF", 6},        {"p", "\1\2\3", 3},
               {"p", "", 0},           {"n", "0", 1},              {"n", "12x", 3},
               {"n", "99999999999999999999", 20}, {"s", "0.7 0.6 20", 10},
               {"s", "nan 1 0 1 1", 11}, {"s", "0.5 2 0 1 1", 11}, {"stop", "\1\2\3\4\5", 5},
               {"dl", "-5", 2},        {"ttl", "0", 1}};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        struct hy_job_field g[HY_JOB_N_FIELDS];
        memcpy(g, f, sizeof g);
        for (int i = 0; i < n; i++)
            if (!strcmp(g[i].name, bad[b].field)) {
                g[i].val = bad[b].val;
                g[i].val_len = bad[b].len;
            }
        memset(&err, 0, sizeof err);
        hy_status st = hy_job_decode(g, (size_t)n, &d, &err);
        CHECKF(st != HY_OK && d.prompt == NULL, "field %s = '%s' was accepted", bad[b].field,
               bad[b].val);
        CHECKF(strstr(err.msg, bad[b].field) || strstr(err.msg, "job"), "%s", err.msg);
    }
    /* a missing field */
    CHECK(hy_job_decode(f + 1, (size_t)n - 1, &d, &err) == HY_E_FORMAT && strstr(err.msg, "v"));
    free(scratch);
}

static void scalars(void)
{
    int64_t v = 0;
    CHECK(hy_job_parse_int("123", 3, 0, 1000, &v) && v == 123);
    CHECK(hy_job_parse_int("-7", 2, -10, 10, &v) && v == -7);
    CHECK(!hy_job_parse_int("", 0, 0, 10, &v) && !hy_job_parse_int("-", 1, -10, 10, &v));
    CHECK(!hy_job_parse_int("1 ", 2, 0, 10, &v) && !hy_job_parse_int("11", 2, 0, 10, &v));
    CHECK(!hy_job_parse_int("9223372036854775808", 19, 0, INT64_MAX, &v));
    char id[HY_JOB_ID_LEN + 1], id2[HY_JOB_ID_LEN + 1];
    hy_job_new_id(id);
    hy_job_new_id(id2);
    CHECK(hy_job_id_valid(id, strlen(id)) && strcmp(id, id2) != 0);
    CHECK(!hy_job_id_valid("0123", 4));
    struct hy_queue_url u;
    struct hy_err err = {{0}};
    CHECK(hy_queue_url_parse("redis://10.0.0.5:6390/3", &u, &err) == HY_OK &&
          !strcmp(u.host, "10.0.0.5") && u.port == 6390 && u.db == 3);
    CHECK(hy_queue_url_parse("redis://queue.local", &u, &err) == HY_OK && u.port == 6379 &&
          u.db == 0);
    static const char *const bad[] = {"http://x", "redis://", "redis://h:0", "redis://h:70000",
                                      "redis://h:-1", "redis://h/x", "redis://h/9999",
                                      "redis://a b", "redis://h:1/2/3", NULL};
    for (int i = 0; bad[i]; i++)
        CHECKF(hy_queue_url_parse(bad[i], &u, &err) == HY_E_INVAL, "%s accepted", bad[i]);
}

int main(void)
{
    roundtrip();
    scalars();
    return test_result();
}
