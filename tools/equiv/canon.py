#!/usr/bin/env python3
"""canon.py: canonical forms of commlens output, for tools/equiv/equiv.sh.

  canon.py trace FILE.trace.json[.gz]   one line per slice, sorted: track, cat, name, args,
                                        start and duration (ns, relative to the first host
                                        event), then the stats that do not depend on speed
  canon.py report REPORT.json           the report with what names files, processes and the
                                        clocks' absolute offsets removed

Replays under commlens-replay --virtual-clock differ only by a constant shift of every host
timestamp (the replay's start), so times are taken relative to the earliest host-stamped
slice. What still differs between two replays of one recording with one build is dropped here,
each with its reason:
  - lane numbers in track names (" lane N") and OS thread ids ("(tid N)"): tracks are
    compared by name, and the replaying process's threads are new ones;
  - "stream" addresses in API args: the replaying process's own pointers;
  - commlensStats: overhead, timing and elapsed fields (the plugin's own cost on this machine),
    and "events", which counts track metadata too: how many lanes a channel's KernelCh track
    needs depends on the order the format thread releases KernelCh slices held for clock
    calibration (its timing), not on what is drawn; the slices themselves are compared;
    and "orphans" (children read before their parent's start), which counts the order in which
    the drain thread happened to visit the threads' rings;
  - the header: pid, host, clock offset (the replay's start)."""
import decimal, gzip, json, re, sys

HOST_CATS = {"api", "group", "coll", "p2p", "proxy_op", "proxy_step", "proxy_state", "proxy_ctrl", "net", "ce"}
STATS_VARY = {"overhead_ns_per_call", "overhead_pct", "elapsed_ns", "calls", "events", "orphans"}


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f, parse_float=decimal.Decimal)   # µs with 3 decimals: exact


def ns(us):
    # timestamps are printed as exact microseconds with three decimals
    return int(decimal.Decimal(us) * 1000)


def canon_trace(path):
    t = load(path)
    evs = t.get("traceEvents", [])
    names = {}
    for e in evs:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            n = re.sub(r" lane \d+$", "", e["args"]["name"])
            names[(e.get("pid"), e.get("tid"))] = re.sub(r"\(tid \d+\)", "(tid *)", n)
    host = [ns(e["ts"]) for e in evs if e.get("ph") == "X" and e.get("cat") in HOST_CATS]
    anchor = min(host) if host else 0
    out = []
    for e in evs:
        ph = e.get("ph")
        if ph == "M":
            continue
        args = dict(e.get("args", {}))
        if "stream" in args and isinstance(args["stream"], str):
            args["stream"] = "<addr>"
        track = names.get((e.get("pid"), e.get("tid")), "?")
        rel = ns(e["ts"]) - anchor if "ts" in e else 0
        dur = ns(e["dur"]) if "dur" in e else 0
        out.append("%s | %s | %s | %s | %s | t=%d d=%d" % (ph, track, e.get("cat"), e.get("name"),
                   json.dumps(args, sort_keys=True, default=str), rel, dur))
    out.sort()
    st = {k: v for k, v in t.get("commlensStats", {}).items() if k not in STATS_VARY}
    for o in st.get("gpu_offsets", []) or []:
        o.pop("host_minus_gpu_ns", None)          # includes the replay's start
    out.append("stats " + json.dumps(st, sort_keys=True, default=str))
    return out


def canon_report(path):
    r = load(path)
    for rk in r.get("ranks", []):
        rk.pop("file", None)
        rk.pop("host", None)
        c = rk.get("clock", {})
        c.pop("offset_ns", None)                  # the replays' starts differ
        p = rk.get("plugin", {})
        for k in ("overhead_pct", "overhead_ns_per_call", "events", "events_reported"):
            p.pop(k, None)
    return json.dumps(r, sort_keys=True, indent=1, default=str).splitlines()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("trace", "report"):
        print(__doc__)
        sys.exit(2)
    lines = canon_trace(sys.argv[2]) if sys.argv[1] == "trace" else canon_report(sys.argv[2])
    sys.stdout.write("\n".join(lines) + "\n")
