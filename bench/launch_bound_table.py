#!/usr/bin/env python3
"""launch_bound_table.py OUTDIR: the tables of bench/launch_bound.sh, from what its runs left.

OUTDIR/runs/<bench>/r<round>/<config>/ holds each run: rank<R>.log (its stdout and stderr, with
a "RESULT {json}" line per rank), status (the exit code, or "skipped ..."), traces/ (commlens's).
Per bench and config: runs that succeeded, the median of their median step times, the spread of
those medians (min .. max, and the interquartile range), and the change of the median against
"none" (no plugin). A run that failed or gave no result is counted as failed, never averaged.

OUTDIR/runs/window/<name>/ holds the mid-job torch.profiler runs (with and without
TEARDOWN_CUPTI=1): Kineto's kernel count (its KINETO lines), and commlens's collectives before,
during and after the window (WINDOW lines give its wall-clock bounds; the traces' ts are wall
clock microseconds): how many GPU-timed by CUPTI, how many marked lost, of how many.
Writes OUTDIR/launch_bound.md and prints it. Standard library only (the GPU machine has no extras).
"""
import glob
import gzip
import json
import os
import statistics
import sys


def result_lines(run_dir, tag):
    out = []
    for log in sorted(glob.glob(os.path.join(run_dir, "*.log"))):
        with open(log, errors="replace") as f:
            for line in f:
                i = line.find(tag + " {")   # torchrun may prefix a rank's lines
                if i >= 0:
                    try:
                        out.append(json.loads(line[i + len(tag) + 1:]))
                    except ValueError:
                        pass
    return out


def status_of(run_dir):
    try:
        with open(os.path.join(run_dir, "status")) as f:
            return f.read().strip()
    except OSError:
        return "missing"


def quartiles(v):
    if len(v) < 2:
        return v[0], v[0]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def bench_table(root, bench):
    """Rows of one bench: config, ok/total, median, spread, delta vs none (of the medians), and
    the paired delta: the median over rounds of (config - none) / none within the same round,
    with its min..max, so drift between rounds cancels."""
    runs, by_round = {}, {}
    for d in sorted(glob.glob(os.path.join(root, "runs", bench, "r*", "*"))):
        cfg = os.path.basename(d)
        rnd = os.path.basename(os.path.dirname(d))
        ok = status_of(d) == "0"
        res = result_lines(d, "RESULT") if ok else []
        # a step's time is the slowest rank's (ranks wait for each other at the collective)
        med = max(r["median_ms"] for r in res) if res else None
        runs.setdefault(cfg, []).append(med)
        by_round.setdefault(rnd, {})[cfg] = med
    rows, base = [], None
    order = ["none", "default", "clockoff", "kernels", "sampled", "nocupti", "full", "torchprof"]
    for cfg in sorted(runs, key=lambda c: order.index(c) if c in order else 99):
        good = [m for m in runs[cfg] if m is not None]
        if not good:
            rows.append((cfg, "0/%d" % len(runs[cfg]), "-", "-", "-", "-", "-"))
            continue
        med = statistics.median(good)
        lo, hi = quartiles(good)
        if cfg == "none":
            base = med
        delta = "%+.1f%%" % (100.0 * (med - base) / base) if base and cfg != "none" else ""
        pairs = [100.0 * (r[cfg] - r["none"]) / r["none"] for r in by_round.values()
                 if r.get(cfg) is not None and r.get("none")]
        paired = ("%+.1f%% (%+.1f .. %+.1f), n=%d" % (statistics.median(pairs), min(pairs), max(pairs), len(pairs))
                  if pairs and cfg != "none" else "")
        rows.append((cfg, "%d/%d" % (len(good), len(runs[cfg])), "%.2f" % med,
                     "%.2f .. %.2f" % (min(good), max(good)), "%.2f .. %.2f" % (lo, hi), delta, paired))
    return rows


def trace_events(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", errors="replace") as f:
            return json.load(f).get("traceEvents", [])
    except (OSError, ValueError, EOFError):
        return None   # a cut or damaged trace: said in the table, not guessed at


def window_rows(root):
    rows = []
    for d in sorted(glob.glob(os.path.join(root, "runs", "window", "*"))):
        name = os.path.basename(d)
        st = status_of(d)
        win = {w["rank"]: w for w in result_lines(d, "WINDOW")}
        kin = {k["rank"]: k for k in result_lines(d, "KINETO")}
        traces = sorted(glob.glob(os.path.join(d, "traces", "*.trace.json*")))
        if not win or not traces:
            ks = ", ".join("%s (NCCL %s)" % (k.get("kernels"), k.get("nccl_kernels")) for k in kin.values()) or "-"
            rows.append((name, st, "-", ks, "no %s" % ("window" if not win else "commlens trace"), "", ""))
            continue
        for tpath in traces:
            evs = trace_events(tpath)
            if evs is None:
                rows.append((name, st, "-", "damaged trace " + os.path.basename(tpath), "", "", ""))
                continue
            rank = next((e.get("pid") for e in evs if e.get("cat") == "coll"), None)
            w = win.get(rank) or next(iter(win.values()))
            s_us, e_us = w["start_ns"] / 1e3, w["end_ns"] / 1e3
            phase = lambda ts: "before" if ts < s_us else "during" if ts < e_us else "after"
            count = {p: [0, 0, 0, 0] for p in ("before", "during", "after")}   # collectives, GPU-timed, by CUPTI, lost
            for e in evs:
                cat, ts = e.get("cat"), e.get("ts")
                if not isinstance(ts, (int, float)):
                    continue
                if cat == "coll":
                    count[phase(ts + e.get("dur", 0))][0] += 1
                elif cat == "coll_gpu":
                    a = e.get("args", {})
                    count[phase(ts)][1] += 1
                    if str(a.get("source", "")).startswith("cupti"):
                        count[phase(ts)][2] += 1
                    if "gpu_timing" in a:
                        count[phase(ts)][3] += 1
            k = kin.get(rank, {})
            cells = ["%d/%d GPU-timed (%d by CUPTI), %d lost" % (count[p][1], count[p][0], count[p][2], count[p][3])
                     for p in ("before", "during", "after")]
            rows.append((name, st, str(rank), "%s (NCCL %s)" % (k.get("kernels", "-"), k.get("nccl_kernels", "-")), *cells))
    return rows


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: launch_bound_table.py OUTDIR")
    root = sys.argv[1]
    parts = ["# Launch-bound step: commlens's cost per application kernel launch", ""]
    env = os.path.join(root, "env.txt")
    if os.path.exists(env):
        with open(env, errors="replace") as f:
            parts += ["```", f.read().strip(), "```", ""]
    for bench, what in (("torch", "PyTorch: 12-layer transformer d=256, AdamW(foreach=False)"),
                        ("cuda", "C/CUDA: tiny kernels + small all_reduces, ranks as processes")):
        if not glob.glob(os.path.join(root, "runs", bench)):
            continue
        parts += ["## " + what, "", md_table(("config", "ok runs", "median step ms", "spread (min .. max)",
                                              "IQR", "vs none", "paired vs none"), bench_table(root, bench)), ""]
    wr = window_rows(root)
    if wr:
        parts += ["## torch.profiler window mid-job (collectives: GPU-timed / all, by CUPTI, marked lost)", "",
                  md_table(("run", "exit", "rank", "Kineto kernels", "before", "during", "after"), wr), ""]
    text = "\n".join(parts)
    with open(os.path.join(root, "launch_bound.md"), "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
