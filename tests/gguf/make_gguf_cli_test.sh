#!/bin/sh
# make_gguf_cli_test.sh HYMT DATA_DIR: `hymt make-test-model --gguf` (label unit). A 3-layer
# cut of tiny-hyv3 written directly as GGUF is byte-identical to the same checkpoint written
# as safetensors and then `hymt convert`ed, in every type (so its logits are the converted
# model's); the q8_0, q4_0, q4_k_m and q6_k files load (info, GGUF reader's validation) and
# `hymt generate` runs on them (tiny-hyv3's in-features of 32 and 64 put Q8_0 where a K
# type's 256-block does not fit, as llama.cpp's fallback does), with the tokenizer embedded by --tokenizer as convert embeds it; usage errors
# exit 2; a bad path and a full disk (a file size limit) exit 1 with one line naming the
# problem and leave no partial file.
HYMT=$1
DATA=$2
TMP=$(mktemp -d /tmp/hymt-make-gguf-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
checks=0

. "$(dirname "$0")/../cli_check.sh"

MK="$HYMT make-test-model --preset tiny-hyv3 --layers 3"
expect 0 "help" -- "$HYMT" make-test-model --help
contains "$TMP/out" "--gguf TYPE" "help lists --gguf"
contains "$TMP/out" "--tokenizer DIR" "help lists --tokenizer"
expect 2 "bad type" -- $MK --gguf q3 --out "$TMP/x.gguf"
contains "$TMP/err" "q4_k_m" "bad type lists the types"
expect 2 "dense preset" -- "$HYMT" make-test-model --preset tiny --gguf q8_0 --out "$TMP/x.gguf"
expect 2 "tokenizer without gguf" -- $MK --tokenizer "$DATA/tiny-hyv3" --out "$TMP/x"
expect 2 "gguf with fp8" -- $MK --gguf q8_0 --fp8 --out "$TMP/x.gguf"

# the checkpoint, with the tiny tokenizer beside it, converted to each type
expect 0 "safetensors checkpoint" -- $MK --out "$TMP/m"
cp "$DATA/tiny-hyv3/tokenizer.json" "$DATA/tiny-hyv3/tokenizer_config.json" "$TMP/m/"
for t in q8_0 q4_0 q4_k_m q6_k bf16; do
    mkdir "$TMP/$t"
    expect 0 "convert $t" -- "$HYMT" convert -m "$TMP/m" -o "$TMP/conv-$t.gguf" --type $t
    expect 0 "make-test-model --gguf $t" -- $MK --gguf $t --out "$TMP/$t/m.gguf" \
        --tokenizer "$DATA/tiny-hyv3"
    contains "$TMP/err" "blk.2 written" "a progress line a layer"
    checks=$((checks + 1))
    cmp -s "$TMP/conv-$t.gguf" "$TMP/$t/m.gguf" ||
        { fails=$((fails + 1)); echo "FAIL: --gguf $t differs from convert --type $t"; }
done

for t in q8_0 q4_0 q4_k_m q6_k; do
    G=$TMP/$t/m.gguf
    expect 0 "info $t" -- "$HYMT" info "$G" --tensors
    contains "$TMP/out" "blk.1.ffn_down_exps.weight" "info lists the expert stacks"
    contains "$TMP/out" "status            ok" "info status"
    expect 0 "generate $t" -- "$HYMT" generate -m "$G" --ids 305,3,77,250 -n 8 --ignore-eos
    checks=$((checks + 1))
    [ "$(wc -w < "$TMP/out")" = 8 ] || { fails=$((fails + 1)); echo "FAIL: generate $t"; cat "$TMP/out"; }
    expect 0 "tokenize $t" -- sh -c "echo 'Hello, world!' | '$HYMT' tokenize -m '$G'"
done

# errors: a folder that does not exist; a tokenizer larger than --vocab; a full disk
expect 1 "bad path" -- $MK --gguf q4_0 --out "$TMP/nope/m.gguf"
contains "$TMP/err" "nope/m.gguf" "bad path named"
checks=$((checks + 1))
[ "$(wc -l < "$TMP/err")" = 1 ] || { fails=$((fails + 1)); echo "FAIL: bad path: not one line"; }
expect 1 "tokenizer larger than the vocabulary" -- $MK --vocab 256 --gguf q4_0 \
    --out "$TMP/v.gguf" --tokenizer "$DATA/tiny-hyv3"
contains "$TMP/err" "vocabulary" "vocabulary error"
expect 1 "file size limit" -- sh -c "trap '' XFSZ; ulimit -f 64; exec $MK --gguf q8_0 \
    --out '$TMP/full.gguf'"
contains "$TMP/err" "write failed" "full disk message"
checks=$((checks + 1))
if ls "$TMP" | grep -q -e tmp- -e full.gguf -e v.gguf; then
    fails=$((fails + 1)); echo "FAIL: a partial file left behind"; ls "$TMP"
fi

echo "make_gguf_cli_test: $checks checks, $fails failed"
[ "$fails" = 0 ]
