# cli_check.sh: the checks the command-line test scripts share; sourced (". FILE") after the
# script has set TMP (its temporary folder), fails=0 and checks=0.

# expect CODE DESCRIPTION -- COMMAND...: runs it (stdout in $TMP/out, stderr in $TMP/err),
# checks the exit code
expect() {
    want=$1; what=$2; shift 3
    checks=$((checks + 1))
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" != "$want" ]; then
        fails=$((fails + 1))
        echo "FAIL: $what: exit $got, expected $want: $*"; sed 's/^/  stderr: /' "$TMP/err"
    fi
}
# contains FILE TEXT DESCRIPTION
contains() {
    checks=$((checks + 1))
    if ! grep -q -- "$2" "$1"; then
        fails=$((fails + 1)); echo "FAIL: $3: '$2' not in $(basename "$1")"; sed 's/^/  /' "$1"
    fi
}
