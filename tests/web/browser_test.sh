#!/bin/sh
# browser_test.sh: the web page in headless Chromium (ctest label "web").
#
#   tests/web/browser_test.sh SRC_DIR BUILD_DIR stub
#   tests/web/browser_test.sh SRC_DIR BUILD_DIR hymt HYMT_BIN MODEL_DIR
#
# Needs Debian's chromium at /usr/bin/chromium (`make test` installs it through
# scripts/deps.sh --test; a missing browser is a failure, not a skip) and installs playwright-core (pinned below) with npm into
# BUILD_DIR/web-test/ the first time. "stub" serves web/index.html from the tree with
# tests/web/stub_server.mjs (the page alone); "hymt" starts `hymt serve` with the page
# embedded in the binary. Screenshots, the served log and downloads go to
# BUILD_DIR/web-test/<mode>/.
set -eu
PLAYWRIGHT_VERSION=1.61.1

if [ $# -lt 3 ]; then
    echo "usage: $0 SRC_DIR BUILD_DIR stub|hymt [HYMT_BIN MODEL_DIR]" >&2
    exit 2
fi
src=$1 build=$2 mode=$3
if [ ! -x /usr/bin/chromium ]; then
    echo "$0: /usr/bin/chromium is missing: run `sh scripts/deps.sh --test` (make test does)" >&2
    exit 1
fi
command -v node >/dev/null 2>&1 || { echo "$0: node is missing" >&2; exit 1; }

dir=$build/web-test
mkdir -p "$dir"
# One install shared by both tests; a lock keeps two ctest jobs from racing on it.
(
    flock 9
    if [ ! -f "$dir/node_modules/playwright-core/package.json" ] ||
        ! grep -q "\"version\": \"$PLAYWRIGHT_VERSION\"" "$dir/node_modules/playwright-core/package.json"; then
        [ -f "$dir/package.json" ] || echo '{"name":"hymt-web-test","private":true}' >"$dir/package.json"
        (cd "$dir" && npm install --no-audit --no-fund --silent "playwright-core@$PLAYWRIGHT_VERSION")
    fi
) 9>"$dir/.install.lock"

case $mode in
stub)
    exec node "$src/tests/web/page_test.mjs" --modules "$dir" --src "$src" --out "$dir/stub" --stub
    ;;
hymt)
    [ $# -eq 5 ] || { echo "usage: $0 SRC_DIR BUILD_DIR hymt HYMT_BIN MODEL_DIR" >&2; exit 2; }
    exec node "$src/tests/web/page_test.mjs" --modules "$dir" --src "$src" --out "$dir/hymt" \
        --hymt "$4" --model "$5"
    ;;
*)
    echo "$0: unknown mode $mode" >&2
    exit 2
    ;;
esac
