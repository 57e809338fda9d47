#!/usr/bin/env python3
"""soak.py HYMT MODEL [--seconds N] [--warmup N] [--out DIR] [--url URL --pid PID]
          [--workers N] [--max-rss-growth-kib N] [-- SERVE_ARGS...]

The 72-hour claim as a test: mixed traffic against one `hymt serve` for a given duration,
sampled every second into DIR/soak.csv and plotted to DIR/soak.png (gnuplot).
Traffic (--workers clients, each picking in turn): sentence translations, streamed
documents (12 paragraphs), streamed chat, whole completions, cancellations (a stream left
after its first event), malformed requests (expected 4xx), requests past --timeout (504),
and every 15 s a burst of 48 requests at once (some get 429). Before the clock starts the
KV pool is filled (distinct long requests until blocks used + cached reach 90% of the
pool, or 60 s), so that every KV page has been touched.
Samples (one row a second): elapsed s, RSS KiB (/proc), device memory bytes
(hymt_device_memory_used_bytes, else nvidia-smi for the process), KV blocks used / cached
/ total, queue depth, running sequences, requests done that second by kind, failures
(anything not expected), latency p50/p99 of the sentence translations.
Checks: no unexpected failure (200, 429 and, past the deadline, 504 or a stream's timeout
event are expected; malformed requests must get 400 or 413), the server alive, RSS growth
after the warm-up (--warmup, default the first half of the run, at most 120 s: the median
of the last 30 samples minus that of the first 30 after it; 10 on short runs) under
--max-rss-growth-kib (default 1024), and device memory (when any) identical at the end of the warm-up and at the
end. By default it starts the server itself on MODEL (--kv-memory 32M --timeout 3
--max-running 16 --max-queue 64, plus SERVE_ARGS); with --url and --pid it drives a
running one (e.g. on the GPU machine).
  python3 tests/reliability/soak.py build/hymt build/demo-model --seconds 180 --out soak"""
import argparse
import csv
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time

import rl

KINDS = ["sentence", "document", "chat_stream", "completion", "cancel", "malformed", "timeout",
         "burst"]
MALFORMED = [b'{"text": "a",', b"[1,2]", b'{"text": 5, "tgt": "de"}', b'{"text": "a", "tgt": "xx"}',
             b'{"messages": []}', b'{"prompt": "a", "max_tokens": 100000}', b"\xff\xfe"]


def stream_ok(st, body, final):
    """A stream that ended properly: its final event, or a deadline passed (a 504 before
    the stream began, an error event in it), or refused at admission (429)."""
    return st in (429, 504) or (st == 200 and (final in body or b'"code":"timeout"' in body))


class Traffic:
    def __init__(self, port, seed):
        self.port = port
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.done = {k: 0 for k in KINDS}
        self.fails = []
        self.lat = []  # (t, seconds) of sentence translations

    def note(self, kind, ok, what=""):
        with self.lock:
            self.done[kind] += 1
            if not ok:
                self.fails.append("%s: %s" % (kind, what))
                if len(self.fails) <= 20:
                    print("FAIL:", kind, what[:300], flush=True)

    def post(self, route, body, timeout=60):
        b = body if isinstance(body, bytes) else json.dumps(body).encode()
        return rl.request(self.port, "POST", route, b, timeout=timeout)

    def sentence(self):
        n = self.rng.randrange(1000)
        t0 = time.time()
        st, _, b = self.post("/api/translate", {"text": "Sentence number %d is here." % n,
                                                "tgt": self.rng.choice(["de", "fr", "zh"]),
                                                "max_tokens": 16})
        dt = time.time() - t0
        ok = st in (200, 429, 504)
        if st == 200:
            with self.lock:
                self.lat.append((time.time(), dt))
        self.note("sentence", ok, "%s %r" % (st, b[:200]))

    def document(self):
        text = "\n\n".join("Paragraph %d. It has two sentences." % i for i in range(12))
        st, _, b = self.post("/api/translate", {"text": text, "tgt": "de", "max_tokens": 12,
                                                "stream": True})
        self.note("document", stream_ok(st, b, b'"type":"done"'), "%s %r" % (st, b[-200:]))

    def chat_stream(self):
        st, _, b = self.post("/v1/chat/completions", {
            "messages": [{"role": "user", "content": "Hello %d" % self.rng.randrange(100)}],
            "max_tokens": 24, "stream": True, "stream_options": {"include_usage": True}})
        self.note("chat_stream", stream_ok(st, b, b"[DONE]"), "%s %r" % (st, b[-200:]))

    def completion(self):
        st, _, b = self.post("/v1/completions", {"prompt": "abc %d" % self.rng.randrange(100),
                                                 "max_tokens": 32, "ignore_eos": True})
        self.note("completion", st in (200, 429, 504), "%s %r" % (st, b[:200]))

    def cancel(self):
        body = json.dumps({"prompt": "x", "max_tokens": 500, "ignore_eos": True, "stream": True})
        try:
            s = rl.connect(self.port, 30)
            s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                       "\r\nContent-Length: %d\r\n\r\n" % len(body)).encode() + body.encode())
            got = b""
            while b"data:" not in got and b"HTTP/1.1 429" not in got:
                d = s.recv(4096)
                if not d:
                    break
                got += d
            s.close()
            self.note("cancel", b"data:" in got or b" 429 " in got, repr(got[:200]))
        except OSError as e:
            self.note("cancel", False, str(e))

    def malformed(self):
        st, _, b = self.post(self.rng.choice(["/api/translate", "/v1/chat/completions",
                                              "/v1/completions"]), self.rng.choice(MALFORMED))
        self.note("malformed", st in (400, 413), "%s %r" % (st, b[:200]))

    def timeout(self):
        st, _, b = self.post("/v1/completions", {"prompt": "t", "max_tokens": 3500,
                                                 "ignore_eos": True})
        self.note("timeout", st in (200, 504, 429), "%s %r" % (st, b[:200]))

    def burst(self):
        th = [threading.Thread(target=self.completion) for _ in range(48)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        self.note("burst", True)

    def worker(self, stop, weights):
        kinds = [k for k in KINDS if k != "burst"]
        while not stop.is_set():
            getattr(self, self.rng.choices(kinds, weights)[0])()


def device_bytes(metrics, pid):
    v = metrics.get("hymt_device_memory_used_bytes")
    if v is not None:
        return int(v)
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=5).stdout
        for line in out.splitlines():
            p, m = [x.strip() for x in line.split(",")]
            if int(p) == pid:
                return int(m) << 20
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    return ""


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def metrics(port):
    st, _, body = rl.request(port, "GET", "/metrics", timeout=10)
    out = {}
    for line in body.decode("utf-8", "replace").splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def fill_kv(tr, port, limit_s=60):
    """Distinct long requests until blocks used + cached cover 90% of the pool."""
    t0 = time.time()
    stop = threading.Event()
    n = [0]

    def filler(i):
        while not stop.is_set():
            n[0] += 1
            tr.post("/v1/completions", {"prompt": "fill %d %d" % (i, n[0]), "max_tokens": 400,
                                        "ignore_eos": True})

    th = [threading.Thread(target=filler, args=(i,)) for i in range(16)]
    for t in th:
        t.start()
    frac = 0.0
    while time.time() - t0 < limit_s:
        m = metrics(port)
        total = m.get("hymt_kv_blocks_capacity", 0)
        frac = (m.get("hymt_kv_blocks_used", 0) + m.get("hymt_kv_blocks_cached", 0)) / total if total else 0
        if frac >= 0.9:
            break
        time.sleep(0.5)
    stop.set()
    for t in th:
        t.join()
    print("soak: KV pool %.0f%% filled in %.1f s" % (frac * 100, time.time() - t0), flush=True)


def plot(out_dir):
    gp = """set terminal pngcairo size 1200,900 font ",10"
set output "%(d)s/soak.png"
set datafile separator ","
set key autotitle columnhead outside right
set multiplot layout 3,1 title "hymt soak"
set ylabel "MiB"
plot "%(d)s/soak.csv" using 1:($2/1024) with lines title "RSS", \
     "" using 1:($3 eq "" ? NaN : $3/1048576) with lines title "device memory"
set ylabel "KV blocks"
plot "%(d)s/soak.csv" using 1:4 with lines title "used", "" using 1:5 with lines title "cached", \
     "" using 1:6 with lines title "total"
set ylabel "ms"
set xlabel "seconds"
plot "%(d)s/soak.csv" using 1:9 with lines title "sentence p50", "" using 1:10 with lines title "sentence p99"
unset multiplot
""" % {"d": out_dir}
    try:
        r = subprocess.run(["gnuplot"], input=gp, text=True, capture_output=True, timeout=60)
        if r.returncode:
            print("soak: gnuplot failed: %s" % r.stderr[-300:])
        return r.returncode == 0
    except (OSError, subprocess.TimeoutExpired) as e:
        print("soak: no plot (%s)" % e)
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hymt")
    ap.add_argument("model")
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("HYMT_SOAK_SECONDS", 180)))
    ap.add_argument("--warmup", type=float, default=None)
    ap.add_argument("--out", default="soak-out")
    ap.add_argument("--url")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--max-rss-growth-kib", type=int, default=1024)
    ap.add_argument("serve_args", nargs="*")
    a = ap.parse_args()
    warmup = a.warmup if a.warmup is not None else min(120.0, a.seconds / 2)
    os.makedirs(a.out, exist_ok=True)
    srv = None
    if a.url:
        port, pid = int(a.url.rsplit(":", 1)[1].strip("/")), a.pid
    else:
        srv = rl.Server(a.hymt, a.model, "--kv-memory", "32M", "--timeout", "3", "--max-running",
                        "16", "--max-queue", "64", *a.serve_args)
        port, pid = srv.port, srv.proc.pid
    tr = Traffic(port, 1)
    ch = rl.Checks("soak")
    try:
        fill_kv(tr, port)
        stop = threading.Event()
        weights = [30, 8, 12, 20, 10, 10, 2]  # sentence .. timeout
        th = [threading.Thread(target=tr.worker, args=(stop, weights)) for _ in range(a.workers)]
        for t in th:
            t.start()
        rows, t0 = [], time.time()
        last = dict(tr.done)
        next_burst = t0 + 15
        with open(os.path.join(a.out, "soak.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["seconds", "rss_kib", "device_bytes", "kv_used", "kv_cached", "kv_total",
                        "queue", "running", "lat_p50_ms", "lat_p99_ms", "failures"] +
                       ["done_" + k for k in KINDS])
            while time.time() - t0 < a.seconds:
                time.sleep(max(0.0, 1.0 - (time.time() - t0) % 1.0))
                now = time.time()
                if now >= next_burst:
                    threading.Thread(target=tr.burst).start()
                    next_burst += 15
                m = metrics(port)
                with tr.lock:
                    lat = [d for t, d in tr.lat if t > now - 1.0]
                    done = dict(tr.done)
                    n_fail = len(tr.fails)
                row = [round(now - t0, 1), rss_kib(pid), device_bytes(m, pid),
                       int(m.get("hymt_kv_blocks_used", 0)), int(m.get("hymt_kv_blocks_cached", 0)),
                       int(m.get("hymt_kv_blocks_capacity", 0)), int(m.get("hymt_queue_depth", 0)),
                       int(m.get("hymt_running_sequences", 0)),
                       round(rl.percentile(lat, 50) * 1e3, 1) if lat else "",
                       round(rl.percentile(lat, 99) * 1e3, 1) if lat else "", n_fail] + \
                      [done[k] - last[k] for k in KINDS]
                last = done
                w.writerow(row)
                f.flush()
                rows.append(row)
        stop.set()
        for t in th:
            t.join(60)
        plot(a.out)
        after = [r for r in rows if r[0] >= warmup]
        if len(after) >= 20:
            w = max(10, min(30, len(after) // 4))  # medians over windows: bursts make spikes
            base = statistics.median(r[1] for r in after[:w])
            end = statistics.median(r[1] for r in after[-w:])
            growth = end - base
            ch.check(growth < a.max_rss_growth_kib,
                     "RSS grew %d KiB after the warm-up (%d -> %d KiB; limit %d)" % (
                         growth, base, end, a.max_rss_growth_kib))
            dev = [r[2] for r in after if r[2] != ""]
            if dev:
                ch.check(dev[0] == dev[-1], "device memory %d -> %d bytes" % (dev[0], dev[-1]))
        else:
            ch.check(False, "too short a run to judge: %d samples after the warm-up" % len(after))
            growth = base = end = 0
        ch.check(not tr.fails, "%d unexpected failures (first: %s)" % (
            len(tr.fails), tr.fails[0] if tr.fails else ""))
        st, _, _ = rl.request(port, "GET", "/health", timeout=10)
        ch.check(st == 200, "/health at the end: %s" % st)
        if srv:
            rc = srv.stop()  # SIGTERM: a clean exit (under ASan also: no leak)
            ch.check(rc == 0, "exit %s after SIGTERM: %s" % (rc, srv.log_text()[-2000:]))
        total = sum(tr.done.values())
        print("soak: %.0f s, %d requests (%s); RSS after warm-up %d -> %d KiB (%+d KiB); "
              "csv and plot in %s" % (a.seconds, total, ", ".join("%s %d" % kv for kv in tr.done.items()),
                                      base, end, growth, a.out))
    finally:
        if srv:
            srv.close()
    return ch.done()


if __name__ == "__main__":
    sys.exit(main())
