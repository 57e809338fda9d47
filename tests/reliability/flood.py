#!/usr/bin/env python3
"""flood.py HYMT DATA_DIR [--long]

Slowloris and connection floods: while attackers hold connections open, other clients must
still be served, each request within 1 s.
  1. `--max-connections 64`: 64 slowloris connections (a request head sent one header line
     every second) from 127.0.0.2;
  2. the default limit: 1,000 connections from 127.0.0.2, 500 slowloris and 500 that send
     nothing at all.
Meanwhile a client on 127.0.0.1 sends GET /health and a small /v1/completions request in
turn, a fresh connection each, every 0.2 s: every one must be answered within 1 s. After the
attack the server must still serve and /metrics must work. CI: 10 s per phase; --long: 120 s
(HYMT_RELIABILITY_LONG=1 too)."""
import argparse
import os
import resource
import socket
import sys
import threading
import time

import rl


def attackers(port, n, slow, stop, opened):
    """n connections from 127.0.0.2; `slow` of them send a header line every second."""
    socks = []
    for i in range(n):
        try:
            s = socket.socket()
            s.bind(("127.0.0.2", 0))
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            if i < slow:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            socks.append((s, i < slow))
        except OSError:
            pass  # refused or reset: the server protects itself, which is allowed
    opened.append(len(socks))
    k = 0
    while not stop.is_set():
        for s, is_slow in socks:
            if is_slow:
                try:
                    s.sendall(b"X-Slow-%d: x\r\n" % k)
                except OSError:
                    pass
        k += 1
        stop.wait(1.0)
    for s, _ in socks:
        s.close()


def victim(port, seconds, ch, label):
    lat, worst = [], 0.0
    t_end = time.time() + seconds
    i = 0
    while time.time() < t_end:
        t0 = time.time()
        if i % 2:
            st, _, body = rl.request(port, "POST", "/v1/completions",
                                     {"prompt": "a", "max_tokens": 2}, timeout=5)
        else:
            st, _, body = rl.request(port, "GET", "/health", timeout=5)
        dt = time.time() - t0
        lat.append(dt)
        ch.check(st == 200, "%s: request %d: HTTP %s %r" % (label, i, st, body[:120]))
        ch.check(dt <= 1.0, "%s: request %d took %.2f s (over 1 s)" % (label, i, dt))
        i += 1
        time.sleep(max(0.0, 0.2 - dt))
    print("%s: %d requests, p50 %.1f ms, max %.1f ms" % (label, len(lat),
                                                          rl.percentile(lat, 50) * 1e3,
                                                          max(lat) * 1e3))


def phase(hymt, data, ch, label, n, slow, seconds, *args):
    srv = rl.Server(hymt, rl.model_dir(data), "--threads", "1", *args)
    try:
        stop, opened = threading.Event(), []
        t = threading.Thread(target=attackers, args=(srv.port, n, slow, stop, opened))
        t.start()
        while not opened and t.is_alive():
            time.sleep(0.05)
        time.sleep(1.5)  # the slow connections have sent a line or two
        print("%s: %d of %d attacker connections open" % (label, opened[0] if opened else 0, n))
        victim(srv.port, seconds, ch, label)
        stop.set()
        t.join()
        st, _, _ = rl.request(srv.port, "GET", "/metrics", timeout=5)
        ch.check(st == 200, "%s: /metrics after the attack: %s" % (label, st))
        ch.check(srv.proc.poll() is None, "%s: the server died" % label)
        rc = srv.stop()  # SIGTERM: a clean exit (under ASan also: no leak)
        ch.check(rc == 0, "exit %s after SIGTERM: %s" % (rc, srv.log_text()[-2000:]))
    finally:
        srv.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hymt")
    ap.add_argument("data")
    ap.add_argument("--long", action="store_true")
    a = ap.parse_args()
    long_ = a.long or os.environ.get("HYMT_RELIABILITY_LONG") == "1"
    secs = 120 if long_ else 10
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    ch = rl.Checks("flood")
    phase(a.hymt, a.data, ch, "slowloris x64, --max-connections 64", 64, 64, secs,
          "--max-connections", "64")
    phase(a.hymt, a.data, ch, "1000 connections (500 slow, 500 silent)", 1000, 500, secs)
    return ch.done()


if __name__ == "__main__":
    sys.exit(main())
