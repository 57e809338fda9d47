#!/bin/sh
# run.sh SRC_DIR BUILD_DIR [NAME...]: builds the libFuzzer targets with clang
# (-fsanitize=fuzzer,address,undefined) in BUILD_DIR (configured here when new; ctest -L fuzz
# passes make test-asan's folder, built already), then runs each fuzzer for
# HYMT_FUZZ_SECONDS (default 15) on a scratch copy of its seed corpus
# tests/fuzz/corpus/NAME/ (the repository's corpus is never written). Fails when a fuzzer
# reports a crash, a sanitizer error, a timeout or a broken contract; the input that did it
# is kept as BUILD_DIR/fuzz/crash-NAME-* and the fuzzer's log tail is printed. Longer runs:
# HYMT_FUZZ_SECONDS=600 sh tests/fuzz/run.sh . build-fuzz
set -u
SRC=$(cd "$1" && pwd)
B=$2
shift 2
SECS=${HYMT_FUZZ_SECONDS:-15}
CC_FUZZ=${CC_FUZZ:-$(command -v clang-14 || command -v clang)}
[ -n "$CC_FUZZ" ] || { echo "fuzz: clang not found (scripts/deps.sh --test installs clang)"; exit 1; }
names=${*:-config tokenizer safetensors gguf segment format terms job http_parse request}

t0=$(date +%s)
if [ ! -f "$B/CMakeCache.txt" ]; then
    mkdir -p "$B"
    cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Debug -DHYMT_SANITIZE=ON -DHYMT_CUDA=OFF \
        -DHYMT_FUZZ=ON -DCMAKE_C_COMPILER="$CC_FUZZ" \
        >"$B/configure.log" 2>&1 || { cat "$B/configure.log"; echo "fuzz: configure failed"; exit 1; }
elif ! grep -q '^HYMT_FUZZ:BOOL=ON' "$B/CMakeCache.txt"; then
    echo "fuzz: $B is not configured with -DHYMT_FUZZ=ON (make test-asan's folder is)"; exit 1
elif [ -z "${HYMT_FUZZ_IN_CTEST:-}" ]; then # refresh: a fuzzer added since must exist for --target
    cmake "$B" >"$B/configure.log" 2>&1 || { cat "$B/configure.log"; echo "fuzz: configure failed"; exit 1; }
fi
targets=""
for n in $names; do targets="$targets fuzz_$n"; done
# shellcheck disable=SC2086
cmake --build "$B" -j "${JOBS:-2}" --target $targets >"$B/build.log" 2>&1 ||
    { tail -40 "$B/build.log"; echo "fuzz: build failed"; exit 1; }
echo "fuzz: built in $(( $(date +%s) - t0 )) s; $SECS s per fuzzer"

fails=0
for n in $names; do
    work=$(mktemp -d "${TMPDIR:-/tmp}/hymt-fuzz-$n-XXXXXX")
    log="$B/fuzz/$n.log"
    opts="-max_total_time=$SECS -timeout=25 -rss_limit_mb=4096 -print_final_stats=1"
    [ "$n" = request ] && opts="$opts -detect_leaks=0" # the server's threads outlive inputs
    # shellcheck disable=SC2086
    ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$B/fuzz/fuzz_$n" $opts -artifact_prefix="$B/fuzz/crash-$n-" "$work" \
        "$SRC/tests/fuzz/corpus/$n" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    if [ $rc != 0 ]; then
        fails=$((fails + 1))
        echo "FAIL: fuzz_$n (exit $rc):"
        tail -40 "$log"
        ls "$B"/fuzz/crash-"$n"-* 2>/dev/null
    else
        echo "fuzz_$n: ${runs:-?} inputs, $cov, corpus $(ls "$work" | wc -l) new"
    fi
    rm -rf "$work"
done
echo "fuzz: $fails failed; $(( $(date +%s) - t0 )) s in all"
[ $fails = 0 ]
