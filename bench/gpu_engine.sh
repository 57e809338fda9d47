#!/bin/sh
# gpu_engine.sh: the engine on CUDA, on the GPU machine, in one go: build (sm_90),
# `ctest -L cuda`, a document translated on the tiny checkpoint with --device cuda, then
# `hymt bench --device cuda` on the 7b preset (random weights, written to /tmp, never
# committed). Needs .gpudeps carried (see bench/gpu.sh). Logs under $OUT.
set -u
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
STAGES="build test" OUT=$OUT sh bench/gpu.sh >"$OUT/gpu.log" 2>&1
tail -3 "$OUT/summary.txt"
B=build-gpu
[ -d /tmp/gpudeps ] && export LD_LIBRARY_PATH="/tmp/gpudeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
printf 'The first paragraph. It has two sentences.\n\n今天天气很好。我们去公园吧！\n' >/tmp/doc.txt
$B/hymt translate -m tests/data/tiny-mqa --to de --device cuda --greedy --max-new-tokens 8 /tmp/doc.txt \
    >"$OUT/tr.txt" 2>"$OUT/tr.err"; echo "translate --device cuda: exit $?: $(tail -1 "$OUT/tr.err")"
t0=$(date +%s)
$B/hymt -q make-test-model --out /tmp/hy7b --preset 7b >/dev/null && echo "7b preset written in $(( $(date +%s) - t0 )) s"
$B/hymt bench -m /tmp/hy7b --device cuda --batch 1,8,64 --prompt-len 64 --gen-len 64 \
    --kv-memory 16G 2>&1 | tee "$OUT/bench7b.txt"
$B/hymt bench -m /tmp/hy7b --device cuda --batch 1 --prompt-len 512 --gen-len 16 \
    --kv-memory 8G 2>&1 | tail -1 | tee -a "$OUT/bench7b.txt"
