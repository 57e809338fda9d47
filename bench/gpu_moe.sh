#!/bin/sh
# gpu_moe.sh: hy_v3 (Hy-MT2-30B-A3B) on the GPU machine: build for sm_90, `ctest -L cuda`,
# then random-weight models of the 30B-A3B shapes benchmarked with `hymt bench` (batch 1
# and 64, 64-token prompts, 128 new, 2 GiB of KV; and one 512-token prompt):
#   LAYERS="6 12"  safetensors checkpoints cut to these depths (layer 0 dense, the rest MoE),
#                  each in QUANTS (q4 q8 bf16: --quant, or the stored bf16); two depths give
#                  a MoE layer's cost apart from the embedding and head (bench/RESULTS.md);
#   GGUF="q4_0 q8_0" the whole 48 layers written directly as GGUF files of these types
#                  (make-test-model --gguf), when that writer exists.
#   OLD=dir        a source tree of an earlier commit, built and measured beside (same card).
#   PROFILE=1      per-kernel times (ncu) of a q4 decode step at batch 1 and 64 on the first
#                  depth, summed by bench/ncu_summary.py over the last step's launches.
# Logs go to $OUT; a summary is printed. Run as `OUT=$OUT sh bench/gpu_moe.sh` from the
# source root (B: build folder).
set -u
OUT=${OUT:-/tmp/gpu-out}
B=${B:-/tmp/build-gpu}
LAYERS=${LAYERS:-6 12}
QUANTS=${QUANTS:-q4 q8 bf16}
GGUF=${GGUF:-}
OLD=${OLD:-}
t0=$(date +%s)
mkdir -p "$OUT"
log() { echo "== $* (at $(($(date +%s) - t0)) s)" | tee -a "$OUT/summary.txt"; }
. bench/gpu_deps.sh
log "machine: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader), $(date -u +%FT%TZ)"
build() { # source dir, build dir, targets...
    src=$1 bd=$2
    shift 2
    cmake -S "$src" -B "$bd" -DCMAKE_BUILD_TYPE=Release -DHYMT_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build "$bd" -j "$(nproc)" "$@"
}
[ -z "$OLD" ] || { build "$OLD" /tmp/build-old --target hymt >"$OUT/build-old.log" 2>&1 &
    old_pid=$!; }
build . $B >"$OUT/build.log" 2>&1
rc=$?
log "build: exit $rc"
grep -E "error|warning" "$OUT/build.log" | head -20
[ $rc -eq 0 ] || exit 1
(cd $B && timeout "${CT_TIMEOUT:-240}" ctest -L cuda --output-on-failure -V) >"$OUT/ctest_cuda.log" 2>&1
rc=$?
log "ctest -L cuda: exit $rc"
grep -E "tests passed|Failed|FAIL|CHECK|worst|greedy|recorded|cases;" "$OUT/ctest_cuda.log" | head -40
[ $rc -eq 0 ] || [ -n "${BENCH_ANYWAY:-}" ] || exit 1
if [ -n "$OLD" ]; then
    wait "$old_pid"
    log "old build: exit $?"
fi
bench1() { # label, hymt, model, args...
    lab=$1 bin=$2 m=$3
    shift 3
    timeout "${BENCH_TIMEOUT:-120}" "$bin" bench -m "$m" --device cuda --kv-memory 2G "$@" \
        >"$OUT/bench-$lab.log" 2>&1
    log "bench $lab: exit $? ($*)"
    grep -E "^\||device memory" "$OUT/bench-$lab.log" | head -8
}
for L in $LAYERS; do
    M=/tmp/hy30-$L
    timeout "${MAKE_TIMEOUT:-200}" $B/hymt make-test-model --out $M --preset 30b-a3b --layers "$L" \
        >"$OUT/make-$L.log" 2>&1
    log "make-test-model 30b-a3b --layers $L: exit $? ($(du -sh $M | cut -f1))"
    for q in $QUANTS; do
        qa=""
        [ $q = bf16 ] || qa="--quant $q"
        # shellcheck disable=SC2086
        bench1 "$L-$q" $B/hymt $M --batch 1,64 --prompt-len 64 --gen-len 128 $qa
        # shellcheck disable=SC2086
        [ -z "$OLD" ] || bench1 "old-$L-$q" /tmp/build-old/hymt $M --batch 1,64 --prompt-len 64 \
            --gen-len 128 $qa
    done
    # shellcheck disable=SC2086
    bench1 "$L-q4-p512" $B/hymt $M --batch 1 --prompt-len 512 --gen-len 8 --quant q4
    for b in ${PROFILE:+1 64}; do
        timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
            --log-file "$OUT/ncu-$L-b$b.csv" $B/hymt bench -m $M --device cuda --batch $b \
            --prompt-len 64 --gen-len 3 --quant q4 --kv-memory 2G >"$OUT/ncu-$L-b$b.txt" 2>&1
        log "ncu q4 batch $b, $L layers: exit $?"
        python3 bench/ncu_summary.py "$OUT/ncu-$L-b$b.csv" $((L * 24 + 12)) | head -24
    done
    PROFILE=""
    rm -rf $M
done
for g in $GGUF; do
    F=/tmp/hy30-48-$g.gguf
    timeout "${MAKE_TIMEOUT:-200}" $B/hymt make-test-model --preset 30b-a3b --gguf "$g" \
        --out $F >"$OUT/make-48-$g.log" 2>&1
    log "make-test-model 30b-a3b --gguf $g: exit $? ($(du -sh $F | cut -f1))"
    bench1 "48-$g" $B/hymt $F --batch 1,64 --prompt-len 64 --gen-len 128
    bench1 "48-$g-p512" $B/hymt $F --batch 1 --prompt-len 512 --gen-len 8
    rm -f $F
done
