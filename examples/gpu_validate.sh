#!/usr/bin/env bash
# gpu_validate.sh: the end-to-end checks of commlens on a 2-GPU machine, in one go:
#   hidden vs exposed communication (CUPTI), a straggler rank, full events (KernelCh + CUPTI),
#   a PyTorch DDP job, the cost of CUPTI tracing (interleaved), and the hot path on this host.
#   examples/gpu_validate.sh OUTDIR    (binaries in .gpu/: clex, libnccl-profiler-commlens.so,
#   bench-hotpath)
set -u
. "$(dirname "$0")/gpu_common.sh" gpu_validate.sh "$@"
cat /sys/devices/system/clocksource/clocksource0/current_clocksource >"$OUT/clocksource.txt" 2>&1

run() {  # name events mode clex-args...
  local name=$1 events=$2 mode=$3; shift 3
  NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_EVENTS=$events COMMLENS_CUPTI=on COMMLENS_DIR=$OUT/$name/traces \
    NCCL_DEBUG=WARN TIMEOUT=150 "$here/run_modes.sh" "$mode" "$OUT/$name" "$@"
  log "$name: exit $?"
}
SZ="--ops allreduce --min-bytes 1M --max-bytes 64M --factor 4 --iters 10 --warmup 2"
run hidden default nvlink $SZ --compute overlap --compute-us 400
run exposed default nvlink $SZ --compute serial --compute-us 400
run straggler default nvlink --ops allreduce --min-bytes 1M --max-bytes 16M --factor 4 --iters 10 --delay-rank 1 --delay-us 3000
run full full socket --ops allreduce,sendrecv --min-bytes 64K --max-bytes 4M --factor 4 --iters 5 --compute overlap --compute-us 200

# PyTorch DDP with commlens: gradient all-reduces should overlap backward compute.
NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_CUPTI=on COMMLENS_DIR=$OUT/ddp/traces TIMEOUT=200 "$here/ddp/run.sh" --steps 30 >"$OUT/ddp.log" 2>&1
log "ddp: exit $?"

# Cost of CUPTI tracing in a training-like loop (compute + collectives), interleaved rounds.
for round in 1 2 3; do
  for cfg in none nocupti cupti; do
    d=$OUT/cost/$cfg-$round
    case $cfg in
      none) NCCL_PROFILER_PLUGIN=none TIMEOUT=120 "$here/run_modes.sh" nvlink "$d" --ops allreduce --min-bytes 4M --max-bytes 4M --iters 300 --warmup 20 --compute overlap --compute-us 300 ;;
      nocupti) NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_CUPTI=0 COMMLENS_DIR=$d/traces TIMEOUT=120 "$here/run_modes.sh" nvlink "$d" --ops allreduce --min-bytes 4M --max-bytes 4M --iters 300 --warmup 20 --compute overlap --compute-us 300 ;;
      cupti) NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_CUPTI=on COMMLENS_DIR=$d/traces TIMEOUT=120 "$here/run_modes.sh" nvlink "$d" --ops allreduce --min-bytes 4M --max-bytes 4M --iters 300 --warmup 20 --compute overlap --compute-us 300 ;;
    esac
    log "cost $cfg $round: exit $?"
  done
done
timeout 150 .gpu/bench-hotpath "$PLUGIN" >"$OUT/hotpath.txt" 2>&1
log "hotpath: exit $?"
