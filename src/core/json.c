#include "core/json.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Duplicate keys are rejected: a file saying "hidden_size" twice is ambiguous, and for
 * safetensors headers a duplicate tensor name would otherwise hide a tensor. */
#define PARSE_FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES)

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "real";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

hy_status hy_json_parse(json_t **out, const char *buf, size_t len, const char *what,
                        struct hy_err *err)
{
    json_error_t je;
    *out = NULL;
    json_t *root = json_loadb(buf, len, PARSE_FLAGS, &je);
    if (!root)
        return hy_err_set(err, HY_E_FORMAT, "%s: invalid JSON at line %d, column %d: %s", what,
                          je.line, je.column, je.text);
    *out = root;
    return HY_OK;
}

/* Reads at most max_bytes + 1 bytes so that an oversized file is detected without trusting
 * st_size (pipes and /proc files report 0). */
static hy_status read_bounded(FILE *f, const char *path, size_t max_bytes, char **buf_out,
                              size_t *len_out, struct hy_err *err)
{
    size_t limit = max_bytes < SIZE_MAX / 4 ? max_bytes : SIZE_MAX / 4;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
    for (;;) {
        if (len == cap) { /* len <= limit here, so the buffer always grows */
            size_t ncap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
            char *nbuf = realloc(buf, ncap);
            if (!nbuf) {
                free(buf);
                return hy_err_set(err, HY_E_NOMEM, "%s: out of memory", path);
            }
            buf = nbuf;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len > limit) {
            free(buf);
            return hy_err_set(err, HY_E_RANGE, "%s: file is larger than the limit of %zu bytes",
                              path, max_bytes);
        }
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        int e = errno;
        free(buf);
        return hy_err_set(err, HY_E_IO, "%s: read failed: %s", path, strerror(e));
    }
    *buf_out = buf;
    *len_out = len;
    return HY_OK;
}

hy_status hy_json_load_file(json_t **out, const char *path, size_t max_bytes, struct hy_err *err)
{
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return hy_err_set(err, HY_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        return hy_err_set(err, HY_E_IO, "%s: not a regular file", path);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return hy_err_set(err, HY_E_IO, "%s: cannot open: %s", path, strerror(e));
    }
    char *buf = NULL;
    size_t len = 0;
    hy_status st = read_bounded(f, path, max_bytes, &buf, &len, err);
    fclose(f);
    if (st != HY_OK)
        return st;
    st = hy_json_parse(out, buf, len, path, err);
    free(buf);
    return st;
}

/* Looks key up. *v is NULL when the key is absent or null; then the result depends on
 * `required`. HY_OK with *v set means the caller must check the type. */
static hy_status lookup(const json_t *obj, const char *key, bool required, json_t **v,
                        struct hy_err *err)
{
    *v = NULL;
    if (!json_is_object(obj))
        return hy_err_set(err, HY_E_FORMAT, "expected an object holding '%s', got %s", key,
                          obj ? type_name(obj) : "nothing");
    json_t *x = json_object_get(obj, key);
    if (x && !json_is_null(x)) {
        *v = x;
        return HY_OK;
    }
    if (required)
        return hy_err_set(err, HY_E_NOTFOUND, "missing key '%s'%s", key, x ? " (null)" : "");
    return HY_OK;
}

hy_status hy_json_get_int(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
                          int64_t *out, struct hy_err *err)
{
    json_t *v;
    hy_status st = lookup(obj, key, required, &v, err);
    if (st != HY_OK || !v)
        return st;
    if (!json_is_integer(v))
        return hy_err_set(err, HY_E_FORMAT, "key '%s': expected an integer, got %s", key,
                          type_name(v));
    int64_t x = (int64_t)json_integer_value(v);
    if (x < lo || x > hi)
        return hy_err_set(err, HY_E_RANGE,
                          "key '%s': %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]", key, x, lo,
                          hi);
    *out = x;
    return HY_OK;
}

hy_status hy_json_get_real(const json_t *obj, const char *key, bool required, double lo, double hi,
                           double *out, struct hy_err *err)
{
    json_t *v;
    hy_status st = lookup(obj, key, required, &v, err);
    if (st != HY_OK || !v)
        return st;
    if (!json_is_number(v))
        return hy_err_set(err, HY_E_FORMAT, "key '%s': expected a number, got %s", key,
                          type_name(v));
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi))
        return hy_err_set(err, HY_E_RANGE, "key '%s': %g is outside [%g, %g]", key, x, lo, hi);
    *out = x;
    return HY_OK;
}

hy_status hy_json_get_bool(const json_t *obj, const char *key, bool required, bool *out,
                           struct hy_err *err)
{
    json_t *v;
    hy_status st = lookup(obj, key, required, &v, err);
    if (st != HY_OK || !v)
        return st;
    if (!json_is_boolean(v))
        return hy_err_set(err, HY_E_FORMAT, "key '%s': expected true or false, got %s", key,
                          type_name(v));
    *out = json_is_true(v);
    return HY_OK;
}

hy_status hy_json_get_str(const json_t *obj, const char *key, bool required, char *buf, size_t cap,
                          struct hy_err *err)
{
    json_t *v;
    hy_status st = lookup(obj, key, required, &v, err);
    if (st != HY_OK || !v)
        return st;
    if (!json_is_string(v))
        return hy_err_set(err, HY_E_FORMAT, "key '%s': expected a string, got %s", key,
                          type_name(v));
    size_t len = json_string_length(v);
    if (cap == 0 || len >= cap)
        return hy_err_set(err, HY_E_RANGE, "key '%s': string of %zu bytes is longer than %zu", key,
                          len, cap ? cap - 1 : 0);
    memcpy(buf, json_string_value(v), len + 1);
    return HY_OK;
}

const char *hy_json_type_name(const json_t *v)
{
    return v ? type_name(v) : "nothing";
}
