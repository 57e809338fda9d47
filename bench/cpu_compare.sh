#!/bin/sh
# cpu_compare.sh LLAMA_SRC [WORK=/tmp/hymt-cpu-compare]: hymt against llama.cpp on the CPU,
# on the same GGUF files, in the same run.
#
# Builds hymt (Release, CPU only) from this checkout and llama.cpp's llama-bench from the
# source folder LLAMA_SRC (not part of this repository: a CMake tree of llama.cpp; the note
# in bench/RESULTS.md names the commit measured), makes a random HY-MT1.5-1.8B-shape
# checkpoint (`hymt make-test-model --preset 1.8b`), converts it with `hymt convert` to
# Q4_0, Q8_0 and Q4_K_M GGUF, then for each type runs, ROUNDS times and alternating,
#   hymt bench -m FILE --batch 1 --prompt-len 64 --gen-len 32 -t THREADS --repeat REPS
#   llama-bench -m FILE -t THREADS -p 64 -n 32 -r REPS
# so that background load on a shared machine hits both alike, and prints the prompt and
# decode tok/s of both (ranges over the rounds) with the ratio hymt / llama.cpp. Each
# program reports per round the mean of REPS measurements after its own warm-up (llama-bench
# its -r repetitions, hymt bench its --repeat passes on one engine), so that one noisy
# measurement does not decide a round.
#
# MODEL=hyv3 measures the mixture of experts instead: a random Hy-MT2-30B-A3B-shape
# checkpoint cut to HYV3_LAYERS layers (default 8: layer 0 dense, 7 MoE layers of 128
# experts top-8; about 1.25 GB of bf16 a layer, kept in WORK/hyv3-NL for the next run),
# its GGUF files WORK/hyv3-NL-TYPE.gguf. A type `hymt convert` does not write for hy_v3
# comes from the Q8_0 file through llama.cpp's llama-quantize (built beside llama-bench;
# --allow-requantize), and the table says so.
#
# Environment: MODEL (dense or hyv3), HYV3_LAYERS (8), THREADS (2), ROUNDS (3), REPS (5,
# llama-bench's default), TYPES ("q4_0 q8_0 q4_k_m"), LLAMA_CMAKE_FLAGS (the CPU flags below: llama.cpp's native build uses every
# instruction of the build machine, and the development machine's compiler picks some its
# CPU lacks; set them for yours),
# JOBS (build parallelism, nproc), HYMT_BUILD and LLAMA_BUILD (build folders, reused:
# WORK/hymt-build and WORK/llama-build).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 LLAMA_SRC [WORK]" >&2; exit 2; }
LLAMA_SRC=$(cd "$1" && pwd)
WORK=${2:-/tmp/hymt-cpu-compare}
MODEL=${MODEL:-dense}
HYV3_LAYERS=${HYV3_LAYERS:-8}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-5}
TYPES=${TYPES:-"q4_0 q8_0 q4_k_m"}
JOBS=${JOBS:-$(nproc)}
LLAMA_CMAKE_FLAGS=${LLAMA_CMAKE_FLAGS:-"-DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON \
-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"}
REPO=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$LLAMA_SRC/CMakeLists.txt" ] || { echo "$LLAMA_SRC: no CMakeLists.txt" >&2; exit 2; }
mkdir -p "$WORK"

HB=${HYMT_BUILD:-$WORK/hymt-build}
LB=${LLAMA_BUILD:-$WORK/llama-build}
cmake -S "$REPO" -B "$HB" -DCMAKE_BUILD_TYPE=Release -DHYMT_CUDA=OFF >/dev/null
cmake --build "$HB" -j"$JOBS" --target hymt >/dev/null
# shellcheck disable=SC2086 # the flags are separate words
cmake -S "$LLAMA_SRC" -B "$LB" -DCMAKE_BUILD_TYPE=Release $LLAMA_CMAKE_FLAGS -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF >/dev/null
cmake --build "$LB" -j"$JOBS" --target llama-bench >/dev/null
HYMT=$HB/hymt
LBENCH=$LB/bin/llama-bench

case $MODEL in
dense) M=$WORK/hy-1.8b PRESET="--preset 1.8b" G=$WORK/ ;;
hyv3) M=$WORK/hyv3-${HYV3_LAYERS}L PRESET="--preset 30b-a3b --layers $HYV3_LAYERS" G=$M- ;;
*) echo "MODEL=$MODEL: dense or hyv3" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086 # the preset is separate words
[ -f "$M/config.json" ] || "$HYMT" make-test-model --out "$M" $PRESET >/dev/null
# llama.cpp needs a tokenizer in the file: the test tokenizer (its ids fit any vocabulary;
# convert pads the token list to the model's vocabulary), as bench/serve_compare.sh does
if [ ! -f "$M/tokenizer.json" ]; then
    cp "$REPO/tests/data/tiny-mqa/tokenizer.json" "$REPO/tests/data/tiny-mqa/tokenizer_config.json" "$M/"
    rm -f "$G"*.gguf
fi
REQUANT=
for t in $TYPES; do
    [ ! -f "$G$t.gguf" ] || continue
    "$HYMT" convert -m "$M" -o "$G$t.gguf" --type "$t" >/dev/null 2>&1 && continue
    # hy_v3 types hymt does not convert to: llama.cpp's requantization of the Q8_0 file
    [ -f "${G}q8_0.gguf" ] || "$HYMT" convert -m "$M" -o "${G}q8_0.gguf" --type q8_0 >/dev/null
    cmake --build "$LB" -j"$JOBS" --target llama-quantize >/dev/null
    "$LB/bin/llama-quantize" --allow-requantize "${G}q8_0.gguf" "$G$t.gguf" "$(echo "$t" | tr a-z A-Z)" \
        >/dev/null 2>&1 || { echo "$t: neither hymt convert nor llama-quantize made it" >&2; exit 1; }
    REQUANT="$REQUANT $t"
done

echo "machine: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(date -u '+%F %H:%M') UTC"
echo "model: $MODEL ($M$( [ -n "$REQUANT" ] && echo "; made by llama-quantize from Q8_0:$REQUANT"))"
echo "llama.cpp: $LLAMA_SRC$( [ -f "$LLAMA_SRC/COMMIT" ] && echo " (commit $(cat "$LLAMA_SRC/COMMIT"))")"
echo "threads $THREADS, prompt 64 tokens, 32 generated, $ROUNDS alternating rounds of $REPS measurements each; load average $(cut -d' ' -f1-3 /proc/loadavg)"
R=$WORK/results.txt
: >"$R"
for round in $(seq "$ROUNDS"); do
    for t in $TYPES; do
        # hymt bench: | batch | TTFT | prompt tok/s | decode tok/s per seq | ...
        "$HYMT" bench -m "$G$t.gguf" --batch 1 --prompt-len 64 --gen-len 32 -t "$THREADS" \
            --repeat "$REPS" 2>/dev/null |
            awk -F'|' -v t="$t" '$2 + 0 == 1 { printf "%s hymt %s %s\n", t, $4 + 0, $5 + 0 }' >>"$R"
        # llama-bench CSV: one row for pp64, one for tg32
        "$LBENCH" -m "$G$t.gguf" -t "$THREADS" -p 64 -n 32 -r "$REPS" -o csv 2>/dev/null | tr -d '"' |
            awk -F, -v t="$t" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                { if ($c["n_prompt"] > 0) p = $c["avg_ts"]; else g = $c["avg_ts"] }
                END { printf "%s llama %s %s\n", t, p + 0, g + 0 }' >>"$R"
        echo "round $round $t: $(grep "^$t " "$R" | tail -2 | tr '\n' ' ')load $(cut -d' ' -f1 /proc/loadavg)" >&2
    done
done

# min-max of each column, ratios of the means
echo
echo "| GGUF type | hymt prompt tok/s | llama.cpp prompt tok/s | prompt ratio | hymt decode tok/s | llama.cpp decode tok/s | decode ratio |"
echo "|---|---|---|---|---|---|---|"
for t in $TYPES; do
    awk -v t="$t" '
        function rng(a, b) { return sprintf(a == b ? "%.1f" : "%.1f-%.1f", a, b) }
        function rr(x, r,  i, lo, hi, v) { lo = 1e9; hi = 0
            for (i = 1; i <= r; i++) { v = x["llama", i] > 0 ? x["hymt", i] / x["llama", i] : 0
                                       lo = v < lo ? v : lo; hi = v > hi ? v : hi }
            return sprintf("%.2f-%.2f", lo, hi) }
        $1 == t { k = $2; n[k]++; sp[k] += $3; sg[k] += $4; P[k, n[k]] = $3; G[k, n[k]] = $4
                  if (!(k in pmin) || $3 < pmin[k]) pmin[k] = $3; if ($3 > pmax[k]) pmax[k] = $3
                  if (!(k in gmin) || $4 < gmin[k]) gmin[k] = $4; if ($4 > gmax[k]) gmax[k] = $4 }
        END { if (!n["hymt"] || !n["llama"]) { printf "| %s | (a run failed) |\n", t; exit }
              hp = sp["hymt"] / n["hymt"]; lp = sp["llama"] / n["llama"]
              hg = sg["hymt"] / n["hymt"]; lg = sg["llama"] / n["llama"]
              r = n["hymt"] < n["llama"] ? n["hymt"] : n["llama"]
              printf "| %s | %s | %s | %.2fx (%s) | %s | %s | %.2fx (%s) |\n", toupper(t),
                     rng(pmin["hymt"], pmax["hymt"]), rng(pmin["llama"], pmax["llama"]),
                     (lp > 0 ? hp / lp : 0), rr(P, r), rng(gmin["hymt"], gmax["hymt"]),
                     rng(gmin["llama"], gmax["llama"]), (lg > 0 ? hg / lg : 0), rr(G, r) }' "$R"
done
echo "(ratios: of the means over the rounds, in brackets the range of the rounds' own ratios; raw figures in $R)"
