#!/usr/bin/env python3
"""check_writers.py MODE FILE NAME_FILE [N]: one writer's output (test/tools/test_writers.c),
parsed with Python's own parser of its format, holds the name in NAME_FILE (its bytes: the name
as read, valid UTF-8) where it belongs, escaped for the format. Prints one line per problem and
exits 1 if any.

  html PAGE SHOWN_FILE     the page parses (html.parser); its <h1> text holds the job as a
                           terminal shows it (SHOWN_FILE), and no text or attribute holds a raw
                           control character but whitespace
  csv  CSV  NAME_FILE N    RFC 4180 (csv module): a header and N rows, each row's host,
                           comm_name and func exactly the name
  prom FILE NAME_FILE      every sample's host and job labels, and func where there is one, are
                           the name once unescaped (the format's grammar: check_prom.py)
"""
import csv
import html.parser
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_prom  # noqa: E402  (the exposition grammar, one copy)

CONTROLS = {chr(c) for c in range(0x20) if chr(c) not in '\t\n\r\f'} | {'\x7f'} | {chr(c) for c in range(0x80, 0xa0)}


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.h1, self.in_h1, self.raw = '', False, []

    def handle_starttag(self, tag, attrs):
        self.in_h1 = self.in_h1 or tag == 'h1'
        for _, v in attrs:
            if v and CONTROLS & set(v):
                self.raw.append(f'attribute of <{tag}>')

    def handle_endtag(self, tag):
        if tag == 'h1':
            self.in_h1 = False

    def handle_data(self, data):
        if self.in_h1:
            self.h1 += data
        if CONTROLS & set(data):
            self.raw.append(repr(data[:60]))


def check_html(page, shown):
    p = Page()
    p.feed(open(page, encoding='utf-8', errors='strict').read())
    p.close()
    problems = [f'raw control character in {w}' for w in p.raw[:5]]
    if shown not in p.h1:
        problems.append(f'<h1> {p.h1[:120]!r} does not hold the job {shown[:60]!r}')
    return problems


def check_csv(path, name, n):
    with open(path, newline='', encoding='utf-8', errors='strict') as f:
        rows = list(csv.DictReader(f, strict=True))
    problems = [] if len(rows) == n else [f'{len(rows)} rows, want {n}']
    for i, r in enumerate(rows):
        for col in ('host', 'comm_name', 'func'):
            if r.get(col) != name:
                problems.append(f'row {i}: {col} is {r.get(col, "")[:60]!r}, not the name')
                break
    return problems


def check_prom_labels(path, name):
    problems = check_prom.check(path)
    seen = 0
    for line in open(path, encoding='utf-8', errors='strict', newline='').read().split('\n'):
        if line.startswith('#') or '{' not in line:
            continue
        body = line[line.index('{') + 1:line.rindex('}')]
        labels = dict(check_prom.parse_labels(body, path))
        for k in ('host', 'job', 'func'):
            if k in labels and labels[k] != name:
                problems.append(f'{k}={labels[k][:60]!r} is not the name')
        seen += 1
    if not seen:
        problems.append('no samples')
    return problems[:10]


def main():
    mode, path, name_file = sys.argv[1:4]
    name = open(name_file, 'rb').read().decode('utf-8')
    if mode == 'html':
        problems = check_html(path, name)
    elif mode == 'csv':
        problems = check_csv(path, name, int(sys.argv[4]))
    elif mode == 'prom':
        problems = check_prom_labels(path, name)
    else:
        sys.exit(f'unknown mode {mode}')
    for p in problems:
        print(f'{path}: {p}')
    sys.exit(1 if problems else 0)


if __name__ == '__main__':
    main()
