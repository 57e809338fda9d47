/* log.h: leveled logging, one line per call, on stderr (or hy_log_set_output's stream).
 * Every line carries an ISO 8601 timestamp with the time zone offset (local time,
 * milliseconds: YYYY-MM-DDThh:mm:ss.mmm+hh:mm) and the level. Two formats:
 *   text: "TIMESTAMP LEVEL message key=value key2="value with spaces""
 *   json: {"ts":"TIMESTAMP","level":"info","msg":"message","key":"value",...} (one object a
 *         line; a field value that is a plain JSON number, e.g. 200 or 12.3, is written as a
 *         number, anything else as a string)
 * Text from outside reaches log lines (paths, request targets), so messages and field values
 * are escaped: in text, control characters as \n, \t, \r or \xNN (and '"' and '\' inside a
 * quoted value); in JSON, the JSON escapes; invalid UTF-8 becomes U+FFFD in both. A line
 * longer than HY_LOG_LINE_MAX is cut, marked with "...". Thread-safe: each line is formed
 * in a local buffer and written with one call. The threshold is the global hy_log_level;
 * the format is set once at start-up (hy_log_set_format), before threads exist. */
#ifndef HY_CORE_LOG_H
#define HY_CORE_LOG_H

#include <stdio.h>

enum hy_log_lvl { HY_LOG_ERROR = 0, HY_LOG_WARN = 1, HY_LOG_INFO = 2, HY_LOG_DEBUG = 3 };
enum hy_log_fmt { HY_LOG_TEXT = 0, HY_LOG_JSON = 1 };

#define HY_LOG_LINE_MAX 8192

/* A named value on a log line, e.g. {"request_id", id} or {"status", "200"}. */
struct hy_log_field {
    const char *key;   /* [A-Za-z0-9_]; other characters are escaped as in values */
    const char *value; /* NULL: the field is left out */
};

void hy_log(enum hy_log_lvl lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* hy_log with fields after the message (the server's request id, status, timings). */
void hy_log_fields(enum hy_log_lvl lvl, const struct hy_log_field *fields, int n_fields,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Selects the line format (default text). */
void hy_log_set_format(enum hy_log_fmt fmt);
enum hy_log_fmt hy_log_get_format(void);
/* "text" or "json" into *out; -1 for anything else. */
int hy_log_parse_format(const char *name, enum hy_log_fmt *out);

/* Where lines go (default stderr; tests). */
void hy_log_set_output(FILE *f);

/* Formats one line (no trailing newline) into buf[cap] as hy_log_fields would write it at
 * time t (seconds since the epoch, with fraction); returns its length. For tests and for
 * callers that write lines elsewhere. */
size_t hy_log_format_line(char *buf, size_t cap, double t, enum hy_log_lvl lvl,
                          const struct hy_log_field *fields, int n_fields, const char *msg);

#define HY_LOGE(...) hy_log(HY_LOG_ERROR, __VA_ARGS__)
#define HY_LOGW(...) hy_log(HY_LOG_WARN, __VA_ARGS__)
#define HY_LOGI(...) hy_log(HY_LOG_INFO, __VA_ARGS__)
#define HY_LOGD(...) hy_log(HY_LOG_DEBUG, __VA_ARGS__)

#endif
