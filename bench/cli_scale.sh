#!/bin/sh
# cli_scale.sh: generates a 64-rank job of ~1M events per rank and times `commlens report`
# and `commlens merge` (JSON, then Perfetto protobuf) on it with /usr/bin/time -v (wall time,
# peak RSS), and prints the two merged files' sizes.
# usage: sh bench/cli_scale.sh [NRANKS] [EVENTS_PER_RANK] [WORKDIR]   (run from the repo root)
set -e
NR=${1:-64}; EV=${2:-1000000}; W=${3:-/tmp/commlens-scale}
BUILD=${BUILD:-build}
[ -x "$BUILD/commlens" ] || make -s cli
mkdir -p "$BUILD" "$W/traces"
cc -O2 -I. -Itest/tools -o "$BUILD/gen_traces" bench/gen_traces.c exporters/digest.c common/digest_codec.c common/grow.c -lz
rm -f "$W"/traces/* "$W"/merged.json "$W"/merged.pftrace
echo "generating $NR ranks x $EV events in $W/traces"
t0=$(date +%s.%N)
"$BUILD/gen_traces" "$W/traces" "$NR" "$EV" 2
t1=$(date +%s.%N)
echo "generated $(du -sh "$W/traces" | cut -f1) in $(echo "$t1 - $t0" | bc) s"
tv() {  # label, command...
  label=$1; shift
  /usr/bin/time -v "$@" 2>"$W/$label.time" >"$W/$label.out" || { cat "$W/$label.time"; exit 1; }
  wall=$(grep 'Elapsed (wall clock)' "$W/$label.time" | awk '{print $NF}')
  rss=$(grep 'Maximum resident set size' "$W/$label.time" | awk '{print $NF}')
  usr=$(grep 'User time' "$W/$label.time" | awk '{print $NF}')
  sys=$(grep 'System time' "$W/$label.time" | awk '{print $NF}')
  echo "$label: wall $wall, user ${usr}s, sys ${sys}s, peak RSS $((rss / 1024)) MiB"
}
sync
tv report "$BUILD/commlens" report "$W/traces"
tv report_json "$BUILD/commlens" report "$W/traces" --json
tv merge "$BUILD/commlens" merge "$W/traces" -o "$W/merged.json"
grep 'wrote' "$W/merge.time" || true
tv merge_pftrace "$BUILD/commlens" merge "$W/traces" -o "$W/merged.pftrace"
grep 'wrote' "$W/merge_pftrace.time" || true
echo "merged sizes: JSON $(stat -c %s "$W/merged.json") bytes, pftrace $(stat -c %s "$W/merged.pftrace") bytes"
gzip -c "$W/merged.pftrace" | wc -c | xargs echo "pftrace gzipped (gzip -6):"
EV_TOTAL=$(grep -h '"events":' "$W/report_json.out" | awk -F: '{s+=$2} END {print s}')
echo "events parsed per pass: $EV_TOTAL"
head -n 30 "$W/report.out"
