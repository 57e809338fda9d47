#!/bin/sh
# cpu_7b.sh [MODEL_DIR=/tmp/hy7b] [BUILD=build]: CPU decode of the 7B shapes against the
# machine's memory bandwidth. Generates the random-weight 7b preset (about 15 GB) if the
# folder has none, then alternates bandwidth probes and `hymt generate -n 8` runs so both
# see the same machine state. Decode reads every weight once per token: 15.009 GB for the
# tied 7B (13.96 GB of layers + 1.05 GB head), so tok/s <= bandwidth / 15.009 GB.
set -eu
M=${1:-/tmp/hy7b}
B=${2:-build}
[ -f "$M/config.json" ] || "$B/hymt" make-test-model --out "$M" --preset 7b
SHARD=$(ls "$M"/model-*.safetensors | sed -n 2p)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(date -u +%F)"
for i in 1 2 3; do
    "$B/bench/membw" 4 "$(nproc)" 3
    "$B/bench/membw" --file "$SHARD" "$(nproc)" 3
    "$B/hymt" generate -m "$M" --ids 127958,100,200,300 -n 8 --ignore-eos 2>&1 | grep -E "info|^[0-9]"
done
