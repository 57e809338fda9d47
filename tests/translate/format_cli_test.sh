#!/bin/sh
# format_cli_test.sh HYMT DATA_DIR: `hymt translate` on Markdown, SRT, WebVTT and HTML
# files through the tiny checkpoint (random text out): the format is chosen by extension
# or --format, the lines of pure markup come back unchanged at their places, text lines
# keep their markup around the (random) translation, the line count is kept. Which bytes
# are text is format_test's business (no model there).
HYMT=$1
DATA=$2
T=$DATA/tiny-mqa
TMP=$(mktemp -d /tmp/hymt-fmt-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
checks=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }
# run NAME FILE [FLAGS...]: translates FILE to $TMP/NAME.out
run() {
    name=$1; file=$2; shift 2
    checks=$((checks + 1))
    "$HYMT" translate -m "$T" --to de --seed 3 --max-new-tokens 12 "$@" "$file" \
        >"$TMP/$name.out" 2>"$TMP/err" || { fail "$name: exit $?"; cat "$TMP/err"; }
    checks=$((checks + 1))
    [ "$(wc -l <"$file")" = "$(wc -l <"$TMP/$name.out")" ] ||
        fail "$name: $(wc -l <"$TMP/$name.out") lines out for $(wc -l <"$file") in"
}
# same NAME IN "LINES": those lines of IN and NAME's output are identical
same() {
    for l in $3; do
        checks=$((checks + 1))
        a=$(sed -n "${l}p" "$2"); b=$(sed -n "${l}p" "$TMP/$1.out")
        [ "$a" = "$b" ] || fail "$1: line $l changed: '$a' -> '$b'"
    done
}
# starts NAME LINE PREFIX: NAME's output line starts with PREFIX
starts() {
    checks=$((checks + 1))
    b=$(sed -n "${2}p" "$TMP/$1.out")
    case "$b" in "$3"*) ;; *) fail "$1: line $2 lost '$3': '$b'" ;; esac
}
# differs NAME IN LINE: the text line was translated
differs() {
    checks=$((checks + 1))
    [ "$(sed -n "${3}p" "$2")" != "$(sed -n "${3}p" "$TMP/$1.out")" ] || fail "$1: line $3 not translated"
}

cat >"$TMP/doc.md" <<'MD'
# Getting started

Run `make test` to check the build.
- first item here
| Name | Value |
|------|-------|
| speed | fast |

```sh
echo keep this line
```
MD
run md "$TMP/doc.md"
same md "$TMP/doc.md" "2 6 8 9 10 11"
starts md 1 "# "; starts md 3 ""; starts md 4 "- "; starts md 5 "| "; starts md 7 "| "
differs md "$TMP/doc.md" 1
grep -q '`make test`' "$TMP/md.out" || fail "md: inline code lost"
checks=$((checks + 1))

# a soft-wrapped paragraph is one text: its translation comes back on one line
printf 'A paragraph that is\nwrapped over two lines.\n\n```\nkeep\n```\n' >"$TMP/wrap.md"
checks=$((checks + 1))
"$HYMT" translate -m "$T" --to de --seed 3 --max-new-tokens 12 "$TMP/wrap.md" >"$TMP/wrap.out" 2>"$TMP/err" || fail "wrap: exit $?"
grep -q "wrap.md: 1 segments" "$TMP/err" || fail "wrap: not one segment: $(cat "$TMP/err")"
checks=$((checks + 1))
[ "$(wc -l <"$TMP/wrap.out")" = 5 ] && [ "$(tail -n 3 "$TMP/wrap.out")" = "$(printf '```\nkeep\n```')" ] ||
    fail "wrap: $(cat "$TMP/wrap.out")"

printf '1\n00:00:01,000 --> 00:00:04,000\nHello there.\nHow are you today?\n\n2\n00:00:05,000 --> 00:00:06,500\n<i>Fine,</i> thanks!\n' >"$TMP/subs.srt"
run srt "$TMP/subs.srt"
same srt "$TMP/subs.srt" "1 2 5 6 7"
starts srt 8 "<i>"; differs srt "$TMP/subs.srt" 3; differs srt "$TMP/subs.srt" 4

printf 'WEBVTT\n\nNOTE kept note\n\n00:00.000 --> 00:02.000 align:start\n<v Roger>Good morning, everyone.\n' >"$TMP/subs.vtt"
run vtt "$TMP/subs.vtt"
same vtt "$TMP/subs.vtt" "1 2 3 4 5"
starts vtt 6 "<v Roger>"; differs vtt "$TMP/subs.vtt" 6

cat >"$TMP/page.html" <<'HTML'
<!DOCTYPE html>
<html><head><title>Page title here</title>
<script>var s = "no words translated";</script></head>
<body><p>Hello world, this is text.</p>
<img src="a.png" alt="A cat on a mat">
</body></html>
HTML
run html "$TMP/page.html"
same html "$TMP/page.html" "1 3 6"
starts html 2 "<html><head><title>"; starts html 4 "<body><p>"; starts html 5 '<img src="a.png" alt="'
differs html "$TMP/page.html" 4; differs html "$TMP/page.html" 5

# --format overrides the extension; text keeps everything a segment
cp "$TMP/subs.srt" "$TMP/subs.txt"
run forced "$TMP/subs.txt" --format srt
same forced "$TMP/subs.txt" "1 2 5 6 7"
checks=$((checks + 1))
"$HYMT" translate -m "$T" --to de --seed 3 --max-new-tokens 12 --format text "$TMP/subs.srt" \
    >"$TMP/plain.out" 2>"$TMP/err" || fail "--format text: exit $?"
[ "$(sed -n 2p "$TMP/plain.out")" != "00:00:01,000 --> 00:00:04,000" ] || fail "--format text still kept the timing"
checks=$((checks + 1))
"$HYMT" translate -m "$T" --to de --format pdf "$TMP/doc.md" 2>"$TMP/err"
[ $? = 2 ] && grep -q "unknown format 'pdf'" "$TMP/err" || fail "--format pdf not refused"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
