/* params.c: request fields from JSON or form-encoded bodies and from query strings, as
 * LibreTranslate's and DeepL's clients send them (http.h has the contract). */
#include "server/http.h"

#include "core/utf8.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Decodes s[0..n) into out (room for n bytes); false on a malformed %XX escape. */
static bool form_decode(const char *s, size_t n, char *out, size_t *len)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            out[o++] = ' ';
        } else if (s[i] != '%') {
            out[o++] = s[i];
        } else {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1, lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return false;
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        }
    }
    *len = o;
    return true;
}

/* One decoded name or value as a JSON string; NULL (reason in err) when it is not UTF-8
 * without NUL. buf has room for n bytes. */
static json_t *form_string(const char *s, size_t n, char *buf, const char *what,
                           struct hy_err *err)
{
    size_t len = 0;
    if (!form_decode(s, n, buf, &len)) {
        hy_err_set(err, HY_E_INVAL, "malformed %%-escape in a form %s", what);
        return NULL;
    }
    if (memchr(buf, '\0', len) || hy_utf8_validate(buf, len) != len) {
        hy_err_set(err, HY_E_INVAL, "a form %s is not UTF-8 text", what);
        return NULL;
    }
    return json_stringn(buf, len);
}

/* Adds name = v to obj; a repeated name turns its value into an array. Takes v. */
static bool form_add(json_t *obj, const char *name, json_t *v)
{
    json_t *old = json_object_get(obj, name);
    if (!old)
        return !json_object_set_new(obj, name, v);
    if (json_is_array(old))
        return !json_array_append_new(old, v);
    json_t *a = json_pack("[O,o]", old, v);
    return a && !json_object_set_new(obj, name, a);
}

json_t *hy_http_form_parse(const char *s, size_t n, struct hy_err *err)
{
    json_t *obj = json_object();
    char *buf = malloc(n + 1);
    size_t fields = 0;
    if (!obj || !buf) {
        hy_err_set(err, HY_E_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n;) {
        const char *amp = memchr(s + i, '&', n - i);
        size_t end = amp ? (size_t)(amp - s) : n;
        const char *eq = memchr(s + i, '=', end - i);
        size_t ne = eq ? (size_t)(eq - s) : end;
        if (end > i) { /* empty pieces (a&&b) are skipped, as browsers and Werkzeug do */
            if (++fields > HY_HTTP_FORM_MAX_FIELDS) {
                hy_err_set(err, HY_E_INVAL, "more than %d form fields", HY_HTTP_FORM_MAX_FIELDS);
                goto fail;
            }
            json_t *name = form_string(s + i, ne - i, buf, "name", err);
            if (!name)
                goto fail;
            json_t *v = form_string(s + ne + (eq ? 1 : 0), end - ne - (eq ? 1 : 0), buf,
                                    "value", err);
            bool ok = v && form_add(obj, json_string_value(name), v);
            json_decref(name);
            if (!ok) {
                if (v)
                    hy_err_set(err, HY_E_NOMEM, "out of memory");
                goto fail;
            }
        }
        i = end + 1;
    }
    free(buf);
    return obj;
fail:
    free(buf);
    json_decref(obj);
    return NULL;
}

/* The media type of a Content-Type value is `type` (case-insensitive, parameters after). */
static bool media_is(const char *ctype, const char *type)
{
    size_t n = strlen(type);
    if (!ctype || strncasecmp(ctype, type, n))
        return false;
    return ctype[n] == '\0' || ctype[n] == ';' || ctype[n] == ' ' || ctype[n] == '\t';
}

json_t *hy_http_body_params(struct hy_http_req *req)
{
    if (media_is(req->ctype, "multipart/form-data"))
        return hy_http_error(req, 415, "unsupported_media_type",
                             "multipart bodies are not accepted: send JSON or "
                             "application/x-www-form-urlencoded"),
               NULL;
    /* curl -d sends JSON as a form unless told otherwise: a form never starts with '{' */
    if (!media_is(req->ctype, "application/x-www-form-urlencoded") ||
        (req->body.n && req->body.p[0] == '{'))
        return hy_http_body_json(req);
    struct hy_err err = {{0}};
    json_t *v = hy_http_form_parse(req->body.p ? req->body.p : "", req->body.n, &err);
    if (!v)
        hy_http_error(req, 400, "invalid_form", "%s", err.msg);
    return v;
}
