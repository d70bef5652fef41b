#!/usr/bin/env python3
"""mask_sampling_table.py OUTDIR: the table of bench/mask_sampling.sh. Per configuration: each
round's microseconds per 8-byte all_reduce (the mean of its blocks), its difference to `none` in
the same round (pairs, so drift between rounds cancels), and over the rounds the mean of those
differences with its standard error, their median and min..max. A second table reads each
round by its blocks' median iteration instead (the loop's RESULT med_us), which the host's
hiccups (a preempted thread, a garbage collection) move far less than a block's mean, and a
third (bench/host_loop.cu) by the median time inside ncclAllReduce. Runs whose every rank
prints a RESULT are read as the mean over the ranks. Then what the commlens runs' summaries say of the timers' sample,
and two differences read from the same rounds: NCCL's own cost of its kernel-channel timers
(null-kch - null-none) and the flight recorder's (cl-default - cl-noflight)."""
import glob, json, os, re, statistics, sys

LABELS = {
    "none": "no plugin",
    "cl-default": "commlens default (timers sampled, flight recorder on)",
    "cl-noflight": "commlens default, COMMLENS_FLIGHT_S=0",
    "cl-all": "commlens, COMMLENS_TIMERS=all (every collective timed)",
    "inspector": "NCCL Inspector",
    "cl-nocupti": "commlens default, COMMLENS_CUPTI=0 (host events only)",
    "null-kch": "null plugin asking Coll + KernelCh",
    "null-dflt": "null plugin asking the default's events, no timers (0x5F0F)",
    "null-none": "null plugin asking nothing",
}


def result(path):
    """The run's RESULT: rank 0's, or with every rank's (bench/host_loop.cu) each list the mean
    over the ranks, block by block."""
    res = []
    try:
        for line in open(path, errors="replace"):
            if line.startswith("RESULT "):
                res.append(json.loads(line[7:]))
    except (OSError, ValueError):
        return None
    if not res:
        return None
    out = dict(res[0])
    for k in ("us", "med_us", "call_us"):
        lists = [r.get(k) for r in res]
        if all(lists) and len({len(v) for v in lists}) == 1:
            out[k] = [statistics.mean(col) for col in zip(*lists)]
    return out


def fmt(v):
    return "%+.1f" % v


def se(d):
    return statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")


def table(per, what):
    none = per.get("none", {})
    if not none:
        print("no `none` runs: no table")
        return False
    print("\n%s\n" % what)
    print("| configuration | us over no plugin, mean of rounds ± s.e. | median (min..max) | rounds |")
    print("|---|---|---|---|")
    print("| no plugin | %.1f us | %.1f us (%.1f..%.1f) | %d |" % (statistics.mean(none.values()), statistics.median(none.values()),
                                                             min(none.values()), max(none.values()), len(none)))
    for cfg in ["cl-default", "cl-noflight", "cl-nocupti", "cl-all", "inspector", "null-kch", "null-dflt", "null-none"]:
        d = [per[cfg][r] - none[r] for r in per.get(cfg, {}) if r in none]
        if d:
            print("| %s | %s ± %.1f | %s (%s..%s) | %d |" % (LABELS[cfg], fmt(statistics.mean(d)), se(d), fmt(statistics.median(d)),
                                                           fmt(min(d)), fmt(max(d)), len(d)))
    for name, a, b in (("NCCL's kernel-channel timers (null-kch - null-none)", "null-kch", "null-none"),
                       ("the flight recorder (cl-default - cl-noflight)", "cl-default", "cl-noflight"),
                       ("commlens's own part (cl-default - null-dflt)", "cl-default", "null-dflt"),
                       ("commlens default against Inspector (cl-default - inspector)", "cl-default", "inspector")):
        p = [per[a][r] - per[b][r] for r in per.get(a, {}) if r in per.get(b, {})]
        if p:
            print("%s: %s ± %.1f us per all_reduce, mean of %d rounds (%s..%s), median %s" % (
                name, fmt(statistics.mean(p)), se(p), len(p), fmt(min(p)), fmt(max(p)), fmt(statistics.median(p))))
    return True


def main(out):
    rounds = sorted(glob.glob(os.path.join(out, "loop", "r*")), key=lambda p: int(p.rsplit("r", 1)[1]))
    reads = (("us", "Each round's blocks' mean time per all_reduce:"),
             ("med_us", "Each round's blocks' median iteration:"),
             ("call_us", "Each round's blocks' median time inside ncclAllReduce (the calling thread's own cost):"))
    per = {key: {} for key, _ in reads}  # key -> cfg -> {round: us}
    for r in rounds:
        for f in glob.glob(os.path.join(r, "*.txt")):
            res = result(f) or {}
            for key, _ in reads:
                if res.get(key):
                    per[key].setdefault(os.path.basename(f)[:-4], {})[r] = statistics.mean(res[key])
    if not table(per["us"], reads[0][1]):
        return 1
    for key, what in reads[1:]:
        if per[key]:
            table(per[key], what)
    for f in sorted(glob.glob(os.path.join(out, "loop", "r*", "*", "*.summary.txt"))):
        txt = open(f, errors="replace").read()
        m = re.search(r"NCCL's kernel-channel timers on a sample [^;\n]*", txt)
        g = re.search(r"GPU timing: \d+ of \d+ collectives", txt)
        print("%s: %s%s" % (os.path.relpath(f, out), g.group(0) if g else "",
                            "; " + m.group(0) if m else "; no collective left out by the timers' sample"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
