#!/usr/bin/env python3
"""track_count.py TRACE...: top-level tracks per rank (process) of commlens traces, as Perfetto
lays them out: per-rank or merged Chrome JSON (.json, .json.gz) and merged pftrace.

JSON: a thread track per (pid, tid) with slices or instants, an async track per (pid, name) of
the b events that open an id (Perfetto's UI shows a process's async tracks of one name as one
track; a child slice on an open id is drawn on its parent's), a counter
track per (pid, name, series). pftrace: the tracks whose parent is a process track; tracks
nested below one of them are counted apart as grouped (collapsed in the UI).
Prints one line per rank: rank, top-level tracks, then the largest families; exit 0."""
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


def json_tracks(data):
    doc = json.loads(data)
    evs = doc['traceEvents'] if isinstance(doc, dict) else doc
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
    return {pid: (list(t.values()), 0) for pid, t in top.items()}


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


def pftrace_tracks(data):
    # TracePacket.track_descriptor = 60: uuid 1, parent_uuid 5, name 2, process 3 (pid 1)
    desc = {}
    for f, pkt in fields(data):
        if f != 1:
            continue
        for pf, v in fields(pkt):
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
    grouped = Counter()
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
                grouped[desc[desc[q]['parent']]['pid']] += 1
    return {desc[u]['pid']: (res[desc[u]['pid']], grouped[desc[u]['pid']]) for u in out}


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in argv[1:]:
        data = read_bytes(path)
        ranks = json_tracks(data) if data.lstrip()[:1] in (b'{', b'[') else pftrace_tracks(data)
        for pid in sorted(ranks, key=lambda p: (p is None, p if isinstance(p, int) else 0)):
            names, grouped = ranks[pid]
            fams = Counter(family(n) for n in names).most_common(3)
            top = ', '.join('%d %s' % (c, n) for n, c in fams)
            extra = ' (+%d grouped)' % grouped if grouped else ''
            print('%s: rank %s: %d top-level tracks%s; most: %s' % (path, pid, len(names), extra, top))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
