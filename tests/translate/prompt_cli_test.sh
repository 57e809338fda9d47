#!/bin/sh
# prompt_cli_test.sh HYMT DATA_DIR: how the CLI chooses a model's prompts (issue 19 item 1)
# on the tiny checkpoints: the generation from the folder's name (a copy of tiny-mqa named
# Hy-MT2-7B: Hunyuan-MT-7B's tokenizer, Hy-MT2's prompts), from --prompt-style, from the
# tokenizer alone; `hymt info` saying so; Hy-MT2's instruction flags on `hymt translate`
# (accepted by a Hy-MT2 model, refused by the others, one-line errors); `hymt generate
# --to` building the translation prompt. The prompts' bytes are prompt_gen_test's business:
# here the prompt token counts only show which prompt was used.
HYMT=$1
DATA=$(cd "$2" && pwd) # absolute: the links below point into it
TMP=$(mktemp -d /tmp/hymt-prompt-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
checks=0
. "$(dirname "$0")/../cli_check.sh"
# prompt tokens of the last translate (its summary line)
tin() { sed -n 's/.*, \([0-9]*\) tokens in.*/\1/p' "$TMP/err"; }
M2=$TMP/Hy-MT2-7B
mkdir "$M2"
for f in "$DATA"/tiny-mqa/*; do ln -s "$f" "$M2/"; done
printf 'Hello world.\n' >"$TMP/doc.txt"
common="--to de --from en --greedy --max-new-tokens 2"

# the generation: by name, by flag, by the tokenizer alone
expect 0 "info by name" -- "$HYMT" info "$M2"
contains "$TMP/out" "prompts           mt2 (Hy-MT2), chat format 7b" "info: mt2 by name"
contains "$TMP/out" "decided by      the model name 'Hy-MT2-7B'" "info: why"
contains "$TMP/out" "sampling          temperature 0.7, top_k 20, top_p 0.6" "info: sampling"
expect 0 "info by tokenizer" -- "$HYMT" info "$DATA/tiny-mqa"
contains "$TMP/out" "prompts           mt1 (Hunyuan-MT), chat format 7b" "info: mt1 fallback"
expect 0 "info hy_v3" -- "$HYMT" info "$DATA/tiny-hyv3"
contains "$TMP/out" "decided by      the hy_v3 architecture" "info: hy_v3"
contains "$TMP/out" "top_k 0, top_p 1, repetition_penalty 1" "info: 30B-A3B sampling"

expect 0 "plain mt2" -- "$HYMT" translate -m "$M2" $common "$TMP/doc.txt"
contains "$TMP/err" "prompts: mt2 (Hy-MT2 prompts), chat format 7b, decided by the model name 'Hy-MT2-7B'" "translate: mt2 by name"
plain2=$(tin)
expect 0 "plain mt1" -- "$HYMT" translate -m "$DATA/tiny-mqa" $common "$TMP/doc.txt"
plain1=$(tin)
checks=$((checks + 1))
# "Translate the following text into German. Note that you should only output ..." is
# longer than "Translate the following segment into German, without additional ..."
[ -n "$plain1" ] && [ -n "$plain2" ] && [ "$plain2" -gt "$plain1" ] ||
    { fails=$((fails + 1)); echo "FAIL: mt2's English prompt is not longer: $plain1 vs $plain2"; }
expect 0 "forced mt2" -- "$HYMT" translate -m "$DATA/tiny-mqa" --prompt-style mt2 $common "$TMP/doc.txt"
checks=$((checks + 1))
[ "$(tin)" = "$plain2" ] || { fails=$((fails + 1)); echo "FAIL: --prompt-style mt2: $(tin) tokens, not $plain2"; }
expect 0 "forced mt1 over the name" -- "$HYMT" translate -m "$M2" --prompt-style hunyuan-mt $common "$TMP/doc.txt"
checks=$((checks + 1))
[ "$(tin)" = "$plain1" ] || { fails=$((fails + 1)); echo "FAIL: --prompt-style mt1: $(tin) tokens, not $plain1"; }
expect 2 "bad --prompt-style" -- "$HYMT" translate -m "$M2" --prompt-style mt9 $common "$TMP/doc.txt"
contains "$TMP/err" "prompt-style 'mt9': expected auto, mt1" "names the value"

# Hy-MT2's instructions: each one is a longer prompt than the plain one
for flag in "--style formal" "--delimiters" "--data-format JSON" "--preferences Keep-names"; do
    expect 0 "$flag" -- "$HYMT" translate -m "$M2" $common $flag "$TMP/doc.txt"
    n=$(tin)
    checks=$((checks + 1))
    [ -n "$n" ] && [ "$n" -gt "$plain2" ] || { fails=$((fails + 1)); echo "FAIL: $flag: $n prompt tokens, plain $plain2"; }
done
expect 0 "two preferences" -- "$HYMT" translate -m "$M2" $common --preferences "$(printf 'a\nb')" "$TMP/doc.txt"
expect 1 "style on mt1" -- "$HYMT" translate -m "$DATA/tiny-mqa" $common --style formal "$TMP/doc.txt"
contains "$TMP/err" "need a Hy-MT2 model" "names the reason"
expect 1 "style on mt1.5" -- "$HYMT" translate -m "$DATA/tiny-dense18" $common --delimiters "$TMP/doc.txt"
expect 1 "two instructions" -- "$HYMT" translate -m "$M2" $common --style formal --delimiters "$TMP/doc.txt"
contains "$TMP/err" "one of style, preferences, delimiters and data format" "names the rule"
expect 1 "with context" -- "$HYMT" translate -m "$M2" $common --style formal --context 1 "$TMP/doc.txt"
expect 1 "control character" -- "$HYMT" translate -m "$M2" $common --style "$(printf 'a\tb')" "$TMP/doc.txt"
contains "$TMP/err" "control character" "names it"
many=$(for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17; do echo "p$i"; done)
expect 2 "17 preferences" -- "$HYMT" translate -m "$M2" $common --preferences "$many" "$TMP/doc.txt"
# Hy-MT2 also takes the terminology and context prompts that mt1 refuses
printf 'world,Welt\n' >"$TMP/g.csv"
expect 0 "glossary on mt2" -- "$HYMT" translate -m "$M2" $common --glossary "$TMP/g.csv" "$TMP/doc.txt"
contains "$TMP/err" "1 segments with glossary terms" "glossary counts"

# generate --to: the translation prompt in the chat template, the mt2 one by name
expect 0 "generate --to" -- "$HYMT" generate -m "$M2" --prompt "Hello world." --to de --from en -n 2
contains "$TMP/err" "prompts: mt2" "generate: mt2 by name"
expect 0 "generate --to mt1" -- "$HYMT" generate -m "$M2" --prompt "Hello world." --to de --from en --prompt-style mt1 -n 2
expect 2 "generate --from alone" -- "$HYMT" generate -m "$M2" --prompt "Hi" --from en -n 2
expect 2 "generate bad language" -- "$HYMT" generate -m "$M2" --prompt "Hi" --to xx -n 2

echo "$checks checks, $fails failed"
[ "$fails" -eq 0 ]
