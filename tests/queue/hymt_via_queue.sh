#!/bin/sh
# hymt_via_queue.sh HYMT: stands in for hymt in tests written for one process
# (tests/server/server_test.sh). `serve -m MODEL ARGS...` becomes a redis-server on a free
# port in a temporary folder, three `hymt worker`s (with ARGS' engine and thread flags) and
# a front end `hymt serve --queue ... ARGS...` in this process (exec: its pid, its signals,
# its log on stderr); everything else goes to HYMT as is. The helpers go away when the front
# end does.
HYMT=${HYMT_REAL:?set HYMT_REAL to the hymt binary}
[ "${1:-}" = serve ] || exec "$HYMT" "$@"
shift
model="" eng=""
prev=""
for a in "$@"; do
    case $prev in
    -m | --model) model=$a ;;
    --max-running | --max-batch-tokens | --kv-memory | --threads | -t) eng="$eng $prev $a" ;;
    esac
    prev=$a
done
T=$(mktemp -d /tmp/hymt-via-queue-XXXXXX)
port=$(python3 -c "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1])")
(cd "$T" && exec redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no) >"$T/redis.log" 2>&1 &
helpers=$!
i=0
until redis-cli -p "$port" ping >/dev/null 2>&1; do i=$((i + 1)); [ $i -gt 100 ] && exit 1; sleep 0.05; done
for w in 1 2 3; do
    # shellcheck disable=SC2086
    "$HYMT" worker -m "$model" --queue "redis://127.0.0.1:$port" --claim-idle 5 $eng >"$T/worker$w.log" 2>&1 &
    helpers="$helpers $!"
done
me=$$
# ours PID: still one of this run's helpers (its command line names our port), not a
# process that got the number since
ours() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qE -- "(:|--port )$port( |/|$)"; }
(
    while kill -0 $me 2>/dev/null; do sleep 0.2; done
    for p in $helpers; do ours "$p" && kill "$p"; done
    sleep 1
    for p in $helpers; do ours "$p" && kill -9 "$p"; done
    rm -rf "$T"
) </dev/null >/dev/null 2>&1 &
i=0 # the front end is ready for the tests only once the workers heartbeat
until [ "$(redis-cli -p "$port" zcard hymt:workers 2>/dev/null)" = 3 ]; do
    i=$((i + 1)); [ $i -gt 600 ] && { echo "hymt_via_queue: the workers did not start" >&2; cat "$T"/worker*.log >&2; exit 1; }
    sleep 0.05
done
exec "$HYMT" serve --queue "redis://127.0.0.1:$port" "$@"
