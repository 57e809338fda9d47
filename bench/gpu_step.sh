#!/bin/sh
# gpu_step.sh: the batch-1 decode step before/after a change to the CUDA backend's cuda.c,
# same lease: builds the tree (build-gpu) and a copy with $OLD_CUDA (default old_cuda.c.txt,
# e.g. `git show HEAD:src/backend/cuda/cuda.c >old_cuda.c.txt`) as cuda.c, `ctest -L cuda`
# on the tree, the 7b preset, then `hymt bench` with each. Needs .gpudeps carried.
set -u
OLD_CUDA=${OLD_CUDA:-old_cuda.c.txt}
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
log() { echo "== $*"; }
. bench/gpu_deps.sh
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p /tmp/old && tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C /tmp/old && cp $OLD_CUDA /tmp/old/src/backend/cuda/cuda.c
bld() { cmake -S $1 -B $2 -DCMAKE_BUILD_TYPE=Release -DHYMT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null && cmake --build $2 -j 8 --target hymt $3; }
bld . build-gpu "cuda_ops_test cuda_model_test" >$OUT/build.log 2>&1 & P1=$!
bld /tmp/old /tmp/old/b "" >$OUT/build_old.log 2>&1 & P2=$!
wait $P1; el "build new exit $?"; grep -E "error|warning" $OUT/build.log | head
(build-gpu/hymt -q make-test-model --out /tmp/hy7b --preset 7b >/dev/null; el "7b written") &
MK=$!
(cd build-gpu && timeout 110 ctest -L cuda --output-on-failure -V) >$OUT/ctest.log 2>&1; el "ctest -L cuda exit $?"
grep -E "worst|greedy|batched|Passed|Failed|CHECK|tests passed" $OUT/ctest.log | head -30
wait $P2; el "build old exit $?"; tail -3 $OUT/build_old.log
wait $MK
timeout 40 /tmp/old/b/hymt bench -m /tmp/hy7b --device cuda --batch 1 --prompt-len 64 --gen-len 64 --kv-memory 8G 2>&1 | tail -8; el "old bench"
timeout 60 build-gpu/hymt bench -m /tmp/hy7b --device cuda --batch 1,8 --prompt-len 64 --gen-len 64 --kv-memory 8G 2>&1 | tail -10; el "new bench"
