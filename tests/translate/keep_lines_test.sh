#!/bin/sh
# keep_lines_test.sh HYMT TOKENIZER_DIR: `hymt translate --keep-lines` is line-true whatever
# the model writes (issue 18 item 6). A random-weight model (make-test-model --preset tiny,
# with the tiny-mqa tokenizer) writes line breaks inside its "translations"; the 400-line
# input has a blank line every 37th line. Checks: exactly 400 lines out, blank exactly
# where the input's are, every other line non-blank; and the same for a CRLF input and a
# last line without a line break.
HYMT=$1
TOKDIR=$2
TMP=$(mktemp -d /tmp/hymt-keeplines-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }

"$HYMT" -q make-test-model --out "$TMP/m" --preset tiny --seed 1 >/dev/null || { echo "make-test-model failed"; exit 1; }
cp "$TOKDIR/tokenizer.json" "$TMP/m/" || exit 1

# 400 lines: words of several scripts, 1-8 a line, a blank line every 37th
awk 'BEGIN { split("the quick brown fox jumps over lazy dog 今天 天气 Привет мир", w, " ");
             s = 7;
             for (i = 1; i <= 400; i++) {
                 if (i % 37 == 0) { print ""; continue }
                 s = (s * 69069 + 1) % 4294967296; n = 1 + int(s / 65536) % 8; line = "";
                 for (k = 0; k < n; k++) {
                     s = (s * 69069 + 1) % 4294967296;
                     line = line (k ? " " : "") w[1 + int(s / 65536) % 12]
                 }
                 print line "."
             } }' >"$TMP/in.txt"

# check IN OUT WHAT: same number of lines, blank lines at the same places, others non-blank
check() {
    n_in=$(wc -l <"$1"); n_out=$(wc -l <"$2")
    [ "$n_in" = "$n_out" ] || fail "$3: $n_out lines out for $n_in in"
    awk '{ sub(/\r$/, ""); print (NF == 0) }' "$1" >"$TMP/shape.in"
    awk '{ sub(/\r$/, ""); print (NF == 0) }' "$2" >"$TMP/shape.out"
    cmp -s "$TMP/shape.in" "$TMP/shape.out" || fail "$3: blank lines moved: $(diff "$TMP/shape.in" "$TMP/shape.out" | head -5)"
}

# The random model's replies hold line breaks: without the folding this input gives 420
# lines out and the CRLF one 72, so both checks can fail.
"$HYMT" -q translate -m "$TMP/m" --to en --keep-lines --seed 1 --max-new-tokens 24 \
    "$TMP/in.txt" -o "$TMP/out.txt" || fail "translate exited $?"
[ "$(wc -l <"$TMP/in.txt")" = 400 ] || fail "the input has $(wc -l <"$TMP/in.txt") lines"
check "$TMP/in.txt" "$TMP/out.txt" "400 lines"

# CRLF line ends, and a last line without a line break
head -n 60 "$TMP/in.txt" | sed 's/$/\r/' >"$TMP/crlf.txt"
printf 'the last line has no line break.' >>"$TMP/crlf.txt"
"$HYMT" -q translate -m "$TMP/m" --to de --keep-lines --seed 2 --max-new-tokens 24 \
    "$TMP/crlf.txt" -o "$TMP/crlf.out" || fail "translate CRLF exited $?"
check "$TMP/crlf.txt" "$TMP/crlf.out" "CRLF"
[ "$(tail -c 1 "$TMP/crlf.out" | od -An -c | tr -d ' ')" != '\n' ] || fail "CRLF: a line break was added at the end"
[ "$(grep -c "$(printf '\r')\$" "$TMP/crlf.out")" = 60 ] || fail "CRLF: the CR LF line ends were not kept"

[ "$fails" = 0 ] && echo "keep-lines: all checks passed"
[ "$fails" = 0 ]
