/* gguf_hyv3_test.c: `hymt convert` of the tiny hy_v3 checkpoint (tests/data/tiny-hyv3) into
 * llama.cpp's "hy_v3" GGUF layout and back (label model):
 *   - the metadata and tensors as llama.cpp's converter writes them and its loader reads
 *     them (conversion/hunyuan.py HYV3Model, src/models/hy-v3.cpp): general.architecture
 *     hy_v3, expert keys (gating 2 = sigmoid, weights norm, scale = router_scaling_factor,
 *     shared width), experts stacked expert-major (ne {hidden, F, E}; down {F, hidden, E}),
 *     ffn_gate_inp and exp_probs_b in F32, layer 0 dense;
 *   - bf16 and f32 files give logits bit-identical (memcmp) to the safetensors model on the
 *     reference backend over 13 prompt positions and 12 decode steps (the same weights:
 *     bf16 kept, the router and norms widened to f32 exactly);
 *   - q8_0: every position within cosine >= 0.998 of the bf16 model (measured 0.99896; the
 *     dense models' q8 threshold is 0.999, but here a quantization shift of the hidden state
 *     can also flip an expert whose biased score is within it of the k-th: the goldens'
 *     smallest such gap is 3.2e-4), and the same greedy id wherever the bf16 top-1 leads the
 *     top-2 by more than 0.25 (q8 moved one step with a 0.17 lead);
 *   - q4_0, q4_k_m, q6_k of a 256-wide checkpoint made here (every matrix's in-features a
 *     multiple of 256, so the K-quant types are used, not their Q8_0 fallback): the types
 *     llama-quantize's rules give (q4_k_m: the head Q6_K, token_embd Q4_K, attn_v and every
 *     ffn_down tensor Q6_K in layers 2 and 3 of 4 (use_more_bits), Q4_K in 0 and 1, the
 *     router F32), loaded and run on the reference backend with logits within a cosine of
 *     the bf16 model (bounds in quant_cases), finite, and the greedy ids run.
 * Exit 77 when the hymt binary is missing. */
#include "backend/cpu/cpu.h"
#include "formats/gguf.h"
#include "model/hunyuan.h"
#include "test.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#define NP 13
#define NS 12
#define V 512

static const int32_t prompt[NP] = {497, 320, 350, 459, 296, 397, 426, 115, 28, 153, 145, 447, 467};
static char tmpdir[256], src[4096];

static int convert_from(const char *from, const char *type, char *out, size_t cap)
{
    char bin[1024], cmd[8192];
    test_path(bin, sizeof bin, "HYMT_BIN", "hymt");
    snprintf(out, cap, "%s/hyv3-%s.gguf", tmpdir, type);
    snprintf(cmd, sizeof cmd, "'%s' -q convert -m '%s' -o '%s' --type %s --force 2>/dev/null",
             bin, from, out, type);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int convert(const char *type, char *out, size_t cap)
{
    return convert_from(src, type, out, cap);
}

/* Logits of the prompt positions and NS decode steps fed with the ids in `ids`. */
static void run(const char *path, struct hy_backend *be, const int32_t *ids, float *lg,
                int32_t *picks)
{
    struct hy_err err = {{0}};
    struct hy_model *m = NULL;
    struct hy_ctx *c = NULL;
    CHECKF(hy_model_load(&m, path, be, &err) == HY_OK, "%s: %s", path, err.msg);
    if (m)
        CHECK(hy_ctx_create(&c, m, NP + NS + 1, NP, &err) == HY_OK);
    if (c)
        CHECK(hy_model_forward(c, prompt, NP, true, lg, &err) == HY_OK);
    for (int t = 0; c && t < NS; t++) {
        const float *last = lg + (NP - 1 + t) * V;
        int32_t id = 0;
        for (int i = 1; i < V; i++)
            id = last[i] > last[id] ? i : id;
        picks[t] = id;
        int32_t feed = ids ? ids[t] : id;
        CHECK(hy_model_forward(c, &feed, 1, false, lg + (NP + t) * V, &err) == HY_OK);
    }
    hy_ctx_destroy(c);
    hy_model_destroy(m);
}

static void check_meta(const char *path)
{
    struct hy_gguf *g = NULL;
    struct hy_err err = {{0}};
    CHECKF(hy_gguf_open(&g, path, &err) == HY_OK, "%s", err.msg);
    if (!g)
        return;
    const char *arch = NULL;
    size_t len = 0;
    uint64_t gating = 0, shexp = 0, n = 0;
    bool norm = false;
    double scale = 0;
    CHECK(hy_gguf_get_str(g, "general.architecture", true, &arch, &len, &err) == HY_OK &&
          len == 5 && !memcmp(arch, "hy_v3", 5));
    CHECK(hy_gguf_get_uint(g, "hy_v3.expert_gating_func", true, &gating, &err) == HY_OK &&
          gating == 2);
    CHECK(hy_gguf_get_bool(g, "hy_v3.expert_weights_norm", true, &norm, &err) == HY_OK && norm);
    CHECK(hy_gguf_get_real(g, "hy_v3.expert_weights_scale", true, &scale, &err) == HY_OK &&
          fabs(scale - 2.826) < 1e-6);
    CHECK(hy_gguf_get_uint(g, "hy_v3.expert_shared_feed_forward_length", true, &shexp, &err) ==
              HY_OK && shexp == 32);
    CHECK(hy_gguf_get_uint(g, "hy_v3.expert_count", true, &n, &err) == HY_OK && n == 8);
    const struct hy_gguf_tensor *t = hy_gguf_find_tensor(g, "blk.1.ffn_gate_exps.weight");
    CHECK(t && t->n_dims == 3 && t->ne[0] == 64 && t->ne[1] == 32 && t->ne[2] == 8);
    t = hy_gguf_find_tensor(g, "blk.3.ffn_down_exps.weight");
    CHECK(t && t->n_dims == 3 && t->ne[0] == 32 && t->ne[1] == 64 && t->ne[2] == 8);
    t = hy_gguf_find_tensor(g, "blk.2.exp_probs_b");
    CHECK(t && t->n_dims == 1 && t->ne[0] == 8 && t->ggml_type == HY_GGML_F32);
    t = hy_gguf_find_tensor(g, "blk.1.ffn_gate_inp.weight");
    CHECK(t && t->ggml_type == HY_GGML_F32 && t->ne[0] == 64 && t->ne[1] == 8);
    CHECK(hy_gguf_find_tensor(g, "blk.0.ffn_gate.weight") &&
          !hy_gguf_find_tensor(g, "blk.0.ffn_gate_inp.weight"));
    CHECK(hy_gguf_find_tensor(g, "output.weight") != NULL);
    hy_gguf_close(g);
}

/* top-1 minus top-2 of a row of logits */
static float margin(const float *x)
{
    float a = -INFINITY, b = -INFINITY;
    for (int i = 0; i < V; i++)
        if (x[i] > a)
            b = a, a = x[i];
        else if (x[i] > b)
            b = x[i];
    return a - b;
}

static double cosine(const float *a, const float *b, int n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++)
        ab += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
    return ab / sqrt(aa * bb);
}

/* The ggml type of tensor name in the file at path (-1 when absent). */
static int type_of(const struct hy_gguf *g, const char *name)
{
    const struct hy_gguf_tensor *t = hy_gguf_find_tensor(g, name);
    return t ? (int)t->ggml_type : -1;
}

static void check_types(const char *path, const char *type)
{
    struct hy_gguf *g = NULL;
    struct hy_err err = {{0}};
    CHECKF(hy_gguf_open(&g, path, &err) == HY_OK, "%s", err.msg);
    if (!g)
        return;
    const bool km = !strcmp(type, "q4_k_m"), q6 = !strcmp(type, "q6_k");
    const int base = q6 ? HY_GGML_Q6_K : km ? HY_GGML_Q4_K : HY_GGML_Q4_0;
    const struct {
        const char *name;
        int want;
    } w[] = {
        {"output.weight", HY_GGML_Q6_K},
        {"token_embd.weight", base},
        {"blk.1.ffn_gate_inp.weight", HY_GGML_F32},
        {"blk.1.exp_probs_b", HY_GGML_F32},
        {"blk.0.attn_v.weight", base},
        {"blk.2.attn_v.weight", km ? HY_GGML_Q6_K : base},
        {"blk.0.ffn_down.weight", base},
        {"blk.1.ffn_down_exps.weight", base},
        {"blk.3.ffn_down_exps.weight", km ? HY_GGML_Q6_K : base},
        {"blk.2.ffn_down_shexp.weight", km ? HY_GGML_Q6_K : base},
        {"blk.3.ffn_gate_exps.weight", base},
        {"blk.3.attn_k.weight", base},
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        CHECKF(type_of(g, w[i].name) == w[i].want, "%s: %s is %s, want %s", type, w[i].name,
               hy_ggml_type_name((uint32_t)type_of(g, w[i].name)),
               hy_ggml_type_name((uint32_t)w[i].want));
    hy_gguf_close(g);
}

/* A 4-layer hy_v3 checkpoint 256 wide (hidden, expert and shared width; dense ffn 512) with
 * 4 experts all used (top-4: no routing decision a quantization shift could flip, so the
 * logits measure the types' error, not chaos: with top-2 of 8, even q8_0 gave cosine 0.32
 * at a position where an expert flipped), converted to the 4- and 6-bit types, against its
 * bf16 model fed the same tokens (the bf16 model's greedy picks). Bounds on the worst
 * cosine over the 25 positions: uniform weights lose a relative RMS of about step/sqrt(12)
 * per weight (measured on this file's tensors: Q4_0 6.5%, Q4_K 5.5%, Q6_K 1.3%), which
 * compounds through 4 layers and the head into logit cosines like the dense tiny models'
 * (quant_accuracy_test: q4_0 0.906, q4_k 0.968, q6_k 0.997). Measured here (reference
 * backend; the decode positions are the worst): q4_0 0.881, q4_k_m 0.864 (its token_embd is
 * Q4_K too), q6_k 0.9932; the bounds leave room for other CPUs' float orders. */
static void quant_cases(struct hy_backend *be)
{
    char bin[1024], cmd[8192], dir[512], path[512];
    test_path(bin, sizeof bin, "HYMT_BIN", "hymt");
    snprintf(dir, sizeof dir, "%s/w256", tmpdir);
    snprintf(cmd, sizeof cmd, "'%s' -q make-test-model --preset tiny-hyv3 --out '%s' --layers 4 "
             "--hidden 256 --ffn 512 --expert-ffn 256 --experts 4 --top-k 4 --heads 2 --kv-heads 1 "
             "--head-dim 128 --seed 5 > /dev/null", bin, dir);
    CHECK(system(cmd) == 0);
    static float ref[(NP + NS) * V], got[(NP + NS) * V];
    int32_t ref_ids[NS], ids[NS];
    run(dir, be, NULL, ref, ref_ids);
    const struct {
        const char *type;
        double min_cos;
    } q[] = {{"q4_0", 0.80}, {"q4_k_m", 0.80}, {"q6_k", 0.985}};
    for (size_t k = 0; k < sizeof q / sizeof q[0]; k++) {
        CHECKF(convert_from(dir, q[k].type, path, sizeof path) == 0, "convert --type %s",
               q[k].type);
        check_types(path, q[k].type);
        memset(got, 0xff, sizeof got); /* NaN: a position the run misses fails */
        run(path, be, ref_ids, got, ids);
        double worst = 1;
        int finite = 1, same = 0;
        for (int i = 0; i < (NP + NS) * V; i++)
            finite &= isfinite(got[i]) != 0;
        for (int p = 0; p < NP + NS; p++)
            worst = fmin(worst, cosine(got + p * V, ref + p * V, V));
        for (int t = 0; t < NS; t++)
            same += ids[t] == ref_ids[t];
        CHECKF(finite, "%s: logits not finite", q[k].type);
        CHECKF(worst >= q[k].min_cos, "%s GGUF: worst cosine %.5f < %.3f", q[k].type, worst,
               q[k].min_cos);
        fprintf(stderr, "%s GGUF (256 wide): worst cosine %.5f over %d positions, %d/%d greedy "
                "ids as bf16's\n", q[k].type, worst, NP + NS, same, NS);
    }
}

int main(void)
{
    char bin[1024], path[512];
    test_path(bin, sizeof bin, "HYMT_BIN", "hymt");
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "skip: %s not built\n", bin);
        return 77;
    }
    test_path(src, sizeof src, "HYMT_SRC", "tests/data/tiny-hyv3");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hymt-gguf-hyv3-XXXXXX");
    CHECK(mkdtemp(tmpdir) != NULL);
    struct hy_backend *be = NULL;
    struct hy_err err = {{0}};
    CHECK(hy_cpu_backend_create_ref(&be, &err) == HY_OK);
    static float ref[(NP + NS) * V], got[(NP + NS) * V];
    int32_t ref_ids[NS], ids[NS];
    run(src, be, NULL, ref, ref_ids);
    const char *exact[] = {"bf16", "f32"};
    for (int k = 0; k < 2; k++) {
        CHECKF(convert(exact[k], path, sizeof path) == 0, "convert --type %s", exact[k]);
        if (k == 0)
            check_meta(path);
        run(path, be, ref_ids, got, ids);
        CHECKF(!memcmp(got, ref, sizeof got), "%s GGUF: logits differ from the safetensors model",
               exact[k]);
    }
    CHECK(convert("q8_0", path, sizeof path) == 0);
    run(path, be, ref_ids, got, ids);
    double worst = 1;
    int same = 0, sure = 0;
    for (int p = 0; p < NP + NS; p++)
        worst = fmin(worst, cosine(got + p * V, ref + p * V, V));
    for (int t = 0; t < NS; t++) {
        const float *r = ref + (NP - 1 + t) * V;
        float m = margin(r);
        same += ids[t] == ref_ids[t];
        sure += m > 0.25f;
        CHECKF(m <= 0.25f || ids[t] == ref_ids[t], "q8_0 GGUF: step %d: id %d, bf16 %d with a "
               "margin of %.3f", t, ids[t], ref_ids[t], m);
    }
    CHECKF(worst >= 0.998, "q8_0 GGUF: worst cosine %.5f", worst);
    fprintf(stderr, "q8_0 GGUF: worst cosine %.6f over %d positions, %d/%d greedy ids (%d with "
            "margins > 0.25, all equal)\n", worst, NP + NS, same, NS, sure);
    quant_cases(be);
    be->i->destroy(be);
    test_rmtree(tmpdir);
    return test_result();
}
