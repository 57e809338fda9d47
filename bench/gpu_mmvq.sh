#!/bin/sh
# gpu_mmvq.sh [OUT=$OUT]: the int8-activation decode GEMV (issue 14 item 1) and the q4
# device-memory budget (item 3) on the GPU machine, after `STAGES="build test" sh
# bench/gpu.sh` built $B (default /tmp/build-gpu; targets hymt and mmvq_bench at least) and
# ran `ctest -L cuda`:
#  - bench/mmvq_bench.cu ($B/bench/mmvq_bench): per kernel and shape, old GEMV against the
#    new one, weight GB/s, and the device copy bandwidth;
#  - the 7b preset (random weights, Hunyuan-MT-7B shapes, written to /tmp) with the test
#    tokenizer, `hymt bench` batch 1 with --quant q4, q4_0, q8 and a 2 GiB bf16 KV pool:
#    decode tok/s and the start-up device memory line.
# Logs go to $OUT (mmvq_bench.txt, bench_7b.txt); each stage has a time limit so that the
# whole run ends inside one device call. Source bench/gpu_deps.sh first where the build's
# libraries come from .gpudeps.
set -u
OUT=${OUT:-/tmp/gpu-out}
B=${B:-/tmp/build-gpu}
M=/tmp/hy7b
STAGES=${STAGES:-mvbench 7b}
mkdir -p "$OUT"
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
say() { echo "== $*" | tee -a "$OUT/summary.txt"; }

if has mvbench; then
    t=$(date +%s)
    timeout 90 "$B/bench/mmvq_bench" >"$OUT/mmvq_bench.txt" 2>&1
    say "mmvq_bench: exit $? in $(($(date +%s) - t)) s"
    grep -E "copy bandwidth|all shapes" "$OUT/mmvq_bench.txt" | tee -a "$OUT/summary.txt"
fi

if has 7b; then
    t=$(date +%s)
    [ -f $M/config.json ] || timeout 120 "$B/hymt" make-test-model --out $M --preset 7b >/dev/null 2>&1
    cp tests/data/tiny-mqa/tokenizer*.json $M/ 2>/dev/null
    say "make-test-model 7b: $(du -sh $M | cut -f1) in $(($(date +%s) - t)) s"
    for q in ${QUANTS:-q4 q4_0 q8}; do
        t=$(date +%s)
        timeout 100 "$B/hymt" bench -m $M --device cuda --quant "$q" --kv-memory 2G --kv-type bf16 \
            --batch 1 --prompt-len 64 --gen-len 128 >"$OUT/b.txt" 2>&1
        say "hymt bench --quant $q: exit $? in $(($(date +%s) - t)) s"
        cat "$OUT/b.txt" >>"$OUT/bench_7b.txt"
        grep -E "device memory|token embedding|^\| [0-9]" "$OUT/b.txt" |
            tee -a "$OUT/summary.txt"
    done
    rm -f "$OUT/b.txt"
fi
echo "== done"
