#!/bin/sh
# demo.sh: `make demo`. With a GPU (and nvcc): builds the example NCCL job (examples/allreduce)
# and runs it over NVLink with commlens loaded. Without one: replays the real two-rank NCCL
# runs recorded on 2x H200 (test/data/real) through the plugin, one process per rank, at the
# recorded pace. Then, either way: `commlens report` (text, and the HTML page with its charts,
# plus a screenshot of it where chromium is installed) and `commlens merge` on the traces, with the
# CLI built here or else an installed one (the wheel's); it names only the files it wrote.
#   sh examples/demo.sh BUILD_DIR     (absolute; holds the plugin, commlens, commlens-replay)
# Everything lands in ./commlens-demo. POSIX sh (dash). Exit status non-zero if a step failed.
set -u
B=${1:?usage: sh examples/demo.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
OUT=./commlens-demo
LIB=$B/libnccl-profiler-commlens.so
CLI=$B/commlens
REPLAY=$B/commlens-replay
REAL=$top/test/data/real
CUDA=${CUDA:-/usr/local/cuda}
fail=0
modes=
htmls=
mergeds=

say() { printf '%s\n' "$*"; }
# screenshot HTML PNG: headless chromium (tools/screenshot.sh); silent, non-zero if it failed
screenshot() { sh "$top/tools/screenshot.sh" "$1" "$2"; }
chromium=$(command -v chromium || command -v chromium-browser || true)
die() { say "demo: $*" >&2; exit 1; }
indent() { sed 's/^/    /'; }
[ -e "$LIB" ] || die "$LIB is missing (run make demo)"
# the CLI: the one built here; else an installed one (the wheel: `commlens` on PATH, or the module)
have_cli=1
if [ -x "$CLI" ]; then cli() { "$CLI" "$@"; }
elif command -v commlens >/dev/null 2>&1; then
  CLI=$(command -v commlens); cli() { "$CLI" "$@"; }
  say "commlens demo: the CLI was not built here (see make's message); using the installed $CLI ($(cli --version))"
elif python3 -c 'import commlens' >/dev/null 2>&1; then
  cli() { python3 -m commlens "$@"; }
  say "commlens demo: the CLI was not built here (see make's message); using python3 -m commlens ($(cli --version))"
else
  have_cli=0
  say "commlens demo: no commlens CLI (not built here: see make's message; none installed: pip install the wheel"
  say "  from make wheel); showing the per-rank summaries instead of the report"
fi

rm -rf "$OUT/traces" "$OUT/nvlink" "$OUT/socket" "$OUT"/merged-*.json "$OUT"/report-*.txt "$OUT"/merge-*.log \
  "$OUT"/replay-*.log "$OUT"/report-*.html "$OUT"/report-*.png "$OUT"/report-*.log
mkdir -p "$OUT" || die "cannot create $OUT"

# ---- a usable GPU: nvidia-smi lists at least one, and nvcc can build the example ----
ngpu=0
if command -v nvidia-smi >/dev/null 2>&1 && smi=$(nvidia-smi -L 2>/dev/null); then
  ngpu=$(printf '%s\n' "$smi" | grep -c '^GPU ')
fi
NVCC=
if [ -x "$CUDA/bin/nvcc" ]; then NVCC=$CUDA/bin/nvcc; elif command -v nvcc >/dev/null 2>&1; then NVCC=$(command -v nvcc); fi

if [ "$ngpu" -ge 1 ] && [ -n "$NVCC" ]; then
  # one GPU: two ranks still, sharing it as two emulated nodes over sockets (run_modes.sh twonode)
  mode=nvlink; how="over NVLink"
  [ "$ngpu" -lt 2 ] && { mode=twonode; how="sharing GPU 0 as two emulated nodes over sockets"; }
  say "commlens demo: $ngpu GPU(s) found; running the example job (examples/allreduce) on 2 ranks $how"
  if ! make -s -C "$here/allreduce" OUT="$B/clex" NVCC="$NVCC" CUDA="$CUDA" >"$OUT/build.log" 2>&1; then
    tail -n 15 "$OUT/build.log"; die "building the example failed (log: $OUT/build.log)"
  fi
  export NCCL_NVLS_ENABLE=0
  # both outputs: the trace to open in Perfetto, the digest (the default) beside it
  if NCCL_PROFILER_PLUGIN=$LIB COMMLENS_DIR=$OUT/traces COMMLENS_CUPTI=1 COMMLENS_SUMMARY=file \
     COMMLENS_OUTPUT=${COMMLENS_OUTPUT:-both} \
     CLEX=$B/clex NRANKS=2 bash "$here/run_modes.sh" $mode "$OUT/nvlink" \
       --ops allreduce,allgather,sendrecv --min-bytes 1K --max-bytes 64M --factor 8 --iters 10 \
       --compute overlap --compute-us 300; then
    say "  job finished; rank logs in $OUT/nvlink/"
  else
    say "  the job failed; last lines of its rank logs:"; tail -n 5 "$OUT"/nvlink/rank*.log 2>/dev/null | indent
    fail=1
  fi
  modes="$mode:$OUT/traces"
else
  if [ "$ngpu" -ge 1 ]; then why="no nvcc"; else why="no usable GPU"; fi
  say "commlens demo: $why; replaying the real 2-rank NCCL 2.28.3 runs recorded on 2x H200"
  say "  ($REAL) through the plugin: one process per rank, at the recorded pace"
  [ -x "$REPLAY" ] || die "$REPLAY is missing (make replay; it needs json-c and zlib)"
  for mode in nvlink socket; do
    pids=
    for r in 0 1; do
      rec=$REAL/nccl2.28.3-h200x2-$mode-r$r.rec.gz
      [ -r "$rec" ] || die "missing recording $rec"
      RANK=$r COMMLENS_DIR=$OUT/$mode COMMLENS_CUPTI=0 COMMLENS_EVENTS=full COMMLENS_SUMMARY=file \
        "$REPLAY" "$rec" "$LIB" 2>"$OUT/replay-$mode-r$r.log" &
      pids="$pids $!"
    done
    for p in $pids; do wait "$p" || { say "  replay of $mode failed: $(tail -n 3 "$OUT"/replay-$mode-r*.log)"; fail=1; }; done
    modes="$modes $mode:$OUT/$mode"
  done
fi

# ---- report and merge every trace directory ----
for m in $modes; do
  mode=${m%%:*}; dir=${m#*:}
  merged=$OUT/merged-$mode.json
  say ""
  say "== $mode"
  traces=$(ls "$dir"/*.trace.json "$dir"/*.trace.json.gz 2>/dev/null)
  if [ -z "$traces" ]; then say "  no traces in $dir"; fail=1; continue; fi
  if [ "$have_cli" -eq 0 ]; then
    say "  per-rank traces:    $(printf '%s\n' "$traces" | tr '\n' ' ')"
    for s in "$dir"/*.summary.txt; do [ -r "$s" ] && { say "  $s:"; head -n 12 "$s" | indent; }; done
    say "  (commlens report / merge need the CLI: make cli where json-c is installed, or pip install the wheel"
    say "   that make wheel builds there)"
    continue
  fi
  html=$(cd "$OUT" && pwd)/report-$mode.html
  if cli report "$dir" --html "$html" >"$OUT/report-$mode.txt" 2>"$OUT/report-$mode.log" && [ -s "$html" ]; then
    htmls="$htmls $html"
    shot=
    if [ -z "$chromium" ]; then shot="  (no chromium: no screenshot)"
    elif screenshot "$html" "${html%.html}.png"; then shot="  screenshot: ${html%.html}.png"
    else shot="  (chromium could not take a screenshot)"; fi
    say "  HTML report:        $html$shot"
    say "  per-rank traces:    $(printf '%s\n' "$traces" | tr '\n' ' ')"
    say "  per-rank summaries: $(ls "$dir"/*.summary.txt 2>/dev/null | tr '\n' ' ')"
    say "  report:             $OUT/report-$mode.txt  (commlens report $dir), first lines:"
    grep -v '^ *$' "$OUT/report-$mode.txt" | head -n 9 | indent
  else
    say "  commlens report $dir failed:"; tail -n 5 "$OUT/report-$mode.txt" "$OUT/report-$mode.log" | indent; fail=1
  fi
  if cli merge "$dir" -o "$merged" >"$OUT/merge-$mode.log" 2>&1 && [ -s "$merged" ]; then
    mergeds="$mergeds $merged"
    say "  merged trace:       $merged  ($(sed -n 's/.*wrote [^:]*: //p' "$OUT/merge-$mode.log" | head -n 1))"
  else
    say "  commlens merge $dir failed:"; tail -n 5 "$OUT/merge-$mode.log" | indent; fail=1
  fi
done
say ""
# only what this run wrote
[ -n "$htmls" ] && say "open the HTML reports in any browser (self-contained, offline):$htmls"
[ -n "$mergeds" ] && say "open the merged traces (every rank on one clock) at https://ui.perfetto.dev:$mergeds"
[ "$fail" -eq 0 ] || say "demo: some steps failed (see above)" >&2
exit "$fail"
