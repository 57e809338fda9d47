/* json.h: bounded, validating helpers over jansson for files and bodies from outside.
 * Every getter checks presence, type and range and names the key in its error; callers
 * prefix the file or object (hy_err_prefix). Parsing accepts any JSON value at the top level
 * (callers check the type), rejects duplicate keys and \u0000 in strings.
 * Returned json_t values are owned by the caller (json_decref), as jansson does.
 * Thread-safe: no shared state. */
#ifndef HY_CORE_JSON_H
#define HY_CORE_JSON_H

#include "core/status.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a whole file of at most max_bytes. Errors name the path: HY_E_IO if it cannot be
 * read, HY_E_RANGE if it is larger than max_bytes, HY_E_FORMAT (with line and column) if it
 * is not valid JSON. */
hy_status hy_json_load_file(json_t **out, const char *path, size_t max_bytes, struct hy_err *err);
/* Parses len bytes (need not be NUL-terminated); `what` names the source in errors. */
hy_status hy_json_parse(json_t **out, const char *buf, size_t len, const char *what,
                        struct hy_err *err);

/* Getters on object obj. When the key is absent or null: HY_E_NOTFOUND if required, else
 * *out keeps its value and HY_OK is returned. Wrong type or out of [lo, hi]: HY_E_FORMAT /
 * HY_E_RANGE (obj not an object: HY_E_FORMAT). *out is unchanged on every error. */
hy_status hy_json_get_int(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
                          int64_t *out, struct hy_err *err);
hy_status hy_json_get_real(const json_t *obj, const char *key, bool required, double lo, double hi,
                           double *out, struct hy_err *err); /* accepts integers too */
hy_status hy_json_get_bool(const json_t *obj, const char *key, bool required, bool *out,
                           struct hy_err *err);
/* Copies into buf (cap bytes incl. NUL); a longer string is HY_E_RANGE, not truncated. */
hy_status hy_json_get_str(const json_t *obj, const char *key, bool required, char *buf, size_t cap,
                          struct hy_err *err);

/* "object", "integer", ... for messages; "nothing" for NULL. */
const char *hy_json_type_name(const json_t *v);

#endif
