#!/bin/sh
# deps.sh [--test] [--check]: installs the Debian packages hymt needs, if any is missing.
#   (no flag)  what the build needs (`make`, `make serve`)
#   --test     also what the tests need (`make test`, `make test-asan`): the browser test's
#              chromium, prometheus and promtool for the metrics checks, openssl for
#              the TLS test's certificates, node/npm for the client and
#              tokenizer tests, curl and python3 for the shell tests, clang and its
#              libFuzzer runtime for the fuzzers, gnuplot for the soak test's plot,
#              systemd for systemd-analyze (the service unit's test), redis-server
#              for the queue tests
#   --check    only report (exit 1 when something is missing)
# Uses sudo when not root. The build never pulls in what only the tests need.
set -eu
tests=0 check=0
for a in "$@"; do
    case $a in
    --test) tests=1 ;;
    --check) check=1 ;;
    -h | --help)
        sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "deps.sh: unknown option '$a' (--test, --check)" >&2
        exit 2
        ;;
    esac
done

missing=""
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need_file() { [ -e "$1" ] || missing="$missing $2"; }
need_pc() { pkg-config --exists "$1" 2>/dev/null || missing="$missing $2"; }

# build
need_cmd cc gcc
need_cmd make make
need_cmd cmake cmake
need_cmd pkg-config pkg-config
if command -v pkg-config >/dev/null 2>&1; then
    need_pc jansson libjansson-dev
    need_pc oniguruma libonig-dev
    need_pc libutf8proc libutf8proc-dev
    need_pc libcurl libcurl4-openssl-dev # hymt pull
    need_pc libcrypto libssl-dev         # sha256 of pulled files
    need_pc libssl libssl-dev            # serve --tls-cert
    need_pc sqlite3 libsqlite3-dev
    need_pc expat libexpat1-dev
    need_pc hiredis libhiredis-dev       # the Redis job queue (serve --queue, hymt worker)
    need_pc libzip libzip-dev            # .docx (translate/docx.h)
    need_pc libxml-2.0 libxml2-dev
else
    missing="$missing libjansson-dev libonig-dev libutf8proc-dev"
    missing="$missing libcurl4-openssl-dev libssl-dev"
    missing="$missing libsqlite3-dev libexpat1-dev libhiredis-dev libzip-dev libxml2-dev"
fi

# tests
if [ $tests = 1 ]; then
    need_cmd python3 python3
    need_cmd node nodejs
    need_cmd npm npm           # tokenizer and client tests install pinned npm packages
    need_cmd curl curl         # the server tests talk HTTP with curl
    need_cmd openssl openssl   # the TLS test makes its CA and certificate
    need_file /usr/bin/chromium chromium # the browser test (ctest label web)
    need_cmd promtool prometheus         # /metrics checked by promtool
    need_cmd prometheus prometheus       # the Grafana dashboard's queries, on a real scrape
    need_cmd gnuplot gnuplot-nox         # the soak test's plot
    need_cmd clang clang                 # the libFuzzer targets (tests/fuzz/run.sh)
    ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
        missing="$missing libclang-rt-14-dev" # libFuzzer's runtime
    need_cmd redis-server redis-server   # the queue tests start their own (tests/queue/)
    need_cmd redis-cli redis-tools
    need_cmd systemd-analyze systemd     # the service unit checked by systemd-analyze verify
    need_cmd man man-db                  # ... which runs man for its Documentation=man:hymt(1)
fi

if [ -z "$missing" ]; then
    exit 0
fi
if [ $check = 1 ]; then
    echo "missing dependencies:$missing" >&2
    exit 1
fi
echo "installing dependencies:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
