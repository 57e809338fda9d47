#!/bin/sh
# install_test.sh SRC BUILD: `make install` into a DESTDIR (PREFIX=/usr): the binary, the
# man page made from --help (rendered by man when present), the systemd unit and its
# settings file; `systemd-analyze verify` on the unit (its ExecStart pointed into the
# DESTDIR, MANPATH at the installed man page) with no output at all, and its exposure
# (systemd-analyze security --offline) at most 3.0; an upgrade keeps an edited settings
# file; uninstall removes what install put there but the settings.
# Skips (77) only when systemd-analyze cannot verify even a trivial unit here (it then says
# so); a missing systemd-analyze is a failure: scripts/deps.sh --test installs systemd.
SRC=$(cd "$1" && pwd)
BUILD=$(cd "$2" && pwd)
TMP=$(mktemp -d /tmp/hymt-install-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
D=$TMP/root
fails=0
checks=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }
check() { checks=$((checks + 1)); eval "$1" || fail "$2"; }

# -o build: the binary is built already (by ctest's build); only the install steps run
make -s -C "$SRC" -o build install BUILD="$BUILD" DESTDIR="$D" PREFIX=/usr >"$TMP/log" 2>&1 ||
    { cat "$TMP/log"; fail "make install"; }
U=$D/usr/lib/systemd/system/hymt.service
check '[ -x "$D/usr/bin/hymt" ]' "binary not installed executable"
check '[ "$(stat -c %a "$D/usr/bin/hymt")" = 755 ]' "binary mode"
check '[ "$(stat -c %a "$D/usr/share/man/man1/hymt.1")" = 644 ]' "man page mode"
check '[ "$(stat -c %a "$U")" = 644 ]' "unit mode"
check '[ -f "$D/etc/hymt/hymt.env" ]' "settings file not installed"
check '"$D/usr/bin/hymt" --version | grep -q "^hymt "' "installed binary does not run"
check 'grep -q "^\.TH HYMT 1" "$D/usr/share/man/man1/hymt.1"' "man page header"
for c in translate serve pull; do
    check 'grep -q "^\.SS hymt $c" "$D/usr/share/man/man1/hymt.1"' "man page lacks hymt $c"
done
check 'grep -q -- "--api-key-file" "$D/usr/share/man/man1/hymt.1"' "man page lacks serve's options"
if command -v man >/dev/null 2>&1; then
    MANWIDTH=100 man --warnings -l "$D/usr/share/man/man1/hymt.1" >"$TMP/man.txt" 2>"$TMP/man.err"
    check '[ ! -s "$TMP/man.err" ]' "man page warnings: $(cat "$TMP/man.err")"
    check 'grep -q "hymt pull" "$TMP/man.txt"' "rendered man page"
fi
for k in "ExecStart=/usr/bin/hymt serve" "EnvironmentFile=-/etc/hymt/hymt.env" "DynamicUser=yes" \
    "NoNewPrivileges=yes" "ProtectSystem=strict" "StateDirectory=hymt" "ProtectHome=yes" \
    "Environment=HF_HUB_CACHE=/var/lib/hymt/hub" "CapabilityBoundingSet="; do
    check 'grep -qx -- "$k" "$U"' "unit lacks '$k'"
done
check '! grep -q "@[A-Z]*@" "$U" "$D/etc/hymt/hymt.env"' "unsubstituted @VARIABLE@ left"
check 'grep -q "^HYMT_MODEL=tencent/Hunyuan-MT-7B$" "$D/etc/hymt/hymt.env"' "settings file's model"
# the settings file is what hymt serve reads: every HYMT_ name in it is a serve option
"$D/usr/bin/hymt" serve --print-config >"$TMP/pc.txt"
for v in $(sed -n 's/^#\{0,1\}\(HYMT_[A-Z_]*\)=.*/\1/p' "$D/etc/hymt/hymt.env"); do
    case $v in HYMT_LOG_FORMAT) continue ;; esac # a global option (main.c)
    name=$(echo "${v#HYMT_}" | tr 'A-Z_' 'a-z-')
    name=${name%-file}
    check 'grep -Eq "^(# )?$name " "$TMP/pc.txt"' "$v in hymt.env is not a serve setting"
done

# systemd-analyze verify
if ! command -v systemd-analyze >/dev/null 2>&1; then
    fail "systemd-analyze missing (Debian package systemd; scripts/deps.sh --test installs it)"
else
    printf '[Service]\nExecStart=/bin/true\n' >"$TMP/trivial.service"
    if ! systemd-analyze verify "$TMP/trivial.service" >"$TMP/triv.log" 2>&1; then
        echo "SKIP: systemd-analyze cannot verify a trivial unit here:"; cat "$TMP/triv.log"
        exit 77
    fi
    sed -e "s|/usr/bin/hymt|$D/usr/bin/hymt|" -e "s|/etc/hymt|$D/etc/hymt|" "$U" >"$TMP/hymt.service"
    MANPATH=$D/usr/share/man systemd-analyze verify "$TMP/hymt.service" >"$TMP/verify.log" 2>&1
    rc=$?
    check '[ $rc = 0 ] && [ ! -s "$TMP/verify.log" ]' "systemd-analyze verify (exit $rc): $(cat "$TMP/verify.log")"
    systemd-analyze security --offline=true "$TMP/hymt.service" >"$TMP/sec.log" 2>&1
    level=$(sed -n 's/.*Overall exposure level for hymt.service: \([0-9.]*\).*/\1/p' "$TMP/sec.log")
    check '[ -n "$level" ] && awk "BEGIN { exit !($level <= 3.0) }"' "exposure level '$level' above 3.0"
    echo "systemd-analyze security: exposure $level"
    # the check can fail: an unknown key makes verify speak
    sed 's/^NoNewPrivileges=yes/NoNewPrivilegez=yes/' "$TMP/hymt.service" >"$TMP/bad.service"
    MANPATH=$D/usr/share/man systemd-analyze verify "$TMP/bad.service" >"$TMP/bad.log" 2>&1
    check '[ -s "$TMP/bad.log" ]' "verify says nothing about an unknown key"
fi

# an upgrade keeps the edited settings; uninstall leaves them
echo "HYMT_PORT=9999" >>"$D/etc/hymt/hymt.env"
make -s -C "$SRC" -o build install BUILD="$BUILD" DESTDIR="$D" PREFIX=/usr >"$TMP/log" 2>&1 || fail "second make install"
check 'grep -q "^HYMT_PORT=9999$" "$D/etc/hymt/hymt.env"' "upgrade overwrote the settings"
check 'grep -q "kept" "$TMP/log"' "upgrade does not say it kept the settings"
make -s -C "$SRC" uninstall DESTDIR="$D" PREFIX=/usr >"$TMP/log" 2>&1 || fail "make uninstall"
check '[ ! -e "$D/usr/bin/hymt" ] && [ ! -e "$U" ] && [ ! -e "$D/usr/share/man/man1/hymt.1" ]' "uninstall left files"
check '[ -f "$D/etc/hymt/hymt.env" ]' "uninstall removed the settings"

echo "$checks checks, $fails failed"
[ $fails = 0 ]
