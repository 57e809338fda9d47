#!/bin/sh
# llamacpp_check.sh: does llama.cpp load the hy_v3 GGUF `hymt convert` writes, and give the
# same greedy ids? (issue 19 acceptance; not part of `make test`: it needs a llama.cpp source
# tree). Builds llama.cpp's library (CPU, Release, no OpenMP) from LLAMA_SRC into
# LLAMA_SRC/build-hymt-check, tests/gguf/llamacpp_greedy.c against it, converts
# tests/data/tiny-hyv3 to f32 and bf16 GGUF files, and compares llama.cpp's 24 greedy ids on
# the goldens' prompt with hymt's (and transformers', golden.json), printing how far
# llama.cpp's logits are from hymt's.
# usage: tests/gguf/llamacpp_check.sh LLAMA_SRC [HYMT_BUILD_DIR (default build)]
# Checked with unslothai/llama.cpp d32676d7 (2026-08-18): same 24 ids for f32 and bf16 files;
# logits within 2.9e-3 / 1.3e-2 of max |logit| (llama.cpp's f16 KV cache, bf16 activations).
set -eu
SRC=$(cd "$1" && pwd)
HYMT=${2:-build}/hymt
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$SRC/build-hymt-check
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
[ -x "$HYMT" ] || { echo "no $HYMT: build hymt first"; exit 1; }
echo "llama.cpp: $SRC $(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo "${LLAMA_COMMIT:-(not a git checkout; set LLAMA_COMMIT to name it)}")"
cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_OPENMP=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_CURL=OFF \
  >/dev/null 2>&1
cmake --build "$B" -j"$(nproc)" --target llama >/dev/null
LIBS=$(find "$B" -name 'libllama.a' -o -name 'libggml*.a' | sort -r | tr '\n' ' ')
cc -O2 -c "$ROOT/tests/gguf/llamacpp_greedy.c" -I"$SRC/include" -I"$SRC/ggml/include" -o "$T/g.o"
c++ "$T/g.o" -Wl,--start-group $LIBS -Wl,--end-group -lpthread -lm -o "$T/llamacpp_greedy"
M=$ROOT/tests/data/tiny-hyv3
IDS=$(python3 -c "import json; print(','.join(map(str, json.load(open('$M/golden.json'))['prompt'])))")
WANT=$(python3 -c "import json; print(' '.join(map(str, json.load(open('$M/golden.json'))['greedy'])))")
rc=0
for TY in f32 bf16; do
  "$HYMT" -q convert -m "$M" -o "$T/m-$TY.gguf" --type "$TY" 2>/dev/null
  GOT_H=$("$HYMT" -q generate -m "$T/m-$TY.gguf" -n 24 --temp 0 --ignore-eos --threads 2 \
          --dump-logits "$T/h-$TY.f32" --ids "$IDS")
  GOT_L=$("$T/llamacpp_greedy" "$T/m-$TY.gguf" 24 "$IDS" "$T/h-$TY.f32" 2>"$T/l-$TY.err") ||
    { cat "$T/l-$TY.err"; exit 1; }
  grep "max rel" "$T/l-$TY.err" | sed "s/^/$TY: /"
  if [ "$GOT_L" = "$GOT_H" ] && [ "$GOT_H" = "$WANT" ]; then
    echo "$TY: llama.cpp, hymt and transformers give the same 24 greedy ids"
  else
    echo "$TY: DIFFER"; echo "  transformers $WANT"; echo "  hymt         $GOT_H"; echo "  llama.cpp    $GOT_L"
    rc=1
  fi
done
exit $rc
