#!/bin/sh
# man.sh HYMT > hymt.1: the man page, made from `hymt --help`, `hymt COMMAND --help` and
# `hymt --version`, so it says what the binary says. roff-escaped: backslashes, and lines
# that would start with '.' or "'".
set -eu
HYMT=$1
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
version=$("$HYMT" --version | sed -n '1s/^hymt \([^ ]*\).*/\1/p')
commands=$("$HYMT" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\)  .*/\1/p')
cat <<HEAD
.TH HYMT 1 "" "hymt $version" "User Commands"
.SH NAME
hymt \\- translation server and inference engine for the Hunyuan-MT model family
.SH SYNOPSIS
.B hymt
.I COMMAND
.RI [ OPTIONS ]
.SH DESCRIPTION
.nf
HEAD
"$HYMT" --help | esc
echo ".fi"
echo ".SH COMMANDS"
for c in $commands; do
    echo ".SS hymt $c"
    echo ".nf"
    "$HYMT" "$c" --help | esc
    echo ".fi"
done
cat <<'TAIL'
.SH ENVIRONMENT
.TP
.B HYMT_<NAME>
any option of
.B hymt serve
(HYMT_PORT, HYMT_MODEL, HYMT_API_KEY_FILE, ...); a flag wins over it, it wins over
.BR --config .
.TP
.B HYMT_CONFIG
the config file of
.BR "hymt serve" .
.TP
.B HYMT_LOG_FORMAT
text or json, as
.BR --log-format .
.TP
.BR HF_HUB_CACHE ", " HF_HOME
where repo ids are looked up and
.B hymt pull
writes (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub).
.TP
.BR HF_ENDPOINT ", " HF_TOKEN
the hub (or a mirror) and the token
.B hymt pull
uses.
.SH FILES
.TP
.I /etc/hymt/hymt.env
the settings of the systemd service
.BR hymt.service .
.TP
.I /var/lib/hymt/hub
the service's model cache.
.SH VERSION
TAIL
"$HYMT" --version | esc
