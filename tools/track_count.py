#!/usr/bin/env python3
"""track_count.py TRACE...: top-level tracks per rank (process) of commlens traces, as Perfetto
lays them out: per-rank or merged Chrome JSON (.json, .json.gz) and merged pftrace.

JSON: a thread track per (pid, tid) with slices or instants, an async track per (pid, name) of
the b events that open an id (Perfetto's UI shows a process's async tracks of one name as one
track; a child slice on an open id is drawn on its parent's), a counter
track per (pid, name, series). pftrace: the tracks whose parent is a process track; tracks
nested below one of them are counted apart as grouped (collapsed in the UI; lanes of one name
under one parent count once, as the UI merges them).
Prints one line per rank: rank, top-level tracks, then the largest families.
--check also holds slices to Perfetto's importer rules: JSON async b/e per (pid, cat, id) and
pftrace slice begin/end per track, in time order (file order among equal times): every begin
closed, no end without its begin. --max N: a rank with more than N top-level tracks fails.
Exit 0, or 1 when a check or --max failed."""
import gzip, json, re, sys
from collections import Counter, defaultdict


def read_bytes(path):
    with open(path, 'rb') as f:
        data = f.read()
    return gzip.decompress(data) if data[:2] == b'\x1f\x8b' else data


def family(name):
    # lanes and channels folded, so the summary says which kind of track dominates
    name = re.sub(r' lane \d+$', ' lane K', name)
    return re.sub(r'\bch \d+\b', 'ch N', name)


def us_ns(v):
    # as Perfetto's JSON importer reads a ts: llround(us * 1000.0)
    return int(round(float(v) * 1000.0))


def stack_problems(events):
    """events: (track, ts, order, +1 begin / -1 end); the first problem, or None."""
    depth = Counter()
    for track, ts, _, kind in sorted(events, key=lambda e: (str(e[0]), e[1], e[2])):
        if kind < 0 and not depth[track]:
            return 'track %s: an end at %d ns without its begin' % (track, ts)
        depth[track] += kind
    left = [t for t, d in depth.items() if d]
    return 'track %s: a begin never closed' % (left[0],) if left else None


def json_check(evs):
    marks = []
    for i, e in enumerate(evs):
        if e.get('ph') in ('b', 'e'):
            id2 = e.get('id2') or {}
            key = (e.get('pid') if 'local' in id2 else '-', e.get('cat'), json.dumps(id2 or e.get('id')))
            marks.append((key, us_ns(e.get('ts', 0)), i, 1 if e['ph'] == 'b' else -1))
    return stack_problems(marks)


def json_tracks(data, check):
    doc = json.loads(data)
    evs = doc['traceEvents'] if isinstance(doc, dict) else doc
    problem = json_check(evs) if check else None
    names, top, depth = {}, defaultdict(dict), Counter()
    for e in evs:
        if e.get('ph') == 'M' and e.get('name') == 'thread_name':
            names[(e.get('pid'), e.get('tid'))] = e.get('args', {}).get('name', '')
    for e in evs:
        ph, pid = e.get('ph'), e.get('pid')
        if ph in ('X', 'B', 'E', 'i', 'I'):
            key = ('t', e.get('tid'))
            top[pid][key] = names.get((pid, e.get('tid')), 'tid %s' % e.get('tid'))
        elif ph in ('b', 'e'):
            # an async track is named by the slice that opens its id; children share it
            aid = (pid, e.get('cat'), json.dumps(e.get('id2', e.get('id'))))
            if ph == 'b':
                if not depth[aid]:
                    top[pid][('a', e.get('name'))] = e.get('name', '')
                depth[aid] += 1
            elif depth[aid]:
                depth[aid] -= 1
        elif ph == 'n':
            top[pid][('a', e.get('name'))] = e.get('name', '')
        elif ph == 'C':
            for s in e.get('args', {}):
                top[pid][('c', e.get('name'), s)] = e.get('name', '')
    return {pid: (list(t.values()), 0) for pid, t in top.items()}, problem


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i


def fields(b):
    i, n = 0, len(b)
    while i < n:
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], 'little'); i += 8
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], 'little'); i += 4
        elif wt == 2:
            ln, i = varint(b, i); v = b[i:i + ln]; i += ln
        else:
            raise ValueError('wire type %d' % wt)
        yield f, v


def pftrace_tracks(data, check):
    # TracePacket.track_descriptor = 60: uuid 1, parent_uuid 5, name 2, process 3 (pid 1);
    # timestamp = 8, track_event = 11: type 9 (1 begin, 2 end), track_uuid 11
    desc, marks = {}, []
    for order, (f, pkt) in enumerate(fields(data)):
        if f != 1:
            continue
        ts = 0
        for pf, v in fields(pkt):
            if pf == 8:
                ts = v
            if pf == 11 and check:
                te = dict(fields(v))
                if te.get(9) in (1, 2):
                    marks.append((te.get(11, 0), ts, order, 1 if te[9] == 1 else -1))
            if pf != 60:
                continue
            d = {'parent': None, 'name': '', 'pid': None}
            for df, dv in fields(v):
                if df == 1: d['uuid'] = dv
                elif df == 5: d['parent'] = dv
                elif df == 2: d['name'] = dv.decode('utf-8', 'replace')
                elif df == 3:
                    for qf, qv in fields(dv):
                        if qf == 1: d['pid'] = qv
                elif df == 4:
                    for qf, qv in fields(dv):
                        if qf == 5 and not d['name']: d['name'] = qv.decode('utf-8', 'replace')
            desc[d['uuid']] = d   # a later descriptor of the same uuid replaces it
    out = {}
    for u, d in desc.items():
        if d['pid'] is not None:
            out.setdefault(u, ([], 0))
    grouped = defaultdict(set)
    res = defaultdict(list)
    for u, d in desc.items():
        p = d['parent']
        if p in out:
            res[desc[p]['pid']].append(d['name'])
        elif p is not None:
            q = p
            while q in desc and desc[q]['parent'] not in out and desc[q]['parent'] is not None:
                q = desc[q]['parent']
            if q in desc and desc[q]['parent'] in out:
                # lanes of one name under one parent are one track in the UI
                grouped[desc[desc[q]['parent']]['pid']].add((p, d['name']))
    ranks = {desc[u]['pid']: (res[desc[u]['pid']], len(grouped[desc[u]['pid']])) for u in out}
    return ranks, stack_problems(marks) if check else None


def main(argv):
    args, check, limit, status = argv[1:], False, None, 0
    while args and args[0].startswith('--'):
        if args[0] == '--check':
            check, args = True, args[1:]
        elif args[0] == '--max' and len(args) > 1:
            limit, args = int(args[1]), args[2:]
        else:
            break
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in args:
        data = read_bytes(path)
        is_json = data.lstrip()[:1] in (b'{', b'[')
        ranks, problem = json_tracks(data, check) if is_json else pftrace_tracks(data, check)
        if problem:
            print('%s: %s' % (path, problem))
            status = 1
        for pid in sorted(ranks, key=lambda p: (p is None, p if isinstance(p, int) else 0)):
            names, grouped = ranks[pid]
            fams = Counter(family(n) for n in names).most_common(3)
            top = ', '.join('%d %s' % (c, n) for n, c in fams)
            extra = ' (+%d grouped)' % grouped if grouped else ''
            print('%s: rank %s: %d top-level tracks%s; most: %s' % (path, pid, len(names), extra, top))
            if limit is not None and len(names) > limit:
                print('%s: rank %s: more than %d top-level tracks' % (path, pid, limit))
                status = 1
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv))
