/* status.h: the error type every fallible hymt function returns.
 * Runtime failures (I/O, bad files, bad requests, full pools) return a hy_status and,
 * when the caller passes a struct hy_err, a one-line message naming what is wrong.
 * Bugs (broken invariants) stop the program through HY_ASSERT, on in release builds.
 * Thread-safe: no shared state; each caller owns its hy_err. */
#ifndef HY_CORE_STATUS_H
#define HY_CORE_STATUS_H

#include <stdarg.h>

typedef enum hy_status {
    HY_OK = 0,
    HY_E_INVAL,       /* bad argument or value from outside */
    HY_E_IO,          /* file missing, unreadable, short read */
    HY_E_FORMAT,      /* malformed file contents */
    HY_E_NOMEM,       /* allocation failed */
    HY_E_NOSPACE,     /* a fixed pool is exhausted */
    HY_E_UNSUPPORTED, /* valid but not supported (dtype, architecture, ...) */
    HY_E_RANGE,       /* value out of its allowed range */
    HY_E_NOTFOUND,    /* named thing does not exist */
} hy_status;

#define HY_ERR_MSG_MAX 256

struct hy_err {
    char msg[HY_ERR_MSG_MAX];
};

/* Fills err (if non-NULL) with the formatted message and returns st, so that callers can
 * write `return hy_err_set(err, HY_E_FORMAT, "%s: ...", path);`. A message is one line:
 * control characters (from quoted input) become '?'. */
hy_status hy_err_set(struct hy_err *err, hy_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an already set message (for adding a file or tensor name). */
void hy_err_prefix(struct hy_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Short name of a status, e.g. "format error". Never NULL. */
const char *hy_status_str(hy_status st);

/* Prints "file:line: assertion failed: expr" to stderr and aborts. */
_Noreturn void hy_assert_fail(const char *file, int line, const char *expr);

#define HY_ASSERT(cond) ((cond) ? (void)0 : hy_assert_fail(__FILE__, __LINE__, #cond))

#endif
