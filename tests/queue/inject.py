#!/usr/bin/env python3
"""inject.py PORT WHAT...: writes jobs into the queue's stream by hand (a raw RESP client,
standard library only), as a front end would not: `expired` (deadline 10 s ago, no cancel
mark), `malformed` (a prompt of 5 bytes: not whole token ids), `burst:N` (N valid jobs of
400 new tokens in one MULTI/EXEC: they appear at once, as to workers blocked waiting).
`check-expired` exits 0 when the expired job's result stream ends with finish 4 (timeout)
and holds no token."""
import socket
import struct
import sys
import time

EXPIRED = "e" * 32
MALFORMED = "f" * 32


def cmd(s, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(out)
    return read(s.makefile("rb"))


def read(f):
    line = f.readline()
    t, rest = line[:1], line[1:-2]
    if t in (b"+", b"-"):
        return rest.decode()
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [read(f) for _ in range(n)]
    raise ValueError(line)


def job(jid, prompt, dl, n=5):
    return ["XADD", "hymt:jobs", "*", "v", "1", "id", jid, "p", prompt, "n", str(n),
            "s", "0 1 0 1 7", "stop", b"", "dl", str(dl), "ttl", "60"]


def main():
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    now = int(time.time() * 1000)
    for what in sys.argv[2:]:
        if what == "expired":
            cmd(s, *job(EXPIRED, struct.pack("<3i", 1, 2, 3), now - 10000))
        elif what == "malformed":
            cmd(s, *job(MALFORMED, b"\x01\x02\x03\x04\x05", 0))
        elif what.startswith("burst:"):
            assert cmd(s, "MULTI") == "OK"
            n = int(what[6:])
            for i in range(n):
                prompt = struct.pack("<4i", 1 + i % 400, 2, 3, 4)
                assert cmd(s, *job("%032x" % (0xb0000 + i), prompt, 0, 400)) == "QUEUED"
            got = cmd(s, "EXEC")
            assert isinstance(got, list) and len(got) == n, got
        elif what == "check-expired":
            entries = cmd(s, "XRANGE", "hymt:r:" + EXPIRED, "-", "+")
            fields = [dict(zip(e[1][::2], e[1][1::2])) for e in entries or []]
            ends = [f for f in fields if f.get(b"k") == b"end"]
            toks = [f for f in fields if b"t" in f]
            ok = len(ends) == 1 and ends[0][b"f"] == b"4" and not toks
            print("expired job's results:", fields)
            sys.exit(0 if ok else 1)


main()
