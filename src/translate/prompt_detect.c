/* prompt_detect.c: a checkpoint's prompts and sampling defaults (contract in
 * prompt_detect.h). */
#include "translate/prompt_detect.h"

#include "core/json.h"
#include "formats/gguf.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define CONFIG_MAX_BYTES (1u << 20)
#define NAME_FOLD_MAX 512

/* What the checkpoint's files say, gathered before deciding. */
struct facts {
    char names[6][NAME_FOLD_MAX]; /* candidate names, in the order they count */
    const char *name_what[6];     /* where each came from */
    int n_names;
    bool hyv3;                    /* the hy_v3 architecture */
    json_t *gen_config;           /* generation_config.json, or NULL */
};

static void add_name(struct facts *f, const char *what, const char *s, size_t n)
{
    if (!s || !n || f->n_names >= 6)
        return;
    n = n < NAME_FOLD_MAX - 1 ? n : NAME_FOLD_MAX - 1;
    memcpy(f->names[f->n_names], s, n);
    f->names[f->n_names][n] = '\0';
    f->name_what[f->n_names++] = what;
}

/* s folded: ASCII lower case, only letters, digits and '.'. */
static void fold(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s && n + 1 < cap; s++) {
        char c = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.')
            out[n++] = c;
    }
    out[n] = '\0';
}

/* The generation a name says: 1 found, 0 none, -1 a Hunyuan MT name of a generation not
 * known here (hymt3...). */
static int gen_of_name(const char *name, enum hy_prompt_gen *g)
{
    static const struct {
        const char *key;
        int gen; /* -1: known to be another generation */
    } KEYS[] = {
        {"hymt2", HY_PROMPT_GEN_MT2},  {"hymt1.5", HY_PROMPT_GEN_MT15},
        {"hymt15", HY_PROMPT_GEN_MT15}, {"hymt1.0", HY_PROMPT_GEN_MT1},
        {"hunyuanmt", HY_PROMPT_GEN_MT1}, {"hymt3", -1},
    };
    char f[NAME_FOLD_MAX];
    fold(name, f, sizeof f);
    for (size_t i = 0; i < sizeof KEYS / sizeof KEYS[0]; i++) {
        if (!strstr(f, KEYS[i].key))
            continue;
        if (KEYS[i].gen < 0)
            return -1;
        *g = (enum hy_prompt_gen)KEYS[i].gen;
        return 1;
    }
    return 0;
}

/* The last component of a path (a trailing '/' ignored), and a hub cache folder
 * models--ORG--NAME in it as ORG/NAME. */
static void path_names(struct facts *f, const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t a = n;
    while (a > 0 && path[a - 1] != '/')
        a--;
    add_name(f, "the file or folder name", path + a, n - a);
    const char *m = strstr(path, "models--");
    if (m && (m == path || m[-1] == '/')) {
        const char *e = strchr(m, '/');
        add_name(f, "the hub cache folder", m + 8, e ? (size_t)(e - m - 8) : strlen(m + 8));
    }
}

static hy_status read_json(const char *dir, const char *file, json_t **out, struct hy_err *err)
{
    char p[4096];
    struct stat sb;
    *out = NULL;
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, file) >= sizeof p || stat(p, &sb) != 0)
        return HY_OK; /* absent: nothing said */
    return hy_json_load_file(out, p, CONFIG_MAX_BYTES, err);
}

static hy_status folder_facts(struct facts *f, const char *dir, struct hy_err *err)
{
    json_t *cfg = NULL;
    hy_status st = read_json(dir, "config.json", &cfg, err);
    if (!st && cfg) {
        const char *mt = json_string_value(json_object_get(cfg, "model_type"));
        f->hyv3 = mt && strcmp(mt, "hy_v3") == 0;
        /* a repo id, or a path whose last two components count (ORG/NAME, DIR/NAME) */
        const char *np = json_string_value(json_object_get(cfg, "_name_or_path"));
        const char *c = np ? np + strlen(np) : NULL;
        for (int slashes = 0; c && c > np && !(c[-1] == '/' && ++slashes == 2);)
            c--;
        add_name(f, "config.json _name_or_path", c, c ? strlen(c) : 0);
    }
    json_decref(cfg);
    if (!st)
        st = read_json(dir, "generation_config.json", &f->gen_config, err);
    return st;
}

static void gguf_name(struct facts *f, const struct hy_gguf *g, const char *key)
{
    const char *s = NULL;
    size_t n = 0;
    if (hy_gguf_get_str(g, key, false, &s, &n, NULL) == HY_OK && s)
        add_name(f, key, s, n);
}

static hy_status gguf_facts(struct facts *f, const char *path, struct hy_err *err)
{
    struct hy_gguf *g = NULL;
    hy_status st = hy_gguf_open(&g, path, err);
    if (st)
        return st;
    gguf_name(f, g, "general.name");
    gguf_name(f, g, "general.basename");
    gguf_name(f, g, "general.source.huggingface.repository");
    const char *a = NULL;
    size_t n = 0;
    if (hy_gguf_get_str(g, "general.architecture", false, &a, &n, NULL) == HY_OK && a)
        f->hyv3 = n == 5 && memcmp(a, "hy_v3", 5) == 0;
    hy_gguf_close(g);
    return HY_OK;
}

/* The generation by the rules of the contract, and why, into p. */
static hy_status decide(const struct facts *f, const struct hy_prompt_source *src,
                        struct hy_prompt_profile *p, struct hy_err *err)
{
    const char *forced = src ? src->forced : NULL;
    if (forced && *forced && strcmp(forced, "auto") != 0) {
        if (!hy_prompt_gen_parse(forced, &p->kind.gen))
            return hy_err_set(err, HY_E_INVAL, "--prompt-style '%.64s': expected auto, mt1 "
                              "(Hunyuan-MT-7B, Chimera), mt1.5 (HY-MT1.5) or mt2 (Hy-MT2)",
                              forced);
        snprintf(p->why, sizeof p->why, "--prompt-style %s", forced);
        return HY_OK;
    }
    char other[160] = "";
    for (int i = 0; i < f->n_names; i++) {
        int r = gen_of_name(f->names[i], &p->kind.gen);
        if (r > 0) {
            snprintf(p->why, sizeof p->why, "%s '%.160s'", f->name_what[i], f->names[i]);
            return HY_OK;
        }
        if (r < 0 && !other[0])
            snprintf(other, sizeof other, "; %s '%.100s' names a generation whose prompts are "
                     "not known here", f->name_what[i], f->names[i]);
    }
    if (f->hyv3) {
        p->kind.gen = HY_PROMPT_GEN_MT2;
        snprintf(p->why, sizeof p->why, "the hy_v3 architecture (Hy-MT2-30B-A3B)%s", other);
        return HY_OK;
    }
    p->kind.gen = hy_prompt_gen_of_style(p->kind.chat);
    snprintf(p->why, sizeof p->why, "the tokenizer alone (the %s chat format; no name says "
             "the generation: --prompt-style picks one)%s", hy_prompt_style_name(p->kind.chat),
             other);
    return HY_OK;
}

/* generation_config.json's sampling values over the card's. */
static hy_status gen_config_sampling(const json_t *g, struct hy_sampler_params *sp,
                                     struct hy_err *err)
{
    double t = sp->temperature, p = sp->top_p, r = sp->repetition_penalty;
    int64_t k = sp->top_k;
    bool sample = true;
    hy_status st = hy_json_get_real(g, "temperature", false, 0, 100, &t, err);
    if (!st)
        st = hy_json_get_real(g, "top_p", false, 0, 1, &p, err);
    if (!st)
        st = hy_json_get_real(g, "repetition_penalty", false, 1e-3, 100, &r, err);
    if (!st)
        st = hy_json_get_int(g, "top_k", false, INT32_MIN, INT32_MAX, &k, err);
    if (!st)
        st = hy_json_get_bool(g, "do_sample", false, &sample, err);
    if (st) {
        hy_err_prefix(err, "generation_config.json: ");
        return st;
    }
    sp->temperature = sample ? (float)t : 0.0f;
    sp->top_p = p > 0 ? (float)p : 1.0f;
    sp->top_k = k > 0 ? (int32_t)k : 0;
    sp->repetition_penalty = (float)r;
    return hy_sampler_params_check(sp, err);
}

static hy_status sampling(const struct facts *f, struct hy_prompt_profile *p, struct hy_err *err)
{
    p->sampling = hy_sampler_params_default();
    bool moe = f->hyv3 || p->kind.chat == HY_PROMPT_HYV3;
    snprintf(p->sampling_from, sizeof p->sampling_from, "the model card");
    if (p->kind.gen == HY_PROMPT_GEN_MT2 && moe) { /* Hy-MT2 README, 30B-A3B */
        p->sampling.top_p = 1.0f;
        p->sampling.top_k = 0;
        p->sampling.repetition_penalty = 1.0f;
        snprintf(p->sampling_from, sizeof p->sampling_from, "the Hy-MT2-30B-A3B model card");
    }
    if (!f->gen_config)
        return HY_OK;
    snprintf(p->sampling_from, sizeof p->sampling_from, "generation_config.json");
    return gen_config_sampling(f->gen_config, &p->sampling, err);
}

hy_status hy_prompt_profile_detect(const struct hy_tok *tok, const struct hy_prompt_source *src,
                                   struct hy_prompt_profile *out, struct hy_err *err)
{
    memset(out, 0, sizeof *out);
    struct facts f;
    memset(&f, 0, sizeof f);
    hy_status st = hy_prompt_style_detect(tok, &out->kind.chat, err);
    if (!st && src && src->name)
        add_name(&f, "the model name", src->name, strlen(src->name));
    if (!st && src && src->path) {
        path_names(&f, src->path);
        st = hy_gguf_is_gguf(src->path) ? gguf_facts(&f, src->path, err)
                                         : folder_facts(&f, src->path, err);
    }
    if (!st)
        st = decide(&f, src, out, err);
    if (!st)
        st = sampling(&f, out, err);
    json_decref(f.gen_config);
    return st;
}

void hy_prompt_profile_describe(const struct hy_prompt_profile *p, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s (%s prompts), chat format %s, decided by %s; sampling defaults "
             "(%s): temperature %g, top_k %d, top_p %g, repetition_penalty %g",
             hy_prompt_gen_name(p->kind.gen), hy_prompt_gen_title(p->kind.gen),
             hy_prompt_style_name(p->kind.chat), p->why, p->sampling_from,
             (double)p->sampling.temperature, (int)p->sampling.top_k, (double)p->sampling.top_p,
             (double)p->sampling.repetition_penalty);
}
