#!/usr/bin/env python3
"""mask_sampling_table.py OUTDIR: the table of bench/mask_sampling.sh. Per configuration: each
round's microseconds per 8-byte all_reduce (the mean of its blocks), its difference to `none` in
the same round (pairs, so drift between rounds cancels), and over the rounds the mean and the
median of those differences with their min..max. Then what the commlens runs' summaries say of the timers' sample,
and two differences read from the same rounds: NCCL's own cost of its kernel-channel timers
(null-kch - null-none) and the flight recorder's (cl-default - cl-noflight)."""
import glob, json, os, re, statistics, sys

LABELS = {
    "none": "no plugin",
    "cl-default": "commlens default (timers sampled, flight recorder on)",
    "cl-noflight": "commlens default, COMMLENS_FLIGHT_S=0",
    "cl-all": "commlens, COMMLENS_TIMERS=all (every collective timed)",
    "inspector": "NCCL Inspector",
    "null-kch": "null plugin asking Coll + KernelCh",
    "null-none": "null plugin asking nothing",
}


def result(path):
    try:
        for line in open(path, errors="replace"):
            if line.startswith("RESULT "):
                return json.loads(line[7:])
    except OSError:
        pass
    return None


def fmt(v):
    return "%+.1f" % v


def main(out):
    rounds = sorted(glob.glob(os.path.join(out, "loop", "r*")), key=lambda p: int(p.rsplit("r", 1)[1]))
    per = {}  # cfg -> {round: us}
    for r in rounds:
        for f in glob.glob(os.path.join(r, "*.txt")):
            res = result(f)
            if res and res.get("us"):
                per.setdefault(os.path.basename(f)[:-4], {})[r] = statistics.mean(res["us"])
    none = per.get("none", {})
    if not none:
        print("no `none` runs: no table")
        return 1
    print("| configuration | us per all_reduce over no plugin, mean of rounds (min..max) | median | rounds |")
    print("|---|---|---|---|")
    print("| no plugin | %.1f us (%.1f..%.1f) | %.1f us | %d |" % (statistics.mean(none.values()), min(none.values()),
                                                                max(none.values()), statistics.median(none.values()),
                                                                len(none)))
    diffs = {}
    for cfg in ["cl-default", "cl-noflight", "cl-all", "inspector", "null-kch", "null-none"]:
        d = [per[cfg][r] - none[r] for r in per.get(cfg, {}) if r in none]
        diffs[cfg] = {r: per[cfg][r] - none[r] for r in per.get(cfg, {}) if r in none}
        if d:
            print("| %s | %s (%s..%s) | %s | %d |" % (LABELS[cfg], fmt(statistics.mean(d)), fmt(min(d)), fmt(max(d)),
                                                     fmt(statistics.median(d)), len(d)))
    for name, a, b in (("NCCL's kernel-channel timers (null-kch - null-none)", "null-kch", "null-none"),
                       ("the flight recorder (cl-default - cl-noflight)", "cl-default", "cl-noflight"),
                       ("commlens default against Inspector (cl-default - inspector)", "cl-default", "inspector")):
        p = [per[a][r] - per[b][r] for r in per.get(a, {}) if r in per.get(b, {})]
        if p:
            print("%s: %s us per all_reduce, mean of %d rounds (%s..%s), median %s" % (
                name, fmt(statistics.mean(p)), len(p), fmt(min(p)), fmt(max(p)), fmt(statistics.median(p))))
    for f in sorted(glob.glob(os.path.join(out, "loop", "r*", "*", "*.summary.txt"))):
        txt = open(f, errors="replace").read()
        m = re.search(r"NCCL's kernel-channel timers on a sample [^;]*", txt)
        g = re.search(r"GPU timing: \d+ of \d+ collectives", txt)
        print("%s: %s%s" % (os.path.relpath(f, out), g.group(0) if g else "",
                            "; " + m.group(0) if m else "; no collective left out by the timers' sample"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
