#!/bin/sh
# digest_scale.sh: a simulated job of NRANKS ranks (4,096 by default) written as digests by
# bench/gen_traces.c --digest (NCOLL collectives per rank, 8 channels, 8 ranks per host, each
# host its own clock), with a planted straggler (rank NRANKS/3, 3 ms late on every third
# collective) and a planted slow channel (rank NRANKS/2, channel 5, twice the work); times
# `commlens report` on it with /usr/bin/time -v (wall time, peak RSS) and checks that the report
# names both (exit 1 if not). FORMAT=json (the default) times `report --json` and reads the
# names from the JSON; FORMAT=text times the text report and reads them from its verdict line
# and its slow-channel table. Not a unit test: the small-scale check is test/tools/test_digest.c;
# bench/fleet_scale.sh runs this at four sizes and fits the growth.
# usage: sh bench/digest_scale.sh [NRANKS] [NCOLL] [WORKDIR]   (run from the repo root)
set -e
NR=${1:-4096}; NC=${2:-300}; W=${3:-/tmp/commlens-digest-scale}
BUILD=${BUILD:-build}; FORMAT=${FORMAT:-json}
case "$FORMAT" in json|text) ;; *) echo "digest_scale.sh: FORMAT must be json or text" >&2; exit 2 ;; esac
[ -x "$BUILD/commlens" ] || make -s cli
mkdir -p "$BUILD" "$W/digests"
cc -O2 -I. -Itest/tools -o "$BUILD/gen_traces" bench/gen_traces.c exporters/digest.c common/digest_codec.c common/grow.c -lz
# no argument lists of every file: 32,768 names overflow one
find "$W/digests" -mindepth 1 -maxdepth 1 -type f -delete
echo "generating $NR ranks x $NC collectives as digests in $W/digests"
t0=$(date +%s.%N)
"$BUILD/gen_traces" "$W/digests" "$NR" 0 2 --digest "$NC" --late 3000000 --late-every 3
t1=$(date +%s.%N)
bytes=$(find "$W/digests" -mindepth 1 -maxdepth 1 -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
echo "generated $(du -sh "$W/digests" | cut -f1) ($bytes bytes, $(echo "$bytes / ($NR * $NC)" | bc -l | cut -c1-5) bytes per collective per rank) in $(echo "$t1 - $t0" | bc) s"
sync
if [ "$FORMAT" = json ]; then out="$W/report.json"; set -- --json; else out="$W/report.txt"; set --; fi
/usr/bin/time -v "$BUILD/commlens" report "$W/digests" "$@" >"$out" 2>"$W/report.time" || { cat "$W/report.time"; exit 1; }
# "Elapsed (wall clock) time (h:mm:ss or m:ss): 0:24.68" -> seconds
wall=$(grep 'Elapsed (wall clock)' "$W/report.time" | awk '{ n = split($NF, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }')
rss=$(grep 'Maximum resident set size' "$W/report.time" | awk '{print $NF}')
usr=$(grep 'User time' "$W/report.time" | awk '{print $NF}')
echo "commlens report ($FORMAT): wall ${wall} s, user ${usr} s, peak RSS $((rss / 1024)) MiB"
python3 - "$out" "$NR" "$FORMAT" <<'PY'
import json, re, sys
path, n, fmt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if fmt == "json":
    d = json.load(open(path))
    st = [s["rank"] for s in d["verdict"]["stragglers"]]
    ch = d["slow_channels"][0]
    line, ch_rank, ch_no, ch_say = d["verdict"]["line"], ch["rank"], ch["channel"], ch["verdict"]
    named = st == [n // 3]
else:
    text = open(path).read().splitlines()
    line = text[0][len("Verdict: "):] if text and text[0].startswith("Verdict: ") else ""
    named = re.match(r"rank %d \(host [^)]*\) is a straggler" % (n // 3), line) is not None
    at = next(i for i, l in enumerate(text) if l.startswith("Slow channels"))
    row = text[at + 2].split()   # the table's first row: rank, channel, comm, ...
    ch_rank, ch_no = int(row[0]), int(row[1])
    ch_say = re.search(r"(waited on peer|waited on local GPU|no waits|-)\s*$", text[at + 2]).group(1)
print("verdict:", line)
print("slowest channel: rank %d channel %d (%s)" % (ch_rank, ch_no, ch_say))
ok = named and ch_rank == n // 2 and ch_no == 5
print("planted straggler rank %d and slow channel rank %d ch 5: %s" % (n // 3, n // 2, "both named" if ok else "NOT named"))
sys.exit(0 if ok else 1)
PY
