#!/bin/sh
# fleet_scale.sh: how `commlens report` grows with the ranks. Runs bench/digest_scale.sh (a
# simulated job of digests with a planted straggler and slow channel) at 4,096, 8,192, 16,384
# and 32,768 ranks x NCOLL collectives, prints the wall time and peak RSS of each, and fits the
# exponent of time (and of memory) against ranks by least squares on the logs. Fails (exit 1)
# when the time exponent is above MAX_EXP (1.15), when a plant is not named at some size, or
# when a target is missed: the largest size within MAX_S (60 s) and MAX_MIB (2,048 MiB), the
# smallest within MIN_SIZE_S (8 s). FORMAT=text (the default: the report a person reads) or
# json (docs/performance.md gives both). Not part of make test: run it under nice on an
# otherwise quiet machine; each size's files are generated anew and deleted after.
# usage: nice -n 19 sh bench/fleet_scale.sh [WORKDIR] [NCOLL] [SIZES]   (run from the repo root)
set -e
W=${1:-/tmp/commlens-fleet-scale}; NC=${2:-300}; SIZES=${3:-"4096 8192 16384 32768"}
MAX_EXP=${MAX_EXP:-1.15}; MAX_S=${MAX_S:-60}; MAX_MIB=${MAX_MIB:-2048}; MIN_SIZE_S=${MIN_SIZE_S:-8}
export FORMAT=${FORMAT:-text}
mkdir -p "$W"
: >"$W/table"
fail=0
for n in $SIZES; do
  echo "== $n ranks"
  if sh bench/digest_scale.sh "$n" "$NC" "$W/run" | tee "$W/run.log"; then named=yes; else named=NO; fail=1; fi
  line=$(grep '^commlens report' "$W/run.log" || true)
  wall=$(echo "$line" | sed -n 's/.*wall \([0-9.]*\) s.*/\1/p')
  mib=$(echo "$line" | sed -n 's/.*peak RSS \([0-9]*\) MiB.*/\1/p')
  [ -n "$wall" ] && [ -n "$mib" ] || { echo "fleet_scale.sh: no time for $n ranks (see $W/run.log)"; exit 1; }
  echo "$n $wall $mib $named" >>"$W/table"
  find "$W/run/digests" -mindepth 1 -maxdepth 1 -type f -delete
done
python3 - "$W/table" "$MAX_EXP" "$MAX_S" "$MAX_MIB" "$MIN_SIZE_S" "$NC" "$FORMAT" <<'PY' || fail=1
import math, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
max_exp, max_s, max_mib, min_s = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
def fit(xs, ys):   # least-squares slope of log y on log x
    lx = [math.log(x) for x in xs]; ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
n = [int(r[0]) for r in rows]; t = [max(float(r[1]), 0.01) for r in rows]; m = [float(r[2]) for r in rows]
print("\n`commlens report` (%s), %s collectives a rank, planted straggler and slow channel" % (sys.argv[7], sys.argv[6]))
print("| ranks | wall (s) | peak RSS (MiB) | KiB a rank | plants named |")
print("|---:|---:|---:|---:|---|")
for r, a, b, c in zip(n, t, m, rows):
    print("| %s | %.2f | %d | %.1f | %s |" % (format(r, ","), a, b, b * 1024 / r, c[3]))
ok = all(r[3] == "yes" for r in rows)
if len(rows) >= 2:
    et, em = fit(n, t), fit(n, m)
    print("fitted exponent, time against ranks: %.3f (at most %.2f); memory: %.3f" % (et, max_exp, em))
    ok &= et <= max_exp
print("largest (%s ranks): %.2f s (at most %g), %d MiB (at most %g); smallest (%s ranks): %.2f s (at most %g)"
      % (format(n[-1], ","), t[-1], max_s, m[-1], max_mib, format(n[0], ","), t[0], min_s))
ok &= t[-1] <= max_s and m[-1] <= max_mib and t[0] <= min_s
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
exit $fail
