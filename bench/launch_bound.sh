#!/usr/bin/env bash
# launch_bound.sh: what commlens costs a launch-bound training step, on the GPU machine,
# in about 6 minutes at most.
#
#   bench/launch_bound.sh OUTDIR PLUGIN        (run from the repository root)
#
# Two step benchmarks, run in interleaved rounds (each round runs every config once, in an order
# that rotates by round, so drift over the run falls on every config alike):
#   torch  bench/launch_step.py: 12-layer transformer d=256, AdamW(foreach=False), ~1,900 kernels
#          per step, one rank (NCCL's 1-rank communicator loads the plugin; it has no collective
#          events). Configs: none, default, full (COMMLENS_CUPTI=full), torchprof (torch.profiler
#          over every timed step, no plugin).
#   cuda   bench/launch_bound.cu: KERNELS tiny kernels and COLLS 4 KiB all_reduces per step, two
#          ranks as processes sharing GPU 0 as emulated nodes (NCCL_HOSTID; sockets). Configs:
#          none, default, full.
# Then the mid-job torch.profiler window (2 ranks on GPU 0, one all_reduce per step, profiler over
# steps WINDOW), with and without TEARDOWN_CUPTI=1: Kineto's kernel count, and how many of
# commlens's collectives were GPU-timed by CUPTI before, during and after the window.
# Every run has a timeout; a failed run is recorded (its status file and log), never fatal; runs
# that would not end within BUDGET_S are skipped and said so. Tables: OUTDIR/launch_bound.md
# (printed at the end) by bench/launch_bound_table.py.
#
# Environment [defaults]: ROUNDS [8]  BUDGET_S [340]  RUN_TIMEOUT [60]  PYTHON [python3]
#   TORCH_STEPS [60] TORCH_WARMUP [10] SYNC_EVERY [10] (the torch step waits for the GPU every
#           SYNC_EVERY steps and reports blocks: a wait every step rounds steps up to the lent VMs'
#           wake-up quantum, 6.9 ms; 1 = wait every step, as before)  CUDA_STEPS [40] CUDA_WARMUP [10] KERNELS [2000] COLLS [2]
#   WINDOW_STEPS [60] WINDOW [20:30]  BENCHES ["torch cuda window"]
#   TORCH_CONFIGS ["none default full torchprof"]  CUDA_CONFIGS ["none default full"]; also known:
#           nocupti (COMMLENS_CUPTI=off), kernels (COMMLENS_CUPTI=kernels), sampled (=sampled),
#           clockoff (the default with COMMLENS_CUPTI_CLOCK=offset)
#   LB_BIN  a prebuilt bench/launch_bound.cu binary (else built into OUTDIR with nvcc and NCCL's
#           headers: the pip package nvidia-nccl-cu13's, else CUDA's)
set -u

OUT=${1:?usage: bench/launch_bound.sh OUTDIR PLUGIN}
PLUGIN=${2:?usage: bench/launch_bound.sh OUTDIR PLUGIN}
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-8}
BUDGET_S=${BUDGET_S:-340}
RUN_TIMEOUT=${RUN_TIMEOUT:-60}
PYTHON=${PYTHON:-python3}
TORCH_STEPS=${TORCH_STEPS:-60}; TORCH_WARMUP=${TORCH_WARMUP:-10}; SYNC_EVERY=${SYNC_EVERY:-10}
CUDA_STEPS=${CUDA_STEPS:-40}; CUDA_WARMUP=${CUDA_WARMUP:-10}; KERNELS=${KERNELS:-2000}; COLLS=${COLLS:-2}
WINDOW_STEPS=${WINDOW_STEPS:-60}; WINDOW=${WINDOW:-20:30}
BENCHES=${BENCHES:-torch cuda window}
TORCH_CONFIGS=${TORCH_CONFIGS:-none default full torchprof}
CUDA_CONFIGS=${CUDA_CONFIGS:-none default full}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
[ -f "$PLUGIN" ] || { echo "launch_bound.sh: no plugin at '$PLUGIN'" >&2; exit 2; }
PLUGIN=$(cd "$(dirname "$PLUGIN")" && pwd)/$(basename "$PLUGIN")
export NCCL_NVLS_ENABLE=0            # the lent machines need it in every environment
START=$SECONDS
log() { echo "$*" | tee -a "$OUT/status.txt"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1
  "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1 | tail -n 1
  echo "rounds $ROUNDS; torch ${TORCH_WARMUP}+${TORCH_STEPS} steps; cuda ${CUDA_WARMUP}+${CUDA_STEPS} steps of $KERNELS kernels, $COLLS all_reduces"
} >"$OUT/env.txt"
cat "$OUT/env.txt"

# ---- the C/CUDA step: built here unless given ----
. "$here/nvcc_nccl.sh"
LB=${LB_BIN:-}
if [[ " $BENCHES " == *" cuda "* ]] && [ -z "$LB" ]; then
  LB=$OUT/bin/launch_bound
  if ! nvcc_nccl "$here/launch_bound.cu" "$LB" "$OUT/bin/build.log"; then
    log "cuda: build failed (see bin/build.log); its runs are skipped"
    LB=
  fi
fi

# ---- one run: DIR CONFIG NRANKS CMD... (rank R's command gets RANK=R in its environment) ----
EST=15   # seconds a run is expected to take at most, raised to the slowest seen
run() {
  local dir=$1 cfg=$2 n=$3; shift 3
  mkdir -p "$dir"
  if (( SECONDS - START + EST > BUDGET_S )); then echo "skipped: budget" >"$dir/status"; return; fi
  local env=()   # none, torchprof: no NCCL_PROFILER_PLUGIN, so NCCL loads no profiler
  case $cfg in
    default) env=(NCCL_PROFILER_PLUGIN="$PLUGIN" COMMLENS_DIR="$dir/traces" COMMLENS_SUMMARY=file) ;;
    full) env=(NCCL_PROFILER_PLUGIN="$PLUGIN" COMMLENS_DIR="$dir/traces" COMMLENS_SUMMARY=file COMMLENS_CUPTI=full) ;;
    nocupti) env=(NCCL_PROFILER_PLUGIN="$PLUGIN" COMMLENS_DIR="$dir/traces" COMMLENS_SUMMARY=file COMMLENS_CUPTI=off) ;;
    kernels) env=(NCCL_PROFILER_PLUGIN="$PLUGIN" COMMLENS_DIR="$dir/traces" COMMLENS_SUMMARY=file COMMLENS_CUPTI=kernels) ;;
    sampled) env=(NCCL_PROFILER_PLUGIN="$PLUGIN" COMMLENS_DIR="$dir/traces" COMMLENS_SUMMARY=file COMMLENS_CUPTI=sampled) ;;
    clockoff) env=(NCCL_PROFILER_PLUGIN="$PLUGIN" COMMLENS_DIR="$dir/traces" COMMLENS_SUMMARY=file COMMLENS_CUPTI_CLOCK=offset) ;;
  esac
  local t0=$SECONDS pids=() r rc=0 s
  for ((r = 0; r < n; r++)); do
    env -u NCCL_PROFILER_PLUGIN "${env[@]}" RANK=$r LOCAL_RANK=$r timeout -k 5 "$RUN_TIMEOUT" "$@" >"$dir/rank$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; s=$?; [ $rc -eq 0 ] && rc=$s; done
  echo "$rc" >"$dir/status"
  (( SECONDS - t0 + 3 > EST )) && EST=$((SECONDS - t0 + 3))
  echo "  $(basename "$(dirname "$dir")")/$cfg: exit $rc in $((SECONDS - t0)) s"
}
rotate() {   # ROUND LIST...: the list rotated by ROUND
  local k=$1; shift; local a=("$@") n=$#
  for ((i = 0; i < n; i++)); do echo "${a[$(((i + k) % n))]}"; done
}

for ((round = 1; round <= ROUNDS; round++)); do
  log "round $round of $ROUNDS ($((SECONDS - START)) s so far)"
  if [[ " $BENCHES " == *" torch "* ]]; then
    for cfg in $(rotate "$round" $TORCH_CONFIGS); do
      extra=(); [ "$cfg" = torchprof ] && extra=(--profile)
      d=$OUT/runs/torch/r$round/$cfg
      run "$d" "$cfg" 1 "$PYTHON" "$here/launch_step.py" --steps "$TORCH_STEPS" --warmup "$TORCH_WARMUP" --sync-every "$SYNC_EVERY" --out "$d" "${extra[@]}"
    done
  fi
  if [[ " $BENCHES " == *" cuda "* ]] && [ -n "$LB" ]; then
    for cfg in $(rotate "$round" $CUDA_CONFIGS); do
      d=$OUT/runs/cuda/r$round/$cfg
      rm -f "$d/nccl.id"; mkdir -p "$d"
      # each rank its own emulated node on GPU 0: NCCL_HOSTID per rank, sockets between them
      NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} \
        run "$d" "$cfg" 2 bash -c 'NCCL_HOSTID=host$RANK exec "$0" --rank $RANK "$@"' "$LB" --nranks 2 \
          --id-file "$d/nccl.id" --kernels "$KERNELS" --colls "$COLLS" --steps "$CUDA_STEPS" --warmup "$CUDA_WARMUP"
    done
  fi
done

# ---- torch.profiler over a window mid-job, with and without TEARDOWN_CUPTI=1 ----
if [[ " $BENCHES " == *" window "* ]]; then
  (( EST < 40 )) && EST=40   # two ranks under torchrun, and Kineto's export
  for td in 1 0; do
    d=$OUT/runs/window/teardown$td
    mkdir -p "$d"
    if [ $td = 1 ]; then export TEARDOWN_CUPTI=1; else unset TEARDOWN_CUPTI; fi
    export COMMLENS_OUTPUT=both   # the table reads the traces
    RUN_TIMEOUT=$((RUN_TIMEOUT > 120 ? RUN_TIMEOUT : 120)) \
      run "$d" default 1 "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node 2 \
        "$here/launch_step.py" --ranks-on-gpu0 --steps "$WINDOW_STEPS" --warmup 5 --window "$WINDOW" --out "$d"
  done
  unset TEARDOWN_CUPTI COMMLENS_OUTPUT
fi

log "done in $((SECONDS - START)) s"
"$PYTHON" "$here/launch_bound_table.py" "$OUT" || log "the table could not be made (launch_bound_table.py failed)"
