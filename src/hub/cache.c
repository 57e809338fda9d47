/* cache.c: repo ids and the hub cache layout (cache.h has the contract). */
#include "hub/cache.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static hy_status fail(struct hy_hub_err *err, hy_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static hy_status fail(struct hy_hub_err *err, hy_status st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* One part of a repo id: [A-Za-z0-9_.-]+, not starting or ending with '-' or '.', no "--"
 * or ".." (huggingface_hub's validate_repo_id). */
static bool part_ok(const char *s, size_t n)
{
    if (n == 0 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '-' && c != '_' && c != '.')
            return false;
        if (i > 0 && (c == '-' || c == '.') && s[i - 1] == c)
            return false;
    }
    return true;
}

bool hy_hub_parts_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] != '/')
            j++;
        if ((j - i == 1 && s[i] == '.') || (j - i == 2 && s[i] == '.' && s[i + 1] == '.'))
            return false;
        i = j + 1;
    }
    return true;
}

/* A revision becomes a path under refs/: printable, no spaces or backslashes, no empty,
 * "." or ".." parts, not starting with '/'. */
static bool revision_ok(const char *s, size_t n)
{
    if (n == 0 || n > HY_HUB_REV_MAX || s[0] == '/' || s[n - 1] == '/')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 0x7f || c == '\\')
            return false;
        if (c == '/' && s[i + 1] == '/')
            return false;
    }
    return hy_hub_parts_ok(s, n);
}

bool hy_hub_id_parse(const char *s, struct hy_hub_id *id)
{
    const char *at = strchr(s, '@');
    size_t n = at ? (size_t)(at - s) : strlen(s);
    const char *slash = memchr(s, '/', n);
    if (!slash || n > HY_HUB_REPO_MAX || memchr(slash + 1, '/', n - (size_t)(slash + 1 - s)))
        return false;
    if (!part_ok(s, (size_t)(slash - s)) || !part_ok(slash + 1, n - (size_t)(slash + 1 - s)))
        return false;
    if (n >= 4 && !strncmp(s + n - 4, ".git", 4))
        return false;
    const char *rev = at ? at + 1 : HY_HUB_DEFAULT_REVISION;
    if (!revision_ok(rev, strlen(rev)))
        return false;
    memcpy(id->repo, s, n);
    id->repo[n] = '\0';
    snprintf(id->revision, sizeof id->revision, "%s", rev);
    id->has_revision = at != NULL;
    return true;
}

bool hy_hub_is_commit(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == 40;
}

/* A non-empty environment variable, or NULL. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* buf = value (with a leading "~/" or a lone "~" as $HOME) + suffix. */
static hy_status join_home(char *buf, size_t cap, const char *var, const char *value,
                           const char *suffix, struct hy_hub_err *err)
{
    const char *home = env("HOME");
    int n;
    if ((value[0] == '~' && (value[1] == '/' || !value[1]))) {
        if (!home)
            return fail(err, HY_E_INVAL, "%s=%s starts with ~ but HOME is not set", var, value);
        n = snprintf(buf, cap, "%s%s%s", home, value + 1, suffix);
    } else {
        n = snprintf(buf, cap, "%s%s", value, suffix);
    }
    if (n < 0 || (size_t)n >= cap)
        return fail(err, HY_E_INVAL, "%s is too long (over %zu bytes)", var, cap - 1);
    return HY_OK;
}

hy_status hy_hub_cache_dir(char *buf, size_t cap, const char **source, struct hy_hub_err *err)
{
    static const struct {
        const char *var, *suffix;
    } order[] = {
        {"HF_HUB_CACHE", ""},
        {"HUGGINGFACE_HUB_CACHE", ""},
        {"HF_HOME", "/hub"},
        {"XDG_CACHE_HOME", "/huggingface/hub"},
        {"HOME", "/.cache/huggingface/hub"},
    };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const char *v = env(order[i].var);
        if (!v)
            continue;
        if (source)
            *source = order[i].var;
        return join_home(buf, cap, order[i].var, v, order[i].suffix, err);
    }
    return fail(err, HY_E_INVAL, "no Hugging Face cache folder: set HF_HUB_CACHE, HF_HOME or "
                "HOME");
}

hy_status hy_hub_repo_dir(const struct hy_hub_id *id, char *buf, size_t cap,
                          struct hy_hub_err *err)
{
    char cache[HY_HUB_PATH_MAX];
    hy_status st = hy_hub_cache_dir(cache, sizeof cache, NULL, err);
    if (st)
        return st;
    const char *slash = strchr(id->repo, '/');
    int n = snprintf(buf, cap, "%s/models--%.*s--%s", cache, (int)(slash - id->repo), id->repo,
                     slash + 1);
    if (n < 0 || (size_t)n >= cap)
        return fail(err, HY_E_INVAL, "hub cache path too long: %s", cache);
    return HY_OK;
}

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The commit a refs file names (its text, trailing white space dropped). */
static hy_status read_ref(const char *path, char commit[41], struct hy_hub_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return HY_E_NOTFOUND;
    char text[128];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    while (n > 0 && isspace((unsigned char)text[n - 1]))
        n--;
    text[n] = '\0';
    if (!hy_hub_is_commit(text))
        return fail(err, HY_E_FORMAT, "%s does not hold a commit hash (40 hex digits); "
                    "remove it and run `hymt pull` again", path);
    memcpy(commit, text, 41);
    return HY_OK;
}

/* "ID" as `hymt pull` takes it: the revision only when one was given. */
static void id_text(const struct hy_hub_id *id, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s", id->repo, id->has_revision ? "@" : "",
             id->has_revision ? id->revision : "");
}

hy_status hy_hub_snapshot(const struct hy_hub_id *id, char *buf, size_t cap,
                          struct hy_hub_err *err)
{
    char cache[HY_HUB_PATH_MAX], repo[HY_HUB_PATH_MAX], p[HY_HUB_PATH_MAX + 300];
    const char *src = NULL;
    hy_status st = hy_hub_cache_dir(cache, sizeof cache, &src, err);
    if (!st)
        st = hy_hub_repo_dir(id, repo, sizeof repo, err);
    if (st)
        return st;
    char idt[HY_HUB_REPO_MAX + HY_HUB_REV_MAX + 2];
    id_text(id, idt, sizeof idt);
    const char *missing = NULL;
    char commit[41] = "";
    if (!is_dir(repo)) {
        missing = repo;
    } else if (hy_hub_is_commit(id->revision)) {
        memcpy(commit, id->revision, 41);
    } else {
        snprintf(p, sizeof p, "%s/refs/%s", repo, id->revision);
        st = read_ref(p, commit, err);
        if (st == HY_E_NOTFOUND)
            missing = p;
        else if (st)
            return st;
    }
    if (!missing) {
        snprintf(p, sizeof p, "%s/snapshots/%s", repo, commit);
        if (!is_dir(p))
            missing = p;
    }
    if (missing)
        return fail(err, HY_E_NOTFOUND, "%s is neither a file or folder here nor in the Hugging "
                    "Face cache %s (from %s): no %s; run `hymt pull %s`", idt, cache, src,
                    missing, idt);
    int n = snprintf(buf, cap, "%s", p);
    if (n < 0 || (size_t)n >= cap)
        return fail(err, HY_E_INVAL, "snapshot path too long: %s", p);
    return HY_OK;
}

/* In a snapshot without config.json: its one .gguf file, into path (which holds the
 * snapshot folder on entry). */
static hy_status pick_gguf(char *path, size_t cap, const char *idt, struct hy_hub_err *err)
{
    char cfg[HY_HUB_PATH_MAX + 16];
    snprintf(cfg, sizeof cfg, "%s/config.json", path);
    struct stat sb;
    if (stat(cfg, &sb) == 0)
        return HY_OK;
    DIR *d = opendir(path);
    if (!d)
        return fail(err, HY_E_IO, "%s: %s", path, strerror(errno));
    char first[256] = "";
    int count = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 5 && !strcmp(e->d_name + n - 5, ".gguf") && n < sizeof first) {
            if (!count || strcmp(e->d_name, first) < 0)
                snprintf(first, sizeof first, "%s", e->d_name);
            count++;
        }
    }
    closedir(d);
    if (count == 0)
        return fail(err, HY_E_NOTFOUND, "%s: the snapshot %s has neither config.json nor a "
                    ".gguf file (an interrupted download?); run `hymt pull %s`", idt, path, idt);
    if (count > 1)
        return fail(err, HY_E_INVAL, "%s: the snapshot %s holds %d .gguf files; name one with "
                    "-m %s/FILE.gguf (e.g. %s)", idt, path, count, path, first);
    size_t n = strlen(path);
    if (n + 1 + strlen(first) + 1 > cap)
        return fail(err, HY_E_INVAL, "path too long: %s/%s", path, first);
    snprintf(path + n, cap - n, "/%s", first);
    return HY_OK;
}

hy_status hy_hub_resolve_model(const char *arg, char *path, size_t path_cap, char *name,
                               size_t name_cap, struct hy_hub_err *err)
{
    struct stat sb;
    struct hy_hub_id id;
    if (stat(arg, &sb) == 0) {
        if (strlen(arg) >= path_cap)
            return fail(err, HY_E_INVAL, "model path too long (over %zu bytes)", path_cap - 1);
        snprintf(path, path_cap, "%s", arg);
        if (name) {
            size_t n = strlen(arg);
            while (n > 1 && arg[n - 1] == '/')
                n--;
            size_t a = n;
            while (a > 0 && arg[a - 1] != '/')
                a--;
            snprintf(name, name_cap, "%.*s", (int)(n - a), arg + a);
        }
        return HY_OK;
    }
    if (!hy_hub_id_parse(arg, &id))
        return fail(err, HY_E_NOTFOUND, "%s: no such file or folder (MODEL is a checkpoint "
                    "folder, a GGUF file or a Hugging Face repo id such as "
                    "tencent/Hunyuan-MT-7B)", arg);
    hy_status st = hy_hub_snapshot(&id, path, path_cap, err);
    if (!st)
        st = pick_gguf(path, path_cap, arg, err);
    if (!st && name)
        snprintf(name, name_cap, "%s", id.repo);
    return st;
}
