#!/bin/sh
# gpu_profile.sh: per-kernel GPU times of short `hymt bench` runs on the 7b preset, with
# ncu (Nsight Compute, gpu__time_duration per kernel launch, graph nodes included), as CSV
# files in $OUT for bench/ncu_summary.py. Expects $B/hymt and /tmp/hy7b (bench/gpu_table.sh).
# Usage: OUT=$OUT B=/tmp/build-gpu BATCHES="1 64" sh bench/gpu_profile.sh
set -u
OUT=${OUT:-/tmp/gpu-out}
B=${B:-build-gpu}
M=${M:-/tmp/hy7b}
BATCHES=${BATCHES:-1 64}
mkdir -p "$OUT"
for b in $BATCHES; do
    timeout 240 ncu --metrics gpu__time_duration.sum --csv --log-file "$OUT/ncu_b$b.csv" \
        "$B/hymt" bench -m "$M" --device cuda --batch "$b" --prompt-len 64 --gen-len 3 --max-batch-tokens 8192 \
        >"$OUT/ncu_b$b.txt" 2>&1
    echo "== ncu batch $b: exit $? ($(wc -l <"$OUT/ncu_b$b.csv") lines)"
    tail -3 "$OUT/ncu_b$b.txt"
done
