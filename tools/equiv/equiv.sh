#!/bin/sh
# equiv.sh: compares the output of two builds of commlens. Every recording under
# test/data/real (real NCCL runs, two ranks each) is replayed through each build's plugin by one
# replay tool with --virtual-clock (host times are the recorded ones), one process per rank;
# then each build's own `commlens report --json` runs on each mode's directory. The canonical
# traces (tools/equiv/canon.py: slices as a sorted multiset with times relative to the first
# host event, ids and addresses of the replaying process removed) and reports must be equal.
#   sh tools/equiv/equiv.sh BUILD_A BUILD_B [OUTDIR]
# BUILD_*: directories holding libnccl-profiler-commlens.so and commlens. The replay tool is
# BUILD_B's commlens-replay (or $REPLAY). Prints one line per mode; exit 1 if anything differs.
# One build against itself differs too (live clock offsets per replayed rank; some collectives
# on their communicator's track in one run, the overlap track in the next): compare with a run
# of BUILD_B against itself (docs/development.md, "Checking a refactor").
set -u
A=${1:?usage: equiv.sh BUILD_A BUILD_B [OUTDIR]}
B=${2:?usage: equiv.sh BUILD_A BUILD_B [OUTDIR]}
OUT=${3:-./commlens-equiv}
top=$(cd "$(dirname "$0")/../.." && pwd)
REPLAY=${REPLAY:-$B/commlens-replay}
CANON="python3 $top/tools/equiv/canon.py"
for f in "$A/libnccl-profiler-commlens.so" "$A/commlens" "$B/libnccl-profiler-commlens.so" "$B/commlens" "$REPLAY"; do
  [ -e "$f" ] || { echo "equiv: $f is missing" >&2; exit 2; }
done
rm -rf "$OUT"; mkdir -p "$OUT"
bad=0
for rec0 in "$top"/test/data/real/*-r0.rec.gz; do
  mode=$(basename "$rec0" -r0.rec.gz | sed 's/.*-//')
  for side in a b; do
    if [ $side = a ]; then bd=$A; else bd=$B; fi
    d=$OUT/$side/$mode
    mkdir -p "$d"
    for r in 0 1; do
      rec=$(echo "$rec0" | sed "s/-r0\.rec\.gz$/-r$r.rec.gz/")
      RANK=$r COMMLENS_DIR=$d COMMLENS_CUPTI=0 COMMLENS_EVENTS=full COMMLENS_SUMMARY=file \
        "$REPLAY" --virtual-clock "$rec" "$bd/libnccl-profiler-commlens.so" 2>"$d/replay-r$r.log" ||
        { echo "$mode: replay of r$r with $bd failed: $(tail -n 2 "$d/replay-r$r.log")"; bad=1; }
      $CANON trace "$d"/commlens-r$r-*.trace.json >"$OUT/$side-$mode-r$r.slices" || bad=1
    done
    "$bd/commlens" report --json "$d" >"$d/report.json" 2>"$d/report.log" || { echo "$mode: report with $bd failed"; bad=1; }
    $CANON report "$d/report.json" >"$OUT/$side-$mode.report" || bad=1
  done
  line="$mode:"
  if cmp -s "$OUT/a-$mode.report" "$OUT/b-$mode.report"; then line="$line report equal"
  else line="$line report DIFFERENT"; bad=1; fi
  for r in 0 1; do
    n=$(grep -c . "$OUT/a-$mode-r$r.slices")
    if cmp -s "$OUT/a-$mode-r$r.slices" "$OUT/b-$mode-r$r.slices"; then line="$line, r$r: $n slices equal"
    else
      plus=$(diff "$OUT/a-$mode-r$r.slices" "$OUT/b-$mode-r$r.slices" | grep -c '^>')
      minus=$(diff "$OUT/a-$mode-r$r.slices" "$OUT/b-$mode-r$r.slices" | grep -c '^<')
      line="$line, r$r: slices DIFFERENT (+$plus/-$minus)"; bad=1
    fi
  done
  echo "$line"
  if ! cmp -s "$OUT/a-$mode.report" "$OUT/b-$mode.report"; then
    diff -u "$OUT/a-$mode.report" "$OUT/b-$mode.report" | head -n 20
  fi
  for r in 0 1; do
    cmp -s "$OUT/a-$mode-r$r.slices" "$OUT/b-$mode-r$r.slices" ||
      diff "$OUT/a-$mode-r$r.slices" "$OUT/b-$mode-r$r.slices" | head -n 6 | cut -c1-240
  done
done
[ $bad -eq 0 ] && echo "equiv: the two builds' output is the same" || echo "equiv: the builds differ (details above; files in $OUT)"
exit $bad
