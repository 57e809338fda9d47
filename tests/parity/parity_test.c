/* parity_test.c: hymt's forward pass against Hugging Face transformers' goldens.
 * usage: parity_test MODEL_DIR ref|cpu|cli  (the folder holds golden.json and the .f32
 * logits that tests/parity/make_golden.py wrote with transformers on float32 weights).
 * Every mode checks the RoPE inverse frequencies against transformers' and the model doc
 * formula, then:
 *  ref: the reference backend: every prompt position's logits, then 24 greedy steps
 *       through the KV cache (ids identical, logits close);
 *  cpu: the same with the fast CPU backend (2 threads), prefilling in one call, in chunks
 *       of 5 and token by token;
 *  cli: `hymt generate --ids ... --ignore-eos --dump-logits` gives the same ids and logits.
 * Tolerance: per position, max|ours - golden| <= 1e-4 * max|golden|. Both sides
 * compute in float32 from the same weights; only summation order differs, which moves
 * logits by ~1e-6 relative, so 1e-4 leaves room without hiding a wrong op (a wrong op
 * moves them by 1e-2 or more). */
#include "backend/cpu/cpu.h"
#include "core/json.h"
#include "model/hunyuan.h"
#include "test.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#define TOL 1e-4

struct golden {
    int n_prompt, n_gen;
    int32_t prompt[256], greedy[256];
    int64_t vocab;
    float *plog, *glog; /* [n_prompt, vocab], [n_gen, vocab] */
    double inv_freq[512];
    int n_inv;
};

static float *read_f32(const char *dir, const char *name, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    float *p = malloc(n * sizeof *p);
    size_t got = f && p ? fread(p, sizeof *p, n, f) : 0;
    if (f)
        fclose(f);
    if (got != n) {
        fprintf(stderr, "%s: expected %zu floats, read %zu\n", path, n, got);
        free(p);
        return NULL;
    }
    return p;
}

static int read_ids(json_t *a, int32_t *ids, int cap)
{
    int n = 0;
    for (size_t i = 0; json_is_array(a) && i < json_array_size(a) && n < cap; i++)
        ids[n++] = (int32_t)json_integer_value(json_array_get(a, i));
    return n;
}

static int load_golden(struct golden *g, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/golden.json", dir);
    json_t *j = NULL;
    struct hy_err err;
    if (hy_json_load_file(&j, path, 1 << 22, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    g->n_prompt = read_ids(json_object_get(j, "prompt"), g->prompt, 256);
    g->n_gen = read_ids(json_object_get(j, "greedy"), g->greedy, 256);
    g->vocab = json_integer_value(json_object_get(j, "vocab_size"));
    json_t *inv = json_object_get(j, "inv_freq");
    g->n_inv = 0;
    for (size_t i = 0; i < json_array_size(inv) && i < 512; i++)
        g->inv_freq[g->n_inv++] = json_real_value(json_array_get(inv, i));
    json_decref(j);
    g->plog = read_f32(dir, "golden_prompt_logits.f32", (size_t)(g->n_prompt * g->vocab));
    g->glog = read_f32(dir, "golden_gen_logits.f32", (size_t)(g->n_gen * g->vocab));
    return g->n_prompt > 0 && g->n_gen > 0 && g->plog && g->glog ? 0 : -1;
}

/* max|a-b| / max|ref| over one row of logits */
static double row_rel(const float *a, const float *ref, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - ref[i]);
        num = d > num || isnan(d) ? d : num;
        den = fabs(ref[i]) > den ? fabs(ref[i]) : den;
    }
    return num / den;
}

static int32_t argmax(const float *x, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return (int32_t)b;
}

/* Prefill the prompt in chunks of `chunk` tokens (all logits), then decode greedily. */
static void check_model(const struct golden *g, struct hy_model *m, int chunk, const char *tag)
{
    struct hy_err err = {{0}};
    struct hy_ctx *c = NULL;
    const int64_t V = g->vocab;
    CHECKF(hy_ctx_create(&c, m, g->n_prompt + g->n_gen, g->n_prompt, &err) == HY_OK, "%s",
           err.msg);
    if (!c)
        return;
    float *lg = malloc((size_t)(g->n_prompt * V) * sizeof *lg);
    for (int p = 0; p < g->n_prompt; p += chunk) {
        int T = g->n_prompt - p < chunk ? g->n_prompt - p : chunk;
        CHECKF(hy_model_forward(c, g->prompt + p, T, true, lg + p * V, &err) == HY_OK, "%s",
               err.msg);
    }
    double worst = 0;
    for (int t = 0; t < g->n_prompt; t++) {
        double r = row_rel(lg + t * V, g->plog + t * V, V);
        worst = r > worst ? r : worst;
        CHECKF(r <= TOL, "%s chunk %d: prompt position %d: rel diff %.3g", tag, chunk, t, r);
    }
    double worst_gen = 0;
    int same = 0;
    const float *last = lg + (g->n_prompt - 1) * V;
    float *step = malloc((size_t)V * sizeof *step);
    for (int s = 0; s < g->n_gen; s++) {
        double r = row_rel(last, g->glog + s * V, V);
        worst_gen = r > worst_gen ? r : worst_gen;
        CHECKF(r <= TOL, "%s: greedy step %d: rel diff %.3g", tag, s, r);
        int32_t id = argmax(last, V);
        same += id == g->greedy[s];
        CHECKF(id == g->greedy[s], "%s: greedy step %d: id %d, transformers %d", tag, s, id,
               g->greedy[s]);
        /* feed transformers' token so one divergence does not cascade */
        CHECK(hy_model_forward(c, &g->greedy[s], 1, false, step, &err) == HY_OK);
        last = step;
    }
    fprintf(stderr, "%s chunk %d: prompt max rel %.2e, decode max rel %.2e, %d/%d greedy ids\n",
            tag, chunk, worst, worst_gen, same, g->n_gen);
    free(step);
    free(lg);
    hy_ctx_destroy(c);
}

/* The CLI end to end: hymt generate on the prompt, ids on stdout, logits in a dump file. */
static void check_cli(const struct golden *g, const char *dir)
{
    char cmdline[8192], dump[] = "/tmp/hymt-parity-XXXXXX";
    int fd = mkstemp(dump);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    close(fd);
    const char *bin = getenv("HYMT_BIN");
    int n = snprintf(cmdline, sizeof cmdline, "%s/hymt -q generate --device cpu -m %s -n %d --temp 0 "
                     "--ignore-eos --threads 2 --dump-logits %s --ids ",
                     bin ? bin : ".", dir, g->n_gen, dump);
    for (int i = 0; i < g->n_prompt; i++)
        n += snprintf(cmdline + n, sizeof cmdline - (size_t)n, "%s%d", i ? "," : "", g->prompt[i]);
    FILE *p = popen(cmdline, "r");
    int32_t ids[256];
    int k = 0;
    while (p && k < 256 && fscanf(p, "%d", &ids[k]) == 1)
        k++;
    CHECKF(p && pclose(p) == 0, "%s failed", cmdline);
    CHECKF(k == g->n_gen, "hymt generate printed %d ids, expected %d", k, g->n_gen);
    for (int i = 0; i < k && i < g->n_gen; i++)
        CHECKF(ids[i] == g->greedy[i], "cli: id %d is %d, transformers %d", i, ids[i],
               g->greedy[i]);
    float *lg = read_f32("/tmp", dump + 5, (size_t)(g->n_gen * g->vocab));
    CHECK(lg != NULL);
    for (int s = 0; lg && s < g->n_gen; s++) {
        double r = row_rel(lg + s * g->vocab, g->glog + s * g->vocab, g->vocab);
        CHECKF(r <= TOL, "cli: dumped logits of step %d: rel diff %.3g", s, r);
    }
    free(lg);
    unlink(dump);
}

static void check_rope(const struct golden *g, const struct hy_config *cf)
{
    float ours[512];
    hy_config_inv_freq(cf, ours);
    int half = (int)cf->head_dim / 2;
    CHECKF(g->n_inv == half, "golden has %d inv_freq, head_dim/2 is %d", g->n_inv, half);
    /* model doc 3.3: base = theta * alpha^(d/(d-2)), inv_freq[i] = base^(-2i/d) */
    double d = (double)cf->head_dim;
    double base = cf->rope_theta * (cf->rope_alpha > 0 ? pow(cf->rope_alpha, d / (d - 2)) : 1.0);
    CHECKF(fabs(cf->rope_base - base) <= 1e-9 * base, "rope base %.6f, formula %.6f",
           cf->rope_base, base);
    for (int i = 0; i < half && i < g->n_inv; i++) {
        double want = pow(base, -2.0 * i / d);
        CHECKF(fabs(ours[i] - want) <= 1e-6 * want, "inv_freq[%d] %.9g, formula %.9g", i,
               ours[i], want);
        /* transformers computes base ** (arange/d) in float32: a few ulp apart */
        CHECKF(fabs(ours[i] - g->inv_freq[i]) <= 1e-5 * g->inv_freq[i],
               "inv_freq[%d] %.9g, transformers %.9g", i, ours[i], g->inv_freq[i]);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[2], "ref") && strcmp(argv[2], "cpu") && strcmp(argv[2], "cli"))) {
        fprintf(stderr, "usage: parity_test MODEL_DIR ref|cpu|cli\n");
        return 2;
    }
    const char *mode = argv[2];
    struct golden g;
    if (load_golden(&g, argv[1]))
        return 1;
    struct hy_err err = {{0}};
    struct hy_backend *be = NULL;
    struct hy_model *m = NULL;
    if (!strcmp(mode, "ref"))
        CHECK(hy_cpu_backend_create_ref(&be, &err) == HY_OK);
    else
        CHECK(hy_cpu_backend_create(&be, 2, &err) == HY_OK);
    CHECKF(be && hy_model_load(&m, argv[1], be, &err) == HY_OK, "%s", err.msg);
    if (m) {
        CHECK(m->cfg.vocab_size == g.vocab);
        check_rope(&g, &m->cfg);
        if (!strcmp(mode, "ref")) {
            check_model(&g, m, g.n_prompt, "reference");
        } else if (!strcmp(mode, "cpu")) {
            check_model(&g, m, g.n_prompt, "cpu");
            check_model(&g, m, 5, "cpu");
            check_model(&g, m, 1, "cpu");
        } else {
            check_cli(&g, argv[1]);
        }
    }
    hy_model_destroy(m);
    if (be)
        be->i->destroy(be);
    free(g.plog);
    free(g.glog);
    return test_result();
}
