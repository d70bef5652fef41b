#!/usr/bin/env python3
"""manifest.py: writes RUN/manifest.json, the planted truth of one recorded run: the design
(ranks, mode, planted ranks, pattern, delay) given on the command line, and each rank's
per-step record (truth-r<R>.json, written by train.py) merged in and then removed.
Usage: manifest.py RUN_DIR NAME MODE NRANKS PATTERN PLANTED_JSON DESCRIPTION EXIT_STATUS"""
import glob
import json
import os
import sys

run, name, mode, nranks, pattern, planted, what, status = sys.argv[1:9]
truth = {}
for p in sorted(glob.glob(os.path.join(run, "truth-r*.json"))):
    with open(p) as f:
        t = json.load(f)
    truth[str(t["rank"])] = [[s["step"], s["start_ns"], s["end_ns"], s["sleep_ms"], s["gpu_products"]]
                             + ([s["ready_ns"]] if "ready_ns" in s else []) for s in t["steps"]]
    os.remove(p)
m = {"run": name, "mode": mode, "ranks": int(nranks), "pattern": pattern,
     "planted": json.loads(planted), "description": what, "exit_status": int(status),
     "steps_columns": ["step", "start_unix_ns", "end_unix_ns", "host_sleep_ms", "gpu_products"]
                      + (["ready_unix_ns"] if any(len(s) > 5 for v in truth.values() for s in v) else []),
     "steps": truth}
head = json.dumps({k: v for k, v in m.items() if k != "steps"}, indent=1)
rows = ",\n".join(' "%s": [\n  %s\n ]' % (r, ",\n  ".join(json.dumps(s) for s in steps))
                   for r, steps in sorted(truth.items(), key=lambda kv: int(kv[0])))
with open(os.path.join(run, "manifest.json"), "w") as f:   # one step a line: readable and diffable
    f.write(head[:-2] + ',\n "steps": {\n' + rows + "\n }\n}\n")
