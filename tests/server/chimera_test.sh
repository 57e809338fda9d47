#!/bin/sh
# chimera_test.sh HYMT DATA_DIR: `hymt serve --chimera` end to end (issue 18 item 1) on the
# tiny checkpoint, with a tiny "Chimera" checkpoint made here: a copy of tiny-mqa, so every
# tensor is identical and must be shared (the load's log line says 25 of 25). Checked: one
# KV budget split between the two engines at start-up (the two sizes add up to
# --kv-memory, and the pool's block count is the same after the requests); an ensemble
# answer with its candidates; the same seed gives the same answer, another seed other
# candidates; a stream carries candidates progress, then the candidates, then the fused
# deltas; ensemble out of 2..6, "candidates" without an ensemble, no source language, and
# a server without --chimera: 400.
HYMT=$1
DATA=$2
. "$(dirname "$0")/common.sh"
serve_test_init chimera
[ -n "$KEEP" ] && trap - EXIT

start() { # start NAME ARGS...: sets PORT and PID; log in $TMP/NAME.log
    name=$1; shift
    serve_start "$name" --kv-memory 16M "$@"
    U="http://127.0.0.1:$PORT"
}
post() { # post NAME JSON: body $TMP/NAME.body, status $TMP/NAME.code
    curl -s -o "$TMP/$1.body" -w '%{http_code}' -H 'Content-Type: application/json' \
        -d "$2" "$U/api/translate" >"$TMP/$1.code"
}
code() {
    checks=$((checks + 1))
    got=$(cat "$TMP/$1.code")
    [ "$got" = "$2" ] || { fail "$1: HTTP $got, expected $2"; head -c 600 "$TMP/$1.body"; echo; }
}
py() { # py NAME EXPR: a Python assertion on the JSON body (j)
    checks=$((checks + 1))
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" \
        "$TMP/$1.body" 2>"$TMP/py.err" || { fail "$1: not true: $2"; head -c 600 "$TMP/$1.body"; echo; }
}
metric() { curl -s "$U/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }

mkdir "$TMP/chimera"
cp "$DATA/tiny-mqa/config.json" "$DATA/tiny-mqa/model.safetensors" \
    "$DATA/tiny-mqa/tokenizer.json" "$DATA/tiny-mqa/tokenizer_config.json" "$TMP/chimera/"

start a --chimera "$TMP/chimera"
checks=$((checks + 1))
grep -q "weights shared with the model loaded before: 25 of 25 tensors" "$TMP/a.log" ||
    fail "the identical Chimera checkpoint was not shared"
checks=$((checks + 1))
line=$(grep -o "one KV budget of [0-9]* bytes: translation engine [0-9]*, Chimera [0-9]*" "$TMP/a.log")
set -- $(echo "$line" | tr -cs '0-9' ' ')
[ "$1" = 16777216 ] && [ $(($2 + $3)) -eq "$1" ] && [ "$3" -gt 0 ] && [ "$2" -gt "$3" ] ||
    fail "KV budget split: '$line'"
blocks0=$(metric hymt_kv_blocks_capacity)
curl -s "$U/v1/models" >"$TMP/models.body"
py models "j['data'][0]['ensemble_max'] == 6"   # the page shows its best-quality switch

TEXT='The weather is nice today. We should go to the park!\n\nA second paragraph.'
ask() { # ask NAME SEED [more fields]
    post "$1" "{\"text\":\"$TEXT\",\"source_lang\":\"en\",\"target_lang\":\"de\",\"ensemble\":3,\"seed\":$2,\"max_tokens\":16$3}"
}
ask e1 11 ',"candidates":true'
code e1 200
py e1 "j['ensemble'] == 3 and j['segments_fused'] == j['segments'] >= 2 and j['translation']"
py e1 "len(j['candidates']) == 3 and all(isinstance(c, str) and c for c in j['candidates'])"
py e1 "len(set(j['candidates'])) > 1"
ask e2 11 ',"candidates":true'
code e2 200
checks=$((checks + 1))
python3 - "$TMP/e1.body" "$TMP/e2.body" <<'PY' || fail "the same seed gave another answer"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if a['translation'] == b['translation'] and a['candidates'] == b['candidates'] else 1)
PY
ask e3 12 ',"candidates":true'
code e3 200
checks=$((checks + 1))
python3 - "$TMP/e1.body" "$TMP/e3.body" <<'PY' || fail "another seed gave the same candidates"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if a['candidates'] != b['candidates'] else 1)
PY
ask plain 11 ''
code plain 200
py plain "'candidates' not in j and j['ensemble'] == 3"

# the stream: candidates' progress, their texts, then the fused text
curl -s -N -H 'Content-Type: application/json' -d "{\"text\":\"$TEXT\",\"source_lang\":\"en\",\"target_lang\":\"de\",\"ensemble\":2,\"seed\":3,\"max_tokens\":12,\"stream\":true,\"candidates\":true}" \
    "$U/api/translate" >"$TMP/sse.txt"
checks=$((checks + 1))
python3 - "$TMP/sse.txt" <<'PY' || fail "stream events out of order"
import json, sys
ev = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith('data: {')]
kinds = [e['type'] for e in ev]
first_delta = kinds.index('delta')
seg0 = [e for e in ev[:first_delta] if e.get('segment') == 0]
ok = (any(e['type'] == 'candidates_progress' and e['done'] == e['of'] == 2 for e in seg0)
      and any(e['type'] == 'candidates' and len(e['candidates']) == 2 for e in seg0)
      and kinds[-1] == 'done' and ev[-1]['segments_fused'] == ev[-1]['segments'])
sys.exit(0 if ok else 1)
PY

# refusals
for k in 1 7 '"3"' 2.5; do
    post bad "{\"text\":\"Hello.\",\"source_lang\":\"en\",\"target_lang\":\"de\",\"ensemble\":$k}"
    code bad 400
    py bad "j['error']['code'] == 'invalid_parameter' and 'ensemble' in j['error']['message']"
done
post nocand '{"text":"Hello.","source_lang":"en","target_lang":"de","candidates":true}'
code nocand 400
post nosrc '{"text":"2026-12-01 10:00","target_lang":"de","ensemble":2}' # no language shows
code nosrc 400
py nosrc "'source language' in j['error']['message']"
checks=$((checks + 1))
[ "$(metric hymt_kv_blocks_capacity)" = "$blocks0" ] && [ -n "$blocks0" ] ||
    fail "KV pool changed: $blocks0 -> $(metric hymt_kv_blocks_capacity)"
checks=$((checks + 1)) # a clean stop (under ASan a leak would make the status non-zero)
kill $PID; wait $PID; rc=$?
[ $rc = 0 ] || { fail "server a exited $rc after SIGTERM"; tail -20 "$TMP/a.log"; }

start b
curl -s "$U/v1/models" >"$TMP/models.body"
py models "'ensemble_max' not in j['data'][0]"
post none '{"text":"Hello.","source_lang":"en","target_lang":"de","ensemble":2}'
code none 400
py none "j['error']['code'] == 'ensemble_unavailable' and '--chimera' in j['error']['message']"
kill $PID; wait $PID 2>/dev/null

echo "chimera_test: $checks checks, $fails failed"
[ $fails -eq 0 ]
