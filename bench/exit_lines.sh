#!/bin/sh
# exit_lines.sh: what each rank of a job prints to stderr at exit, with nothing set but the output
# directory. Replays the recorded 4-rank PyTorch DDP run (test/data/real, NCCL 2.28.9) through
# the plugin, one process per rank as in the job (the plugin's defaults: a digest, default
# events; no GPU here, so no CUPTI), and counts each rank's stderr lines.
#   sh bench/exit_lines.sh LIB [REPLAY]   (REPLAY: commlens-replay, default build/commlens-replay)
# Prints one line per rank ("rank R: N lines, M bytes") and the longest line's length.
set -u
LIB=${1:?usage: sh bench/exit_lines.sh LIB [REPLAY]}
REPLAY=${2:-build/commlens-replay}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/commlens-exit-lines-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
pids=
for r in 0 1 2 3; do
  env -u COMMLENS_SUMMARY RANK=$r COMMLENS_DIR="$tmp/out" COMMLENS_OUTPUT=digest COMMLENS_EVENTS=default \
    "$REPLAY" --fast "$top/test/data/real/nccl2.28.9-h100x1-ddp4-r$r.rec.gz" "$LIB" >"$tmp/out$r" 2>"$tmp/err$r" &
  pids="$pids $!"
done
fail=0
for p in $pids; do wait "$p" || fail=1; done
[ "$fail" -eq 0 ] || { echo "exit_lines: a replay failed" >&2; cat "$tmp"/err* >&2; exit 1; }
for r in 0 1 2 3; do
  echo "rank $r: $(wc -l <"$tmp/err$r") lines, $(wc -c <"$tmp/err$r") bytes, longest $(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$tmp/err$r") characters"
done
