#!/bin/sh
# check_outputs.sh: the CLI's outputs for every kept trace directory under test/data/ (the
# directories holding *.trace.json[.gz]: test/data/traces/*, test/data/verdict/*) and for one
# synthetic job (bench/gen_traces.c: late rank, slow channel, proxy steps, NVTX steps, clock
# offsets; deterministic), byte for byte against the goldens in test/data/golden/<set>/<dir>/:
# `commlens report` (text), `report --json`, the `report --html` page, and `merge` as Chrome
# JSON and as Perfetto protobuf. The text golden is kept plain, the others gzipped while that
# stays under GZ_MAX bytes (a failure shows the diff of the unpacked files), else, and for
# every pftrace, as a sha256 (the merged JSON, or the report, then shows what moved).
# The recordings of test/data/real/ are not here: a replay's trace varies run to run (each
# replay process starts its own virtual clock, so ranks' offsets differ, and the GPU lanes and
# thread tracks follow the replay's real pacing); test/abi/test_real_runs.c checks them.
#
# usage: check_outputs.sh CLI            check (prints "golden/outputs: N passed, N failed")
#        check_outputs.sh CLI --update   rewrite the goldens from CLI (only for intended changes)
cli=${1:?usage: check_outputs.sh CLI [--update]}
mode=${2:-check}
case $cli in /*) ;; *) cli=$PWD/$cli ;; esac
cd "$(dirname "$0")/../.." || exit 1
regen="sh test/tools/check_outputs.sh $cli --update"
GZ_MAX=150000
tmp=$(mktemp -d "${TMPDIR:-/tmp}/commlens-golden-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0

# outputs PARENT NAME OUTDIR: the five outputs of trace directory PARENT/NAME, as files in
# OUTDIR (absolute), read as NAME from PARENT so that the paths they quote do not depend on
# where the checkout lies. The HTML page links each trace by its absolute file:// URL: that
# one prefix (PARENT's real path, not part of the CLI's behaviour) reads "file:///TRACES/".
outputs() {
  (cd "$1" &&
  "$cli" report "$2" >"$3/report.txt" 2>"$3/stderr" &&
  "$cli" report --json "$2" >"$3/report.json" 2>>"$3/stderr" &&
  "$cli" report --html "$3/page.html" "$2" >/dev/null 2>>"$3/stderr" &&
  "$cli" merge "$2" -o "$3/merge.json" >/dev/null 2>>"$3/stderr" &&
  "$cli" merge "$2" -o "$3/merge.pftrace" >/dev/null 2>>"$3/stderr" &&
  python3 -c 'import sys; a = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(a.replace(b"file://" + sys.argv[3].encode() + b"/", b"file:///TRACES/"))' \
    "$3/page.html" "$3/report.html" "$(pwd -P)")
}

# keep FILE GOLDEN_BASE [plain]: writes the golden of FILE as GOLDEN_BASE (plain), .gz or .sha256
keep() {
  rm -f "$2" "$2.gz" "$2.sha256"
  if [ "${3:-}" = plain ]; then cp "$1" "$2"
  elif case $1 in *.pftrace) false ;; esac && [ "$(gzip -9n <"$1" | wc -c)" -le $GZ_MAX ]; then gzip -9n <"$1" >"$2.gz"
  else sha256sum <"$1" | cut -d' ' -f1 >"$2.sha256"; fi
}

# same NAME GOT GOLDEN_BASE: one comparison, counted; a diff on failure where the golden has text
same() {
  if [ -f "$3" ]; then want=$3
  elif [ -f "$3.gz" ]; then gunzip <"$3.gz" >"$tmp/want"; want=$tmp/want
  elif [ -f "$3.sha256" ]; then
    if [ "$(sha256sum <"$2" | cut -d' ' -f1)" = "$(cat "$3.sha256")" ]; then passed=$((passed+1)); return; fi
    failed=$((failed+1)); echo "  FAIL $1: its sha256 is not $(cat "$3.sha256") (kept as a hash only: compare with an older build's output)"
    return
  else failed=$((failed+1)); echo "  FAIL $1: no golden $3[.gz|.sha256]"; return; fi
  if cmp -s "$2" "$want"; then passed=$((passed+1)); return; fi
  failed=$((failed+1))
  echo "  FAIL $1 differs from its golden:"
  diff -u "$want" "$2" | head -n 40 | sed 's/^/    /'
}

# the synthetic jobs: 4 ranks of 1,500 events, written by one process (pids 1000..1003), on one
# host (one clock), and on four hosts with planted clock offsets (the clock model's intervals)
mkdir -p "$tmp/synthetic/synthetic-4rank" "$tmp/synthetic/synthetic-4host"
if ! ${CC:-cc} -O2 -I. -Itest/tools -o "$tmp/gen_traces" bench/gen_traces.c exporters/digest.c common/digest_codec.c common/grow.c -lz ||
   ! "$tmp/gen_traces" "$tmp/synthetic/synthetic-4rank" 4 1500 1 ||
   ! "$tmp/gen_traces" "$tmp/synthetic/synthetic-4host" 4 1500 1 --per-host 1; then
  echo "  FAIL cannot build or run bench/gen_traces.c"; failed=$((failed+1))
fi

dirs=$(for f in test/data/*/*/*.trace.json test/data/*/*/*.trace.json.gz; do [ -f "$f" ] && dirname "$f"; done | sort -u)
for d in $dirs "$tmp/synthetic/synthetic-4rank" "$tmp/synthetic/synthetic-4host"; do
  name=$(basename "$d"); set_=$(basename "$(dirname "$d")"); gold=test/data/golden/$set_/$name; out=$tmp/out/$set_/$name
  mkdir -p "$out"
  if ! outputs "$(dirname "$d")" "$name" "$out"; then
    failed=$((failed+1)); echo "  FAIL $set_/$name: the CLI failed:"; sed 's/^/    /' "$out/stderr"; continue
  fi
  if [ "$mode" = --update ]; then
    mkdir -p "$gold"
    keep "$out/report.txt" "$gold/report.txt" plain
    for f in report.json report.html merge.json merge.pftrace; do keep "$out/$f" "$gold/$f"; done
    echo "  wrote $gold"; passed=$((passed+1)); continue
  fi
  if [ ! -d "$gold" ]; then failed=$((failed+1)); echo "  FAIL $set_/$name: no goldens in $gold"; continue; fi
  for f in report.txt report.json report.html merge.json merge.pftrace; do same "$set_/$name/$f" "$out/$f" "$gold/$f"; done
done
[ "$failed" -eq 0 ] || echo "  if the change is intended, regenerate the goldens: $regen"
echo "golden/outputs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
