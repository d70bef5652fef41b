#!/usr/bin/env python3
"""check_join.py: an independent check that commlens gave each collective its own kernel.

For every collective or p2p operation whose GPU span came from CUPTI (`source` "cupti": the
span is its launch's NCCL kernel), finds the NCCL kernel slice with the same start and length
on the GPU tracks and checks that the kernel's name is the operation's (NCCL names its kernels
after the collective: ncclDevKernel_AllReduce_..., ..._SendRecv; grouped work may run in
ncclDevKernel_Generic). A join that slipped by one launch (the wrong stream, a captured launch
taken for an eager one) gives AllReduce spans SendRecv kernels in a job that alternates them.
Prints one JSON line per trace; exits 1 if a trace has a mismatch or (with --min-timed) timed
too few of its operations from CUPTI.

    examples/check_join.py TRACE [TRACE ...] [--min-timed 0.9]
"""
import argparse
import gzip
import json
import sys

KERNEL_WORD = {"Send": "SendRecv", "Recv": "SendRecv", "SendRecv": "SendRecv"}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def check(path):
    doc = load(path)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    kernels = {}
    for e in events:
        if e.get("cat") == "gpu_kernel" and e.get("ph") == "X" and e.get("args", {}).get("nccl"):
            kernels.setdefault(round(e["ts"], 2), []).append(e)
    ops = timed = ok = generic = 0
    bad = []
    for e in events:
        cat = e.get("cat", "")
        if e.get("ph") != "X" or not cat.endswith("_gpu"):
            continue
        ops += 1
        if e.get("args", {}).get("source") != "cupti":
            continue
        timed += 1
        cands = [k for k in kernels.get(round(e["ts"], 2), []) if abs(k["dur"] - e["dur"]) < 0.01]
        if not cands:
            bad.append({"op": e["name"], "ts": e["ts"], "why": "no NCCL kernel with its span"})
            continue
        name = cands[0]["name"]
        word = KERNEL_WORD.get(e["name"], e["name"])
        if word in name:
            ok += 1
        elif "Generic" in name:
            generic += 1
        else:
            bad.append({"op": e["name"], "seq": e.get("args", {}).get("seq"), "kernel": name[:80]})
    return {"trace": path, "ops": ops, "timed_by_cupti": timed, "kernel_named_as_op": ok,
            "generic_kernel": generic, "mismatched": len(bad), "first_mismatches": bad[:3]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--min-timed", type=float, default=0.0,
                    help="fail if fewer than this share of operations were timed from CUPTI")
    a = ap.parse_args()
    rc = 0
    for p in a.traces:
        r = check(p)
        share = r["timed_by_cupti"] / r["ops"] if r["ops"] else 0.0
        r["timed_share"] = round(share, 4)
        print(json.dumps(r))
        if r["mismatched"] or share < a.min_timed:
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
