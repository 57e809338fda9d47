#!/bin/sh
# glossary_cli_test.sh HYMT DATA_DIR: `hymt translate --glossary FILE --context N` on the
# tiny checkpoints: which segments get the terminology and the context prompt (the summary
# counts them), prompts that grow by the context, the refusal on a 7b-style model, and
# one-line errors for bad glossaries. The prompts' bytes are prompt_ext_test's business.
HYMT=$1
DATA=$2
TMP=$(mktemp -d /tmp/hymt-gloss-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
checks=0
. "$(dirname "$0")/../cli_check.sh"
D=$DATA/tiny-dense18
printf 'cat,Katze\n"machine learning",maschinelles Lernen\n' >"$TMP/g.csv"
printf 'The cat sleeps.\n\nNo terms here.\n\nMachine  Learning works.\n\nNor here.\n' >"$TMP/doc.txt"
common="--to de --greedy --max-new-tokens 2"

# 4 segments: 1 and 3 hold terms; with --context 1, 2 and 4 get context (1 has none before)
expect 0 "glossary and context" -- "$HYMT" translate -m "$D" $common --glossary "$TMP/g.csv" --context 1 "$TMP/doc.txt"
contains "$TMP/err" "2 segments with glossary terms, 2 with context (0 of them shortened" "counts"
expect 0 "glossary alone" -- "$HYMT" translate -m "$D" $common --glossary "$TMP/g.csv" "$TMP/doc.txt"
contains "$TMP/err" "2 segments with glossary terms, 0 with context" "glossary counts"
tin() { sed -n 's/.*, \([0-9]*\) tokens in.*/\1/p' "$TMP/err"; }
expect 0 "plain" -- "$HYMT" translate -m "$D" $common "$TMP/doc.txt"
plain=$(tin)
expect 0 "context 2" -- "$HYMT" translate -m "$D" $common --context 2 "$TMP/doc.txt"
contains "$TMP/err" "0 segments with glossary terms, 3 with context" "context counts"
ctx=$(tin)
checks=$((checks + 1))
[ -n "$plain" ] && [ -n "$ctx" ] && [ "$ctx" -gt "$plain" ] || { fails=$((fails + 1)); echo "FAIL: context prompts are not longer: $plain vs $ctx tokens"; }
# a TSV glossary with language columns that agree
printf 'cat\tKatze\ten\tde\n' >"$TMP/g.tsv"
expect 0 "TSV with languages" -- "$HYMT" translate -m "$D" $common --from en --glossary "$TMP/g.tsv" "$TMP/doc.txt"
contains "$TMP/err" "1 segments with glossary terms" "TSV counts"

# a TBX glossary (needs --from: the language of its source terms)
cat >"$TMP/g.tbx" <<'TBX'
<?xml version="1.0"?>
<martif type="TBX-Basic"><text><body>
<termEntry><langSet xml:lang="en"><tig><term>cat</term></tig></langSet><langSet xml:lang="de"><tig><term>Katze</term></tig></langSet></termEntry>
<termEntry><langSet xml:lang="en"><tig><term>dog</term></tig></langSet></termEntry>
</body></text></martif>
TBX
expect 0 "TBX glossary" -- "$HYMT" translate -m "$D" $common --from en --glossary "$TMP/g.tbx" "$TMP/doc.txt"
contains "$TMP/err" "1 segments with glossary terms" "TBX counts"
contains "$TMP/err" "1 TBX entries without a en and a de term skipped" "TBX skipped"
expect 1 "TBX without --from" -- "$HYMT" translate -m "$D" $common --glossary "$TMP/g.tbx" "$TMP/doc.txt"
contains "$TMP/err" "needs --from" "TBX needs --from"

# refusals and errors
expect 1 "7b style refuses a glossary" -- "$HYMT" translate -m "$DATA/tiny-mqa" $common --glossary "$TMP/g.csv" "$TMP/doc.txt"
contains "$TMP/err" "needs a HY-MT1.5 or Hy-MT2 model" "names the reason"
expect 1 "7b style refuses context" -- "$HYMT" translate -m "$DATA/tiny-mqa" $common --context 1 "$TMP/doc.txt"
expect 1 "languages disagree" -- "$HYMT" translate -m "$D" --to fr --glossary "$TMP/g.tsv" "$TMP/doc.txt"
contains "$TMP/err" "a glossary for en -> de, not auto -> fr" "names both pairs"
printf 'a,b\nc\n' >"$TMP/bad.csv"
expect 1 "bad row" -- "$HYMT" translate -m "$D" --to de --glossary "$TMP/bad.csv" "$TMP/doc.txt"
contains "$TMP/err" "row 2: 1 columns" "names the row"
expect 1 "missing glossary" -- "$HYMT" translate -m "$D" --to de --glossary "$TMP/nope.csv" "$TMP/doc.txt"
expect 2 "context out of range" -- "$HYMT" translate -m "$D" --to de --context 17 "$TMP/doc.txt"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
