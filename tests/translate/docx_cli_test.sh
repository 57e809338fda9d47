#!/bin/sh
# docx_cli_test.sh HYMT DATA_DIR: `hymt translate` on a .docx through the tiny checkpoint
# (random text out). The package is built here with Python's zipfile from XML written
# below. Checked: chosen by extension and by --format docx (standard input); every part
# but word/document.xml comes back byte for byte (styles, the picture); in document.xml
# only the text of w:t elements changed (the XML with every w:t emptied is the same) and
# the translated paragraphs' texts did change; a file that is not a .docx, one without
# word/document.xml and one with a DTD each fail with exit 1 and one line on stderr.
HYMT=$1
DATA=$2
T=$DATA/tiny-mqa
TMP=$(mktemp -d /tmp/hymt-docx-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
checks=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }

python3 - "$TMP" <<'PY'
import sys, zipfile
d = sys.argv[1]
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
doc = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
       f'<w:document {W}><w:body>'
       '<w:p><w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">The weather </w:t></w:r>'
       '<w:r><w:t>is nice today.</w:t></w:r></w:p>'
       '<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Second cell text</w:t></w:r></w:p></w:tc></w:tr></w:tbl>'
       '<w:p><w:r><w:t>2026</w:t></w:r></w:p>'
       '</w:body></w:document>')
parts = {'[Content_Types].xml': b'<?xml version="1.0"?><Types/>',
         'word/document.xml': doc.encode(),
         'word/styles.xml': f'<w:styles {W}/>'.encode(),
         'word/media/image1.png': bytes((i * 37 + 11) % 256 for i in range(300))}
def write(name, parts):
    with zipfile.ZipFile(f'{d}/{name}', 'w', zipfile.ZIP_DEFLATED) as z:
        for k, v in parts.items():
            z.writestr(k, v)
write('in.docx', parts)
write('nodoc.docx', {k: v for k, v in parts.items() if k != 'word/document.xml'})
write('dtd.docx', dict(parts, **{'word/document.xml': b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>'}))
open(f'{d}/junk.docx', 'wb').write(b'not a zip at all')
PY

if "$HYMT" translate -m "$T" --to de -q "$TMP/junk.docx" 2>&1 | grep -q "needs a build with libzip"; then
    echo "docx_cli_test: skipped (hymt built without libzip and libxml2)"; exit 77
fi
check_out() { # check_out NAME: NAME.docx against in.docx
    checks=$((checks + 1))
    python3 - "$TMP/in.docx" "$TMP/$1.docx" <<'PY' || fail "$1: more than the text changed"
import re, sys, zipfile
a, b = (zipfile.ZipFile(p) for p in sys.argv[1:3])
assert sorted(a.namelist()) == sorted(b.namelist())
for n in a.namelist():
    if n != 'word/document.xml':
        assert a.read(n) == b.read(n), n
x, y = a.read('word/document.xml').decode(), b.read('word/document.xml').decode()
strip = lambda s: re.sub(r'(<w:t(?: [^>]*)?>)[^<]*(</w:t>)', r'\1\2', s.split('?>', 1)[1].strip())
assert strip(x) == strip(y), (strip(x), strip(y))
tx = lambda s: re.findall(r'<w:t(?: [^>]*)?>([^<]*)</w:t>', s)
assert len(tx(x)) == len(tx(y)) == 4
assert tx(x)[2] != tx(y)[2] and tx(y)[3] == '2026'    # a translated cell; a number kept
PY
}
checks=$((checks + 1))
"$HYMT" translate -m "$T" --to de --from en --seed 3 --max-new-tokens 10 -q "$TMP/in.docx" \
    -o "$TMP/ext.docx" 2>"$TMP/err" || { fail "by extension: exit $?"; cat "$TMP/err"; }
check_out ext
checks=$((checks + 1))
"$HYMT" translate -m "$T" --to de --from en --seed 3 --max-new-tokens 10 -q --format docx \
    <"$TMP/in.docx" >"$TMP/stdin.docx" 2>"$TMP/err" || { fail "--format docx: exit $?"; cat "$TMP/err"; }
check_out stdin
for bad in junk nodoc dtd; do
    checks=$((checks + 1))
    "$HYMT" translate -m "$T" --to de -q "$TMP/$bad.docx" -o "$TMP/bad.out" 2>"$TMP/err"
    rc=$?
    [ $rc = 1 ] && [ "$(wc -l <"$TMP/err")" = 1 ] || { fail "$bad: exit $rc"; cat "$TMP/err"; }
done
grep -q "DTD" "$TMP/err" || fail "the DTD is not named: $(cat "$TMP/err")"

echo "docx_cli_test: $checks checks, $fails failed"
[ $fails -eq 0 ]
