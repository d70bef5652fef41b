#!/usr/bin/env bash
# gpu_record.sh: on a machine with 2 GPUs, runs the example job under commlens in every transport
# mode with COMMLENS_RECORD on, so the real NCCL ABI call streams can be kept under test/data/
# and replayed in CI. Also runs the default event set once. Everything lands in OUTDIR.
#   examples/gpu_record.sh OUTDIR   (binaries from .gpu/: clex, libnccl-profiler-commlens.so)
set -u
. "$(dirname "$0")/gpu_common.sh" gpu_record.sh "$@"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv
  ls -l /usr/lib/x86_64-linux-gnu/libnccl.so* 2>&1
  ls /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 2>/dev/null | grep -i cupti
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1
} >"$OUT/env.txt" 2>&1

ARGS="--ops allreduce,allgather,reducescatter,broadcast,sendrecv --min-bytes 8 --max-bytes 1M --factor 8 --iters 3 --warmup 1"
run() {  # name mode events extra-args...
  local name=$1 mode=$2 events=$3; shift 3
  NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_EVENTS=$events COMMLENS_DIR=$OUT/$name/traces \
  COMMLENS_RECORD=$OUT/$name/rec NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE,NET \
    TIMEOUT=120 "$here/run_modes.sh" "$mode" "$OUT/$name" $ARGS "$@"
  echo "$name: exit $?" >>"$OUT/status.txt"
}
run nvlink nvlink full
run socket socket full
run twonode twonode full
run multicomm nvlink full --comms 3 --ops allreduce,sendrecv
NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_DIR=$OUT/default/traces TIMEOUT=120 \
  "$here/run_modes.sh" nvlink "$OUT/default" --max-bytes 64M --iters 5 --compute overlap --compute-us 200
echo "default: exit $?" >>"$OUT/status.txt"
cat "$OUT/status.txt"
