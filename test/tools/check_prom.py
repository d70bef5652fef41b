#!/usr/bin/env python3
"""check_prom.py FILE...: validates Prometheus text exposition files against the format's
documented grammar (metric and label names, label-value escapes, float values, one HELP and
TYPE per family placed before its samples, samples of a family together, no repeated series)
and commlens' naming rules (commlens_ prefix, counters end in _total). Prints one line per
problem; exit 1 if any. Written from the format's description, for tests."""
import re
import sys

NAME = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*$')
LABEL = re.compile(r'[a-zA-Z_][a-zA-Z0-9_]*$')
TYPES = {'counter', 'gauge', 'histogram', 'summary', 'untyped'}


def parse_labels(s, where):
    """'{a="x",b="y"}' body (without braces) -> list of (name, value); raises ValueError."""
    out, i = [], 0
    while i < len(s):
        m = re.match(r'\s*([^=\s]+)\s*=\s*"', s[i:])
        if not m:
            raise ValueError(f'{where}: bad label at {s[i:]!r}')
        name = m.group(1)
        if not LABEL.match(name) or name.startswith('__'):
            raise ValueError(f'{where}: bad label name {name!r}')
        i += m.end()
        val = []
        while True:
            if i >= len(s):
                raise ValueError(f'{where}: unterminated label value')
            c = s[i]
            if c == '\\':
                if i + 1 >= len(s) or s[i + 1] not in '\\"n':
                    raise ValueError(f'{where}: bad escape in label value')
                val.append({'\\': '\\', '"': '"', 'n': '\n'}[s[i + 1]])
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == '\n':
                raise ValueError(f'{where}: newline in label value')
            else:
                val.append(c)
                i += 1
        out.append((name, ''.join(val)))
        rest = s[i:].lstrip()
        if rest.startswith(','):
            i = len(s) - len(rest) + 1
        elif rest:
            raise ValueError(f'{where}: junk after label: {rest!r}')
        else:
            break
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f'{where}: repeated label name')
    return out


def check(path):
    problems = []
    types, helps, done, seen, hist = {}, set(), set(), set(), {}
    current = None
    with open(path, encoding='utf-8', newline='') as f:   # a raw carriage return is a label's, not a line end
        text = f.read()
    if text and not text.endswith('\n'):
        problems.append(f'{path}: does not end with a newline')
    for n, line in enumerate(text.split('\n')[:-1], 1):
        where = f'{path}:{n}'
        if not line.strip():
            continue
        if line.startswith('#'):
            m = re.match(r'#\s+(HELP|TYPE)\s+(\S+)(?:\s+(.*))?$', line)
            if not m:
                continue                      # a plain comment
            kind, name, rest = m.group(1), m.group(2), m.group(3) or ''
            if not NAME.match(name):
                problems.append(f'{where}: bad metric name {name!r}')
            if kind == 'TYPE':
                if rest not in TYPES:
                    problems.append(f'{where}: unknown type {rest!r}')
                if name in types:
                    problems.append(f'{where}: second TYPE for {name}')
                if name in done or name == current:
                    problems.append(f'{where}: TYPE for {name} after its samples')
                types[name] = rest
            else:
                if name in helps:
                    problems.append(f'{where}: second HELP for {name}')
                helps.add(name)
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?\s*$', line)
        if not m:
            problems.append(f'{where}: not a sample line: {line!r}')
            continue
        name, value = m.group(1), m.group(4)
        try:
            labels = parse_labels(m.group(3) or '', where)
        except ValueError as e:
            problems.append(str(e))
            continue
        try:
            if value not in ('NaN', '+Inf', '-Inf'):
                float(value)
        except ValueError:
            problems.append(f'{where}: bad value {value!r}')
        family = name
        for suffix in ('_bucket', '_sum', '_count'):
            base = name[:-len(suffix)]
            if name.endswith(suffix) and types.get(base) == 'histogram':
                family = base
        if family != current:
            if family in done:
                problems.append(f'{where}: samples of {family} are not together')
            if current:
                done.add(current)
            current = family
        if family != name:
            problems += check_histogram(where, name[len(family):], labels, value, hist)
        key = (name, tuple(sorted(labels)))
        if key in seen:
            problems.append(f'{where}: repeated series {name}{dict(labels)}')
        seen.add(key)
        if family not in types:
            problems.append(f'{where}: {name} has no TYPE line before it')
        if not name.startswith('commlens_'):
            problems.append(f'{where}: {name} lacks the commlens_ prefix')
        if types.get(family) == 'counter' and not name.endswith('_total'):
            problems.append(f'{where}: counter {name} does not end in _total')
    for key, h in hist.items():
        if h.get('inf') is None:
            problems.append(f'{path}: histogram {dict(key)} has no le="+Inf" bucket')
        elif h.get('count') is not None and h['count'] != h['inf']:
            problems.append(f'{path}: histogram {dict(key)}: _count {h["count"]} != +Inf bucket {h["inf"]}')
    return problems


def check_histogram(where, suffix, labels, value, hist):
    """One _bucket, _sum or _count sample: buckets have an le label, rise with it and end at
    +Inf, which _count equals (checked at the end). hist: per series (labels less le)."""
    rest = tuple(sorted((k, v) for k, v in labels if k != 'le'))
    h = hist.setdefault(rest, {'last_le': None, 'last': None})
    try:
        v = float(value)
    except ValueError:
        return [f'{where}: bad histogram value {value!r}']
    if suffix == '_count':
        h['count'] = v
        return []
    if suffix == '_sum':
        return []
    le = dict(labels).get('le')
    if le is None:
        return [f'{where}: bucket without le']
    bound = float(le)
    out = []
    if h['last_le'] is not None and bound <= h['last_le']:
        out.append(f'{where}: le {le} not above the previous bucket')
    if h['last'] is not None and v < h['last']:
        out.append(f'{where}: bucket count falls ({v} < {h["last"]})')
    h['last_le'], h['last'] = bound, v
    if le == '+Inf':
        h['inf'] = v
    return out


def main():
    problems = []
    for p in sys.argv[1:]:
        problems += check(p)
    for p in problems:
        print(p)
    return 1 if problems or len(sys.argv) < 2 else 0


if __name__ == '__main__':
    sys.exit(main())
