/* http_parse.h: a strict HTTP/1.1 request parser (RFC 9112) in the picohttpparser style:
 * it reads a byte range, never allocates, never reads past the range and never writes to
 * it (the chunked decoder compacts the body in place), and points into the caller's buffer.
 * What it accepts: a request line "METHOD SP target SP HTTP/1.x CRLF" (single spaces, a token
 * method, a target of visible ASCII whose form hy_http_check_target judges), header lines
 * "name: value CRLF" (token names, no space before the colon, values without control characters
 * other than HTAB, no obs-fold), at most HY_HTTP_MAX_HEADERS of them, one Host for HTTP/1.1.
 * Leading empty lines before the request line are skipped (RFC 9112 2.2). Framing: at most one
 * Content-Length (digits only; a second one, even equal, is refused: request smuggling behind a
 * proxy that reads the other), or Transfer-Encoding: chunked alone (any other coding, a list,
 * or chunked with Content-Length is refused). Every refusal says which status answers it (400,
 * 414, 417, 431 or 505), with a stable code and a message.
 * The target check percent-decodes the path and refuses bad escapes, NULs, control
 * characters and invalid UTF-8 in path and query. */
#ifndef HY_SERVER_HTTP_PARSE_H
#define HY_SERVER_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_HTTP_MAX_HEADERS 64
#define HY_HTTP_MAX_TARGET 8192 /* bytes of the request target; longer is 414 */
#define HY_HTTP_MAX_METHOD 16

struct hy_http_header {
    const char *name, *value; /* not NUL-terminated */
    size_t name_len, value_len;
};

struct hy_http_head {
    const char *method, *target;
    size_t method_len, target_len;
    int minor;                   /* HTTP/1.minor: 0 or 1 */
    struct hy_http_header headers[HY_HTTP_MAX_HEADERS];
    size_t n_headers;
    int64_t content_length;      /* -1: none */
    bool chunked;                /* Transfer-Encoding: chunked */
    bool keep_alive;             /* HTTP/1.1 unless "Connection: close"; 1.0 with keep-alive */
    bool expect_continue;        /* Expect: 100-continue */
};

/* Why a request was refused: the status to answer, a code for the JSON error, a message. */
struct hy_http_perr {
    int status;
    const char *code, *msg;
};

/* Parses the request head at buf[0..len). Returns the head's length (its final CRLF CRLF
 * included, leading empty lines too), -2 when more bytes are needed, -1 on an error (*e
 * says which). A head not complete within max bytes is an error (414 while the request
 * line is still open, else 431). */
int hy_http_parse_head(const char *buf, size_t len, size_t max, struct hy_http_head *h,
                       struct hy_http_perr *e);

/* Case-insensitive lookup of a header's value; NULL when absent (first one if repeated). */
const struct hy_http_header *hy_http_find(const struct hy_http_head *h, const char *name);

/* Checks the target and percent-decodes its path (up to '?') into path[cap] (NUL-terminated;
 * 414 when it does not fit). false with *e set (400) for a target that is not a path
 * starting with '/' (absolute-form, authority-form and '*' are refused: the server is no
 * proxy and answers no OPTIONS *), a bad escape, a decoded NUL or control character, or
 * invalid UTF-8 in path or query. */
bool hy_http_check_target(const char *t, size_t n, char *path, size_t cap,
                          struct hy_http_perr *e);

/* Incremental chunked body decoder. Zero-initialise before the first call. */
struct hy_http_chunked {
    int state;
    uint64_t left;  /* bytes left in the current chunk */
    int digits;     /* hex digits of the current size */
    size_t trailer; /* bytes of the current trailer line */
};

/* Decodes buf[0..len) in place: the data found in it is moved to buf[0..*out). Returns 1
 * when the body ended (*used: input bytes it took, trailers included; what follows is the
 * next request), 0 when it continues (*used = len), -1 on malformed framing or a chunk
 * larger than max (*e: 400 or 413). */
int hy_http_chunked_decode(struct hy_http_chunked *c, char *buf, size_t len, size_t *out,
                           size_t *used, uint64_t max, struct hy_http_perr *e);

#endif
