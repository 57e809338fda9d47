#!/bin/sh
# server_test.sh HYMT DATA_DIR SRC_DIR: `hymt serve` end to end with curl on the tiny
# checkpoint: every route, every error status, streaming and not, keep-alive, a client
# that disconnects mid-stream (its request is cancelled and its KV blocks return), the
# Prometheus exposition (promtool when installed, else check_metrics.py), 64 concurrent
# clients x 20 requests with zero errors and batches larger than one, and graceful
# shutdown (SIGTERM: running requests finish, exit 0; past --drain they get 503).
HYMT=$1
DATA=$2
SRC=$3
. "$(dirname "$0")/common.sh"
serve_test_init server

# start NAME ARGS...: hymt serve on a free port; sets PORT and PID, log in $TMP/NAME.log
start() { serve_start "$@"; }

# req NAME METHOD PATH [curl args]: body $TMP/NAME.body, headers .hdr, status .code
req() {
    name=$1 method=$2 path=$3; shift 3
    curl -s -X "$method" -o "$TMP/$name.body" -D "$TMP/$name.hdr" -w '%{http_code}' \
        "$@" "$U$path" >"$TMP/$name.code" 2>"$TMP/$name.err"
}
# post NAME PATH JSON [curl args]: with the API key
post() {
    name=$1 path=$2 body=$3; shift 3
    req "$name" POST "$path" -H "$AUTH" -H 'Content-Type: application/json' -d "$body" "$@"
}
code() {
    checks=$((checks + 1))
    got=$(cat "$TMP/$1.code")
    if [ "$got" != "$2" ]; then
        fail "$1: HTTP $got, expected $2"; head -c 800 "$TMP/$1.body"; echo
    fi
}
has() {
    checks=$((checks + 1))
    grep -q -- "$2" "$TMP/$1.body" || { fail "$1: '$2' not in the body"; head -c 800 "$TMP/$1.body"; echo; }
}
hdr() {
    checks=$((checks + 1))
    grep -qi -- "$2" "$TMP/$1.hdr" || fail "$1: header '$2' missing"
}
# py NAME EXPR: a Python assertion on the JSON body (as j)
py() {
    checks=$((checks + 1))
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" \
        "$TMP/$1.body" 2>"$TMP/py.err" || { fail "$1: not true: $2"; head -c 800 "$TMP/$1.body"; echo; cat "$TMP/py.err"; }
}
# err NAME STATUS CODE: an error response in the documented shape
err() {
    code "$1" "$2"
    py "$1" "set(j['error']) >= {'message','type','code'} and j['error']['code'] == '$3'"
}
metric() { # metric NAME: the value of an unlabelled or fully labelled sample in /metrics
    curl -s "$U/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}

# ---------------------------------------------------------------- server A
start A --api-key sekret --cors '*' --max-body 8192 --max-chars 500 --drain 10 --threads 2
U=http://127.0.0.1:$PORT
AUTH="Authorization: Bearer sekret"
echo "server A on port $PORT"

req health GET /health; code health 200; has health '"ok"'
req ready GET /ready; code ready 200
req page GET /; code page 200; hdr page 'Content-Type: text/html'; has page '<html'
req models GET /v1/models -H "$AUTH"; code models 200
py models "j['object'] == 'list' and j['data'][0]['id'] == 'tiny-mqa' and j['data'][0]['object'] == 'model' and j['data'][0]['max_chars'] == 500 and j['data'][0]['demo'] is False"
hdr models 'Access-Control-Allow-Origin: \*'
req preflight OPTIONS /v1/chat/completions -H 'Origin: http://x' -H 'Access-Control-Request-Method: POST'
code preflight 204; hdr preflight 'Access-Control-Allow-Methods'

# translation, whole and streamed (segment-level deltas, then a done event with usage)
post tr /api/translate '{"text":"Hello world. How are you?\n\nFine.","target_lang":"de","source_lang":"en","temperature":0,"max_tokens":12}'
code tr 200
py tr "j['target_lang'] == 'de' and j['source_lang'] == 'en' and j['segments'] >= 2 and isinstance(j['translation'], str) and j['usage']['completion_tokens'] > 0 and j['usage']['prompt_tokens'] > 0 and set(j['timing_ms']) == {'queue','first_token','total'} and j['model'] == 'tiny-mqa'"
post tr_short /api/translate '{"text":"今天天气很好。","tgt":"en","src":"auto","max_tokens":8}'
code tr_short 200; py tr_short "j['source_lang'] == 'zh' and j['target_lang'] == 'en'"
post tr_stream /api/translate '{"text":"One.\n\nTwo.\n\nThree.","target_lang":"fr","stream":true,"max_tokens":8}' -N
code tr_stream 200; hdr tr_stream 'Content-Type: text/event-stream'
has tr_stream '"type":"delta"'; has tr_stream '"segments_total":3'; has tr_stream '"type":"done"'; has tr_stream '"completion_tokens"'

# a batch: texts[] -> translations[] in order, usage over all, each text validated
post trb /api/translate '{"texts":["Hello world.","今天天气很好。","One.\n\nTwo.","Bye."],"target_lang":"de","temperature":0,"max_tokens":6}'
code trb 200
py trb "len(j['translations']) == 4 and all(isinstance(x, str) and x for x in j['translations']) and j['segments'] >= 5 and len(j['source_langs']) == 4 and j['source_langs'][1] == 'zh' and 'translation' not in j and j['usage']['completion_tokens'] > 0"
post trb_empty /api/translate '{"texts":[],"tgt":"de"}'; err trb_empty 400 invalid_parameter
post trb_blank /api/translate '{"texts":["a"," \n"],"tgt":"de"}'; err trb_blank 400 empty_text; has trb_blank 'texts\[1\]'
post trb_type /api/translate '{"texts":["a",7],"tgt":"de"}'; err trb_type 400 missing_text; has trb_type 'texts\[1\]'
post trb_both /api/translate '{"texts":["a"],"text":"a","tgt":"de"}'; err trb_both 400 invalid_parameter
post trb_obj /api/translate '{"texts":"a","tgt":"de"}'; err trb_obj 400 invalid_parameter
post trb_stream /api/translate '{"texts":["a"],"tgt":"de","stream":true}'; err trb_stream 400 invalid_parameter
python3 -c "import json; print(json.dumps({'texts': ['a'] * 129, 'tgt': 'de'}))" >"$TMP/trb_many.json"
post trb_many /api/translate @"$TMP/trb_many.json"; err trb_many 400 invalid_parameter
python3 -c "import json; print(json.dumps({'texts': ['a' * 300, 'b' * 201], 'tgt': 'de'}))" >"$TMP/trb_long.json"
post trb_long /api/translate @"$TMP/trb_long.json"; err trb_long 413 text_too_long; has trb_long '501 characters'

# request ids: generated (24 hex digits) and returned, a client's own used, a bad one
# (a space, a control byte, over 128 bytes) replaced; timings in 0.1 ms
py tr "all(v == round(v, 1) for v in j['timing_ms'].values())"
checks=$((checks + 1))
grep -qiE '^X-Request-Id: [0-9a-f]{24}.$' "$TMP/tr.hdr" || fail "tr: no generated X-Request-Id: $(cat "$TMP/tr.hdr")"
post rid /api/translate '{"text":"Hi.","tgt":"de","max_tokens":4}' -H 'X-Request-Id: client-id_42/x'
code rid 200; hdr rid '^X-Request-Id: client-id_42/x.$'
req rid_err GET /nope -H 'X-Request-Id: e-404'; code rid_err 404; hdr rid_err '^X-Request-Id: e-404.$'
long_id=$(head -c 129 /dev/zero | tr '\0' 'i')
for bad in 'has space' "$long_id" "$(printf 'a\001b')"; do
    req rid_bad GET /health -H "X-Request-Id: $bad"
    checks=$((checks + 1))
    grep -qiE '^X-Request-Id: [0-9a-f]{24}.$' "$TMP/rid_bad.hdr" || fail "bad id '$bad' not replaced: $(grep -i request-id "$TMP/rid_bad.hdr")"
done
req rid_max GET /health -H "X-Request-Id: $(head -c 128 /dev/zero | tr '\0' 'm')"
hdr rid_max "^X-Request-Id: $(head -c 128 /dev/zero | tr '\0' 'm').$"
sleep 0.1 # the log line is written once the response is out
checks=$((checks + 1))
grep -q 'http: POST /api/translate 200 [0-9]*\.[0-9] ms tokens [0-9]*+[0-9]* request_id=client-id_42/x\( key=default\)\{0,1\}$' "$TMP/A.log" ||
    fail "no log line with the client's request id: $(grep client-id "$TMP/A.log")"

# OpenAI chat and completions, whole and streamed
post chat /v1/chat/completions '{"model":"x","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"max_tokens":6}'
code chat 200
py chat "j['object'] == 'chat.completion' and j['id'].startswith('chatcmpl-') and j['choices'][0]['message']['role'] == 'assistant' and j['choices'][0]['finish_reason'] in ('stop','length') and j['usage']['total_tokens'] == j['usage']['prompt_tokens'] + j['usage']['completion_tokens']"
post chat_s /v1/chat/completions '{"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"max_completion_tokens":5,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}' -N
code chat_s 200; has chat_s '"object":"chat.completion.chunk"'; has chat_s '"finish_reason":"length"'
has chat_s '"completion_tokens":5'; has chat_s '^data: \[DONE\]'
post cmpl /v1/completions '{"prompt":"abc","max_tokens":7,"ignore_eos":true,"seed":5}'
code cmpl 200; py cmpl "j['object'] == 'text_completion' and j['usage']['completion_tokens'] == 7 and j['choices'][0]['finish_reason'] == 'length'"
post cmpl2 /v1/completions '{"prompt":"abc","max_tokens":7,"ignore_eos":true,"seed":5}'
checks=$((checks + 1))
python3 -c "import json,sys; a,b=[json.load(open(f))['choices'][0]['text'] for f in sys.argv[1:]]; sys.exit(a!=b)" "$TMP/cmpl.body" "$TMP/cmpl2.body" || fail "same seed, different text"
# stop strings: greedy text, then the same request stopped at a piece of it
post greedy /v1/completions '{"prompt":"hello","max_tokens":24,"ignore_eos":true,"temperature":0}'
stop=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['choices'][0]['text']; print(json.dumps(t[len(t)//2:len(t)//2+2]))" "$TMP/greedy.body")
post stopped /v1/completions "{\"prompt\":\"hello\",\"max_tokens\":24,\"ignore_eos\":true,\"temperature\":0,\"stop\":[$stop]}"
checks=$((checks + 1))
python3 -c "
import json,sys
g=json.load(open(sys.argv[1]))['choices'][0]['text']; s=json.load(open(sys.argv[2]))['choices'][0]
stop=json.loads(sys.argv[3]); want=g[:g.find(stop)]
sys.exit(0 if s['text']==want and s['finish_reason']=='stop' else 1)" "$TMP/greedy.body" "$TMP/stopped.body" "$stop" || fail "stop string: $(cat "$TMP/stopped.body")"
post stopped_s /v1/completions "{\"prompt\":\"hello\",\"max_tokens\":24,\"ignore_eos\":true,\"temperature\":0,\"stop\":$stop,\"stream\":true}" -N
has stopped_s '"finish_reason":"stop"'

# /tokenize and /detokenize: round trips in both shapes, BOS, control tokens, bounds
checks=$((checks + 1))
python3 - "$U" "$AUTH" <<'PYEOF' 2>"$TMP/py.err" || fail "tokenize: $(cat "$TMP/py.err")"
import json, sys, urllib.request, urllib.error
base, auth = sys.argv[1], sys.argv[2].split(": ", 1)
def post(path, body, key=True):
    r = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    if key:
        r.add_header(*auth)
    try:
        with urllib.request.urlopen(r) as f:
            return f.status, json.load(f)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)
texts = ["Hello world.", "Grüße, 世界! 🎉 naïve", "  two  spaces\n\nand lines\t", "", "<|startoftext|>x<|extra_0|>"]
for t in texts:
    st, a = post("/tokenize", {"content": t})
    assert st == 200 and set(a) == {"tokens"} and all(isinstance(i, int) for i in a["tokens"]), (t, st, a)
    assert (len(a["tokens"]) > 0) == (t != ""), (t, a)
    st, d = post("/detokenize", {"tokens": a["tokens"]})
    assert st == 200 and d == {"content": t}, (t, st, d)
    st, v = post("/tokenize", {"prompt": t, "add_special_tokens": False})
    assert st == 200 and v["tokens"] == a["tokens"] and v["count"] == len(a["tokens"]) and v["max_model_len"] > 0, (t, v)
# control tokens: parsed by default (one id each), spelled out with parse_special false
st, sp = post("/tokenize", {"content": "<|startoftext|>"})
st2, lit = post("/tokenize", {"content": "<|startoftext|>", "parse_special": False})
assert len(sp["tokens"]) == 1 and len(lit["tokens"]) > 1, (sp, lit)
assert post("/detokenize", {"tokens": lit["tokens"]})[1]["content"] == "<|startoftext|>"
# BOS: add_special (llama.cpp, default off) and add_special_tokens (vLLM, default on)
plain = post("/tokenize", {"content": "Hi"})[1]["tokens"]
assert post("/tokenize", {"content": "Hi", "add_special": True})[1]["tokens"] == sp["tokens"] + plain
assert post("/tokenize", {"prompt": "Hi"})[1]["tokens"] == sp["tokens"] + plain
# refusals
vocab_bad = [{"tokens": [plain[0], -1]}, {"tokens": [10 ** 9]}, {"tokens": [1.5]}, {"tokens": "12"},
             {"tokens": ["1"]}, {}]
for b in vocab_bad:
    st, e = post("/detokenize", b)
    assert st == 400 and e["error"]["code"] == "invalid_parameter" and "tokens" in e["error"]["message"], (b, st, e)
for b in [{}, {"content": 5}, {"content": "a", "prompt": "b"}, {"content": "a", "add_special": "yes"},
          {"content": "a", "with_pieces": True}, {"prompt": None}]:
    st, e = post("/tokenize", b)
    assert st == 400 and "error" in e, (b, st, e)
assert post("/tokenize", {"content": "a"}, key=False)[0] == 401
assert post("/detokenize", {"tokens": [1]}, key=False)[0] == 401
# fields hymt does not implement: 400 naming the field; values that ask for nothing pass
msgs = [{"role": "user", "content": "a"}]
for k, v in [("tools", [{"type": "function", "function": {"name": "f"}}]), ("tool_choice", "auto"),
             ("functions", [{"name": "f"}]), ("function_call", "auto"), ("response_format", {"type": "json_object"}),
             ("n", 2), ("best_of", 2), ("suffix", "x"), ("echo", True),
             ("logit_bias", {"5": 10}), ("presence_penalty", 0.5), ("frequency_penalty", 1)]:
    for path, body in [("/v1/chat/completions", {"messages": msgs}), ("/v1/completions", {"prompt": "a"})]:
        body = dict(body, max_tokens=2, **{k: v})
        st, e = post(path, body)
        assert st == 400 and e["error"]["message"].startswith(k + ":"), (path, k, st, e)
ok = {"model": "m", "messages": msgs, "max_tokens": 2, "stream": False, "stream_options": None, "temperature": None,
      "top_p": None, "n": 1, "tools": [], "tool_choice": "none", "functions": None, "logprobs": False,
      "top_logprobs": None, "response_format": {"type": "text"}, "logit_bias": {}, "presence_penalty": 0,
      "frequency_penalty": 0, "user": "u", "seed": None, "stop": None, "best_of": None, "echo": False, "suffix": None}
st, r = post("/v1/chat/completions", ok)
assert st == 200 and r["usage"]["completion_tokens"] >= 1, (st, r)
st, r = post("/v1/completions", dict(ok, prompt="a", messages=None, best_of=1, suffix=""))
assert st == 200, (st, r)
PYEOF
req e405t GET /tokenize -H "$AUTH"; err e405t 405 method_not_allowed; hdr e405t 'Allow: POST'

# errors
req e404 GET /nope; err e404 404 not_found
req e405 GET /api/translate -H "$AUTH"; err e405 405 method_not_allowed; hdr e405 'Allow: POST'
req e405b POST /health -d x; code e405b 405
req e401 POST /api/translate -d '{"text":"a","tgt":"de"}'; err e401 401 invalid_api_key
req e401b GET /v1/models -H 'Authorization: Bearer nope'; err e401b 401 invalid_api_key
post bad_json /api/translate '{"text": "a",'; err bad_json 400 invalid_json
post not_obj /v1/chat/completions '[1,2]'; err not_obj 400 invalid_json
post bad_type /api/translate '{"text": 5, "tgt": "de"}'; err bad_type 400 missing_text
post bad_lang /api/translate '{"text": "a", "target_lang": "xx"}'; err bad_lang 400 unknown_language
has bad_lang 'valid: zh, en, fr'
post no_lang /api/translate '{"text": "a"}'; err no_lang 400 missing_target_lang
post empty /api/translate '{"text": "  \n", "tgt": "de"}'; err empty 400 empty_text
printf '{"text": "\377\376", "tgt": "de"}' >"$TMP/badutf8.json"
post bad_utf8 /api/translate @"$TMP/badutf8.json"; err bad_utf8 400 invalid_json
post bad_temp /v1/chat/completions '{"messages":[{"role":"user","content":"a"}],"temperature":5}'; err bad_temp 400 invalid_parameter
post bad_n /v1/chat/completions '{"messages":[{"role":"user","content":"a"}],"n":2}'; err bad_n 400 invalid_parameter
has bad_n 'only n = 1'
post bad_role /v1/chat/completions '{"messages":[{"role":"wizard","content":"a"}]}'; err bad_role 400 invalid_parameter
post bad_msgs /v1/chat/completions '{"messages":[]}'; err bad_msgs 400 invalid_parameter
post too_many /v1/completions '{"prompt":"a","max_tokens":100000}'; err too_many 400 context_length_exceeded
post bad_stop /v1/completions '{"prompt":"a","stop":[1]}'; err bad_stop 400 invalid_parameter
head -c 9000 /dev/zero | tr '\0' 'a' >"$TMP/big"
post big /api/translate @"$TMP/big"; err big 413 request_too_large
post big_chunked /api/translate @"$TMP/big" -H 'Transfer-Encoding: chunked'; err big_chunked 413 request_too_large
long=$(head -c 600 /dev/zero | tr '\0' 'a')
post long /api/translate "{\"text\":\"$long\",\"tgt\":\"de\"}"; err long 413 text_too_long

# keep-alive: two requests on one connection
checks=$((checks + 1))
curl -sv -o /dev/null -o /dev/null "$U/health" "$U/ready" 2>&1 | grep -qi 're-using existing connection' || fail "keep-alive: the connection was not reused"

# a client that goes away mid-stream: its request is cancelled, its KV blocks return
cancelled0=$(metric 'hymt_engine_finished_total{reason="cancelled"}')
curl -s -N --max-time 0.4 -H "$AUTH" -d '{"prompt":"x","max_tokens":4000,"ignore_eos":true,"stream":true}' "$U/v1/completions" >"$TMP/dc.body"
checks=$((checks + 1))
grep -q '^data: {' "$TMP/dc.body" || fail "disconnect: no chunk arrived before the client left"
i=0
while [ "$(metric hymt_running_sequences)" != 0 ] && [ $i -lt 40 ]; do sleep 0.05; i=$((i + 1)); done
checks=$((checks + 3))
[ "$(metric 'hymt_engine_finished_total{reason="cancelled"}')" -gt "$cancelled0" ] || fail "disconnect: the request was not cancelled"
[ "$(metric hymt_kv_blocks_used)" = 0 ] || fail "disconnect: KV blocks still used: $(metric hymt_kv_blocks_used)"
[ "$(metric hymt_client_disconnects_total)" -ge 1 ] || fail "disconnect: not counted"

# ... and a streamed document translation: every segment in flight is cancelled
python3 -c "import json; print(json.dumps({'text': '\\n\\n'.join('S%d.' % i for i in range(40)), 'tgt': 'de', 'max_tokens': 400, 'stream': True}))" >"$TMP/doc.json"
cancelled0=$(metric 'hymt_engine_finished_total{reason="cancelled"}')
curl -s -N --max-time 0.4 -H "$AUTH" -d @"$TMP/doc.json" "$U/api/translate" >"$TMP/dc_tr.body"
echo "translate disconnect: $(grep -c "^data:" "$TMP/dc_tr.body") events before leaving"
i=0
while [ "$(metric hymt_running_sequences)" != 0 ] && [ $i -lt 40 ]; do sleep 0.05; i=$((i + 1)); done
checks=$((checks + 2))
[ "$(metric 'hymt_engine_finished_total{reason="cancelled"}')" -gt "$cancelled0" ] || fail "translate disconnect: nothing was cancelled"
[ "$(metric hymt_kv_blocks_used)" = 0 ] || fail "translate disconnect: KV blocks still used: $(metric hymt_kv_blocks_used)"

# load: 64 concurrent clients x 20 requests each (keep-alive), half translate, half chat
urls="" outs=""
i=0
while [ $i -lt 20 ]; do urls="$urls $U/PATH"; outs="$outs -o /dev/null"; i=$((i + 1)); done
c=0 load_pids=""
while [ $c -lt 64 ]; do
    if [ $((c % 2)) = 0 ]; then
        path=api/translate body='{"text":"Good morning.","tgt":"de","max_tokens":8}'
    else
        path=v1/chat/completions body='{"messages":[{"role":"user","content":"Hello"}],"max_tokens":8,"ignore_eos":true}'
    fi
    # shellcheck disable=SC2086
    curl -s $outs -w '%{http_code}\n' -H "$AUTH" -d "$body" $(echo $urls | sed "s|/PATH|/$path|g") >"$TMP/load.$c" &
    load_pids="$load_pids $!"
    c=$((c + 1))
done
for p in $load_pids; do wait "$p"; done
checks=$((checks + 2))
ok=$(cat "$TMP"/load.* | grep -c '^200$')
[ "$ok" = 1280 ] || fail "load: $ok of 1280 requests answered 200: $(cat "$TMP"/load.* | sort | uniq -c | tr '\n' ' ')"
batch=$(metric hymt_engine_mean_batch_sequences)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 1 else 1)" "$batch" || fail "load: mean batch $batch, not above 1"
echo "load: $ok/1280 ok, mean sequences per engine step $batch"

# metrics exposition
curl -s "$U/metrics" >"$TMP/metrics.txt"
checks=$((checks + 2))
grep -q 'hymt_http_requests_total{route="/api/translate",code="200"}' "$TMP/metrics.txt" || fail "metrics: no translate 200 counter"
if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$TMP/metrics.txt" || fail "promtool check metrics"
else
    python3 "$SRC/tests/server/check_metrics.py" "$TMP/metrics.txt" || fail "check_metrics.py"
fi
for m in hymt_time_to_first_token_seconds_count hymt_queue_depth hymt_engine_preemptions_total \
    hymt_kv_blocks_capacity hymt_prefix_cache_hit_ratio hymt_process_resident_memory_bytes \
    hymt_prompt_tokens_total hymt_http_request_duration_seconds_bucket hymt_requests_in_flight; do
    checks=$((checks + 1))
    grep -q "^$m" "$TMP/metrics.txt" || fail "metrics: $m missing"
done

# graceful shutdown: a running request finishes, then exit 0
post drain_req /v1/completions '{"prompt":"x","max_tokens":1500,"ignore_eos":true}' &
dpid=$!
# SIGTERM once this process holds it (hymt_requests_in_flight: counted by the front end
# itself; behind --queue the running and pending figures come from the workers and may
# still show the load above, so a SIGTERM on them could beat the request's connection):
# on a loaded machine no fixed pause is sure to see the request arrive first
n=0
until curl -s "$U/metrics" | grep -qE '^hymt_requests_in_flight [1-9]' || [ $n -ge 400 ]; do
    n=$((n + 1)); sleep 0.05
done
kill -TERM "$PID"
wait $dpid
code drain_req 200; py drain_req "j['usage']['completion_tokens'] == 1500"
wait "$PID"; rc=$?
checks=$((checks + 2))
[ $rc = 0 ] || fail "server A exited $rc after SIGTERM"
grep -q 'SIGTERM' "$TMP/A.log" || fail "no shutdown line in the log"

# ---------------------------------------------------------------- server B: a full queue
# One sequence runs, one waits: of 8 simultaneous long requests the excess get 429 at once,
# the admitted ones still finish. Then SIGTERM with a short drain: what is still running or
# queued past it gets 503, and the exit code is 0.
start B --max-running 1 --max-queue 1 --drain 0.2 --threads 1
U=http://127.0.0.1:$PORT
AUTH="X-None: 0"
burst() { # burst PREFIX N: N long requests at once in the background; sets burst_pids
    burst_pids=""
    k=0
    while [ $k -lt "$2" ]; do
        post "$1$k" /v1/completions '{"prompt":"x","max_tokens":4000,"ignore_eos":true}' &
        burst_pids="$burst_pids $!"
        k=$((k + 1))
    done
}
# a batch on a one-sequence engine with a one-entry queue: the first text is admitted,
# the others wait for room (begun on later pumps); greedy, each translation equals the
# text's own translation alone, in order
batch_texts='["Good morning.","今天天气很好。","A third text.\n\nIn two paragraphs."]'
post bq /api/translate "{\"texts\":$batch_texts,\"tgt\":\"fr\",\"temperature\":0,\"max_tokens\":5}"
code bq 200
for k in 0 1 2; do
    one=$(python3 -c "import json,sys; print(json.dumps({'text': json.loads(sys.argv[1])[int(sys.argv[2])], 'tgt': 'fr', 'temperature': 0, 'max_tokens': 5}))" "$batch_texts" $k)
    post "bq$k" /api/translate "$one"; code "bq$k" 200
    checks=$((checks + 1))
    python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['translations'][int(sys.argv[3])]; a=json.load(open(sys.argv[2]))['translation']; sys.exit(a != b)" \
        "$TMP/bq.body" "$TMP/bq$k.body" $k || fail "batch item $k differs from its own translation: $(cat "$TMP/bq.body") vs $(cat "$TMP/bq$k.body")"
done
burst q 8
for p in $burst_pids; do wait "$p"; done
codes=$(for f in "$TMP"/q?.code; do cat "$f"; echo; done)
n200=$(echo "$codes" | grep -c 200)
n429=$(echo "$codes" | grep -c 429)
checks=$((checks + 2))
[ "$n200" -ge 1 ] && [ "$n429" -ge 1 ] && [ $((n200 + n429)) = 8 ] || fail "burst: $n200 x 200, $n429 x 429 of 8:" $codes
for k in 0 1 2 3 4 5 6 7; do
    if [ "$(cat "$TMP/q$k.code")" = 429 ]; then err "q$k" 429 queue_full; hdr "q$k" 'Retry-After: 1'; break; fi
done
post full_tr /api/translate '{"text":"a","tgt":"de"}' # an idle engine: admitted
code full_tr 200
burst cut 2
sleep 0.1
kill -TERM "$PID"
for p in $burst_pids; do wait "$p"; done
checks=$((checks + 1))
grep -q 503 "$TMP"/cut?.code || fail "drain: nothing was cut at the drain limit: $(cat "$TMP"/cut?.code)"
for k in 0 1; do [ "$(cat "$TMP/cut$k.code")" = 503 ] && err "cut$k" 503 cancelled; done
wait "$PID"; rc=$?
checks=$((checks + 1))
[ $rc = 0 ] || fail "server B exited $rc after SIGTERM"

# ---------------------------------------------------------------- server C: deadlines
start C --timeout 0.1 --threads 1
U=http://127.0.0.1:$PORT
post slow /v1/completions '{"prompt":"x","max_tokens":4000,"ignore_eos":true}'; err slow 504 timeout
post slow_s /v1/completions '{"prompt":"x","max_tokens":4000,"ignore_eos":true,"stream":true}' -N
code slow_s 200; has slow_s '"code":504'; has slow_s '^data: \[DONE\]'
post slow_tr /api/translate "{\"text\":\"$(head -c 300 /dev/zero | tr '\0' 'a')\",\"tgt\":\"de\",\"max_tokens\":4000}"
err slow_tr 504 timeout
# a client that connected before SIGTERM and sends its request just after it hears an
# answer (503: the engine is draining), not a reset
python3 - "$PORT" "$PID" >"$TMP/fresh.out" 2>&1 <<'EOF'
import os, signal, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(0.3)  # the server has accepted it
os.kill(int(sys.argv[2]), signal.SIGTERM)
for _ in range(100):  # until the drain has begun: the listening socket refuses
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()
    except ConnectionRefusedError:
        break
    time.sleep(0.05)
body = b'{"prompt":"x","max_tokens":2}'
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
print(repr(s.makefile("rb").read()[:200]))  # until the server closes
EOF
checks=$((checks + 1))
grep -q "HTTP/1.1 503" "$TMP/fresh.out" || fail "drain: a connected client's request got no 503: $(cat "$TMP/fresh.out")"
wait "$PID"
pids=""

# ---------------------------------------------------------------- server P: Hy-MT2 prompts
# The tiny 7b tokenizer decides mt1 (Hunyuan-MT) by itself, which has no instruction
# prompts: refused; HYMT_PROMPT_STYLE=mt2 (the environment form of --prompt-style) makes
# the same checkpoint a Hy-MT2 one, and every instruction field works.
AUTH="X-None: 0"
start P0 --threads 1
U=http://127.0.0.1:$PORT
grep -q 'prompts: mt1 (Hunyuan-MT prompts), chat format 7b, decided by the tokenizer alone' "$TMP/P0.log" ||
    fail "P0: the prompt decision is not logged"; checks=$((checks + 1))
post p0_style /api/translate '{"text":"Hi.","tgt":"de","style":"formal"}'
err p0_style 400 unsupported_by_model; has p0_style 'Hy-MT2'
kill -TERM "$PID"; wait "$PID"
HYMT_PROMPT_STYLE=mt2 start P --threads 1
unset HYMT_PROMPT_STYLE # a shell may keep a function call's assignment
U=http://127.0.0.1:$PORT
grep -q 'prompts: mt2 (Hy-MT2 prompts), chat format 7b, decided by --prompt-style mt2' "$TMP/P.log" ||
    fail "P: HYMT_PROMPT_STYLE=mt2 not in effect"; checks=$((checks + 1))
for f in '"style":"formal"' '"preferences":["Keep names","Be brief"]' '"delimiters":true' \
         '"data_format":"JSON"' '"style":null,"delimiters":false'; do
    post p_ok /api/translate "{\"text\":\"Hello world.\",\"tgt\":\"de\",\"max_tokens\":3,$f}"
    code p_ok 200
done
post p_two /api/translate '{"text":"Hi.","tgt":"de","style":"formal","delimiters":true}'
err p_two 400 invalid_parameter
post p_type /api/translate '{"text":"Hi.","tgt":"de","preferences":"be brief"}'
err p_type 400 invalid_parameter; has p_type 'preferences'
post p_nl /api/translate '{"text":"Hi.","tgt":"de","style":"a\nb"}'
err p_nl 400 invalid_parameter; has p_nl 'control character'
post p_many /api/translate '{"text":"Hi.","tgt":"de","preferences":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]}'
err p_many 400 invalid_parameter
kill -TERM "$PID"; wait "$PID"
pids=""

# ---------------------------------------------------------------- server D: 10x the load
# 640 requests at once (64 curl processes x 10 parallel transfers) against a small queue:
# the excess is refused with 429 quickly, everything admitted finishes with 200, nothing
# else comes back.
start D --max-queue 16 --max-running 8
U=http://127.0.0.1:$PORT
c=0 over_pids=""
while [ $c -lt 64 ]; do
    set --
    i=0
    while [ $i -lt 10 ]; do set -- "$@" -o /dev/null "$U/v1/chat/completions"; i=$((i + 1)); done
    curl -s --parallel --parallel-max 10 -w '%{http_code} %{time_total}\n' \
        -d '{"messages":[{"role":"user","content":"Hello"}],"max_tokens":32,"ignore_eos":true}' \
        "$@" >"$TMP/over.$c" &
    over_pids="$over_pids $!"
    c=$((c + 1))
done
for p in $over_pids; do wait "$p"; done
checks=$((checks + 3))
n200=$(cat "$TMP"/over.* | grep -c '^200 ')
n429=$(cat "$TMP"/over.* | grep -c '^429 ')
[ $((n200 + n429)) = 640 ] || fail "overload: $n200 x 200 + $n429 x 429 of 640: $(cut -d' ' -f1 "$TMP"/over.* | sort | uniq -c | tr '\n' ' ')"
[ "$n429" -ge 1 ] && [ "$n200" -ge 16 ] || fail "overload: $n200 x 200, $n429 x 429"
# The server answers every 429 within 1 s (its own log line: handler time in ms). The
# clients' time_total also counts 640 curl transfers scheduled on the same few cores (and,
# in CI, browser tests running beside this one), so it gets a looser bound.
srv429=$(grep -c ' 429 [0-9.]* ms' "$TMP/D.log")
slow429=$(awk '$6 == 429 && $7 + 0 > 1000' "$TMP/D.log" | wc -l)
[ "$srv429" = "$n429" ] && [ "$slow429" = 0 ] ||
    fail "overload: $slow429 of $srv429 logged 429 answers took over 1 s in the server"
slowc=$(cat "$TMP"/over.* | awk '$1 == 429 && $2 > 5.0' | wc -l)
[ "$slowc" = 0 ] || fail "overload: $slowc of the 429 answers reached the client after 5 s"
echo "overload: 640 at once: $n200 x 200, $n429 x 429 (every 429 within 1 s in the server," \
    "$(cat "$TMP"/over.* | awk '$1 == 429 && $2 > 1.0' | wc -l) over 1 s at the client)"
kill -TERM "$PID"
wait "$PID"
pids=""

# ---------------------------------------------------------------- server E: JSON logs
# --log-format json: one JSON object a line; the request's line has its id and fields.
start E --log-format json --threads 1
U=http://127.0.0.1:$PORT
AUTH="X-None: 0"
post jl /v1/completions '{"prompt":"abc","max_tokens":3,"ignore_eos":true}' -H 'X-Request-Id: json-log-1'
code jl 200; hdr jl '^X-Request-Id: json-log-1.$'
req jl404 GET /nope
# /detokenize takes up to 262144 ids (the default --max-body holds more)
python3 -c "import json; print(json.dumps({'tokens': [65] * 262144}, separators=(',', ':')))" >"$TMP/ids_max.json"
python3 -c "import json; print(json.dumps({'tokens': [65] * 262145}, separators=(',', ':')))" >"$TMP/ids_over.json"
post ids_max /detokenize @"$TMP/ids_max.json"; code ids_max 200
py ids_max "len(j['content']) > 0"
post ids_over /detokenize @"$TMP/ids_over.json"; err ids_over 400 invalid_parameter
curl -s -N --max-time 0.3 -H 'X-Request-Id: json-gone' -d '{"prompt":"x","max_tokens":4000,"ignore_eos":true,"stream":true}' "$U/v1/completions" >/dev/null
sleep 0.3
kill -TERM "$PID"
wait "$PID"; rc=$?
pids=""
checks=$((checks + 2))
[ $rc = 0 ] || fail "server E exited $rc after SIGTERM"
python3 - "$TMP/E.log" "$(sed -n 's/^X-Request-Id: \([0-9a-f]*\).$/\1/Ip' "$TMP/jl404.hdr")" <<'PYEOF' 2>"$TMP/py.err" || fail "JSON log: $(cat "$TMP/py.err")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]  # every line is JSON
by_id = {l["request_id"]: l for l in lines if "request_id" in l}
fields = {"ts", "level", "msg", "request_id", "method", "path", "status", "ms", "tokens_in", "tokens_out"}
a = by_id["json-log-1"]
assert fields <= set(a), a
assert (a["method"], a["path"], a["status"], a["tokens_out"]) == ("POST", "/v1/completions", 200, 3), a
assert a["tokens_in"] > 0 and isinstance(a["ms"], float) and a["ms"] == round(a["ms"], 1), a
assert "client_gone" not in a, a
b = by_id[sys.argv[2]]  # a generated id, the one the response carried
assert (b["path"], b["status"]) == ("/nope", 404), b
c = by_id["json-gone"]
assert c["client_gone"] == "true" and c["tokens_out"] > 0, c
print("JSON log: %d lines, request lines for %d ids" % (len(lines), len(by_id)))
PYEOF

echo "server_test: $checks checks, $fails failures"
[ $fails = 0 ]
