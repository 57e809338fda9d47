#!/usr/bin/env python3
"""drain.py HYMT DATA_DIR [--long]

Drain under load: 24 streamed completions (8 running, 16 queued: --max-running 8) and 8
whole-response ones are in flight when SIGTERM arrives (--drain 3). Then:
  - a new client is refused or answered 503 at once (within 1 s), never left hanging;
  - every stream ends with a final event ([DONE] after its last chunk, or an error event),
    none is cut mid-stream; every whole request gets 200 or 503;
  - the server exits 0 within the drain time + 5 s.
CI: one round; --long: 5 rounds (HYMT_RELIABILITY_LONG=1 too)."""
import argparse
import json
import os
import signal
import socket
import sys
import threading
import time

import rl


def stream(port, out, i):
    body = json.dumps({"prompt": "x", "max_tokens": 3000, "ignore_eos": True, "stream": True})
    try:
        s = rl.connect(port, 30)
        s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                   "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" %
                   len(body)).encode() + body.encode())
        st, hdrs, b = rl.read_response(s)
        s.close()
        out[i] = (st, b)
    except OSError as e:
        out[i] = (None, str(e).encode())


def whole(port, out, i):
    st, _, b = rl.request(port, "POST", "/v1/completions",
                          {"prompt": "x", "max_tokens": 3000, "ignore_eos": True}, timeout=30)
    out[i] = (st, b)


def late_client(port):
    """(how, seconds): a connection attempt after SIGTERM."""
    t0 = time.time()
    try:
        st, _, _ = rl.request(port, "GET", "/v1/models", timeout=5)
        return ("HTTP %s" % st if st else "closed without a response"), time.time() - t0, st
    except ConnectionRefusedError:
        return "refused", time.time() - t0, "refused"
    except socket.timeout:
        return "no answer in 5 s", time.time() - t0, None
    except OSError as e:
        return str(e), time.time() - t0, "refused"


def round_(hymt, data, ch, k):
    srv = rl.Server(hymt, rl.model_dir(data), "--threads", "2", "--max-running", "8",
                    "--max-queue", "64", "--drain", "3")
    try:
        n_s, n_w = 24, 8
        out = [None] * (n_s + n_w)
        th = [threading.Thread(target=stream, args=(srv.port, out, i)) for i in range(n_s)]
        th += [threading.Thread(target=whole, args=(srv.port, out, n_s + i)) for i in range(n_w)]
        for t in th:
            t.start()
        time.sleep(1.5)
        t_term = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        how, dt, st = late_client(srv.port)
        ch.check(st in ("refused", 503) and dt <= 1.0,
                 "round %d: a new client after SIGTERM: %s after %.2f s" % (k, how, dt))
        for t in th:
            t.join(30)
        try:
            rc = srv.proc.wait(3 + 5 - (time.time() - t_term) + 1)
        except Exception:
            rc = "still running"
        ch.check(rc == 0, "round %d: exit %s after SIGTERM (drain 3 s)" % (k, rc))
        ended, errors = 0, 0
        for i, o in enumerate(out[:n_s]):
            st, b = o or (None, b"")
            events = [ln[6:] for ln in b.decode("utf-8", "replace").split("\n")
                      if ln.startswith("data: ")]
            final = events and (events[-1] == "[DONE]" or '"error"' in events[-1])
            if st == 503:
                errors += 1
            elif ch.check(st == 200 and final, "round %d: stream %d: HTTP %s, last event %r" % (
                    k, i, st, events[-1][:100] if events else None)):
                ended += 1
        for i, o in enumerate(out[n_s:]):
            ch.check(o and o[0] in (200, 503), "round %d: whole request %d: %s" % (
                k, i, (o[0], o[1][:100]) if o else None))
        print("round %d: new client after SIGTERM: %s in %.2f s; %d streams ended with a final "
              "event, %d answered 503; exit %s" % (k, how, dt, ended, errors, rc))
    finally:
        srv.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hymt")
    ap.add_argument("data")
    ap.add_argument("--long", action="store_true")
    a = ap.parse_args()
    long_ = a.long or os.environ.get("HYMT_RELIABILITY_LONG") == "1"
    ch = rl.Checks("drain under load")
    for k in range(5 if long_ else 1):
        round_(a.hymt, a.data, ch, k)
    return ch.done()


if __name__ == "__main__":
    sys.exit(main())
