#!/usr/bin/env python3
"""replay_steady.py ROUNDS VARIANT...: the plugin's CPU time a collective on this host's CPU.

VARIANT is name=LIB[,pin=CPUS][,env=K:V;K:V] (LIB a plugin .so: commlens builds, the null plugin).
Each round replays a recorded NCCL stream (test/data/real, REC) in K1 and K2 copies, paced evenly
over 8 s with bursts under 20 us kept whole (`bench-replay-cost --child LIB STREAM FAKE 0
8:20000`, the default's settings: digest only, CUPTI sampled through the fake CUPTI, one 50 ms
window at the first operation). What a collective costs is the slope between the two lengths:
  writer  the plugin's own threads' CPU (process CPU less the replay's threads'), ns
  launch  the time inside the plugin's calls on the replaying threads, ns, with the replay's
          two clock reads a call in it: only its difference to the null plugin's is the plugin's
(the arithmetic of bench/replay_cost.c's run_child, less its clock-pair correction).
The slope divides the runs' noise (a few ms of CPU between two runs of one stream) by the
collectives between the lengths: K1=32, K2=480 (the default) has three times the collectives of
32 and 160, and a third of that noise. The variants run in a different order each round (rotated):
on an H200 host's CPU, of two libraries with the same code on the replaying threads, the
one run second read 73 ns more a collective there (median of 5 rounds in one fixed order). Prints each
round, then per variant the median and range, and each variant's median paired difference to
the first variant's round by round, and, with a variant named `null`, each other's writer plus
its launch over the null plugin's in the same round (the plugin's CPU a collective).

Environment: BUILD (bench-replay-cost, libcommlens-fakecupti.so; default ./build), REC (the
recording's name; default the 2-GPU NVLink one), ABI (5), K1, K2, TMPD (scratch; /tmp/steady),
COMMLENS_* of a variant's env. Runs on a GPU host or any CPU; needs no GPU."""
import os, shutil, statistics, subprocess, sys, tempfile

ROOT = os.environ.get('ROOT', os.getcwd())
BUILD = os.environ.get('BUILD', ROOT + '/build')
REPLAY = BUILD + '/bench-replay-cost'
FAKE_CUPTI = BUILD + '/libcommlens-fakecupti.so'
REC = ROOT + '/test/data/real/' + os.environ.get('REC', 'nccl2.28.3-h200x2-nvlink-r0') + '.rec.gz'
ABI = os.environ.get('ABI', '5')
TMPD = os.environ.get('TMPD', '/tmp/steady')
K1, K2 = int(os.environ.get('K1', '32')), int(os.environ.get('K2', '480'))


def make_streams():
    os.makedirs(TMPD, exist_ok=True)
    streams, units = {}, {}
    for k in (K1, K2):
        streams[k] = '%s/w%d_%s.rec.gz' % (TMPD, k, ABI)
        out = subprocess.run([REPLAY, '--make-stream', REC, streams[k], str(k), ABI],
                             capture_output=True, text=True, check=True).stdout.split()
        units[k] = int(out[0]) + int(out[2])   # collectives and p2p operations
    return streams, units


def replay(v, stream):
    """(writer ns, launch ns) of one paced replay, or None."""
    d = tempfile.mkdtemp(dir=TMPD)
    env = dict(os.environ, COMMLENS_DIR=d, COMMLENS_OUTPUT='digest', COMMLENS_CUPTI_LIB=FAKE_CUPTI,
               COMMLENS_CUPTI='sampled', COMMLENS_CUPTI_SAMPLE='0.05:3600')
    env.update(v['env'])
    pre = ['taskset', '-c', v['pin']] if v.get('pin') else []
    out = subprocess.run(pre + ['sh', '-c', 'exec "$@" 3>&1 >/dev/null 2>&1', 'x', REPLAY, '--child', v['lib'],
                                stream, FAKE_CUPTI, '0', '8:20000'], env=env, capture_output=True, text=True).stdout
    shutil.rmtree(d, ignore_errors=True)
    f = out.split()
    try:
        x = {f[i]: int(f[i + 1]) for i in range(1, len(f) - 1, 2)}
        # everything not on the main thread or the replaying threads, and the main thread's exit
        writer = (x['total_cpu_ns'] - x['main_final_ns'] - x['threads_cpu_ns']) + (x['main_final_ns'] - x['main_pre_ns'])
        launch = x['plugin_ns'] / x['calls'] * (x['calls'] + x['preempted'])
    except (KeyError, ValueError, ZeroDivisionError, IndexError):
        print('unreadable result:', out.strip()[:200], file=sys.stderr)
        return None
    return writer, launch


def parse_variant(arg):
    name, rest = arg.split('=', 1)
    parts = rest.split(',')
    v = {'name': name, 'lib': parts[0], 'env': {}}
    for p in parts[1:]:
        if p.startswith('pin='):
            v['pin'] = p[4:]
        elif p.startswith('env='):
            for kv in p[4:].split(';'):
                k, val = kv.split(':', 1)
                v['env'][k] = val
    return v


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    rounds = int(sys.argv[1])
    variants = [parse_variant(a) for a in sys.argv[2:]]
    streams, units = make_streams()
    per = units[K2] - units[K1]
    res = {v['name']: {} for v in variants}   # name -> round -> (writer, launch) a collective
    for i in range(rounds):
        k = i % len(variants)
        for v in variants[k:] + variants[:k]:
            a, z = replay(v, streams[K1]), replay(v, streams[K2])
            if a and z:
                res[v['name']][i] = ((z[0] - a[0]) / per, (z[1] - a[1]) / per)
        print('round', i, ' '.join('%s %.0f/%.0f' % (n, *r[i]) for n, r in res.items() if i in r), flush=True)
    first = variants[0]['name']
    for v in variants:
        r = res[v['name']]
        if not r:
            continue
        w = [x[0] for x in r.values()]
        la = [x[1] for x in r.values()]
        line = '%-12s writer %5.0f ns (%.0f-%.0f)  launch %5.0f (%.0f-%.0f)  n=%d' % (
            v['name'], statistics.median(w), min(w), max(w), statistics.median(la), min(la), max(la), len(r))
        both = [i for i in r if i in res[first]]
        if v['name'] != first and both:
            dw = [r[i][0] - res[first][i][0] for i in both]
            dl = [r[i][1] - res[first][i][1] for i in both]
            line += '  paired to %s: writer %+.0f, launch %+.0f (medians of %d)' % (
                first, statistics.median(dw), statistics.median(dl), len(both))
        print(line)
    # the headline figure: the plugin's CPU a collective, its writer and its time on the
    # replaying threads over the null plugin's in the same round
    if 'null' in res:
        for v in variants:
            r = res[v['name']]
            both = [i for i in r if i in res['null']]
            if v['name'] == 'null' or not both:
                continue
            tot = sorted(r[i][0] + r[i][1] - res['null'][i][1] for i in both)
            print('%-12s plugin CPU a collective (writer + launch over null, per round) %5.0f ns (%.0f-%.0f)  n=%d' % (
                v['name'], statistics.median(tot), tot[0], tot[-1], len(tot)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
