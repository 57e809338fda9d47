/* tm.c: the translation memory on SQLite, TMX export and import (contract in tm.h). */
#include "translate/tm.h"

#include <stdio.h>

size_t hy_tm_settings_context(const char *ctx, size_t len, char *buf, size_t cap)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)ctx[i]) * 0x100000001b3ull;
    int n = snprintf(buf, cap, "context %016llx", (unsigned long long)h);
    return n > 0 ? (size_t)n : 0;
}

#ifdef HYMT_TM /* built with SQLite and expat (CMakeLists.txt); the stubs are at the end */

#include "core/utf8.h"
#include "translate/lang.h"

#include <expat.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define BUSY_MS 5000

struct hy_tm {
    sqlite3 *db;
    sqlite3_stmt *get, *put, *import;
};

static const char SCHEMA[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS tm("
    " src_lang TEXT NOT NULL, tgt_lang TEXT NOT NULL, source TEXT NOT NULL,"
    " settings TEXT NOT NULL, model TEXT NOT NULL, target TEXT NOT NULL,"
    " created INTEGER NOT NULL,"
    " PRIMARY KEY (src_lang, tgt_lang, source, settings, model));";

static hy_status db_err(struct hy_tm *tm, struct hy_err *err, const char *what)
{
    return hy_err_set(err, HY_E_IO, "translation memory: %s: %s", what, sqlite3_errmsg(tm->db));
}

void hy_tm_close(struct hy_tm *tm)
{
    if (!tm)
        return;
    sqlite3_finalize(tm->get);
    sqlite3_finalize(tm->put);
    sqlite3_finalize(tm->import);
    sqlite3_close(tm->db);
    free(tm);
}

hy_status hy_tm_open(struct hy_tm **out, const char *path, struct hy_err *err)
{
    struct hy_tm *tm = calloc(1, sizeof *tm);
    *out = NULL;
    if (!tm)
        return hy_err_set(err, HY_E_NOMEM, "translation memory: out of memory");
    int rc = sqlite3_open_v2(path, &tm->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                             NULL);
    hy_status st = HY_OK;
    if (rc != SQLITE_OK) {
        st = hy_err_set(err, HY_E_IO, "translation memory %s: %s", path,
                        tm->db ? sqlite3_errmsg(tm->db) : "cannot open");
    } else {
        sqlite3_busy_timeout(tm->db, BUSY_MS);
        if (sqlite3_exec(tm->db, SCHEMA, NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(tm->db,
                               "SELECT target FROM tm WHERE src_lang=?1 AND tgt_lang=?2 AND "
                               "source=?3 AND settings=?4 AND (model=?5 OR model='') "
                               "ORDER BY model='' DESC LIMIT 1", -1, &tm->get, NULL) ||
            sqlite3_prepare_v2(tm->db,
                               "INSERT OR IGNORE INTO tm VALUES(?1,?2,?3,?4,?5,?6,?7)", -1,
                               &tm->put, NULL) ||
            sqlite3_prepare_v2(tm->db,
                               "INSERT OR REPLACE INTO tm VALUES(?1,?2,?3,?4,?5,?6,?7)", -1,
                               &tm->import, NULL))
            st = hy_err_set(err, HY_E_IO, "translation memory %s: %s", path,
                            sqlite3_errmsg(tm->db));
    }
    if (st) {
        hy_tm_close(tm);
        return st;
    }
    *out = tm;
    return HY_OK;
}

static void bind_key(sqlite3_stmt *s, const struct hy_tm_key *k)
{
    sqlite3_bind_text(s, 1, k->src_lang ? k->src_lang : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, k->tgt_lang, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, k->source, (int)k->source_len, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, k->settings ? k->settings : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, k->model ? k->model : "", -1, SQLITE_STATIC);
}

hy_status hy_tm_get(struct hy_tm *tm, const struct hy_tm_key *k, char **text, size_t *len,
                    struct hy_err *err)
{
    *text = NULL;
    *len = 0;
    if (k->source_len > HY_TM_MAX_SEG)
        return hy_err_set(err, HY_E_NOTFOUND, "translation memory: no entry");
    sqlite3_mutex_enter(sqlite3_db_mutex(tm->db)); /* the statement is shared */
    sqlite3_reset(tm->get);
    bind_key(tm->get, k);
    int rc = sqlite3_step(tm->get);
    hy_status st = HY_OK;
    if (rc == SQLITE_ROW) {
        int n = sqlite3_column_bytes(tm->get, 0);
        const unsigned char *s = sqlite3_column_text(tm->get, 0);
        *text = malloc((size_t)n + 1);
        if (!*text) {
            st = hy_err_set(err, HY_E_NOMEM, "translation memory: out of memory");
        } else {
            memcpy(*text, s, (size_t)n);
            (*text)[n] = '\0';
            *len = (size_t)n;
        }
    } else if (rc == SQLITE_DONE) {
        st = hy_err_set(err, HY_E_NOTFOUND, "translation memory: no entry");
    } else {
        st = db_err(tm, err, "lookup");
    }
    sqlite3_reset(tm->get);
    sqlite3_mutex_leave(sqlite3_db_mutex(tm->db));
    return st;
}

static hy_status store(struct hy_tm *tm, sqlite3_stmt *s, const struct hy_tm_key *k,
                       const char *text, size_t len, int64_t created, struct hy_err *err)
{
    if (k->source_len > HY_TM_MAX_SEG || len > HY_TM_MAX_SEG)
        return hy_err_set(err, HY_E_FORMAT, "translation memory: a text over %d bytes",
                          HY_TM_MAX_SEG);
    sqlite3_mutex_enter(sqlite3_db_mutex(tm->db));
    sqlite3_reset(s);
    bind_key(s, k);
    sqlite3_bind_text(s, 6, text, (int)len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 7, created);
    int rc = sqlite3_step(s);
    hy_status st = rc == SQLITE_DONE ? HY_OK : db_err(tm, err, "store");
    sqlite3_reset(s);
    sqlite3_mutex_leave(sqlite3_db_mutex(tm->db));
    return st;
}

hy_status hy_tm_put(struct hy_tm *tm, const struct hy_tm_key *k, const char *text, size_t len,
                    struct hy_err *err)
{
    return store(tm, tm->put, k, text, len, (int64_t)time(NULL), err);
}

hy_status hy_tm_count(struct hy_tm *tm, int64_t *n, struct hy_err *err)
{
    sqlite3_stmt *s = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(tm->db, "SELECT count(*) FROM tm", -1, &s, NULL) != SQLITE_OK)
        return db_err(tm, err, "count");
    hy_status st = sqlite3_step(s) == SQLITE_ROW ? HY_OK : db_err(tm, err, "count");
    if (!st)
        *n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return st;
}

/* ---- TMX export ---- */

/* Whether s can be written in XML 1.0 (no control characters but tab, LF, CR). */
static bool xml_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return false;
    return hy_utf8_validate((const char *)s, n) == n;
}

static void xml_put(FILE *f, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\r': fputs("&#13;", f); break;
        default: fputc(s[i], f);
        }
    }
}

static const char *tmx_lang(const unsigned char *code)
{
    return code[0] ? (const char *)code : "und";
}

hy_status hy_tm_export_tmx(struct hy_tm *tm, FILE *f, size_t *n, size_t *skipped,
                           struct hy_err *err)
{
    sqlite3_stmt *s = NULL;
    *n = *skipped = 0;
    if (sqlite3_prepare_v2(tm->db,
                           "SELECT src_lang, tgt_lang, source, settings, model, target, created "
                           "FROM tm ORDER BY src_lang, tgt_lang, source, settings, model",
                           -1, &s, NULL) != SQLITE_OK)
        return db_err(tm, err, "export");
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<tmx version=\"1.4\">\n"
          "  <header creationtool=\"hymt\" creationtoolversion=\"1\" segtype=\"sentence\" "
          "o-tmf=\"hymt\" adminlang=\"en\" srclang=\"*all*\" datatype=\"plaintext\"/>\n"
          "  <body>\n", f);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const unsigned char *col[6];
        size_t len[6];
        bool ok = true;
        for (int c = 0; c < 6; c++) {
            col[c] = sqlite3_column_text(s, c);
            len[c] = (size_t)sqlite3_column_bytes(s, c);
            ok &= col[c] && xml_ok(col[c], len[c]);
        }
        if (!ok) {
            ++*skipped;
            continue;
        }
        time_t t = (time_t)sqlite3_column_int64(s, 6);
        struct tm g;
        char date[32] = "19700101T000000Z";
        if (gmtime_r(&t, &g))
            strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &g);
        fprintf(f, "    <tu creationdate=\"%s\">\n", date);
        fputs("      <prop type=\"x-hymt-model\">", f);
        xml_put(f, col[4], len[4]);
        fputs("</prop>\n", f);
        if (len[3]) {
            fputs("      <prop type=\"x-hymt-settings\">", f);
            xml_put(f, col[3], len[3]);
            fputs("</prop>\n", f);
        }
        for (int side = 0; side < 2; side++) {
            fprintf(f, "      <tuv xml:lang=\"%s\"><seg>", tmx_lang(col[side]));
            xml_put(f, col[side ? 5 : 2], len[side ? 5 : 2]);
            fputs("</seg></tuv>\n", f);
        }
        fputs("    </tu>\n", f);
        ++*n;
    }
    sqlite3_finalize(s);
    fputs("  </body>\n</tmx>\n", f);
    if (rc != SQLITE_DONE)
        return db_err(tm, err, "export");
    if (ferror(f))
        return hy_err_set(err, HY_E_IO, "translation memory: cannot write the TMX");
    return HY_OK;
}

/* ---- TMX import ---- */

#define MAX_TUV 16

struct sbuf {
    char *p;
    size_t n, cap;
};

struct imp {
    struct hy_tm *tm;
    XML_Parser x;
    char srclang[16];
    bool in_tu, in_seg, in_prop, saw_tmx;
    int skip; /* depth inside inline codes (<bpt> ...) whose content is not text */
    char prop_type[32];
    struct sbuf prop, model, settings;
    struct sbuf seg[MAX_TUV];
    char lang[MAX_TUV][16];
    int n_tuv;
    char cur_lang[16];
    int64_t created;
    size_t n, skipped;
    hy_status st;
    struct hy_err *err;
};

static void sb_add(struct imp *m, struct sbuf *b, const char *s, size_t n)
{
    if (m->st)
        return;
    if (b->n + n > HY_TM_MAX_SEG) {
        m->st = hy_err_set(m->err, HY_E_FORMAT, "TMX line %lu: a text over %d bytes",
                           (unsigned long)XML_GetCurrentLineNumber(m->x), HY_TM_MAX_SEG);
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = 2 * (b->n + n) + 64;
        char *p = realloc(b->p, cap);
        if (!p) {
            m->st = hy_err_set(m->err, HY_E_NOMEM, "TMX: out of memory");
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

/* hymt's code for a TMX language ("" for und; false when unknown). */
static bool map_lang(const char *in, char out[16])
{
    if (!strcmp(in, "und") || !strcmp(in, "*all*")) {
        out[0] = '\0';
        return true;
    }
    const struct hy_lang *l = hy_lang_find(in);
    char primary[16];
    if (!l && strlen(in) < sizeof primary) {
        strcpy(primary, in);
        primary[strcspn(primary, "-_")] = '\0';
        if (!strncasecmp(in, "zh", 2) && (strcasestr(in, "hant") || strcasestr(in, "tw") ||
                                           strcasestr(in, "hk") || strcasestr(in, "mo")))
            l = hy_lang_find("zh-Hant");
        else
            l = hy_lang_find(primary);
    }
    if (!l)
        return false;
    snprintf(out, 16, "%s", l->code);
    return true;
}

static const char *attr(const char **a, const char *name)
{
    for (; a[0]; a += 2)
        if (!strcmp(a[0], name))
            return a[1];
    return NULL;
}

static int64_t parse_date(const char *s)
{
    struct tm g = {0};
    if (!s || sscanf(s, "%4d%2d%2dT%2d%2d%2dZ", &g.tm_year, &g.tm_mon, &g.tm_mday, &g.tm_hour,
                     &g.tm_min, &g.tm_sec) != 6)
        return (int64_t)time(NULL);
    g.tm_year -= 1900;
    g.tm_mon -= 1;
    return (int64_t)timegm(&g);
}

static bool inline_code(const char *name)
{
    return !strcmp(name, "bpt") || !strcmp(name, "ept") || !strcmp(name, "ph") ||
           !strcmp(name, "it") || !strcmp(name, "ut") || !strcmp(name, "sub");
}

static void XMLCALL on_start(void *ctx, const char *name, const char **a)
{
    struct imp *m = ctx;
    if (m->skip || (m->in_seg && inline_code(name))) {
        m->skip++;
        return;
    }
    if (!strcmp(name, "tmx")) {
        m->saw_tmx = true;
    } else if (!strcmp(name, "header")) {
        const char *s = attr(a, "srclang");
        snprintf(m->srclang, sizeof m->srclang, "%s", s ? s : "*all*");
    } else if (!strcmp(name, "tu")) {
        m->in_tu = true;
        m->n_tuv = 0;
        m->model.n = m->settings.n = 0;
        m->created = parse_date(attr(a, "creationdate"));
    } else if (!strcmp(name, "prop") && m->in_tu && m->n_tuv == 0) {
        const char *t = attr(a, "type");
        snprintf(m->prop_type, sizeof m->prop_type, "%s", t ? t : "");
        m->in_prop = true;
        m->prop.n = 0;
    } else if (!strcmp(name, "tuv") && m->in_tu) {
        const char *l = attr(a, "xml:lang");
        snprintf(m->cur_lang, sizeof m->cur_lang, "%s", l ? l : attr(a, "lang") ? attr(a, "lang") : "");
    } else if (!strcmp(name, "seg") && m->in_tu && m->n_tuv < MAX_TUV) {
        m->in_seg = true;
        m->seg[m->n_tuv].n = 0;
        sb_add(m, &m->seg[m->n_tuv], "", 0);
        snprintf(m->lang[m->n_tuv], 16, "%s", m->cur_lang);
    }
}

/* The pairs of one <tu>: the source tuv against every other one. */
static void store_tu(struct imp *m)
{
    char src[16], tgt[16], want[16];
    int s = 0;
    if (strcmp(m->srclang, "*all*") && map_lang(m->srclang, want))
        for (int i = 0; i < m->n_tuv; i++)
            if (map_lang(m->lang[i], src) && !strcmp(src, want)) {
                s = i;
                break;
            }
    for (int i = 0; i < m->n_tuv && !m->st; i++) {
        if (i == s)
            continue;
        if (!map_lang(m->lang[s], src) || !map_lang(m->lang[i], tgt) || !tgt[0]) {
            m->skipped++;
            continue;
        }
        struct hy_tm_key k = {src, tgt, m->model.n ? m->model.p : "",
                              m->settings.n ? m->settings.p : "", m->seg[s].p, m->seg[s].n};
        m->st = store(m->tm, m->tm->import, &k, m->seg[i].p, m->seg[i].n, m->created, m->err);
        m->n += !m->st;
    }
}

static void XMLCALL on_end(void *ctx, const char *name)
{
    struct imp *m = ctx;
    if (m->skip) {
        m->skip--;
        return;
    }
    if (!strcmp(name, "seg") && m->in_seg) {
        m->in_seg = false;
        m->n_tuv++;
    } else if (!strcmp(name, "prop") && m->in_prop) {
        m->in_prop = false;
        if (!strcmp(m->prop_type, "x-hymt-model")) {
            m->model.n = 0;
            sb_add(m, &m->model, m->prop.p ? m->prop.p : "", m->prop.n);
        } else if (!strcmp(m->prop_type, "x-hymt-settings")) {
            m->settings.n = 0;
            sb_add(m, &m->settings, m->prop.p ? m->prop.p : "", m->prop.n);
        }
    } else if (!strcmp(name, "tu") && m->in_tu) {
        m->in_tu = false;
        if (m->n_tuv >= 2)
            store_tu(m);
    }
    if (m->st)
        XML_StopParser(m->x, XML_FALSE);
}

static void XMLCALL on_text(void *ctx, const char *s, int n)
{
    struct imp *m = ctx;
    if (m->skip)
        return;
    if (m->in_seg)
        sb_add(m, &m->seg[m->n_tuv], s, (size_t)n);
    else if (m->in_prop)
        sb_add(m, &m->prop, s, (size_t)n);
    if (m->st)
        XML_StopParser(m->x, XML_FALSE);
}

hy_status hy_tm_import_tmx(struct hy_tm *tm, const char *xml, size_t len, size_t *n,
                           size_t *skipped, struct hy_err *err)
{
    *n = *skipped = 0;
    if (len > INT32_MAX)
        return hy_err_set(err, HY_E_FORMAT, "TMX: larger than 2 GiB");
    struct imp m = {.tm = tm, .err = err, .srclang = "*all*"};
    if (!(m.x = XML_ParserCreate("UTF-8")))
        return hy_err_set(err, HY_E_NOMEM, "TMX: out of memory");
    XML_SetUserData(m.x, &m);
    XML_SetElementHandler(m.x, on_start, on_end);
    XML_SetCharacterDataHandler(m.x, on_text);
    if (sqlite3_exec(tm->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        m.st = db_err(tm, err, "import");
    if (!m.st && XML_Parse(m.x, xml, (int)len, XML_TRUE) == XML_STATUS_ERROR && !m.st)
        m.st = hy_err_set(err, HY_E_FORMAT, "TMX line %lu: %s",
                          (unsigned long)XML_GetCurrentLineNumber(m.x),
                          XML_ErrorString(XML_GetErrorCode(m.x)));
    if (!m.st && !m.saw_tmx)
        m.st = hy_err_set(err, HY_E_FORMAT, "TMX: no <tmx> element");
    if (!m.st && sqlite3_exec(tm->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        m.st = db_err(tm, err, "import");
    if (m.st)
        sqlite3_exec(tm->db, "ROLLBACK", NULL, NULL, NULL);
    XML_ParserFree(m.x);
    free(m.prop.p);
    free(m.model.p);
    free(m.settings.p);
    for (int i = 0; i < MAX_TUV; i++)
        free(m.seg[i].p);
    *n = m.st ? 0 : m.n;
    *skipped = m.skipped;
    return m.st;
}

#else /* !HYMT_TM */

hy_status hy_tm_open(struct hy_tm **out, const char *path, struct hy_err *err)
{
    *out = NULL;
    return hy_err_set(err, HY_E_UNSUPPORTED, "translation memory %s: this hymt was built "
                      "without SQLite and expat (install libsqlite3-dev and libexpat1-dev, "
                      "rebuild)", path);
}

void hy_tm_close(struct hy_tm *tm)
{
    (void)tm;
}

/* Unreachable without a handle; present so callers link either way. */
hy_status hy_tm_get(struct hy_tm *tm, const struct hy_tm_key *k, char **text, size_t *len,
                    struct hy_err *err)
{
    (void)tm, (void)k, (void)text, (void)len;
    return hy_err_set(err, HY_E_UNSUPPORTED, "translation memory: not built");
}

hy_status hy_tm_put(struct hy_tm *tm, const struct hy_tm_key *k, const char *text, size_t len,
                    struct hy_err *err)
{
    (void)tm, (void)k, (void)text, (void)len;
    return hy_err_set(err, HY_E_UNSUPPORTED, "translation memory: not built");
}

hy_status hy_tm_count(struct hy_tm *tm, int64_t *n, struct hy_err *err)
{
    (void)tm;
    *n = 0;
    return hy_err_set(err, HY_E_UNSUPPORTED, "translation memory: not built");
}

hy_status hy_tm_export_tmx(struct hy_tm *tm, FILE *f, size_t *n, size_t *skipped,
                           struct hy_err *err)
{
    (void)tm, (void)f;
    *n = *skipped = 0;
    return hy_err_set(err, HY_E_UNSUPPORTED, "translation memory: not built");
}

hy_status hy_tm_import_tmx(struct hy_tm *tm, const char *xml, size_t len, size_t *n,
                           size_t *skipped, struct hy_err *err)
{
    (void)tm, (void)xml, (void)len;
    *n = *skipped = 0;
    return hy_err_set(err, HY_E_UNSUPPORTED, "translation memory: not built");
}

#endif
