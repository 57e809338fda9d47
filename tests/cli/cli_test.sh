#!/bin/sh
# cli_test.sh HYMT DATA_DIR: the hymt command line: help, exit codes, one-line errors,
# make-test-model determinism, info and generate on a generated checkpoint.
HYMT=$1
DATA=$2
TMP=$(mktemp -d /tmp/hymt-cli-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
checks=0

. "$(dirname "$0")/../cli_check.sh"
one_line() {
    checks=$((checks + 1))
    n=$(wc -l <"$TMP/err")
    if [ "$n" != 1 ]; then fails=$((fails + 1)); echo "FAIL: $1: $n lines on stderr"; cat "$TMP/err"; fi
}

expect 0 "top-level help" -- "$HYMT" --help
contains "$TMP/out" "make-test-model" "help lists commands"
expect 2 "no command" -- "$HYMT"
expect 2 "unknown command" -- "$HYMT" frobnicate
one_line "unknown command"
expect 2 "unknown global flag" -- "$HYMT" --frob generate
for c in generate info make-test-model; do
    expect 0 "$c --help" -- "$HYMT" $c --help
    contains "$TMP/out" "usage: hymt $c" "$c usage"
    expect 2 "$c unknown flag" -- "$HYMT" $c --no-such-flag
    one_line "$c unknown flag"
    contains "$TMP/err" "unknown option '--no-such-flag'" "$c names the flag"
done

M=$TMP/m
expect 0 "make-test-model tiny" -- "$HYMT" -q make-test-model --out "$M" --seed 3
expect 0 "make-test-model again" -- "$HYMT" -q make-test-model --out "$TMP/m2" --seed 3
expect 0 "make-test-model other seed" -- "$HYMT" -q make-test-model --out "$TMP/m3" --seed 4
checks=$((checks + 2))
cmp -s "$M/model.safetensors" "$TMP/m2/model.safetensors" || { fails=$((fails+1)); echo "FAIL: same seed, different weights"; }
cmp -s "$M/model.safetensors" "$TMP/m3/model.safetensors" && { fails=$((fails+1)); echo "FAIL: other seed, same weights"; }
# the presets' shapes: model doc 2.3 gives 7,504,568,320 parameters and 15,009,136,640 bf16
# bytes for Hunyuan-MT-7B tied, 16,059,080,704 with the stored lm_head
expect 0 "7b dry run" -- "$HYMT" make-test-model --preset 7b --dry-run
contains "$TMP/out" "354 tensors, 7504568320 parameters, 15009136640 bytes" "7b preset shapes"
expect 0 "7b dry run with lm_head" -- "$HYMT" make-test-model --preset 7b --dry-run --store-lm-head
contains "$TMP/out" "8029540352 parameters, 16059080704 bytes" "7b preset with stored head"
expect 2 "bad preset" -- "$HYMT" make-test-model --out "$TMP/x" --preset huge
expect 2 "bad dtype" -- "$HYMT" make-test-model --out "$TMP/x" --dtype int3
expect 2 "heads not multiple of kv" -- "$HYMT" make-test-model --out "$TMP/x" --heads 4 --kv-heads 3
expect 2 "missing --out" -- "$HYMT" make-test-model
expect 0 "sharded f16 checkpoint" -- "$HYMT" -q make-test-model --out "$TMP/s" --dtype f16 --shard-size 100000 --store-lm-head
checks=$((checks + 1))
[ -f "$TMP/s/model.safetensors.index.json" ] || { fails=$((fails+1)); echo "FAIL: no shard index"; }

expect 0 "info" -- "$HYMT" info "$M"
contains "$TMP/out" "parameters" "info shows parameters"
contains "$TMP/out" "base 12496091.41" "info shows the NTK-alpha RoPE base (head_dim 64)"
expect 0 "info --tensors" -- "$HYMT" info "$M" --tensors
contains "$TMP/out" "model.layers.1.mlp.down_proj.weight" "tensor list"
expect 0 "info on shards" -- "$HYMT" info "$TMP/s"
contains "$TMP/out" "differs from embed_tokens, so it is used" "stored lm_head reported"
expect 1 "info on a missing folder" -- "$HYMT" info "$TMP/nope"
one_line "info on a missing folder"
expect 2 "info without a model" -- "$HYMT" info

expect 0 "generate" -- "$HYMT" -q generate -m "$M" --ids 497,5,6,7 -n 5 --ignore-eos
checks=$((checks + 1))
[ "$(wc -w <"$TMP/out")" = 5 ] || { fails=$((fails+1)); echo "FAIL: generate printed: $(cat "$TMP/out")"; }
cp "$TMP/out" "$TMP/greedy1"
expect 0 "generate on shards" -- "$HYMT" -q generate -m "$TMP/s" --ids 497,5,6,7 -n 3 --ignore-eos
expect 0 "generate again, 1 thread" -- "$HYMT" -q generate -m "$M" --ids 497,5,6,7 -n 5 --ignore-eos -t 1
checks=$((checks + 1))
cmp -s "$TMP/out" "$TMP/greedy1" || { fails=$((fails+1)); echo "FAIL: greedy differs with 1 thread"; }
# --kv-type: f32 and auto (f32 on the CPU) give the same ids; bf16 is refused on the CPU;
# a bad value is one line
expect 0 "generate --kv-type f32" -- "$HYMT" -q generate -m "$M" --ids 497,5,6,7 -n 5 \
    --ignore-eos --device cpu --kv-type f32
cp "$TMP/out" "$TMP/kv_f32.out"
expect 0 "generate --kv-type auto" -- "$HYMT" -q generate -m "$M" --ids 497,5,6,7 -n 5 \
    --ignore-eos --device cpu --kv-type auto
checks=$((checks + 1))
cmp -s "$TMP/out" "$TMP/kv_f32.out" || { fails=$((fails + 1)); echo "FAIL: --kv-type auto != f32 on the CPU"; }
expect 1 "generate --kv-type bf16 on the CPU" -- "$HYMT" generate -m "$M" --ids 497,5 -n 2 \
    --device cpu --kv-type bf16
contains "$TMP/err" "kv-type bf16 needs the CUDA backend" "--kv-type bf16 on the CPU is refused"
one_line "--kv-type bf16 on the CPU"
expect 1 "generate --kv-type fp4" -- "$HYMT" generate -m "$M" --ids 497,5 -n 2 --device cpu \
    --kv-type fp4
contains "$TMP/err" "kv-type must be auto, f32 or bf16, not 'fp4'" "a bad --kv-type is named"
one_line "bad --kv-type"
expect 0 "generate sampled" -- "$HYMT" -q generate -m "$M" --ids 497,5 -n 4 --temp 0.8 --seed 9 --ignore-eos
expect 0 "generate with dump" -- "$HYMT" -q generate -m "$M" --ids 497,5 -n 3 --ignore-eos --dump-logits "$TMP/d.f32"
checks=$((checks + 1))
[ "$(wc -c <"$TMP/d.f32")" = $((3 * 512 * 4)) ] || { fails=$((fails+1)); echo "FAIL: dump size $(wc -c <"$TMP/d.f32")"; }
expect 2 "generate without -n" -- "$HYMT" generate -m "$M" --ids 1
expect 2 "generate -n 0" -- "$HYMT" generate -m "$M" --ids 1 -n 0
expect 2 "generate -n abc" -- "$HYMT" generate -m "$M" --ids 1 -n abc
one_line "generate -n abc"
expect 2 "generate bad ids" -- "$HYMT" generate -m "$M" --ids 1,,2 -n 1
expect 2 "generate negative temp" -- "$HYMT" generate -m "$M" --ids 1 -n 1 --temp -1
expect 0 "generate --quant q8" -- "$HYMT" -q generate -m "$M" --ids 497,5,6,7 -n 5 --ignore-eos --quant q8
checks=$((checks + 1))
[ "$(wc -w <"$TMP/out")" = 5 ] || { fails=$((fails+1)); echo "FAIL: generate --quant q8 printed: $(cat "$TMP/out")"; }
expect 0 "generate --quant fp8" -- "$HYMT" -q generate -m "$M" --ids 497,5,6,7 -n 5 --ignore-eos --quant fp8
checks=$((checks + 1))
[ "$(wc -w <"$TMP/out")" = 5 ] || { fails=$((fails+1)); echo "FAIL: generate --quant fp8 printed: $(cat "$TMP/out")"; }
expect 2 "generate --quant fp9" -- "$HYMT" generate -m "$M" --ids 1 -n 1 --quant fp9
contains "$TMP/err" "or fp8" "--quant names fp8"
expect 0 "generate --quant q4" -- "$HYMT" -q generate -m "$M" --ids 497,5,6,7 -n 5 --ignore-eos --quant q4
checks=$((checks + 1))
[ "$(wc -w <"$TMP/out")" = 5 ] || { fails=$((fails+1)); echo "FAIL: generate --quant q4 printed: $(cat "$TMP/out")"; }
expect 2 "generate --quant q3" -- "$HYMT" generate -m "$M" --ids 1 -n 1 --quant q3
one_line "generate --quant q3"
expect 1 "generate --prompt without a tokenizer" -- "$HYMT" generate -m "$M" --prompt hi -n 1
one_line "generate --prompt without a tokenizer"
contains "$TMP/err" "tokenizer.json" "names the missing tokenizer"
T=$DATA/tiny-mqa
expect 0 "generate --prompt" -- "$HYMT" -q generate -m "$T" --prompt "<|startoftext|>Hello<|extra_0|>" -n 4 --ignore-eos
checks=$((checks + 1))
[ "$(wc -w <"$TMP/out")" = 4 ] || { fails=$((fails+1)); echo "FAIL: generate --prompt printed: $(cat "$TMP/out")"; }
expect 0 "generate --prompt --text" -- "$HYMT" -q generate -m "$T" --prompt "Hello" -n 4 --text --ignore-eos
expect 2 "generate with both --ids and --prompt" -- "$HYMT" generate -m "$T" --prompt hi --ids 1 -n 1

# translate: mechanics on the tiny checkpoint (its output is random text)
printf 'First paragraph. Two sentences here!\n\n\nSecond paragraph.\n' >"$TMP/doc.txt"
expect 0 "translate stdin" -- sh -c "'$HYMT' translate -m '$T' --to en --greedy <'$TMP/doc.txt'"
contains "$TMP/err" "stdin: 2 segments" "translate summary line"
contains "$TMP/err" "en -> en" "translate summary names the languages (the source detected)"
expect 0 "translate file to -o" -- "$HYMT" translate -m "$T" --to zh --from en --greedy "$TMP/doc.txt" -o "$TMP/out.txt"
checks=$((checks + 1))
[ "$(grep -c . "$TMP/out.txt")" -ge 2 ] || { fails=$((fails+1)); echo "FAIL: translate -o wrote: $(cat "$TMP/out.txt")"; }
expect 0 "translate small segments" -- "$HYMT" translate -m "$T" --to de --greedy --max-seg-tokens 8 "$TMP/doc.txt"
contains "$TMP/err" "segments" "translate summary"
expect 2 "translate unknown language" -- "$HYMT" translate -m "$T" --to klingon "$TMP/doc.txt"
one_line "translate unknown language"
contains "$TMP/err" "zh-Hant" "unknown language lists the valid codes"
expect 2 "translate without --to" -- "$HYMT" translate -m "$T" "$TMP/doc.txt"
expect 1 "translate --gpu-memory-fraction on the CPU" -- "$HYMT" translate -m "$T" --to en \
    --device cpu --gpu-memory-fraction 0.5 "$TMP/doc.txt"
contains "$TMP/err" "needs a GPU" "a GPU share without a GPU is refused"
expect 2 "translate --gpu-memory-fraction out of range" -- "$HYMT" translate -m "$T" --to en \
    --gpu-memory-fraction 1.5 "$TMP/doc.txt"
expect 1 "translate --kv-memory and --gpu-memory-fraction" -- "$HYMT" translate -m "$T" \
    --to en --device cpu --kv-memory 64M --gpu-memory-fraction 0.5 "$TMP/doc.txt"
contains "$TMP/err" "not both" "both KV sizes are refused"
expect 1 "translate --batch-invariant on the CPU" -- "$HYMT" translate -m "$T" --to en \
    --device cpu --batch-invariant "$TMP/doc.txt"
contains "$TMP/err" "batch-invariant needs the CUDA backend" "--batch-invariant on the CPU is refused"
expect 1 "translate --fp8-gemm on the CPU" -- "$HYMT" translate -m "$T" --to en \
    --device cpu --fp8-gemm "$TMP/doc.txt"
contains "$TMP/err" "fp8-gemm needs the CUDA backend" "--fp8-gemm on the CPU is refused"
expect 1 "translate --kv-type bf16 on the CPU" -- "$HYMT" translate -m "$T" --to en \
    --device cpu --kv-type bf16 "$TMP/doc.txt"
contains "$TMP/err" "kv-type bf16 needs the CUDA backend" "translate --kv-type bf16 on the CPU"
printf 'bad \377 byte\n' >"$TMP/bad.txt"
expect 1 "translate invalid UTF-8" -- "$HYMT" translate -m "$T" --to en "$TMP/bad.txt"
contains "$TMP/err" "invalid UTF-8 at byte 4" "names the bad byte"
expect 0 "translate --replace-invalid" -- "$HYMT" translate -m "$T" --to en --greedy --replace-invalid "$TMP/bad.txt"
expect 1 "translate missing file" -- "$HYMT" translate -m "$T" --to en "$TMP/nope.txt"
# a 1,000-line document: every line its own segment, all submitted to the engine at once
i=0; while [ $i -lt 1000 ]; do echo "Line $i of the document. Zeile $i. 第${i}行。"; i=$((i + 1)); done >"$TMP/long.txt"
expect 0 "translate 1000 lines" -- "$HYMT" translate -m "$T" --to en --greedy --keep-lines --max-new-tokens 2 "$TMP/long.txt" -o "$TMP/long.out"
contains "$TMP/err" "long.txt: 1000 segments" "1000 segments"
expect 2 "translate bad --device" -- "$HYMT" translate -m "$T" --to en --device gpu "$TMP/doc.txt"
contains "$TMP/err" "auto, cpu or cuda" "names the devices"
expect 0 "translate --device cpu" -- "$HYMT" translate -m "$T" --to en --device cpu --max-new-tokens 2 "$TMP/doc.txt"
expect 0 "translate --quant q8" -- "$HYMT" translate -m "$T" --to en --quant q8 --max-new-tokens 2 "$TMP/doc.txt"
expect 0 "translate --quant fp8" -- "$HYMT" translate -m "$T" --to en --quant fp8 --max-new-tokens 2 "$TMP/doc.txt"
expect 0 "translate --quant q4" -- "$HYMT" translate -m "$T" --to en --quant q4 --max-new-tokens 2 "$TMP/doc.txt"
expect 1 "translate without a tokenizer" -- "$HYMT" translate -m "$M" --to en "$TMP/doc.txt"
expect 1 "generate id out of vocab" -- "$HYMT" generate -m "$M" --ids 1,512 -n 1
contains "$TMP/err" "out of the vocabulary" "names the bad id"
expect 1 "generate missing model" -- "$HYMT" generate -m "$TMP/nope" --ids 1 -n 1
expect 1 "generate unwritable dump" -- "$HYMT" -q generate -m "$M" --ids 1 -n 1 --dump-logits /nonexistent/dir/x

# hymt bench --repeat: one engine, N timed passes, prompt and decode as MEAN +- SD
expect 0 "bench --repeat 2" -- "$HYMT" -q bench -m "$M" --batch 1 --prompt-len 4 --gen-len 3 -t 1 --repeat 2
contains "$TMP/out" "2 timed passes, their means" "bench --repeat names the passes"
checks=$((checks + 1))
grep -Eq '^\| 1 \| [0-9.]+ \| [0-9]+ \+- [0-9]+ \| [0-9.]+ \+- [0-9.]+ \| ' "$TMP/out" ||
    { fails=$((fails + 1)); echo "FAIL: bench --repeat row:"; cat "$TMP/out"; }
expect 2 "bench --repeat 0" -- "$HYMT" bench -m "$M" --repeat 0
one_line "bench --repeat 0"

# hymt help CMD, --version, the global options after the command name
expect 0 "help" -- "$HYMT" help
contains "$TMP/out" "help COMMAND" "help lists itself"
for c in generate info tokenize translate bench convert serve pull make-test-model; do
    expect 0 "help $c" -- "$HYMT" help $c
    contains "$TMP/out" "usage: hymt $c" "help $c prints its usage"
done
expect 2 "help of an unknown command" -- "$HYMT" help frobnicate
one_line "help of an unknown command"
expect 2 "help of two commands" -- "$HYMT" help info generate
expect 0 "--version" -- "$HYMT" --version
checks=$((checks + 1))
grep -Eq '^hymt [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown); (CUDA architectures [0-9a-z ]+|CPU only: built without CUDA)\)$' "$TMP/out" ||
    { fails=$((fails + 1)); echo "FAIL: --version printed: $(cat "$TMP/out")"; }
cp "$TMP/out" "$TMP/version"
expect 0 "--version after a command" -- "$HYMT" generate --version
checks=$((checks + 1))
cmp -s "$TMP/out" "$TMP/version" || { fails=$((fails + 1)); echo "FAIL: generate --version differs"; }
expect 0 "-q after the command" -- "$HYMT" generate -m "$M" -q --ids 497,5 -n 2 --ignore-eos
checks=$((checks + 1))
[ ! -s "$TMP/err" ] || { fails=$((fails + 1)); echo "FAIL: -q after the command still logs:"; cat "$TMP/err"; }
expect 0 "no -q: logs" -- "$HYMT" generate -m "$M" --ids 497,5 -n 2 --ignore-eos
contains "$TMP/err" "model loaded" "info logs without -q"
expect 0 "--verbose after the command" -- "$HYMT" info --verbose "$M"
expect 0 "-v after the command" -- "$HYMT" translate -m "$T" -v --to en --max-new-tokens 2 "$TMP/doc.txt"
# MODEL in the help texts: a repo id, a folder or a GGUF file (convert: no GGUF)
for c in generate info tokenize translate bench serve; do
    expect 0 "$c --help" -- "$HYMT" $c --help
    contains "$TMP/out" "repo id" "$c --help names repo ids"
    contains "$TMP/out" "GGUF file" "$c --help names GGUF files"
    checks=$((checks + 1))
    ! grep -q -- "--model DIR" "$TMP/out" || { fails=$((fails + 1)); echo "FAIL: $c --help says --model DIR"; }
done
expect 0 "generate --help" -- "$HYMT" generate --help
contains "$TMP/out" "auto (default" "generate defaults to --device auto"
# hymt convert's progress: a line a layer (and one for the tensors outside the layers) into a
# file or pipe, redrawn with \r on a terminal
expect 0 "convert into a log" -- "$HYMT" convert -m "$T" -o "$TMP/p.gguf"
checks=$((checks + 1))
! grep -q "$(printf '\r')" "$TMP/err" || { fails=$((fails + 1)); echo "FAIL: convert wrote \\r into a file"; }
contains "$TMP/err" "hymt convert: blk.0 written: " "convert: a line for layer 0"
contains "$TMP/err" "(100%)" "convert: a line at 100%"
checks=$((checks + 1))
[ "$(grep -c '^hymt convert: .* written: .*%)' "$TMP/err")" = 3 ] || { fails=$((fails + 1)); echo "FAIL: convert: not 3 progress lines (2 layers)"; cat "$TMP/err"; }
if command -v script >/dev/null 2>&1; then
    checks=$((checks + 1))
    script -qec "'$HYMT' convert -m '$T' -o '$TMP/q.gguf'" /dev/null >"$TMP/tty" 2>&1
    grep -q "$(printf '\r')hymt convert: \[" "$TMP/tty" || { fails=$((fails + 1)); echo "FAIL: convert on a terminal: no \\r line"; }
fi

# log lines: ISO 8601 time with the zone; --log-format json (before or after the command,
# or HYMT_LOG_FORMAT): one JSON object a line
expect 0 "text log" -- env TZ=UTC0 "$HYMT" generate -m "$M" --ids 497,5 -n 2 --ignore-eos
checks=$((checks + 1))
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}\+00:00 info  model loaded' "$TMP/err" ||
    { fails=$((fails + 1)); echo "FAIL: text log line:"; cat "$TMP/err"; }
expect 0 "text log in another zone" -- env TZ=XYZ-5:30 "$HYMT" generate -m "$M" --ids 497,5 -n 2 --ignore-eos
contains "$TMP/err" "+05:30 info" "the zone offset is the local one"
for how in "--log-format json generate" "generate --log-format=json" "HYMT_LOG_FORMAT=json generate"; do
    case $how in
    HYMT*) expect 0 "json log: $how" -- env HYMT_LOG_FORMAT=json "$HYMT" generate -m "$M" --ids 497,5 -n 2 --ignore-eos ;;
    *) expect 0 "json log: $how" -- "$HYMT" $how -m "$M" --ids 497,5 -n 2 --ignore-eos ;;
    esac
    checks=$((checks + 1))
    python3 -c '
import json, re, sys
lines = open(sys.argv[1]).read().splitlines()
assert lines, "no log lines"
for l in lines:
    j = json.loads(l)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$", j["ts"]), j
    assert j["level"] in ("error", "warn", "info", "debug") and isinstance(j["msg"], str), j
' "$TMP/err" || { fails=$((fails + 1)); echo "FAIL: $how: not JSON lines:"; cat "$TMP/err"; }
done
expect 2 "bad --log-format" -- "$HYMT" --log-format xml info "$M"
one_line "bad --log-format"
expect 2 "bad --log-format after the command" -- "$HYMT" info "$M" --log-format=yaml
expect 2 "bad HYMT_LOG_FORMAT" -- env HYMT_LOG_FORMAT=xml "$HYMT" info "$M"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
