#!/bin/sh
# tokenize_cli_test.sh HYMT SRC_DIR: `hymt tokenize` on the tiny checkpoints' tokenizers:
# round trips, --special, -m, invalid UTF-8, --decode errors, exit codes and one-line errors.
HYMT=$1
SRC=$2
TOK=$SRC/tests/data/tiny-mqa/tokenizer.json
DENSE=$SRC/tests/data/tiny-dense18
TMP=$(mktemp -d /tmp/hymt-tokcli-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
checks=0

fail() { fails=$((fails + 1)); echo "FAIL: $*"; sed 's/^/  stderr: /' "$TMP/err"; }
# run CODE DESCRIPTION INPUT ARGS...: feeds INPUT (printf format-free) to hymt tokenize ARGS
run() {
    want=$1 what=$2 input=$3
    shift 3
    checks=$((checks + 1))
    printf '%s' "$input" | "$HYMT" tokenize "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    [ "$got" = "$want" ] || fail "$what: exit $got, expected $want"
}
same() { # FILE TEXT DESCRIPTION
    checks=$((checks + 1))
    [ "$(cat "$1")" = "$2" ] || fail "$3: got '$(cat "$1")', expected '$2'"
}
contains() { # FILE TEXT DESCRIPTION
    checks=$((checks + 1))
    grep -q -- "$2" "$1" || fail "$3: '$2' not in $(basename "$1")"
}
one_line() {
    checks=$((checks + 1))
    [ "$(wc -l <"$TMP/err")" = 1 ] || fail "$1: not one line on stderr"
}

text='Hello, 世界! 12345 tokens<|eos|>'
run 0 "encode" "$text" --tokenizer "$TOK"
cp "$TMP/out" "$TMP/ids"
contains "$TMP/err" "encoded" "timing line"
run 0 "decode" "$(cat "$TMP/ids")" --tokenizer "$TOK" --decode
same "$TMP/out" "$text" "round trip"
run 0 "-m MODEL" "$text" -m "$SRC/tests/data/tiny-mqa"
same "$TMP/out" "$(cat "$TMP/ids")" "-m gives the same ids"
run 0 "--special" "<|eos|>" --tokenizer "$TOK" --special
same "$TMP/out" "499" "special token id"
run 0 "literal" "<|eos|>" --tokenizer "$TOK"
checks=$((checks + 1))
[ "$(cat "$TMP/out")" != "499" ] || fail "without --special the text is literal"
run 0 "skip-special" "497 39 68 499" --tokenizer "$TOK" --decode --skip-special
same "$TMP/out" "He" "skip special"
run 0 "empty input" "" --tokenizer "$TOK"
same "$TMP/out" "" "empty input, empty line"
run 0 "dense tokenizer" "$text" -m "$DENSE"
run 0 "dense round trip" "$(cat "$TMP/out")" -m "$DENSE" --decode
same "$TMP/out" "$text" "dense round trip"

printf 'ab\377cd' >"$TMP/bad"
checks=$((checks + 1))
"$HYMT" tokenize --tokenizer "$TOK" <"$TMP/bad" >"$TMP/out" 2>"$TMP/err"
[ $? = 1 ] || fail "invalid UTF-8: exit code"
contains "$TMP/err" "byte offset 2" "invalid UTF-8 names the offset"
one_line "invalid UTF-8"
checks=$((checks + 1))
"$HYMT" tokenize --tokenizer "$TOK" --replace-invalid <"$TMP/bad" >"$TMP/out" 2>"$TMP/err"
[ $? = 0 ] || fail "--replace-invalid: exit code"

run 2 "no tokenizer" "x"
one_line "no tokenizer"
run 2 "both tokenizer and model" "x" --tokenizer "$TOK" -m "$DENSE"
run 2 "skip-special without decode" "x" --tokenizer "$TOK" --skip-special
run 2 "unknown option" "x" --tokenizer "$TOK" --frob
run 1 "missing file" "x" --tokenizer "$TMP/none.json"
one_line "missing file"
run 1 "bad id" "12 x" --tokenizer "$TOK" --decode
one_line "bad id"
run 1 "id out of range" "99999" --tokenizer "$TOK" --decode
contains "$TMP/err" "not in the vocabulary" "range error"
run 0 "help" "" --help
contains "$TMP/out" "usage: hymt tokenize" "help text"

echo "$((checks - fails)) passed, $fails failed"
[ "$fails" = 0 ]
