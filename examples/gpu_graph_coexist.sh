#!/usr/bin/env bash
# gpu_graph_coexist.sh: the GPU checks of CUDA-graph replays and of commlens beside torch.profiler,
# in one go, on a 2-GPU machine:
#   - clex with every step captured once into a CUDA graph and replayed: hidden (compute on a
#     forked branch) and exposed (compute ahead of the collective); default events (NVLink
#     replays fire no Coll events), full events (KernelCh: Coll events on every replay), and
#     socket transport (proxy work: Coll events on every replay);
#   - PyTorch: torch.profiler over commlens (does Kineto keep its kernels? does commlens say so
#     and resume?), the same job without commlens for Kineto's baseline, and a torch.cuda.graph
#     replaying an all_reduce;
#   - eager baselines (clex hidden, PyTorch DDP) to see that nothing there reads as a lost CUPTI;
#   - examples/check_exposure.py over every trace (independent exposure from raw kernel records).
#   examples/gpu_graph_coexist.sh OUTDIR   (binaries in .gpu/: clex, libnccl-profiler-commlens.so)
set -u
. "$(dirname "$0")/gpu_common.sh" gpu_graph_coexist.sh "$@"

run() {  # name events mode clex-args...
  local name=$1 events=$2 mode=$3; shift 3
  env ${RECORD:+COMMLENS_RECORD=$OUT/$name/rec} NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_EVENTS=$events \
    COMMLENS_CUPTI=on COMMLENS_DIR=$OUT/$name/traces NCCL_DEBUG=WARN TIMEOUT=120 \
    "$here/run_modes.sh" "$mode" "$OUT/$name" "$@"
  log "$name: exit $?"
}
run eager-hidden default nvlink --ops allreduce --min-bytes 1M --max-bytes 64M --factor 4 --iters 10 \
  --warmup 2 --compute overlap --compute-us 400
SZ="--ops allreduce --min-bytes 1M --max-bytes 64M --factor 4 --iters 10 --warmup 2 --graph 1"
RECORD=1 run graph-hidden default nvlink $SZ --compute overlap --compute-us 400
run graph-exposed default nvlink $SZ --compute serial --compute-us 400
run graph-kch full nvlink $SZ --compute overlap --compute-us 400
RECORD=1 run graph-socket default socket --ops allreduce,sendrecv --min-bytes 64K --max-bytes 4M --factor 4 \
  --iters 5 --warmup 1 --graph 1 --compute overlap --compute-us 200

torch_run() {  # name env... -- coexist.py args
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  mkdir -p "$OUT/$name"
  env "${envs[@]}" SCRIPT=coexist.py TIMEOUT=180 NCCL_DEBUG=WARN "$here/ddp/run.sh" --out "$OUT/$name" "$@" \
    >"$OUT/$name/log.txt" 2>&1
  log "$name: exit $?"
}
torch_run torch-alone NCCL_PROFILER_PLUGIN=none -- --steps 150
torch_run torch-commlens NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_CUPTI=on COMMLENS_DIR=$OUT/torch-commlens/traces -- --steps 150
# NVTX steps reach CUPTI through its injection library: PyTorch's own libcupti, the one loaded
TINJ=$(python3 -c "import torch; torch.zeros(1).cuda(); print(next((l.split()[-1] for l in open('/proc/self/maps') if 'libcupti' in l), ''))" 2>/dev/null)
[ -n "$TINJ" ] || TINJ=/usr/local/cuda/lib64/libcupti.so
torch_run torch-graph NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_CUPTI=on COMMLENS_DIR=$OUT/torch-graph/traces \
  NVTX_INJECTION64_PATH=$TINJ -- --steps 20 --no-profiler --graph

mkdir -p "$OUT/ddp"
NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_CUPTI=on COMMLENS_DIR=$OUT/ddp/traces NCCL_DEBUG=WARN TIMEOUT=200 \
  "$here/ddp/run.sh" --steps 30 >"$OUT/ddp/log.txt" 2>&1
log "ddp: exit $?"

python3 "$here/check_exposure.py" "$OUT"/*/traces/*.json* >"$OUT/check.txt" 2>&1
log "check_exposure: exit $?"
grep -h "KINETO\|SLOT\|WARN\|DONE" "$OUT"/torch-*/log.txt "$OUT"/ddp/log.txt >"$OUT/torch-lines.txt" 2>&1
