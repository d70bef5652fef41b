#!/usr/bin/env python3
"""check_tree.py: rules of the tree that a compiler does not enforce.

  symbols   every global symbol the plugin or the CLI defines is referenced by another
            object file of the same programs, or is exported (plugin/exports.map): a global
            nothing else uses is dead code or should be static.
  comments  every file path and every function name `name()` quoted in a comment of our
            C sources exists: a path in the tree, a function defined in our code, or one
            declared in a system or CUDA header. Comments that cite what is gone mislead.
  history   no text of the tree (code, scripts, docs) cites a tracker issue number, names a
            lent machine by the kind it was lent as (name the hardware: "one H200", "2xH200")
            or narrates development sessions: the history lives in CHANGELOG.md, which this
            check leaves to itself.
  decisions every record docs/decisions/NNNN-title.md is numbered as its name says (0001 up,
            none missing), has its Status, Context, Decision and Consequences in that order, a
            status that is "Accepted." or "Superseded by [NNNN](NNNN-....md).", links that lead
            to files, and a line in docs/decisions/README.md.
  architecture  docs/architecture.md stays one page (at most 250 lines), names every stage
            folder (each folder of plugin/, tools/commlens/ and tools/, and common, exporters,
            include), and its prefix table explains every prefix that names three or more of a
            header's declarations without being a word of the header's name (cl_gj_* in
            gpu_join.h), and no prefix the code does not use.

usage: check_tree.py symbols BUILD_DIR  |  check_tree.py comments|history|decisions|architecture
Prints "hygiene/<check>: N passed, N failed" (test/run.sh reads it) and every finding."""
import os, re, subprocess, sys, glob, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUDA = os.environ.get("CUDA", "/usr/local/cuda")
OUR_DIRS = ["common", "plugin", "exporters", "tools", "include", "test", "fuzz", "bench", "examples"]


def sources(exts=(".c", ".h")):
    for d in OUR_DIRS:
        for dp, _, fs in os.walk(os.path.join(ROOT, d)):
            for f in sorted(fs):
                if f.endswith(exts):
                    yield os.path.join(dp, f)


def report(check, findings, checked):
    for f in findings:
        print("  FAIL " + f)
    # one check, one result: its findings are the failures (not one pass per name looked at)
    print("  %s: %d names checked" % (check, checked))
    print("hygiene/%s: %d passed, %d failed" % (check, 0 if findings else 1, len(findings)))
    return 1 if findings else 0


def nm(objs):
    """(defined globals: name -> object, undefined references: name -> set(objects))"""
    out = subprocess.run(["nm", "-A", "-g"] + objs, capture_output=True, text=True, check=True).stdout
    defined, used = {}, {}
    for line in out.splitlines():
        m = re.match(r"(.+?):\s*(?:[0-9a-f]+)?\s+([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, name = m.groups()
        if kind == "U":
            used.setdefault(name, set()).add(obj)
        elif kind in "TDBRVWGS" and not name.startswith("__"):
            defined[name] = obj
    return defined, used


def check_symbols(build):
    # the objects the plugin is linked from (the Makefile's LIB_SRC), not stale ones
    srcs = []
    for pat in ("common/*.c", "plugin/*.c", "plugin/*/*.c", "exporters/*.c"):
        srcs += glob.glob(os.path.join(ROOT, pat))
    plugin_objs = sorted(os.path.join(build, "obj", os.path.relpath(s, ROOT)[:-2] + ".o") for s in srcs)
    missing = [o for o in plugin_objs if not os.path.exists(o)]
    if missing or not plugin_objs:
        print("no plugin objects under %s/obj (build the plugin first)" % build)
        return report("symbols", ["no objects to check"], 1)
    # The CLI is linked from sources in one command: compile its translation units alone.
    tmp = tempfile.mkdtemp(prefix="commlens-hygiene-")
    cli_objs = []
    for src in sorted(glob.glob(os.path.join(ROOT, "tools", "commlens", "*.c")) +
                      glob.glob(os.path.join(ROOT, "tools", "commlens", "*", "*.c"))):
        obj = os.path.join(tmp, "cli_" + os.path.relpath(src, ROOT).replace("/", "_") + ".o")
        subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-DCOMMLENS_VERSION=\"x\"", "-I" + ROOT,
                        "-I" + os.path.join(ROOT, "include"), "-I" + os.path.join(ROOT, "tools", "commlens"),
                        "-c", src, "-o", obj], check=True)
        cli_objs.append(obj)
    exported = set(re.findall(r"(ncclProfiler_v\d+);", open(os.path.join(ROOT, "plugin", "exports.map")).read()))
    exported.add("main")
    defined, used = nm(plugin_objs + cli_objs)
    # tests include sources and call internals directly: a name a test or fuzzer uses counts
    test_words = set()
    for d in ("test", "fuzz", "bench"):
        for f in glob.glob(os.path.join(ROOT, d, "**", "*.c"), recursive=True):
            test_words.update(re.findall(r"\b[A-Za-z_]\w*\b", COMMENT.sub(" ", open(f, errors="replace").read())))
    findings = []
    for name, obj in sorted(defined.items()):
        if name in exported or name in test_words:
            continue
        users = used.get(name, set()) - {obj}
        if not users:
            findings.append("%s: global '%s' is referenced by no other object (dead, or make it static)"
                            % (os.path.relpath(obj, build if obj.startswith(build) else tmp), name))
    return report("symbols", findings, len(defined))


COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
BARE = re.compile(r"(?<![\w./-])([\w-]+\.(?:c|h|md|sh|py|map|mk|cu))\b")
PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.(?:c|h|md|sh|py|map|mk|cu|txt|json|gz))\b")
CALL = re.compile(r"\b([A-Za-z_]\w{2,})\(\)")


def code_identifiers():
    words = set()
    for f in sources((".c", ".h", ".cu")):
        text = open(f, errors="replace").read()
        text = COMMENT.sub(" ", text)
        words.update(re.findall(r"\b[A-Za-z_]\w*\b", text))
    return words


_header_cache = {}
def in_system_headers(name):
    if name not in _header_cache:
        rc = subprocess.run(["grep", "-rqw", "--include=*.h", name, "/usr/include", os.path.join(CUDA, "include")],
                            capture_output=True).returncode
        _header_cache[name] = rc == 0
    return _header_cache[name]


def path_exists(p, here):
    cands = [os.path.join(ROOT, p), os.path.join(here, p)]
    cands += [os.path.join(ROOT, d, p) for d in ("include", "plugin", "test", "docs")]
    return any(os.path.exists(c) for c in cands) or any(
        glob.glob(os.path.join(ROOT, "**", p), recursive=True)[:1])


def check_comments():
    ids = code_identifiers()
    findings, checked = [], 0
    for f in sources((".c", ".h", ".cu")):
        text = open(f, errors="replace").read()
        for m in COMMENT.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            c = m.group(0)
            for p in PATH.findall(c):
                if "://" in c or p.startswith(("/usr", "/proc", "/dev", "/tmp")):
                    continue
                if "*" in p or "<" in p:
                    continue
                checked += 1
                if not path_exists(p, os.path.dirname(f)):
                    findings.append("%s:%d: comment cites '%s', which does not exist" % (os.path.relpath(f, ROOT), line, p))
            for p in BARE.findall(c):
                checked += 1
                if not glob.glob(os.path.join(ROOT, "**", p), recursive=True):
                    findings.append("%s:%d: comment cites '%s', which the repository does not hold" % (os.path.relpath(f, ROOT), line, p))
            for fn in CALL.findall(STRING.sub(" ", c)):   # quoted messages of other tools are theirs
                checked += 1
                if fn not in ids and not in_system_headers(fn):
                    findings.append("%s:%d: comment cites %s(), which nothing defines" % (os.path.relpath(f, ROOT), line, fn))
    return report("comments", findings, checked)


HISTORY = [
    (re.compile(r"\bissues? #?[0-9]+\b", re.I), "cites a tracker issue"),
    (re.compile(r"\bnvidia-[ahbl][0-9]+(?:-x[0-9]+)?\b", re.I), "names a machine by its kind"),
    (re.compile(r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|"
                r"twelfth|[a-z]+teenth|twentieth|[0-9]+(?:st|nd|rd|th)) session\b", re.I), "narrates a session"),
    (re.compile(r"\bWhat changed (?:last|before|earlier|in the session)"), "narrates a session"),
]
HISTORY_EXTS = (".c", ".h", ".cu", ".py", ".sh", ".md", ".mk", ".yml", ".map", ".proto")
HISTORY_LEFT = {"CHANGELOG.md"}


def history_files():
    for name in sorted(os.listdir(ROOT)):
        if os.path.isfile(os.path.join(ROOT, name)) and (name.endswith(HISTORY_EXTS) or name == "Makefile"):
            yield os.path.join(ROOT, name)
    for d in OUR_DIRS + ["docs", "mk", "python"]:
        for dp, dns, fs in os.walk(os.path.join(ROOT, d)):
            rel = os.path.relpath(dp, ROOT)
            dns[:] = [n for n in dns if not (rel == "fuzz" and n in ("corpus", "regress"))]
            for f in sorted(fs):
                # recorded data holds what the recorded programs wrote; its READMEs are ours
                if rel.startswith(os.path.join("test", "data")) and not f.endswith(".md"):
                    continue
                if f.endswith(HISTORY_EXTS) or f == "Makefile":
                    yield os.path.join(dp, f)


def check_history():
    findings, checked = [], 0
    for f in history_files():
        rel = os.path.relpath(f, ROOT)
        if rel in HISTORY_LEFT:
            continue
        checked += 1
        for n, line in enumerate(open(f, errors="replace"), 1):
            for rx, why in HISTORY:
                m = rx.search(line)
                if m:
                    findings.append("%s:%d: %s ('%s')" % (rel, n, why, m.group(0)))
    return report("history", findings, checked)


DECISIONS = os.path.join(ROOT, "docs", "decisions")
RECORD_NAME = re.compile(r"^(\d{4})-[a-z0-9]+(?:-[a-z0-9]+)*\.md$")
RECORD_SECTIONS = ["## Status", "## Context", "## Decision", "## Consequences"]
STATUS = re.compile(r"^(?:Accepted\.|Superseded by \[(\d{4})\]\((\d{4}-[a-z0-9-]+\.md)\)\.)")
FENCED = re.compile(r"^```.*?^```", re.S | re.M)
INDEX_LINE = re.compile(r"^- \[\d{4}\]\(([^)]+)\)", re.M)
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def md_links_missing(path, text):
    """Relative links of a markdown text that lead nowhere."""
    text = FENCED.sub(" ", text)   # a template in a code block links nowhere on purpose
    return [t for t in MD_LINK.findall(text)
            if "://" not in t and not t.startswith("mailto:")
            and not os.path.exists(os.path.join(os.path.dirname(path), t))]


def check_record(path, num, findings):
    rel = os.path.relpath(path, ROOT)
    lines = open(path, errors="replace").read().split("\n")
    if not re.match(r"^# %04d\. \S" % num, lines[0]):
        findings.append("%s: the first line is not '# %04d. <the decision>'" % (rel, num))
    heads = [l.strip() for l in lines if l.startswith("## ")]
    if heads != RECORD_SECTIONS:
        findings.append("%s: sections %s, not %s" % (rel, heads, RECORD_SECTIONS))
        return
    status = next((l for l in lines[lines.index("## Status") + 1:] if l.strip()), "")
    m = STATUS.match(status)
    if not m:
        findings.append("%s: status '%s' is neither 'Accepted.' nor 'Superseded by [NNNN](NNNN-....md).'" % (rel, status))
    elif m.group(1) and not (m.group(2).startswith(m.group(1)) and os.path.exists(os.path.join(DECISIONS, m.group(2)))):
        findings.append("%s: superseded by %s, which is not a record" % (rel, m.group(2)))
    for t in md_links_missing(path, "\n".join(lines)):
        findings.append("%s: links to %s, which does not exist" % (rel, t))


def check_decisions():
    findings = []
    names = sorted(f for f in os.listdir(DECISIONS) if f.endswith(".md") and f != "README.md")
    nums = []
    for f in names:
        m = RECORD_NAME.match(f)
        if not m:
            findings.append("docs/decisions/%s: not named NNNN-short-title.md" % f)
            continue
        nums.append(int(m.group(1)))
        check_record(os.path.join(DECISIONS, f), int(m.group(1)), findings)
    if nums != list(range(1, len(nums) + 1)):
        findings.append("docs/decisions: records numbered %s, not 1 to %d once each" % (nums, len(nums)))
    index = os.path.join(DECISIONS, "README.md")
    listed = INDEX_LINE.findall(open(index).read()) if os.path.exists(index) else []
    for f in names:
        if listed.count(f) != 1:
            findings.append("docs/decisions/README.md has %d list lines '- [NNNN](%s)', not one" % (listed.count(f), f))
    for t in md_links_missing(index, open(index).read()) if os.path.exists(index) else ["README.md"]:
        findings.append("docs/decisions/README.md: links to %s, which does not exist" % t)
    return report("decisions", findings, len(names))


ARCHITECTURE = os.path.join(ROOT, "docs", "architecture.md")
ARCHITECTURE_MAX_LINES = 250
DECLARED = re.compile(r"^[A-Za-z_][\w \*]*?\b(cl_[a-z0-9_]+)\s*\(", re.M)
TYPEDEF = re.compile(r"\}\s*(cl_[a-z0-9_]+)\s*;|typedef struct \w+ (cl_[a-z0-9_]+);")


def stage_folders():
    dirs = ["common", "exporters", "include"]
    for top in ("plugin", os.path.join("tools", "commlens"), "tools"):
        for d in sorted(os.listdir(os.path.join(ROOT, top))):
            if os.path.isdir(os.path.join(ROOT, top, d)) and not d.startswith((".", "__")):
                dirs.append(os.path.join(top, d))
    return dirs


def prefixes_to_explain():
    """prefix -> the headers where it names 3+ declarations and is not a word of the name"""
    need = {}
    for d in ("common", "plugin", "exporters", "tools/commlens", "include"):
        for dp, _, fs in os.walk(os.path.join(ROOT, d)):
            for f in sorted(fs):
                if not f.endswith(".h"):
                    continue
                text = COMMENT.sub(" ", open(os.path.join(dp, f), errors="replace").read())
                names = set(DECLARED.findall(text)) | {a or b for a, b in TYPEDEF.findall(text)}
                count = {}
                for n in names:
                    p = n[3:].split("_")[0]
                    count[p] = count.get(p, 0) + 1
                words = f[:-2].split("_")
                for p, k in count.items():
                    if k >= 3 and not any(w == p or w.startswith(p) for w in words):
                        need.setdefault(p, []).append(os.path.relpath(os.path.join(dp, f), ROOT))
    return need


def check_architecture():
    findings = []
    text = open(ARCHITECTURE, errors="replace").read()
    nlines = text.count("\n")
    if nlines > ARCHITECTURE_MAX_LINES:
        findings.append("docs/architecture.md: %d lines, more than %d" % (nlines, ARCHITECTURE_MAX_LINES))
    folders = stage_folders()
    for d in folders:
        if not re.search(r"(?<![\w/])%s(?![\w])" % re.escape(d), text):
            findings.append("docs/architecture.md does not name the folder %s" % d)
    table = set()
    for row in re.findall(r"^\| (`[^|]+`) \|", text, re.M):
        table.update(re.findall(r"`([a-z0-9]+)`", row))
    need = prefixes_to_explain()
    for p, hs in sorted(need.items()):
        if p not in table:
            findings.append("docs/architecture.md: no prefix row for cl_%s_ (%s)" % (p, ", ".join(hs)))
    used = code_identifiers()
    for p in sorted(table):
        if not any(w.startswith("cl_%s_" % p) or w == "cl_" + p for w in used):
            findings.append("docs/architecture.md: prefix row for cl_%s_, which no code uses" % p)
    for t in md_links_missing(ARCHITECTURE, text):
        findings.append("docs/architecture.md: links to %s, which does not exist" % t)
    return report("architecture", findings, len(folders) + len(need) + len(table))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "symbols":
        sys.exit(check_symbols(os.path.abspath(sys.argv[2])))
    if len(sys.argv) == 2 and sys.argv[1] == "comments":
        sys.exit(check_comments())
    if len(sys.argv) == 2 and sys.argv[1] == "history":
        sys.exit(check_history())
    if len(sys.argv) == 2 and sys.argv[1] == "decisions":
        sys.exit(check_decisions())
    if len(sys.argv) == 2 and sys.argv[1] == "architecture":
        sys.exit(check_architecture())
    print(__doc__)
    sys.exit(2)
