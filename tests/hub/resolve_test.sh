#!/bin/sh
# resolve_test.sh HYMT DATA_DIR: -m REPO[@REV] found in a Hugging Face hub cache laid out as
# huggingface_hub lays it out (blobs/, snapshots/<commit>/ symlinks, refs/<rev>): the
# default revision main, a tag, a commit hash given directly, HF_HUB_CACHE over HF_HOME/hub
# over ~/.cache/huggingface/hub, a GGUF-only snapshot, a local folder winning over a repo id
# of the same spelling, the errors (absent repo, absent ref, absent snapshot, a refs file
# that is no commit hash) naming the paths tried and `hymt pull`, and the served model named
# after the repo id (/v1/models), not the snapshot's commit.
. "$(dirname "$0")/../serve_ready.sh"
HYMT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
DATA=$(cd "$2" && pwd)
TMP=$(mktemp -d /tmp/hymt-resolve-XXXXXX)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
export NO_PROXY='*' no_proxy='*'
fails=0
checks=0
fail() { fails=$((fails + 1)); echo "FAIL: $*"; }
# run WANT DESCRIPTION COMMAND...: exit code check, output in $TMP/out, $TMP/err
run() {
    want=$1 what=$2; shift 2
    checks=$((checks + 1))
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    [ "$got" = "$want" ] || { fail "$what: exit $got, expected $want: $*"; sed 's/^/  /' "$TMP/err"; }
}
has() { # has FILE TEXT DESCRIPTION
    checks=$((checks + 1))
    grep -qF -- "$2" "$1" || { fail "$3: '$2' not in:"; sed 's/^/  /' "$1"; }
}

C1=1111111111111111111111111111111111111111
C2=2222222222222222222222222222222222222222
# snapshot CACHE REPO_FOLDER COMMIT: the tiny model as blobs + symlinks
snapshot() {
    r=$1/$2
    mkdir -p "$r/blobs" "$r/snapshots/$3" "$r/refs"
    for f in config.json model.safetensors tokenizer.json tokenizer_config.json generation_config.json; do
        h=$(sha256sum "$DATA/tiny-mqa/$f" | cut -c1-64)
        cp "$DATA/tiny-mqa/$f" "$r/blobs/$h"
        ln -sf "../../blobs/$h" "$r/snapshots/$3/$f"
    done
}
H=$TMP/hfhome/hub
snapshot "$H" models--org--tiny $C1
printf '%s' $C1 >"$H/models--org--tiny/refs/main"
snapshot "$H" models--org--tiny $C2
printf '%s\n' $C2 >"$H/models--org--tiny/refs/v1" # a trailing newline is tolerated

unset HF_HUB_CACHE HUGGINGFACE_HUB_CACHE XDG_CACHE_HOME
export HF_HOME=$TMP/hfhome

# refs/main, the default revision; the snapshot's files are symlinks into blobs/
checks=$((checks + 1))
[ -L "$H/models--org--tiny/snapshots/$C1/model.safetensors" ] || fail "snapshot files are not symlinks"
run 0 "repo id, refs/main" "$HYMT" info org/tiny
has "$TMP/out" "model             $H/models--org--tiny/snapshots/$C1" "info names the main snapshot"
checks=$((checks + 1))
echo hello | "$HYMT" tokenize -m org/tiny >"$TMP/out" 2>"$TMP/err" || fail "tokenize -m repo id"
# a tag in refs/
run 0 "repo id @v1" "$HYMT" info org/tiny@v1
has "$TMP/out" "snapshots/$C2" "@v1 resolves through refs/v1"
# a commit hash directly: no ref needed
rm "$H/models--org--tiny/refs/v1"
run 0 "repo id @commit" "$HYMT" info org/tiny@$C2
has "$TMP/out" "snapshots/$C2" "@commit names its snapshot"
run 1 "@v1 without refs/v1" "$HYMT" info org/tiny@v1
has "$TMP/err" "no $H/models--org--tiny/refs/v1" "absent ref named"
has "$TMP/err" "run \`hymt pull org/tiny@v1\`" "absent ref: pull hint with the revision"

# HF_HUB_CACHE wins over HF_HOME; HUGGINGFACE_HUB_CACHE (the old name) over HF_HOME;
# ~/.cache/huggingface/hub when neither is set
mkdir -p "$TMP/other"
run 1 "HF_HUB_CACHE wins" env HF_HUB_CACHE="$TMP/other" "$HYMT" info org/tiny
has "$TMP/err" "$TMP/other (from HF_HUB_CACHE)" "HF_HUB_CACHE named"
run 1 "HUGGINGFACE_HUB_CACHE over HF_HOME" env HUGGINGFACE_HUB_CACHE="$TMP/other" "$HYMT" info org/tiny
has "$TMP/err" "(from HUGGINGFACE_HUB_CACHE)" "HUGGINGFACE_HUB_CACHE named"
run 0 "HF_HUB_CACHE pointing at the cache" env HF_HUB_CACHE="$H" HF_HOME=/nonexistent "$HYMT" info org/tiny
mkdir -p "$TMP/home/.cache/huggingface"
ln -s "$H" "$TMP/home/.cache/huggingface/hub"
run 0 "default ~/.cache/huggingface/hub" env -u HF_HOME HOME="$TMP/home" "$HYMT" info org/tiny
run 0 "XDG_CACHE_HOME/huggingface/hub" env -u HF_HOME HOME=/nonexistent XDG_CACHE_HOME="$TMP/home/.cache" "$HYMT" info org/tiny

# the model absent: one line naming the cache, where it came from, the missing path, and pull
run 1 "absent repo" "$HYMT" translate -m tencent/Hunyuan-MT-7B --to de
checks=$((checks + 1))
[ "$(wc -l <"$TMP/err")" = 1 ] || fail "absent repo: not one line"
has "$TMP/err" "tencent/Hunyuan-MT-7B is neither a file or folder here nor in the Hugging Face cache $H (from HF_HOME)" "absent: cache named"
has "$TMP/err" "no $H/models--tencent--Hunyuan-MT-7B;" "absent: repo folder named"
checks=$((checks + 1))
tail -c 40 "$TMP/err" | grep -qF 'run `hymt pull tencent/Hunyuan-MT-7B`' || fail "absent: does not end with the pull hint"
for c in "serve -m" "generate -n 1 --ids 1 -m" "bench -m" "convert -o $TMP/x.gguf -m" "tokenize -m"; do
    # shellcheck disable=SC2086
    run 1 "absent repo: $c" "$HYMT" $c tencent/Hunyuan-MT-7B
    has "$TMP/err" 'run `hymt pull tencent/Hunyuan-MT-7B`' "$c: pull hint"
done
# a ref whose snapshot is gone, a ref that is not a commit
printf '%s' 3333333333333333333333333333333333333333 >"$H/models--org--tiny/refs/gone"
run 1 "ref to an absent snapshot" "$HYMT" info org/tiny@gone
has "$TMP/err" "no $H/models--org--tiny/snapshots/3333333333333333333333333333333333333333" "absent snapshot named"
printf '../../../etc' >"$H/models--org--tiny/refs/evil"
run 1 "ref that is no commit" "$HYMT" info org/tiny@evil
has "$TMP/err" "refs/evil does not hold a commit hash" "bad ref refused"
run 1 "not a path nor a repo id" "$HYMT" info no-such-folder
has "$TMP/err" "no-such-folder: no such file or folder" "plain missing path"

# a local folder of the same spelling wins over the repo id
mkdir -p "$TMP/cwd/org"
cp -r "$DATA/tiny-mqa" "$TMP/cwd/org/tiny"
(cd "$TMP/cwd" && "$HYMT" info org/tiny >"$TMP/out" 2>&1)
has "$TMP/out" "model             org/tiny" "local folder wins"

# a GGUF-only snapshot: its one .gguf; two: an error naming them
"$HYMT" -q convert -m "$DATA/tiny-mqa" -o "$TMP/t.gguf" --type bf16 2>/dev/null || fail "convert"
G=$H/models--org--gguf
mkdir -p "$G/blobs" "$G/snapshots/$C1" "$G/refs"
h=$(sha256sum "$TMP/t.gguf" | cut -c1-64)
cp "$TMP/t.gguf" "$G/blobs/$h"
ln -s "../../blobs/$h" "$G/snapshots/$C1/tiny-bf16.gguf"
printf '%s' $C1 >"$G/refs/main"
run 0 "GGUF-only snapshot" "$HYMT" info org/gguf
has "$TMP/out" "snapshots/$C1/tiny-bf16.gguf" "the .gguf file is taken"
ln -s "../../blobs/$h" "$G/snapshots/$C1/tiny-q8.gguf"
run 1 "two GGUF files" "$HYMT" info org/gguf
has "$TMP/err" "holds 2 .gguf files" "several GGUF files: error"
run 0 "a GGUF file in the snapshot by path" "$HYMT" info "$G/snapshots/$C1/tiny-q8.gguf"
rm "$G/snapshots/$C1/tiny-q8.gguf" "$G/snapshots/$C1/tiny-bf16.gguf"
run 1 "empty snapshot" "$HYMT" info org/gguf
has "$TMP/err" "neither config.json nor a .gguf file" "empty snapshot: error"

# served: the model is named after the repo id
: >"$TMP/serve.log"
"$HYMT" serve -m org/tiny --port 0 2>"$TMP/serve.log" &
PID=$!
pids="$pids $PID"
serve_ready "$TMP/serve.log" $PID || fail "serve did not start"
curl -s "http://127.0.0.1:$PORT/v1/models" >"$TMP/models.json"
has "$TMP/models.json" '"id":"org/tiny"' "/v1/models names the repo id"
checks=$((checks + 1))
grep -q "$C1\"" "$TMP/models.json" && fail "/v1/models names the commit"
kill $PID

echo "$checks checks, $fails failed"
[ $fails = 0 ]
