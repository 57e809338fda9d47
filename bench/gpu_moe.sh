#!/bin/sh
# gpu_moe.sh: hy_v3 (Hy-MT2-30B-A3B) on the GPU machine (issue 19 items 3 and 5): build for
# sm_90, `ctest -L cuda`, then a random-weight checkpoint of the 30B-A3B shapes with fewer
# layers (LAYERS, default 6: layer 0 dense, the rest MoE; the whole 48 layers are 60 GB of
# bf16 to write, more than one device call has time for) benchmarked with `hymt bench`
# (batch 1 and 64, 64-token prompts, 128 new, 2 GiB of KV) in q4, q8 and bf16. Per-layer
# figures scale to 48 layers (bench/RESULTS.md says how). Logs go to $OUT; a summary is
# printed. Run as `OUT=$OUT sh bench/gpu_moe.sh` from the source root (B: build folder).
set -u
OUT=${OUT:-/tmp/gpu-out}
B=${B:-build-gpu}
L=${LAYERS:-6}
M=/tmp/hy30-$L
t0=$(date +%s)
mkdir -p "$OUT"
log() { echo "== $* (at $(($(date +%s) - t0)) s)" | tee -a "$OUT/summary.txt"; }
. bench/gpu_deps.sh
log "machine: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader), $(date -u +%FT%TZ)"
{ cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DHYMT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 &&
    cmake --build $B -j "$(nproc)"; } >"$OUT/build.log" 2>&1
rc=$?
log "build: exit $rc"
grep -E "error|warning" "$OUT/build.log" | head -20
[ $rc -eq 0 ] || exit 1
(cd $B && timeout "${CT_TIMEOUT:-200}" ctest -L cuda --output-on-failure -V) >"$OUT/ctest_cuda.log" 2>&1
rc=$?
log "ctest -L cuda: exit $rc"
grep -E "tests passed|Failed|FAIL|CHECK|worst|greedy|recorded|cases;" "$OUT/ctest_cuda.log" | head -40
[ $rc -eq 0 ] || [ -n "${BENCH_ANYWAY:-}" ] || exit 1
timeout "${MAKE_TIMEOUT:-90}" $B/hymt make-test-model --out $M --preset 30b-a3b --layers "$L" \
    >"$OUT/make.log" 2>&1
log "make-test-model 30b-a3b --layers $L: exit $? ($(du -sh $M | cut -f1))"
for q in q4 q8 bf16; do
    qa=""
    [ $q = bf16 ] || qa="--quant $q"
    # shellcheck disable=SC2086
    timeout "${BENCH_TIMEOUT:-60}" $B/hymt bench -m $M --device cuda --batch 1,64 --prompt-len 64 \
        --gen-len 128 --kv-memory 2G $qa >"$OUT/bench-$q.log" 2>&1
    log "bench $q: exit $?"
    grep -E "^\||device memory|hymt bench|hy_v3 on|quantized" "$OUT/bench-$q.log" | head -12
done
