#!/usr/bin/env python3
"""check_sizes.py: file and function sizes (docs/style.md). Fails on any C file of ours over
FILE_MAX lines, any function over FUNC_MAX lines, and any function of the plugin (plugin/) over
PLUGIN_FUNC_MAX lines, listing each offender with its size. The plugin runs inside the job: its
functions stay short enough to read whole (the style guide's ~70; the tree meets 71).

A function is counted from the line that opens its definition (its name and parameter list at
the start of a line, outside any brace) to the closing brace at the start of a line, both
included. Nothing is exempt unless EXEMPT below names it with the reason, and nothing is over
its limit unless OVER below names it with the size it had when it was listed: it may shrink,
never grow, and every run prints it (every file of the tree meets every limit now: OVER is
empty).

usage: check_sizes.py              the tree (common plugin exporters tools include test fuzz bench examples)
       check_sizes.py FILE...      those files only (the self-test plants an offender this way)
       check_sizes.py --self-test  plants offenders in a temporary folder and checks they fail
Prints "hygiene/sizes: N passed, N failed" (test/run.sh reads it) and every finding."""
import os, re, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIRS = ["common", "plugin", "exporters", "tools", "include", "test", "fuzz", "bench", "examples"]
FILE_MAX, FUNC_MAX, PLUGIN_FUNC_MAX = 800, 120, 71
# path (from the root) -> why it is exempt. Vendored or generated sources only (none now).
EXEMPT = {}
# path -> {"file": its lines, "name()": a function's lines}: over the limit when listed (a test or
# benchmark not cut yet; none now). A listed size may only go down; cut the file and drop its line.
OVER = {}

# a definition's first line: a return type and a name, then "(" (not a macro, not a control word)
DEF = re.compile(r"^(?!#|typedef\b|struct\s+\w+\s*\{|enum\b|union\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(")
NOT_FUNC = {"if", "for", "while", "switch", "return", "sizeof", "defined"}


def strip(src):
    """The text with comments and string/char literals blanked (lines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else "")); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


def functions(text):
    """(name, first line, lines) of each function defined at file scope."""
    lines = strip(text).split("\n")
    found, depth, cand, start = [], 0, None, 0
    for ln, line in enumerate(lines, 1):
        if depth == 0:
            m = DEF.match(line)
            if m and m.group(1) not in NOT_FUNC:
                cand, start = m.group(1), ln
            elif line.strip().endswith(";"):
                cand = None
        before = depth
        depth += line.count("{") - line.count("}")
        if before == 0 and depth > 0 and cand and ")" in "".join(lines[start - 1:ln]):
            name, first = cand, start
            cand = None
            found.append([name, first, None])
        if before > 0 and depth == 0 and found and found[-1][2] is None:
            found[-1][2] = ln - found[-1][1] + 1
        if depth == 0 and line.rstrip().endswith(";"):
            cand = None
    return [(n, f, s) for n, f, s in found if s is not None]


def check(path, rel, over=None):
    """Findings of one file; `over`: its OVER entry (sizes it may keep, never pass)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    over = over or {}
    findings, listed = [], []

    def judge(what, key, size, limit):
        allowed = max(limit, over.get(key, 0))
        if size > allowed:
            findings.append("%s %d lines (at most %d%s)" % (what, size, allowed, ", as listed in OVER" if allowed > limit else ""))
        elif size > limit:
            listed.append("%s %d lines (limit %d; listed in OVER at %d)" % (what, size, limit, over[key]))

    nlines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if path.endswith(".c"):
        judge("%s:" % rel, "file", nlines, FILE_MAX)
    limit = PLUGIN_FUNC_MAX if rel.startswith("plugin/") else FUNC_MAX
    for name, first, size in functions(text):
        judge("%s:%d: %s()" % (rel, first, name), name + "()", size, limit)
    for l in listed:
        print("  over " + l)
    return findings


def tree():
    for d in DIRS:
        for dp, dns, fs in os.walk(os.path.join(ROOT, d)):
            dns.sort()
            for f in sorted(fs):
                if f.endswith((".c", ".h", ".cu")):
                    p = os.path.join(dp, f)
                    yield p, os.path.relpath(p, ROOT)


def run(files):
    findings, n = [], 0
    for p, rel in files:
        if rel in EXEMPT:
            print("  exempt %s: %s" % (rel, EXEMPT[rel]))
            continue
        n += 1
        findings += check(p, rel, OVER.get(rel))
    for f in findings:
        print("  FAIL " + f)
    print("  sizes: %d files checked (files <= %d lines, functions <= %d, plugin functions <= %d)"
          % (n, FILE_MAX, FUNC_MAX, PLUGIN_FUNC_MAX))
    print("hygiene/sizes: %d passed, %d failed" % (0 if findings else 1, len(findings)))
    return 1 if findings else 0


def self_test():
    """Planted offenders must be found (a file of 801 lines, a function of 121, a plugin function of
    72, one after a string holding a brace, a listed file grown past its listed size), and files
    within the limits must pass."""
    ok = True
    with tempfile.TemporaryDirectory() as d:
        def plant(rel, body):
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(body)
            return check(p, rel)
        body = lambda n: "".join("  x += %d; /* { */\n" % i for i in range(n))
        fn = lambda name, n: "static int %s(int x)\n{\n%s  return x;\n}\n" % (name, body(n - 4))
        cases = [
            ("tools/ok.c", fn("fine", 120) + fn("also_fine", 3), 0),
            ("tools/long_fn.c", "/* a */\n" + fn("too_long", 121), 1),
            ("plugin/x/long.c", fn("plugin_fn", 72), 1),
            ("plugin/x/ok.c", "int f(int a,\n      int b) {\n" + body(67) + "  return a + b;\n}\n", 0),
            ("tools/big.c", fn("small", 10) + "".join("int v%d;\n" % i for i in range(800)), 1),
            ("tools/strings.c", 'static const char *s = "}";\n' + fn("after_string", 121), 1),
        ]
        for rel, text, want in cases:
            got = plant(rel, text)
            if len(got) != want:
                ok = False
                print("  FAIL self-test %s: %d findings, expected %d: %s" % (rel, len(got), want, got))
        # a file listed in OVER may keep its size, never grow past it
        p = os.path.join(d, "test/listed.c")
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(fn("listed_fn", 130))
        for over, want in (({"listed_fn()": 130}, 0), ({"listed_fn()": 129}, 1), ({}, 1)):
            got = check(p, "test/listed.c", over)
            if len(got) != want:
                ok = False
                print("  FAIL self-test test/listed.c listed as %s: %d findings, expected %d: %s" % (over, len(got), want, got))
    print("hygiene/sizes-self-test: %d passed, %d failed" % (1 if ok else 0, 0 if ok else 1))
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if sys.argv[1:]:
        sys.exit(run([(p, os.path.relpath(os.path.abspath(p), ROOT)) for p in sys.argv[1:]]))
    sys.exit(run(tree()))
