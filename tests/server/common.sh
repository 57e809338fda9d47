# common.sh: what the server shell tests share; sourced (". FILE") once HYMT and DATA are set.
# serve_test_init NAME: loopback without a proxy, TMP (a fresh /tmp/hymt-NAME-* folder,
#   removed at exit, when every server in $pids is killed), fails=0, checks=0.
# fail MESSAGE: counts a failure and prints it; ok: counts a check.
# serve_start NAME ARGS...: `hymt serve -m DATA/tiny-mqa --port 0 ARGS` in the background,
#   log $TMP/NAME.log; sets PID (added to pids) and PORT; a server that does not start
#   ends the test.
# serve_stop LOG: SIGTERM to PID; a check that it exits 0 and that LOG has no sanitizer
#   report; PID and pids emptied.
. "$(dirname "$0")/../serve_ready.sh"

serve_test_init() {
    export NO_PROXY='*' no_proxy='*'
    TMP=$(mktemp -d "/tmp/hymt-$1-XXXXXX")
    PID=""
    pids=""
    fails=0
    checks=0
    trap serve_test_cleanup EXIT
}
serve_test_cleanup() {
    for _p in $pids; do kill "$_p" 2>/dev/null; done
    rm -rf "$TMP"
}
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }
ok() { checks=$((checks + 1)); }

serve_start() {
    name=$1; shift
    : >"$TMP/$name.log"
    "$HYMT" serve -m "$DATA/tiny-mqa" --port 0 "$@" 2>"$TMP/$name.log" &
    PID=$!
    pids="$pids $PID"
    serve_ready "$TMP/$name.log" $PID || exit 1
}

serve_stop() {
    kill -TERM $PID
    wait $PID
    _rc=$?
    PID=""
    pids=""
    ok; [ $_rc = 0 ] || fail "serve exited $_rc after SIGTERM"
    if grep -q "ERROR: AddressSanitizer\|runtime error:" "$1"; then
        fail "sanitizer report"; grep -A5 "Sanitizer\|runtime error" "$1" | head -40
    fi
}
