#!/usr/bin/env python3
"""corrupt_models.py HYMT DATA_DIR [--count N] [--jobs J] [--timeout S] [--seed N] [--only I]
(HYMT_CORRUPT_COUNT=N overrides --count: e.g. 20000 for a long run.)

Corrupted model files against `hymt info` and `hymt generate -n 1`: N mutations (default
1000, a quarter each) of the tiny checkpoint's config.json, model.safetensors and
tokenizer.json, and of a GGUF made from it by `hymt convert`: bit flips, truncations,
inserted and deleted bytes, huge sizes, counts and offsets, wrong JSON types and values;
plus a FIFO, a directory, an empty file and /dev/zero where each file belongs. Every run
must end within the timeout (a hang fails), without a signal or a sanitizer report (a
crash fails), either with exit 0 (the mutation left a loadable model) or with exit 1 and
exactly one error line on stderr (log lines aside) that names the file it is about.
Fixed seed: a failure replays; the failing case is printed with a command to rerun it.
At least half of the mutations must be refused (else they test nothing)."""
import argparse
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

FILES = ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
         "generation_config.json"]
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} (debug|info|warn) ")
WEIRD = [None, True, False, -1, 0, 1, 2 ** 31, 2 ** 32 + 1, 2 ** 63 - 1, -2 ** 63, 10 ** 30,
         1e308, -1e308, 0.5, "", "x", "\u0000", "\ufffd" * 3, "a" * 70000, [], {}, [1] * 9,
         [-1, 2 ** 40], {"a": None}, [[[[]]]]]


# ---------------------------------------------------------------- byte-level mutations
def flip(rng, b, lo=0, hi=None):
    b = bytearray(b)
    hi = len(b) if hi is None else min(hi, len(b))
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(lo, hi)
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def bytes_mutation(rng, b, lo=0, hi=None):
    hi = len(b) if hi is None else min(hi, len(b))
    k = rng.randrange(5)
    if k == 0:
        return flip(rng, b, lo, hi), "bit flips"
    if k == 1:
        n = rng.randrange(0, hi)
        return b[:n], "truncated at %d" % n
    i = rng.randrange(lo, hi)
    if k == 2:
        ins = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        return b[:i] + ins + b[i:], "%d bytes inserted at %d" % (len(ins), i)
    if k == 3:
        n = rng.randint(1, 64)
        return b[:i] + b[i + n:], "%d bytes deleted at %d" % (n, i)
    n = rng.randint(1, 64)
    return b[:i] + b[i:i + n] * 3 + b[i + n:], "%d bytes repeated at %d" % (n, i)


# ---------------------------------------------------------------- JSON-level mutations
def paths(v, pre=(), depth=0, out=None):
    out = [] if out is None else out
    if depth > 6:
        return out
    if isinstance(v, dict):
        for k, x in v.items():
            out.append(pre + (k,))
            paths(x, pre + (k,), depth + 1, out)
    elif isinstance(v, list):
        for i, x in enumerate(v[:40]):
            out.append(pre + (i,))
            paths(x, pre + (i,), depth + 1, out)
    return out


def json_mutation(rng, doc):
    ps = paths(doc)
    p = rng.choice(ps)
    parent = doc
    for k in p[:-1]:
        parent = parent[k]
    last = p[-1]
    k = rng.randrange(4)
    if k == 0 and isinstance(parent, dict):
        del parent[last]
        return "deleted %s" % "/".join(map(str, p))
    old = parent[last]
    if k == 1 and isinstance(old, (int, float)) and not isinstance(old, bool):
        new = rng.choice([old + 1, old - 1, -old, old * 1000003, old * 2 ** 40, 0, -1])
    elif k == 2 and isinstance(old, str):
        new = rng.choice([old * 50, old[:-1], old + "\u00e9", "", old.upper()])
    else:
        new = rng.choice(WEIRD)
    parent[last] = new
    return "%s = %s" % ("/".join(map(str, p)), json.dumps(new)[:40])


def mutate_json(rng, b):
    if rng.random() < 0.35:
        return bytes_mutation(rng, b)
    doc = json.loads(b)
    what = json_mutation(rng, doc)
    return json.dumps(doc, ensure_ascii=rng.random() < 0.5).encode(), what


# ---------------------------------------------------------------- safetensors
def mutate_safetensors(rng, b):
    n = struct.unpack_from("<Q", b)[0]
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    k = rng.randrange(10)
    if k == 0:
        m, what = bytes_mutation(rng, b, 0, 8 + n)
        return m, "header: " + what
    if k == 1:
        v = rng.choice([0, 1, 7, n - 1, n + 1, len(b), len(b) - 8, 2 ** 32, 2 ** 63, 2 ** 64 - 1,
                        100 << 20, (100 << 20) + 1])
        return struct.pack("<Q", v) + b[8:], "header length %d" % v
    if k == 2:
        cut = rng.randrange(8 + n, len(b))
        return b[:cut], "data truncated at %d of %d" % (cut, len(b))
    names = [x for x in header if x != "__metadata__"]
    t = header[rng.choice(names)]
    if k == 3:
        a, e = t["data_offsets"]
        t["data_offsets"] = rng.choice([[e, a], [a, e + 1], [a - 1, e], [0, e], [a, 2 ** 63],
                                        [2 ** 64 - 8, 2 ** 64 - 4], [-8, e], [a, len(data) + 8],
                                        [a], [a, e, e], "0", None])
        what = "data_offsets %s" % t["data_offsets"]
    elif k == 4:
        t["shape"] = rng.choice([[2 ** 62, 2 ** 62], [-1, 64], [0], [], [1, 1, 1, 1, 1],
                                 [2 ** 31, 2 ** 31, 4], t["shape"][::-1], [t["shape"][0] + 1],
                                 "64", [64.5]])
        what = "shape %s" % t["shape"]
    elif k == 5:
        t["dtype"] = rng.choice(["F64", "Q4", "", "bf16", "I64", "F8_E5M2", 3, None, "U8", "I32"])
        what = "dtype %s" % t["dtype"]
    elif k == 6:
        nm = rng.choice(names)
        v = header.pop(nm)
        header[rng.choice(["", "x" * 300, nm + "\u0000", nm.upper(), names[0] + " "])] = v
        what = "renamed %s" % nm
    elif k == 7:
        what = "deleted " + rng.choice(names)
        del header[what[8:]]
    elif k == 8:
        what = json_mutation(rng, header)
    else:
        m, what = bytes_mutation(rng, data)
        return b[:8 + n] + m, "data: " + what
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data, what


# ---------------------------------------------------------------- GGUF
def gguf_fields(b):
    """Offsets of the header's fields: (offset, size, name) for counts, kv lengths, types,
    string and array lengths, tensor dims, types and offsets."""
    f = [(8, 8, "n_tensors"), (16, 8, "n_kv")]
    p = 24
    n_t, n_kv = struct.unpack_from("<QQ", b, 8)
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def val(t, p, key, top):
        if t == 8:
            n = struct.unpack_from("<Q", b, p)[0]
            if top:
                f.append((p, 8, key + " string length"))
            return p + 8 + n
        if t == 9:
            at, n = struct.unpack_from("<IQ", b, p)
            f.append((p, 4, key + " array type"))
            f.append((p + 4, 8, key + " array count"))
            p += 12
            for _ in range(n):
                p = val(at, p, key, False)
            return p
        return p + sizes[t]

    for _ in range(n_kv):
        n = struct.unpack_from("<Q", b, p)[0]
        key = b[p + 8:p + 8 + n].decode()
        f.append((p, 8, key + " key length"))
        p += 8 + n
        t = struct.unpack_from("<I", b, p)[0]
        f.append((p, 4, key + " type"))
        p = val(t, p + 4, key, True)
    for _ in range(n_t):
        n = struct.unpack_from("<Q", b, p)[0]
        name = b[p + 8:p + 8 + n].decode()
        f.append((p, 8, name + " name length"))
        p += 8 + n
        nd = struct.unpack_from("<I", b, p)[0]
        f.append((p, 4, name + " n_dims"))
        for d in range(nd):
            f.append((p + 4 + 8 * d, 8, name + " ne[%d]" % d))
        p += 4 + 8 * nd
        f.append((p, 4, name + " type"))
        f.append((p + 4, 8, name + " offset"))
        p += 12
    return f, p


def mutate_gguf(rng, b, fields, header_end):
    k = rng.randrange(4)
    if k == 0:
        m, what = bytes_mutation(rng, b, 0, header_end)
        return m, "header: " + what
    if k == 1:
        cut = rng.randrange(0, len(b))
        return b[:cut], "truncated at %d of %d" % (cut, len(b))
    off, size, name = rng.choice(fields)
    old = int.from_bytes(b[off:off + size], "little")
    top = 2 ** (8 * size)
    v = rng.choice([0, 1, old + 1, old - 1 if old else top - 1, old * 2, top - 1, top // 2,
                    top // 2 - 1, 2 ** 31, 2 ** 40 % top, 13, 99, old + 32, old + 1000003])
    v %= top
    return b[:off] + v.to_bytes(size, "little") + b[off + size:], "%s %d -> %d" % (name, old, v)


# ---------------------------------------------------------------- running
class Case:
    def __init__(self, i, target, what, content=None, special=None):
        self.i, self.target, self.what, self.content, self.special = i, target, what, content, special


def make_cases(rng, base, gguf, count):
    cases = []
    kinds = ["config.json", "model.safetensors", "tokenizer.json", "gguf"]
    gfields, gend = gguf_fields(gguf)
    for i in range(count):
        target = kinds[i % 4]
        if target == "gguf":
            content, what = mutate_gguf(rng, gguf, gfields, gend)
        elif target == "model.safetensors":
            content, what = mutate_safetensors(rng, base[target])
        else:
            content, what = mutate_json(rng, base[target])
        cases.append(Case(i, target, what, content))
    i = count
    for target in ["config.json", "model.safetensors", "tokenizer.json", "gguf"]:
        for special in ["fifo", "directory", "empty", "/dev/zero", "missing"]:
            cases.append(Case(i, target, "a %s in its place" % special, special=special))
            i += 1
    return cases


def place(case, d, base, gguf):
    for f in FILES:
        if f != case.target:
            os.link(base["path"][f], os.path.join(d, f))
    path = os.path.join(d, "model.gguf" if case.target == "gguf" else case.target)
    if case.special is None:
        with open(path, "wb") as fh:
            fh.write(case.content)
    elif case.special == "fifo":
        os.mkfifo(path)
    elif case.special == "directory":
        os.mkdir(path)
    elif case.special == "empty":
        open(path, "wb").close()
    elif case.special == "/dev/zero":
        os.symlink("/dev/zero", path)
    return path if case.target == "gguf" else d


def run_case(case, hymt, base, gguf, tmp, timeout):
    d = os.path.join(tmp, "c%d" % case.i)
    os.mkdir(d)
    try:
        model = place(case, d, base, gguf)
        # info checks config and tensors; generate also loads the tokenizer and runs a step
        cmds = [[hymt, "info", model]]
        if case.target in ("tokenizer.json", "gguf") or case.i % 3 == 0:
            cmds.append([hymt, "generate", "-m", model, "--prompt", "Hello", "-n", "1",
                         "--threads", "1"])
        out = []
        for cmd in cmds:
            t0 = time.time()
            try:
                r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   timeout=timeout)
            except subprocess.TimeoutExpired:
                return case, "hang (over %g s): %s" % (timeout, " ".join(cmd[1:2])), None
            err = r.stderr.decode("utf-8", "replace")
            errs = [x for x in err.splitlines() if x.strip() and not LOG_LINE.match(x)]
            if r.returncode not in (0, 1) or "Sanitizer" in err or "runtime error" in err:
                return case, "%s: exit %d: %s" % (cmd[1], r.returncode, err[-1500:]), None
            if r.returncode == 1 and len(errs) != 1:
                return case, "%s: exit 1 with %d error lines: %r" % (cmd[1], len(errs), errs[:4]), None
            if r.returncode == 1 and not re.search(r"model\.gguf|c%d\b" % case.i, errs[0]):
                return case, "%s: the error does not name the file: %s" % (cmd[1], errs[0]), None
            out.append((r.returncode, errs[0] if errs else "", time.time() - t0))
        return case, None, out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hymt")
    ap.add_argument("data")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--only", type=int, help="run case N alone")
    a = ap.parse_args()
    a.count = int(os.environ.get("HYMT_CORRUPT_COUNT", a.count))  # longer runs by hand
    src = os.path.join(a.data, "tiny-mqa")
    tmp = tempfile.mkdtemp(prefix="hymt-corrupt-")
    t0 = time.time()
    try:
        base = {"path": {}}
        for f in FILES:
            p = os.path.join(tmp, "base-" + f)
            shutil.copy(os.path.join(src, f), p)
            base["path"][f] = p
            with open(p, "rb") as fh:
                base[f] = fh.read()
        gp = os.path.join(tmp, "base.gguf")
        subprocess.run([a.hymt, "convert", "-m", src, "-o", gp, "--type", "q8_0"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(gp, "rb") as fh:
            gguf = fh.read()
        cases = make_cases(random.Random(a.seed), base, gguf, a.count)
        if a.only is not None:
            cases = [c for c in cases if c.i == a.only]
        fails, refused, ok = [], 0, 0
        with ThreadPoolExecutor(a.jobs) as ex:
            for case, fail, out in ex.map(lambda c: run_case(c, a.hymt, base, gguf, tmp, a.timeout),
                                          cases):
                if fail:
                    fails.append((case, fail))
                    continue
                if any(rc == 1 for rc, _, _ in out):
                    refused += 1
                else:
                    ok += 1
        for case, fail in fails[:20]:
            print("FAIL case %d (%s: %s): %s" % (case.i, case.target, case.what, fail))
            print("  rerun: %s %s %s --count %d --seed %d --only %d" % (
                sys.argv[0], a.hymt, a.data, a.count, a.seed, case.i))
        print("corrupt models: %d cases (%d mutations + %d special files), %d refused with one "
              "line, %d loaded, %d failed, %.1f s" % (len(cases), min(a.count, len(cases)),
                                                       len(cases) - a.count if a.only is None else 0,
                                                       refused, ok, len(fails), time.time() - t0))
        if a.only is None and refused < len(cases) // 2:
            print("FAIL: only %d of %d cases were refused: the mutations test too little" %
                  (refused, len(cases)))
            return 1
        return 1 if fails else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
