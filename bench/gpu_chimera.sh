#!/bin/sh
# gpu_chimera.sh [OUT=$OUT]: --chimera on the GPU machine (issue 18 item 1), after
# `STAGES="build" sh bench/gpu.sh` built $B (default /tmp/build-gpu; target hymt):
#  - the 7b preset (random weights, Hunyuan-MT-7B shapes, /tmp/hy7b) as the model and as
#    Chimera: every tensor shared ("weights shared ... 355 of 355 tensors": 3 + 11 x 32
#    layers), the second
#    engine's "device memory: weights" line near 0 GiB, one KV budget from
#    --gpu-memory-fraction split 2/3 : 1/3 ("chimera: one KV budget"); an ensemble of 6 on
#    a short text (exit 0, fused segments counted);
#  - a second 7b checkpoint with another seed as Chimera: nothing shared, both models'
#    weights on the device, the same ensemble.
# Logs go to $OUT (chimera_*.txt); the summary lines to $OUT/summary.txt.
set -u
OUT=${OUT:-/tmp/gpu-out}
B=${B:-/tmp/build-gpu}
M=/tmp/hy7b
M2=/tmp/hy7b-seed2
mkdir -p "$OUT"
say() { echo "== $*" | tee -a "$OUT/summary.txt"; }
for d in $M:1 $M2:2; do
    dir=${d%:*}
    [ -f "$dir/config.json" ] ||
        timeout 150 "$B/hymt" make-test-model --out "$dir" --preset 7b --seed "${d#*:}" >/dev/null 2>&1
    cp tests/data/tiny-mqa/tokenizer*.json "$dir/" 2>/dev/null
done
printf 'The weather is nice today. We should go to the park!\n\nA second paragraph.\n' >"$OUT/in.txt"
for c in "$M:same" "$M2:other"; do
    t=$(date +%s)
    timeout 200 "$B/hymt" translate -m $M --chimera "${c%:*}" --ensemble 6 --from en --to de \
        --device cuda --max-new-tokens 24 --seed 1 "$OUT/in.txt" >"$OUT/chimera_${c#*:}.out" \
        2>"$OUT/chimera_${c#*:}.txt"
    say "translate --chimera (${c#*:} checkpoint): exit $? in $(($(date +%s) - t)) s"
    grep -E "weights shared|not shared|one KV budget|device memory|ensemble of" \
        "$OUT/chimera_${c#*:}.txt" | tee -a "$OUT/summary.txt"
done
echo "== done"
