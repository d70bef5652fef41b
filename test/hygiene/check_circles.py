#!/usr/bin/env python3
"""check_circles.py: the arrows between our source files run one way (style.md habit 18).

A file's unit is its path without .c/.h (tools/commlens/model/load.c and load.h are one unit). An
arrow A -> B is A's #include "B.h", or A's object calling or reading a global that B's object
defines (nm over the built objects of the plugin and of the CLI). Fails on
  - a circle of units (A -> B -> ... -> A), in the plugin (with common/ and exporters/) or the CLI;
  - a circle of trees (common/, exporters/, plugin/, the CLI) or of folders;
  - in the plugin, an arrow up its stages: abi/ -> plugin/ (lifecycle) -> pipeline/ -> gpu/ ->
    output/ -> capture/ -> exporters/ -> common/;
  - in the CLI, an arrow up the stages: tools/commlens/ (main, options) -> render/ and merge/
    -> analyse/ -> model/ -> read/ -> base/ (allocation, arrays, medians) -> common/;
    render/ and merge/ never reach each other.

usage: check_circles.py BUILD_DIR   (BUILD_DIR/obj holds the objects `make` built)
Prints "hygiene/circles: N passed, N failed" (test/run.sh reads it) and every finding."""
import os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_tree import nm   # noqa: E402  (the one nm reader of the hygiene checks)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREES = ["common", "exporters", "plugin", "tools/commlens"]
INCLUDE_DIRS = ["", "include", "tools/commlens"]   # the -I paths, after the file's own folder
# the CLI's stages, top first; an arrow may only go to a later one (or stay in its folder)
CLI = "tools/commlens"
# the plugin's stages, in the order of their arrows: the ABI shims call the lifecycle (plugin/)
# and the hot path; the lifecycle starts the writer's threads (pipeline/), which feed the GPU
# join (gpu/) and the output (output/); capture/ (rings, gate, contexts) is what they all read
PLUGIN_STAGES = [["plugin/abi"], ["plugin"], ["plugin/pipeline"], ["plugin/gpu"], ["plugin/output"], ["plugin/capture"],
                 ["exporters"], ["common"]]
CLI_STAGES = [[CLI], [CLI + "/render", CLI + "/merge"], [CLI + "/analyse"], [CLI + "/model"], [CLI + "/read"],
              [CLI + "/base"], ["common"]]


def unit(path):
    return re.sub(r"\.[ch]$", "", path)


def sources():
    for t in TREES:
        for dp, _, fs in os.walk(os.path.join(ROOT, t)):
            for f in sorted(fs):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dp, f), ROOT)


def include_arrows(files):
    arrows = {}
    for f in files:
        here = os.path.dirname(f)
        for n, line in enumerate(open(os.path.join(ROOT, f), errors="replace"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            for d in [here] + INCLUDE_DIRS:
                cand = os.path.normpath(os.path.join(d, m.group(1)))
                if cand in files:
                    if unit(cand) != unit(f):
                        arrows.setdefault((unit(f), unit(cand)), "%s:%d includes %s" % (f, n, m.group(1)))
                    break
    return arrows


def call_arrows(build, files):
    """(A, B) -> why, for every global that A's object uses and B's object defines"""
    objs = {}
    for f in files:
        if f.endswith(".c"):
            o = os.path.join(build, "obj", f[:-2] + ".o")
            if os.path.exists(o):
                objs[o] = unit(f)
    missing = [f for f in files if f.endswith(".c") and os.path.join(build, "obj", f[:-2] + ".o") not in objs]
    if not objs:
        return None, missing
    defined, used = nm(sorted(objs))   # name -> object, name -> objects
    arrows = {}
    for name, users in sorted(used.items()):
        d = defined.get(name)
        for o in sorted(users):
            if d and d != o:
                arrows.setdefault((objs[o], objs[d]), "%s uses %s of %s" % (objs[o], name, objs[d]))
    return arrows, missing


def circles(nodes, edges):
    """strongly connected components of more than one node (Tarjan, iterative)"""
    succ = {n: sorted({b for (a, b) in edges if a == n}) for n in nodes}
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter[0]; counter[0] += 1
                stack.append(v); on.add(v)
            if i < len(succ[v]):
                work.append((v, i + 1))
                w = succ[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            for w in succ[v]:
                if w in on:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def explain(comp, arrows):
    """the arrows inside one circle, one per line"""
    return ["      %s" % why for (a, b), why in sorted(arrows.items()) if a in comp and b in comp]


def folder(u):
    return os.path.dirname(u)


def tree(u):
    return CLI if u.startswith(CLI + "/") else u.split("/")[0]


def stage_of(stages, f):
    for i, group in enumerate(stages):
        if f in group:
            return i
    return None


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    files = set(sources())
    arrows = include_arrows(files)
    calls, missing = call_arrows(build, files)
    findings = []
    if calls is None:
        findings.append("no objects under %s/obj (build the plugin and the CLI first)" % build)
        calls = {}
    for f in missing:
        findings.append("%s: no object %s/obj/%s.o (build it first)" % (f, build, f[:-2]))
    for k, why in calls.items():
        arrows.setdefault(k, why)
    units = {unit(f) for f in files}
    for comp in circles(units, arrows):
        findings.append("a circle of files: %s\n%s" % (" -> ".join(comp), "\n".join(explain(comp, arrows))))
    tarrows, farrows = {}, {}
    for (a, b), why in arrows.items():
        if tree(a) != tree(b):
            tarrows.setdefault((tree(a), tree(b)), why)
        if folder(a) != folder(b) and tree(a) == tree(b):
            farrows.setdefault((folder(a), folder(b)), why)
    for comp in circles({tree(u) for u in units}, tarrows):
        findings.append("a circle of trees: %s\n%s" % (" -> ".join(comp), "\n".join(explain(comp, tarrows))))
    for comp in circles({folder(u) for u in units}, farrows):
        findings.append("a circle of folders: %s\n%s" % (" -> ".join(comp), "\n".join(explain(comp, farrows))))
    farrows = {}
    for (a, b), why in arrows.items():
        if folder(a) != folder(b):
            farrows.setdefault((folder(a), folder(b)), why)
    for (fa, fb), why in sorted(farrows.items()):
        for name, stages in (("CLI", CLI_STAGES), ("plugin", PLUGIN_STAGES)):
            sa, sb = stage_of(stages, fa), stage_of(stages, fb)
            if sa is None:
                continue
            if sb is None:
                findings.append("%s -> %s: the %s reaches outside its stages (%s)" % (fa, fb, name, why))
            elif sb <= sa:
                findings.append("%s -> %s: an arrow up (or across) the %s's stages (%s)" % (fa, fb, name, why))
    for f in findings:
        print("  FAIL " + f)
    print("  circles: %d files, %d arrows" % (len(files), len(arrows)))
    print("hygiene/circles: %d passed, %d failed" % (0 if findings else 1, len(findings)))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
