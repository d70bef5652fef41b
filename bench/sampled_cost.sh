#!/usr/bin/env bash
# sampled_cost.sh: the sampled default's cost on a launch-bound step, read inside one process,
# on the GPU machine, in about 6 minutes.
#
#   bench/sampled_cost.sh OUTDIR PLUGIN        (run from the repository root)
#
# Run to run, the lent GPU machines vary by +-20%: a 1% cost cannot be read between processes.
# The sampled default (COMMLENS_CUPTI=sampled) attaches CUPTI W seconds in every P and detaches it
# in between, so one long run holds its own baseline: bench/sampled_cost.py compares the steps of
# whole periods with the steps far from any window (see there). Runs, each RUN_S seconds of timed
# steps under the default:
#   torch  bench/launch_step.py, one rank (~1,900 kernels a step; NCCL's 1-rank communicator
#          loads the plugin and has no collective events): the price of every application launch;
#   cuda   bench/launch_bound.cu, two ranks as processes sharing GPU 0 as emulated nodes (sockets),
#          KERNELS tiny kernels and COLLS all_reduces a step: launches and collectives together.
# Around each, a NONE_S run without the plugin (before and after) for the cross-process check.
# Environment [defaults]: RUN_S [110] NONE_S [20] SAMPLE [1:30] (also passed to the plugin as
#   COMMLENS_CUPTI_SAMPLE) SYNC_EVERY [10] KERNELS [2000] COLLS [2] BENCHES ["torch cuda"] PYTHON
#   LB_BIN (a prebuilt bench/launch_bound.cu; else built here as bench/launch_bound.sh does)
set -u
OUT=${1:?usage: bench/sampled_cost.sh OUTDIR PLUGIN}
PLUGIN=${2:?usage: bench/sampled_cost.sh OUTDIR PLUGIN}
here=$(cd "$(dirname "$0")" && pwd)
RUN_S=${RUN_S:-110}; NONE_S=${NONE_S:-20}; SAMPLE=${SAMPLE:-1:30}; SYNC_EVERY=${SYNC_EVERY:-10}
KERNELS=${KERNELS:-2000}; COLLS=${COLLS:-2}; BENCHES=${BENCHES:-torch cuda}; PYTHON=${PYTHON:-python3}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
[ -f "$PLUGIN" ] || { echo "sampled_cost.sh: no plugin at '$PLUGIN'" >&2; exit 2; }
PLUGIN=$(cd "$(dirname "$PLUGIN")" && pwd)/$(basename "$PLUGIN")
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1 | tee "$OUT/env.txt"

. "$here/nvcc_nccl.sh"
LB=${LB_BIN:-}
if [[ " $BENCHES " == *" cuda "* ]] && [ -z "$LB" ]; then
  LB=$OUT/bin/launch_bound
  nvcc_nccl "$here/launch_bound.cu" "$LB" "$OUT/bin/build.log" || { echo "cuda: build failed"; LB=; }
fi

# run NAME SECONDS PLUGIN? NRANKS CMD...: rank R gets RANK=R; prints RESULT lines into NAME.txt
run() {
  local name=$1 secs=$2 with=$3 n=$4; shift 4
  local d=$OUT/$name pids=() r rc=0 s env=()
  mkdir -p "$d"
  [ "$with" = yes ] && env=(NCCL_PROFILER_PLUGIN="$PLUGIN" COMMLENS_DIR="$d/traces" COMMLENS_SUMMARY=file COMMLENS_CUPTI_SAMPLE="$SAMPLE")
  local t0=$SECONDS
  for ((r = 0; r < n; r++)); do
    env -u NCCL_PROFILER_PLUGIN "${env[@]}" RANK=$r LOCAL_RANK=$r timeout -k 5 $((secs + 90)) "$@" >"$d/rank$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; s=$?; [ $rc -eq 0 ] && rc=$s; done
  grep -h '^RESULT ' "$d"/rank0.log >"$OUT/$name.txt"
  echo "$name: exit $rc in $((SECONDS - t0)) s"
}
torch_run() { run "$1" "$2" "$3" 1 "$PYTHON" "$here/launch_step.py" --seconds "$2" --warmup 10 --sync-every "$SYNC_EVERY" --out "$OUT/$1"; }
cuda_run() {
  local d=$OUT/$1; rm -f "$d/nccl.id"; mkdir -p "$d"
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} \
    run "$1" "$2" "$3" 2 bash -c 'NCCL_HOSTID=host$RANK exec "$0" --rank $RANK "$@"' "$LB" --nranks 2 \
      --id-file "$d/nccl.id" --kernels "$KERNELS" --colls "$COLLS" --seconds "$2" --warmup 10
}
for b in $BENCHES; do
  [ "$b" = cuda ] && [ -z "$LB" ] && continue
  ${b}_run "$b-none1" "$NONE_S" no
  ${b}_run "$b-default" "$RUN_S" yes
  ${b}_run "$b-none2" "$NONE_S" no
  "$PYTHON" "$here/sampled_cost.py" --sample "$SAMPLE" --label "$b default" --none "$OUT/$b-none1.txt" "$OUT/$b-none2.txt" \
    -- "$OUT/$b-default.txt" | tee -a "$OUT/sampled_cost.txt"
done
