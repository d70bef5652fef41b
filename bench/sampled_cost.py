#!/usr/bin/env python3
"""sampled_cost.py: what commlens's sampled default costs a launch-bound step, read inside one process.

Across processes the lent GPU machines vary by +-20% from run to run, which hides a 1% cost. In
sampled mode (COMMLENS_CUPTI=sampled, COMMLENS_CUPTI_SAMPLE=W:P) CUPTI is attached only W seconds
in every P and detached in between, so one long run holds both: the steps far from any window
(no CUPTI, only the plugin's per-collective work) and every step of whole periods (windows,
their attach and detach included). The default's cost is

    cost = mean step over whole periods / mean step far from the windows - 1

with its error from the spread of the steps near the windows and far from them (2 sigma).
Windows are not read from the plugin: the first opens while the communicator is made (between
0 and init_ms of the RESULT's clock) and the next ones every P seconds after; "far" keeps
--guard seconds away from them, which absorbs that and the writer thread's tick.

Input: files holding launch_step.py / launch_bound RESULT lines (with --seconds: "t_ms");
--none FILE(S) adds the cross-process check (median step without the plugin vs far steps).
Prints a table and one line "SAMPLED_COST {json}" per run.
"""
import argparse
import json
import math
import statistics as st


def results(path):
    with open(path) as f:
        for line in f:
            if line.startswith("RESULT "):
                yield json.loads(line[7:])


def analyse(r, on_s, period_s, guard_s):
    t, ms = r["t_ms"], r["step_ms"]
    k = r.get("sync_every", 1)
    if len(t) != len(ms) or len(t) < 10:
        raise SystemExit("sampled_cost: a RESULT without per-step times (run with --seconds)")
    c0 = r.get("init_ms", 0) / 2e3                 # the first window's start, s (+- init_ms/2)
    P, W, G = period_s, on_s, guard_s + r.get("init_ms", 0) / 2e3
    blocks = []                                    # (start s, end s, ms per step, steps)
    for i in range(len(t)):
        n = k if i + 1 < len(t) else 1             # the last block may be short: counted as one step
        blocks.append((t[i] / 1e3, t[i] / 1e3 + ms[i] * n / 1e3, ms[i], n))
    end = blocks[-1][1]
    # whole periods, each centred on one window's start: [c - P/2, c + P/2) for c = c0 + j*P, j >= 1
    spans = []
    j = 1
    while c0 + j * P + P / 2 <= end:
        spans.append((c0 + j * P - P / 2, c0 + j * P + P / 2))
        j += 1
    if not spans:
        raise SystemExit("sampled_cost: the run holds no whole sampling period after the first (run longer)")

    def dist_to_window(a, b):
        best = math.inf
        for jj in range(0, int(end / P) + 2):
            ws, we = c0 + jj * P, c0 + jj * P + W
            d = 0 if (a < we and b > ws) else (ws - b if b <= ws else a - we)
            best = min(best, d)
        return best

    in_span = [x for x in blocks if any(s <= x[0] < e for s, e in spans)]
    far = [x for x in in_span if dist_to_window(x[0], x[1]) > G]
    near = [x for x in in_span if dist_to_window(x[0], x[1]) <= G]
    g_in = 0.15 + r.get("init_ms", 0) / 2e3            # inside a window: past the tick that opens it
    inside = [x for x in in_span if any(c0 + jj * P + g_in <= x[0] and x[1] <= c0 + jj * P + W - g_in
                                        for jj in range(1, len(spans) + 2))]

    def mean(xs):
        n = sum(x[3] for x in xs)
        return sum(x[2] * x[3] for x in xs) / n if n else float("nan")

    def var_of_mean(xs):
        v = [x[2] for x in xs]
        return st.pvariance(v) / len(v) if len(v) > 1 else float("nan")

    m_all, m_far, m_near = mean(in_span), mean(far), mean(near)
    steps_all, steps_near = sum(x[3] for x in in_span), sum(x[3] for x in near)
    f_near = steps_near / steps_all
    cost = m_all / m_far - 1
    err = 2 * f_near * math.sqrt(var_of_mean(near) + var_of_mean(far)) / m_far
    return {
        "periods": len(spans), "period_s": P, "on_s": W, "guard_s": round(G, 3),
        "steps": steps_all, "steps_near_windows": steps_near,
        "mean_ms": round(m_all, 4), "far_mean_ms": round(m_far, 4), "near_mean_ms": round(m_near, 4),
        "far_median_ms": round(st.median(x[2] for x in far), 4),
        "inside_mean_ms": round(mean(inside), 4) if inside else None,
        "inside_excess_pct": round(100 * (mean(inside) / m_far - 1), 2) if inside else None,
        "cost_pct": round(100 * cost, 3), "cost_err_pct": round(100 * err, 3),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="RESULT lines of the commlens runs")
    ap.add_argument("--sample", default="1:30", help="COMMLENS_CUPTI_SAMPLE the runs used, W:P seconds")
    ap.add_argument("--guard", type=float, default=2.0, help="seconds kept from a window to count as far")
    ap.add_argument("--none", nargs="*", default=[], help="RESULT lines of runs without the plugin")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    W, P = (float(v) for v in a.sample.split(":"))
    none_med = [r["median_ms"] for f in a.none for r in results(f)]
    print("%-28s %7s %8s %9s %9s %9s %12s %10s" % ("run", "periods", "steps", "mean ms", "far ms",
                                                   "near ms", "in-window", "cost"))
    for f in a.files:
        for r in results(f):
            o = analyse(r, W, P, a.guard)
            o["label"], o["file"] = a.label, f
            if none_med:
                o["none_median_ms"] = round(st.median(none_med), 4)
                o["far_vs_none_pct"] = round(100 * (o["far_median_ms"] / o["none_median_ms"] - 1), 2)
            ins = "%+.1f%%" % o["inside_excess_pct"] if o["inside_excess_pct"] is not None else "-"
            print("%-28s %7d %8d %9.3f %9.3f %9.3f %12s %+7.2f%% +- %.2f%%" % (
                (a.label or f)[-28:], o["periods"], o["steps"], o["mean_ms"], o["far_mean_ms"], o["near_mean_ms"],
                ins, o["cost_pct"], o["cost_err_pct"]))
            print("SAMPLED_COST " + json.dumps(o))


if __name__ == "__main__":
    main()
