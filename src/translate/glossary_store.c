/* glossary_store.c: the server's named glossaries (contract in glossary_store.h). A table
 * of counted references under one mutex; the SQLite side stores each glossary as one row
 * with its entries as TSV (terms hold no tab or line break: glossary.h refuses control
 * characters), read back with hy_glossary_parse. */
#include "translate/glossary_store.h"

#include "core/utf8.h"
#include "translate/lang.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#ifdef HYMT_TM
#include <sqlite3.h>
#define BUSY_MS 5000
#else
typedef struct sqlite3 sqlite3;
#endif

struct hy_gstore_ref {
    atomic_int refs; /* the table's one plus one per acquire */
    struct hy_gstore_info info;
    struct hy_glossary *g;
};

struct hy_gstore {
    pthread_mutex_t mu;
    struct hy_gstore_ref **items; /* oldest first */
    size_t n, cap, max, entries, max_entries;
    sqlite3 *db;
};

static void ref_free(struct hy_gstore_ref *r)
{
    hy_glossary_destroy(r->g);
    free(r);
}

void hy_gstore_release(struct hy_gstore_ref *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1)
        ref_free(r);
}

const struct hy_glossary *hy_gstore_glossary(const struct hy_gstore_ref *r)
{
    return r->g;
}

const struct hy_gstore_info *hy_gstore_info(const struct hy_gstore_ref *r)
{
    return &r->info;
}

static void new_id(char out[HY_GSTORE_ID_LEN + 1])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) { /* no entropy: time and address */
        uint64_t x = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)out;
        for (size_t i = 0; i < sizeof b; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            b[i] = (unsigned char)(x >> 56);
        }
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(out, HY_GSTORE_ID_LEN + 1,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

/* Appends r to the table (mutex held); HY_E_NOSPACE past a limit. */
static hy_status insert(struct hy_gstore *s, struct hy_gstore_ref *r, struct hy_err *err)
{
    if (s->n >= s->max)
        return hy_err_set(err, HY_E_NOSPACE, "the server holds %zu glossaries, its limit; "
                          "delete one first", s->max);
    if (s->entries + r->info.entries > s->max_entries)
        return hy_err_set(err, HY_E_NOSPACE, "the server's glossaries would hold %zu entries; "
                          "the limit is %zu", s->entries + r->info.entries, s->max_entries);
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        struct hy_gstore_ref **p = realloc(s->items, cap * sizeof *p);
        if (!p)
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        s->items = p;
        s->cap = cap;
    }
    s->items[s->n++] = r;
    s->entries += r->info.entries;
    return HY_OK;
}

static hy_status make_ref(struct hy_glossary *g, const char *id, const char *name,
                          const struct hy_lang *src, const struct hy_lang *tgt, int64_t created,
                          struct hy_gstore_ref **out, struct hy_err *err)
{
    struct hy_gstore_ref *r = calloc(1, sizeof *r);
    if (!r) {
        hy_glossary_destroy(g);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    atomic_init(&r->refs, 1);
    r->g = g;
    snprintf(r->info.id, sizeof r->info.id, "%s", id);
    snprintf(r->info.name, sizeof r->info.name, "%s", name);
    snprintf(r->info.src, sizeof r->info.src, "%s", src->code);
    snprintf(r->info.tgt, sizeof r->info.tgt, "%s", tgt->code);
    r->info.entries = hy_glossary_size(g);
    r->info.created = created;
    *out = r;
    return HY_OK;
}

/* ---- the database side (SQLite builds only) ---- */
#ifdef HYMT_TM

static hy_status db_err(struct hy_gstore *s, struct hy_err *err, const char *what)
{
    return hy_err_set(err, HY_E_IO, "glossary database: %s: %s", what, sqlite3_errmsg(s->db));
}

/* One row into a reference (not in the table yet). */
static hy_status load_row(sqlite3_stmt *q, struct hy_gstore_ref **out, struct hy_err *err)
{
    const char *id = (const char *)sqlite3_column_text(q, 0),
               *name = (const char *)sqlite3_column_text(q, 1);
    const struct hy_lang *src = hy_lang_find((const char *)sqlite3_column_text(q, 2)),
                         *tgt = hy_lang_find((const char *)sqlite3_column_text(q, 3));
    const char *tsv = (const char *)sqlite3_column_text(q, 5);
    if (!id || !name || !src || !tgt || !tsv || strlen(id) != HY_GSTORE_ID_LEN)
        return hy_err_set(err, HY_E_FORMAT, "glossary database: a malformed row");
    struct hy_glossary *g = NULL;
    hy_status st = hy_glossary_create(&g, err);
    if (!st)
        st = hy_glossary_parse(g, tsv, (size_t)sqlite3_column_bytes(q, 5), HY_GLOSSARY_TSV, err);
    if (st) {
        hy_glossary_destroy(g);
        return st;
    }
    return make_ref(g, id, name, src, tgt, sqlite3_column_int64(q, 4), out, err);
}

static hy_status db_open(struct hy_gstore *s, const char *path, struct hy_err *err)
{
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK)
        return hy_err_set(err, HY_E_IO, "glossary database %s: %s", path,
                          s->db ? sqlite3_errmsg(s->db) : "cannot open");
    sqlite3_busy_timeout(s->db, BUSY_MS);
    if (sqlite3_exec(s->db,
                     "PRAGMA journal_mode=WAL;"
                     "CREATE TABLE IF NOT EXISTS glossaries(id TEXT PRIMARY KEY, name TEXT NOT "
                     "NULL, src_lang TEXT NOT NULL, tgt_lang TEXT NOT NULL, created INTEGER NOT "
                     "NULL, entries TEXT NOT NULL);",
                     NULL, NULL, NULL) != SQLITE_OK)
        return db_err(s, err, path);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT * FROM glossaries ORDER BY created, rowid", -1, &q,
                           NULL) != SQLITE_OK)
        return db_err(s, err, path);
    hy_status st = HY_OK;
    int rc;
    while (!st && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct hy_gstore_ref *r = NULL;
        if (!(st = load_row(q, &r, err)) && (st = insert(s, r, err)))
            ref_free(r);
    }
    if (!st && rc != SQLITE_DONE)
        st = db_err(s, err, path);
    sqlite3_finalize(q);
    return st;
}

/* The row of id, if another server sharing the file added it (NULL when none). */
static struct hy_gstore_ref *db_find(struct hy_gstore *s, const char *id)
{
    sqlite3_stmt *q = NULL;
    struct hy_gstore_ref *r = NULL;
    if (s->db && sqlite3_prepare_v2(s->db, "SELECT * FROM glossaries WHERE id=?1", -1, &q,
                                    NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        if (sqlite3_step(q) == SQLITE_ROW && load_row(q, &r, NULL))
            r = NULL;
    }
    sqlite3_finalize(q);
    return r;
}

static hy_status db_put(struct hy_gstore *s, const struct hy_gstore_ref *r, struct hy_err *err)
{
    if (!s->db)
        return HY_OK;
    char *tsv = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&tsv, &n);
    if (!f)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    for (size_t i = 0; i < r->info.entries; i++) {
        struct hy_glossary_term t;
        hy_glossary_get(r->g, i, &t);
        fprintf(f, "%s\t%s\n", t.src, t.tgt);
    }
    if (fclose(f)) {
        free(tsv);
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    }
    sqlite3_stmt *q = NULL;
    hy_status st = HY_OK;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO glossaries VALUES(?1,?2,?3,?4,?5,?6)", -1, &q,
                           NULL) != SQLITE_OK)
        st = db_err(s, err, "store");
    if (!st) {
        sqlite3_bind_text(q, 1, r->info.id, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, r->info.name, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, r->info.src, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 4, r->info.tgt, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 5, r->info.created);
        sqlite3_bind_text(q, 6, tsv ? tsv : "", (int)n, SQLITE_STATIC);
        if (sqlite3_step(q) != SQLITE_DONE)
            st = db_err(s, err, "store");
    }
    sqlite3_finalize(q);
    free(tsv);
    return st;
}

static hy_status db_delete(struct hy_gstore *s, const char *id, struct hy_err *err)
{
    sqlite3_stmt *q = NULL;
    hy_status st = HY_OK;
    if (!s->db)
        return HY_OK;
    if (sqlite3_prepare_v2(s->db, "DELETE FROM glossaries WHERE id=?1", -1, &q, NULL) !=
        SQLITE_OK)
        return db_err(s, err, "delete");
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    if (sqlite3_step(q) != SQLITE_DONE)
        st = db_err(s, err, "delete");
    sqlite3_finalize(q);
    return st;
}

static void db_close(struct hy_gstore *s)
{
    sqlite3_close(s->db);
}

#else

static hy_status db_open(struct hy_gstore *s, const char *path, struct hy_err *err)
{
    (void)s, (void)path;
    return hy_err_set(err, HY_E_UNSUPPORTED, "a glossary database needs SQLite: hymt was built "
                                             "without it (install libsqlite3-dev, libexpat1-dev)");
}
static struct hy_gstore_ref *db_find(struct hy_gstore *s, const char *id)
{
    (void)s, (void)id;
    return NULL;
}
static hy_status db_put(struct hy_gstore *s, const struct hy_gstore_ref *r, struct hy_err *err)
{
    (void)s, (void)r, (void)err;
    return HY_OK;
}
static hy_status db_delete(struct hy_gstore *s, const char *id, struct hy_err *err)
{
    (void)s, (void)id, (void)err;
    return HY_OK;
}
static void db_close(struct hy_gstore *s)
{
    (void)s;
}

#endif

/* ---- the table ---- */

hy_status hy_gstore_create(struct hy_gstore **out, const char *db_path, size_t max_glossaries,
                           size_t max_entries, struct hy_err *err)
{
    *out = NULL;
    struct hy_gstore *s = calloc(1, sizeof *s);
    if (!s)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    s->max = max_glossaries ? max_glossaries : HY_GSTORE_MAX_DEFAULT;
    s->max_entries = max_entries ? max_entries : HY_GSTORE_ENTRIES_DEFAULT;
    hy_status st = db_path ? db_open(s, db_path, err) : HY_OK;
    if (st) {
        hy_gstore_destroy(s);
        return st;
    }
    *out = s;
    return HY_OK;
}

void hy_gstore_destroy(struct hy_gstore *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        hy_gstore_release(s->items[i]);
    free(s->items);
    db_close(s);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static hy_status check_name(const char *name, struct hy_err *err)
{
    size_t n = strlen(name);
    if (!n || n > HY_GSTORE_MAX_NAME || hy_utf8_validate(name, n) < n)
        return hy_err_set(err, HY_E_INVAL, "name: 1 to %d bytes of UTF-8 are required",
                          HY_GSTORE_MAX_NAME);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return hy_err_set(err, HY_E_INVAL, "name: control characters are not allowed");
    return HY_OK;
}

hy_status hy_gstore_add(struct hy_gstore *s, const char *name, const char *src, const char *tgt,
                        struct hy_glossary *g, struct hy_gstore_info *out, struct hy_err *err)
{
    const struct hy_lang *ls = hy_lang_find(src), *lt = hy_lang_find(tgt);
    hy_status st = check_name(name, err);
    if (!st && (!ls || !lt))
        st = hy_err_set(err, HY_E_INVAL, "unknown language '%s'", ls ? tgt : src);
    if (st) {
        hy_glossary_destroy(g);
        return st;
    }
    char id[HY_GSTORE_ID_LEN + 1];
    new_id(id);
    struct hy_gstore_ref *r = NULL;
    if ((st = make_ref(g, id, name, ls, lt, (int64_t)time(NULL), &r, err)))
        return st;
    pthread_mutex_lock(&s->mu);
    st = insert(s, r, err);
    if (!st && (st = db_put(s, r, err))) {
        s->n--;
        s->entries -= r->info.entries;
    }
    pthread_mutex_unlock(&s->mu);
    if (st) {
        ref_free(r);
        return st;
    }
    *out = r->info;
    return HY_OK;
}

void hy_gstore_list(struct hy_gstore *s, struct hy_gstore_info *out, size_t cap, size_t *n)
{
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n && i < cap; i++)
        out[i] = s->items[i]->info;
    *n = s->n;
    pthread_mutex_unlock(&s->mu);
}

static size_t find(const struct hy_gstore *s, const char *id)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->items[i]->info.id, id))
            return i;
    return SIZE_MAX;
}

hy_status hy_gstore_acquire(struct hy_gstore *s, const char *id, struct hy_gstore_ref **ref,
                            struct hy_err *err)
{
    *ref = NULL;
    pthread_mutex_lock(&s->mu);
    size_t i = find(s, id);
    if (i == SIZE_MAX && strlen(id) == HY_GSTORE_ID_LEN) {
        struct hy_gstore_ref *r = db_find(s, id); /* added by another server on the file */
        if (r && insert(s, r, NULL))
            ref_free(r);
        else if (r)
            i = s->n - 1;
    }
    if (i != SIZE_MAX) {
        *ref = s->items[i];
        atomic_fetch_add(&(*ref)->refs, 1);
    }
    pthread_mutex_unlock(&s->mu);
    if (!*ref)
        return hy_err_set(err, HY_E_NOTFOUND, "no glossary with id '%.*s'", 64, id);
    return HY_OK;
}

hy_status hy_gstore_delete(struct hy_gstore *s, const char *id, struct hy_err *err)
{
    pthread_mutex_lock(&s->mu);
    size_t i = find(s, id);
    struct hy_gstore_ref *r = i == SIZE_MAX ? NULL : s->items[i];
    hy_status st = r ? db_delete(s, id, err) : HY_OK;
    if (r && !st) {
        memmove(s->items + i, s->items + i + 1, (s->n - i - 1) * sizeof *s->items);
        s->n--;
        s->entries -= r->info.entries;
    }
    pthread_mutex_unlock(&s->mu);
    if (!r)
        return hy_err_set(err, HY_E_NOTFOUND, "no glossary with id '%.*s'", 64, id);
    if (!st)
        hy_gstore_release(r);
    return st;
}
