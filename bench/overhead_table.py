#!/usr/bin/env python3
"""overhead_table.py: turns the raw results of bench/overhead.sh into one markdown table per mode.

Reads OUTDIR/<mode>/r<round>/<config>/rank<R>.csv (clex --csv: op,bytes,iter,us[,step_us]) and
prints markdown on stdout. Standard library only; never touches the GPU.

Per (mode, config, size, round): the median of every per-iteration latency of every rank (ranks
pooled). Per (mode, config, size): the median of those round medians, and their min..max as the
spread. Runs with an INVALID file (plugin not loaded, wrong transport, failed) are left out.
"""
import argparse
import csv
import os
import re
import statistics
import sys

CONFIGS = ["none", "null-default", "null-full", "cl-default", "cl-full", "cl-nocupti", "cl-cupti"]
# (label, config, baseline): what each difference column compares.
DIFFS = [
    ("cl-default − none", "cl-default", "none"),
    ("cl-default − null-default", "cl-default", "null-default"),
    ("cl-full − null-full", "cl-full", "null-full"),
    ("cl-nocupti − null-default", "cl-nocupti", "null-default"),
    ("cl-cupti − null-default", "cl-cupti", "null-default"),
]
MODE_ORDER = ["nvlink", "socket", "twonode"]


def human_bytes(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %sB" % (n >> shift, unit)
    return "%d B" % n


def read_run(run_dir, op, metric):
    """{bytes: [latency, ...]} for one run, every rank's iterations pooled."""
    samples = {}
    for name in sorted(os.listdir(run_dir)):
        if not re.fullmatch(r"rank\d+\.csv", name):
            continue
        with open(os.path.join(run_dir, name), newline="") as f:
            for row in csv.DictReader(f):
                if row.get("op") != op or row.get(metric) in (None, ""):
                    continue
                samples.setdefault(int(row["bytes"]), []).append(float(row[metric]))
    return samples


def collect(outdir, op, metric):
    """data[mode][config][bytes] = [round median, ...]; invalid = [(mode, round, config, why)]."""
    data, invalid = {}, []
    modes = [m for m in os.listdir(outdir)
             if os.path.isdir(os.path.join(outdir, m)) and m != "traces"]
    for mode in sorted(modes, key=lambda m: (MODE_ORDER.index(m) if m in MODE_ORDER else 99, m)):
        mode_dir = os.path.join(outdir, mode)
        rounds = sorted((d for d in os.listdir(mode_dir) if re.fullmatch(r"r\d+", d)),
                        key=lambda d: int(d[1:]))
        if not rounds:
            continue
        per_cfg = data.setdefault(mode, {})
        for rnd in rounds:
            for cfg in sorted(os.listdir(os.path.join(mode_dir, rnd))):
                run_dir = os.path.join(mode_dir, rnd, cfg)
                if not os.path.isdir(run_dir):
                    continue
                bad = os.path.join(run_dir, "INVALID")
                if os.path.exists(bad):
                    with open(bad) as f:
                        invalid.append((mode, rnd, cfg, f.read().strip()))
                    continue
                for size, lat in read_run(run_dir, op, metric).items():
                    per_cfg.setdefault(cfg, {}).setdefault(size, []).append(statistics.median(lat))
    return data, invalid


def cell(meds):
    if not meds:
        return "n/a"
    m = statistics.median(meds)
    if len(meds) == 1:
        return "%.2f" % m
    return "%.2f [%.2f..%.2f]" % (m, min(meds), max(meds))


def diff_cell(a, b):
    """a - b in us and % of b; '*' when the round ranges do not overlap (beyond run-to-run noise)."""
    if not a or not b:
        return "n/a", None
    ma, mb = statistics.median(a), statistics.median(b)
    d = ma - mb
    pct = 100.0 * d / mb if mb > 0 else float("nan")
    sig = "*" if (min(a) > max(b) or max(a) < min(b)) else ""
    return "%+.2f (%+.2f%%)%s" % (d, pct, sig), pct


def stats_notes(outdir, mode):
    """commlens' own end-of-run numbers (dropped records, self-measured overhead) per config."""
    notes = []
    mode_dir = os.path.join(outdir, mode)
    for cfg in ("cl-default", "cl-full", "cl-nocupti", "cl-cupti"):
        drops, pcts, sizes = [], [], []
        for rnd in sorted(os.listdir(mode_dir)):
            path = os.path.join(mode_dir, rnd, cfg, "commlens-stats.txt")
            if not os.path.exists(path):
                continue
            with open(path) as f:
                text = f.read()
            drops += [int(x) for x in re.findall(r'"dropped"\s*:\s*(\d+)', text)]
            pcts += [float(x) for x in re.findall(r'"overhead_pct"\s*:\s*([0-9.eE+-]+)', text)]
            sizes += [int(x) for x in re.findall(r" bytes (\d+)", text)]
        if drops or pcts or sizes:
            parts = []
            if drops:
                parts.append("dropped records %d in total" % sum(drops))
            if pcts:
                parts.append("self-measured overhead %.3f..%.3f %%" % (min(pcts), max(pcts)))
            if sizes:
                parts.append("trace size up to %.1f MB per rank" % (max(sizes) / 1e6))
            notes.append("- %s: %s" % (cfg, ", ".join(parts)))
    return notes


def render(outdir, op, metric):
    data, invalid = collect(outdir, op, metric)
    what = "collective time, CUDA events" if metric == "us" else "host wall time of the step"
    lines = ["# commlens overhead: %s latency in us (%s: %s)" % (op, metric, what), ""]
    meta = os.path.join(outdir, "meta.txt")
    if os.path.exists(meta):
        with open(meta) as f:
            lines += ["```"] + f.read().rstrip("\n").splitlines() + ["```", ""]
    lines += [
        "Each cell: median over rounds of the per-round median latency (all ranks' iterations",
        "pooled), in us, with [min..max] of the round medians. Differences: us and % of the",
        "baseline; `*` marks a difference larger than the round-to-round spread (the two",
        "[min..max] ranges do not overlap).", ""]
    if not data:
        lines.append("No valid results found under %s." % outdir)
    for mode, per_cfg in data.items():
        cfgs = [c for c in CONFIGS if c in per_cfg] + sorted(c for c in per_cfg if c not in CONFIGS)
        nrounds = max((len(v) for c in per_cfg.values() for v in c.values()), default=0)
        lines += ["## %s (%d round%s)" % (mode, nrounds, "" if nrounds == 1 else "s"), ""]
        diffs = [d for d in DIFFS if d[1] in per_cfg and d[2] in per_cfg]
        nr = {c: max(len(v) for v in per_cfg[c].values()) for c in cfgs}
        label = {c: c if nr[c] == nrounds else "%s (%d of %d rounds)" % (c, nr[c], nrounds)
                 for c in cfgs}
        head = ["size"] + [label[c] for c in cfgs] + [d[0] for d in diffs]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---:|" * len(head))
        sizes = sorted({s for c in per_cfg.values() for s in c})
        pct_by_diff = {d[0]: [] for d in diffs}
        for size in sizes:
            row = [human_bytes(size)] + [cell(per_cfg[c].get(size)) for c in cfgs]
            for label, a, b in diffs:
                text, pct = diff_cell(per_cfg[a].get(size), per_cfg[b].get(size))
                row.append(text)
                if pct is not None:
                    pct_by_diff[label].append((size, pct))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        for label, pcts in pct_by_diff.items():
            if not pcts:
                continue
            small = [p for s, p in pcts if s <= 64 << 10]
            large = [p for s, p in pcts if s >= 1 << 20]
            worst = max(pcts, key=lambda sp: sp[1])
            parts = ["median %+.1f%% over all sizes" % statistics.median(p for _, p in pcts)]
            if small:
                parts.append("%+.1f%% up to 64 KB" % statistics.median(small))
            if large:
                parts.append("%+.1f%% from 1 MB" % statistics.median(large))
            parts.append("worst %+.1f%% at %s" % (worst[1], human_bytes(worst[0])))
            lines.append("- %s: %s" % (label, ", ".join(parts)))
        lines += stats_notes(outdir, mode)
        lines.append("")
    if invalid:
        lines += ["## Runs left out", ""]
        lines += ["- %s %s %s: %s" % r for r in invalid]
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", help="directory written by bench/overhead.sh")
    ap.add_argument("--op", default="allreduce", help="clex op to tabulate (default allreduce)")
    ap.add_argument("--metric", default="us", choices=["us", "step_us"],
                    help="us: collective time from CUDA events (default); step_us: host wall time"
                         " of the whole step")
    args = ap.parse_args()
    if not os.path.isdir(args.outdir):
        sys.exit("overhead_table.py: no directory %s" % args.outdir)
    print(render(args.outdir, args.op, args.metric))


if __name__ == "__main__":
    main()
