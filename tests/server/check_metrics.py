#!/usr/bin/env python3
"""check_metrics.py FILE: checks a Prometheus text exposition (format 0.0.4) the way
`promtool check metrics` would for what hymt writes: every sample belongs to a family with
HELP and TYPE given once, before its samples; names and labels are well formed; values
parse; histogram buckets are cumulative, end with le="+Inf" equal to _count, and have
_sum and _count. Used when promtool is not installed. Exit 1 with one line per problem."""
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"^(%s)(\{(?:%s)(?:,%s)*\})? (\S+)$" % (NAME, LABEL, LABEL))
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def family_of(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) == "histogram":
            return base
    return name


def main(path):
    errors, types, helps, seen_samples = [], {}, set(), set()
    buckets = {}  # (family, labels without le) -> [(le, value)]
    counts = {}
    text = open(path, encoding="utf-8").read()
    if not text.endswith("\n"):
        errors.append("the exposition must end with a newline")
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not re.fullmatch(NAME, parts[2]):
                errors.append("%d: malformed %s line" % (n, parts[1]))
                continue
            name = parts[2]
            if name in seen_samples:
                errors.append("%d: %s for %s after its samples" % (n, parts[1], name))
            if parts[1] == "TYPE":
                if name in types or parts[3] not in TYPES:
                    errors.append("%d: duplicate or bad TYPE for %s" % (n, name))
                types[name] = parts[3]
            else:
                if name in helps:
                    errors.append("%d: duplicate HELP for %s" % (n, name))
                helps.add(name)
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            errors.append("%d: malformed sample: %s" % (n, line))
            continue
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        try:
            v = float(value)
        except ValueError:
            errors.append("%d: bad value %r" % (n, value))
            continue
        fam = family_of(name, types)
        seen_samples.add(fam)
        if fam not in types or fam not in helps:
            errors.append("%d: %s has no TYPE/HELP" % (n, name))
        if types.get(fam) == "counter" and v < 0:
            errors.append("%d: negative counter %s" % (n, name))
        if name.endswith("_bucket") and fam != name:
            le = re.search(r'le="([^"]*)"', labels)
            rest = re.sub(r',?le="[^"]*"', "", labels).replace("{,", "{")
            rest = "" if rest == "{}" else rest
            if not le:
                errors.append("%d: bucket without le" % n)
                continue
            buckets.setdefault((fam, rest), []).append((le.group(1), v))
        if name.endswith("_count") and fam != name:
            counts[(fam, labels.replace("{}", ""))] = v
    for (fam, rest), bs in buckets.items():
        vals = [v for _, v in bs]
        if vals != sorted(vals):
            errors.append("%s%s: buckets not cumulative" % (fam, rest))
        if bs[-1][0] != "+Inf":
            errors.append("%s%s: last bucket is not +Inf" % (fam, rest))
        if counts.get((fam, rest)) != bs[-1][1]:
            errors.append("%s%s: _count differs from the +Inf bucket" % (fam, rest))
    for e in errors:
        print("check_metrics: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
