#!/bin/sh
# gpu.sh [OUT=$OUT or /tmp/gpu-out]: everything the CUDA backend needs checked on the GPU
# machine, in one go (issue 6): build for sm_90, `ctest -L cuda`, then the 7b preset
# (random weights, Hunyuan-MT-7B shapes, about 15 GB, written to /tmp, never committed)
# decoded with --device cuda. Logs go to $OUT; a summary is printed last.
# The GPU machine may lack the build's Debian packages (jansson, oniguruma, utf8proc,
# pkg-config): when pkg-config cannot find them and .gpudeps/ holds their .deb files
# (carried with the call), they are unpacked into /tmp/gpudeps and used from there.
# To make .gpudeps (git-ignored through .git/info/exclude) on a Debian 12 checkout:
#   mkdir -p .gpudeps && cd .gpudeps && apt-get download libjansson-dev libjansson4
#   libonig-dev libonig5 libutf8proc-dev libutf8proc2 pkgconf pkgconf-bin libpkgconf3
#   libcurl4-openssl-dev libcurl4 libssl-dev libssl3 libsqlite3-dev libsqlite3-0
#   libexpat1-dev libexpat1 and libcurl4's library dependencies (apt-cache depends --recurse)
# and name it in the device call's carry list. Run as `OUT=$OUT sh bench/gpu.sh`.
# STAGES (default "build test 7b sanitize") picks what runs.
set -u
OUT=${OUT:-${1:-/tmp/gpu-out}}
STAGES=${STAGES:-build test 7b sanitize}
B=${B:-build-gpu}
M=/tmp/hy7b
mkdir -p "$OUT"
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
# appends a generate run's output to gen7b.log and its info lines to the summary
keep() { cat "$OUT/gen.txt" >>"$OUT/gen7b.log"; grep -E "info" "$OUT/gen.txt" | tee -a "$OUT/summary.txt"; }

. bench/gpu_deps.sh
log "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader), $(nproc) cores, $(date -u +%FT%TZ)"

if has build; then
    t=$(date +%s)
    { cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DHYMT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 &&
        cmake --build $B -j "$(nproc)"; } >"$OUT/build.log" 2>&1
    log "build: exit $? in $(($(date +%s) - t)) s"
    grep -E "error|warning" "$OUT/build.log" | head -20
fi

if has test; then
    t=$(date +%s)
    (cd $B && timeout 300 ctest -L cuda --output-on-failure -V) >"$OUT/ctest_cuda.log" 2>&1
    log "ctest -L cuda: exit $? in $(($(date +%s) - t)) s"
    grep -E "worst|greedy|batched|checks|Passed|Failed|CHECK|device:|tests passed" "$OUT/ctest_cuda.log" |
        tee -a "$OUT/summary.txt" | head -40
    # a race shows as results that move between runs: the op test twice more
    for i in 1 2; do
        (cd $B && HYMT_SRC=.. ./cuda_ops_test) >>"$OUT/ctest_cuda.log" 2>&1
        log "cuda_ops_test again: exit $?; $(tail -2 "$OUT/ctest_cuda.log" | tr '\n' ' ')"
    done
fi

if has 7b; then
    t=$(date +%s)
    [ -f $M/config.json ] || timeout 300 $B/hymt make-test-model --out $M --preset 7b >>"$OUT/gen7b.log" 2>&1
    log "make-test-model 7b: $(du -sh $M | cut -f1) in $(($(date +%s) - t)) s"
    IDS4=127958,100,200,300
    timeout 120 $B/hymt generate -m $M --ids $IDS4 -n 128 --ignore-eos --device cuda \
        >"$OUT/gen.txt" 2>&1
    log "7b cuda, 4-token prompt, 128 new: exit $?"; keep
    CUDA_IDS=$(grep -E '^[0-9]' "$OUT/gen.txt" | cut -d' ' -f1-4)
    for p in 64 512 2048; do
        timeout 120 $B/hymt generate -m $M --ids "$(seq -s, 1000 $((999 + p)))" -n 32 --ignore-eos \
            --device cuda >"$OUT/gen.txt" 2>&1
        log "7b cuda, $p-token prompt, 32 new: exit $?"; keep
    done
    timeout 120 $B/hymt generate -m $M --ids $IDS4 -n 4 --ignore-eos --device cpu \
        >"$OUT/gen.txt" 2>&1
    log "7b cpu, 4 new: exit $?; ids cpu: $(grep -E '^[0-9]' "$OUT/gen.txt") / cuda: $CUDA_IDS"; keep
    rm -f "$OUT/gen.txt"
fi

if has sanitize && command -v compute-sanitizer >/dev/null 2>&1; then
    t=$(date +%s)
    for tn in cuda_model_test cuda_ops_test; do
        t=$(date +%s)
        (cd $B && HYMT_SRC=.. timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
            ./$tn) >"$OUT/memcheck.txt" 2>&1
        log "compute-sanitizer memcheck $tn: exit $? in $(($(date +%s) - t)) s"
        tail -2 "$OUT/memcheck.txt" | tee -a "$OUT/summary.txt"
        cat "$OUT/memcheck.txt" >>"$OUT/memcheck.log"
    done
    rm -f "$OUT/memcheck.txt"
fi
echo "== done"
