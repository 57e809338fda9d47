#!/usr/bin/env python3
"""ncu_summary.py FILE.csv [LAST_N]: sums ncu's gpu__time_duration per kernel name over the
last LAST_N launches (default: the last decode step's worth, 700), largest first."""
import csv, sys, collections

rows = []
with open(sys.argv[1], newline="") as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    v = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "nsecond")
    v *= {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(unit, 1e-3)
    rows.append((r["ID"], r["Kernel Name"][:70], r.get("Grid Size", ""), v))
n = int(sys.argv[2]) if len(sys.argv) > 2 else 700
rows = rows[-n:]
agg = collections.defaultdict(lambda: [0, 0.0])
for _, k, g, v in rows:
    agg[(k, g)][0] += 1
    agg[(k, g)][1] += v
tot = sum(v for *_, v in rows)
print(f"{len(rows)} launches, {tot:.1f} us in all")
for (k, g), (c, t) in sorted(agg.items(), key=lambda x: -x[1][1])[:25]:
    print(f"{t:9.1f} us {100*t/tot:5.1f}% {c:5d}x  {g:>16}  {k}")
