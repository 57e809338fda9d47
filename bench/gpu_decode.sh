#!/bin/sh
# gpu_decode.sh: the decode matmul on the GPU machine, in one go (a trimmed gpu_engine.sh):
# build (sm_90), bench/matmul_bench.cu against the kernel in $OLD_MATMUL (if set) and the
# tree's, `ctest -L cuda`, then `hymt bench --device cuda --batch 1,8` on the 7b preset
# (written to /tmp while the tests run). Needs .gpudeps carried (see bench/gpu.sh).
set -u
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
B=build-gpu
NV="nvcc -O3 -arch=sm_90 -I. -Isrc bench/matmul_bench.cu -lcublas"
$NV -DMATMUL_SRC='"src/backend/cuda/matmul.cu"' -o /tmp/mmb >"$OUT/mmb.log" 2>&1 &
[ -n "${OLD_MATMUL:-}" ] && $NV -DMATMUL_SRC="\"$OLD_MATMUL\"" -o /tmp/mmb_old >>"$OUT/mmb.log" 2>&1 &
STAGES="build" OUT=$OUT sh bench/gpu.sh >"$OUT/gpu.log" 2>&1
wait
cat "$OUT/summary.txt"
[ -d /tmp/gpudeps ] && export LD_LIBRARY_PATH="/tmp/gpudeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
(t0=$(date +%s); $B/hymt -q make-test-model --out /tmp/hy7b --preset 7b >/dev/null &&
    echo "7b preset written in $(( $(date +%s) - t0 )) s" >"$OUT/mk.txt") &
MK=$!
for m in mmb_old mmb; do
    [ -x /tmp/$m ] && { echo "== $m"; timeout 60 /tmp/$m; } 2>&1 | tee -a "$OUT/mmb.txt"
done
t=$(date +%s)
(cd $B && timeout 150 ctest -L cuda --output-on-failure -V) >"$OUT/ctest_cuda.log" 2>&1
echo "ctest -L cuda: exit $? in $(($(date +%s) - t)) s"
grep -E "worst|greedy|batched|Passed|Failed|CHECK|tests passed" "$OUT/ctest_cuda.log" | head -30
wait $MK
cat "$OUT/mk.txt"
timeout 120 $B/hymt bench -m /tmp/hy7b --device cuda --batch 1,8 --prompt-len 64 --gen-len 64 \
    --kv-memory 8G 2>&1 | tee "$OUT/bench7b.txt"
