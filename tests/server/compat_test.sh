#!/bin/sh
# compat_test.sh HYMT MODEL SRC NPM_DIR: the compatible APIs against `hymt serve`
# (tests/server/compat_test.mjs): DeepL's with the official deepl-node client, LibreTranslate's
# with its documented requests (npm's only `libretranslate` package is a third-party wrapper,
# one version, unmaintained: not LibreTranslate's own), their error
# shapes, and /openapi.json validated by @apidevtools/swagger-parser, its paths compared with
# `hymt serve --print-routes`. The npm packages are pinned below for Debian 12's Node 18 and
# installed into NPM_DIR in the build folder on first use, never committed.
. "$(dirname "$0")/../serve_ready.sh"
set -u
HYMT=$1
MODEL=$2
SRC=$3
NPM_DIR=$4
PKGS="deepl-node@1.28.0 @apidevtools/swagger-parser@10.1.1"
export NO_PROXY='*' no_proxy='*'
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "compat_test: FAIL: node/npm not installed (scripts/deps.sh installs them)"
    exit 1
fi
if ! grep -q '"version": "1.28.0"' "$NPM_DIR/node_modules/deepl-node/package.json" 2>/dev/null ||
   ! grep -q '"version": "10.1.1"' "$NPM_DIR/node_modules/@apidevtools/swagger-parser/package.json" 2>/dev/null; then
    mkdir -p "$NPM_DIR"
    # shellcheck disable=SC2086
    (cd "$NPM_DIR" && npm install --silent --no-audit --no-fund $PKGS) || {
        echo "compat_test: npm install $PKGS failed"; exit 1; }
fi
TMP=$(mktemp -d /tmp/hymt-compat-XXXXXX)
"$HYMT" serve --print-routes >"$TMP/routes" || { echo "compat_test: --print-routes failed"; exit 1; }
: >"$TMP/log"
"$HYMT" serve -m "$MODEL" --port 0 --api-key sekret 2>"$TMP/log" &
PID=$!
trap 'kill $PID 2>/dev/null; rm -rf "$TMP"' EXIT
serve_ready "$TMP/log" $PID || exit 1
node "$SRC/tests/server/compat_test.mjs" "$NPM_DIR" "http://127.0.0.1:$PORT" "$TMP/routes"
rc=$?
kill -TERM $PID
wait $PID || rc=1
exit $rc
