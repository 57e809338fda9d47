/* http_parse.c: the strict HTTP/1.1 request parser (http_parse.h has the contract). */
#include "server/http_parse.h"

#include "core/utf8.h"

#include <string.h>
#include <strings.h>

/* Records why a request is refused; returns -1 for the caller to pass on. */
static int fail_(struct hy_http_perr *e, int status, const char *code, const char *msg)
{
    e->status = status;
    e->code = code;
    e->msg = msg;
    return -1;
}
#define FAIL(st, cd, m) fail_(e, st, cd, m)

/* RFC 9110 tchar: the characters of a token (methods, header names). */
static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A header value byte: visible ASCII, SP, HTAB or obs-text (>= 0x80). */
static bool is_vchar(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool eq(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && !strncasecmp(s, lit, n);
}

/* The request line at p[0..n): "METHOD SP target SP HTTP/1.x CRLF". Returns its length,
 * -2 when incomplete, -1 on an error. */
static int request_line(const char *p, size_t n, struct hy_http_head *h, struct hy_http_perr *e)
{
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)p[i]))
        i++;
    if (i == n)
        return i > HY_HTTP_MAX_METHOD ? FAIL(400, "bad_request", "the method is too long") : -2;
    if (p[i] != ' ' || i == 0 || i > HY_HTTP_MAX_METHOD)
        return FAIL(400, "bad_request", "malformed request line (method)");
    h->method = p;
    h->method_len = i++;
    size_t t = i;
    while (i < n && (unsigned char)p[i] > 0x20 && (unsigned char)p[i] < 0x7f) {
        if (i - t >= HY_HTTP_MAX_TARGET)
            return FAIL(414, "uri_too_long", "the request target is too long");
        i++;
    }
    if (i == n)
        return -2;
    if (p[i] != ' ' || i == t)
        return FAIL(400, "bad_request", "malformed request line (target: visible ASCII only, "
                                        "one space before the version)");
    h->target = p + t;
    h->target_len = i++ - t;
    static const char ver[] = "HTTP/";
    for (size_t k = 0; k < 5; k++, i++) {
        if (i == n)
            return -2;
        if (p[i] != ver[k])
            return FAIL(400, "bad_request", "malformed request line (version)");
    }
    if (n - i < 5)
        return memchr(p + i, '\n', n - i) ? FAIL(400, "bad_request", "malformed version") : -2;
    unsigned char ma = (unsigned char)p[i], mi = (unsigned char)p[i + 2];
    if (ma < '0' || ma > '9' || p[i + 1] != '.' || mi < '0' || mi > '9' || p[i + 3] != '\r' ||
        p[i + 4] != '\n')
        return FAIL(400, "bad_request", "malformed request line (version)");
    if (ma != '1' || mi > '1')
        return FAIL(505, "http_version_not_supported", "only HTTP/1.0 and HTTP/1.1 are served");
    h->minor = mi - '0';
    return (int)(i + 5);
}

/* One header line at p[0..n) into h. Returns its length, 0 for the empty line ending the
 * head (2 bytes consumed by the caller), -2 when incomplete, -1 on an error. */
static int header_line(const char *p, size_t n, struct hy_http_head *h, struct hy_http_perr *e)
{
    if (n < 2)
        return n == 1 && p[0] != '\r' && !is_tchar((unsigned char)p[0])
                   ? FAIL(400, "bad_request", "malformed header line")
                   : -2;
    if (p[0] == '\r')
        return p[1] == '\n' ? 0 : FAIL(400, "bad_request", "malformed header line");
    if (p[0] == ' ' || p[0] == '\t')
        return FAIL(400, "bad_request", "folded header lines are not accepted");
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)p[i]))
        i++;
    if (i == n)
        return -2;
    if (p[i] != ':' || i == 0)
        return FAIL(400, "bad_request", "malformed header name (no space before the colon)");
    size_t name_len = i++;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    size_t v = i;
    while (i < n && is_vchar((unsigned char)p[i]))
        i++;
    if (i == n)
        return -2;
    if (p[i] != '\r')
        return FAIL(400, "bad_request", "a control character in a header value");
    if (i + 1 == n)
        return -2;
    if (p[i + 1] != '\n')
        return FAIL(400, "bad_request", "malformed header line ending");
    size_t end = i;
    while (end > v && (p[end - 1] == ' ' || p[end - 1] == '\t'))
        end--;
    if (h->n_headers == HY_HTTP_MAX_HEADERS)
        return FAIL(431, "headers_too_large", "too many header lines");
    h->headers[h->n_headers++] = (struct hy_http_header){p, p + v, name_len, end - v};
    return (int)(i + 2);
}

/* Content-Length, Transfer-Encoding, Connection, Expect and Host into h. */
static int framing(struct hy_http_head *h, struct hy_http_perr *e)
{
    int hosts = 0, te = 0;
    h->content_length = -1;
    h->keep_alive = h->minor == 1;
    for (size_t k = 0; k < h->n_headers; k++) {
        const struct hy_http_header *x = &h->headers[k];
        const char *v = x->value;
        size_t n = x->value_len;
        if (eq(x->name, x->name_len, "content-length")) {
            if (h->content_length >= 0)
                return FAIL(400, "bad_request", "more than one Content-Length header");
            if (n == 0 || n > 18)
                return FAIL(400, "bad_request", "malformed Content-Length");
            int64_t cl = 0;
            for (size_t i = 0; i < n; i++) {
                if (v[i] < '0' || v[i] > '9')
                    return FAIL(400, "bad_request", "malformed Content-Length (digits only)");
                cl = cl * 10 + (v[i] - '0');
            }
            h->content_length = cl;
        } else if (eq(x->name, x->name_len, "transfer-encoding")) {
            if (te++ || !eq(v, n, "chunked"))
                return FAIL(400, "unsupported_transfer_encoding",
                            "Transfer-Encoding: only a single 'chunked' is accepted");
            h->chunked = true;
        } else if (eq(x->name, x->name_len, "host")) {
            hosts++;
        } else if (eq(x->name, x->name_len, "expect")) {
            if (!eq(v, n, "100-continue"))
                return FAIL(417, "expectation_failed", "only Expect: 100-continue is understood");
            h->expect_continue = h->minor == 1;
        } else if (eq(x->name, x->name_len, "connection")) {
            for (size_t a = 0; a < n;) { /* a comma-separated token list */
                size_t b = a;
                while (b < n && v[b] != ',')
                    b++;
                size_t s = a, t = b;
                while (s < t && (v[s] == ' ' || v[s] == '\t'))
                    s++;
                while (t > s && (v[t - 1] == ' ' || v[t - 1] == '\t'))
                    t--;
                if (eq(v + s, t - s, "close"))
                    h->keep_alive = false;
                else if (eq(v + s, t - s, "keep-alive") && h->minor == 0)
                    h->keep_alive = true;
                a = b + 1;
            }
        }
    }
    if (h->chunked && h->content_length >= 0)
        return FAIL(400, "bad_request", "both Content-Length and Transfer-Encoding");
    if (h->chunked && h->minor == 0)
        return FAIL(400, "bad_request", "Transfer-Encoding in an HTTP/1.0 request");
    if (h->minor == 1 && hosts != 1)
        return FAIL(400, "bad_request", "an HTTP/1.1 request needs exactly one Host header");
    return 0;
}

int hy_http_parse_head(const char *buf, size_t len, size_t max, struct hy_http_head *h,
                       struct hy_http_perr *e)
{
    memset(h, 0, sizeof *h);
    size_t lim = len < max ? len : max, i = 0;
    while (i + 1 < lim && buf[i] == '\r' && buf[i + 1] == '\n')
        i += 2; /* empty lines before a request (after a body, say) */
    bool line_done = false;
    int r = lim - i == 1 && buf[i] == '\r' ? -2 : request_line(buf + i, lim - i, h, e);
    if (r > 0) {
        line_done = true;
        i += (size_t)r;
        h->n_headers = 0;
        while ((r = header_line(buf + i, lim - i, h, e)) > 0)
            i += (size_t)r;
        if (r == 0)
            return framing(h, e) ? -1 : (int)(i + 2);
    }
    if (r == -2 && len >= max)
        return line_done ? FAIL(431, "headers_too_large", "the request head is too large")
                         : FAIL(414, "uri_too_long", "the request line is too long");
    return r;
}

const struct hy_http_header *hy_http_find(const struct hy_http_head *h, const char *name)
{
    for (size_t k = 0; k < h->n_headers; k++)
        if (eq(h->headers[k].name, h->headers[k].name_len, name))
            return &h->headers[k];
    return NULL;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes t[0..n) into out (cap bytes, or counting only when out is NULL): false
 * with *e on a bad escape, a decoded control character or invalid UTF-8. */
static bool decode(const char *t, size_t n, char *out, size_t cap, size_t *got,
                   struct hy_http_perr *e)
{
    char tmp[256];
    size_t k = 0, chk = 0; /* bytes decoded; of them checked as UTF-8 */
    char *dst = out ? out : tmp;
    size_t dcap = out ? cap : sizeof tmp;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == '%') {
            int hi = i + 2 < n ? hexval((unsigned char)t[i + 1]) : -1;
            int lo = i + 2 < n ? hexval((unsigned char)t[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                FAIL(400, "invalid_target", "a bad percent escape in the target");
                return false;
            }
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        }
        if (c < 0x20 || c == 0x7f) {
            FAIL(400, "invalid_target", "a NUL or control character in the target");
            return false;
        }
        if (k == dcap) {
            if (out) {
                FAIL(414, "uri_too_long", "the request path is too long");
                return false;
            }
            /* counting mode: check the complete characters so far, keep the tail */
            size_t ok = hy_utf8_validate(tmp, k);
            if (k - ok >= 4) {
                FAIL(400, "invalid_target", "invalid UTF-8 in the target");
                return false;
            }
            memmove(tmp, tmp + ok, k - ok);
            chk += ok;
            k -= ok;
        }
        dst[k++] = (char)c;
    }
    if (hy_utf8_validate(dst, k) != k) {
        FAIL(400, "invalid_target", "invalid UTF-8 in the target");
        return false;
    }
    if (got)
        *got = chk + k;
    return true;
}

bool hy_http_check_target(const char *t, size_t n, char *path, size_t cap,
                          struct hy_http_perr *e)
{
    if (n == 0 || t[0] != '/') {
        FAIL(400, "invalid_target", "the request target must be a path starting with '/'");
        return false;
    }
    const char *q = memchr(t, '?', n);
    size_t pn = q ? (size_t)(q - t) : n, got = 0;
    if (cap == 0 || !decode(t, pn, path, cap - 1, &got, e))
        return false;
    path[got] = '\0';
    return !q || decode(q + 1, n - pn - 1, NULL, 0, NULL, e);
}

enum { CK_SIZE, CK_EXT, CK_SIZE_LF, CK_DATA, CK_DATA_CR, CK_DATA_LF, CK_TRAILER, CK_TRAILER_LF,
       CK_DONE };

int hy_http_chunked_decode(struct hy_http_chunked *c, char *buf, size_t len, size_t *out,
                           size_t *used, uint64_t max, struct hy_http_perr *e)
{
    size_t o = 0, i = 0;
    int r = 0;
    while (i < len && c->state != CK_DONE) {
        unsigned char ch = (unsigned char)buf[i];
        switch (c->state) {
        case CK_SIZE: {
            int v = hexval(ch);
            if (v >= 0) {
                if (++c->digits > 15)
                    return FAIL(413, "request_too_large", "a chunk is too large");
                c->left = c->left * 16 + (uint64_t)v;
                i++;
            } else if (c->digits && (ch == ';' || ch == ' ' || ch == '\t')) {
                c->state = CK_EXT;
            } else if (c->digits && ch == '\r') {
                c->state = CK_SIZE_LF;
                i++;
            } else {
                return FAIL(400, "bad_request", "malformed chunk size");
            }
            if (c->left > max)
                return FAIL(413, "request_too_large", "the request body is too large");
            break;
        }
        case CK_EXT: /* chunk extensions are ignored, but must be clean text */
            if (ch == '\r')
                c->state = CK_SIZE_LF;
            else if (!is_vchar(ch))
                return FAIL(400, "bad_request", "a control character in a chunk extension");
            i++;
            break;
        case CK_SIZE_LF:
            if (ch != '\n')
                return FAIL(400, "bad_request", "malformed chunk size line");
            i++;
            c->digits = 0;
            c->state = c->left ? CK_DATA : CK_TRAILER;
            c->trailer = 0;
            break;
        case CK_DATA: {
            size_t k = len - i < c->left ? len - i : (size_t)c->left;
            memmove(buf + o, buf + i, k);
            o += k;
            i += k;
            c->left -= k;
            if (!c->left)
                c->state = CK_DATA_CR;
            break;
        }
        case CK_DATA_CR:
        case CK_DATA_LF:
            if (ch != (c->state == CK_DATA_CR ? '\r' : '\n'))
                return FAIL(400, "bad_request", "a chunk does not end with CRLF");
            i++;
            c->state = c->state == CK_DATA_CR ? CK_DATA_LF : CK_SIZE;
            break;
        case CK_TRAILER: /* trailer fields: skipped; an empty line ends the body */
            if (ch == '\r') {
                c->state = CK_TRAILER_LF;
            } else if (!is_vchar(ch)) {
                return FAIL(400, "bad_request", "a control character in a trailer");
            } else if (++c->trailer > 8192) {
                return FAIL(431, "headers_too_large", "a trailer line is too long");
            }
            i++;
            break;
        case CK_TRAILER_LF:
            if (ch != '\n')
                return FAIL(400, "bad_request", "malformed trailer line");
            i++;
            c->state = c->trailer ? CK_TRAILER : CK_DONE;
            c->trailer = 0;
            break;
        }
    }
    if (c->state == CK_DONE)
        r = 1;
    *out = o;
    *used = i;
    return r;
}
