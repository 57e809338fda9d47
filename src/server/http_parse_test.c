/* http_parse_test.c: the strict request parser: good requests (every prefix is
 * "incomplete", the whole parses to the same fields), each refusal with its status, the
 * target check, the chunked decoder fed byte by byte, and no read past the given bytes
 * (each input placed just before a PROT_NONE page). */
#include "server/http_parse.h"
#include "test.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char *guard_base;
static size_t page;

/* Copies s[0..n) to end right at a PROT_NONE page: a read past n faults. */
static const char *guarded(const char *s, size_t n)
{
    char *p = guard_base + page - n;
    memcpy(p, s, n);
    return p;
}

static int parse(const char *s, size_t n, struct hy_http_head *h, struct hy_http_perr *e)
{
    return hy_http_parse_head(guarded(s, n), n, 16384, h, e);
}

static void good(void)
{
    const char *req = "\r\nPOST /v1/completions?x=%C3%A9 HTTP/1.1\r\nHost: a\r\n"
                      "Content-Length: 12\r\nConnection: keep-alive, Close\r\n"
                      "X-Tab:\tv a l \t\r\nExpect: 100-continue\r\n\r\nBODY";
    size_t n = strlen(req), head = n - 4;
    struct hy_http_head h;
    struct hy_http_perr e;
    for (size_t k = 0; k < head; k++)
        CHECKF(parse(req, k, &h, &e) == -2, "prefix %zu", k);
    CHECK(parse(req, n, &h, &e) == (int)head);
    CHECK(h.method_len == 4 && !memcmp(h.method, "POST", 4));
    CHECK(h.target_len == 24 && !memcmp(h.target, "/v1/completions?x=%C3%A9", 24));
    CHECK(h.minor == 1 && h.content_length == 12 && !h.chunked && !h.keep_alive);
    CHECK(h.expect_continue && h.n_headers == 5);
    const struct hy_http_header *x = hy_http_find(&h, "x-TAB");
    CHECK(x && x->value_len == 5 && !memcmp(x->value, "v a l", 5));
    CHECK(parse("GET / HTTP/1.0\r\n\r\n", 18, &h, &e) == 18 && !h.keep_alive &&
          h.content_length == -1);
    const char *ka = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    CHECK(parse(ka, strlen(ka), &h, &e) == (int)strlen(ka) && h.keep_alive);
    const char *ch = "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n";
    CHECK(parse(ch, strlen(ch), &h, &e) == (int)strlen(ch) && h.chunked && h.keep_alive);
}

static void bad(const char *req, int status)
{
    struct hy_http_head h;
    struct hy_http_perr e = {0};
    int r = parse(req, strlen(req), &h, &e);
    CHECKF(r == -1 && e.status == status && e.code && e.msg, "'%s': %d, status %d", req, r,
           e.status);
}

static void refusals(void)
{
    bad("G\xe9T / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    bad("GET\t/health\tHTTP/1.1\r\nHost: a\r\n\r\n", 400);
    bad("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    bad("GET /\xff HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    bad("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505);
    bad("GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505);
    bad("GET / HTTP/x.1\r\nHost: a\r\n\r\n", 400);
    bad("GET / HTTP/1.1\nHost: a\r\n\r\n", 400);
    bad("GET / HTTP/1.1\r\n\r\n", 400); /* no Host */
    bad("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
    bad("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n", 400);
    bad("GET / HTTP/1.1\r\nHost: a\r\nX: a\nY: b\r\n\r\n", 400);
    bad("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400);
    bad("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        400);
    bad("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
    bad("POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", 417);
    char big[20000];
    memcpy(big, "GET /", 5);
    memset(big + 5, 'a', sizeof big - 5);
    struct hy_http_head h;
    struct hy_http_perr e;
    CHECK(parse(big, sizeof big, &h, &e) == -1 && e.status == 414);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    CHECK(parse(big, sizeof big, &h, &e) == -1 && e.status == 431);
    char many[4096] = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < HY_HTTP_MAX_HEADERS + 1; i++)
        strcat(many, "A: b\r\n");
    strcat(many, "\r\n");
    CHECK(parse(many, strlen(many), &h, &e) == -1 && e.status == 431);
}

static void target(const char *t, const char *want, int status)
{
    char path[64];
    struct hy_http_perr e = {0};
    bool ok = hy_http_check_target(guarded(t, strlen(t)), strlen(t), path, sizeof path, &e);
    if (want)
        CHECKF(ok && !strcmp(path, want), "'%s' -> '%s'", t, ok ? path : e.msg);
    else
        CHECKF(!ok && e.status == status, "'%s' accepted or status %d", t, e.status);
}

static void targets(void)
{
    target("/health", "/health", 0);
    target("/a%20b?x=%C3%A9&y", "/a b", 0);
    target("/%E4%BD%A0", "/\xe4\xbd\xa0", 0);
    target("/health%00xyz", NULL, 400);
    target("/%00", NULL, 400);
    target("/%ff", NULL, 400);
    target("/%c3%28", NULL, 400);
    target("/%e4%bd", NULL, 400); /* cut inside a character */
    target("/x%0a14:00:00.000 info serve: FAKE", NULL, 400);
    target("/x%1b[31m", NULL, 400);
    target("/x%7f", NULL, 400);
    target("/%", NULL, 400);
    target("/%4", NULL, 400);
    target("/%zz", NULL, 400);
    target("/?q=%ff", NULL, 400);
    target("/?q=%00", NULL, 400);
    target("*", NULL, 400);
    target("http://a/b", NULL, 400);
    char longp[200] = "/";
    memset(longp + 1, 'a', 150);
    target(longp, NULL, 414);
    /* a long query with a multi-byte character across the decoder's internal window */
    static char q[2048];
    strcpy(q, "/?");
    for (int i = 0; i < 300; i++)
        strcat(q, "%C3%A9");
    target(q, "/", 0);
    q[strlen(q) - 3] = '\0'; /* ends inside a character */
    target(q, NULL, 400);
}

/* Feeds body in pieces of `step` bytes (the decoder keeps its state across calls). */
static int chunked(const char *body, size_t step, char *out, size_t *n_out, size_t *rest,
                   struct hy_http_perr *e)
{
    struct hy_http_chunked c = {0};
    size_t n = strlen(body), o = 0;
    for (size_t a = 0; a < n;) {
        size_t k = n - a < step ? n - a : step, got = 0, used = 0;
        char piece[256];
        memcpy(piece, guarded(body + a, k), k);
        int r = hy_http_chunked_decode(&c, piece, k, &got, &used, 1000, e);
        memcpy(out + o, piece, got);
        o += got;
        a += used;
        if (r != 0) {
            *n_out = o;
            *rest = n - a;
            return r;
        }
        if (used != k)
            return -3;
    }
    *n_out = o;
    return 0;
}

static void chunks(void)
{
    const char *b = "5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nT: x\r\n\r\nNEXT";
    for (size_t step = 1; step <= 64; step++) {
        char out[64];
        size_t n = 0, rest = 0;
        struct hy_http_perr e;
        CHECKF(chunked(b, step, out, &n, &rest, &e) == 1 && n == 16 &&
                   !memcmp(out, "hello 0123456789", 16) && rest == 4,
               "step %zu", step);
    }
    const char *badc[] = {"x\r\n", "5\r\nhelloXX", "5\nhello\r\n", "\r\n", "1\r\na\r\n0\r\nX\x01\r\n",
                          "1 \x01\r\n"};
    for (size_t i = 0; i < sizeof badc / sizeof badc[0]; i++) {
        char out[64];
        size_t n, rest;
        struct hy_http_perr e = {0};
        CHECKF(chunked(badc[i], 3, out, &n, &rest, &e) == -1 && e.status == 400, "bad %zu", i);
    }
    char out[64];
    size_t n, rest;
    struct hy_http_perr e = {0};
    CHECK(chunked("3e9\r\n", 5, out, &n, &rest, &e) == -1 && e.status == 413);
    CHECK(chunked("10000000000000000\r\n", 5, out, &n, &rest, &e) == -1 && e.status == 413);
}

int main(void)
{
    page = (size_t)sysconf(_SC_PAGESIZE);
    size_t span = 8 * page; /* inputs up to 7 pages, then the guard */
    char *m = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    CHECK(mprotect(m + span, page, PROT_NONE) == 0);
    guard_base = m + span - page; /* guarded() ends its copies at m + span */
    good();
    refusals();
    targets();
    chunks();
    munmap(m, span + page);
    return test_result();
}
