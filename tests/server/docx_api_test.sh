#!/bin/sh
# docx_api_test.sh HYMT DATA_DIR: POST /api/translate with "format": "docx" (a .docx in
# base64) on the tiny checkpoint. The package is built with Python's zipfile from XML
# written here. Checked: the answer is a .docx whose other parts are byte for byte the
# input's and whose document.xml differs only in w:t text, with the translated paragraph
# count; 400 for content that is not base64, for a zip that is not a .docx and for
# "stream"; 413 over --max-chars. Skipped (77) when hymt has no .docx support.
. "$(dirname "$0")/../serve_ready.sh"
HYMT=$1
DATA=$2
export NO_PROXY='*' no_proxy='*'
TMP=$(mktemp -d /tmp/hymt-docxapi-XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
fails=0
checks=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }

"$HYMT" serve -m "$DATA/tiny-mqa" --port 0 --kv-memory 16M --max-chars 200 2>"$TMP/log" &
PID=$!
serve_ready "$TMP/log" $PID || exit 1
U="http://127.0.0.1:$PORT/api/translate"

python3 - "$TMP" <<'PY'
import base64, io, json, sys, zipfile
d = sys.argv[1]
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
doc = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document {W}><w:body>'
       '<w:p><w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">The weather </w:t></w:r>'
       '<w:r><w:t>is nice today.</w:t></w:r></w:p>'
       '<w:tbl><w:tr><w:tc><w:p><w:r><w:t>A table cell</w:t></w:r></w:p></w:tc></w:tr></w:tbl>'
       '</w:body></w:document>')
def pack(parts):
    b = io.BytesIO()
    with zipfile.ZipFile(b, 'w', zipfile.ZIP_DEFLATED) as z:
        for k, v in parts.items():
            z.writestr(k, v)
    return base64.b64encode(b.getvalue()).decode()
parts = {'word/document.xml': doc, 'word/styles.xml': f'<w:styles {W}/>',
         'word/media/a.png': bytes(range(200))}
req = lambda c, **k: json.dumps(dict({'format': 'docx', 'content': c, 'source_lang': 'en',
                                      'target_lang': 'de', 'seed': 4, 'max_tokens': 10}, **k))
open(f'{d}/ok.json', 'w').write(req(pack(parts)))
open(f'{d}/in.b64', 'w').write(pack(parts))
open(f'{d}/notb64.json', 'w').write(req('***'))
open(f'{d}/nodoc.json', 'w').write(req(pack({'word/styles.xml': 'x'})))
open(f'{d}/stream.json', 'w').write(req(pack(parts), stream=True))
open(f'{d}/long.json', 'w').write(req(pack(dict(parts, **{'word/document.xml':
     doc.replace('A table cell', 'A very long cell ' * 20)}))))
PY
post() { # post NAME: $TMP/NAME.json -> .body, .code
    curl -s -o "$TMP/$1.body" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary "@$TMP/$1.json" "$U" >"$TMP/$1.code"
}
expect() { # expect NAME STATUS [ERROR_CODE]
    checks=$((checks + 1))
    [ "$(cat "$TMP/$1.code")" = "$2" ] || { fail "$1: HTTP $(cat "$TMP/$1.code"), want $2"; head -c 400 "$TMP/$1.body"; echo; return; }
    [ -z "$3" ] || grep -q "\"code\":\"$3\"" "$TMP/$1.body" || fail "$1: not $3: $(head -c 300 "$TMP/$1.body")"
}
post ok
if [ "$(cat "$TMP/ok.code")" = 501 ]; then
    echo "docx_api_test: skipped (hymt built without libzip and libxml2)"; exit 77
fi
expect ok 200
checks=$((checks + 1))
python3 - "$TMP/in.b64" "$TMP/ok.body" <<'PY' || fail "the answer is not the same document with other text"
import base64, io, json, re, sys, zipfile
a = zipfile.ZipFile(io.BytesIO(base64.b64decode(open(sys.argv[1]).read())))
j = json.load(open(sys.argv[2]))
assert j['format'] == 'docx' and j['paragraphs'] == 2 and j['target_lang'] == 'de', j
b = zipfile.ZipFile(io.BytesIO(base64.b64decode(j['content'])))
assert sorted(a.namelist()) == sorted(b.namelist())
for n in a.namelist():
    if n != 'word/document.xml':
        assert a.read(n) == b.read(n), n
x, y = (z.read('word/document.xml').decode() for z in (a, b))
strip = lambda s: re.sub(r'(<w:t(?: [^>]*)?>)[^<]*(</w:t>)', r'\1\2', s.split('?>', 1)[1].strip())
assert strip(x) == strip(y)
tx = lambda s: re.findall(r'<w:t(?: [^>]*)?>([^<]*)</w:t>', s)
assert len(tx(y)) == 3 and tx(x) != tx(y)
PY
post notb64; expect notb64 400 invalid_content
post nodoc; expect nodoc 400 invalid_document
post stream; expect stream 400 invalid_parameter
post long; expect long 413 text_too_long

# a clean stop (under ASan a leak would make the exit status non-zero)
checks=$((checks + 1))
kill "$PID"; wait "$PID"; rc=$?; PID=
[ $rc = 0 ] || { fail "the server exited $rc after SIGTERM"; tail -20 "$TMP/log"; }

echo "docx_api_test: $checks checks, $fails failed"
[ $fails -eq 0 ]
