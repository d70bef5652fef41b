#!/usr/bin/env python3
"""nccltests_table.py OUTDIR: the table of bench/nccltests_overhead.sh. Per NCCL and size: the
median over rounds of the out-of-place time (us) of `none`, and each configuration's median of its
per-round difference to `none` in the same round (pairs, so round-to-round drift cancels), with
the min..max of those differences as the spread. A run is INVALID when its plugin did not load."""
import os, re, statistics, sys

def parse(path):
    txt = open(path, errors="replace").read()
    rows = {}
    for line in txt.splitlines():
        f = line.split()
        if len(f) >= 13 and f[0].isdigit() and f[2] in ("float", "half", "bfloat16", "int32"):
            try:
                rows[int(f[0])] = float(f[5])
            except ValueError:
                pass
    return txt, rows

def main(out):
    for nccl in sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d))):
        base = os.path.join(out, nccl)
        rounds = sorted((d for d in os.listdir(base) if re.fullmatch(r"r\d+", d)), key=lambda s: int(s[1:]))
        data, invalid, loaded = {}, {}, {}
        for r in rounds:
            for f in os.listdir(os.path.join(base, r)):
                if not f.endswith(".log"):
                    continue
                cfg = f[:-4]
                txt, rows = parse(os.path.join(base, r, f))
                m = re.search(r"PROFILER/Plugin: Loaded (\S+)(?: \((v\d+)\))?", txt)
                if cfg != "none" and not m:
                    invalid[cfg] = invalid.get(cfg, 0) + 1
                    continue
                if m:
                    loaded[cfg] = m.group(0)
                if rows:
                    data.setdefault(cfg, {})[r] = rows
        ver = ""
        for f in [g for g in os.listdir(os.path.join(base, rounds[0])) if g.endswith(".log")] if rounds else []:
            m = re.search(r"NCCL version (\S+)", open(os.path.join(base, rounds[0], f), errors="replace").read())
            if m:
                ver = m.group(1); break
        print(f"\n## NCCL {ver} ({nccl}), {len(rounds)} rounds, all_reduce_perf -g 2, out-of-place time\n")
        if "none" not in data:
            print("no valid `none` runs"); continue
        sizes = sorted({s for rr in data["none"].values() for s in rr})
        known = ["null", "null-kch", "cl-before", "cl-default", "cl-nocupti", "cl-kch", "cl-sampled", "cl-full", "inspector", "example"]
        cfgs = [c for c in known if c in data] + sorted(c for c in data if c not in known and c != "none")
        print("| size | none (us) | " + " | ".join(f"{c} − none" for c in cfgs) + " |")
        print("|---" * (2 + len(cfgs)) + "|")
        for s in sizes:
            nv = [rr[s] for rr in data["none"].values() if s in rr]
            cells = []
            for c in cfgs:
                d = [data[c][r][s] - data["none"][r][s] for r in data[c] if r in data["none"] and s in data[c][r] and s in data["none"][r]]
                cells.append(f"{statistics.median(d):+.2f} ({min(d):+.1f}..{max(d):+.1f}), n={len(d)}" if d else "-")
            print(f"| {s} | {statistics.median(nv):.2f} ({min(nv):.1f}..{max(nv):.1f}) | " + " | ".join(cells) + " |")
        for c, n in sorted(invalid.items()):
            print(f"\n{c}: {n} run(s) INVALID (NCCL did not load the plugin)")
        for c, l in sorted(loaded.items()):
            print(f"{c}: {l}")

if __name__ == "__main__":
    main(sys.argv[1])
