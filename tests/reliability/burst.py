#!/usr/bin/env python3
"""burst.py HYMT DATA_DIR [--long]

Bursts at 10x capacity. The server admits --max-running 4 + --max-queue 12 = 16 requests.
  1. unloaded: 10 clients in a closed loop (within capacity: a client's next request may
     arrive before its last one's slot is free), /v1/completions of 24 tokens: the latency
     p99 of that load;
  2. a burst of 160 requests at once (10x), half /api/translate and half /v1/completions:
     every request gets 200 or 429; each 429 is our JSON error with Retry-After and comes
     fast (p99 under 250 ms); the admitted requests' p99 stays within 2x of the unloaded
     p99 (+ 50 ms for thread start-up on a loaded CI machine); both routes are admitted by
     one rule (each gets at least a quarter of the admissions). A burst that breaks a
     latency bound is measured once more against a fresh unloaded p99 (a shared machine's
     noise does not repeat; a slow server does).
CI: 3 bursts; --long: 30 (HYMT_RELIABILITY_LONG=1 too)."""
import argparse
import json
import os
import sys
import threading
import time

import rl

CMPL = {"prompt": "hello there", "max_tokens": 24, "ignore_eos": True, "temperature": 0}
TR = {"text": "Good morning, my friend.", "tgt": "de", "max_tokens": 24, "temperature": 0}


def one(port, route, body, out, i, barrier=None):
    s = rl.connect(port, 60)
    b = json.dumps(body).encode()
    req = ("POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
           "Content-Length: %d\r\n\r\n" % (route, len(b))).encode() + b
    if barrier:
        barrier.wait()
    t0 = time.time()
    try:
        s.sendall(req)
        st, hdrs, body = rl.read_response(s)
    except OSError as e:
        st, hdrs, body = None, {}, str(e).encode()
    out[i] = (route, st, hdrs, body, time.time() - t0)
    s.close()


def unloaded(port, clients, rounds):
    lat = []
    lock = threading.Lock()

    def loop():
        for _ in range(rounds):
            out = [None]
            one(port, "/v1/completions", CMPL, out, 0)
            with lock:
                lat.append(out[0][4] if out[0][1] in (200, 429) else float("inf"))

    th = [threading.Thread(target=loop) for _ in range(clients)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return lat


def burst(port, n, ch, k, p99_ref):
    out = [None] * n
    barrier = threading.Barrier(n)
    th = []
    for i in range(n):
        route, body = ("/api/translate", TR) if i % 2 else ("/v1/completions", CMPL)
        th.append(threading.Thread(target=one, args=(port, route, body, out, i, barrier)))
    for t in th:
        t.start()
    for t in th:
        t.join()
    ok = [o for o in out if o[1] == 200]
    rej = [o for o in out if o[1] == 429]
    ch.check(len(ok) + len(rej) == n, "burst %d: statuses %s" % (
        k, sorted({str(o[1]) + " " + o[3][:80].decode("utf-8", "replace") for o in out
                   if o[1] not in (200, 429)})))
    ch.check(len(ok) >= 4 and len(rej) >= n // 2, "burst %d: %d admitted, %d refused" % (
        k, len(ok), len(rej)))
    for o in rej[:3]:
        try:
            code = json.loads(o[3])["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = None
        ch.check(code == "queue_full" and "retry-after" in o[2],
                 "burst %d: a 429 without our error or Retry-After: %r %r" % (k, o[2], o[3][:100]))
    rej_p99 = rl.percentile([o[4] for o in rej], 99)
    ok_p99 = rl.percentile([o[4] for o in ok], 99)
    by_route = {r: sum(1 for o in ok if o[0] == r) for r in ("/api/translate", "/v1/completions")}
    ch.check(min(by_route.values()) * 4 >= len(ok), "burst %d: admissions by route %s" % (
        k, by_route))
    print("burst %d: %d admitted (%s), %d refused; admitted p99 %.0f ms, 429 p99 %.1f ms" % (
        k, len(ok), by_route, len(rej), ok_p99 * 1e3, rej_p99 * 1e3))
    return timing_faults(k, ok_p99, rej_p99, p99_ref)


def timing_faults(k, ok_p99, rej_p99, p99_ref):
    """The latency bounds a burst broke (an empty list when it kept them)."""
    faults = []
    if rej_p99 >= 0.25:
        faults.append("burst %d: 429 p99 %.0f ms (over 250 ms)" % (k, rej_p99 * 1e3))
    if ok_p99 > 2 * p99_ref + 0.05:
        faults.append("burst %d: admitted p99 %.0f ms, over 2x the unloaded %.0f ms" % (
            k, ok_p99 * 1e3, p99_ref * 1e3))
    return faults


def unloaded_p99(port, ch):
    lat = unloaded(port, 10, 6)
    p99 = rl.percentile(lat, 99)
    ch.check(p99 != float("inf"), "unloaded: a request failed")
    print("unloaded (10 clients): p50 %.0f ms, p99 %.0f ms" % (rl.percentile(lat, 50) * 1e3,
                                                                 p99 * 1e3))
    return p99


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hymt")
    ap.add_argument("data")
    ap.add_argument("--long", action="store_true")
    a = ap.parse_args()
    long_ = a.long or os.environ.get("HYMT_RELIABILITY_LONG") == "1"
    srv = rl.Server(a.hymt, rl.model_dir(a.data), "--threads", "2", "--max-running", "4",
                    "--max-queue", "12")
    ch = rl.Checks("burst")
    try:
        unloaded(srv.port, 10, 2)  # warm-up
        p99 = unloaded_p99(srv.port, ch)
        for k in range(30 if long_ else 3):
            faults = burst(srv.port, 160, ch, k, p99)
            if faults:
                # The bounds compare two latency samples taken seconds apart; on a shared
                # machine another process can stretch one of them. A server that breaks them
                # breaks them again against a fresh baseline; noise does not repeat.
                print("burst %d: %s; measured again" % (k, "; ".join(faults)))
                time.sleep(1)
                p99 = unloaded_p99(srv.port, ch)
                faults = burst(srv.port, 160, ch, k, p99)
            for f in faults:
                ch.check(False, f)
            time.sleep(0.5)
        st, _, _ = rl.request(srv.port, "GET", "/health")
        ch.check(st == 200 and srv.proc.poll() is None, "the server after the bursts: %s" % st)
        rc = srv.stop()  # SIGTERM: a clean exit (under ASan also: no leak)
        ch.check(rc == 0, "exit %s after SIGTERM: %s" % (rc, srv.log_text()[-2000:]))
    finally:
        srv.close()
    return ch.done()


if __name__ == "__main__":
    sys.exit(main())
