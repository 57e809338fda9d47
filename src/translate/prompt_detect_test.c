/* prompt_detect_test.c: deciding a checkpoint's generation and sampling defaults from what
 * it says. Each case writes a checkpoint folder's config files (edited copies of what the
 * tiny checkpoints carry: config.json, generation_config.json) or a metadata-only GGUF
 * into a temporary folder named like the case, and pairs it with a real tiny tokenizer
 * (tests/data/tiny-mqa: 7b, tiny-dense18: dense): the same tokenizer must give different
 * generations by name, config and architecture. */
#include "translate/prompt_detect.h"

#include "formats/gguf.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char g_root[256];

/* A folder rel under the temporary root with the given config files (NULL: none). */
static const char *folder(const char *rel, const char *config, const char *gen_config)
{
    static char path[512];
    char f[640];
    snprintf(path, sizeof path, "%s/%s", g_root, rel);
    char mk[600];
    snprintf(mk, sizeof mk, "%s", path);
    for (char *p = mk + strlen(g_root) + 1; *p; p++) /* mkdir -p */
        if (*p == '/') {
            *p = '\0';
            mkdir(mk, 0700);
            *p = '/';
        }
    mkdir(mk, 0700);
    const char *files[2][2] = {{"config.json", config}, {"generation_config.json", gen_config}};
    for (int i = 0; i < 2; i++) {
        snprintf(f, sizeof f, "%s/%s", path, files[i][0]);
        remove(f);
        if (!files[i][1])
            continue;
        FILE *fp = fopen(f, "wb");
        CHECK(fp != NULL);
        if (fp) {
            fputs(files[i][1], fp);
            fclose(fp);
        }
    }
    return path;
}

/* Detects with path and name; checks the generation and that why mentions `because`. */
static void expect(const struct hy_tok *tok, const char *path, const char *name,
                   const char *forced, enum hy_prompt_gen gen, const char *because,
                   struct hy_prompt_profile *p)
{
    struct hy_err err = {{0}};
    const struct hy_prompt_source src = {path, name, forced};
    hy_status st = hy_prompt_profile_detect(tok, &src, p, &err);
    CHECKF(st == HY_OK, "%s: %s", path ? path : name, err.msg);
    if (st)
        return;
    CHECKF(p->kind.gen == gen, "%s: %s, want %s (%s)", path ? path : name,
           hy_prompt_gen_name(p->kind.gen), hy_prompt_gen_name(gen), p->why);
    CHECKF(strstr(p->why, because) != NULL, "why: %s (want '%s')", p->why, because);
}

#define CONFIG_7B "{\"model_type\": \"hunyuan_v1_dense\"}"
#define CARD_SAMPLING(p)                                                                   \
    ((p).temperature == 0.7f && (p).top_k == 20 && (p).top_p == 0.6f &&                   \
     (p).repetition_penalty == 1.05f)

static void test_names(struct hy_tok *t7, struct hy_tok *td)
{
    struct hy_prompt_profile p;
    /* the tokenizer alone: what hymt always did */
    expect(t7, folder("ckpt", CONFIG_7B, NULL), NULL, NULL, HY_PROMPT_GEN_MT1, "tokenizer", &p);
    CHECK(p.kind.chat == HY_PROMPT_7B && CARD_SAMPLING(p.sampling));
    CHECK(strstr(p.sampling_from, "model card") != NULL);
    expect(td, folder("ckpt", CONFIG_7B, NULL), NULL, NULL, HY_PROMPT_GEN_MT15, "tokenizer", &p);
    CHECK(p.kind.chat == HY_PROMPT_DENSE);
    /* the folder's name: Hy-MT2-7B has Hunyuan-MT-7B's tokenizer */
    expect(t7, folder("Hy-MT2-7B", CONFIG_7B, NULL), NULL, NULL, HY_PROMPT_GEN_MT2,
           "file or folder name 'Hy-MT2-7B'", &p);
    CHECK(p.kind.chat == HY_PROMPT_7B && CARD_SAMPLING(p.sampling));
    expect(t7, folder("HY-MT1.5-7B", CONFIG_7B, NULL), NULL, NULL, HY_PROMPT_GEN_MT15,
           "HY-MT1.5-7B", &p);
    expect(td, folder("hy_mt2_1.8b", CONFIG_7B, NULL), NULL, NULL, HY_PROMPT_GEN_MT2, "hy_mt2", &p);
    expect(td, folder("Hunyuan-MT-Chimera-7B", CONFIG_7B, NULL), NULL, NULL, HY_PROMPT_GEN_MT1,
           "Chimera", &p);
    /* only the last component: a folder above named like a model does not decide */
    expect(t7, folder("Hy-MT2-7B/ckpt", CONFIG_7B, NULL), NULL, NULL, HY_PROMPT_GEN_MT1,
           "tokenizer", &p);
    /* the hub cache layout, and the repo id the model was loaded by */
    expect(t7, folder("models--tencent--HY-MT1.5-7B/snapshots/0123abc", CONFIG_7B, NULL), NULL,
           NULL, HY_PROMPT_GEN_MT15, "hub cache folder 'tencent--HY-MT1.5-7B'", &p);
    expect(t7, folder("ckpt", CONFIG_7B, NULL), "tencent/Hy-MT2-7B", NULL, HY_PROMPT_GEN_MT2,
           "model name 'tencent/Hy-MT2-7B'", &p);
    /* the loaded-by name comes first */
    expect(t7, folder("HY-MT1.5-7B", CONFIG_7B, NULL), "tencent/Hy-MT2-7B", NULL,
           HY_PROMPT_GEN_MT2, "model name", &p);
    /* config.json's _name_or_path, its last two components */
    expect(t7, folder("ckpt", "{\"_name_or_path\": \"tencent/Hy-MT2-7B\"}", NULL), NULL, NULL,
           HY_PROMPT_GEN_MT2, "_name_or_path 'tencent/Hy-MT2-7B'", &p);
    expect(t7, folder("ckpt", "{\"_name_or_path\": \"/hymt2/data/Hunyuan-MT-7B\"}", NULL), NULL,
           NULL, HY_PROMPT_GEN_MT1, "'data/Hunyuan-MT-7B'", &p);
    /* Hy-MT3 is not guessed at */
    expect(t7, folder("Hy-MT3-7B", CONFIG_7B, NULL), NULL, NULL, HY_PROMPT_GEN_MT1,
           "'Hy-MT3-7B' names a generation whose prompts are not known", &p);
    /* forced wins, and a bad one is an error naming it */
    expect(t7, folder("Hy-MT2-7B", CONFIG_7B, NULL), NULL, "mt1.5", HY_PROMPT_GEN_MT15,
           "--prompt-style mt1.5", &p);
    expect(t7, folder("Hy-MT2-7B", CONFIG_7B, NULL), NULL, "auto", HY_PROMPT_GEN_MT2, "folder", &p);
    struct hy_err err = {{0}};
    const struct hy_prompt_source bad = {NULL, NULL, "mt9"};
    CHECK(hy_prompt_profile_detect(t7, &bad, &p, &err) == HY_E_INVAL && strstr(err.msg, "mt9"));
    /* no source at all: the tokenizer */
    CHECK(hy_prompt_profile_detect(td, NULL, &p, &err) == HY_OK &&
          p.kind.gen == HY_PROMPT_GEN_MT15);
}

static void test_arch_and_sampling(struct hy_tok *t7)
{
    struct hy_prompt_profile p;
    /* hy_v3 is Hy-MT2-30B-A3B's: mt2 and its card's sampling */
    expect(t7, folder("ckpt", "{\"model_type\": \"hy_v3\"}", NULL), NULL, NULL, HY_PROMPT_GEN_MT2,
           "hy_v3", &p);
    CHECK(p.sampling.temperature == 0.7f && p.sampling.top_k == 0 && p.sampling.top_p == 1.0f &&
          p.sampling.repetition_penalty == 1.0f);
    CHECK(strstr(p.sampling_from, "30B-A3B") != NULL);
    /* generation_config.json's values win over the card's */
    expect(t7,
           folder("Hy-MT2-7B", CONFIG_7B,
                  "{\"do_sample\": true, \"temperature\": 0.5, \"top_k\": -1, \"top_p\": 0.9, "
                  "\"repetition_penalty\": 1.1, \"eos_token_id\": [1, 2]}"),
           NULL, NULL, HY_PROMPT_GEN_MT2, "folder", &p);
    CHECK(p.sampling.temperature == 0.5f && p.sampling.top_k == 0 && p.sampling.top_p == 0.9f &&
          p.sampling.repetition_penalty == 1.1f);
    CHECK(strcmp(p.sampling_from, "generation_config.json") == 0);
    /* some values only: the rest from the card; do_sample false: greedy */
    expect(t7, folder("ckpt", CONFIG_7B, "{\"do_sample\": false, \"top_k\": 5}"), NULL, NULL,
           HY_PROMPT_GEN_MT1, "tokenizer", &p);
    CHECK(p.sampling.temperature == 0.0f && p.sampling.top_k == 5 && p.sampling.top_p == 0.6f);
    /* out of range or not JSON: an error naming the file */
    struct hy_err err = {{0}};
    const char *bad[] = {"{\"top_p\": 2}", "{\"temperature\": -1}", "{\"top_k\": \"x\"}", "{"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const struct hy_prompt_source src = {folder("ckpt", CONFIG_7B, bad[i]), NULL, NULL};
        hy_status st = hy_prompt_profile_detect(t7, &src, &p, &err);
        CHECKF(st != HY_OK && strstr(err.msg, "generation_config.json"), "%s: %s", bad[i],
               err.msg);
    }
    const struct hy_prompt_source src = {folder("ckpt", "[1, 2", NULL), NULL, NULL};
    CHECK(hy_prompt_profile_detect(t7, &src, &p, &err) != HY_OK);
    char line[HY_PROMPT_WHY_MAX + 256];
    expect(t7, folder("Hy-MT2-7B", CONFIG_7B, NULL), NULL, NULL, HY_PROMPT_GEN_MT2, "folder", &p);
    hy_prompt_profile_describe(&p, line, sizeof line);
    CHECKF(strstr(line, "mt2 (Hy-MT2 prompts), chat format 7b") && strstr(line, "top_k 20"), "%s",
           line);
}

/* A metadata-only GGUF: its general.name decides, whatever the file is called. */
static void test_gguf(struct hy_tok *td)
{
    char path[512];
    struct hy_err err = {{0}};
    snprintf(path, sizeof path, "%s/model-q4.gguf", g_root);
    struct hy_gguf_w *w = NULL;
    hy_status st = hy_gguf_w_open(&w, path, &err);
    if (!st)
        st = hy_gguf_w_str(w, "general.architecture", "hunyuan-dense", &err);
    if (!st)
        st = hy_gguf_w_str(w, "general.name", "Hy MT2 1.8B", &err);
    if (!st)
        st = hy_gguf_w_begin_data(w, &err);
    st = st ? st : hy_gguf_w_finish(w, &err);
    CHECKF(st == HY_OK, "%s", err.msg);
    struct hy_prompt_profile p;
    expect(td, path, "model-q4.gguf", NULL, HY_PROMPT_GEN_MT2, "general.name 'Hy MT2 1.8B'", &p);
    CHECK(p.kind.chat == HY_PROMPT_DENSE && CARD_SAMPLING(p.sampling));
}

int main(void)
{
    snprintf(g_root, sizeof g_root, "/tmp/hymt_prompt_detect_XXXXXX");
    CHECK(mkdtemp(g_root) != NULL);
    struct hy_tok *t7 = NULL, *td = NULL;
    struct hy_err err = {{0}};
    char p7[512], pd[512];
    test_path(p7, sizeof p7, "HYMT_SRC", "tests/data/tiny-mqa");
    test_path(pd, sizeof pd, "HYMT_SRC", "tests/data/tiny-dense18");
    CHECKF(hy_tok_load(&t7, p7, &err) == HY_OK && hy_tok_load(&td, pd, &err) == HY_OK, "%s",
           err.msg);
    if (t7 && td) {
        test_names(t7, td);
        test_arch_and_sampling(t7);
        test_gguf(td);
    }
    hy_tok_destroy(t7);
    hy_tok_destroy(td);
    CHECK(test_rmtree(g_root) == 0);
    return test_result();
}
