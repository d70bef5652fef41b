#!/bin/sh
# check_outputs.sh: the CLI's outputs for every kept trace directory under test/data/traces/ and
# for one synthetic job (bench/gen_traces.c: late rank, slow channel, proxy steps, NVTX steps,
# clock offsets; deterministic), byte for byte against the goldens in test/data/golden/<dir>/: `commlens report` (text),
# `report --json`, the `report --html` page, and `merge` as Chrome JSON and as Perfetto protobuf.
# Text and JSON goldens are kept plain (a failure shows the diff), the HTML page and the merged
# JSON gzipped (a failure shows the diff of the unpacked files), the pftrace as its sha256 (the
# merged JSON carries the same events: its diff shows what moved).
# The recordings of test/data/real/ are not here: a replay's trace varies run to run (each replay
# process starts its own virtual clock, so ranks' offsets differ, and the GPU lanes and thread
# tracks follow the replay's real pacing); test/abi/test_real_runs.c checks their meaning.
#
# usage: check_outputs.sh CLI            check (prints "golden/outputs: N passed, N failed")
#        check_outputs.sh CLI --update   rewrite the goldens from CLI (only for intended changes)
# Run from the repository root: paths inside the outputs are the relative ones used here.
cli=${1:?usage: check_outputs.sh CLI [--update]}
mode=${2:-check}
case $cli in /*) ;; *) cli=$PWD/$cli ;; esac
cd "$(dirname "$0")/../.." || exit 1
regen="sh test/tools/check_outputs.sh $cli --update"
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

# the synthetic jobs: 4 ranks of 1,500 events, written by one process (pids 1000..1003), on one
# host (one clock), and on four hosts with planted clock offsets (the clock model's intervals)
mkdir -p "$tmp/synth/synthetic-4rank" "$tmp/synth/synthetic-4host"
if ! ${CC:-cc} -O2 -Itest/tools -o "$tmp/gen_traces" bench/gen_traces.c -lz ||
   ! "$tmp/gen_traces" "$tmp/synth/synthetic-4rank" 4 1500 1 ||
   ! "$tmp/gen_traces" "$tmp/synth/synthetic-4host" 4 1500 1 --per-host 1; then
  echo "  FAIL cannot build or run bench/gen_traces.c"; failed=$((failed+1))
fi

# same NAME GOT WANT: one comparison, counted; a diff (or the first differing bytes) on failure
same() {
  if cmp -s "$2" "$3"; then passed=$((passed+1)); return; fi
  failed=$((failed+1))
  echo "  FAIL $1 differs from its golden:"
  diff -u "$3" "$2" | head -n 40 | sed 's/^/    /'
}

for d in test/data/traces/*/ "$tmp/synth/synthetic-4rank/" "$tmp/synth/synthetic-4host/"; do
  d=${d%/}; name=$(basename "$d"); gold=test/data/golden/$name; out=$tmp/out/$name
  mkdir -p "$out"
  if ! outputs "$(dirname "$d")" "$name" "$out"; then
    failed=$((failed+1)); echo "  FAIL $name: the CLI failed:"; sed 's/^/    /' "$out/stderr"; continue
  fi
  if [ "$mode" = --update ]; then
    mkdir -p "$gold"
    cp "$out/report.txt" "$out/report.json" "$gold/"
    gzip -9n <"$out/report.html" >"$gold/report.html.gz"
    gzip -9n <"$out/merge.json" >"$gold/merge.json.gz"
    (cd "$out" && sha256sum merge.pftrace) >"$gold/merge.pftrace.sha256"
    echo "  wrote $gold"; passed=$((passed+1)); continue
  fi
  if [ ! -d "$gold" ]; then failed=$((failed+1)); echo "  FAIL $name: no goldens in $gold"; continue; fi
  same "$name/report.txt" "$out/report.txt" "$gold/report.txt"
  same "$name/report.json" "$out/report.json" "$gold/report.json"
  gunzip <"$gold/report.html.gz" >"$tmp/want.html"; same "$name/report.html" "$out/report.html" "$tmp/want.html"
  gunzip <"$gold/merge.json.gz" >"$tmp/want.json"; same "$name/merge.json" "$out/merge.json" "$tmp/want.json"
  if (cd "$out" && sha256sum -c --status "$OLDPWD/$gold/merge.pftrace.sha256"); then passed=$((passed+1))
  else failed=$((failed+1)); echo "  FAIL $name/merge.pftrace: its sha256 is not $(cut -d' ' -f1 "$gold/merge.pftrace.sha256")"; fi
done
[ "$failed" -eq 0 ] || echo "  if the change is intended, regenerate the goldens: $regen"
echo "golden/outputs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
