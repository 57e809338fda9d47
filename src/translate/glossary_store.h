/* glossary_store.h: named glossaries kept by the server (POST/GET/DELETE /v1/glossaries,
 * and DeepL-style `glossary_id` on the translation routes).
 * Each glossary has an id (a random UUID, as DeepL's), a name, a language pair and its
 * entries (glossary.h). Limits, fixed at create: at most max_glossaries glossaries and
 * max_entries entries in all (a full store answers HY_E_NOSPACE, nothing is evicted).
 * Storage: in memory; with a database path, also in that SQLite file (WAL, 5 s busy
 * timeout), loaded at create and written through on add and delete, so glossaries survive
 * a restart. Several servers may share the file; each sees the glossaries present when it
 * started plus its own changes (a glossary another server adds is found on lookup, one it
 * deletes stays here until restart).
 * Use: hy_gstore_acquire gives a reference to an immutable glossary that stays valid until
 * hy_gstore_release, even if it is deleted meanwhile (it is freed with the last
 * reference).
 * Threads: every call may run on any thread (one mutex around the table; references are
 * counted atomically). Errors: HY_E_NOTFOUND for an unknown id, HY_E_NOSPACE past a limit,
 * HY_E_INVAL for a bad name or language, HY_E_IO for the database, HY_E_NOMEM. */
#ifndef HY_TRANSLATE_GLOSSARY_STORE_H
#define HY_TRANSLATE_GLOSSARY_STORE_H

#include "core/status.h"
#include "translate/glossary.h"

#include <stddef.h>
#include <stdint.h>

#define HY_GSTORE_ID_LEN 36         /* "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" */
#define HY_GSTORE_MAX_NAME 256      /* bytes of a glossary's name */
#define HY_GSTORE_MAX_DEFAULT 1000  /* glossaries */
#define HY_GSTORE_ENTRIES_DEFAULT 1000000 /* entries of all glossaries together */

struct hy_gstore;
struct hy_gstore_ref;

struct hy_gstore_info {
    char id[HY_GSTORE_ID_LEN + 1];
    char name[HY_GSTORE_MAX_NAME + 1];
    char src[16], tgt[16]; /* lang.h codes */
    size_t entries;
    int64_t created;       /* unix seconds */
};

/* db_path NULL: memory only. max_* 0: the defaults above. Loading a database whose rows
 * exceed the limits fails with HY_E_NOSPACE. */
hy_status hy_gstore_create(struct hy_gstore **out, const char *db_path, size_t max_glossaries,
                           size_t max_entries, struct hy_err *err);
void hy_gstore_destroy(struct hy_gstore *s);

/* Adds g as a new glossary (takes ownership of g, also on failure) for src -> tgt (codes
 * or names lang.h knows; stored as codes); name: 1..HY_GSTORE_MAX_NAME bytes of UTF-8
 * without control characters. *out: its info (id included). */
hy_status hy_gstore_add(struct hy_gstore *s, const char *name, const char *src, const char *tgt,
                        struct hy_glossary *g, struct hy_gstore_info *out, struct hy_err *err);

/* The glossaries' infos, oldest first: up to cap of them into out, *n the total. */
void hy_gstore_list(struct hy_gstore *s, struct hy_gstore_info *out, size_t cap, size_t *n);

/* A reference to glossary id (the lookup the translation routes use). */
hy_status hy_gstore_acquire(struct hy_gstore *s, const char *id, struct hy_gstore_ref **ref,
                            struct hy_err *err);
const struct hy_glossary *hy_gstore_glossary(const struct hy_gstore_ref *r);
const struct hy_gstore_info *hy_gstore_info(const struct hy_gstore_ref *r);
/* Drops a reference; NULL is fine. */
void hy_gstore_release(struct hy_gstore_ref *r);

/* Removes glossary id (from the database too). */
hy_status hy_gstore_delete(struct hy_gstore *s, const char *id, struct hy_err *err);

#endif
