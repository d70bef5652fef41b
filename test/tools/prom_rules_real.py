#!/usr/bin/env python3
"""prom_rules_real.py RULES DATA_DIR: the shipped Prometheus rules on the real runs of
test/data/verdict (one-GPU and two-GPU PyTorch jobs with a planted truth).

Each rank's trace gives its collectives' GPU spans (coll_gpu slices: kernel start to end, as
the plugin counts them in commlens_comm_kernel_seconds); they become the series a 1 s scrape
of COMMLENS_PROM_S=1 files would hold (cumulative count and sum of the collectives ended by each
second; runs under 14 s are repeated, as the same steps again). promtool then evaluates the
rules on them:
  - a clean run fires CommlensStraggler at no second of the run;
  - a run with a persistent, periodic or GPU-side straggler fires it, at the run's last second,
    for exactly the planted rank(s);
  - one-off stalls are left out (a 10 s window may or may not hold the stall at its end).
Prints one line per run and "tools/prom_rules_real: N passed, N failed"; exit 1 on a failure."""
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile

MIN_S = 14   # seconds of collectives the rules see (runs shorter are repeated)


def spans(path):
    with gzip.open(path, 'rt', encoding='utf-8') as f:
        t = json.load(f)
    ev = t['traceEvents'] if isinstance(t, dict) else t
    rank = t['commlens']['rank']
    out = [(e['ts'] + e['dur'], e['dur'] / 1e6, e['args']['comm']) for e in ev
           if e.get('ph') == 'X' and e.get('cat') == 'coll_gpu']
    return rank, out


def series_for(run, paths):
    """(input_series list, last second, ranks): per rank, count and sum by 1 s step."""
    ranks = {}
    for p in paths:
        r, s = spans(p)
        ranks[r] = s
    t0 = min(e for s in ranks.values() for e, _, _ in s)
    t_end = max(e for s in ranks.values() for e, _, _ in s)
    # a run shorter than the rules need (10 s window, 3 s held) goes on as the same steps again,
    # as a training job does: every rank's collectives repeated one run length later
    length = t_end - t0 + 1000.0
    copies = max(1, int(-(-MIN_S * 1e6 // length)))
    for r in ranks:
        ranks[r] = [(e + c * length, d, cm) for c in range(copies) for e, d, cm in ranks[r]]
    t_end += (copies - 1) * length
    nsec = int((t_end - t0) // 1e6) + 2
    out = []
    for r, s in sorted(ranks.items()):
        comm = s[0][2].replace('0x', '').rjust(16, '0')
        counts, sums = [], []
        for k in range(nsec + 1):
            cut = t0 + k * 1e6
            done = [d for e, d, _ in s if e <= cut]
            counts.append(str(len(done)))
            sums.append('%.9f' % sum(done))
        lab = '{job="%s",comm="%s",rank="%d",host="vm"}' % (run, comm, r)
        out.append({'series': 'commlens_comm_kernel_seconds_count' + lab, 'values': ' '.join(counts)})
        out.append({'series': 'commlens_comm_kernel_seconds_sum' + lab, 'values': ' '.join(sums)})
    return out, nsec, sorted(ranks)


def expected(manifest):
    """Planted ranks a 10 s window must name, or None for a run left out: one-off stalls, and
    every rank of the job late in turn (two ranks taking turns: each rank's collectives are as
    long as its peer's, so no rank's aggregates stand out; the CLI's verdict names them)."""
    planted = manifest.get('planted') or []
    if any(p.get('one_off') or 'step' in p for p in planted):
        return None
    if len({p['rank'] for p in planted}) >= int(manifest.get('ranks') or 0) > 0:
        return None
    return sorted(p['rank'] for p in planted)


def main():
    rules, data = os.path.abspath(sys.argv[1]), sys.argv[2]
    passed = failed = 0
    for run_dir in sorted(glob.glob(os.path.join(data, '*'))):
        mpath = os.path.join(run_dir, 'manifest.json')
        if not os.path.isfile(mpath):
            continue
        run = os.path.basename(run_dir)
        with open(mpath, encoding='utf-8') as f:
            want = expected(json.load(f))
        if want is None:
            print('  %s: one-off stall, or every rank late in turn: left out' % run)
            continue
        traces = sorted(glob.glob(os.path.join(run_dir, '*.trace.json*')))
        if not traces:   # kept as digests (the CLI's verdict is held to them by test_verdict_data)
            print('  %s: no traces (digests): left out' % run)
            continue
        series, nsec, _ = series_for(run, traces)
        if want:   # the planted ranks at the last second of the run (labels only: the
                   # annotations carry the measured lateness)
            tests = {'promql_expr_test': [{
                'expr': 'count by (rank) (ALERTS{alertname="CommlensStraggler",alertstate="firing"})',
                'eval_time': '%ds' % nsec,
                'exp_samples': [{'labels': '{rank="%d"}' % r, 'value': 1} for r in want]}]}
        else:      # nothing, at every second
            tests = {'alert_rule_test': [{'eval_time': '%ds' % k, 'alertname': 'CommlensStraggler', 'exp_alerts': []}
                                         for k in range(1, nsec + 1)]}
        doc = {'rule_files': [rules], 'evaluation_interval': '1s',
               'tests': [dict({'interval': '1s', 'input_series': series}, **tests)]}
        with tempfile.NamedTemporaryFile('w', suffix='.yml', delete=False) as f:
            json.dump(doc, f)          # JSON is YAML
            tmp = f.name
        res = subprocess.run(['promtool', 'test', 'rules', tmp], capture_output=True, text=True)
        os.unlink(tmp)
        if res.returncode == 0:
            passed += 1
            print('  %s: %s' % (run, 'names rank(s) %s' % want if want else 'fires nothing'))
        else:
            failed += 1
            print('  FAIL %s: want %s\n%s' % (run, want or 'nothing', (res.stdout + res.stderr)[-1500:]))
    print('tools/prom_rules_real: %d passed, %d failed' % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == '__main__':
    sys.exit(main())
