#!/usr/bin/env python3
"""disconnect.py HYMT DATA_DIR [--long]

Disconnect storms: 32 clients at a time, each leaving at a bad moment, chosen in turn:
halfway through the request head; after the head with the body half sent; right after a
whole request; after the first event of a streamed completion, chat or translation; while
a long whole-response request runs; with a TCP reset (SO_LINGER 0) mid-stream. Afterwards
the server has nothing left running: running sequences, queue depth and KV blocks in use
return to 0 within 3 s, the disconnects are counted, and a normal request still gets 200.
The server's RSS after the storm is reported. CI: 8 s of storm; --long: 120 s."""
import argparse
import json
import os
import random
import socket
import struct
import sys
import threading
import time

import rl

LONG_CMPL = {"prompt": "x", "max_tokens": 2000, "ignore_eos": True}
STREAMS = [("/v1/completions", dict(LONG_CMPL, stream=True)),
           ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                     "max_tokens": 2000, "ignore_eos": True, "stream": True}),
           ("/api/translate", {"text": "\n\n".join("Sentence %d." % i for i in range(30)),
                               "tgt": "de", "max_tokens": 200, "stream": True})]


def post_bytes(route, body):
    b = json.dumps(body).encode()
    return ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (route, len(b))).encode() + b


def victim(port, kind, rng):
    s = rl.connect(port, 10)
    try:
        if kind == 0:  # half a request head
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le")
            time.sleep(rng.random() * 0.2)
        elif kind == 1:  # head and half a body
            r = post_bytes("/v1/completions", LONG_CMPL)
            s.sendall(r[:len(r) - 10])
            time.sleep(rng.random() * 0.2)
        elif kind == 2:  # a whole request, then gone before the answer
            s.sendall(post_bytes("/v1/completions", LONG_CMPL))
        elif kind in (3, 4, 5):  # a stream: gone after its first event
            route, body = STREAMS[kind - 3]
            s.sendall(post_bytes(route, body))
            got = b""
            while b"data:" not in got:
                d = s.recv(4096)
                if not d:
                    break
                got += d
        elif kind == 6:  # a long whole-response request, gone while it runs
            s.sendall(post_bytes("/v1/completions", LONG_CMPL))
            time.sleep(0.05 + rng.random() * 0.3)
        else:  # a reset mid-stream
            s.sendall(post_bytes("/v1/completions", dict(LONG_CMPL, stream=True)))
            s.recv(4096)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hymt")
    ap.add_argument("data")
    ap.add_argument("--long", action="store_true")
    a = ap.parse_args()
    long_ = a.long or os.environ.get("HYMT_RELIABILITY_LONG") == "1"
    secs = 120 if long_ else 8
    srv = rl.Server(a.hymt, rl.model_dir(a.data), "--threads", "2", "--max-running", "16",
                    "--max-queue", "64")
    ch = rl.Checks("disconnect storm")
    try:
        rss0 = srv.rss_kib()
        n = [0]
        lock = threading.Lock()
        t_end = time.time() + secs

        def worker(seed):
            rng = random.Random(seed)
            while time.time() < t_end:
                with lock:
                    k = n[0]
                    n[0] += 1
                victim(srv.port, k % 8, rng)

        th = [threading.Thread(target=worker, args=(i,)) for i in range(32)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        t0 = time.time()
        keys = ("hymt_running_sequences", "hymt_queue_depth", "hymt_kv_blocks_used")
        while True:
            m = srv.metrics()
            if all(m.get(k) == 0 for k in keys) or time.time() - t0 > 3:
                break
            time.sleep(0.1)
        for k in keys:
            ch.check(m.get(k) == 0, "%s is %s 3 s after the storm" % (k, m.get(k)))
        ch.check(m.get("hymt_client_disconnects_total", 0) > 0, "no disconnect was counted")
        st, _, body = rl.request(srv.port, "POST", "/v1/completions", {"prompt": "a", "max_tokens": 4})
        ch.check(st == 200, "a request after the storm: %s %r" % (st, body[:200]))
        ch.check(srv.proc.poll() is None, "the server died")
        rss1 = srv.rss_kib()
        rc = srv.stop()  # SIGTERM: a clean exit (under ASan also: no leak)
        ch.check(rc == 0, "exit %s after SIGTERM: %s" % (rc, srv.log_text()[-2000:]))
        print("disconnect storm: %d clients left early in %d s; settled in %.1f s; %d counted; "
              "RSS %d -> %d KiB" % (n[0], secs, time.time() - t0,
                                    m.get("hymt_client_disconnects_total", 0), rss0, rss1))
    finally:
        srv.close()
    return ch.done()


if __name__ == "__main__":
    sys.exit(main())
