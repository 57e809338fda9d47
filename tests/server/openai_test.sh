#!/bin/sh
# openai_test.sh HYMT MODEL SRC NPM_DIR: the official openai npm client (pinned below,
# installed into NPM_DIR in the build folder on first use, never committed) against
# `hymt serve`: /v1/models, /v1/chat/completions streamed and not, /v1/completions, and
# the client's error classes for 400 and 401 (tests/server/openai_test.mjs).
. "$(dirname "$0")/../serve_ready.sh"
set -u
HYMT=$1
MODEL=$2
SRC=$3
NPM_DIR=$4
OPENAI_PKG=openai@6.49.0
export NO_PROXY='*' no_proxy='*'
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "openai_test: FAIL: node/npm not installed (scripts/deps.sh installs them)"
    exit 1
fi
if ! grep -q "\"version\": \"${OPENAI_PKG#openai@}\"" "$NPM_DIR/node_modules/openai/package.json" 2>/dev/null; then
    mkdir -p "$NPM_DIR"
    (cd "$NPM_DIR" && npm install --silent --no-audit --no-fund "$OPENAI_PKG") || {
        echo "openai_test: npm install $OPENAI_PKG failed"; exit 1; }
fi
TMP=$(mktemp -d /tmp/hymt-openai-XXXXXX)
"$HYMT" serve -m "$MODEL" --port 0 --api-key sekret 2>"$TMP/log" &
PID=$!
trap 'kill $PID 2>/dev/null; rm -rf "$TMP"' EXIT
serve_ready "$TMP/log" $PID || exit 1
node "$SRC/tests/server/openai_test.mjs" "$NPM_DIR" "http://127.0.0.1:$PORT/v1"
rc=$?
kill -TERM $PID
wait $PID || rc=1
exit $rc
