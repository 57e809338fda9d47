/* api_glossaries.c: the server's stored glossaries, DeepL-style (translate/glossary_store.h):
 *   POST   /v1/glossaries      {"name", "source_lang", "target_lang", "entries",
 *                               "entries_format"} -> 201 with the glossary's info
 *          entries: a list of {"source", "target"}, or a file's text: CSV, TSV (DeepL's
 *          entries_format "csv" / "tsv"; without it: TSV when the first row has a tab) or
 *          TBX ("tbx"; also assumed for text that starts with '<')
 *   GET    /v1/glossaries      {"glossaries": [info, ...]}
 *   GET    /v1/glossaries/ID   info + "entries": [{"source", "target"}, ...]
 *   DELETE /v1/glossaries/ID   204
 * The body is bounded by --max-body; past the store's limits (--max-glossaries,
 * --max-glossary-entries) a POST is a 413 `glossary_limit`. */
#include "server/api_ext.h"

#include "core/json.h"

#include <stdlib.h>
#include <string.h>

#define GL_PREFIX "/v1/glossaries"

static bool list(struct hy_http_req *req, struct hy_gstore *gs)
{
    size_t n = 0;
    hy_gstore_list(gs, NULL, 0, &n);
    struct hy_gstore_info *all = calloc(n + 1, sizeof *all);
    if (!all)
        return hy_http_error(req, 500, "out_of_memory", "out of memory");
    hy_gstore_list(gs, all, n, &n); /* may have changed: at most n are copied */
    json_t *a = json_array();
    for (size_t i = 0; i < n && all[i].id[0]; i++)
        json_array_append_new(a, hy_api_glossary_info(&all[i]));
    free(all);
    return hy_http_json(req, 200, json_pack("{s:o}", "glossaries", a));
}

static bool get_one(struct hy_http_req *req, struct hy_gstore *gs, const char *id)
{
    struct hy_gstore_ref *r = NULL;
    struct hy_err err = {{0}};
    if (hy_gstore_acquire(gs, id, &r, &err))
        return hy_http_error(req, 404, "glossary_not_found", "%s", err.msg);
    const struct hy_glossary *g = hy_gstore_glossary(r);
    json_t *j = hy_api_glossary_info(hy_gstore_info(r)), *e = json_array();
    for (size_t i = 0; i < hy_glossary_size(g); i++) {
        struct hy_glossary_term t;
        hy_glossary_get(g, i, &t);
        json_array_append_new(e, json_pack("{s:s%,s:s%}", "source", t.src, t.src_len, "target",
                                           t.tgt, t.tgt_len));
    }
    json_object_set_new(j, "entries", e);
    hy_gstore_release(r);
    return hy_http_json(req, 200, j);
}

/* The entries field into g: a JSON list or a file's text. *skipped: TBX entries lacking a
 * language. */
static hy_status parse_entries(json_t *body, struct hy_glossary *g, const char *src,
                               const char *tgt, size_t *skipped, struct hy_err *err)
{
    json_t *e = json_object_get(body, "entries");
    char fmt[8] = "";
    *skipped = 0;
    hy_status st = hy_json_get_str(body, "entries_format", false, fmt, sizeof fmt, err);
    if (st)
        return st;
    if (json_is_array(e)) {
        size_t n = json_array_size(e);
        if (n > HY_GLOSSARY_MAX_ENTRIES)
            return hy_err_set(err, HY_E_RANGE, "entries: more than %d", HY_GLOSSARY_MAX_ENTRIES);
        struct hy_glossary_term *t = calloc(n + 1, sizeof *t);
        if (!t)
            return hy_err_set(err, HY_E_NOMEM, "out of memory");
        for (size_t i = 0; i < n && !st; i++) {
            json_t *x = json_array_get(e, i), *s = json_object_get(x, "source"),
                   *d = json_object_get(x, "target");
            if (!json_is_string(s) || !json_is_string(d))
                st = hy_err_set(err, HY_E_INVAL, "entries[%zu]: an object with the strings "
                                "source and target is required", i);
            else
                t[i] = (struct hy_glossary_term){json_string_value(s), json_string_value(d),
                                                 json_string_length(s), json_string_length(d)};
        }
        if (!st)
            st = hy_glossary_add_many(g, t, n, err);
        free(t);
        return st;
    }
    if (!json_is_string(e))
        return hy_err_set(err, HY_E_INVAL, "entries: a list of {\"source\", \"target\"} or the "
                          "text of a CSV, TSV or TBX file is required");
    const char *s = json_string_value(e);
    size_t n = json_string_length(e), lead = strspn(s, " \t\r\n");
    if (!strcmp(fmt, "tbx") || (!fmt[0] && (s[lead] == '<' || !strncmp(s, "\xEF\xBB\xBF<", 4))))
        return hy_glossary_parse_tbx(g, s, n, src, tgt, skipped, err);
    if (fmt[0] && strcmp(fmt, "csv") && strcmp(fmt, "tsv"))
        return hy_err_set(err, HY_E_INVAL, "entries_format: csv, tsv or tbx, not '%s'", fmt);
    st = hy_glossary_parse(g, s, n, !strcmp(fmt, "csv")   ? HY_GLOSSARY_CSV
                                    : !strcmp(fmt, "tsv") ? HY_GLOSSARY_TSV
                                                          : HY_GLOSSARY_AUTO, err);
    const char *fs = "", *ft = ""; /* DeepL's 4-column rows name the pair: it must agree */
    hy_glossary_langs(g, &fs, &ft);
    if (!st && fs[0] && (hy_lang_find(fs) != hy_lang_find(src) ||
                         hy_lang_find(ft) != hy_lang_find(tgt)))
        st = hy_err_set(err, HY_E_INVAL, "the entries are for %s -> %s, the glossary for %s -> %s",
                        fs, ft, src, tgt);
    return st;
}

static bool create(struct hy_http_req *req, struct hy_gstore *gs)
{
    json_t *body = hy_http_body_json(req);
    if (!body)
        return true;
    char name[HY_GSTORE_MAX_NAME + 1] = "", src[64] = "", tgt[64] = "";
    struct hy_err err = {{0}};
    struct hy_glossary *g = NULL;
    size_t skipped = 0;
    hy_status st = hy_json_get_str(body, "name", true, name, sizeof name, &err);
    if (!st)
        st = hy_json_get_str(body, "source_lang", true, src, sizeof src, &err);
    if (!st)
        st = hy_json_get_str(body, "target_lang", true, tgt, sizeof tgt, &err);
    if (!st && (!hy_lang_find(src) || !hy_lang_find(tgt)))
        st = hy_err_set(&err, HY_E_INVAL, "unknown language '%s'", hy_lang_find(src) ? tgt : src);
    if (!st)
        st = hy_glossary_create(&g, &err);
    if (!st)
        st = parse_entries(body, g, src, tgt, &skipped, &err);
    if (!st && !hy_glossary_size(g))
        st = hy_err_set(&err, HY_E_INVAL, "entries: no entry%s",
                        skipped ? " with both languages" : "");
    json_decref(body);
    if (st) {
        hy_glossary_destroy(g);
        return hy_http_error(req, st == HY_E_NOMEM ? 500 : 400,
                             st == HY_E_UNSUPPORTED ? "unsupported" : "invalid_glossary", "%s",
                             err.msg);
    }
    struct hy_gstore_info info;
    st = hy_gstore_add(gs, name, src, tgt, g, &info, &err); /* takes g */
    if (st)
        return hy_http_error(req, st == HY_E_NOSPACE ? 413 : st == HY_E_INVAL ? 400 : 500,
                             st == HY_E_NOSPACE ? "glossary_limit" : "glossary_failed", "%s",
                             err.msg);
    json_t *j = hy_api_glossary_info(&info);
    if (skipped)
        json_object_set_new(j, "entries_skipped", json_integer((json_int_t)skipped));
    return hy_http_json(req, 201, j);
}

/* The store, or NULL after answering 404 (a server without one). */
static struct hy_gstore *store_of(struct hy_http_req *req)
{
    struct hy_gstore *gs = req->srv->cfg.glossaries;
    if (!gs)
        hy_http_error(req, 404, "not_found", "this server keeps no glossaries");
    return gs;
}

/* The id: the path's last segment (the router matched /v1/glossaries/{id}). */
static const char *id_of(const struct hy_http_req *req)
{
    return req->path + strlen(GL_PREFIX "/");
}

bool hy_api_glossary_list(struct hy_http_req *req)
{
    struct hy_gstore *gs = store_of(req);
    return gs ? list(req, gs) : true;
}

bool hy_api_glossary_create(struct hy_http_req *req)
{
    struct hy_gstore *gs = store_of(req);
    return gs ? create(req, gs) : true;
}

bool hy_api_glossary_get(struct hy_http_req *req)
{
    struct hy_gstore *gs = store_of(req);
    return gs ? get_one(req, gs, id_of(req)) : true;
}

bool hy_api_glossary_delete(struct hy_http_req *req)
{
    struct hy_gstore *gs = store_of(req);
    struct hy_err err = {{0}};
    if (!gs)
        return true;
    hy_status st = hy_gstore_delete(gs, id_of(req), &err);
    if (st)
        return hy_http_error(req, st == HY_E_NOTFOUND ? 404 : 500,
                             st == HY_E_NOTFOUND ? "glossary_not_found" : "glossary_failed", "%s",
                             err.msg);
    return hy_http_text(req, 204, "application/json", "", 0);
}
