#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages quote file and request contents: a control character there would split the
 * one-line error (or forge a log line), so each becomes '?'. */
static void one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

hy_status hy_err_set(struct hy_err *err, hy_status st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        one_line(err->msg);
    }
    return st;
}

void hy_err_prefix(struct hy_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char pre[HY_ERR_MSG_MAX], old[HY_ERR_MSG_MAX], both[2 * HY_ERR_MSG_MAX + 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    old[sizeof old - 1] = '\0';
    snprintf(both, sizeof both, "%s: %s", pre, old); /* fits; cut to the message size below */
    memcpy(err->msg, both, sizeof err->msg - 1);
    err->msg[sizeof err->msg - 1] = '\0';
    one_line(err->msg);
}

const char *hy_status_str(hy_status st)
{
    switch (st) {
    case HY_OK: return "ok";
    case HY_E_INVAL: return "invalid argument";
    case HY_E_IO: return "I/O error";
    case HY_E_FORMAT: return "format error";
    case HY_E_NOMEM: return "out of memory";
    case HY_E_NOSPACE: return "no space";
    case HY_E_UNSUPPORTED: return "unsupported";
    case HY_E_RANGE: return "out of range";
    case HY_E_NOTFOUND: return "not found";
    }
    return "unknown status";
}

void hy_assert_fail(const char *file, int line, const char *expr)
{
    fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, expr);
    fflush(stderr);
    abort();
}
