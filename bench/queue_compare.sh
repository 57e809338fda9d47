#!/bin/sh
# queue_compare.sh MODEL: the Redis queue's cost and its scaling (issue 16 item 7), with
# bench/serve_load (whole responses, greedy, ignore_eos) at each CLIENTS count:
#   - `hymt serve -m MODEL` alone (skip with ALONE=0);
#   - for each count in WORKERS: `hymt serve --queue` (a front end) + that many
#     `hymt worker`s, on a redis-server started here on a free port in a temporary folder.
# One table: requests/s, completion tok/s, latency p50/p99 of each, and each queued row's
# requests/s as a share of serve alone's (or, without it, of the first WORKERS count).
#   GPU (one worker through the queue against serve alone):
#     BUILD=1 B=build-gpu PRESET=7b sh bench/queue_compare.sh /tmp/hy7b | tee queue_compare.md
#   CPU (three workers against one):
#     DEVICE=cpu WORKERS="1 3" ALONE=0 THREADS=1 sh bench/queue_compare.sh MODEL
# Environment: DEVICE (cuda; a worker i gets cuda:i, the lone server cuda:0), WORKERS ("1"),
# CLIENTS ("64 256"), PROMPT (130 tokens), GEN (32 new), DURATION (30 s per run, after 3 s
# of warm-up), THREADS (CPU threads per process; default: the backend's), SERVE_ARGS (extra
# engine flags for serve alone and for every worker), WORKER_ARGS (extra flags for every
# worker only, e.g. "--share-wait 0" for the greedy take of before the fair share), HYMT (build/hymt), LOAD
# (build/bench/serve_load), REDIS (redis-server), BUILD=1 (configure and build $B here:
# CUDA when DEVICE=cuda), PRESET (make MODEL with `hymt make-test-model --preset PRESET`
# when it does not exist, e.g. 7b).
# Without redis-server / libhiredis (the GPU machine): put Debian 12's libhiredis0.14,
# libhiredis-dev, redis-server, redis-tools, liblzf1 and libjemalloc2 .deb files into
# .gpudeps/ (carried with the device call); they are unpacked into /tmp/queuedeps and used
# from there (build with B=... and BUILD=1 to have this script build hymt against them).
set -u
MODEL=${1:?usage: queue_compare.sh MODEL}
DEVICE=${DEVICE:-cuda}
WORKERS=${WORKERS:-1}
CLIENTS=${CLIENTS:-64 256}
PROMPT=${PROMPT:-130}
GEN=${GEN:-32}
DURATION=${DURATION:-30}
ALONE=${ALONE:-1}
B=${B:-build}
HYMT=${HYMT:-$B/hymt}
LOAD=${LOAD:-$B/bench/serve_load}
REDIS=${REDIS:-redis-server}
export NO_PROXY='*' no_proxy='*'
TMP=$(mktemp -d /tmp/hymt-queue-compare-XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

if { ! command -v "$REDIS" >/dev/null || ! pkg-config --exists hiredis; } && ls .gpudeps/*hiredis*.deb >/dev/null 2>&1; then
    D=/tmp/queuedeps
    mkdir -p $D
    for f in .gpudeps/*hiredis*.deb .gpudeps/redis-*.deb .gpudeps/liblzf1*.deb .gpudeps/libjemalloc2*.deb; do
        [ -f "$f" ] && dpkg -x "$f" $D
    done
    L=$D/usr/lib/x86_64-linux-gnu
    sed -i "s|^prefix=.*|prefix=$D/usr|" $L/pkgconfig/hiredis.pc
    export PATH="$D/usr/bin:$PATH" LD_LIBRARY_PATH="$L:${LD_LIBRARY_PATH:-}"
    export PKG_CONFIG_PATH="$L/pkgconfig:${PKG_CONFIG_PATH:-}" CPATH="$D/usr/include:${CPATH:-}"
    export LIBRARY_PATH="$L:${LIBRARY_PATH:-}"
    echo "# redis and hiredis from .gpudeps ($(pkg-config --modversion hiredis))" >&2
fi
if [ "${BUILD:-0}" = 1 ]; then
    cuda=OFF
    [ "$DEVICE" = cuda ] && cuda=ON
    { cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DHYMT_CUDA=$cuda -DCMAKE_CUDA_ARCHITECTURES=90 &&
        cmake --build "$B" -j "$(nproc)" --target hymt serve_load; } >"$TMP/build.log" 2>&1 ||
        { tail -20 "$TMP/build.log" >&2; exit 1; }
fi
[ -x "$HYMT" ] && [ -x "$LOAD" ] || { echo "queue_compare: build hymt and serve_load first ($HYMT, $LOAD)" >&2; exit 1; }
if [ ! -e "$MODEL" ] && [ -n "${PRESET:-}" ]; then # random weights with a preset's shapes
    "$HYMT" make-test-model --out "$MODEL" --preset "$PRESET" >"$TMP/make.log" 2>&1 ||
        { tail -5 "$TMP/make.log" >&2; exit 1; }
fi
"$HYMT" worker --help 2>&1 | grep -q "built without" && { echo "queue_compare: $HYMT was built without libhiredis-dev" >&2; exit 1; }
command -v "$REDIS" >/dev/null || { echo "queue_compare: no redis-server (see the header)" >&2; exit 1; }
if [ ! -f "$MODEL/tokenizer.json" ] && [ -d "$MODEL" ]; then
    cp tests/data/tiny-mqa/tokenizer.json tests/data/tiny-mqa/tokenizer_config.json "$MODEL/"
    echo "queue_compare: $MODEL had no tokenizer: using the test tokenizer" >&2
fi
maxc=0
for c in $CLIENTS; do [ "$c" -gt $maxc ] && maxc=$c; done
ENGINE="--max-running $maxc --max-queue $((maxc * 4)) ${SERVE_ARGS:-}"
[ -n "${THREADS:-}" ] && ENGINE="$ENGINE --threads $THREADS"
free_port() { python3 -c "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1])"; }
# wait_ready URL PID LOG: up to 10 minutes for a 200
wait_ready() {
    i=0
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ]; do
        i=$((i + 1))
        if [ $i -gt 1200 ] || ! kill -0 "$2" 2>/dev/null; then
            echo "queue_compare: not ready: $1" >&2; tail -20 "$3" >&2; return 1
        fi
        sleep 0.5
    done
}
stop_all() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    pids=""
}
load() { # load NAME URL ARGS...: serve_load's CSV row into $TMP/NAME.csv
    name=$1 url=$2; shift 2
    "$LOAD" --url "$url" --duration "$DURATION" --warmup 3 --csv --prompt-tokens "$PROMPT" \
        --gen-tokens "$GEN" "$@" >"$TMP/$name.out" 2>&1 || true
    tail -1 "$TMP/$name.out" >"$TMP/$name.csv"
}
col() { cut -d, -f"$2" "$TMP/$1.csv" 2>/dev/null || echo -; }
dev_of() { # dev_of I: the --device of process I
    if [ "$DEVICE" = cuda ]; then echo "cuda:$1"; else echo "$DEVICE"; fi
}

echo "# queue_compare: $MODEL on $DEVICE, $(date -u '+%Y-%m-%d %H:%M UTC'), hymt $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sed 's/^/# GPU: /' || true
echo "# $(nproc) CPUs, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $DURATION s per run after 3 s of warm-up; prompts of $PROMPT tokens, $GEN new (greedy, ignore_eos); engine flags: $ENGINE; worker flags: ${WORKER_ARGS:-none}"

if [ "$ALONE" = 1 ]; then
    port=$(free_port)
    d=$(dev_of 0)
    [ "$DEVICE" = cuda ] && d=cuda
    CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} "$HYMT" serve -m "$MODEL" --port "$port" --device "$d" $ENGINE 2>"$TMP/alone.log" &
    pids="$pids $!"
    wait_ready "http://127.0.0.1:$port/ready" $! "$TMP/alone.log" || exit 1
    for c in $CLIENTS; do load "alone-$c" "http://127.0.0.1:$port" --clients "$c"; done
    stop_all
fi
for w in $WORKERS; do
    rport=$(free_port)
    (cd "$TMP" && exec "$REDIS" --port "$rport" --bind 127.0.0.1 --save '' --appendonly no) >"$TMP/redis.log" 2>&1 &
    pids="$pids $!"
    sleep 0.5
    url=redis://127.0.0.1:$rport/0
    i=0
    while [ $i -lt "$w" ]; do
        "$HYMT" worker -m "$MODEL" --queue "$url" --device "$(dev_of $i)" --port 0 $ENGINE ${WORKER_ARGS:-} 2>"$TMP/worker$i.log" &
        pids="$pids $!"
        i=$((i + 1))
    done
    port=$(free_port)
    "$HYMT" serve -m "$MODEL" --queue "$url" --port "$port" --max-queue $((maxc * 4)) 2>"$TMP/front.log" &
    fpid=$!
    pids="$pids $fpid"
    wait_ready "http://127.0.0.1:$port/ready" $fpid "$TMP/front.log" || exit 1
    i=0 # every worker ready (heartbeats), so no run starts on fewer
    until [ "$(curl -s "http://127.0.0.1:$port/metrics" | awk '$1 == "hymt_queue_workers" { print $2 }')" = "$w" ]; do
        i=$((i + 1)); [ $i -gt 1200 ] && { echo "queue_compare: $w workers never all ready" >&2; tail -5 "$TMP"/worker*.log >&2; exit 1; }
        sleep 0.5
    done
    for c in $CLIENTS; do load "q$w-$c" "http://127.0.0.1:$port" --clients "$c"; done
    stop_all
done

echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| clients | setup | requests/s | completion tok/s | p50 ms | p99 ms | requests/s vs base | errors |"
echo "|---|---|---|---|---|---|---|---|"
for c in $CLIENTS; do
    base=""
    [ "$ALONE" = 1 ] && base="alone-$c"
    if [ "$ALONE" = 1 ]; then
        echo "| $c | hymt serve alone | $(col "$base" 7) | $(col "$base" 8) | $(col "$base" 11) | $(col "$base" 13) | 100% | $(col "$base" 14) |"
    fi
    for w in $WORKERS; do
        [ -z "$base" ] && base="q$w-$c"
        r=$(awk -v a="$(col "q$w-$c" 7)" -v b="$(col "$base" 7)" 'BEGIN { if (b > 0) printf "%.0f%%", 100 * a / b; else print "-" }')
        echo "| $c | front + $w worker(s) via Redis | $(col "q$w-$c" 7) | $(col "q$w-$c" 8) | $(col "q$w-$c" 11) | $(col "q$w-$c" 13) | $r | $(col "q$w-$c" 14) |"
    done
done
