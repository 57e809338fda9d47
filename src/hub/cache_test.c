/* cache_test.c: repo id parsing (huggingface_hub's validate_repo_id rules), commit hashes,
 * the cache folder's precedence (HF_HUB_CACHE > HUGGINGFACE_HUB_CACHE > HF_HOME/hub >
 * XDG_CACHE_HOME/huggingface/hub > ~/.cache/huggingface/hub, constants.py), and the
 * --include/--exclude matching (Python's fnmatchcase: '*' crosses '/', "dir/" a folder).
 * The resolution of a whole cache (refs, snapshots, symlinks) is tests/hub/resolve_test.sh. */
#include "hub/cache.h"
#include "hub/pull.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static void check_ids(void)
{
    struct hy_hub_id id;
    CHECK(hy_hub_id_parse("tencent/Hunyuan-MT-7B", &id));
    CHECK(!strcmp(id.repo, "tencent/Hunyuan-MT-7B") && !strcmp(id.revision, "main") &&
          !id.has_revision);
    CHECK(hy_hub_id_parse("a_b/c.d-e@v1.0", &id));
    CHECK(!strcmp(id.repo, "a_b/c.d-e") && !strcmp(id.revision, "v1.0") && id.has_revision);
    CHECK(hy_hub_id_parse("org/name@refs/pr/1", &id) && !strcmp(id.revision, "refs/pr/1"));
    const char *bad[] = {
        "name",          "org/",         "/name",        "org/name/extra", "./x",
        "../x/y",        "org/na--me",   "org/na..me",   "-org/name",      "org/name-",
        "org/.name",     "org/name.git", "org/name@",    "org/name@../x",  "org/name@a//b",
        "org/name@/abs", "org/name@a b", "org/na me",    "org/name@x/..",  "org/n\xc3\xa9",
        ("org/012345678901234567890123456789012345678901234567890123456789012345678901234"
         "567890123456789012"), /* 97 characters */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECKF(!hy_hub_id_parse(bad[i], &id), "'%s' accepted", bad[i]);
    CHECK(hy_hub_parts_ok("a/b.c/.d/..e", 12) && hy_hub_parts_ok("...", 3));
    CHECK(!hy_hub_parts_ok("a/b.c/.d/..e", 11)); /* the last part cut to ".." */
    CHECK(!hy_hub_parts_ok(".", 1) && !hy_hub_parts_ok("a/..", 4) && !hy_hub_parts_ok("./a", 3));
    CHECK(!hy_hub_parts_ok("a/../b", 6) && hy_hub_parts_ok("a/../b", 1)); /* only s[0..n) */
    CHECK(hy_hub_is_commit("0123456789abcdef0123456789abcdef01234567"));
    CHECK(!hy_hub_is_commit("0123456789ABCDEF0123456789abcdef01234567"));
    CHECK(!hy_hub_is_commit("0123456789abcdef0123456789abcdef0123456"));
    CHECK(!hy_hub_is_commit("main"));
}

/* Sets exactly the variables given (name=value pairs, NULL-terminated); clears the others. */
static void env_only(const char *const *kv)
{
    const char *all[] = {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME",
                         "HOME"};
    for (size_t i = 0; i < 5; i++)
        unsetenv(all[i]);
    for (; kv && kv[0]; kv += 2)
        setenv(kv[0], kv[1], 1);
}

static void check_cache_dir(void)
{
    struct {
        const char *env[12];
        const char *want, *source;
    } cases[] = {
        {{"HF_HUB_CACHE", "/a", "HUGGINGFACE_HUB_CACHE", "/b", "HF_HOME", "/c", "HOME", "/h"},
         "/a", "HF_HUB_CACHE"},
        {{"HUGGINGFACE_HUB_CACHE", "/b", "HF_HOME", "/c", "HOME", "/h"}, "/b",
         "HUGGINGFACE_HUB_CACHE"},
        {{"HF_HOME", "/c", "XDG_CACHE_HOME", "/x", "HOME", "/h"}, "/c/hub", "HF_HOME"},
        {{"XDG_CACHE_HOME", "/x", "HOME", "/h"}, "/x/huggingface/hub", "XDG_CACHE_HOME"},
        {{"HOME", "/h"}, "/h/.cache/huggingface/hub", "HOME"},
        {{"HF_HOME", "~/hf", "HOME", "/h"}, "/h/hf/hub", "HF_HOME"},
        {{"HF_HUB_CACHE", "", "HOME", "/h"}, "/h/.cache/huggingface/hub", "HOME"}, /* empty: unset */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        env_only(cases[i].env);
        char buf[HY_HUB_PATH_MAX];
        const char *src = NULL;
        struct hy_hub_err err;
        hy_status st = hy_hub_cache_dir(buf, sizeof buf, &src, &err);
        CHECKF(!st && !strcmp(buf, cases[i].want) && !strcmp(src, cases[i].source),
               "case %zu: got %s from %s", i, st ? err.msg : buf, src ? src : "-");
    }
    env_only(NULL);
    char buf[HY_HUB_PATH_MAX];
    struct hy_hub_err err;
    CHECK(hy_hub_cache_dir(buf, sizeof buf, NULL, &err) == HY_E_INVAL);
    struct hy_hub_id id;
    const char *env[] = {"HF_HUB_CACHE", "/c", NULL};
    env_only(env);
    CHECK(hy_hub_id_parse("org/name@v2", &id));
    CHECK(!hy_hub_repo_dir(&id, buf, sizeof buf, &err) && !strcmp(buf, "/c/models--org--name"));
}

static void check_patterns(void)
{
    struct {
        const char *pattern, *path;
        bool match;
    } cases[] = {
        {"*.json", "config.json", true},
        {"*.json", "sub/config.json", true}, /* '*' crosses '/' as in fnmatchcase */
        {"*.gguf", "model.safetensors", false},
        {"*Q4_K_M.gguf", "hy-7b-Q4_K_M.gguf", true},
        {"*Q4_K_M.gguf", "hy-7b-q4_k_m.gguf", false}, /* case-sensitive */
        {"sub/", "sub/notes.txt", true},
        {"sub/", "subway.txt", false},
        {"model-0000[1-2]-of-*.safetensors", "model-00002-of-00004.safetensors", true},
        {"model-0000[!1]-of-*", "model-00001-of-00004.safetensors", false},
        {"a\\b", "a\\b", true}, /* no escapes */
        {"?.txt", "a.txt", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECKF(hy_hub_pattern_match(cases[i].pattern, cases[i].path) == cases[i].match,
               "'%s' on '%s'", cases[i].pattern, cases[i].path);
}

int main(void)
{
    check_ids();
    check_cache_dir();
    check_patterns();
    return test_result();
}
