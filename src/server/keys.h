/* keys.h: the server's API keys: named keys from a file (serve --api-keys-file) plus the
 * single --api-key (named "default"), each with an optional request-rate limit (a token
 * bucket), and per-key counters for /metrics.
 * Keys are kept only as SHA-256 digests: never logged, not held as text after loading; a
 * presented key is hashed and compared with every digest in constant time. The table is
 * sized at load and never grows.
 * File format: one key a line, "NAME KEY [RATE]", fields separated by spaces or tabs;
 * NAME is 1-64 of [A-Za-z0-9_.-] (the log field and metrics label), KEY 16-512 visible
 * ASCII characters, RATE "N/s", "N/min" or "N/h" (N in 1..1000000): at most N requests at
 * once, refilled at N per unit. A line whose first non-blank character is '#' is a
 * comment; blank lines are ignored. Every error names FILE:LINE, never the key.
 * Threads: create before the server starts; check and render from any thread (one mutex,
 * held for a bucket update or a copy of the counters). */
#ifndef HY_SERVER_KEYS_H
#define HY_SERVER_KEYS_H

#include "core/status.h"

#include <stddef.h>

#define HY_KEYS_MAX 4096        /* keys in one table */
#define HY_KEYS_NAME_MAX 64     /* bytes of a name */
#define HY_KEYS_KEY_MIN 16      /* characters of a key from the file */
#define HY_KEYS_KEY_MAX 512     /* characters of a key */

struct hy_keys;

/* The table from file (NULL: none) and single_key (NULL: none; any length, as
 * --api-key always took). *out is NULL when both are NULL (no key required). HY_E_IO /
 * HY_E_INVAL with "FILE:LINE: ..." on a bad file; a name or a key given twice is an error. */
hy_status hy_keys_create(struct hy_keys **out, const char *file, const char *single_key,
                         struct hy_err *err);
/* Accepts NULL. */
void hy_keys_destroy(struct hy_keys *k);
int hy_keys_count(const struct hy_keys *k);

enum hy_keys_verdict {
    HY_KEYS_OK = 0,  /* a known key within its limit: counted */
    HY_KEYS_UNKNOWN, /* no "Bearer KEY", or not a known key */
    HY_KEYS_LIMITED, /* a known key over its limit: counted as limited */
};

/* Checks a presented key (NULL: none) at monotonic time now. OK and LIMITED set *name
 * (borrowed, lives as long as k); LIMITED sets *retry_after_s, the whole seconds until the
 * key has a request again (at least 1), and *rate its limit's text ("60/min"). */
enum hy_keys_verdict hy_keys_check(struct hy_keys *k, const char *key, double now,
                                   const char **name, int *retry_after_s, const char **rate);

/* Prometheus text of the per-key counters: hymt_api_key_requests_total{key="NAME"} and
 * hymt_api_key_rate_limited_total{key="NAME"}. malloc'ed (caller frees), NULL when out of
 * memory. */
char *hy_keys_render(struct hy_keys *k, size_t *len);

#endif
