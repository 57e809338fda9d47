#!/bin/sh
# queue_test.sh HYMT DATA_DIR SRC_DIR [--long]: the Redis queue end to end on the tiny
# checkpoint (CPU): a real redis-server (Debian's) on a random port in a temporary folder,
# never the system one; a front end (`hymt serve --queue`) and three workers.
#  1. N greedy requests (completions, chat, translations; plain and streamed) give exactly
#     the answers of one `hymt serve` (N = 300 in CI, 100 with --quick (the ASan build),
#     2,000 with --long); a document (POST /v1/documents) and `hymt translate --queue` too
#  2. kill -9 of a worker in the middle of 200 streaming requests (100 with --quick): every client gets one
#     complete answer, equal to the reference (no loss, no duplicate, no mix); the dead
#     worker's jobs are reclaimed
#  3. a worker that comes back late (SIGSTOP past --claim-idle, then SIGCONT): no
#     duplicates; its writes are refused ("no longer ours")
#  4. Redis restarted in the middle of a load: 200s or 503s, never a hang; the system
#     recovers by itself
#  5. cancellation reaches the worker (its engine counts the request cancelled); deadlines
#     (no worker: 504; a worker started later answers the expired job without running it);
#     Redis unreachable at start: a clear error, exit 1
#  6. the fair share: 30 jobs that appear at once spread 10/10/10 over three workers, not
#     to the first that reads
HYMT=$1
DATA=$2
SRC=$3
LONG=0 QUICK=0
[ "${4:-}" = "--long" ] && LONG=1
[ "${4:-}" = "--quick" ] && QUICK=1 # the sanitizer build: fewer requests of each kind
# sizes: N (phase 1), streams, document lines, kill-phase streams, late-phase streams
S_N=300 S_STREAM=100 S_DOC=60 S_KILL=200 S_LATE=60 S_REDIS=400 T_KILL=80:200 T_LATE=300:400
[ $QUICK = 1 ] && S_N=100 S_STREAM=40 S_DOC=24 S_KILL=100 S_LATE=30 S_REDIS=200 T_KILL=60:120 T_LATE=150:200
export NO_PROXY='*' no_proxy='*'
command -v redis-server >/dev/null || { echo "SKIP: redis-server not installed (scripts/deps.sh --test)"; exit 77; }
"$HYMT" worker --help 2>&1 | grep -q "built without" && { echo "SKIP: hymt built without libhiredis-dev"; exit 77; }
TMP=$(mktemp -d /tmp/hymt-queue-XXXXXX)
pids=""
# mine PID: a live child of this script (a number that died and was given to another
# process since is left alone)
mine() { [ "$(cut -d' ' -f4 "/proc/$1/stat" 2>/dev/null)" = $$ ]; }
cleanup() {
    for p in $pids; do mine "$p" && kill -9 "$p" 2>/dev/null; done
    [ -n "${REDIS_PID:-}" ] && mine "$REDIS_PID" && kill -9 "$REDIS_PID" 2>/dev/null
    [ -n "${KEEP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
fails=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }
T0=$(date +%s)
phase() { echo "-- $1 ($(($(date +%s) - T0)) s)"; }
M=$DATA/tiny-mqa
LOAD="python3 $SRC/tests/queue/load.py"

free_port() { python3 -c "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1])"; }
redis_up() {
    (cd "$TMP" && exec redis-server --port "$RPORT" --bind 127.0.0.1 --dir "$TMP" --save '' \
        --appendonly no >>"$TMP/redis.log" 2>&1) &
    REDIS_PID=$!
    i=0
    until redis-cli -p "$RPORT" ping >/dev/null 2>&1; do
        i=$((i + 1)); [ $i -gt 100 ] && { echo "FAIL: redis-server did not start"; cat "$TMP/redis.log"; exit 1; }
        sleep 0.05
    done
}
# wait_log FILE PATTERN PID: until the log has the line (or the process died)
wait_log() {
    i=0
    while ! grep -q "$2" "$1"; do
        i=$((i + 1))
        if [ $i -gt 400 ] || ! kill -0 "$3" 2>/dev/null; then echo "FAIL: $1 never said '$2'"; cat "$1"; exit 1; fi
        sleep 0.05
    done
}
# worker NAME [args]: starts a worker; its pid in W_NAME
worker() {
    n=$1; shift
    : >"$TMP/$n.log"
    "$HYMT" worker -m "$M" --queue "$URL" --threads 1 --claim-idle 1 --port 0 "$@" >"$TMP/$n.log" 2>&1 &
    eval "W_$n=$!"
    pids="$pids $!"
    wait_log "$TMP/$n.log" "worker: ready" $!
}
front() {
    : >"$TMP/front.log" # now, not in the child: the last front end's "ready" must be gone
    "$HYMT" serve -m "$M" --queue "$URL" --port 0 "$@" >"$TMP/front.log" 2>&1 &
    FRONT=$!
    pids="$pids $FRONT"
    wait_log "$TMP/front.log" "serve: ready" $FRONT
    FPORT=$(sed -n 's|.*serve: ready: .*:\([0-9][0-9]*\)/$|\1|p' "$TMP/front.log")
    F=http://127.0.0.1:$FPORT
}
metric() { curl -s "$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
# wait_metric URL NAME MIN: until the metric is at least MIN (10 s at most; false then)
wait_metric() {
    i=0
    while [ "$(metric "$1" "$2" | cut -d. -f1)" -lt "$3" ] 2>/dev/null || [ -z "$(metric "$1" "$2")" ]; do
        i=$((i + 1)); [ $i -gt 200 ] && return 1
        sleep 0.05
    done
}
wport() { sed -n 's|.*on http://127.0.0.1:\([0-9][0-9]*\)/$|\1|p' "$TMP/$1.log"; }
# same REF GOT WHAT: every answer of GOT is status 200 and equal to REF's
same() {
    python3 - "$1" "$2" "$3" <<'PY' || fail "$3"
import json, sys
ref = [json.loads(l) for l in open(sys.argv[1])]
got = [json.loads(l) for l in open(sys.argv[2])]
bad = [(r["i"], g["status"], g["text"][:80], r["text"][:80]) for r, g in zip(ref, got)
       if g["status"] != 200 or g["text"] != r["text"]]
assert len(ref) == len(got) and all(r["status"] == 200 for r in ref), "reference incomplete"
print("%s: %d/%d answers equal to one hymt serve's" % (sys.argv[3], len(got) - len(bad), len(got)))
for b in bad[:5]:
    print("  request %d: status %s: %r, expected %r" % b)
sys.exit(1 if bad else 0)
PY
}

# ---- Redis unreachable at start: a clear error ----
DEAD=$(free_port)
"$HYMT" serve -m "$M" --queue "redis://127.0.0.1:$DEAD" --port 0 >"$TMP/dead.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "cannot reach redis://127.0.0.1:$DEAD" "$TMP/dead.log" ||
    fail "front end without Redis: exit $rc, $(cat "$TMP/dead.log")"
"$HYMT" worker -m "$M" --queue "redis://127.0.0.1:$DEAD" --threads 1 >"$TMP/dead.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "cannot reach redis" "$TMP/dead.log" || fail "worker without Redis: exit $rc"
"$HYMT" serve -m "$M" --queue "http://x" >"$TMP/dead.log" 2>&1
[ $? != 0 ] && grep -q "expected redis://" "$TMP/dead.log" || fail "a bad --queue URL: $(cat "$TMP/dead.log")"

RPORT=$(free_port)
URL=redis://127.0.0.1:$RPORT/0
redis_up

# ---- deadlines: no worker yet -> 504; the expired job is answered, never run ----
phase "deadlines: no worker yet -> 504; the expired job is answered, never run"
front --timeout 0.3
code=$(curl -s -o "$TMP/dl.body" -w '%{http_code}' "$F/v1/completions" -d '{"prompt":"a","max_tokens":5}')
[ "$code" = 504 ] || fail "deadline without a worker: HTTP $code $(cat "$TMP/dl.body")"
kill "$FRONT"; wait "$FRONT" 2>/dev/null
front
# the 504's job was marked cancelled by the front end; one more job, written by hand with a
# deadline in the past and no cancel mark, and a malformed one: neither may run
python3 "$SRC/tests/queue/inject.py" "$RPORT" expired malformed || fail "cannot inject jobs"
worker a
WA=http://127.0.0.1:$(wport a)
wait_metric "$WA" 'hymt_worker_jobs_total{event="expired"}' 1 || fail "the expired job was not answered as expired"
wait_metric "$WA" 'hymt_worker_jobs_total{event="cancelled"}' 1 || fail "the 504's job was not answered as cancelled"
wait_metric "$WA" 'hymt_worker_jobs_total{event="malformed"}' 1 || fail "the malformed job was not dropped"
[ "$(metric "$WA" hymt_engine_generated_tokens_total)" = 0 ] || fail "an expired or cancelled job ran"
python3 "$SRC/tests/queue/inject.py" "$RPORT" check-expired || fail "the expired job's answer is not 'timeout'"
worker b
worker c
wait_metric "$F" hymt_queue_workers 3 || fail "workers: $(metric "$F" hymt_queue_workers), expected 3"

# ---- the reference: one hymt serve ----
phase "the reference: one hymt serve"
"$HYMT" serve -m "$M" --port 0 --threads 1 >"$TMP/local.log" 2>&1 &
LOCAL=$!
pids="$pids $LOCAL"
wait_log "$TMP/local.log" "serve: ready" $LOCAL
L=http://127.0.0.1:$(sed -n 's|.*serve: ready: .*:\([0-9][0-9]*\)/$|\1|p' "$TMP/local.log")

# ---- 1. the same greedy outputs ----
phase "1. the same greedy outputs"
N=$S_N
[ $LONG = 1 ] && N=2000
$LOAD "$L" $N 7 16 >"$TMP/ref.jsonl"
$LOAD "$F" $N 7 16 >"$TMP/got.jsonl"
same "$TMP/ref.jsonl" "$TMP/got.jsonl" "$N requests through 3 workers"
$LOAD "$L" $S_STREAM 8 16 --stream >"$TMP/ref_s.jsonl"
$LOAD "$F" $S_STREAM 8 16 --stream >"$TMP/got_s.jsonl"
same "$TMP/ref_s.jsonl" "$TMP/got_s.jsonl" "$S_STREAM streamed requests through 3 workers"
for w in a b c; do
    t=$(metric "http://127.0.0.1:$(wport $w)" 'hymt_worker_jobs_total{event="completed"}')
    echo "worker $w completed $t jobs"
    [ "${t:-0}" -gt 0 ] || fail "worker $w took no job"
done

# ---- documents as jobs: POST /v1/documents, GET /v1/documents/ID; hymt translate --queue ----
phase "documents"
python3 -c "
import json
t = '\n'.join('Line %d of the document, with a few words.' % i for i in range($S_DOC))
print(json.dumps({'text': t, 'target_lang': 'de', 'temperature': 0, 'keep_lines': True}))" >"$TMP/doc.json"
for w in a b c; do eval "d0_$w=$(metric "http://127.0.0.1:$(wport $w)" 'hymt_worker_jobs_total{event="completed"}')"; done
# doc_run BASE OUT: POST the document, poll GET until it is done, the last answer into OUT
doc_run() {
    code=$(curl -s "$1/v1/documents" -d @"$TMP/doc.json" -o "$TMP/doc.post" -w '%{http_code}')
    [ "$code" = 202 ] || { fail "POST /v1/documents on $1: HTTP $code"; return; }
    id=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['id'])" "$TMP/doc.post")
    i=0
    until curl -s "$1/v1/documents/$id" >"$2" && grep -q '"status":"done"' "$2"; do
        i=$((i + 1)); [ $i -gt 300 ] && { fail "the document never finished: $(cut -c1-300 "$2")"; break; }
        sleep 0.1
    done
}
doc_run "$F" "$TMP/doc.get"
doc_run "$L" "$TMP/doc.ref"
python3 - "$TMP/doc.get" "$TMP/doc.ref" $S_DOC <<'PY' || fail "the document's translation differs from one hymt serve's"
import json, sys
g, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("document: %d/%d segments, %d failed" % (g["segments_done"], g["segments_total"], g["segments_failed"]))
sys.exit(0 if g["translation"] == r["translation"] and g["segments_total"] == r["segments_total"] == int(sys.argv[3]) else 1)
PY
used=0
for w in a b c; do
    eval "d0=\$d0_$w"
    [ "$(metric "http://127.0.0.1:$(wport $w)" 'hymt_worker_jobs_total{event="completed"}')" -gt "$d0" ] && used=$((used + 1))
done
echo "document: its segments ran on $used of 3 workers"
[ $used -ge 2 ] || fail "the document's segments did not spread over the workers"
code=$(curl -s -o /dev/null -w '%{http_code}' "$F/v1/documents/doc-000000000000000000000000")
[ "$code" = 404 ] || fail "an unknown document: HTTP $code"
python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['text'])" "$TMP/doc.json" >"$TMP/doc.txt"
"$HYMT" translate -m "$M" --to de --greedy --queue "$URL" "$TMP/doc.txt" >"$TMP/tq.out" 2>"$TMP/tq.err" || fail "translate --queue: $(tail -2 "$TMP/tq.err")"
"$HYMT" translate -m "$M" --to de --greedy --threads 1 "$TMP/doc.txt" >"$TMP/tl.out" 2>/dev/null
cmp -s "$TMP/tq.out" "$TMP/tl.out" || fail "hymt translate --queue differs from hymt translate"

# ---- 5b. cancellation reaches the worker ----
phase "5b. cancellation reaches the worker"
c0=0
for w in a b c; do c0=$((c0 + $(metric "http://127.0.0.1:$(wport $w)" 'hymt_engine_finished_total{reason="cancelled"}'))); done
curl -sN --max-time 0.5 "$F/v1/completions" -d '{"prompt":"a","max_tokens":4000,"ignore_eos":true,"stream":true}' >/dev/null 2>&1
i=0; c1=$c0
while [ $c1 = $c0 ] && [ $i -lt 60 ]; do
    sleep 0.05; i=$((i + 1)); c1=0
    for w in a b c; do c1=$((c1 + $(metric "http://127.0.0.1:$(wport $w)" 'hymt_engine_finished_total{reason="cancelled"}'))); done
done
[ $c1 -gt $c0 ] || fail "a client that went away: no worker cancelled its job"

# ---- 2. kill -9 of a worker in the middle of 200 streaming requests ----
phase "2. kill -9 of a worker in the middle of 200 streaming requests"
$LOAD "$L" $S_KILL 9 24 --stream --kinds completions,chat --max-tokens $T_KILL >"$TMP/ref_k.jsonl"
$LOAD "$F" $S_KILL 9 24 --stream --kinds completions,chat --max-tokens $T_KILL --timeout 60 >"$TMP/got_k.jsonl" &
LP=$!
wait_metric "http://127.0.0.1:$(wport b)" hymt_worker_jobs_running 2 || fail "worker b never held 2 jobs"
kill -9 "$W_b"
wait $LP
same "$TMP/ref_k.jsonl" "$TMP/got_k.jsonl" "$S_KILL streams, a worker killed (kill -9) during them"
r=$(metric "$F" hymt_queue_reclaimed_total)
echo "reclaimed after kill -9: $r"
[ "${r:-0}" -ge 1 ] || fail "no job was reclaimed from the killed worker"
worker b

# ---- 3. a worker that comes back late ----
phase "3. a worker that comes back late"
$LOAD "$L" $S_LATE 10 24 --stream --kinds completions --max-tokens $T_LATE >"$TMP/ref_l.jsonl"
$LOAD "$F" $S_LATE 10 24 --stream --kinds completions --max-tokens $T_LATE --timeout 60 >"$TMP/got_l.jsonl" &
LP=$!
wait_metric "http://127.0.0.1:$(wport c)" hymt_worker_jobs_running 2 || fail "worker c never held 2 jobs"
kill -STOP "$W_c"
sleep 2.5 # past --claim-idle: the others take its jobs over
kill -CONT "$W_c"
wait $LP
same "$TMP/ref_l.jsonl" "$TMP/got_l.jsonl" "$S_LATE streams, a worker stopped past --claim-idle and resumed"
i=0
while ! grep -q "no longer ours" "$TMP/c.log" && [ $i -lt 40 ]; do sleep 0.05; i=$((i + 1)); done
grep -q "no longer ours" "$TMP/c.log" || fail "the resumed worker's writes were not refused"

# ---- 4. Redis restarted in the middle ----
phase "4. Redis restarted in the middle"
done0=$(metric "$F" 'hymt_queue_jobs_total{outcome="length"}')
$LOAD "$F" $S_REDIS 11 8 --timeout 20 --kinds completions,chat --max-tokens 20:60 >"$TMP/got_r.jsonl" &
LP=$!
wait_metric "$F" 'hymt_queue_jobs_total{outcome="length"}' $((done0 + 40)) || fail "the load did not start"
kill -9 "$REDIS_PID"
sleep 1
redis_up
wait $LP
python3 - "$TMP/got_r.jsonl" <<'PY' || fail "Redis restart: a request hung or got another error"
import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]
st = {}
for g in got:
    st[g["status"]] = st.get(g["status"], 0) + 1
print("Redis restart: statuses %s, slowest %.2f s" % (st, max(g["s"] for g in got)))
sys.exit(0 if set(st) <= {200, 503} and st.get(200, 0) >= 40 else 1)
PY
# recovers by itself: workers re-create the group, the front end reconnects
i=0
until [ "$(curl -s -o /dev/null -w '%{http_code}' "$F/v1/completions" -d '{"prompt":"a","max_tokens":3}')" = 200 ] || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ $i -le 100 ] || fail "after the Redis restart the system did not recover in 10 s"
$LOAD "$L" 50 12 8 >"$TMP/ref_a.jsonl"
$LOAD "$F" 50 12 8 >"$TMP/got_a.jsonl"
same "$TMP/ref_a.jsonl" "$TMP/got_a.jsonl" "50 requests after the Redis restart"

# ---- 6. the fair share: jobs that come at once spread over the workers ----
# Three fresh workers, blocked waiting, see 30 long jobs appear at once (MULTI/EXEC). Each
# takes one, then no more than its share: ceil(30 in flight / 3 live workers) = 10. Bounds
# 7..13: a worker that reads late, after another's jobs finished, gets a smaller share (the
# jobs of 400 tokens make that unlikely). A greedy take (--share-wait 0) gives 20/10/0.
# --share-wait 10000 keeps the over-share take (after 20 ms by default) out of the count.
phase "6. the fair share: 30 jobs at once over three workers"
for w in a b c; do
    eval "p=\$W_$w"
    kill "$p"; wait "$p" 2>/dev/null
done
for w in x y z; do worker $w --share-wait 10000 --jobs 20; done
i=0
until [ "$(metric "$F" hymt_queue_workers)" = 3 ] || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(metric "$F" hymt_queue_workers)" = 3 ] || fail "workers x y z: $(metric "$F" hymt_queue_workers) live, expected 3"
python3 "$SRC/tests/queue/inject.py" "$RPORT" burst:30 || fail "cannot inject 30 jobs"
i=0
while [ $i -lt 600 ]; do
    n=0
    for w in x y z; do
        n=$((n + $(metric "http://127.0.0.1:$(wport $w)" 'hymt_worker_jobs_total{event="completed"}')))
    done
    [ $n -ge 30 ] && break
    sleep 0.1; i=$((i + 1))
done
[ $n = 30 ] || fail "the burst: $n of 30 jobs completed"
took=""
for w in x y z; do
    t=$(metric "http://127.0.0.1:$(wport $w)" 'hymt_worker_jobs_total{event="taken"}')
    took="$took $t"
    [ "${t:-0}" -ge 7 ] && [ "${t:-0}" -le 13 ] || fail "worker $w took ${t:-0} of 30 jobs, not its share (7..13)"
done
echo "the burst of 30 jobs: the workers took$took"

for f in front a b c x y z; do
    grep -E "AddressSanitizer|runtime error" "$TMP/$f.log" && fail "$f: sanitizer report"
done
phase "done"
if [ $fails -gt 0 ]; then
    echo "queue_test: $fails failure(s)"; tail -5 "$TMP/front.log"; exit 1
fi
echo "queue_test: all passed"
