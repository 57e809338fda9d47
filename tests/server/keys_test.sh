#!/bin/sh
# keys_test.sh HYMT DATA_DIR: `hymt serve --api-keys-file` (named keys, per-key rate
# limits: 429 with Retry-After in the JSON error shape), the single --api-key beside them,
# /metrics behind --metrics-key-file, per-key counters in /metrics, key names (never keys)
# in the log, the file's validation (FILE:LINE errors that never show the key), and the
# settings sources (HYMT_API_KEYS_FILE, --config, --print-config masking).
HYMT=$1
DATA=$2
. "$(dirname "$0")/common.sh"
serve_test_init keys
cd "$TMP" || exit 1

KA=alice-0123456789abcdef0123
KB=bob-fedcba9876543210fedcba
KC=carol-00112233445566778899
KS=single-key-from-the-flag
KM=metrics-9f8e7d6c5b4a39281706
SECRETS="$KA $KB $KC $KS $KM"

# ---- validation: exit 1, "FILE:LINE: ..." on one line, the key never shown ----
bad() { # bad EXPECTED_TEXT (the file is keys.bad)
    "$HYMT" serve -m "$DATA/tiny-mqa" --port 0 --api-keys-file keys.bad </dev/null >out.txt 2>err.txt
    rc=$?
    ok
    if [ $rc != 1 ] || ! grep -qF -- "$1" err.txt || [ "$(wc -l <err.txt)" != 1 ]; then
        fail "keys file: rc $rc, expected 1 and one line with '$1':"; cat keys.bad; cat err.txt
    fi
    for k in $SECRETS short-key; do
        grep -qF -- "$k" err.txt && fail "the error shows a key: $(cat err.txt)"
    done
}
printf '# comment\nalice short-key\n' >keys.bad; bad "keys.bad:2: alice's key has 9 characters; 16-512 are allowed"
printf 'al!ce %s\n' "$KA" >keys.bad; bad "keys.bad:1: the name must be 1-64 of"
printf 'alice %s\n\nalice %s\n' "$KA" "$KB" >keys.bad; bad "keys.bad:3: the name alice is taken (line 1)"
printf 'alice %s\nbob %s 5/min\n' "$KA" "$KA" >keys.bad; bad "keys.bad:2: the same key as alice's (line 1)"
printf 'alice %s 10/day\n' "$KA" >keys.bad; bad "keys.bad:1: the rate '10/day' is not N/s, N/min or N/h"
printf 'alice %s 0/s\n' "$KA" >keys.bad; bad "keys.bad:1: the rate '0/s' is not"
printf 'alice %s 5/min extra\n' "$KA" >keys.bad; bad "keys.bad:1: 4 fields; expected NAME KEY [RATE]"
printf 'alice\n' >keys.bad; bad "keys.bad:1: 1 field; expected NAME KEY [RATE]"
printf 'alice %s\001x\n' "$KA" >keys.bad; bad "keys.bad:1: a control or non-ASCII byte (0x01)"
printf '# nothing\n\n' >keys.bad; bad "--api-keys-file keys.bad: no keys in it"
python3 -c "print(''.join('k%d key-%020d\\n' % (i, i) for i in range(4097)), end='')" >keys.bad
bad "keys.bad:4097: more than 4096 keys"
rm -f keys.bad; bad "--api-keys-file keys.bad: cannot read it: No such file"

# ---- a server with three named keys, the single key and a metrics key ----
printf '# hymt keys: NAME KEY [RATE]\nalice  %s  3/min\nbob\t%s\n   # indented comment\n\ncarol %s 2/s\r\n' \
    "$KA" "$KB" "$KC" >keys.txt
printf '%s\n' "$KM" >metrics.key
: >serve.log
"$HYMT" serve -m "$DATA/tiny-mqa" --port 0 --api-keys-file keys.txt --api-key-file /dev/stdin \
    --metrics-key-file metrics.key 2>serve.log <<EOF &
$KS
EOF
PID=$! pids=$!
serve_ready serve.log $PID || exit 1
U="http://127.0.0.1:$PORT"
get() { # get NAME PATH [KEY]: status in NAME.code, body NAME.json, headers NAME.hdr
    if [ -n "${3:-}" ]; then set -- "$1" "$2" -H "Authorization: Bearer $3"; else set -- "$1" "$2"; fi
    _n=$1 _p=$2; shift 2
    curl -s -o "$_n.json" -D "$_n.hdr" -w '%{http_code}' "$@" "$U$_p" >"$_n.code"
}
expect() { # expect NAME STATUS [ERROR_CODE]
    ok
    [ "$(cat "$1.code")" = "$2" ] || { fail "$1: HTTP $(cat "$1.code"), expected $2"; cat "$1.json"; echo; return; }
    [ -z "${3:-}" ] || python3 -c "import json,sys; e=json.load(open('$1.json'))['error']; sys.exit(0 if e['code']=='$3' and e['type'] and e['message'] else 1)" ||
        fail "$1: not the JSON error $3: $(cat "$1.json")"
}

get nokey /v1/models; expect nokey 401 invalid_api_key
get wrongkey /v1/models "$KA-x"; expect wrongkey 401 invalid_api_key
get health /health; expect health 200
get single /v1/models "$KS"; expect single 200
# alice: 3/min -> three requests, then 429 with Retry-After about 20 s
for n in 1 2 3; do get alice$n /v1/models "$KA"; expect alice$n 200; done
get alice4 /v1/models "$KA"; expect alice4 429 rate_limited
ra=$(sed -n 's/^Retry-After: *\([0-9]*\).*/\1/ip' alice4.hdr)
ok; [ -n "$ra" ] && [ "$ra" -ge 15 ] && [ "$ra" -le 20 ] || fail "alice's Retry-After '$ra', expected 15..20 (one request per 20 s)"
ok; grep -q '"type":"rate_limit_error"' alice4.json && grep -q 'alice' alice4.json || fail "429 body: $(cat alice4.json)"
# bob has no limit; alice's limit does not touch him
for n in 1 2 3 4 5 6 7 8 9 10; do get bob /v1/models "$KB"; expect bob 200; done
# carol: 2/s -> six requests at once on one connection: two pass (more only as time
# refills the bucket, 2 a second), the rest are 429 with Retry-After 1; a second later one
# passes again
t0=$(date +%s.%N)
set --
for i in 1 2 3 4 5 6; do set -- "$@" -o /dev/null "$U/v1/models"; done
curl -s -w '%{http_code}\n' -H "Authorization: Bearer $KC" "$@" >carol.codes
t1=$(date +%s.%N)
c200=$(grep -c '^200$' carol.codes); c429=$(grep -c '^429$' carol.codes)
allowed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print 2 + int((b - a) * 2 + 1) }')
ok; [ $((c200 + c429)) = 6 ] && [ "$c429" -ge 1 ] && [ "$c200" -ge 2 ] && [ "$c200" -le "$allowed" ] ||
    fail "carol at 2/s: $c200 passed, $c429 refused (at most $allowed may pass)"
get carol3 /v1/models "$KC"
[ "$(cat carol3.code)" = 429 ] || { c200=$((c200 + 1)); get carol3 /v1/models "$KC"; }
expect carol3 429 rate_limited; c429=$((c429 + 1))
ok; grep -qi '^Retry-After: 1' carol3.hdr || fail "carol's Retry-After: $(grep -i retry carol3.hdr)"
sleep 1.1
get carol4 /v1/models "$KC"; expect carol4 200; c200=$((c200 + 1))
# a translation through a named key
curl -s -o tr.json -w '%{http_code}' -H "Authorization: Bearer $KB" -H 'Content-Type: application/json' \
    -d '{"text":"Hello.","target_lang":"de","max_tokens":4}' "$U/api/translate" >tr.code
expect tr 200

# the compatible routes take the same keys: LibreTranslate's api_key in the body, DeepL's
# Authorization: DeepL-Auth-Key
curl -s -o lt.json -w '%{http_code}' -H 'Content-Type: application/json' \
    -d "{\"q\":\"Hello.\",\"source\":\"en\",\"target\":\"de\",\"api_key\":\"$KB\"}" "$U/translate" >lt.code
expect lt 200
curl -s -o lt_bad.json -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"q":"Hello.","source":"en","target":"de","api_key":"nope-nope-nope-nope"}' "$U/translate" >lt_bad.code
ok; [ "$(cat lt_bad.code)" = 403 ] || fail "LibreTranslate with a wrong api_key: HTTP $(cat lt_bad.code)"
curl -s -o dl.json -w '%{http_code}' -H "Authorization: DeepL-Auth-Key $KB" "$U/v2/languages" >dl.code
expect dl 200

# /metrics: its own key only
get m_none /metrics; expect m_none 401 invalid_api_key
get m_api /metrics "$KB"; expect m_api 401 invalid_api_key
get m /metrics "$KM"; expect m 200
metric() { awk -v n="$1" '$1 == n { print $2 }' m.json; }
for pair in 'alice 3 1' 'bob 13 0' "carol $c200 $c429" 'default 1 0'; do
    set -- $pair
    ok; [ "$(metric "hymt_api_key_requests_total{key=\"$1\"}")" = "$2" ] ||
        fail "requests of $1: '$(metric "hymt_api_key_requests_total{key=\"$1\"}")', expected $2"
    ok; [ "$(metric "hymt_api_key_rate_limited_total{key=\"$1\"}")" = "$3" ] ||
        fail "rate-limited of $1: '$(metric "hymt_api_key_rate_limited_total{key=\"$1\"}")', expected $3"
done
if command -v promtool >/dev/null; then
    ok; promtool check metrics <m.json >promtool.txt 2>&1 || { fail "promtool"; cat promtool.txt; }
fi

# the log: names, never keys
ok; grep -q 'http: GET /v1/models 429 .* key=alice' serve.log || fail "no 429 log line with key=alice"
ok; grep -q 'http: POST /api/translate 200 .* key=bob' serve.log || fail "no translate log line with key=bob"
ok; grep -q 'http: GET /v1/models 200 .* key=default' serve.log || fail "no log line with key=default"
for k in $SECRETS; do
    ok; grep -qF -- "$k" serve.log && fail "a key is in the log"
done
serve_stop serve.log

# ---- settings: HYMT_API_KEYS_FILE and --config; --print-config masks the metrics key ----
printf 'api-keys-file = %s/keys.txt\nmetrics-key = %s\n' "$TMP" "$KM" >serve.conf
HYMT_API_KEYS_FILE=$TMP/other.txt "$HYMT" serve -m "$DATA/tiny-mqa" --config serve.conf --print-config >pc.txt 2>&1
ok; grep -q "^api-keys-file *= $TMP/other.txt .*HYMT_API_KEYS_FILE" pc.txt || { fail "--print-config: api-keys-file from the environment"; cat pc.txt; }
ok; grep -q "^metrics-key *= \*" pc.txt && ! grep -qF "$KM" pc.txt || { fail "--print-config shows the metrics key"; cat pc.txt; }
HYMT_API_KEYS_FILE=$TMP/missing.txt "$HYMT" serve -m "$DATA/tiny-mqa" --port 0 >/dev/null 2>err.txt
ok; grep -q "missing.txt: cannot read it" err.txt || { fail "HYMT_API_KEYS_FILE not used"; cat err.txt; }

echo "keys_test: $checks checks, $fails failures"
[ $fails = 0 ]
