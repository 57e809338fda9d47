#!/bin/sh
# settings_test.sh HYMT DATA_DIR: `hymt serve` settings from flags, HYMT_* environment
# variables and --config files, with the precedence flag > environment > config file >
# default, as --print-config reports them (and where each came from, secrets masked);
# --api-key-file / HYMT_API_KEY_FILE / "api-key-file =" reading the key from a file; bad
# values from each source refused with a line naming the source; and the key really in
# force on a running server, whose log (HYMT_LOG_FORMAT=json) is JSON lines.
HYMT=$1
DATA=$2
TMP=$(mktemp -d /tmp/hymt-settings-XXXXXX)
PID=""
trap '[ -n "$PID" ] && kill $PID 2>/dev/null; rm -rf "$TMP"' EXIT
export NO_PROXY='*' no_proxy='*'
for v in $(env | sed -n 's/^\(HYMT_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
fails=0
checks=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }
run() { # run WANT DESCRIPTION COMMAND...
    want=$1 what=$2; shift 2
    checks=$((checks + 1))
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    [ "$got" = "$want" ] || { fail "$what: exit $got, expected $want: $*"; sed 's/^/  /' "$TMP/err"; }
}
# line NAME VALUE SOURCE: --print-config's line for NAME has VALUE and SOURCE
line() {
    checks=$((checks + 1))
    l=$(grep "^$1 " "$TMP/out")
    case "$l" in
    *"= $2 "*"# $3"*) ;;
    *) fail "$1: expected '= $2 ... # $3', got '$l'" ;;
    esac
}

cat >"$TMP/a.conf" <<'CONF'
# a comment, then blank lines

port = 9001
host = 10.0.0.1
max_queue = 77
api-key = "key from config"
timeout = 12.5
fp8-gemm = true
CONF
printf 'key-from-file\n' >"$TMP/key"

# flag > environment > config file > default, per setting
run 0 "print-config" env HYMT_PORT=9002 HYMT_MAX_QUEUE=88 "$HYMT" serve --config "$TMP/a.conf" \
    --print-config --max-queue 99 --drain 5
line port 9002 "environment HYMT_PORT"       # env over config
line max-queue 99 "flag --max-queue"         # flag over env and config
line host 10.0.0.1 "config $TMP/a.conf:4"    # config over default
line timeout 12.5 "config $TMP/a.conf:7"
line fp8-gemm true "config $TMP/a.conf:8"
line drain 5 "flag --drain"
line api-key '********' "config $TMP/a.conf:6"
checks=$((checks + 1))
grep -q "key from config" "$TMP/out" && fail "the secret is printed"
run 0 "defaults only" "$HYMT" serve --print-config
line host 127.0.0.1 default
line port 8080 default
checks=$((checks + 1))
grep -q "^# api-key" "$TMP/out" || fail "unset api-key not shown as unset"
# HYMT_CONFIG names the file; --config wins over it
run 0 "HYMT_CONFIG" env HYMT_CONFIG="$TMP/a.conf" "$HYMT" serve --print-config
line port 9001 "config $TMP/a.conf:3"
printf 'port = 9100\n' >"$TMP/b.conf"
run 0 "--config over HYMT_CONFIG" env HYMT_CONFIG="$TMP/a.conf" "$HYMT" serve --config "$TMP/b.conf" --print-config
line port 9100 "config $TMP/b.conf:1"
# the key from a file, by flag, environment and config
run 0 "--api-key-file" "$HYMT" serve --api-key-file "$TMP/key" --print-config
line api-key '********' "flag --api-key-file $TMP/key"
run 0 "HYMT_API_KEY_FILE" env HYMT_API_KEY_FILE="$TMP/key" "$HYMT" serve --print-config
line api-key '********' "environment HYMT_API_KEY_FILE=$TMP/key"
printf 'api-key-file = %s\n' "$TMP/key" >"$TMP/c.conf"
run 0 "api-key-file in a config" "$HYMT" serve --config "$TMP/c.conf" --print-config
line api-key '********' "config $TMP/c.conf:1: api-key-file"
# bad values name their source
run 2 "bad env value" env HYMT_PORT=http "$HYMT" serve --print-config
grep -q "HYMT_PORT: expected an integer" "$TMP/err" || fail "bad env value not named"
printf 'port = 8080\nport = 8081\n' >"$TMP/d.conf"
run 2 "setting twice" "$HYMT" serve --config "$TMP/d.conf" --print-config
grep -q "d.conf:2: 'port' set twice" "$TMP/err" || fail "duplicate setting not named"
printf 'no-such = 1\n' >"$TMP/e.conf"
run 2 "unknown setting" "$HYMT" serve --config "$TMP/e.conf" --print-config
grep -q "e.conf:1: unknown setting 'no-such'" "$TMP/err" || fail "unknown setting not named"
printf 'port\n' >"$TMP/f.conf"
run 2 "line without =" "$HYMT" serve --config "$TMP/f.conf" --print-config
printf 'fp8-gemm = maybe\n' >"$TMP/g.conf"
run 2 "bad boolean" "$HYMT" serve --config "$TMP/g.conf" --print-config
run 2 "missing config" "$HYMT" serve --config "$TMP/none.conf" --print-config
: >"$TMP/empty"
run 2 "empty key file" "$HYMT" serve --api-key-file "$TMP/empty" --print-config
run 2 "missing key file" "$HYMT" serve --api-key-file "$TMP/none" --print-config
run 2 "settings are serve's: not generate's" "$HYMT" generate --print-config

# the key read from the environment's file is in force
: >"$TMP/serve.log"
HYMT_API_KEY_FILE="$TMP/key" HYMT_MODEL="$DATA/tiny-mqa" HYMT_PORT=0 HYMT_LOG_FORMAT=json \
    "$HYMT" serve 2>"$TMP/serve.log" &
PID=$!
i=0
while ! grep -q "serve: ready" "$TMP/serve.log"; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 $PID 2>/dev/null; then fail "serve did not start"; cat "$TMP/serve.log"; break; fi
    sleep 0.05
done
PORT=$(sed -n 's|.*serve: ready: .*:\([0-9][0-9]*\)/".*|\1|p' "$TMP/serve.log")
checks=$((checks + 2))
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/models")
[ "$code" = 401 ] || fail "no key: HTTP $code, expected 401"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer key-from-file' "http://127.0.0.1:$PORT/v1/models")
[ "$code" = 200 ] || fail "key from the file: HTTP $code, expected 200"

# the server's log in JSON lines (HYMT_LOG_FORMAT=json): every line an object with an ISO
# 8601 time, the request lines among them (a refused one too)
curl -s -o /dev/null "http://127.0.0.1:$PORT/no%01such" || true
kill $PID; wait $PID 2>/dev/null; PID=""
checks=$((checks + 1))
python3 -c '
import json, re, sys
lines = open(sys.argv[1], "rb").read().decode("utf-8").splitlines()
reqs = 0
for l in lines:
    j = json.loads(l)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$", j["ts"]), l
    reqs += j["msg"].startswith("http: GET /v1/models")
assert reqs >= 2, "request lines: %d" % reqs
assert any(" 400 " in json.loads(l)["msg"] for l in lines), "no line for the refused request"
' "$TMP/serve.log" || { fails=$((fails + 1)); echo "FAIL: serve log is not JSON lines:"; cat "$TMP/serve.log"; }

echo "$checks checks, $fails failed"
[ $fails = 0 ]
