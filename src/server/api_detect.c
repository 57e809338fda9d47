/* api_detect.c: POST /detect, LibreTranslate's language detection (http.h has the
 * contract of handlers). Body, JSON or a form: {"q": TEXT or [TEXT, ...], "api_key"}; the
 * key may also come as Authorization: Bearer. Answer for a string: the candidates, best
 * first, [{"language": "de", "confidence": 97.0}, ...] (confidence 0-100, one decimal,
 * at most DETECT_MAX_CANDIDATES, those that round to 0 left out; [] when the text has no
 * letters to decide by); for an array: one such list per text, in order. Errors in
 * LibreTranslate's {"error": "..."} shape: 400 without q or with a q of the wrong type,
 * 403 for a missing or wrong key, 429 for a key over its rate (--api-keys-file). Needs no model: it answers while the model loads.
 * Bounded: the body by --max-body, the texts by DETECT_MAX_TEXTS, the text read by
 * HY_LANG_DETECT_MAX (lang.h). */
#include "server/http.h"

#include "translate/lang.h"

#include <math.h>

#define DETECT_MAX_TEXTS 128
#define DETECT_MAX_CANDIDATES 5

/* The ranked candidates of one text as LibreTranslate's list; NULL when out of memory. */
static json_t *candidates(const char *text, size_t len)
{
    struct hy_lang_guess g[DETECT_MAX_CANDIDATES];
    size_t n = hy_lang_detect_ranked(text, len, g, DETECT_MAX_CANDIDATES);
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        double c = round(g[i].confidence * 10) / 10;
        if (i > 0 && c <= 0)
            break;
        if (json_array_append_new(list, json_pack("{s:s,s:f}", "language", g[i].lang->code,
                                                  "confidence", c))) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

bool hy_api_detect(struct hy_http_req *req)
{
    json_t *body = hy_http_body_params(req);
    if (!body)
        return true;
    json_t *key = json_object_get(body, "api_key");
    json_t *q = json_object_get(body, "q");
    const char *why = NULL;
    if (!hy_http_authorize(req, json_is_string(key) ? json_string_value(key) : NULL, 403,
                           "invalid_api_key", "Invalid API key")) {
        json_decref(body);
        return true; /* answered: 403, or 429 for a key over its rate */
    }
    if (!q || json_is_null(q))
        why = "Invalid request: missing q parameter";
    else if (json_is_array(q) && (json_array_size(q) < 1 || json_array_size(q) > DETECT_MAX_TEXTS))
        why = "Invalid request: q: 1 to 128 strings are required";
    else if (!json_is_array(q) && !json_is_string(q))
        why = "Invalid request: q: a string or an array of strings is required";
    for (size_t i = 0; !why && json_is_array(q) && i < json_array_size(q); i++) {
        if (!json_is_string(json_array_get(q, i)))
            why = "Invalid request: q: a string or an array of strings is required";
    }
    if (why) {
        json_decref(body);
        return hy_http_error(req, 400, "invalid_parameter", "%s", why);
    }
    json_t *out = NULL;
    if (json_is_string(q)) {
        out = candidates(json_string_value(q), json_string_length(q));
    } else {
        out = json_array();
        for (size_t i = 0; out && i < json_array_size(q); i++) {
            json_t *s = json_array_get(q, i);
            if (json_array_append_new(out, candidates(json_string_value(s), json_string_length(s)))) {
                json_decref(out);
                out = NULL;
            }
        }
    }
    json_decref(body);
    if (!out)
        return hy_http_error(req, 500, "out_of_memory", "out of memory");
    return hy_http_json(req, 200, out);
}
