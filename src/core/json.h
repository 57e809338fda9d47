/* json.h: bounded, validating helpers over jansson for files and bodies from outside.
 * Every getter checks presence, type and range and names the key in its error.
 * Returned json_t values are owned by the caller (json_decref), as jansson does. */
#ifndef HY_CORE_JSON_H
#define HY_CORE_JSON_H

#include "core/status.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a whole file of at most max_bytes. Errors name the path (and line/column). */
hy_status hy_json_load_file(json_t **out, const char *path, size_t max_bytes, struct hy_err *err);
/* Parses len bytes (need not be NUL-terminated); `what` names the source in errors. */
hy_status hy_json_parse(json_t **out, const char *buf, size_t len, const char *what,
                        struct hy_err *err);

/* Getters on object obj. When the key is absent: HY_E_NOTFOUND if required, else *out keeps
 * its value and HY_OK is returned. Wrong type or out of [lo, hi]: HY_E_FORMAT / HY_E_RANGE. */
hy_status hy_json_get_int(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
                          int64_t *out, struct hy_err *err);
hy_status hy_json_get_real(const json_t *obj, const char *key, bool required, double lo, double hi,
                           double *out, struct hy_err *err); /* accepts integers too */
hy_status hy_json_get_bool(const json_t *obj, const char *key, bool required, bool *out,
                           struct hy_err *err);
/* Copies into buf (cap bytes incl. NUL); a longer string is HY_E_RANGE, not truncated. */
hy_status hy_json_get_str(const json_t *obj, const char *key, bool required, char *buf, size_t cap,
                          struct hy_err *err);

#endif
