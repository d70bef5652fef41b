#!/usr/bin/env bash
# gpu_one_gpu.sh: what a machine with ONE GPU can show of a multi-rank job: 2 and 4 ranks of the
# example job as separate processes sharing GPU 0, each its own emulated node (NCCL_HOSTID), so
# NCCL talks over sockets (proxy ops and steps) and never sees a duplicate GPU. Runs: full
# events with the ABI recorded (the recorder keeps each communicator's GPU), CUPTI exposure
# with hidden compute, and 4 ranks with a delayed rank in CUPTI and KernelCh timing. Traces,
# recordings and logs are packed into OUTDIR/runs.tgz for `commlens report` and
# examples/check_exposure.py off the GPU machine (it has no json-c for the CLI).
#   examples/gpu_one_gpu.sh OUTDIR   (binaries from .gpu/: clex, libnccl-profiler-commlens.so)
set -u
. "$(dirname "$0")/gpu_common.sh" gpu_one_gpu.sh "$@"
nvidia-smi --query-gpu=name,driver_version --format=csv >"$OUT/env.txt" 2>&1

export CLEX=${CLEX:-$PWD/.gpu/clex} TIMEOUT=${TIMEOUT:-180}
run() {  # name nranks events cupti extra-clex-args...
  local name=$1 n=$2 events=$3 cupti=$4; shift 4
  local t0=$SECONDS
  NRANKS=$n NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_EVENTS=$events COMMLENS_CUPTI=$cupti \
    COMMLENS_DIR=$OUT/$name/traces "$here/run_modes.sh" twonode "$OUT/$name" "$@"
  log "$name: exit $? in $((SECONDS - t0)) s, $(ls "$OUT/$name/traces" 2>/dev/null | grep -c 'trace.json') trace file(s)"
}
SWEEP="--min-bytes 8 --max-bytes 1M --factor 8"
COMMLENS_RECORD=$OUT/two_full/rec run two_full 2 full off --ops allreduce,sendrecv $SWEEP --iters 3 --warmup 1
run two_cupti 2 default on --ops allreduce --min-bytes 64K --max-bytes 4M --factor 4 --iters 8 \
  --compute overlap --compute-us 300
run four_delay_cupti 4 default on --ops allreduce $SWEEP --iters 10 --delay-rank 2 --delay-us 3000
run four_delay_kch 4 default+kernelch off --ops allreduce $SWEEP --iters 10 --delay-rank 3 --delay-us 3000
(cd "$OUT" && tar czf runs.tgz --exclude=runs.tgz */)
cat "$OUT/status.txt"
