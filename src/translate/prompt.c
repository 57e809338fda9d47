/* prompt.c: prompts and chat templates (contract in prompt.h). */
#include "translate/prompt.h"

#include <stdlib.h>
#include <string.h>

/* One chat template: the control tokens around each kind of turn (NULL: none). */
struct style {
    const char *name;
    const char *bos;        /* once, at the start */
    const char *sys_end;    /* after the system text */
    const char *user_begin; /* before every user turn */
    const char *user_again; /* before every user turn but the first */
    const char *user_end;   /* after the user text */
    const char *asst_begin; /* before an assistant turn */
    const char *asst_end;   /* after an assistant turn */
    const char *gen;        /* the generation prompt */
    const char *detect[2];  /* the tokens that identify the style */
    const char *stop[HY_PROMPT_MAX_STOP];
};

static const struct style STYLES[HY_PROMPT_STYLE_COUNT] = {
    [HY_PROMPT_7B] = {"7b",
                      "<|startoftext|>",
                      "<|extra_4|>",
                      NULL,
                      "<|startoftext|>",
                      "<|extra_0|>",
                      NULL,
                      "<|eos|>",
                      NULL,
                      {"<|startoftext|>", "<|extra_0|>"},
                      {"<|eos|>", "<|endoftext|>", "<|extra_5|>", NULL}},
    [HY_PROMPT_DENSE] = {"dense",
                         "<｜hy_begin▁of▁sentence｜>",
                         "<｜hy_place▁holder▁no▁3｜>",
                         "<｜hy_User｜>",
                         NULL,
                         NULL,
                         "<｜hy_Assistant｜>",
                         "<｜hy_place▁holder▁no▁2｜>",
                         "<｜hy_Assistant｜>",
                         {"<｜hy_begin▁of▁sentence｜>", "<｜hy_User｜>"},
                         {"<｜hy_place▁holder▁no▁2｜>", "<｜hy_end▁of▁sentence｜>", NULL, NULL}},
    /* Tencent's hy_v3_template.py ("from chat_template.jinja & tokenizer_config.json"):
     * the system text follows BOS with no tag. Whether the released template's generation
     * prompt adds an empty <think></think> is not known (Hy-MT2 doc 4.4): none here. */
    [HY_PROMPT_HYV3] = {"hyv3",
                        "<｜hy_begin▁of▁sentence｜>",
                        NULL,
                        "<｜hy_User｜>",
                        NULL,
                        NULL,
                        "<｜hy_Assistant｜>",
                        "<｜hy_eos｜>",
                        "<｜hy_Assistant｜>",
                        {"<｜hy_eos｜>", "<｜hy_User｜>"},
                        {"<｜hy_eos｜>", NULL, NULL, NULL}},
};

/* Detection order: hyv3 before dense, whose two tokens a hyv3 tokenizer also has. */
static const enum hy_prompt_style DETECT_ORDER[] = {HY_PROMPT_7B, HY_PROMPT_HYV3,
                                                    HY_PROMPT_DENSE};

/* One generation's plain translation prompt: prefix, the target's name, suffix, the text;
 * the Chinese one (Chinese name) for a pair with a Chinese side, else the English one. */
struct gen {
    const char *name, *title;
    const char *zh_prefix, *zh_suffix, *en_prefix, *en_suffix;
};

/* Hunyuan-MT-7B's English prompt, which HY-MT1.5 kept (model doc 5.4). */
#define EN1_PREFIX "Translate the following segment into "
#define EN1_SUFFIX ", without additional explanation.\n\n"
/* HY-MT1.5's Chinese prompt, which Hy-MT2 kept (Hy-MT2 doc 5.1). */
#define ZH15_PREFIX "将以下文本翻译为"
#define ZH15_SUFFIX "，注意只需要输出翻译后的结果，不要额外解释：\n\n"

static const struct gen GENS[HY_PROMPT_GEN_COUNT] = {
    [HY_PROMPT_GEN_MT1] = {"mt1", "Hunyuan-MT", "把下面的文本翻译成", "，不要额外解释。\n\n",
                           EN1_PREFIX, EN1_SUFFIX},
    [HY_PROMPT_GEN_MT15] = {"mt1.5", "HY-MT1.5", ZH15_PREFIX, ZH15_SUFFIX, EN1_PREFIX,
                            EN1_SUFFIX},
    /* The README's table prints the placeholders as code spans with a space on each side
     * and the key phrase in bold: Markdown, not prompt text (the report's Table 1 and
     * the HY-MT1.5 README have neither). */
    [HY_PROMPT_GEN_MT2] = {"mt2", "Hy-MT2", ZH15_PREFIX, ZH15_SUFFIX,
                           "Translate the following text into ",
                           ". Note that you should only output the translated result without "
                           "any additional explanation:\n\n"},
};

/* Aliases people type for a generation, folded (lower case, no '-', '_' or space). */
static const struct {
    const char *alias;
    enum hy_prompt_gen gen;
} GEN_ALIASES[] = {
    {"mt1", HY_PROMPT_GEN_MT1},       {"mt1.0", HY_PROMPT_GEN_MT1},
    {"hymt1.0", HY_PROMPT_GEN_MT1},   {"hunyuanmt", HY_PROMPT_GEN_MT1},
    {"chimera", HY_PROMPT_GEN_MT1},   {"hunyuanmtchimera", HY_PROMPT_GEN_MT1},
    {"mt1.5", HY_PROMPT_GEN_MT15},    {"mt15", HY_PROMPT_GEN_MT15},
    {"hymt1.5", HY_PROMPT_GEN_MT15},  {"hymt15", HY_PROMPT_GEN_MT15},
    {"mt2", HY_PROMPT_GEN_MT2},       {"hymt2", HY_PROMPT_GEN_MT2},
};

static const struct style *style_of(enum hy_prompt_style s)
{
    HY_ASSERT((size_t)s < HY_PROMPT_STYLE_COUNT);
    return &STYLES[s];
}

static const struct gen *gen_of(enum hy_prompt_gen g)
{
    HY_ASSERT((size_t)g < HY_PROMPT_GEN_COUNT);
    return &GENS[g];
}

/* Appends n bytes to buf (cap) at *at, writing only what fits; *at counts all. */
static void put(char *buf, size_t cap, size_t *at, const char *s, size_t n)
{
    if (n && *at <= cap && n <= cap - *at) /* n 0: buf may be NULL */
        memcpy(buf + *at, s, n);
    *at += n;
}

static void puts0(char *buf, size_t cap, size_t *at, const char *s)
{
    put(buf, cap, at, s, strlen(s));
}

const char *hy_prompt_style_name(enum hy_prompt_style style)
{
    return style_of(style)->name;
}

const char *hy_prompt_gen_name(enum hy_prompt_gen gen)
{
    return gen_of(gen)->name;
}

const char *hy_prompt_gen_title(enum hy_prompt_gen gen)
{
    return gen_of(gen)->title;
}

/* s folded into f (cap bytes): ASCII lower case, without '-', '_' and ' '. false when
 * it does not fit. */
static bool fold_name(const char *s, char *f, size_t cap)
{
    size_t n = 0;
    for (; s && *s; s++) {
        char c = *s;
        if (c == '-' || c == '_' || c == ' ')
            continue;
        if (n + 1 >= cap)
            return false;
        f[n++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    f[n] = '\0';
    return true;
}

bool hy_prompt_gen_parse(const char *name, enum hy_prompt_gen *gen)
{
    char f[32], t[32];
    if (!fold_name(name, f, sizeof f))
        return false;
    for (size_t i = 0; i < HY_PROMPT_GEN_COUNT; i++) {
        if (fold_name(GENS[i].title, t, sizeof t) && strcmp(f, t) == 0) {
            *gen = (enum hy_prompt_gen)i;
            return true;
        }
    }
    for (size_t i = 0; i < sizeof GEN_ALIASES / sizeof GEN_ALIASES[0]; i++)
        if (strcmp(f, GEN_ALIASES[i].alias) == 0) {
            *gen = GEN_ALIASES[i].gen;
            return true;
        }
    return false;
}

enum hy_prompt_gen hy_prompt_gen_of_style(enum hy_prompt_style style)
{
    static const enum hy_prompt_gen BY_STYLE[HY_PROMPT_STYLE_COUNT] = {
        [HY_PROMPT_7B] = HY_PROMPT_GEN_MT1,
        [HY_PROMPT_DENSE] = HY_PROMPT_GEN_MT15,
        [HY_PROMPT_HYV3] = HY_PROMPT_GEN_MT2,
    };
    return BY_STYLE[style_of(style) - STYLES];
}

hy_status hy_prompt_style_detect(const struct hy_tok *tok, enum hy_prompt_style *style,
                                 struct hy_err *err)
{
    char missing[200] = {0};
    size_t at = 0;
    for (size_t o = 0; o < sizeof DETECT_ORDER / sizeof DETECT_ORDER[0]; o++) {
        const struct style *st = &STYLES[DETECT_ORDER[o]];
        bool ok = true;
        for (int i = 0; i < 2; i++) {
            if (hy_tok_find(tok, st->detect[i]) < 0) {
                puts0(missing, sizeof missing - 1, &at, at ? ", " : "");
                puts0(missing, sizeof missing - 1, &at, st->detect[i]);
                ok = false;
            }
        }
        if (ok) {
            *style = DETECT_ORDER[o];
            return HY_OK;
        }
    }
    missing[at < sizeof missing ? at : sizeof missing - 1] = '\0';
    return hy_err_set(err, HY_E_NOTFOUND,
                      "tokenizer has none of the Hunyuan chat templates (7b, hyv3, dense); "
                      "missing: %s",
                      missing);
}

hy_status hy_prompt_check_langs(enum hy_prompt_gen gen, const struct hy_lang *src,
                                const struct hy_lang *tgt, struct hy_err *err)
{
    const char *g = gen_of(gen)->name;
    const struct hy_lang *l = !hy_lang_gen_has(g, tgt)               ? tgt
                              : src && !hy_lang_gen_has(g, src) ? src
                                                                : NULL;
    if (l)
        return hy_err_set(err, HY_E_INVAL, "%s (%s) is not among the %zu languages %s models "
                          "translate", l->name_en, l->code, hy_lang_gen_count(g),
                          gen_of(gen)->title);
    return HY_OK;
}

bool hy_prompt_is_chinese(const struct hy_lang *src, const struct hy_lang *tgt)
{
    return (src && src->zh_side) || tgt->zh_side;
}

/* ---- text building ---- */

static hy_status finish(size_t at, size_t cap, size_t *n_out, struct hy_err *err)
{
    *n_out = at;
    if (at > cap)
        return hy_err_set(err, HY_E_NOSPACE, "prompt: %zu bytes, room for %zu", at, cap);
    return HY_OK;
}

hy_status hy_prompt_user(enum hy_prompt_gen gen, const struct hy_lang *src,
                         const struct hy_lang *tgt, const char *text, size_t len, char *buf,
                         size_t cap, size_t *n_out, struct hy_err *err)
{
    const struct gen *g = gen_of(gen);
    bool zh = hy_prompt_is_chinese(src, tgt);
    size_t at = 0;
    puts0(buf, cap, &at, zh ? g->zh_prefix : g->en_prefix);
    puts0(buf, cap, &at, zh ? tgt->name_zh : tgt->name_en);
    puts0(buf, cap, &at, zh ? g->zh_suffix : g->en_suffix);
    put(buf, cap, &at, text, len);
    return finish(at, cap, n_out, err);
}

/* ---- the template walk ---- */

/* Receives the template's pieces in order: control tokens by name, texts by bytes. */
struct sink {
    hy_status (*control)(struct sink *k, const char *name);
    hy_status (*text)(struct sink *k, const char *s, size_t n);
};

static hy_status control(struct sink *k, const char *name)
{
    return name ? k->control(k, name) : HY_OK;
}

/* One message: the control tokens of its role around its text. */
static hy_status walk_msg(const struct style *st, const struct hy_prompt_msg *m, size_t *users,
                          struct sink *k)
{
    hy_status s = HY_OK;
    switch (m->role) {
    case HY_PROMPT_SYSTEM:
        if ((s = k->text(k, m->text, m->len)) == HY_OK)
            s = control(k, st->sys_end);
        return s;
    case HY_PROMPT_USER:
        if ((s = control(k, st->user_begin)) == HY_OK && *users > 0)
            s = control(k, st->user_again);
        if (s == HY_OK && (s = k->text(k, m->text, m->len)) == HY_OK)
            s = control(k, st->user_end);
        ++*users;
        return s;
    case HY_PROMPT_ASSISTANT:
        if ((s = control(k, st->asst_begin)) == HY_OK && (s = k->text(k, m->text, m->len)) == HY_OK)
            s = control(k, st->asst_end);
        return s;
    }
    HY_ASSERT(!"unknown role");
    return HY_E_INVAL;
}

/* The whole conversation, as the templates of model doc 5.1/5.2 render it. */
static hy_status walk(enum hy_prompt_style style, const struct hy_prompt_msg *msgs, size_t n,
                      bool add_gen, struct sink *k)
{
    const struct style *st = style_of(style);
    size_t users = 0;
    hy_status s = control(k, st->bos);
    for (size_t i = 0; i < n && s == HY_OK; i++)
        s = walk_msg(st, &msgs[i], &users, k);
    if (s == HY_OK && add_gen)
        s = control(k, st->gen);
    return s;
}

/* ---- rendering to text ---- */

struct text_sink {
    struct sink k; /* first: the walk passes &k */
    char *buf;
    size_t cap, at;
};

static hy_status text_control(struct sink *k, const char *name)
{
    struct text_sink *t = (struct text_sink *)k;
    puts0(t->buf, t->cap, &t->at, name);
    return HY_OK;
}

static hy_status text_text(struct sink *k, const char *s, size_t n)
{
    struct text_sink *t = (struct text_sink *)k;
    put(t->buf, t->cap, &t->at, s, n);
    return HY_OK;
}

hy_status hy_prompt_render(enum hy_prompt_style style, const struct hy_prompt_msg *msgs,
                           size_t n_msgs, bool add_generation_prompt, char *buf, size_t cap,
                           size_t *n_out, struct hy_err *err)
{
    struct text_sink t = {{text_control, text_text}, buf, cap, 0};
    walk(style, msgs, n_msgs, add_generation_prompt, &t.k);
    return finish(t.at, cap, n_out, err);
}

/* ---- encoding to ids ---- */

struct id_sink {
    struct sink k;
    const struct hy_tok *tok;
    int32_t *ids;
    size_t cap, n; /* n: ids so far, counting those that did not fit */
    struct hy_err *err;
};

static hy_status id_control(struct sink *k, const char *name)
{
    struct id_sink *t = (struct id_sink *)k;
    int32_t id = hy_tok_find(t->tok, name);
    if (id < 0)
        return hy_err_set(t->err, HY_E_NOTFOUND, "tokenizer has no %s", name);
    if (t->n < t->cap)
        t->ids[t->n] = id;
    t->n++;
    return HY_OK;
}

static hy_status id_text(struct sink *k, const char *s, size_t n)
{
    struct id_sink *t = (struct id_sink *)k;
    size_t got = 0, room = t->n < t->cap ? t->cap - t->n : 0;
    hy_status st = hy_tok_encode(t->tok, s, n, false, t->ids + (t->n < t->cap ? t->n : t->cap),
                                 room, &got, t->err);
    if (st != HY_OK && st != HY_E_NOSPACE)
        return st;
    t->n += got;
    return HY_OK;
}

hy_status hy_prompt_chat(const struct hy_tok *tok, enum hy_prompt_style style,
                         const struct hy_prompt_msg *msgs, size_t n_msgs,
                         bool add_generation_prompt, int32_t *ids, size_t cap, size_t *n_out,
                         struct hy_err *err)
{
    struct id_sink t = {{id_control, id_text}, tok, ids, cap, 0, err};
    *n_out = 0;
    hy_status st = walk(style, msgs, n_msgs, add_generation_prompt, &t.k);
    if (st != HY_OK)
        return st;
    *n_out = t.n;
    if (t.n > cap)
        return hy_err_set(err, HY_E_NOSPACE, "prompt: %zu ids, room for %zu", t.n, cap);
    return HY_OK;
}

hy_status hy_prompt_translate(const struct hy_tok *tok, const struct hy_prompt_kind *kind,
                              const struct hy_lang *src, const struct hy_lang *tgt,
                              const char *text, size_t len, int32_t *ids, size_t cap, size_t *n_out,
                              struct hy_err *err)
{
    size_t need;
    *n_out = 0;
    hy_status st = hy_prompt_check_langs(kind->gen, src, tgt, err);
    if (st)
        return st;
    hy_prompt_user(kind->gen, src, tgt, text, len, NULL, 0, &need, NULL);
    char *user = malloc(need ? need : 1);
    if (!user)
        return hy_err_set(err, HY_E_NOMEM, "prompt: %zu bytes for the user message", need);
    hy_prompt_user(kind->gen, src, tgt, text, len, user, need, &need, NULL);
    struct hy_prompt_msg m = {HY_PROMPT_USER, user, need};
    st = hy_prompt_chat(tok, kind->chat, &m, 1, true, ids, cap, n_out, err);
    free(user);
    return st;
}

size_t hy_prompt_stop_ids(const struct hy_tok *tok, enum hy_prompt_style style, int32_t *ids,
                          size_t cap)
{
    const struct style *st = style_of(style);
    size_t n = 0;
    for (int i = 0; i < HY_PROMPT_MAX_STOP && st->stop[i]; i++) {
        int32_t id = hy_tok_find(tok, st->stop[i]);
        if (id < 0)
            continue;
        if (n < cap)
            ids[n] = id;
        n++;
    }
    return n;
}
