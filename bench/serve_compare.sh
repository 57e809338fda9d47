#!/bin/sh
# serve_compare.sh MODEL [LLAMA_CPP_BUILD] : the served path against the engine alone and
# against llama.cpp, in one table (issue 12's targets). For 48- and 130-token prompts and
# 32 new tokens (greedy, ignore_eos), at 64 and 256 clients:
#   - `hymt bench` with the same lengths and batch = clients (the engine alone);
#   - `hymt serve` + bench/serve_load: whole responses (requests/s, completion tok/s,
#     latency) and streamed (TTFT); the front's share of each whole response's latency
#     (latency minus the engine's submit-to-done time, which hymt sends as Server-Timing):
#     its p50 / p99 is issue 12's "p99 added by the front";
#   - with LLAMA_CPP_BUILD (a llama.cpp build folder holding bin/llama-server): llama-server
#     on MODEL converted to GGUF (bf16, `hymt convert`), one slot per client, all layers on
#     the GPU, the same serve_load runs.
# MODEL without tokenizer.json gets the test tokenizer (tests/data/tiny-mqa), as the issue's
# measurements did. Run from the repository root after `make`:
#   sh bench/serve_compare.sh /tmp/hy7b [~/llama.cpp/build] | tee serve_compare.md
# Environment: DURATION (s per serve_load run, default 30), CLIENTS ("64 256"), PROMPTS
# ("48 130"), GEN (32), HYMT (build/hymt), LOAD (build/bench/serve_load), SERVE_ARGS (extra
# `hymt serve` flags), LLAMA_ARGS (extra llama-server flags), GGUF (a GGUF of MODEL for
# llama-server, instead of converting one to bf16).
set -eu
MODEL=${1:?usage: serve_compare.sh MODEL [LLAMA_CPP_BUILD]}
LLAMA=${2:-}
HYMT=${HYMT:-build/hymt}
LOAD=${LOAD:-build/bench/serve_load}
DURATION=${DURATION:-30}
CLIENTS=${CLIENTS:-64 256}
PROMPTS=${PROMPTS:-48 130}
GEN=${GEN:-32}
PORT=${PORT:-18300}
export NO_PROXY='*' no_proxy='*'
TMP=$(mktemp -d /tmp/hymt-serve-compare-XXXXXX)
spid=""
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

[ -x "$HYMT" ] && [ -x "$LOAD" ] || { echo "serve_compare: run make first ($HYMT, $LOAD)" >&2; exit 1; }
if [ ! -f "$MODEL/tokenizer.json" ]; then
    cp tests/data/tiny-mqa/tokenizer.json tests/data/tiny-mqa/tokenizer_config.json "$MODEL/"
    echo "serve_compare: $MODEL had no tokenizer: using the test tokenizer" >&2
fi
maxc=0
for c in $CLIENTS; do [ "$c" -gt $maxc ] && maxc=$c; done

# wait_ready URL: up to 10 minutes for a server to answer 200; 1 if it never does
wait_ready() {
    i=0
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ]; do
        i=$((i + 1))
        if [ $i -gt 1200 ] || ! kill -0 "$spid" 2>/dev/null; then
            echo "serve_compare: server did not become ready ($1)" >&2; tail -20 "$TMP/server.log" >&2
            return 1
        fi
        sleep 0.5
    done
}
stop_server() { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null || true; spid=""; }
# load NAME URL ARGS...: serve_load's CSV row (without the header) into $TMP/NAME.csv
load() {
    name=$1 url=$2; shift 2
    "$LOAD" --url "$url" --duration "$DURATION" --warmup 3 --csv "$@" >"$TMP/$name.out" 2>&1 || true
    tail -1 "$TMP/$name.out" >"$TMP/$name.csv"
}
col() { cut -d, -f"$2" "$TMP/$1.csv" 2>/dev/null || echo -; } # col NAME FIELD (1-based, serve_load's CSV)

git_rev=${HYMT_REV:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}
echo "# serve_compare: $MODEL, $(date -u '+%Y-%m-%d %H:%M UTC'), hymt $git_rev"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/# GPU: /' || true
echo "# $DURATION s per run after 3 s of warm-up; greedy, ignore_eos, $GEN new tokens"

# ---- the engine alone
for p in $PROMPTS; do
    "$HYMT" bench -m "$MODEL" --batch "$(echo $CLIENTS | tr ' ' ,)" --prompt-len "$p" \
        --gen-len "$GEN" >"$TMP/bench$p.md" 2>"$TMP/bench$p.err" ||
        { cat "$TMP/bench$p.err" >&2; exit 1; }
done
bench_tps() { # bench_tps PROMPT CLIENTS: total gen tok/s of that batch
    awk -F'|' -v b="$2" '$2+0 == b && $2 ~ /[0-9]/ { gsub(/ /, "", $6); print $6 }' "$TMP/bench$1.md"
}

# ---- hymt serve
"$HYMT" serve -m "$MODEL" --port "$PORT" --max-running "$maxc" --max-queue $((maxc * 4)) \
    ${SERVE_ARGS:-} 2>"$TMP/server.log" &
spid=$!
wait_ready "http://127.0.0.1:$PORT/ready" || exit 1
for p in $PROMPTS; do
    for c in $CLIENTS; do
        load "hy$p-$c" "http://127.0.0.1:$PORT" --clients "$c" --prompt-tokens "$p" --gen-tokens "$GEN"
        load "hys$p-$c" "http://127.0.0.1:$PORT" --clients "$c" --prompt-tokens "$p" --gen-tokens "$GEN" --stream
    done
done
stop_server

# ---- llama-server (optional)
if [ -n "$LLAMA" ]; then
    gguf=${GGUF:-$TMP/model.gguf}
    [ -n "${GGUF:-}" ] || "$HYMT" convert -m "$MODEL" -o "$gguf" --type bf16 >&2
    for c in $CLIENTS; do
        # one slot per client; the context holds every slot's prompt and output
        "$LLAMA/bin/llama-server" -m "$gguf" --port $((PORT + 1)) -np "$c" \
            -c $((c * 256)) -ngl 999 -b 2048 -ub 512 ${LLAMA_ARGS:-} >"$TMP/server.log" 2>&1 &
        spid=$!
        # a llama-server that does not start leaves its rows empty, not the whole table
        wait_ready "http://127.0.0.1:$((PORT + 1))/health" || { stop_server; continue; }
        for p in $PROMPTS; do
            load "ll$p-$c" "http://127.0.0.1:$((PORT + 1))" --clients "$c" --prompt-tokens "$p" \
                --gen-tokens "$GEN" --model x
        done
        stop_server
    done
    (cd "$LLAMA" && git rev-parse --short HEAD 2>/dev/null | sed 's/^/# llama.cpp commit: /') || true
fi

echo
echo "| prompt | clients | hymt bench tok/s | serve tok/s | % of bench | serve req/s | p50 ms | p99 ms | engine p99 ms | front p50 / p99 ms | TTFT p50 ms (streamed) | stream tok/s | llama-server req/s | hymt / llama | errors |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for p in $PROMPTS; do
    for c in $CLIENTS; do
        b=$(bench_tps "$p" "$c")
        t=$(col "hy$p-$c" 8)
        pct=$(awk -v a="$t" -v b="$b" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else print "-" }')
        ll="-" ratio="-"
        if [ -n "$LLAMA" ]; then
            ll=$(col "ll$p-$c" 7)
            ratio=$(awk -v a="$(col "hy$p-$c" 7)" -v b="$ll" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "-" }')
        fi
        echo "| $(col "hy$p-$c" 2) | $c | $b | $t | $pct | $(col "hy$p-$c" 7) | $(col "hy$p-$c" 11) | $(col "hy$p-$c" 13) | $(col "hy$p-$c" 15) | $(col "hy$p-$c" 16) / $(col "hy$p-$c" 17) | $(col "hys$p-$c" 9) | $(col "hys$p-$c" 8) | $ll | $ratio | $(col "hy$p-$c" 14) $(col "hys$p-$c" 14) |"
    done
done
