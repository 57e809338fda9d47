"""http_util.py: shared pieces of the tests/reliability/http_*_test.py regression tests:
start `hymt serve` on a free port with its log in a file, raw requests over sockets
(bytes in, bytes out, optionally from another loopback source address), and a tally of
checks. Python 3 standard library only."""
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time


class Checks:
    def __init__(self, name):
        self.name, self.n, self.failed = name, 0, 0

    def check(self, cond, what):
        self.n += 1
        if not cond:
            self.failed += 1
            print("FAIL: %s" % what, flush=True)
        return cond

    def done(self):
        print("%s: %d checks, %d failed" % (self.name, self.n, self.failed), flush=True)
        sys.exit(1 if self.failed else 0)


class Server:
    """hymt serve on the tiny checkpoint; .port, .log() (the log so far), .stop()."""

    def __init__(self, hymt, model, *args):
        self.logf = tempfile.NamedTemporaryFile("w+", prefix="hymt-http-", suffix=".log")
        self.proc = subprocess.Popen([hymt, "serve", "-m", model, "--port", "0", "--threads", "1"]
                                     + list(args), stdout=subprocess.DEVNULL, stderr=self.logf)
        t0 = time.time()
        self.port = None
        while time.time() - t0 < 20:
            for line in self.log().splitlines():
                if "serve: ready:" in line:
                    self.port = int(line.rstrip("/").rsplit(":", 1)[1])
            if self.port or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not self.port:
            print(self.log())
            raise SystemExit("FAIL: the server did not start (%s)" % " ".join(args))

    def log(self):
        with open(self.logf.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, wait=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def connect(port, src="127.0.0.1", timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def read_all(s, timeout=3.0):
    """Reads until the peer closes or timeout passes; returns (bytes, closed)."""
    data, end = b"", time.time() + timeout
    while True:
        left = end - time.time()
        if left <= 0:
            return data, False
        s.settimeout(left)
        try:
            k = s.recv(65536)
        except socket.timeout:
            return data, False
        except ConnectionResetError:
            return data, True
        if not k:
            return data, True
        data += k


def raw(port, req, timeout=3.0, src="127.0.0.1"):
    """Sends the bytes req on a new connection, reads until close (or timeout).
    Returns (response bytes, seconds, closed)."""
    t0 = time.time()
    s = connect(port, src)
    try:
        s.sendall(req)
        data, closed = read_all(s, timeout)
    finally:
        s.close()
    return data, time.time() - t0, closed


def parse_response(data):
    """(status, headers dict lower-case, body bytes) of the first response in data."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split(b" ")[1])
    except (IndexError, ValueError):
        return None, {}, body
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        hdrs[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    if "content-length" in hdrs:
        body = body[:int(hdrs["content-length"])]
    return status, hdrs, body


def json_error(data):
    """The error code of a JSON error response, or None."""
    status, hdrs, body = parse_response(data)
    if not hdrs.get("content-type", "").startswith("application/json"):
        return None
    try:
        e = json.loads(body)["error"]
        return e["code"] if {"message", "type", "code"} <= set(e) else None
    except (ValueError, KeyError, TypeError):
        return None


def http(port, method, path, body=None, headers=None, timeout=10.0, src="127.0.0.1"):
    """One request with Connection: close; returns (status, headers, body, seconds)."""
    h = {"Host": "x", "Connection": "close"}
    if body is not None:
        body = body if isinstance(body, bytes) else json.dumps(body).encode()
        h["Content-Length"] = str(len(body))
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    req = ("%s %s HTTP/1.1\r\n" % (method, path)).encode()
    req += b"".join(("%s: %s\r\n" % kv).encode() for kv in h.items()) + b"\r\n" + (body or b"")
    data, dt, _ = raw(port, req, timeout, src)
    st, hd, bd = parse_response(data)
    return st, hd, bd, dt


def argv():
    if len(sys.argv) < 3:
        raise SystemExit("usage: %s HYMT MODEL_DIR" % sys.argv[0])
    os.environ["NO_PROXY"] = "*"
    return sys.argv[1], sys.argv[2]
