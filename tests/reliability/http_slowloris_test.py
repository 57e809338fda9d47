"""http_slowloris_test.py HYMT MODEL: slow clients cannot lock others out (issue 12).
Slow connections (from 127.0.0.2, a loopback address of their own) send one header line a
second and never finish their request head; meanwhile another client (127.0.0.1) must get
every answer within 1 s. Twice: --max-connections 64 with 64 slow connections, and the
default limit (1024) with 1,100. Then the head deadline: a slow head is answered 408 in
JSON once --header-timeout passes. Old server: every slot held by a thread reading a head
that never ends, the other client waits until the slow ones give up."""
import socket
import threading
import time

from http_util import Checks, Server, argv, connect, http, json_error, raise_nofile, read_all

hymt, model = argv()
C = Checks("http_slowloris_test")
raise_nofile(4096)


class Slow:
    """n connections from src, each sending a header line every second until stopped."""

    def __init__(self, port, n, src="127.0.0.2"):
        self.socks, self.stop = [], threading.Event()
        for _ in range(n):
            try:
                s = connect(port, src, timeout=1)
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
                self.socks.append(s)
            except OSError:
                pass
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        k = 0
        while not self.stop.wait(1.0):
            k += 1
            for s in self.socks:
                try:
                    s.sendall(b"X-Slow-%d: %d\r\n" % (k, k))
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.t.join()
        for s in self.socks:
            s.close()


def others_served(port, seconds, label):
    """Another client's requests for `seconds`: every one answered 200 within 1 s."""
    worst, n, bad = 0.0, 0, 0
    end = time.time() + seconds
    while time.time() < end:
        try:
            st, _, _, dt = http(port, "GET", "/health", timeout=3)
        except OSError:
            st, dt = None, 3.0
        n += 1
        worst = max(worst, dt)
        bad += st != 200 or dt > 1.0
        time.sleep(0.2)
    C.check(bad == 0, "%s: %d of %d requests not answered 200 within 1 s (worst %.2f s)" %
            (label, bad, n, worst))
    print("%s: %d requests, worst %.3f s" % (label, n, worst), flush=True)


for limit, n_slow in ((64, 64), (None, 1100)):
    args = ["--max-connections", str(limit)] if limit else []
    S = Server(hymt, model, *args)
    slow = Slow(S.port, n_slow)
    time.sleep(1.5)  # every slow connection open and dribbling
    others_served(S.port, 4.0, "%d slow connections, --max-connections %s" %
                  (len(slow.socks), limit or "default"))
    slow.close()
    C.check(S.stop() == 0, "server exit")

# the head deadline: a slow head gets a JSON 408 and the connection closes
S = Server(hymt, model, "--header-timeout", "1.5")
s = connect(S.port, timeout=1)
s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
t0 = time.time()
for k in range(6):
    try:
        s.sendall(b"X-%d: 1\r\n" % k)
    except OSError:
        break
    time.sleep(0.5)
    s.settimeout(0.01)
    try:
        if s.recv(1, socket.MSG_PEEK):
            break
    except (socket.timeout, BlockingIOError):
        pass
data, closed = read_all(s, 2.0)
s.close()
dt = time.time() - t0
C.check(data.startswith(b"HTTP/1.1 408") and json_error(data) == "request_timeout" and
        1.3 < dt < 3.5, "head deadline: %r after %.1f s" % (data[:120], dt))
C.check(S.stop() == 0, "server exit")
C.done()
