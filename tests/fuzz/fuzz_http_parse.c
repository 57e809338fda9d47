/* fuzz_http_parse.c: the HTTP/1.1 request parser (server/http_parse.h) on any bytes, each
 * input in a buffer of exactly its size (ASan sees a read past the end). Byte 0 chooses
 * the head limit (64 bytes .. 16 KiB) and the split of the body into pieces; the rest is
 * the request. Contract checks: parse_head returns -2, -1 with a documented status (400,
 * 414, 417, 431, 505) and a code and message, or a head length within the input, whose
 * method, target and headers point inside it, with consistent framing (never both
 * Content-Length and chunked); a prefix of a parsed head is never a complete head; the
 * target check (which refuses a target not starting with '/') gives a NUL-terminated path
 * from '/' without NULs, control characters or invalid UTF-8, or 400/414;
 * the chunked decoder, fed the rest in pieces, never writes or reads past its piece, keeps
 * *out and *used within it and refuses with 400 or 413 only. */
#include "core/utf8.h"
#include "fuzz/fuzz_util.h"
#include "server/http_parse.h"

static bool in(const void *p, size_t n, const char *b, size_t len)
{
    return (const char *)p >= b && (const char *)p + n <= b + len;
}

static void check_perr(const struct hy_http_perr *e, const char *what)
{
    FZ_ASSERT(e->code && e->msg && (e->status == 400 || e->status == 413 || e->status == 414 ||
                                    e->status == 417 || e->status == 431 || e->status == 505),
              "%s: status %d", what, e->status);
}

static void chunked(const char *data, size_t n, size_t piece)
{
    struct hy_http_chunked c = {0};
    size_t at = 0;
    while (at < n) {
        size_t len = n - at < piece ? n - at : piece;
        char *buf = malloc(len);
        memcpy(buf, data + at, len);
        size_t out = 0, used = 0;
        struct hy_http_perr e = {0};
        int r = hy_http_chunked_decode(&c, buf, len, &out, &used, 1 << 20, &e);
        free(buf);
        if (r < 0) {
            check_perr(&e, "chunked");
            FZ_ASSERT(e.status == 400 || e.status == 413, "chunked status %d", e.status);
            return;
        }
        FZ_ASSERT(out <= len && used <= len && (r == 1 || used == len),
                  "chunked: out %zu used %zu of %zu (r %d)", out, used, len, r);
        if (r == 1)
            return;
        at += len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t max = (size_t)64 << (data[0] & 7), piece = (size_t)1 + (data[0] >> 3);
    size_t n = size - 1;
    char *buf = malloc(n ? n : 1);
    memcpy(buf, data + 1, n);
    struct hy_http_head h;
    struct hy_http_perr e = {0};
    int r = hy_http_parse_head(buf, n, max, &h, &e);
    if (r == -1)
        check_perr(&e, "head");
    FZ_ASSERT(r == -1 || r == -2 || (r > 0 && (size_t)r <= n), "parse_head returned %d of %zu",
              r, n);
    if (r > 0) {
        FZ_ASSERT(in(h.method, h.method_len, buf, (size_t)r) &&
                      in(h.target, h.target_len, buf, (size_t)r) && h.target_len >= 1 &&
                      (h.minor == 0 || h.minor == 1) &&
                      h.n_headers <= HY_HTTP_MAX_HEADERS && h.content_length >= -1 &&
                      !(h.chunked && h.content_length >= 0),
                  "a parsed head out of its contract");
        for (size_t i = 0; i < h.n_headers; i++)
            FZ_ASSERT(in(h.headers[i].name, h.headers[i].name_len, buf, (size_t)r) &&
                          in(h.headers[i].value, h.headers[i].value_len, buf, (size_t)r),
                      "header %zu outside the head", i);
        struct hy_http_head h2;
        struct hy_http_perr e2 = {0};
        char *pre = malloc((size_t)r - 1 ? (size_t)r - 1 : 1);
        memcpy(pre, buf, (size_t)r - 1);
        int r2 = hy_http_parse_head(pre, (size_t)r - 1, max, &h2, &e2);
        free(pre);
        FZ_ASSERT(r2 < 0, "a prefix of %d bytes of a %d-byte head parsed as complete", r - 1, r);
        char path[HY_HTTP_MAX_TARGET + 1];
        if (hy_http_check_target(h.target, h.target_len, path, sizeof path, &e)) {
            size_t pl = strlen(path);
            FZ_ASSERT(h.target[0] == '/' && path[0] == '/', "a checked target not from '/'");
            for (size_t i = 0; i < pl; i++)
                FZ_ASSERT((unsigned char)path[i] >= 0x20 && path[i] != 0x7f,
                          "control character in a checked path");
            FZ_ASSERT(hy_utf8_validate(path, pl) == pl, "invalid UTF-8 in a checked path");
        } else {
            check_perr(&e, "target");
        }
        if (h.chunked)
            chunked(buf + r, n - (size_t)r, piece);
    } else {
        chunked(buf, n, piece); /* the decoder alone on the same bytes */
    }
    free(buf);
    return 0;
}
