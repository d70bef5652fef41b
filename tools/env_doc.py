#!/usr/bin/env python3
"""env_doc.py: the table of docs/environment.md, made from `commlens env` (the plugin's one
declaration of its variables, common/config.c), so the page and the plugin cannot drift apart.

usage: env_doc.py CLI                  print the table
       env_doc.py CLI --check PAGE     exit 1, saying what differs, when PAGE's table is not it
       env_doc.py CLI --update PAGE    rewrite PAGE's table (between its two marker lines)"""
import subprocess
import sys

BEGIN = "<!-- the table below is `python3 tools/env_doc.py build/commlens --update docs/environment.md` -->"
END = "<!-- end of the generated table -->"


def cell(text):
    """Markdown table cell text: its pipes, ampersands and angle brackets escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def table(cli):
    out = subprocess.run([cli, "env"], capture_output=True, text=True, check=True).stdout
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) == 3 and f[0].startswith("COMMLENS_"):
            rows.append("| `%s` | %s | %s |" % (f[0], cell(f[1]), cell(f[2])))
    if len(rows) < 12:
        sys.exit("env_doc.py: %s env listed %d variables" % (cli, len(rows) - 2))
    return rows


def split(page):
    with open(page) as f:
        lines = f.read().split("\n")
    if lines.count(BEGIN) != 1 or lines.count(END) != 1 or lines.index(BEGIN) > lines.index(END):
        sys.exit("env_doc.py: %s needs the marker lines\n%s\n%s" % (page, BEGIN, END))
    a, b = lines.index(BEGIN), lines.index(END)
    return lines[:a + 1], lines[a + 1:b], lines[b:]


def main():
    if len(sys.argv) == 2:
        print("\n".join(table(sys.argv[1])))
        return 0
    if len(sys.argv) != 4 or sys.argv[2] not in ("--check", "--update"):
        sys.exit(__doc__)
    cli, mode, page = sys.argv[1:]
    head, rows, tail = split(page)
    want = table(cli)
    if mode == "--update":
        with open(page, "w") as f:
            f.write("\n".join(head + want + tail))
        return 0
    if rows == want:
        return 0
    for r in want:
        if r not in rows:
            print("  %s lacks: %s" % (page, r[:160]))
    for r in rows:
        if r not in want:
            print("  %s has, and `commlens env` does not: %s" % (page, r[:160]))
    print("  regenerate: python3 tools/env_doc.py %s --update %s" % (cli, page))
    return 1


if __name__ == "__main__":
    sys.exit(main())
