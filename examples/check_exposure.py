#!/usr/bin/env python3
"""check_exposure.py: an independent check of commlens' exposed-communication figures.

Reads commlens traces (one per rank; .json or .json.gz), takes the raw CUPTI kernel slices
(`cat` "gpu_kernel"; `nccl` says which are NCCL's), and computes per rank, per device:
communication = |union of NCCL kernels|, exposed = |union of NCCL kernels - union of other
kernels|. It compares them with what the plugin reported in the trace tail
(`commlensStats.exposure`), which it computed from collective spans in a streaming engine.
Prints one JSON line per trace; exits 1 if any differs by more than --tolerance (default 5%).

    examples/check_exposure.py TRACE [TRACE ...] [--tolerance 0.05]
"""
import argparse
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def union(ivs):
    out = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(ivs):
    return sum(e - s for s, e in ivs)


def subtract(a, b):
    """a - b, both sorted disjoint interval lists."""
    out, j = [], 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append([cur, b[k][0]])
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            out.append([cur, e])
    return out


def check(path):
    doc = load(path)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    stats = doc.get("commlensStats", {}) if isinstance(doc, dict) else {}
    comm, compute = {}, {}
    nccl_n = other_n = graph_n = 0
    for ev in events:
        if ev.get("cat") != "gpu_kernel" or ev.get("ph") != "X":
            continue
        a = ev.get("args", {})
        # trace times are microseconds with three decimals: work in integer nanoseconds
        s = round(float(ev["ts"]) * 1000)
        e = s + round(float(ev["dur"]) * 1000)
        dev = a.get("device", 0)
        if a.get("nccl"):
            comm.setdefault(dev, []).append((s, e))
            nccl_n += 1
            graph_n += "graph_node" in a
        else:
            compute.setdefault(dev, []).append((s, e))
            other_n += 1
    comm_ns = exposed_ns = 0
    for dev, ivs in comm.items():
        u = union(ivs)
        comm_ns += length(u)
        exposed_ns += length(subtract(u, union(compute.get(dev, []))))
    rep = stats.get("exposure") or {}
    out = {
        "trace": path,
        "nccl_kernels": nccl_n,
        "graph_nccl_kernels": graph_n,
        "other_kernels": other_n,
        "comm_ns": comm_ns,
        "exposed_ns": exposed_ns,
        "overlap": round(1 - exposed_ns / comm_ns, 4) if comm_ns else None,
        "reported_comm_ns": rep.get("comm_ns"),
        "reported_exposed_ns": rep.get("exposed_ns"),
        "reported_overlap": rep.get("overlap_ppm", 0) / 1e6 if rep else None,
    }
    # relative differences; exposed time near zero (hidden communication) is compared against
    # 1% of the communication time instead, so a few microseconds do not read as 100%
    out["comm_diff"] = out["exposed_diff"] = None
    if out["reported_comm_ns"] is not None and comm_ns:
        out["comm_diff"] = abs(comm_ns - out["reported_comm_ns"]) / comm_ns
        out["exposed_diff"] = abs(exposed_ns - out["reported_exposed_ns"]) / max(exposed_ns, comm_ns / 100)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--tolerance", type=float, default=0.05)
    args = ap.parse_args()
    bad = 0
    for p in [t for t in args.traces if ".trace.json" in t or not t.endswith(".summary.json")]:
        try:
            r = check(p)
        except (OSError, ValueError, KeyError) as ex:
            print(json.dumps({"trace": p, "error": str(ex)}))
            bad += 1
            continue
        ok = r["comm_diff"] is not None and r["comm_diff"] <= args.tolerance and r["exposed_diff"] <= args.tolerance
        r["ok"] = ok
        bad += not ok
        print(json.dumps(r))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
