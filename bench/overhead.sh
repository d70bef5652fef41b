#!/usr/bin/env bash
# overhead.sh: measures what commlens costs an AllReduce, on the GPU machine, in one go (~4-7 min).
# Five configurations run interleaved, round-robin, ROUNDS times, in each transport mode: no
# plugin, the null plugin with commlens' default and full masks, commlens default and full.
#
#   bench/overhead.sh [OUTDIR]          (run from the repository root)
#
# Environment (defaults in brackets):
#   CLEX            clex binary                              [.gpu/clex]
#   CL_LIB          commlens plugin                          [.gpu/libnccl-profiler-commlens.so,
#                                                             else build/libnccl-profiler-commlens.so]
#   NULL_LIB        null plugin (make -C bench null)         [.gpu/libnccl-profiler-null.so, else build/…]
#   ROUNDS [3]  MODES ["nvlink socket"]  CONFIGS ["none null-default null-full cl-default cl-full"]
#   CL_DEFAULT_MASK [0xF0F]  CL_FULL_MASK [0x7FFF]  the null plugin's masks, matching commlens'
#   BUDGET_S [420]  no run starts unless it is expected to end within this many seconds
#   RUN_TIMEOUT [90]  a single run is killed after this long
#   NVLINK_ARGS, SOCKET_ARGS, TWONODE_ARGS  clex arguments per mode (sizes, iterations; below)
#   BENCH_NCCL_DEBUG [INFO]  NCCL_DEBUG for the runs (INIT subsystem only: used to check transports)
#   KEEP_TRACES [0]  1 keeps commlens' traces under OUTDIR/traces (they can be large)
# Output: OUTDIR/<mode>/r<round>/<config>/rank<R>.{csv,log}, OUTDIR/overhead.md (also printed).
# A run whose plugin did not load, or that used the wrong transport, is marked INVALID and left
# out of the table.
set -u

OUT=${1:-bench-out/overhead-$(date +%Y%m%d-%H%M%S)}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
pick() { for f in "$@"; do [ -e "$f" ] && { echo "$f"; return; }; done; echo "$1"; }
CLEX=${CLEX:-$(pick .gpu/clex "$root/examples/allreduce/clex")}
CL_LIB=${CL_LIB:-$(pick .gpu/libnccl-profiler-commlens.so "$root/build/libnccl-profiler-commlens.so")}
NULL_LIB=${NULL_LIB:-$(pick .gpu/libnccl-profiler-null.so "$root/build/libnccl-profiler-null.so")}
ROUNDS=${ROUNDS:-3}
MODES=${MODES:-nvlink socket}
CONFIGS=${CONFIGS:-none null-default null-full cl-default cl-full}
CL_DEFAULT_MASK=${CL_DEFAULT_MASK:-0xF0F}
CL_FULL_MASK=${CL_FULL_MASK:-0x7FFF}
BUDGET_S=${BUDGET_S:-420}
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
BENCH_NCCL_DEBUG=${BENCH_NCCL_DEBUG:-INFO}
KEEP_TRACES=${KEEP_TRACES:-0}
# 8 B .. 256 MB by factor 2. Many iterations where they are cheap; --iter-bytes caps iterations
# x size for the big ones (the socket mode moves a few GB/s at best over loopback).
NVLINK_ARGS=${NVLINK_ARGS:---ops allreduce --min-bytes 8 --max-bytes 256M --factor 2 --iters 500 --warmup 20 --iter-bytes 4G --min-iters 20}
SOCKET_ARGS=${SOCKET_ARGS:---ops allreduce --min-bytes 8 --max-bytes 256M --factor 2 --iters 200 --warmup 10 --iter-bytes 512M --min-iters 5}
TWONODE_ARGS=${TWONODE_ARGS:-$SOCKET_ARGS}

die() { echo "overhead.sh: $*" >&2; exit 2; }
abspath() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
[ -x "$CLEX" ] || die "clex not found at '$CLEX' (build: make -C examples/allreduce OUT=\$PWD/.gpu/clex)"
CLEX=$(abspath "$CLEX")
wanted=()
for c in $CONFIGS; do
  case $c in
    none) ;;
    null-*) [ -f "$NULL_LIB" ] || { echo "overhead.sh: no null plugin at '$NULL_LIB': skipping $c" >&2; continue; } ;;
    cl-*) [ -f "$CL_LIB" ] || { echo "overhead.sh: no commlens plugin at '$CL_LIB': skipping $c" >&2; continue; } ;;
    *) die "unknown config '$c'" ;;
  esac
  wanted+=("$c")
done
[ ${#wanted[@]} -gt 0 ] || die "nothing to run"
[ -f "$NULL_LIB" ] && NULL_LIB=$(abspath "$NULL_LIB")
[ -f "$CL_LIB" ] && CL_LIB=$(abspath "$CL_LIB")
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
TRACES=$OUT/traces
mkdir -p "$TRACES"

{
  echo "date: $(date -Is)"
  echo "host: $(hostname)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "gpus: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | tr -s ' \n' ' ')"
  echo "clex: $CLEX"
  echo "commlens: $CL_LIB"
  echo "null: $NULL_LIB (default mask $CL_DEFAULT_MASK, full mask $CL_FULL_MASK)"
  echo "rounds: $ROUNDS, modes: $MODES, configs: ${wanted[*]}"
  for m in $MODES; do
    case $m in nvlink) a=$NVLINK_ARGS ;; socket) a=$SOCKET_ARGS ;; *) a=$TWONODE_ARGS ;; esac
    echo "args $m: $a"
  done
} >"$OUT/meta.txt"

# check_run MODE CONFIG RUNDIR TRACEDIR: prints why a finished run must not count, or nothing.
check_run() {
  local mode=$1 cfg=$2 dir=$3 tdir=$4 log=$3/rank0.log n
  case $cfg in
    null-*)
      [ -s "$dir/nullprof.mark" ] || { echo "null plugin never initialised (NULLPROF_MARK empty)"; return; } ;;
    cl-*)
      n=$(find "$tdir" -name 'commlens-r*.trace.json*' 2>/dev/null | wc -l)
      [ "$n" -ge 1 ] || { echo "commlens wrote no trace into $tdir"; return; } ;;
  esac
  [ "$BENCH_NCCL_DEBUG" = INFO ] || return
  case $mode in
    nvlink) grep -q 'via P2P' "$log" || echo "no 'via P2P' connection in $log" ;;
    *) if grep -Eq 'via (P2P|SHM)' "$log"; then echo "P2P/SHM used in socket mode ($log)"
       elif ! grep -q 'via NET/Socket' "$log"; then echo "no 'via NET/Socket' connection in $log"; fi ;;
  esac
}

# commlens' own end-of-run statistics (tail of each trace), kept even when traces are deleted.
save_stats() {
  local tdir=$1 dest=$2 f
  for f in "$tdir"/commlens-r*.trace.json*; do
    [ -e "$f" ] || continue
    case $f in
      *.gz) gzip -dc "$f" 2>/dev/null | tail -c 4096 ;;
      *) tail -c 4096 "$f" ;;
    esac | tr -d '\n' | grep -o '"commlensStats".*' | sed "s|^|$(basename "$f") |"
    echo "$(basename "$f") bytes $(stat -c %s "$f")"
  done >"$dest"
}

start=$SECONDS
declare -A longest
stopped=""
ncfg=${#wanted[@]}
for ((round = 1; round <= ROUNDS; round++)); do
  for mode in $MODES; do
    case $mode in nvlink) args=$NVLINK_ARGS ;; socket) args=$SOCKET_ARGS ;; twonode) args=$TWONODE_ARGS ;;
      *) die "unknown mode '$mode'" ;; esac
    for ((k = 0; k < ncfg; k++)); do
      cfg=${wanted[$(((k + round - 1) % ncfg))]} # rotate the order each round
      elapsed=$((SECONDS - start))
      expect=${longest[$mode]:-0} # the first run of a mode always starts
      if [ $((elapsed + expect)) -gt "$BUDGET_S" ]; then
        stopped="stopped in round $round at ${elapsed}s: the next $mode run (~${expect}s) would pass BUDGET_S=$BUDGET_S"
        break 3
      fi
      limit=$((BUDGET_S + 30 - elapsed))
      [ "$limit" -gt "$RUN_TIMEOUT" ] && limit=$RUN_TIMEOUT
      [ "$limit" -lt 15 ] && limit=15
      dir=$OUT/$mode/r$round/$cfg
      tdir=$TRACES/$mode/r$round/$cfg
      rm -rf "$dir" "$tdir"
      mkdir -p "$dir" "$tdir"
      t0=$SECONDS
      (
        unset NULLPROF_MASK NULLPROF_MARK COMMLENS_EVENTS COMMLENS_DIR COMMLENS_CUPTI
        export NCCL_DEBUG=$BENCH_NCCL_DEBUG NCCL_DEBUG_SUBSYS=INIT
        case $cfg in
          none) export NCCL_PROFILER_PLUGIN=none ;;
          null-default) export NCCL_PROFILER_PLUGIN=$NULL_LIB NULLPROF_MASK=$CL_DEFAULT_MASK NULLPROF_MARK=$dir/nullprof.mark ;;
          null-full) export NCCL_PROFILER_PLUGIN=$NULL_LIB NULLPROF_MASK=$CL_FULL_MASK NULLPROF_MARK=$dir/nullprof.mark ;;
          cl-default) export NCCL_PROFILER_PLUGIN=$CL_LIB COMMLENS_EVENTS=default COMMLENS_DIR=$tdir ;;
          cl-full) export NCCL_PROFILER_PLUGIN=$CL_LIB COMMLENS_EVENTS=full COMMLENS_DIR=$tdir ;;
          cl-nocupti) export NCCL_PROFILER_PLUGIN=$CL_LIB COMMLENS_EVENTS=default COMMLENS_CUPTI=0 COMMLENS_DIR=$tdir ;;
          cl-cupti) export NCCL_PROFILER_PLUGIN=$CL_LIB COMMLENS_EVENTS=default COMMLENS_CUPTI=kernels COMMLENS_DIR=$tdir ;;
          cl-cupti-full) export NCCL_PROFILER_PLUGIN=$CL_LIB COMMLENS_EVENTS=default COMMLENS_CUPTI=full COMMLENS_DIR=$tdir ;;
        esac
        # shellcheck disable=SC2086 # $args is a list of clex arguments
        CLEX=$CLEX TIMEOUT=$limit exec "$root/examples/run_modes.sh" "$mode" "$dir" $args
      ) >"$dir/run.log" 2>&1
      rc=$?
      took=$((SECONDS - t0))
      [ "$took" -gt "${longest[$mode]:-0}" ] && longest[$mode]=$took
      why=""
      if [ "$rc" -ne 0 ]; then why="run_modes.sh exit $rc (see $dir/run.log)"
      else why=$(check_run "$mode" "$cfg" "$dir" "$tdir"); fi
      case $cfg in cl-*) save_stats "$tdir" "$dir/commlens-stats.txt" ;; esac
      [ "$KEEP_TRACES" = 1 ] || rm -rf "$tdir"
      if [ -n "$why" ]; then echo "$why" >"$dir/INVALID"; status="INVALID: $why"; else status=ok; fi
      printf 'overhead.sh: [%3ds] round %d %-7s %-12s %3ds  %s\n' $((SECONDS - start)) "$round" "$mode" "$cfg" "$took" "$status"
    done
  done
done
[ "$KEEP_TRACES" = 1 ] || rm -rf "$TRACES"
[ -n "$stopped" ] && { echo "overhead.sh: $stopped"; echo "stopped early: $stopped" >>"$OUT/meta.txt"; }

python3 "$here/overhead_table.py" "$OUT" >"$OUT/overhead.md" || die "overhead_table.py failed"
cat "$OUT/overhead.md"
echo "overhead.sh: done in $((SECONDS - start))s; results in $OUT"
