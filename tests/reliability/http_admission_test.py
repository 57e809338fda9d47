"""http_admission_test.py HYMT MODEL: one admission rule for every route (issue 12).
A burst of 24 /api/translate and 24 /v1/completions requests at once against one running
sequence and a queue of 2 (--timeout 3 bounds every admitted one): a request is admitted
when the engine takes its first prompt, else 429 at once, whatever the route. So at most
running + queued + a few that finish during the burst get in, and neither route gets in
more than the other beyond that slack. Old server: /api/translate checked a stale queue
snapshot and then waited for room, so nearly every translation got in while the OpenAI
routes got 429."""
import threading

from http_util import Checks, Server, argv, http

hymt, model = argv()
C = Checks("http_admission_test")
S = Server(hymt, model, "--max-running", "1", "--max-queue", "2", "--timeout", "3")
N = 24
codes = {"tr": [], "cmpl": []}
go = threading.Event()


def client(kind, i):
    if kind == "tr":
        path, body = "/api/translate", {"text": "Sentence number %d is here." % i, "tgt": "de",
                                        "max_tokens": 4000}
    else:
        path, body = "/v1/completions", {"prompt": "x%d" % i, "max_tokens": 4000,
                                         "ignore_eos": True}
    go.wait()
    try:
        st, _, _, _ = http(S.port, "POST", path, body, timeout=20)
    except OSError:
        st = None
    codes[kind].append(st)


ts = [threading.Thread(target=client, args=(k, i)) for i in range(N) for k in ("tr", "cmpl")]
for t in ts:
    t.start()
go.set()
for t in ts:
    t.join()
adm = {k: sum(1 for c in v if c != 429) for k, v in codes.items()}
print("admitted: translate %d of %d, completions %d of %d; codes %s" %
      (adm["tr"], N, adm["cmpl"], N, {k: sorted(set(map(str, v))) for k, v in codes.items()}))
C.check(all(c in (200, 429, 504) for v in codes.values() for c in v),
        "only 200, 429 or 504: %s" % codes)
C.check(adm["tr"] + adm["cmpl"] <= 8, "more admitted than the engine holds: %s" % adm)
C.check(abs(adm["tr"] - adm["cmpl"]) <= 4, "admission differs by route: %s" % adm)
C.check(S.stop() == 0, "server exit")
C.done()
