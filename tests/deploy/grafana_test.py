#!/usr/bin/env python3
"""grafana_test.py HYMT DATA_DIR SRC_DIR: deploy/grafana/hymt.json against a real server.

(a) Every metric name in the dashboard's expressions (panel targets and template
    variables) is exported by `hymt serve`'s /metrics after a few requests of each kind
    (the device-memory gauges only exist on a GPU: for those the name must be in
    src/server/metrics.c); every other word of an expression is a PromQL function,
    keyword or label, so a typo'd metric cannot hide as "a function".
(b) Debian's `prometheus` scrapes that server (behind --metrics-key-file, Bearer
    credentials from a file) every 0.5 s from a temporary folder; once it has scraped traffic, each
    panel expression ($__rate_interval -> 30s, $instance -> .*) is queried through its
    HTTP API and must return a series with a finite value (GPU-only ones excepted), and the
    instance variable's label query must list the server.
Exit 77 only when prometheus cannot run here at all (not installed and not installable)."""
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HYMT, DATA, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
GPU_ONLY = {"hymt_device_memory_used_bytes", "hymt_device_memory_total_bytes"}
FUNCTIONS = {"rate", "irate", "increase", "sum", "avg", "min", "max", "count",
             "histogram_quantile", "clamp_min", "clamp_max", "topk", "bottomk", "abs",
             "label_values", "delta", "deriv", "avg_over_time", "max_over_time"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
            "or", "unless", "offset"}
LABELS = {"le", "route", "code", "key", "instance", "job", "reason"}
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def expressions(dash):
    """(where, expression) for every panel target and template variable query."""
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            out.append(("panel '%s' %s" % (p["title"], t["refId"]), t["expr"]))
    for v in dash["templating"]["list"]:
        q = v.get("query")
        if isinstance(q, dict):
            out.append(("variable $%s" % v["name"], q["query"]))
    return out


def words(expr):
    """The metric names and the unknown words of an expression."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)       # strings (label values)
    e = re.sub(r"\{[^}]*\}", "", e)                     # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                    # range selectors
    e = re.sub(r"\b(by|without|on|ignoring)\s*\(([^)]*)\)",  # grouping: known labels
               lambda m: " ".join("" if w.strip() in LABELS else "UNKNOWN_LABEL_" + w.strip()
                                  for w in m.group(2).split(",")), e)
    e = re.sub(r"\$\w+", "", e)                         # Grafana variables
    names, unknown = set(), set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        w = m.group(0)
        called = e[m.end():].lstrip().startswith("(")
        if w.startswith("hymt_") and not called:
            names.add(w)
        elif called and w in FUNCTIONS or not called and (w in KEYWORDS or w in LABELS):
            pass
        elif re.fullmatch(r"e\d*", w) and re.search(r"\d" + w, e):
            pass  # an exponent
        else:
            unknown.add(w)
    return names, unknown


def http(url, data=None, headers=None, timeout=30):
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def start_server(tmp):
    keys = os.path.join(tmp, "keys.txt")
    with open(keys, "w") as f:
        f.write("dashboard-test %s 2/s\nother %s\n" % ("k" * 24, "o" * 24))
    mkey = os.path.join(tmp, "metrics.key")
    with open(mkey, "w") as f:
        f.write("m" * 32 + "\n")
    log = open(os.path.join(tmp, "serve.log"), "w+")
    p = subprocess.Popen([HYMT, "serve", "-m", os.path.join(DATA, "tiny-mqa"), "--port", "0",
                          "--api-keys-file", keys, "--metrics-key-file", mkey],
                         stderr=log, stdout=subprocess.DEVNULL)
    for _ in range(400):
        log.seek(0)
        m = re.search(r"serve: ready: .*:(\d+)/", log.read())
        if m:
            return p, int(m.group(1)), mkey
        if p.poll() is not None:
            break
        time.sleep(0.05)
    log.seek(0)
    sys.exit("FAIL: hymt serve did not start:\n" + log.read())


def traffic(base):
    """A few requests of every kind: translations, OpenAI (streamed and not), errors, a
    key over its rate limit."""
    k = {"Authorization": "Bearer " + "k" * 24, "Content-Type": "application/json"}
    o = {"Authorization": "Bearer " + "o" * 24, "Content-Type": "application/json"}
    http(base + "/api/translate", json.dumps({"text": "Hello. World.", "target_lang": "de",
                                              "max_tokens": 6}).encode(), o)
    http(base + "/v1/chat/completions", json.dumps(
        {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6,
         "stream": True}).encode(), o)
    http(base + "/v1/completions", json.dumps({"prompt": "Hi", "max_tokens": 4}).encode(), o)
    for _ in range(3):  # 2/s: the third is a 429
        http(base + "/v1/models", headers=k)
    http(base + "/no-such-route")
    http(base + "/v1/models")  # 401


def main():
    with open(os.path.join(SRC, "deploy/grafana/hymt.json")) as f:
        dash = json.load(f)
    exprs = expressions(dash)
    if len(exprs) < 10:
        fail("only %d expressions in the dashboard" % len(exprs))
    used = set()
    for where, e in exprs:
        names, unknown = words(e)
        used |= names
        if unknown:
            fail("%s: unknown words %s in %s" % (where, sorted(unknown), e))
    for need in ("hymt_http_requests_total", "hymt_http_request_duration_seconds_bucket",
                 "hymt_time_to_first_token_seconds_bucket", "hymt_queue_depth",
                 "hymt_kv_blocks_used", "hymt_process_resident_memory_bytes"):
        if need not in used:
            fail("the dashboard does not show %s" % need)
    if not any("histogram_quantile(0.99" in e for _, e in exprs):
        fail("no p99 latency panel")
    ids = [p["id"] for p in dash["panels"]]
    if len(ids) != len(set(ids)):
        fail("panel ids repeat")

    tmp = tempfile.mkdtemp(prefix="hymt-grafana-")
    server = prom = None
    try:
        server, port, mkey = start_server(tmp)
        base = "http://127.0.0.1:%d" % port
        traffic(base)
        # (a) the names /metrics exports
        st, body = http(base + "/metrics", headers={"Authorization": "Bearer " + "m" * 32})
        if st != 200:
            sys.exit("FAIL: /metrics with its key: HTTP %d" % st)
        exported = {re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", l).group(0)
                    for l in body.decode().splitlines() if l and not l.startswith("#")}
        metrics_c = open(os.path.join(SRC, "src/server/metrics.c")).read()
        for n in sorted(used):
            if n in GPU_ONLY:
                if '"%s"' % n not in metrics_c:
                    fail("%s (GPU only) is not in src/server/metrics.c" % n)
            elif n not in exported:
                fail("the dashboard uses %s, which /metrics does not export" % n)
        print("(a) %d metric names checked against /metrics (%d GPU-only against the source)"
              % (len(used), len(used & GPU_ONLY)), flush=True)

        # (b) Debian's prometheus scraping it
        exe = shutil.which("prometheus")
        if not exe:
            print("SKIP: prometheus is not installed (scripts/deps.sh --test installs it)")
            return 77
        pport = free_port()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 500ms\n  evaluation_interval: 500ms\n"
                    "scrape_configs:\n  - job_name: hymt\n    scrape_interval: 500ms\n"
                    "    authorization:\n      type: Bearer\n      credentials_file: %s\n"
                    "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % (mkey, port))
        plog = open(os.path.join(tmp, "prometheus.log"), "w+")
        prom = subprocess.Popen([exe, "--config.file=" + cfg,
                                 "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
                                 "--web.listen-address=127.0.0.1:%d" % pport,
                                 "--log.level=warn"], stdout=plog, stderr=plog)
        papi = "http://127.0.0.1:%d/api/v1/" % pport

        def query(q):
            st, body = http(papi + "query?" + urllib.parse.urlencode({"query": q}))
            j = json.loads(body) if body.startswith(b"{") else {"status": "http %d" % st}
            return j

        t0 = time.time()
        while True:  # up and scraping: the target's up == 1
            time.sleep(0.3)
            if prom.poll() is not None:
                plog.seek(0)
                out = plog.read()
                print("SKIP: prometheus cannot run here:\n" + out[-2000:])
                return 77
            try:
                j = query("up")
            except OSError:
                j = {}
            if j.get("status") == "success" and any(r["value"][1] == "1"
                                                    for r in j["data"]["result"]):
                break
            if time.time() - t0 > 60:
                plog.seek(0)
                sys.exit("FAIL: prometheus did not scrape the server in 60 s:\n" + plog.read()[-2000:])
        for _ in range(8):  # traffic across several scrapes, so that rates are not zero
            traffic(base)
            time.sleep(0.5)
        time.sleep(1.0)
        for where, e in exprs:
            if where.startswith("variable"):
                st, body = http(papi + "label/instance/values?" +
                                urllib.parse.urlencode({"match[]": "hymt_ready"}))
                vals = json.loads(body).get("data", [])
                if "127.0.0.1:%d" % port not in vals:
                    fail("%s: instance values %s" % (where, vals))
                continue
            q = e.replace("$__rate_interval", "30s").replace("$instance", ".*")
            j = query(q)
            res = j.get("data", {}).get("result", []) if j.get("status") == "success" else None
            names, _ = words(e)
            if res is None:
                fail("%s: prometheus refused %s: %s" % (where, q, j.get("error", j)))
            elif names & GPU_ONLY:
                if res:
                    fail("%s: a GPU-only series on a CPU server: %s" % (where, res))
            elif not res:
                fail("%s: no result for %s" % (where, q))
            elif not any(math.isfinite(float(r["value"][1])) for r in res):
                fail("%s: no finite value for %s: %s" % (where, q, res))
        print("(b) %d expressions queried in prometheus" % len(exprs), flush=True)
    finally:
        for p in (prom, server):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
        if server and server.returncode != 0:
            fail("hymt serve exited %s after SIGTERM" % server.returncode)
        shutil.rmtree(tmp, ignore_errors=True)
    print("grafana_test: %d expressions, %d failures" % (len(exprs), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
