#!/bin/sh
# gpu_table.sh: the issue-6 measurements on the GPU machine, one call: `hymt bench --device
# cuda` on the 7b preset (random weights, Hunyuan-MT-7B shapes, ~15 GB written to /tmp at
# run time, never committed): decode at batch 1, 8, 64 and 256 (64-token prompts, 128 new
# tokens), time to first token and prefill rate for 64/512/2048-token prompts, start-up
# (`hymt serve` process start to /ready answering 200, page cache warm) and the device
# memory in use once serving. Expects build-gpu/hymt (bench/gpu.sh's build stage) unless
# STAGES includes build. Run as `OUT=$OUT STAGES="build bench" sh bench/gpu_table.sh`.
set -u
OUT=${OUT:-${1:-/tmp/gpu-out}}
STAGES=${STAGES:-build bench serve quant inv}
B=${B:-build-gpu}
M=/tmp/hy7b
mkdir -p "$OUT"
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
. bench/gpu_deps.sh
log "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader), $(nproc) cores, $(date -u +%FT%TZ)"

if has build; then
    t=$(date +%s)
    { cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DHYMT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 &&
        cmake --build $B -j "$(nproc)" --target hymt; } >"$OUT/build.log" 2>&1
    log "build: exit $? in $(($(date +%s) - t)) s"
fi

if has bench || has serve; then
    t=$(date +%s)
    [ -f $M/config.json ] || timeout 300 $B/hymt make-test-model --out $M --preset 7b >"$OUT/make7b.log" 2>&1
    log "make-test-model 7b: $(du -sh $M | cut -f1) in $(($(date +%s) - t)) s"
fi

if has bench; then
    timeout 240 $B/hymt bench -m $M --device cuda --batch 1,8,64,256 --prompt-len 64 --gen-len 128 \
        >"$OUT/bench_decode.txt" 2>&1
    log "bench decode: exit $?"; cat "$OUT/bench_decode.txt" | tee -a "$OUT/summary.txt"
    for p in 512 2048; do
        timeout 120 $B/hymt bench -m $M --device cuda --batch 1 --prompt-len $p --gen-len 16 \
            >"$OUT/bench_p$p.txt" 2>&1
        log "bench prompt $p: exit $?"; grep -E '^\| 1 ' "$OUT/bench_p$p.txt" | tee -a "$OUT/summary.txt"
    done
fi

if has serve; then
    # the 7b preset has no tokenizer: serve needs one (its ids fit any vocabulary here)
    [ -f $M/tokenizer.json ] || cp tests/data/tiny-mqa/tokenizer.json tests/data/tiny-mqa/tokenizer_config.json $M/ 2>/dev/null
    t0=$(date +%s%N)
    $B/hymt serve -m $M --device cuda --port 18080 >"$OUT/serve.log" 2>&1 &
    pid=$!
    ready=""
    for i in $(seq 1 600); do
        if curl -sf -o /dev/null http://127.0.0.1:18080/ready; then ready=$(date +%s%N); break; fi
        sleep 0.05
    done
    log "serve start-up to /ready: $([ -n "$ready" ] && echo $(((ready - t0) / 1000000)) || echo "never") ms"
    log "device memory once ready: $(nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader)"
    curl -s -m 60 http://127.0.0.1:18080/v1/completions -H 'Content-Type: application/json' \
        -d '{"prompt":"hello","max_tokens":16}' >"$OUT/serve_reply.json"
    log "a completion: $(head -c 200 "$OUT/serve_reply.json")"
    curl -s http://127.0.0.1:18080/metrics | grep -E "device_memory|kv_blocks" | tee -a "$OUT/summary.txt"
    kill $pid; wait $pid
    log "serve exit $?"; grep -E "KV pool|ready|listening|runs on" "$OUT/serve.log" | tee -a "$OUT/summary.txt"
fi
echo "== done"

if has quant; then # issue 7: quantized weights on the GPU (--quant q8|q4 at load)
    for q in ${QUANTS:-q8 q4 fp8 q4_k}; do
        timeout 200 $B/hymt bench -m $M --device cuda --quant $q --batch 1,64 --prompt-len 64 \
            --gen-len 128 >"$OUT/bench_$q.txt" 2>&1
        log "bench --quant $q: exit $?"; grep -E '^\| (1|64) |load' "$OUT/bench_$q.txt" | tee -a "$OUT/summary.txt"
    done
    # device memory with q4 weights and a 2 GiB KV pool, everything included
    timeout 200 $B/hymt bench -m $M --device cuda --quant q4 --kv-memory 2G --batch 1 \
        --prompt-len 64 --gen-len 64 >"$OUT/bench_q4mem.txt" 2>&1
    log "bench --quant q4 --kv-memory 2G: exit $?"; grep -E '^\| 1 ' "$OUT/bench_q4mem.txt" | tee -a "$OUT/summary.txt"
fi

if has inv; then # --batch-invariant: what it costs
    timeout 200 $B/hymt bench -m $M --device cuda --batch-invariant --batch 1,8,64 \
        --prompt-len 64 --gen-len 128 >"$OUT/bench_inv.txt" 2>&1
    log "bench --batch-invariant: exit $?"; grep -E '^\| ' "$OUT/bench_inv.txt" | tee -a "$OUT/summary.txt"
fi
