"""http_malformed_test.py HYMT MODEL: issue 12's malformed-request findings, each a raw
request that must get one JSON error (never a silent close, never a second header block,
within 2 s), plus what a strict parser must still accept (keep-alive, pipelining, HEAD,
chunked bodies, Expect: 100-continue) and a log that no request can forge a line into."""
import json
import re

from http_util import Checks, Server, argv, json_error, parse_response, raw, connect, read_all

hymt, model = argv()
C = Checks("http_malformed_test")
S = Server(hymt, model, "--max-body", "4096")
P = S.port
H = b"Host: x\r\n"


def expect(name, req, status, code=None):
    data, dt, closed = raw(P, req, timeout=2.5)
    st, hdrs, body = parse_response(data)
    C.check(st == status, "%s: status %s, expected %d (%r)" % (name, st, status, data[:200]))
    got = json_error(data)
    C.check(got is not None and (code is None or got == code),
            "%s: not a JSON error with code %s: %r" % (name, code, data[:300]))
    n = len(re.findall(rb"(?:^|\r\n)HTTP/1\.\d \d{3} ", data))
    C.check(n == 1, "%s: %d status lines" % (name, n))
    C.check(dt < 2.0, "%s: answered after %.1f s" % (name, dt))


# no response at all before: invalid UTF-8 in the path or the method, a path cut inside a
# character, Transfer-Encoding: gzip, tabs as separators
expect("%ff", b"GET /%ff HTTP/1.1\r\n" + H + b"\r\n", 400, "invalid_target")
expect("%c3%28", b"GET /%c3%28 HTTP/1.1\r\n" + H + b"\r\n", 400, "invalid_target")
cut = b"/" + b"a" * 125 + b"%e4%bd"  # 128 decoded bytes, the last character cut
expect("cut path", b"GET " + cut + b" HTTP/1.1\r\n" + H + b"\r\n", 400, "invalid_target")
expect("method G\\xe9T", b"G\xe9T /health HTTP/1.1\r\n" + H + b"\r\n", 400)
expect("TE gzip", b"POST /v1/completions HTTP/1.1\r\n" + H +
       b"Transfer-Encoding: gzip\r\n\r\nxxxx", 400, "unsupported_transfer_encoding")
expect("tabs", b"GET\t/health\tHTTP/1.1\r\n" + H + b"\r\n", 400)
# a NUL in the path cut the route (200, the web page)
expect("/health%00xyz", b"GET /health%00xyz HTTP/1.1\r\n" + H + b"\r\n", 400, "invalid_target")
expect("/%00", b"GET /%00 HTTP/1.1\r\n" + H + b"\r\n", 400, "invalid_target")
# libmicrohttpd's Content-Length bugs (a doubled header block) and smuggling
for cl in (b"-1", b"abc", b"+5", b"5 5", b"0x10"):
    expect("Content-Length: " + cl.decode(), b"POST /v1/completions HTTP/1.1\r\n" + H +
           b"Content-Length: " + cl + b"\r\n\r\nhello", 400)
expect("two Content-Length", b"POST /v1/completions HTTP/1.1\r\n" + H +
       b"Content-Length: 5\r\nContent-Length: 7\r\n\r\nhello12", 400)
expect("CL + TE", b"POST /v1/completions HTTP/1.1\r\n" + H +
       b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)
# protocol-level errors as JSON, not HTML
expect("414", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n" + H + b"\r\n", 414, "uri_too_long")
expect("431", b"GET / HTTP/1.1\r\n" + H + b"X: " + b"a" * 17000 + b"\r\n\r\n", 431)
expect("505", b"GET / HTTP/2.0\r\n" + H + b"\r\n", 505)
expect("400 garbage", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", 400)
expect("400 no Host", b"GET /health HTTP/1.1\r\n\r\n", 400)
expect("413", b"POST /api/translate HTTP/1.1\r\n" + H + b"Content-Length: 5000\r\n\r\n", 413,
       "request_too_large")
expect("413 chunked", b"POST /api/translate HTTP/1.1\r\n" + H +
       b"Transfer-Encoding: chunked\r\n\r\n" + b"800\r\n" + b"a" * 2048 + b"\r\n" +
       b"800\r\n" + b"a" * 2048 + b"\r\n" + b"800\r\n" + b"a" * 2048 + b"\r\n", 413)
expect("bad chunk", b"POST /api/translate HTTP/1.1\r\n" + H +
       b"Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400)
expect("417", b"POST /api/translate HTTP/1.1\r\n" + H + b"Content-Length: 2\r\n"
       b"Expect: 200-ok\r\n\r\n{}", 417)
CL = b"Connection: close\r\n"
expect("405", b"DELETE /health HTTP/1.1\r\n" + H + CL + b"\r\n", 405, "method_not_allowed")
expect("404", b"GET /nope HTTP/1.1\r\n" + H + CL + b"\r\n", 404, "not_found")

# log injection: a forged line, escape sequences
raw(P, b"GET /x%0a14:00:00.000 info serve: FAKE HTTP/1.1\r\n" + H + b"\r\n")
raw(P, b"GET /x%1b[31mRED HTTP/1.1\r\n" + H + b"\r\n")
raw(P, b"GET /x%E2%80%A8y\\z HTTP/1.1\r\n" + H + b"\r\n")  # U+2028 and a backslash

# what a strict parser must still take: keep-alive + pipelining, HEAD, chunked, Expect
s = connect(P)
s.sendall(b"GET /health HTTP/1.1\r\n" + H + b"\r\nGET /ready HTTP/1.1\r\n" + H +
          b"\r\n\r\nGET /health HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
data, closed = read_all(s, 3.0)
s.close()
C.check(data.count(b"HTTP/1.1 200") == 3 and closed and data.index(b'"status":"ok"') <
        data.index(b'"status":"ready"'), "pipelining: %r" % data[:400])
data, _, _ = raw(P, b"HEAD /health HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
st, hdrs, body = parse_response(data)
C.check(st == 200 and hdrs.get("content-length") == "15" and body == b"",
        "HEAD: %r" % data)
body = json.dumps({"prompt": "abc", "max_tokens": 3, "ignore_eos": True}).encode()
chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7])
                   for i in range(0, len(body), 7)) + b"0\r\nX-T: 1\r\n\r\n"
data, _, _ = raw(P, b"POST /v1/completions HTTP/1.1\r\n" + H + b"Connection: close\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n" + chunked, timeout=10)
st, _, b = parse_response(data)
C.check(st == 200 and json.loads(b)["usage"]["completion_tokens"] == 3, "chunked: %r" % data)
s = connect(P)
s.sendall(b"POST /v1/completions HTTP/1.1\r\n" + H + b"Connection: close\r\n"
          b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
first, _ = read_all(s, 0.5)
s.sendall(body)
rest, _ = read_all(s, 10)
s.close()
C.check(first.startswith(b"HTTP/1.1 100 Continue\r\n\r\n") and b"HTTP/1.1 200" in rest,
        "Expect: 100-continue: %r / %r" % (first, rest[:100]))

C.check(S.stop() == 0, "the server did not exit 0")
log = S.log()
C.check(not any(ln.startswith("14:00:00.000") for ln in log.splitlines()),
        "log injection: a forged line in the log")
C.check("\x1b" not in log and "\u2028" not in log, "log injection: raw escape sequences")
C.check(all(ln[:2].isdigit() for ln in log.splitlines() if ln),
        "every log line starts with its time: %r" %
        [ln for ln in log.splitlines() if ln and not ln[:2].isdigit()][:3])
C.done()
