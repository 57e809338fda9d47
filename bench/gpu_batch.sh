#!/bin/sh
# gpu_batch.sh: issue 15's rows on the GPU machine in one go, within one device call:
# build (hymt and the CUDA tests only), then `ctest -L cuda` while the 7b preset (random
# weights, Hunyuan-MT-7B shapes) is written to $M, then `hymt bench --device cuda`:
#   - 64 and 256 concurrent, 64-token prompts, 128 new tokens (bf16);
#   - one 2048-token prompt (prefill);
#   - sentences: 64 concurrent, 48-token prompts, 32 new;
#   - q4 weights (--quant q4), 64 concurrent;
#   - the sentences again at each --max-batch-tokens of $MBTS (the chunk policy: how many
#     prompt tokens a step takes beside the decodes);
# stage matmul: bench/cuda_matmul.cu's per-call times of the bf16 products (the fused
# q+k+v and gate+up shapes too) at T = 1..2048; stage profile: ncu's per-kernel times of
# the last decode steps at 64 concurrent (as bench/gpu_profile.sh; bench/ncu_summary.py over
# the last $NCU_LAST launches, default 980: about two steps).
# Logs go to $OUT (summary.txt, build.log, ctest.log, bench.txt, matmul.txt, ncu.txt).
#   OUT=$OUT B=/tmp/build-batch sh bench/gpu_batch.sh
# STAGES (default "build test bench"; also "matmul profile") picks what runs; MBTS defaults
# to none.
set -u
OUT=${OUT:-/tmp/gpu-batch}
B=${B:-build-gpu}
M=${M:-/tmp/hy7b}
STAGES=${STAGES:-build test bench}
MBTS=${MBTS:-}
mkdir -p "$OUT"
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
. bench/gpu_deps.sh
log "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader), $(nproc) cores, $(date -u +%FT%TZ)"

if has build; then
    t=$(date +%s)
    { cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DHYMT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 &&
        tests=$(cd "$B" && ctest -L cuda -N 2>/dev/null | awk '/Test +#/ { print $3 }') &&
        cmake --build "$B" -j "$(nproc)" --target hymt cuda_matmul $tests; } >"$OUT/build.log" 2>&1
    log "build: exit $? in $(($(date +%s) - t)) s"
    grep -E "error|warning" "$OUT/build.log" | head -20
fi
mpid=
if has bench && [ ! -f "$M/config.json" ]; then # the model is CPU and disk work: beside the tests
    timeout 200 "$B/hymt" make-test-model --out "$M" --preset 7b >"$OUT/make7b.txt" 2>&1 &
    mpid=$!
fi
if has test; then
    t=$(date +%s)
    (cd "$B" && timeout 200 ctest -L cuda --output-on-failure -V) >"$OUT/ctest.log" 2>&1
    log "ctest -L cuda: exit $? in $(($(date +%s) - t)) s"
    grep -E "worst|greedy|batched|Passed|Failed|CHECK|tests passed" "$OUT/ctest.log" |
        tee -a "$OUT/summary.txt" | head -60
fi
if has bench; then
    [ -n "$mpid" ] && wait "$mpid"
    log "7b preset: $(du -sh "$M" | cut -f1)"
    run() { # run LABEL ARGS: one hymt bench, its table into bench.txt
        t=$(date +%s) label=$1
        shift
        echo "### $label: hymt bench -m $M --device cuda $*" >>"$OUT/bench.txt"
        timeout 120 "$B/hymt" bench -m "$M" --device cuda "$@" >>"$OUT/bench.txt" 2>&1
        log "bench $*: exit $? in $(($(date +%s) - t)) s"
    }
    run decode --batch 64,256 --prompt-len 64 --gen-len 128
    run prefill --batch 1 --prompt-len 2048 --gen-len 16
    run sentences --batch 64 --prompt-len 48 --gen-len 32
    run q4 --quant q4 --batch 64 --prompt-len 64 --gen-len 128
    for mbt in $MBTS; do
        run sentences --batch 64 --prompt-len 48 --gen-len 32 --max-batch-tokens "$mbt"
    done
    grep -E "^\||^###" "$OUT/bench.txt" | tee -a "$OUT/summary.txt"
fi
if has matmul; then
    timeout 90 "$B/bench/cuda_matmul" >"$OUT/matmul.txt" 2>&1
    log "cuda_matmul: exit $?"
    grep -E "\| (64|256|2048) \|" "$OUT/matmul.txt" | tee -a "$OUT/summary.txt"
fi
if has profile; then
    t=$(date +%s)
    timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
        --log-file /tmp/ncu_b64.csv "$B/hymt" bench -m "$M" --device cuda --batch 64 \
        --prompt-len 64 --gen-len 3 --max-batch-tokens 8192 >/tmp/ncu_b64.txt 2>&1
    log "ncu: exit $? in $(($(date +%s) - t)) s"
    python3 bench/ncu_summary.py /tmp/ncu_b64.csv "${NCU_LAST:-980}" >"$OUT/ncu.txt" 2>&1
    cat "$OUT/ncu.txt" | tee -a "$OUT/summary.txt"
fi
echo "== done"
