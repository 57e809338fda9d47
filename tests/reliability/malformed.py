#!/usr/bin/env python3
"""malformed.py HYMT DATA_DIR [--group api|protocol|all] [--dump DIR]

The malformed-request corpus: >= 400 requests as raw bytes, each with the status it must
get and the shape of its body (our JSON error {"error": {"message", "type", "code"}} with
the expected code, or the route's success object), sent one per connection to `hymt serve`
on the tiny checkpoint (--api-key, --max-body 8192, --max-chars 500). Two groups:
  api       bodies the route handlers judge: truncated JSON at every length, wrong types
            and out-of-range values of every field, invalid UTF-8, non-objects, deep
            nesting, sizes over the limits, wrong routes, methods and keys;
  protocol  bytes the HTTP layer judges: request lines, targets (NUL, control characters,
            invalid UTF-8, tabs), versions, Content-Length and Transfer-Encoding forms,
            header sizes: each a JSON error too, never a silent close.
After the corpus the server must still answer /health, and it must not have crashed.
--dump writes each request to DIR/NNN-name.http with its expectation in DIR/index.json."""
import argparse
import json
import os
import sys

import rl

KEY = "sekret"
AUTH = "Authorization: Bearer " + KEY


def http(method, path, body=b"", headers=(AUTH,), version="HTTP/1.1", ctype=True, clen=True):
    h = "%s %s %s\r\nHost: 127.0.0.1\r\nConnection: close\r\n" % (method, path, version)
    for x in headers:
        h += x + "\r\n"
    if body and ctype:
        h += "Content-Type: application/json\r\n"
    if clen and (body or method == "POST"):
        h += "Content-Length: %d\r\n" % len(body)
    return h.encode("latin-1") + b"\r\n" + body


def js(v):
    return json.dumps(v).encode()


TR = {"text": "Hello world.", "target_lang": "de", "max_tokens": 4}
CHAT = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3}
CMPL = {"prompt": "abc", "max_tokens": 3}
ROUTES = [("/api/translate", TR), ("/v1/chat/completions", CHAT), ("/v1/completions", CMPL)]
BAD_VALUES = [None, True, "x", "", -1, 0, 1.5, 1e300, -1e300, 2 ** 63, [], {}, [1, 2], {"a": 1}]


def api_cases():
    c = []
    add = lambda name, req, st, code: c.append((name, req, st, code))
    # valid requests of each route: the success shape (so that the corpus can fail)
    for path, body in ROUTES:
        add("ok " + path, http("POST", path, js(body)), 200, None)
    # truncated JSON at every length, each route
    for path, body in ROUTES:
        b = js(dict(body, seed=7))
        for n in range(1, len(b)):
            add("truncated %s at %d" % (path, n), http("POST", path, b[:n]), 400, "invalid_json")
    # not an object
    for path, _ in ROUTES:
        for v in [b"[]", b"[1,2]", b"1", b"\"x\"", b"null", b"true", b"{}x", b"{} {}", b" ",
                  b"\xef\xbb\xbf{}", b"{\"a\":NaN}", b"{'a':1}", b"{\"a\":1,}"]:
            add("not an object %s %r" % (path, v), http("POST", path, v), 400,
                {"invalid_json", "missing_text", "invalid_parameter", "invalid_request"})
    # invalid UTF-8 inside strings
    for path, body in ROUTES:
        for bad in [b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                    b"\xc0\xaf", b"\x80"]:
            b = js(body).replace(b"\"max_tokens\"", b"\"x\": \"" + bad + b"\", \"max_tokens\"")
            add("invalid UTF-8 %r in %s" % (bad, path), http("POST", path, b), 400, "invalid_json")
    # deep nesting and huge numbers
    for path, _ in ROUTES:
        add("deep nesting " + path, http("POST", path, b"[" * 3000 + b"]" * 3000), 400,
            "invalid_json")
        add("huge integer " + path, http("POST", path, b"{\"max_tokens\": 1" + b"0" * 400 + b"}"),
            400, {"invalid_json", "invalid_parameter", "missing_text", "invalid_request"})
    # every field of every route with wrong types and out-of-range values
    fields = {
        "/api/translate": ["text", "target_lang", "source_lang", "temperature", "top_p",
                           "top_k", "repetition_penalty", "max_tokens", "seed", "stream"],
        "/v1/chat/completions": ["messages", "temperature", "top_p", "top_k", "max_tokens",
                                 "max_completion_tokens", "seed", "stop", "stream", "n",
                                 "repetition_penalty", "ignore_eos"],
        "/v1/completions": ["prompt", "temperature", "top_p", "top_k", "max_tokens", "seed",
                            "stop", "stream", "n", "ignore_eos"],
    }
    ok_values = {"text": {"x"}, "source_lang": {""}, "repetition_penalty": {1.5}, "stream": {True}, "ignore_eos": {True},
                 "stop": {"x", ""}, "seed": {0}, "top_k": {-1, 0}, "top_p": {0, 1},
                 "temperature": {0, 1.5}, "stream_options": {}, "max_tokens": set(),
                 "max_completion_tokens": set(), "prompt": {"x", ""}}
    for path, base in ROUTES:
        for f in fields[path]:
            for v in BAD_VALUES:
                body = dict(base)
                body[f] = v
                if v is None or (isinstance(v, (int, float, str)) and not isinstance(v, bool) and
                                 v in ok_values.get(f, set())):
                    continue  # absent (null) or a valid value: not an error case
                if f in ("stream", "ignore_eos") and isinstance(v, bool):
                    continue
                if f == "stop" and v == []:
                    continue
                if f == "prompt" and v == [1, 2]:
                    continue  # token ids are a valid OpenAI prompt
                if f == "seed" and isinstance(v, int) and not isinstance(v, bool) and v >= -1:
                    continue
                add("%s %s=%s" % (path, f, json.dumps(v)[:20]), http("POST", path, js(body)),
                    400, "*")
    # missing required fields
    add("translate without text", http("POST", "/api/translate", js({"tgt": "de"})), 400,
        "missing_text")
    add("translate without target", http("POST", "/api/translate", js({"text": "a"})), 400,
        "missing_target_lang")
    add("translate blank text", http("POST", "/api/translate", js({"text": " \n\t", "tgt": "de"})),
        400, "empty_text")
    add("translate unknown language", http("POST", "/api/translate",
                                           js({"text": "a", "tgt": "klingon"})), 400,
        "unknown_language")
    add("translate too long", http("POST", "/api/translate", js({"text": "a" * 600, "tgt": "de"})),
        413, "text_too_long")
    add("chat without messages", http("POST", "/v1/chat/completions", js({})), 400, "*")
    add("chat bad role", http("POST", "/v1/chat/completions",
                              js({"messages": [{"role": "wizard", "content": "a"}]})), 400, "*")
    add("chat no content", http("POST", "/v1/chat/completions",
                                js({"messages": [{"role": "user"}]})), 400, "*")
    add("chat content parts bad", http("POST", "/v1/chat/completions",
                                       js({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})),
        400, "*")
    add("completions without prompt", http("POST", "/v1/completions", js({})), 400, "*")
    add("context exceeded", http("POST", "/v1/completions", js({"prompt": "a", "max_tokens": 10 ** 6})),
        400, {"context_length_exceeded", "invalid_parameter"})
    add("stop too many", http("POST", "/v1/completions", js({"prompt": "a", "stop": ["a"] * 5})),
        400, "invalid_parameter")
    add("stop too long", http("POST", "/v1/completions", js({"prompt": "a", "stop": "a" * 300})),
        400, "invalid_parameter")
    # sizes
    big = js({"text": "a" * 9000, "tgt": "de"})
    for path, _ in ROUTES:
        add("body over --max-body " + path, http("POST", path, big), 413, "request_too_large")
    # routes, methods, keys
    for path, body in ROUTES:
        add("no key " + path, http("POST", path, js(body), headers=()), 401, "invalid_api_key")
        add("wrong key " + path, http("POST", path, js(body), headers=("Authorization: Bearer x",)),
            401, "invalid_api_key")
        add("basic auth " + path, http("POST", path, js(body), headers=("Authorization: Basic eA==",)),
            401, "invalid_api_key")
        for m in ["GET", "PUT", "DELETE", "PATCH"]:
            add("%s %s" % (m, path), http(m, path), 405, "method_not_allowed")
    for p in ["/nope", "/api", "/api/translate/x", "/v1", "/v1/models/x", "/v2/completions",
              "/healthz", "/metrics/x", "/%2e%2e/etc/passwd", "/api//translate"]:
        add("unknown path " + p, http("GET", p), 404, "not_found")
    return c


def protocol_cases():
    c = []
    add = lambda name, req, st, code: c.append((name, req, st, code))
    ok = js(CMPL)
    line = lambda s: s.encode("latin-1")
    # Content-Length forms
    for v in ["-1", "abc", "+3", "0x10", "1.5", " ", "18446744073709551616", "99999999999999999999",
              "3, 3", "1e3"]:
        add("Content-Length " + v, line("POST /v1/completions HTTP/1.1\r\nHost: x\r\n%s\r\n"
                                        "Content-Length: %s\r\nConnection: close\r\n\r\n" % (AUTH, v))
            + ok, 400, "*")
    add("two different Content-Length", line(
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\n%s\r\nContent-Length: %d\r\n"
        "Content-Length: %d\r\nConnection: close\r\n\r\n" % (AUTH, len(ok), len(ok) + 1)) + ok, 400, "*")
    add("Content-Length and chunked", line(
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\n%s\r\nContent-Length: %d\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" % (AUTH, len(ok))) + ok, 400, "*")
    for te in ["gzip", "chunked, gzip", "gzip, chunked", "identity", "x", "chunked, chunked"]:
        add("Transfer-Encoding " + te, line(
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\n%s\r\nTransfer-Encoding: %s\r\n"
            "Connection: close\r\n\r\n" % (AUTH, te)) + b"0\r\n\r\n", 400, "*")
    for chunk in [b"zz\r\nabc\r\n0\r\n\r\n", b"-1\r\nabc\r\n0\r\n\r\n",
                  b"3\r\nabcd\r\n0\r\n\r\n", b"ffffffffffffffffff\r\n"]:
        add("bad chunk %r" % chunk[:8], line(
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\n%s\r\nTransfer-Encoding: chunked\r\n"
            "Connection: close\r\n\r\n" % AUTH) + chunk, {400, 413}, "*")
    # targets
    for t in ["/%ff", "/%c3%28", "/health%00xyz", "/%00", "/x%0a14:00:00.000 info serve: FAKE",
              "/%1b[31mred", "/" + "%e4%bd" * 20, "/%", "/%g0", "/%2", "/a%7fb"]:
        add("target " + t[:24], line("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % t),
            400, "*")
    add("128-byte path cut in a character", b"GET /" + "é".encode() * 63 + b"\xc3 HTTP/1.1\r\n"
        b"Host: x\r\nConnection: close\r\n\r\n", 400, "*")
    add("raw NUL in target", b"GET /health\x00x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        400, "*")
    add("control char in target", b"GET /he\x01alth HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        400, "*")
    add("raw invalid UTF-8 in target", b"GET /\xff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        400, "*")
    # request lines
    for rl_ in [b"GET\t/health\tHTTP/1.1", b"GET  /health HTTP/1.1", b"G\xe9T /health HTTP/1.1",
                b"GET /health", b"GET /health HTTP/1.1 x", b"/health HTTP/1.1", b"GET health HTTP/1.1",
                b"GET /health HTTP/1.x", b"GET /health HTTP/11",
                b"GET /health http/1.1", b"\x00GET /health HTTP/1.1"]:
        add("request line %r" % rl_[:24], rl_ + b"\r\nHost: x\r\nConnection: close\r\n\r\n", 400, "*")
    add("lower-case method", b"get /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        {400, 405, 501}, "*")
    for v in ["HTTP/2.0", "HTTP/3.0", "HTTP/1.2", "HTTP/9.9"]:
        add("version " + v, line("GET /health %s\r\nHost: x\r\nConnection: close\r\n\r\n" % v), 505, "*")
    add("HTTP/1.1 without Host", b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n", 400, "*")
    # headers
    for h in [b"X-A: b\x00c", b"X-A: b\x01c", b"X-A b", b": b", b"X A: b", b" X-A: b",
              b"X-A: b\r\n c"]:
        add("header %r" % h[:12], b"GET /health HTTP/1.1\r\nHost: x\r\n" + h +
            b"\r\nConnection: close\r\n\r\n", 400, "*")
    add("header block too large", b"GET /health HTTP/1.1\r\nHost: x\r\n" +
        b"".join(b"X-%d: %s\r\n" % (i, b"a" * 1000) for i in range(80)) +
        b"Connection: close\r\n\r\n", 431, "*")
    add("target too long", b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        414, "*")
    add("Expect: 100-continue unknown", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" +
        AUTH.encode() + b"\r\nExpect: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", 417, "*")
    return c


def check_case(ch, port, name, req, want_st, want_code):
    st, hdrs, body = rl.raw(port, req, timeout=10)
    if not ch.check(st is not None, "%s: no response (%s)" % (name, body.decode() or "closed")):
        return
    want = want_st if isinstance(want_st, set) else {want_st}
    if not ch.check(st in want, "%s: HTTP %s, expected %s: %r" % (name, st, sorted(want), body[:200])):
        return
    if want_st == 200:
        try:
            j = json.loads(body)
            ok = isinstance(j, dict) and ("translation" in j or "choices" in j)
        except ValueError:
            ok = False
        ch.check(ok, "%s: not the route's success object: %r" % (name, body[:200]))
        return
    ch.check("application/json" in hdrs.get("content-type", ""),
             "%s: Content-Type %r, not JSON" % (name, hdrs.get("content-type")))
    try:
        e = json.loads(body)["error"]
        ok = (isinstance(e, dict) and all(isinstance(e.get(k), str) and e[k] for k in
                                          ("message", "type", "code")))
    except (ValueError, KeyError, TypeError):
        ch.check(False, "%s: body is not our JSON error: %r" % (name, body[:200]))
        return
    if not ch.check(ok, "%s: error object without message/type/code: %r" % (name, body[:200])):
        return
    if want_code not in (None, "*"):
        codes = want_code if isinstance(want_code, set) else {want_code}
        ch.check(e["code"] in codes, "%s: code %r, expected %s" % (name, e["code"], sorted(codes)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hymt")
    ap.add_argument("data")
    ap.add_argument("--group", default="all", choices=["api", "protocol", "all"])
    ap.add_argument("--dump")
    a = ap.parse_args()
    cases = []
    if a.group in ("api", "all"):
        cases += api_cases()
    if a.group in ("protocol", "all"):
        cases += protocol_cases()
    if a.dump:
        os.makedirs(a.dump, exist_ok=True)
        index = []
        for i, (name, req, st, code) in enumerate(cases):
            fn = "%03d.http" % i
            with open(os.path.join(a.dump, fn), "wb") as f:
                f.write(req)
            index.append({"file": fn, "name": name, "status": st,
                          "code": sorted(code) if isinstance(code, set) else code})
        with open(os.path.join(a.dump, "index.json"), "w") as f:
            json.dump(index, f, indent=1)
    srv = rl.Server(a.hymt, rl.model_dir(a.data), "--api-key", KEY, "--max-body", "8192",
                    "--max-chars", "500", "--threads", "1", "--timeout", "20")
    ch = rl.Checks("malformed requests (%s, %d)" % (a.group, len(cases)))
    try:
        for name, req, st, code in cases:
            check_case(ch, srv.port, name, req, st, code)
        st, _, _ = rl.request(srv.port, "GET", "/health")
        ch.check(st == 200, "/health after the corpus: %s" % st)
        ch.check(srv.proc.poll() is None, "the server exited: %s" % srv.proc.returncode)
        rc = srv.stop()  # SIGTERM: a clean exit (under ASan also: no leak)
        ch.check(rc == 0, "exit %s after SIGTERM: %s" % (rc, srv.log_text()[-2000:]))
    finally:
        srv.close()
    return ch.done()


if __name__ == "__main__":
    sys.exit(main())
