#!/bin/sh
# pull_test.sh HYMT DATA_DIR: `hymt pull` against tests/hub/fake_hub.py (a local imitation of
# the hub's API and resolve endpoints; never the network): the cache layout huggingface_hub
# makes (blobs named by sha256 / git blob id, relative symlinks, refs/main), -m REPO after
# it, a revision tag, --include/--exclude, a relative redirect (a renamed repo), the CDN
# redirect, a transfer broken halfway (resumed with Range in the same run, and from a
# .incomplete left by an earlier run), a checksum mismatch (refused: nothing in blobs/ or
# snapshots/), a 404 repo and a 404 file, a gated repo (401 without HF_TOKEN, the token sent
# as Bearer), HF_ENDPOINT checked, progress lines when stderr is not a terminal.
HYMT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
DATA=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d /tmp/hymt-pull-XXXXXX)
HUB_PID=""
trap '[ -n "$HUB_PID" ] && kill $HUB_PID 2>/dev/null; rm -rf "$TMP"' EXIT
export NO_PROXY='*' no_proxy='*'
unset HF_TOKEN HF_HOME HUGGINGFACE_HUB_CACHE
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
has() { checks=$((checks + 1)); grep -qF -- "$2" "$1" || { fail "$3: '$2' not in:"; sed 's/^/  /' "$1"; }; }
hasnt() { checks=$((checks + 1)); ! grep -qF -- "$2" "$1" || { fail "$3: '$2' in:"; sed 's/^/  /' "$1"; }; }

python3 "$HERE/fake_hub.py" "$DATA/tiny-mqa" "$TMP/port" "$TMP/hub.log" &
HUB_PID=$!
i=0
while [ ! -s "$TMP/port" ]; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "FAIL: fake hub did not start"; exit 1; }
    sleep 0.05
done
export HF_ENDPOINT="http://127.0.0.1:$(cat "$TMP/port")/"
export HF_HUB_CACHE="$TMP/cache"
COMMIT=0123456789abcdef0123456789abcdef01234567
R=$HF_HUB_CACHE/models--test--tiny
S=$R/snapshots/$COMMIT
sha() { sha256sum "$1" | cut -c1-64; }
gitsha() { { printf 'blob %d\0' "$(wc -c <"$1")"; cat "$1"; } | sha1sum | cut -c1-40; }

# the whole repo; the layout; the model usable by repo id
run 0 "pull test/tiny" "$HYMT" pull test/tiny
has "$TMP/out" "$S" "pull prints the snapshot"
checks=$((checks + 6))
[ "$(cat "$R/refs/main")" = $COMMIT ] || fail "refs/main does not hold the commit"
st=$(sha "$DATA/tiny-mqa/model.safetensors")
[ "$(readlink "$S/model.safetensors")" = "../../blobs/$st" ] || fail "LFS file not linked to blobs/<sha256>"
[ "$(readlink "$S/config.json")" = "../../blobs/$(gitsha "$DATA/tiny-mqa/config.json")" ] || fail "plain file not linked to blobs/<git blob id>"
[ "$(readlink "$S/sub/notes.txt")" = "../../../blobs/$(printf 'a file in a folder\n' >"$TMP/n"; gitsha "$TMP/n")" ] || fail "nested file's link"
cmp -s "$S/model.safetensors" "$DATA/tiny-mqa/model.safetensors" || fail "model.safetensors differs"
[ -z "$(find "$R" -name '*.incomplete')" ] || fail ".incomplete files left"
has "$TMP/err" "hymt pull: 100%" "progress lines when not a terminal"
hasnt "$TMP/err" "$(printf '\r')" "no carriage returns when not a terminal"
grep -c '^GET /cdn/' "$TMP/hub.log" >"$TMP/n1"
run 0 "tokenize the pulled model by repo id" sh -c "echo hello | '$HYMT' tokenize -m test/tiny"
run 0 "pull again: nothing fetched" "$HYMT" pull test/tiny
checks=$((checks + 1))
[ "$(grep -c '^GET /cdn/' "$TMP/hub.log")" = "$(cat "$TMP/n1")" ] || fail "a second pull downloaded again"

# a progress bar redrawn with \r on a terminal (script gives the pull one)
if command -v script >/dev/null 2>&1; then
    checks=$((checks + 1))
    HF_HUB_CACHE="$TMP/cache-tty" script -qec "'$HYMT' pull test/tiny" /dev/null >"$TMP/tty" 2>&1
    grep -q "$(printf '\r')\[=*  *\] *[0-9]*%" "$TMP/tty" && grep -q "100%" "$TMP/tty" ||
        { fails=$((fails + 1)); echo "FAIL: no progress bar on a terminal:"; cat -v "$TMP/tty"; }
fi

# a tag; --include/--exclude; a relative redirect (renamed repo) followed by HEAD and GET
run 0 "pull @v1 --include" "$HYMT" pull test/renamed@v1 --include '*.json' --exclude 'golden*'
RR=$HF_HUB_CACHE/models--test--renamed
checks=$((checks + 4))
[ "$(cat "$RR/refs/v1")" = $COMMIT ] || fail "refs/v1 not written"
[ -e "$RR/snapshots/$COMMIT/config.json" ] || fail "--include: config.json missing"
[ ! -e "$RR/snapshots/$COMMIT/golden.json" ] || fail "--exclude: golden.json pulled"
[ ! -e "$RR/snapshots/$COMMIT/model.safetensors" ] || fail "--include: model.safetensors pulled"
has "$TMP/hub.log" "HEAD /test/tiny/resolve/$COMMIT/config.json" "relative redirect followed"
run 0 "pull @commit" "$HYMT" pull "test/renamed@$COMMIT" --include config.json
checks=$((checks + 1))
[ ! -e "$RR/refs/$COMMIT" ] || fail "a commit revision wrote refs/<commit>"
run 0 "pull a folder pattern" "$HYMT" pull test/renamed --include sub/
checks=$((checks + 1))
[ -e "$RR/snapshots/$COMMIT/sub/notes.txt" ] || fail "'sub/' pattern"
run 1 "nothing matches" "$HYMT" pull test/tiny --include '*.gguf'
has "$TMP/err" "no file matches" "empty selection named"

# a transfer broken halfway: resumed with Range in the same run
: >"$TMP/hub.log"
run 0 "truncated transfers resumed" "$HYMT" pull test/truncate
has "$TMP/err" "model.safetensors: transfer broken after 165680 of 331360 bytes" "break reported"
has "$TMP/hub.log" "range=bytes=165680-" "resumed with Range"
checks=$((checks + 1))
cmp -s "$HF_HUB_CACHE/models--test--truncate/snapshots/$COMMIT/model.safetensors" "$DATA/tiny-mqa/model.safetensors" || fail "resumed file differs"
# resumed from a .incomplete an earlier run left
RT=$HF_HUB_CACHE/models--test--tiny2
mkdir -p "$HF_HUB_CACHE/models--test--gated/blobs"
head -c 100000 "$DATA/tiny-mqa/model.safetensors" >"$HF_HUB_CACHE/models--test--gated/blobs/$st.incomplete"
: >"$TMP/hub.log"
run 0 "gated with a token, resuming a .incomplete" env HF_TOKEN=secret-token "$HYMT" pull test/gated --include model.safetensors
has "$TMP/hub.log" "range=bytes=100000- auth=-" "resumed from the earlier run's bytes; the token not sent to the CDN"
has "$TMP/hub.log" "GET /test/gated/resolve/$COMMIT/model.safetensors range=bytes=100000- auth=Bearer secret-token" "token sent to the hub"
has "$TMP/err" "resuming at 100000 of 331360 bytes" "resume reported"
checks=$((checks + 1))
cmp -s "$HF_HUB_CACHE/models--test--gated/snapshots/$COMMIT/model.safetensors" "$DATA/tiny-mqa/model.safetensors" || fail "file resumed across runs differs"

# a checksum mismatch: refused, nothing kept
run 1 "checksum mismatch" "$HYMT" pull test/corrupt
has "$TMP/err" "sha256 " "mismatch reported"
has "$TMP/err" "the download was removed" "mismatch: removal said"
RC=$HF_HUB_CACHE/models--test--corrupt
checks=$((checks + 2))
[ -z "$(find "$RC/snapshots" -mindepth 1 2>/dev/null)" ] || fail "checksum mismatch left something in snapshots/"
[ -z "$(find "$RC/blobs" -name '*.incomplete')" ] || fail "checksum mismatch left a .incomplete"
[ ! -e "$RC/refs/main" ] || fail "checksum mismatch wrote refs/main"

# 404s, 401, bad input
run 1 "absent repo" "$HYMT" pull test/absent
has "$TMP/err" "test/absent@main: not found (HTTP 404)" "404 repo"
run 1 "absent revision" "$HYMT" pull test/tiny@nope
has "$TMP/err" "not found (HTTP 404)" "404 revision"
run 1 "file 404" "$HYMT" pull test/holes
has "$TMP/err" "gone.bin: not found (HTTP 404)" "404 file"
checks=$((checks + 1))
[ ! -e "$HF_HUB_CACHE/models--test--holes/snapshots/$COMMIT" ] || fail "a failed pull left a snapshot"
run 1 "gated without a token" "$HYMT" pull test/gated
has "$TMP/err" "access denied (HTTP 401)" "401 explained"
has "$TMP/err" "HF_TOKEN" "401 names HF_TOKEN"
run 2 "not a repo id" "$HYMT" pull ../etc
run 2 "no repo" "$HYMT" pull
run 1 "bad endpoint" env HF_ENDPOINT=ftp://x "$HYMT" pull test/tiny
has "$TMP/err" "HF_ENDPOINT must be an http:// or https:// URL" "endpoint checked"
run 1 "nothing listening" env HF_ENDPOINT=http://127.0.0.1:9 "$HYMT" pull test/tiny
run 0 "pull --help" "$HYMT" pull --help
has "$TMP/out" "usage: hymt pull" "pull usage"

echo "$checks checks, $fails failed"
[ $fails = 0 ]
