/* glossary_tbx.c: TBX import into a glossary (hy_glossary_parse_tbx, contract in
 * glossary.h). One pass of expat over the file (no DTD or external entity is loaded;
 * expat's own amplification limits guard against entity bombs): element names are
 * compared without a namespace prefix, so TBX-Basic (`martif`, termEntry/langSet/tig/term)
 * and TBX 2019 (`tbx`, conceptEntry/langSec/termSec/term) read alike. The pairs are
 * collected first and added with one hy_glossary_add_many, so a bad entry leaves the
 * glossary as it was. */
#include "translate/glossary.h"

#include "translate/lang.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef HYMT_TM /* expat comes with the translation memory's dependencies */

#include <expat.h>

struct tbx {
    XML_Parser x;
    const struct hy_lang *src, *tgt;
    bool saw_root, in_entry, in_term;
    const struct hy_lang *cur; /* the open langSet's language (NULL: another one) */
    char term[HY_GLOSSARY_MAX_TERM + 2];
    size_t term_n;
    bool term_space;           /* a whitespace run is pending inside the term */
    char *have_src, *have_tgt; /* the open entry's first source / target term */
    struct hy_glossary_term *pairs;
    size_t n, cap, skipped;
    hy_status st;
    struct hy_err *err;
};

static const char *local(const char *name)
{
    const char *c = strrchr(name, ':');
    return c ? c + 1 : name;
}

/* hymt's language for an xml:lang value, NULL when unknown. */
static const struct hy_lang *map_lang(const char *code)
{
    const struct hy_lang *l = hy_lang_find(code);
    char primary[16];
    if (l || strlen(code) >= sizeof primary)
        return l;
    if (!strncasecmp(code, "zh", 2) && (strcasestr(code, "hant") || strcasestr(code, "tw") ||
                                        strcasestr(code, "hk") || strcasestr(code, "mo")))
        return hy_lang_find("zh-Hant");
    strcpy(primary, code);
    primary[strcspn(primary, "-_")] = '\0';
    return hy_lang_find(primary);
}

static void fail(struct tbx *t, hy_status st, const char *what)
{
    if (!t->st)
        t->st = hy_err_set(t->err, st, "TBX line %lu: %s",
                           (unsigned long)XML_GetCurrentLineNumber(t->x), what);
    XML_StopParser(t->x, XML_FALSE);
}

static void XMLCALL on_start(void *ctx, const char *name, const char **a)
{
    struct tbx *t = ctx;
    const char *n = local(name);
    if (!strcmp(n, "martif") || !strcmp(n, "tbx")) {
        t->saw_root = true;
    } else if (!strcmp(n, "termEntry") || !strcmp(n, "conceptEntry")) {
        t->in_entry = true;
        free(t->have_src);
        free(t->have_tgt);
        t->have_src = t->have_tgt = NULL;
    } else if (t->in_entry && (!strcmp(n, "langSet") || !strcmp(n, "langSec"))) {
        t->cur = NULL;
        for (; a[0]; a += 2)
            if (!strcmp(a[0], "xml:lang") || !strcmp(a[0], "lang"))
                t->cur = map_lang(a[1]);
    } else if (t->in_entry && !strcmp(n, "term")) {
        t->in_term = true;
        t->term_n = 0;
        t->term_space = false;
    }
}

/* Ends an entry: a pair when both languages had a term, else one skipped. */
static void end_entry(struct tbx *t)
{
    t->in_entry = false;
    if (!t->have_src || !t->have_tgt) {
        t->skipped++;
        return;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        struct hy_glossary_term *p = cap <= HY_GLOSSARY_MAX_ENTRIES + 64
                                         ? realloc(t->pairs, cap * sizeof *p)
                                         : NULL;
        if (!p)
            return fail(t, cap > HY_GLOSSARY_MAX_ENTRIES ? HY_E_RANGE : HY_E_NOMEM,
                        "too many entries or out of memory");
        t->pairs = p;
        t->cap = cap;
    }
    t->pairs[t->n++] = (struct hy_glossary_term){t->have_src, t->have_tgt, strlen(t->have_src),
                                                 strlen(t->have_tgt)};
    t->have_src = t->have_tgt = NULL; /* owned by pairs now */
}

static void end_term(struct tbx *t)
{
    t->in_term = false;
    char **slot = t->cur && t->cur == t->src   ? &t->have_src
                  : t->cur && t->cur == t->tgt ? &t->have_tgt
                                               : NULL;
    if (!slot || *slot || !t->term_n)
        return; /* another language, or not the first term of this one */
    if (!(*slot = strndup(t->term, t->term_n)))
        fail(t, HY_E_NOMEM, "out of memory");
}

static void XMLCALL on_end(void *ctx, const char *name)
{
    struct tbx *t = ctx;
    const char *n = local(name);
    if (t->in_term && !strcmp(n, "term"))
        end_term(t);
    else if (t->in_entry && (!strcmp(n, "langSet") || !strcmp(n, "langSec")))
        t->cur = NULL;
    else if (t->in_entry && (!strcmp(n, "termEntry") || !strcmp(n, "conceptEntry")))
        end_entry(t);
}

/* Term text, each whitespace run one space (a pretty-printed file may wrap a term). */
static void XMLCALL on_text(void *ctx, const char *s, int n)
{
    struct tbx *t = ctx;
    if (!t->in_term)
        return;
    for (int i = 0; i < n && !t->st; i++) {
        bool sp = s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r';
        if (sp) {
            t->term_space = t->term_n > 0;
            continue;
        }
        if (t->term_n + 2 > HY_GLOSSARY_MAX_TERM) {
            char what[64];
            snprintf(what, sizeof what, "a term longer than %d bytes", HY_GLOSSARY_MAX_TERM);
            return fail(t, HY_E_INVAL, what);
        }
        if (t->term_space)
            t->term[t->term_n++] = ' ';
        t->term_space = false;
        t->term[t->term_n++] = s[i];
    }
}

hy_status hy_glossary_parse_tbx(struct hy_glossary *g, const char *xml, size_t len,
                                const char *src, const char *tgt, size_t *skipped,
                                struct hy_err *err)
{
    *skipped = 0;
    struct tbx t = {.src = hy_lang_find(src), .tgt = hy_lang_find(tgt), .err = err};
    if (!t.src || !t.tgt)
        return hy_err_set(err, HY_E_INVAL, "TBX: unknown language '%s'", t.src ? tgt : src);
    if (len > HY_GLOSSARY_MAX_FILE)
        return hy_err_set(err, HY_E_RANGE, "TBX: larger than %d bytes", HY_GLOSSARY_MAX_FILE);
    if (!(t.x = XML_ParserCreate("UTF-8")))
        return hy_err_set(err, HY_E_NOMEM, "TBX: out of memory");
    XML_SetUserData(t.x, &t);
    XML_SetElementHandler(t.x, on_start, on_end);
    XML_SetCharacterDataHandler(t.x, on_text);
    if (XML_Parse(t.x, xml, (int)len, XML_TRUE) == XML_STATUS_ERROR && !t.st)
        t.st = hy_err_set(err, HY_E_FORMAT, "TBX line %lu: %s",
                          (unsigned long)XML_GetCurrentLineNumber(t.x),
                          XML_ErrorString(XML_GetErrorCode(t.x)));
    if (!t.st && !t.saw_root)
        t.st = hy_err_set(err, HY_E_FORMAT, "not a TBX file (no <martif> or <tbx> root)");
    if (!t.st)
        t.st = hy_glossary_add_many(g, t.pairs, t.n, err);
    for (size_t i = 0; i < t.n; i++) {
        free((char *)t.pairs[i].src);
        free((char *)t.pairs[i].tgt);
    }
    free(t.pairs);
    free(t.have_src);
    free(t.have_tgt);
    XML_ParserFree(t.x);
    *skipped = t.skipped;
    return t.st;
}

#else

hy_status hy_glossary_parse_tbx(struct hy_glossary *g, const char *xml, size_t len,
                                const char *src, const char *tgt, size_t *skipped,
                                struct hy_err *err)
{
    (void)g, (void)xml, (void)len, (void)src, (void)tgt;
    *skipped = 0;
    return hy_err_set(err, HY_E_UNSUPPORTED, "TBX import: hymt was built without expat "
                                             "(install libexpat1-dev and libsqlite3-dev)");
}

#endif
