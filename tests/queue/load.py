#!/usr/bin/env python3
"""load.py BASE N SEED CONC [--stream] [--timeout S] [--kinds K,...] [--max-tokens A:B]:
N greedy requests (a deterministic mix from SEED: /v1/completions, /v1/chat/completions,
/api/translate; streamed with --stream) against BASE with CONC at a time. Prints one JSON
line per request, in order: {"i", "status", "text", "s"} (text: the whole answer, a stream's
deltas joined; s: seconds). A request that takes longer than --timeout is status -1 (a
hang: the caller fails on it). Standard library only."""
import concurrent.futures
import http.client
import json
import random
import sys
import time
import urllib.parse

WORDS = ("the cat sat on a mat while rain fell over quiet hills and old roads led home "
         "before night came with stars bright cold wind").split()


def make(i, seed, kinds, lo, hi):
    r = random.Random(seed * 1000003 + i)
    kind = kinds[r.randrange(len(kinds))]
    words = " ".join(r.choice(WORDS) for _ in range(r.randint(1, 12)))
    n = r.randint(lo, hi)
    if kind == "completions":
        return "/v1/completions", {"prompt": words, "max_tokens": n, "temperature": 0}
    if kind == "chat":
        return "/v1/chat/completions", {"messages": [{"role": "user", "content": words}],
                                        "max_tokens": n, "temperature": 0}
    text = ". ".join(words.split(" ", 3)) + "."
    return "/api/translate", {"text": text, "target_lang": r.choice(["de", "fr", "zh"]),
                              "temperature": 0, "max_tokens": n}


def one(base, i, seed, stream, timeout, kinds, lo, hi):
    path, body = make(i, seed, kinds, lo, hi)
    if stream:
        body["stream"] = True
    u = urllib.parse.urlparse(base)
    t0 = time.time()
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read().decode("utf-8", "replace")
        c.close()
    except Exception as e:  # a timeout is a hang
        return {"i": i, "status": -1, "text": repr(e), "s": time.time() - t0}
    if r.status != 200:
        return {"i": i, "status": r.status, "text": data[:300], "s": time.time() - t0}
    return {"i": i, "status": 200, "text": answer(path, data, stream), "s": time.time() - t0}


def answer(path, data, stream):
    if not stream:
        j = json.loads(data)
        if path == "/api/translate":
            return j["translation"]
        c = j["choices"][0]
        return c["text"] if "text" in c else c["message"]["content"]
    out, done, err = [], False, None
    for line in data.split("\n"):
        if not line.startswith("data: "):
            continue
        p = line[6:]
        if p == "[DONE]":
            done = True
            continue
        j = json.loads(p)
        if "error" in j or j.get("type") == "error":
            err = j
        elif path == "/api/translate":
            if j.get("type") == "delta":
                out.append(j["delta"])
            elif j.get("type") == "done":
                done = True
        else:
            c = j["choices"][0]
            out.append(c.get("text") or c.get("delta", {}).get("content") or "")
    if err or not done:
        return "STREAM-INCOMPLETE %s" % json.dumps(err)
    return "".join(out)


def main():
    a = sys.argv[1:]
    base, n, seed, conc = a[0], int(a[1]), int(a[2]), int(a[3])
    stream = "--stream" in a
    timeout = float(a[a.index("--timeout") + 1]) if "--timeout" in a else 60.0
    kinds = a[a.index("--kinds") + 1].split(",") if "--kinds" in a else \
        ["completions", "chat", "translate"]
    lo, hi = (int(x) for x in (a[a.index("--max-tokens") + 1] if "--max-tokens" in a
                               else "1:48").split(":"))
    with concurrent.futures.ThreadPoolExecutor(conc) as ex:
        res = list(ex.map(lambda i: one(base, i, seed, stream, timeout, kinds, lo, hi),
                          range(n)))
    for r in res:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
