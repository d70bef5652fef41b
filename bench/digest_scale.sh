#!/bin/sh
# digest_scale.sh: a simulated job of NRANKS ranks (4,096 by default) written as digests by
# bench/gen_traces.c --digest (NCOLL collectives per rank, 8 channels, 8 ranks per host, each
# host its own clock), with a planted straggler (rank NRANKS/3, 3 ms late on every third
# collective) and a planted slow channel (rank NRANKS/2, channel 5, twice the work); times
# `commlens report` on it with /usr/bin/time -v (wall time, peak RSS) and checks that the report
# names both. Not a unit test: the small-scale check is test/tools/test_digest.c.
# usage: sh bench/digest_scale.sh [NRANKS] [NCOLL] [WORKDIR]   (run from the repo root)
set -e
NR=${1:-4096}; NC=${2:-300}; W=${3:-/tmp/commlens-digest-scale}
BUILD=${BUILD:-build}
[ -x "$BUILD/commlens" ] || make -s cli
mkdir -p "$BUILD" "$W/digests"
cc -O2 -I. -Itest/tools -o "$BUILD/gen_traces" bench/gen_traces.c exporters/digest.c common/digest_codec.c common/grow.c -lz
rm -f "$W"/digests/*
echo "generating $NR ranks x $NC collectives as digests in $W/digests"
t0=$(date +%s.%N)
"$BUILD/gen_traces" "$W/digests" "$NR" 0 2 --digest "$NC" --late 3000000 --late-every 3
t1=$(date +%s.%N)
echo "generated $(du -sh "$W/digests" | cut -f1) ($(cat "$W"/digests/* | wc -c) bytes, $(echo "$(cat "$W"/digests/* | wc -c) / ($NR * $NC)" | bc -l | cut -c1-5) bytes per collective per rank) in $(echo "$t1 - $t0" | bc) s"
sync
/usr/bin/time -v "$BUILD/commlens" report "$W/digests" --json >"$W/report.json" 2>"$W/report.time" || { cat "$W/report.time"; exit 1; }
wall=$(grep 'Elapsed (wall clock)' "$W/report.time" | awk '{print $NF}')
rss=$(grep 'Maximum resident set size' "$W/report.time" | awk '{print $NF}')
usr=$(grep 'User time' "$W/report.time" | awk '{print $NF}')
echo "commlens report --json: wall $wall, user ${usr}s, peak RSS $((rss / 1024)) MiB"
python3 - "$W/report.json" "$NR" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
st = [s["rank"] for s in d["verdict"]["stragglers"]]
ch = d["slow_channels"][0]
print("verdict:", d["verdict"]["line"])
print("slowest channel: rank %d channel %d (%s)" % (ch["rank"], ch["channel"], ch["verdict"]))
ok = st == [n // 3] and ch["rank"] == n // 2 and ch["channel"] == 5
print("planted straggler rank %d and slow channel rank %d ch 5: %s" % (n // 3, n // 2, "both named" if ok else "NOT named"))
sys.exit(0 if ok else 1)
PY
