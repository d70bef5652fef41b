#!/usr/bin/env python3
"""clex_latency.py: the collective latency table of examples/gpu_default.sh's interleaved runs.

Reads DIR/<config>-<round>/rank0.csv (examples/allreduce's per-iteration CSV: op,bytes,iter,us)
and prints, per size, each config's minimum and median over all rounds and the spread of the
per-round medians, and each config's median minus the first config's.

    bench/clex_latency.py DIR [--base none]
"""
import argparse
import csv
import os
import statistics
import sys
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--base", default="none")
    a = ap.parse_args()
    data = defaultdict(lambda: defaultdict(list))      # config -> bytes -> [us]
    rounds = defaultdict(lambda: defaultdict(list))    # config -> bytes -> [round medians]
    for d in sorted(os.listdir(a.dir)):
        path = os.path.join(a.dir, d, "rank0.csv")
        if "-" not in d or not os.path.exists(path):
            continue
        cfg = d.rsplit("-", 1)[0]
        per = defaultdict(list)
        with open(path) as f:
            for row in csv.DictReader(f):
                per[int(row["bytes"])].append(float(row["us"]))
        for b, v in per.items():
            data[cfg][b] += v
            rounds[cfg][b].append(statistics.median(v))
    if a.base not in data:
        sys.exit("no runs of the base config %r in %s" % (a.base, a.dir))
    cfgs = [a.base] + sorted(c for c in data if c != a.base)
    print("%-8s %-10s %10s %10s %12s %12s" % ("bytes", "config", "min us", "median us", "round spread", "vs " + a.base))
    for b in sorted(data[a.base]):
        base = statistics.median(data[a.base][b])
        for c in cfgs:
            v = data[c].get(b)
            if not v:
                continue
            r = rounds[c][b]
            med = statistics.median(v)
            print("%-8d %-10s %10.1f %10.1f %12.1f %+12.1f" % (b, c, min(v), med, max(r) - min(r), med - base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
