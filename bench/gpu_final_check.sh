#!/bin/sh
# gpu_final_check.sh: on the GPU machine (carry .gpudeps): build, `ctest -L cuda`, then
# `hymt serve --device auto` on the tiny checkpoint: a translation and the device-memory
# gauges of /metrics. Output under $OUT.
OUT=$OUT STAGES="build test" sh bench/gpu.sh > $OUT/gpu.log 2>&1; grep -E "ctest|checks|greedy ids|batched" $OUT/summary.txt $OUT/gpu.log | tail -12
export LD_LIBRARY_PATH="/tmp/gpudeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
build-gpu/hymt serve -m tests/data/tiny-mqa --port 18555 --device auto 2> $OUT/serve.log &
P=$!; sleep 4
curl -s localhost:18555/api/translate -d '{"text":"Hello world. How are you?","tgt":"zh","max_tokens":8}' | head -c 300; echo
curl -s localhost:18555/metrics | grep -E "device_memory|mean_batch"
kill -TERM $P; wait $P; echo "serve exit $?"; grep -E "runs on|ready" $OUT/serve.log
