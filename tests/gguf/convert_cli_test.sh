#!/bin/sh
# convert_cli_test.sh HYMT DATA_DIR: `hymt convert` on the command line (help, one-line usage
# errors with exit 2, refusing to overwrite without --force, no temp file left behind on
# failure) and every model command on the .gguf it writes: info, tokenize, generate
# (same ids as from the folder), translate; a corrupt .gguf is a clean error (exit 1).
HYMT=$1
DATA=$2
TMP=$(mktemp -d /tmp/hymt-gguf-cli-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
checks=0

. "$(dirname "$0")/../cli_check.sh"

G=$TMP/mqa.gguf
expect 0 "help" -- "$HYMT" convert --help
contains "$TMP/out" "q4_k_m" "help lists the types"
expect 2 "no output" -- "$HYMT" convert -m "$DATA/tiny-mqa"
contains "$TMP/err" "required" "missing -o"
expect 2 "bad type" -- "$HYMT" convert -m "$DATA/tiny-mqa" -o "$G" --type q3
contains "$TMP/err" "--type must be" "bad type message"
expect 1 "missing folder" -- "$HYMT" convert -m "$TMP/nope" -o "$G"
contains "$TMP/err" "nope" "missing folder is named"
checks=$((checks + 1))
if ls "$TMP" | grep -q tmp-; then fails=$((fails + 1)); echo "FAIL: temp file left behind"; fi

expect 0 "convert bf16" -- "$HYMT" convert -m "$DATA/tiny-mqa" -o "$G"
contains "$TMP/err" "wrote" "convert reports the file"
expect 2 "no overwrite" -- "$HYMT" convert -m "$DATA/tiny-mqa" -o "$G"
contains "$TMP/err" "exists" "refuses to overwrite"
expect 0 "overwrite with --force" -- "$HYMT" convert -m "$DATA/tiny-mqa" -o "$G" --force --type q8_0
expect 0 "convert bf16 again" -- "$HYMT" convert -m "$DATA/tiny-mqa" -o "$G" --force

expect 0 "info on gguf" -- "$HYMT" info "$G" --tensors
contains "$TMP/out" "blk.1.ffn_down.weight" "info lists GGUF tensors"
contains "$TMP/out" "status            ok" "info status"

printf 'Hello, world! 你好 <|eos|>' > "$TMP/text"
expect 0 "tokenize from gguf" -- sh -c "'$HYMT' tokenize -m '$G' --special < '$TMP/text'"
cp "$TMP/out" "$TMP/tok_gguf"
expect 0 "tokenize from folder" -- sh -c "'$HYMT' tokenize -m '$DATA/tiny-mqa' --special < '$TMP/text'"
checks=$((checks + 1))
cmp -s "$TMP/out" "$TMP/tok_gguf" || { fails=$((fails + 1)); echo "FAIL: tokenize differs"; }

expect 0 "generate from gguf" -- "$HYMT" generate -m "$G" --ids 305,3,77,250 -n 12 --ignore-eos
cp "$TMP/out" "$TMP/gen_gguf"
expect 0 "generate from folder" -- "$HYMT" generate -m "$DATA/tiny-mqa" --ids 305,3,77,250 -n 12 --ignore-eos
checks=$((checks + 1))
cmp -s "$TMP/out" "$TMP/gen_gguf" || { fails=$((fails + 1)); echo "FAIL: generated ids differ"; cat "$TMP/out" "$TMP/gen_gguf"; }

printf 'Hello world.\n' > "$TMP/in.txt"
expect 0 "translate from gguf" -- "$HYMT" translate -m "$G" --to zh --greedy --max-new-tokens 8 "$TMP/in.txt"

# a corrupt file: the header cut in the middle of the metadata
head -c 300 "$G" > "$TMP/cut.gguf"
expect 1 "truncated gguf" -- "$HYMT" generate -m "$TMP/cut.gguf" --ids 1,2 -n 1
contains "$TMP/err" "cut.gguf" "a corrupt gguf is named in the error"

echo "convert_cli_test: $checks checks, $fails failed"
[ "$fails" = 0 ]
