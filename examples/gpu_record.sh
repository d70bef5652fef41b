#!/usr/bin/env bash
# gpu_record.sh: on a machine with 2 GPUs, runs the example job under commlens in every transport
# mode with COMMLENS_RECORD on, so the real NCCL ABI call streams can be kept under test/data/
# and replayed in CI: one process per GPU (nvlink, socket, twonode, multicomm), and one process
# driving both GPUs (clex --devices 2) from one thread and from a thread per GPU, over NVLink and
# over sockets. Also runs the default event set once. Everything lands in OUTDIR; OUTDIR/real/
# gets each recording under the name test/data/real uses (nccl<version>-<gpu>x2-<run>-r<rank>).
#   examples/gpu_record.sh OUTDIR   (binaries from .gpu/: clex, libnccl-profiler-commlens.so)
#   NCCL_HOME_ALT=/path/to/nccl/build: the same recordings again with that NCCL (e.g. 2.30.x built
#   from source) first on LD_LIBRARY_PATH, as runs alt-<run>.
set -u
. "$(dirname "$0")/gpu_common.sh" gpu_record.sh "$@"
CLEX=${CLEX:-.gpu/clex}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv
  ls -l /usr/lib/x86_64-linux-gnu/libnccl.so* 2>&1
  [ -n "${NCCL_HOME_ALT:-}" ] && ls -l "$NCCL_HOME_ALT"/lib/libnccl.so* 2>&1
  ls /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 2>/dev/null | grep -i cupti
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1
} >"$OUT/env.txt" 2>&1

ARGS="--ops allreduce,allgather,reducescatter,broadcast,sendrecv --min-bytes 8 --max-bytes 1M --factor 8 --iters 3 --warmup 1"
RECORDING="COMMLENS_EVENTS=full NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE,NET" # every recorded run
run() {  # name mode events extra-args...: one process per GPU (run_modes.sh)
  local name=$1 mode=$2 events=$3; shift 3
  env $RECORDING COMMLENS_EVENTS=$events NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_DIR=$OUT/$name/traces \
    COMMLENS_RECORD=$OUT/$name/rec TIMEOUT=120 "$here/run_modes.sh" "$mode" "$OUT/$name" $ARGS "$@"
  echo "$name: exit $?" >>"$OUT/status.txt"
}
mgpu() {  # name nvlink|socket threads: one process, both GPUs (clex --devices 2 --threads 0|1)
  local name=$1 d=$OUT/$1 net=
  [ "$2" = socket ] && net="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1"
  mkdir -p "$d"
  env $net $RECORDING NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_DIR=$d/traces COMMLENS_RECORD=$d/rec \
    timeout -k 10 120 "$CLEX" --devices 2 --threads "$3" $ARGS --csv "$d/clex.csv" >"$d/log.txt" 2>&1
  echo "$name: exit $?" >>"$OUT/status.txt"
}
record_all() {  # prefix of the run names
  run "${1}nvlink" nvlink full
  run "${1}socket" socket full
  run "${1}twonode" twonode full
  run "${1}multicomm" nvlink full --comms 3 --ops allreduce,sendrecv
  mgpu "${1}mgpu-nvlink" nvlink 0
  mgpu "${1}mgpu-socket" socket 0
  mgpu "${1}mgpu-threads-nvlink" nvlink 1
  mgpu "${1}mgpu-threads-socket" socket 1
}

record_all ""
NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_DIR=$OUT/default/traces TIMEOUT=120 \
  "$here/run_modes.sh" nvlink "$OUT/default" --max-bytes 64M --iters 5 --compute overlap --compute-us 200
echo "default: exit $?" >>"$OUT/status.txt"
if [ -n "${NCCL_HOME_ALT:-}" ]; then
  if [ -e "$NCCL_HOME_ALT/lib/libnccl.so.2" ]; then
    (export LD_LIBRARY_PATH=$NCCL_HOME_ALT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; record_all alt-)
  else
    log "NCCL_HOME_ALT: no lib/libnccl.so.2 in $NCCL_HOME_ALT; the second NCCL's recordings skipped"
  fi
fi

# OUT/real/: the recordings named as test/data/real names them, the NCCL version from the run's log.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | awk '{print tolower($NF)}')
mkdir -p "$OUT/real"
for rec in "$OUT"/*/rec/commlens-r*.rec.gz; do
  [ -e "$rec" ] || continue
  name=${rec%/rec/*}; name=${name##*/}
  ver=$(cat "$OUT/$name"/*.log "$OUT/$name"/log.txt 2>/dev/null | grep -o -m 1 'NCCL [0-9][0-9.]*' | head -n 1)
  ver=${ver#NCCL }
  rank=${rec##*/commlens-r}; rank=${rank%%-*}
  cp "$rec" "$OUT/real/nccl${ver:-unknown}-${gpu:-gpu}x2-${name#alt-}-r$rank.rec.gz"
done
ls "$OUT/real" >>"$OUT/status.txt"
cat "$OUT/status.txt"
