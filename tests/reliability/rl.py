"""rl.py: helpers shared by the reliability tests: start `hymt serve` on the tiny checkpoint,
send raw HTTP requests and read the responses, read /metrics and the process's RSS."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

os.environ["NO_PROXY"] = os.environ["no_proxy"] = "*"


class Server:
    """`hymt serve -m MODEL --port 0 ARGS...`; .port once ready; .stop() sends SIGTERM."""

    def __init__(self, hymt, model, *args, ready_timeout=120):
        self.log = tempfile.NamedTemporaryFile(prefix="hymt-rel-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([hymt, "serve", "-m", model, "--port", "0", *args],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        t0 = time.time()
        self.port = None
        while time.time() - t0 < ready_timeout:
            m = re.search(r"serve: ready: .*:(\d+)/\s*$", self.log_text(), re.M)
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        print(self.log_text()[-3000:])
        raise RuntimeError("the server did not start")

    def log_text(self):
        with open(self.log.name, "r", errors="replace") as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.log.name)

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def metrics(self):
        st, _, body = request(self.port, "GET", "/metrics")
        out = {}
        for line in body.decode("utf-8", "replace").splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                try:
                    out[k] = float(v)
                except ValueError:
                    pass
        return out


def connect(port, timeout=30):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(s, deadline=None):
    """One response from socket s: (status, headers dict lowercased, body bytes). Handles
    Content-Length, chunked and read-to-close bodies. status None: closed with no response."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            return None, {}, buf
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
    status = int(m.group(1)) if m else -1
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs.setdefault(k.strip().lower(), v.strip())
    body = rest
    if "chunked" in hdrs.get("transfer-encoding", "").lower():
        out = b""
        while True:
            while b"\r\n" not in body:
                d = s.recv(65536)
                if not d:
                    return status, hdrs, out
                body += d
            size_line, _, body = body.partition(b"\r\n")
            n = int(size_line.split(b";")[0] or b"0", 16)
            while len(body) < n + 2:
                d = s.recv(65536)
                if not d:
                    return status, hdrs, out + body
                body += d
            out += body[:n]
            body = body[n + 2:]
            if n == 0:
                return status, hdrs, out
    if "content-length" in hdrs:
        n = int(hdrs["content-length"])
        while len(body) < n:
            d = s.recv(65536)
            if not d:
                break
            body += d
        return status, hdrs, body[:n]
    while True:
        d = s.recv(65536)
        if not d:
            return status, hdrs, body
        body += d


def raw(port, data, timeout=30):
    """Sends raw bytes on a new connection, returns (status, headers, body); status None
    when the server closed without a response."""
    s = connect(port, timeout)
    try:
        s.sendall(data)
        return read_response(s)
    except (ConnectionResetError, BrokenPipeError):
        return None, {}, b"reset"
    except socket.timeout:
        return None, {}, b"no answer in %g s" % timeout
    finally:
        s.close()


def request(port, method, path, body=None, headers=(), timeout=30):
    b = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    h = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" % (method, path)
    for k in headers:
        h += k + "\r\n"
    if body is not None:
        h += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(b)
    return raw(port, h.encode() + b"\r\n" + b, timeout)


def percentile(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    i = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[i]


class Checks:
    def __init__(self, name):
        self.name, self.n, self.fails = name, 0, []

    def check(self, ok, what):
        self.n += 1
        if not ok:
            self.fails.append(what)
            if len(self.fails) <= 40:
                print("FAIL:", what, flush=True)
        return ok

    def done(self):
        print("%s: %d checks, %d failed" % (self.name, self.n, len(self.fails)))
        return 1 if self.fails else 0


def model_dir(data):
    return os.path.join(data, "tiny-mqa")
