#!/bin/sh
# tls_test.sh HYMT DATA_DIR: `hymt serve --tls-cert/--tls-key` on the tiny checkpoint.
# A throwaway CA and server certificate are made here with the openssl CLI (nothing
# private is committed). Clients that verify the certificate (curl --cacert, Python's ssl)
# get /health, a translation, streamed chat completions, pipelined requests and a body
# larger than the head buffer; plain HTTP to the TLS port gets a 400 at once (no hang); a
# client trusting another CA fails verification (and the server logs one line); a slow or
# silent handshake is closed at the head deadline while other clients are served; start-up
# refuses unreadable, non-PEM, encrypted and mismatched files with one line each.
HYMT=$1
DATA=$2
. "$(dirname "$0")/common.sh"
serve_test_init tls
command -v openssl >/dev/null || { echo "FAIL: the openssl CLI is missing (scripts/deps.sh --test)"; exit 1; }

# ---- certificates: CA -> server (localhost, 127.0.0.1); another CA; an unrelated key ----
cd "$TMP" || exit 1
gen() { # gen KEYFILE: a P-256 key
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>>openssl.log
}
gen ca.key && gen other-ca.key && gen server.key && gen stray.key || { echo "FAIL: openssl genpkey"; cat openssl.log; exit 1; }
openssl req -x509 -new -key ca.key -days 2 -subj "/CN=hymt test CA" -out ca.pem 2>>openssl.log
openssl req -x509 -new -key other-ca.key -days 2 -subj "/CN=another CA" -out other-ca.pem 2>>openssl.log
openssl req -new -key server.key -subj "/CN=localhost" -out server.csr 2>>openssl.log
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext.cnf
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile ext.cnf -out server.pem 2>>openssl.log
openssl pkey -in server.key -aes256 -passout pass:secret -out encrypted.key 2>>openssl.log
[ -s server.pem ] && [ -s encrypted.key ] || { echo "FAIL: openssl could not make the test certificates"; cat openssl.log; exit 1; }

# ---- start-up errors: exit 1 and one line naming the flag and the file ----
bad() { # bad CERT KEY EXPECTED_TEXT
    "$HYMT" serve -m "$DATA/tiny-mqa" --port 0 --tls-cert "$1" --tls-key "$2" </dev/null >out.txt 2>err.txt
    rc=$?
    ok
    if [ $rc != 1 ] || ! grep -q -- "$3" err.txt || [ "$(wc -l <err.txt)" != 1 ]; then
        fail "--tls-cert $1 --tls-key $2: rc $rc, expected 1 and one line with '$3':"; cat err.txt
    fi
}
bad missing.pem server.key "--tls-cert missing.pem: cannot read it: No such file"
bad server.pem missing.key "--tls-key missing.key: cannot read it"
bad "$TMP" server.key "not a regular file"
bad server.key server.key "--tls-cert server.key: not a PEM certificate"
bad server.pem ext.cnf "--tls-key ext.cnf: not a PEM private key"
bad server.pem stray.key "--tls-key stray.key does not belong to the certificate in --tls-cert server.pem"
bad server.pem encrypted.key "--tls-key encrypted.key is encrypted"
"$HYMT" serve -m "$DATA/tiny-mqa" --port 0 --tls-cert server.pem >/dev/null 2>err.txt
rc=$?; ok
[ $rc = 2 ] && grep -q "go together" err.txt || { fail "--tls-cert alone: rc $rc"; cat err.txt; }

# ---- the server (head deadline 1 s for the slow-handshake checks); the certificate from
# the environment and the key from a config file, as any other setting ----
: >serve.log
printf 'tls-key = %s/server.key\n' "$TMP" >serve.conf
HYMT_TLS_CERT=$TMP/server.pem "$HYMT" serve -m "$DATA/tiny-mqa" --port 0 --header-timeout 1 \
    --config serve.conf 2>serve.log &
PID=$! pids=$!
serve_ready serve.log $PID || exit 1
grep -q "listening on https://" serve.log || fail "the log does not say https://"
U="https://localhost:$PORT"
CURL="curl -sS --max-time 30 --cacert ca.pem"

# /health, verified against the test CA (by name and by address)
ok; [ "$($CURL "$U/health")" = '{"status":"ok"}' ] || fail "/health over TLS"
ok; [ "$($CURL "https://127.0.0.1:$PORT/health")" = '{"status":"ok"}' ] || fail "/health at 127.0.0.1"
# a translation
code=$($CURL -o tr.json -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"text":"Hello world. How are you?","target_lang":"de","max_tokens":8}' "$U/api/translate")
ok; [ "$code" = 200 ] && python3 -c "import json,sys; j=json.load(open('tr.json')); sys.exit(0 if isinstance(j['translation'], str) and j['usage']['completion_tokens'] > 0 else 1)" ||
    { fail "/api/translate over TLS: HTTP $code"; head -c 400 tr.json; echo; }
# a streamed chat completion: chunks (how many depends on how tokens group per engine
# step), the finish reason, usage of all 12 tokens, then [DONE]
$CURL -N -H 'Content-Type: application/json' -D stream.hdr -o stream.txt \
    -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":12,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' \
    "$U/v1/chat/completions"
ok; python3 - stream.txt <<'EOF' && grep -qi 'transfer-encoding: chunked' stream.hdr || { fail "streamed completion over TLS"; head -c 600 stream.txt; echo; }
import json, sys
ev = [l[6:] for l in open(sys.argv[1], encoding="utf-8").read().split("\n") if l.startswith("data: ")]
assert ev[-1] == "[DONE]", ev[-1:]
js = [json.loads(e) for e in ev[:-1]]
text = "".join(c["choices"][0]["delta"].get("content") or "" for c in js if c["choices"])
assert text, "no content"
assert any(c["choices"] and c["choices"][0]["finish_reason"] == "length" for c in js)
assert js[-1]["usage"]["completion_tokens"] == 12, js[-1]
EOF
# keep-alive: two requests, one TLS connection
n=$($CURL -o /dev/null -o /dev/null -w '%{num_connects}\n' "$U/health" "$U/ready" | awk '{ s += $1 } END { print s }')
ok; [ "$n" = 1 ] || fail "keep-alive over TLS: $n connections for two requests"

# plain HTTP to the TLS port: a 400 saying so, at once
code=$(curl -sS --max-time 5 -o plain.json -w '%{http_code}' "http://127.0.0.1:$PORT/health")
rc=$?
ok; [ $rc = 0 ] && [ "$code" = 400 ] && grep -q '"code":"tls_required"' plain.json ||
    { fail "plain HTTP to the TLS port: curl rc $rc, HTTP $code"; cat plain.json; echo; }

# a client that trusts another CA refuses the certificate; the server logs it once
before=$(grep -c "tls: handshake failed" serve.log)
curl -sS --max-time 10 --cacert other-ca.pem "$U/health" >/dev/null 2>wrongca.err
rc=$?
ok; [ $rc = 60 ] || { fail "a client with another CA: curl rc $rc, expected 60 (verification failed)"; cat wrongca.err; }
sleep 0.3
after=$(grep -c "tls: handshake failed" serve.log)
ok; [ $((after - before)) = 1 ] || fail "the failed handshake was logged $((after - before)) times, expected once"

# Python with verification: pipelined requests in one write, a body larger than the head
# buffer, a slow and a silent handshake closed at the deadline, others served meanwhile
python3 - "$PORT" ca.pem <<'EOF' || fails=$((fails + 1))
import json, socket, ssl, sys, time
port, ca = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=ca)

def tls():
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    return ctx.wrap_socket(s, server_hostname="localhost")

def read_responses(s, n):
    data = b""
    while data.count(b"HTTP/1.1 ") < n or not data.endswith(b"}"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data

bad = 0
s = tls()
s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * 3)
got = read_responses(s, 3)
if got.count(b'{"status":"ok"}') != 3:
    print("FAIL: 3 pipelined requests over TLS gave:", got[:300]); bad += 1
s.close()

# /tokenize of ~120 KiB: records fill the head buffer many times over
text = "Hello world, this is a longer body. " * 3500
body = json.dumps({"content": text}).encode()
s = tls()
s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
got = b""
while True:
    c = s.recv(65536)
    if not c:
        break
    got += c
head, _, payload = got.partition(b"\r\n\r\n")
if not head.startswith(b"HTTP/1.1 200") or len(json.loads(payload)["tokens"]) < 3500:
    print("FAIL: a %d-byte body over TLS:" % len(body), got[:300]); bad += 1

# a full record arriving when the head buffer is part full: the buffer takes what fits and
# the rest waits inside TLS, with nothing left in the socket to announce it
s = tls()
s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\n")
time.sleep(0.3)
hdr = b"Content-Type: application/json\r\nConnection: close\r\nContent-Length: %05d\r\n\r\n"
n_body = 16384 - len(hdr % 0)
body = json.dumps({"content": "x" * (n_body - 15)}).encode()
body += b" " * (n_body - len(body))
s.sendall(hdr % n_body + body)  # one 16 KiB record
s.settimeout(5)
try:
    got = s.recv(65536)
except OSError as e:
    got = repr(e).encode()
if not got.startswith(b"HTTP/1.1 200"):
    print("FAIL: a record larger than the head buffer's room:", got[:200]); bad += 1
s.close()

def closed_within(sock, limit):
    t0 = time.time()
    sock.settimeout(limit + 2)
    try:
        while sock.recv(4096):
            pass
    except OSError:
        pass
    return time.time() - t0

# a slow handshake (a record header, then nothing) and a silent connection
slow = socket.create_connection(("127.0.0.1", port))
slow.sendall(b"\x16\x03\x01")
silent = socket.create_connection(("127.0.0.1", port))
t0 = time.time()
s = tls()  # another client is served meanwhile
s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
if b'{"status":"ok"}' not in read_responses(s, 1) or time.time() - t0 > 1.0:
    print("FAIL: a client beside a slow handshake waited %.2f s" % (time.time() - t0)); bad += 1
for name, sock in (("slow", slow), ("silent", silent)):
    dt = closed_within(sock, 1.0)
    if dt > 2.0:
        print("FAIL: the %s handshake held its connection %.2f s (--header-timeout 1)" % (name, dt)); bad += 1
sys.exit(1 if bad else 0)
EOF
checks=$((checks + 4))
grep -q "tls: handshake not done within --header-timeout" serve.log || fail "the slow handshake was not logged"

# shutdown: SIGTERM, exit 0
serve_stop serve.log

echo "tls_test: $checks checks, $fails failures"
[ $fails = 0 ]
