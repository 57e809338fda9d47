#!/bin/sh
# http_layer.sh OLD_HYMT NEW_HYMT [ROUNDS]: the HTTP layer's overhead, two hymt builds on the
# CPU demo model (the tiny random-weight checkpoint: engine steps of a few ms, so the front
# shows), /v1/completions with 48-token prompts and 32 new tokens (greedy, ignore_eos) at 64
# and 256 clients, bench/serve_load for DURATION seconds (default 15) each, the two servers
# taking turns for ROUNDS rounds (default 2) so that a noisy machine hits both alike.
# Run from the repository root after `make` (serve_load: build/bench/serve_load):
#   sh bench/http_layer.sh /tmp/old/build/hymt build/hymt
set -eu
OLD=${1:?usage: http_layer.sh OLD_HYMT NEW_HYMT [ROUNDS]}
NEW=${2:?usage: http_layer.sh OLD_HYMT NEW_HYMT [ROUNDS]}
ROUNDS=${3:-2}
DURATION=${DURATION:-15}
LOAD=${LOAD:-build/bench/serve_load}
MODEL=${MODEL:-build/demo-model}
export NO_PROXY='*' no_proxy='*'
[ -f "$MODEL/config.json" ] || make demo-model >/dev/null
TMP=$(mktemp -d /tmp/hymt-http-layer-XXXXXX)
spid=""
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null; rm -rf "$TMP"' EXIT
echo "| round | server | clients | requests/s | p50 ms | p99 ms | errors |"
echo "|---|---|---|---|---|---|---|"
r=1
while [ $r -le "$ROUNDS" ]; do
    for which in old new; do
        bin=$OLD; [ $which = new ] && bin=$NEW
        "$bin" serve -m "$MODEL" --port 0 --threads 1 2>"$TMP/log" &
        spid=$!
        i=0
        until grep -q "serve: ready" "$TMP/log"; do
            sleep 0.1; i=$((i + 1)); [ $i -lt 200 ] || { cat "$TMP/log"; exit 1; }
        done
        port=$(sed -n 's|.*serve: ready: .*:\([0-9][0-9]*\)/$|\1|p' "$TMP/log")
        for c in 64 256; do
            "$LOAD" --url "http://127.0.0.1:$port" --clients $c --prompt-tokens 48 \
                --gen-tokens 32 --duration "$DURATION" --warmup 2 >"$TMP/out" 2>&1 || true
            awk -v r=$r -v w=$which -v c=$c '
                /requests/ && /requests\/s/ { for (i = 1; i <= NF; i++) if ($i == "requests/s") rps = $(i - 1); f = $4 }
                /latency/ { p50 = $3; p99 = $9 }
                END { printf "| %s | %s | %s | %s | %s | %s | %s |\n", r, w, c, rps, p50, p99, f }' "$TMP/out"
        done
        kill -TERM "$spid"; wait "$spid" || true; spid=""
    done
    r=$((r + 1))
done
