#!/bin/sh
# gpu_compare.sh LLAMA_CPP_SRC: hymt and llama.cpp side by side on the GPU machine, in one
# run (issue 14 item 5, issue 15 item 2). Builds hymt (build folder $B) and llama.cpp from
# its sources (llama-bench, llama-batched-bench, llama-server into $LB; the sources are not
# in this repository: pass a path, the table names the commit), makes the 7b preset
# (random weights, Hunyuan-MT-7B shapes) in $M, converts it with `hymt convert` to the GGUF
# types in $TYPES, and measures every file with both programs:
#   - batch-1 decode (64-token prompt, 128 new): `hymt bench --batch 1` decode tok/s per
#     sequence, `llama-bench -p 0 -n 128` (flash attention, all layers on the GPU);
#   - 64 and 256 concurrent, 64-token prompts, 128 new: `hymt bench --batch 64,256` total
#     gen tok/s, `llama-batched-bench -npp 64 -ntg 128 -npl 64,256` S_TG;
#   - sentences, 64 concurrent, 48-token prompts, 32 new: `hymt bench --batch 64
#     --prompt-len 48 --gen-len 32` total gen tok/s (prefill included), `llama-batched-bench
#     -npp 48 -ntg 32 -npl 64` B x TG / T (its whole time, prefill included);
#   - prefill of one 2048-token prompt: `hymt bench --prompt-len 2048` prompt tok/s,
#     `llama-bench -p 2048 -n 0`;
# plus hymt's own load-time formats (safetensors with --quant q8|q4|fp8), which llama.cpp
# has no file for. Prints one markdown table with each row's ratio; logs go to $OUT.
#   OUT=$OUT sh bench/gpu_compare.sh /path/to/llama.cpp
# Environment: STAGES (default "build llama model convert bench"), TYPES ("f16 q8_0 q4_0"),
# HYMT_QUANTS ("none q8 q4 fp8"), B (build-gpu), LB (/tmp/llama-build), M (/tmp/hy7b),
# G (folder for the GGUF files, /tmp). Stages find earlier stages' outputs in place, so a
# second call on a warm machine can run "bench" alone.
set -u
LSRC=${1:?usage: gpu_compare.sh LLAMA_CPP_SRC}
OUT=${OUT:-/tmp/gpu-compare}
STAGES=${STAGES:-build llama model convert bench}
TYPES=${TYPES:-f16 q8_0 q4_0}
HYMT_QUANTS=${HYMT_QUANTS:-none q8 q4 fp8}
B=${B:-build-gpu}
LB=${LB:-/tmp/llama-build}
M=${M:-/tmp/hy7b}
G=${G:-/tmp}
mkdir -p "$OUT"
has() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
log() { echo "== $*" | tee -a "$OUT/compare_summary.txt"; }
. bench/gpu_deps.sh
J=$(nproc)

if has llama; then # in the background: the longest step, overlapped with hymt's build
    (cmake -S "$LSRC" -B "$LB" -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF && cmake --build "$LB" -j "$J" --target llama-bench \
        llama-batched-bench llama-server) >"$OUT/llama_build.log" 2>&1 &
    lpid=$!
fi
if has build; then
    t=$(date +%s)
    { cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DHYMT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 &&
        cmake --build "$B" -j 4 --target hymt serve_load; } >"$OUT/build.log" 2>&1
    log "hymt build: exit $? in $(($(date +%s) - t)) s"
fi
if has model; then
    t=$(date +%s)
    [ -f "$M/config.json" ] || timeout 300 "$B/hymt" make-test-model --out "$M" --preset 7b >"$OUT/make7b.log" 2>&1
    cp tests/data/tiny-mqa/tokenizer.json tests/data/tiny-mqa/tokenizer_config.json "$M/"
    log "7b preset: $(du -sh "$M" | cut -f1) in $(($(date +%s) - t)) s"
fi
if has convert; then
    for ty in $TYPES; do
        t=$(date +%s)
        [ -f "$G/hy7b-$ty.gguf" ] || timeout 300 "$B/hymt" convert -m "$M" -o "$G/hy7b-$ty.gguf" --type "$ty" \
            >"$OUT/convert_$ty.log" 2>&1
        log "convert $ty: exit $? in $(($(date +%s) - t)) s, $(du -h "$G/hy7b-$ty.gguf" | cut -f1)"
    done
fi
if has llama; then
    wait "$lpid"
    log "llama.cpp build ($(cat "$LSRC/COMMIT" 2>/dev/null || git -C "$LSRC" rev-parse HEAD 2>/dev/null)): exit $?"
fi

# hymt_row FILE|DIR NAME [ARGS]: batch-1 decode, 64- and 256-concurrent gen, 2048 prefill,
# sentences of hymt
hymt_row() {
    f=$1 n=$2; shift 2
    timeout 200 "$B/hymt" bench -m "$f" --device cuda "$@" --batch 1,64,256 --prompt-len 64 \
        --gen-len 128 >"$OUT/hymt_$n.txt" 2>&1
    timeout 120 "$B/hymt" bench -m "$f" --device cuda "$@" --batch 64 --prompt-len 48 \
        --gen-len 32 >"$OUT/hymt_${n}_sent.txt" 2>&1
    timeout 120 "$B/hymt" bench -m "$f" --device cuda "$@" --batch 1 --prompt-len 2048 \
        --gen-len 4 >"$OUT/hymt_${n}_p2048.txt" 2>&1
    d1=$(awk -F'|' '$2+0 == 1 && $2 ~ /[0-9]/ { gsub(/ /, "", $5); print $5 }' "$OUT/hymt_$n.txt")
    d64=$(awk -F'|' '$2+0 == 64 && $2 ~ /[0-9]/ { gsub(/ /, "", $6); print $6 }' "$OUT/hymt_$n.txt")
    d256=$(awk -F'|' '$2+0 == 256 && $2 ~ /[0-9]/ { gsub(/ /, "", $6); print $6 }' "$OUT/hymt_$n.txt")
    ds=$(awk -F'|' '$2+0 == 64 && $2 ~ /[0-9]/ { gsub(/ /, "", $6); print $6 }' "$OUT/hymt_${n}_sent.txt")
    pp=$(awk -F'|' '$2+0 == 1 && $2 ~ /[0-9]/ { gsub(/ /, "", $4); print $4 }' "$OUT/hymt_${n}_p2048.txt")
    gib=$(awk -F'|' '$2+0 == 1 && $2 ~ /[0-9]/ { gsub(/ /, "", $9); print $9 }' "$OUT/hymt_$n.txt")
}
# llama_row GGUF NAME: the same figures from llama-bench and llama-batched-bench
llama_row() {
    timeout 200 "$LB/bin/llama-bench" -m "$1" -ngl 99 -fa 1 -p 2048 -n 128 -r 3 -o csv \
        >"$OUT/llama_$2.csv" 2>"$OUT/llama_$2.err"
    timeout 300 "$LB/bin/llama-batched-bench" -m "$1" -ngl 99 -fa on -c 65536 -npp 64 -ntg 128 \
        -npl 64,256 >"$OUT/llama_batched_$2.txt" 2>&1
    timeout 120 "$LB/bin/llama-batched-bench" -m "$1" -ngl 99 -fa on -c 8192 -npp 48 -ntg 32 \
        -npl 64 >"$OUT/llama_sent_$2.txt" 2>&1
    # avg_ts of the row with the given n_prompt/n_gen (columns found by the header)
    pick() {
        awk -F, -v p="$1" -v g="$2" 'NR == 1 { for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); c[h] = i } next }
            { np = $c["n_prompt"]; ng = $c["n_gen"]; gsub(/"/, "", np); gsub(/"/, "", ng)
              if (np == p && ng == g) { v = $c["avg_ts"]; gsub(/"/, "", v); printf "%.1f", v } }' "$OUT/llama_$3.csv"
    }
    ld1=$(pick 0 128 "$2") lpp=$(pick 2048 0 "$2")
    ld64=$(awk -F'|' '$4+0 == 64 && $2 ~ /[0-9]/ { gsub(/ /, "", $9); print $9 }' "$OUT/llama_batched_$2.txt")
    ld256=$(awk -F'|' '$4+0 == 256 && $2 ~ /[0-9]/ { gsub(/ /, "", $9); print $9 }' "$OUT/llama_batched_$2.txt")
    # columns: | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |
    lds=$(awk -F'|' '$4+0 == 64 && $2 ~ /[0-9]/ && $10 + 0 > 0 { printf "%.1f", $4 * $3 / $10 }' "$OUT/llama_sent_$2.txt")
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "-" }'; }

if has bench; then
    T="$OUT/compare_table.md"
    {
        echo "# gpu_compare: 7b preset (random weights), $(date -u '+%Y-%m-%d %H:%M UTC'), hymt $(git rev-parse --short HEAD 2>/dev/null || echo '?'), llama.cpp $(cat "$LSRC/COMMIT" 2>/dev/null | cut -c1-10)"
        echo "# $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"
        echo
        echo "| weights | hymt decode b=1 tok/s | llama.cpp | ratio | hymt 64 concurrent gen tok/s | llama.cpp | ratio | hymt 256 concurrent | llama.cpp | ratio | hymt prefill 2048 tok/s | llama.cpp | ratio | hymt sentences (48+32, 64) gen tok/s | llama.cpp | ratio | hymt device GiB (b=1) |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    } >"$T"
    for ty in $TYPES; do
        hymt_row "$G/hy7b-$ty.gguf" "$ty"
        llama_row "$G/hy7b-$ty.gguf" "$ty"
        echo "| GGUF $ty | $d1 | $ld1 | $(ratio "$d1" "$ld1") | $d64 | $ld64 | $(ratio "$d64" "$ld64") | $d256 | $ld256 | $(ratio "$d256" "$ld256") | $pp | $lpp | $(ratio "$pp" "$lpp") | $ds | $lds | $(ratio "$ds" "$lds") | $gib |" >>"$T"
        log "$ty done"
    done
    for q in $HYMT_QUANTS; do
        if [ "$q" = none ]; then hymt_row "$M" st_bf16; else hymt_row "$M" "st_$q" --quant "$q"; fi
        echo "| safetensors bf16 --quant $q | $d1 | - | - | $d64 | - | - | $d256 | - | - | $pp | - | - | $ds | - | - | $gib |" >>"$T"
        log "--quant $q done"
    done
    cat "$T"
fi
