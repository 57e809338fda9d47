#!/bin/sh
# tm_cli_test.sh HYMT DATA_DIR: `hymt translate --tm FILE` and `hymt tm` on the tiny
# checkpoint. A document translated twice: the second run answers every segment stored by
# the first from the memory (same output). A document whose segments are all in an
# imported TMX: answered entirely from the memory, 0 engine tokens. TMX export -> import
# into an empty memory -> export gives the same file. Two imports at once share the file.
HYMT=$1
DATA=$2
T=$DATA/tiny-mqa
TMP=$(mktemp -d /tmp/hymt-tm-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
checks=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }
ok() { checks=$((checks + 1)); "$@" >"$TMP/out" 2>"$TMP/err" || { fail "exit $?: $*"; cat "$TMP/err"; }; }
has() { checks=$((checks + 1)); grep -q -- "$1" "$TMP/err" || { fail "'$1' not in: $(cat "$TMP/err")"; }; }

if ! "$HYMT" tm count --tm "$TMP/probe.db" >/dev/null 2>"$TMP/err"; then
    grep -q "without SQLite" "$TMP/err" && { echo "built without SQLite and expat: skipped"; exit 77; }
fi

# 1. the same document twice: what the first run stored, the second finds
printf 'First sentence here.\n\nSecond one, longer.\n\nThird.\n\nThe fourth line.\n' >"$TMP/doc.txt"
ok "$HYMT" translate -m "$T" --to de --greedy --max-new-tokens 300 --tm "$TMP/a.db" "$TMP/doc.txt" -o "$TMP/o1.txt"
stored=$(sed -n 's/.*memory: 0 segments found, \([0-9]*\) stored.*/\1/p' "$TMP/err")
checks=$((checks + 1))
[ -n "$stored" ] && [ "$stored" -ge 1 ] || fail "first run stored nothing: $(cat "$TMP/err")"
ok "$HYMT" translate -m "$T" --to de --greedy --max-new-tokens 300 --tm "$TMP/a.db" "$TMP/doc.txt" -o "$TMP/o2.txt"
has "memory: $stored segments found, 0 stored"
checks=$((checks + 1)); cmp -s "$TMP/o1.txt" "$TMP/o2.txt" || fail "the second run's output differs"
ok "$HYMT" tm count --tm "$TMP/a.db"
checks=$((checks + 1)); [ "$(cat "$TMP/out")" = "$stored" ] || fail "count $(cat "$TMP/out") != $stored"

# 2. a document whose every segment is in an imported TMX: no engine token at all
cat >"$TMP/mem.tmx" <<'TMX'
<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4"><header srclang="en" datatype="plaintext" segtype="sentence" adminlang="en" o-tmf="x" creationtool="x" creationtoolversion="1"/><body>
<tu><tuv xml:lang="en"><seg>Open the file.</seg></tuv><tuv xml:lang="de"><seg>Öffnen Sie die Datei.</seg></tuv></tu>
<tu><tuv xml:lang="en"><seg>Save &amp; close it.</seg></tuv><tuv xml:lang="de"><seg>Speichern &amp; schließen.</seg></tuv></tu>
<tu><tuv xml:lang="en"><seg>Done</seg></tuv><tuv xml:lang="de"><seg>Fertig</seg></tuv><tuv xml:lang="xx"><seg>?</seg></tuv></tu>
</body></tmx>
TMX
ok "$HYMT" tm import --tm "$TMP/b.db" "$TMP/mem.tmx"
has "3 entries imported, 1 in unknown languages skipped"
printf 'Open the file.\n\nSave & close it.\n\n  Done\n' >"$TMP/doc2.txt"
ok "$HYMT" translate -m "$T" --from en --to de --tm "$TMP/b.db" "$TMP/doc2.txt" -o "$TMP/o3.txt"
has "memory: 3 segments found, 0 stored"
has "0 tokens in, 0 out"
checks=$((checks + 1))
printf 'Öffnen Sie die Datei.\n\nSpeichern & schließen.\n\n  Fertig\n' | cmp -s - "$TMP/o3.txt" || fail "memory output: $(cat "$TMP/o3.txt")"

# 3. export -> import into an empty memory -> export: the same file
ok "$HYMT" tm import --tm "$TMP/a.db" "$TMP/mem.tmx"
ok "$HYMT" tm export --tm "$TMP/a.db" -o "$TMP/e1.tmx"
ok "$HYMT" tm import --tm "$TMP/c.db" "$TMP/e1.tmx"
ok "$HYMT" tm export --tm "$TMP/c.db" -o "$TMP/e2.tmx"
checks=$((checks + 1)); cmp -s "$TMP/e1.tmx" "$TMP/e2.tmx" || fail "export, import, export differs"
checks=$((checks + 1))
[ "$(grep -c '<tu ' "$TMP/e1.tmx")" = $((stored + 3)) ] || fail "$(grep -c '<tu ' "$TMP/e1.tmx") <tu>s exported, want $((stored + 3))"

# 4. two processes importing into one memory at once (WAL, busy timeout): both succeed
"$HYMT" tm import --tm "$TMP/d.db" "$TMP/e1.tmx" 2>"$TMP/err1" & p1=$!
"$HYMT" tm import --tm "$TMP/d.db" "$TMP/mem.tmx" 2>"$TMP/err2" & p2=$!
checks=$((checks + 2))
wait $p1 || fail "concurrent import 1: $(cat "$TMP/err1")"
wait $p2 || fail "concurrent import 2: $(cat "$TMP/err2")"
ok "$HYMT" tm count --tm "$TMP/d.db"
checks=$((checks + 1)); [ "$(cat "$TMP/out")" = $((stored + 3)) ] || fail "concurrent imports: $(cat "$TMP/out") entries"

# errors: one line each
printf '<tmx><body><tu>' >"$TMP/bad.tmx"
checks=$((checks + 1)); "$HYMT" tm import --tm "$TMP/b.db" "$TMP/bad.tmx" 2>"$TMP/err"; [ $? = 1 ] || fail "bad TMX accepted"
has "TMX line 1"
checks=$((checks + 1)); "$HYMT" tm export 2>"$TMP/err"; [ $? = 2 ] || fail "export without --tm"
has "--tm FILE is required"
checks=$((checks + 1)); "$HYMT" tm frob --tm "$TMP/b.db" 2>"$TMP/err"; [ $? = 2 ] || fail "unknown action"
checks=$((checks + 1)); "$HYMT" translate -m "$T" --to de --tm /nonexistent/dir/x.db "$TMP/doc.txt" 2>"$TMP/err"; [ $? = 1 ] || fail "unopenable memory"
has "translation memory /nonexistent/dir/x.db"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
