#!/usr/bin/env bash
# gpu_verdict.sh: records the straggler-verdict test data (test/data/verdict/) on a machine with
# ONE GPU, default mode (nothing set but NCCL_PROFILER_PLUGIN and COMMLENS_DIR). Every run is a
# short PyTorch job (examples/verdict/train.py) of 3-4 ranks, each its own torchrun process on
# GPU 0 as its own emulated node (NCCL_HOSTID, sockets), with a planted truth written beside its
# traces in manifest.json. Traces and manifests are packed into OUTDIR/verdict.tgz.
#   examples/gpu_verdict.sh OUTDIR PLUGIN   (RUNS picks runs by name; default: all)
#   VERDICT_FULL=1: the same runs in full mode (COMMLENS_EVENTS=full COMMLENS_CUPTI=full), each
#   name suffixed _full. VERDICT_CUPTI=sampled: with COMMLENS_CUPTI=sampled (suffix _sampled).
set -u
OUT=${1:?usage: gpu_verdict.sh OUTDIR PLUGIN}
PLUGIN=${2:?usage: gpu_verdict.sh OUTDIR PLUGIN}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
export COMMLENS_OUTPUT=${COMMLENS_OUTPUT:-both}   # the kept data is traces; the digest beside them
here=$(cd "$(dirname "$0")" && pwd)
log() { echo "$*" | tee -a "$OUT/status.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); torch $(python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())' 2>&1)"
unset COMMLENS_CUPTI COMMLENS_EVENTS COMMLENS_GZIP NVTX_INJECTION64_PATH
sfx=
if [ "${VERDICT_FULL:-0}" = 1 ]; then export COMMLENS_EVENTS=full COMMLENS_CUPTI=full; sfx=_full; fi
# VERDICT_CUPTI=sampled (or another COMMLENS_CUPTI level): the same runs in that mode, suffixed _<level>
if [ -n "${VERDICT_CUPTI:-}" ]; then export COMMLENS_CUPTI=$VERDICT_CUPTI; sfx=${sfx}_$VERDICT_CUPTI; fi
BUDGET=${BUDGET:-480}          # seconds; a run not started by then is skipped (one device call)
STEPS=${STEPS:-80}
RUNS=${RUNS:-}
. "$here/verdict/run_lib.sh"

# SEPARATE_GPUS=N: N ranks, each on a GPU of its own on one host (NVLink), instead of the runs below.
if [ -n "${SEPARATE_GPUS:-}" ]; then
  g=$SEPARATE_GPUS; last=$((g - 1)); export VERDICT_SEPARATE_GPUS=1
  run clean_ddp_${g}gpu ddp $g none '[]' "DDP, $g ranks on $g GPUs, nothing planted"
  run persistent_ddp_${g}gpu ddp $g persistent "[{\"rank\":$last,\"delay_ms\":20,\"every\":1}]" \
    "DDP, $g ranks on $g GPUs: rank $last sleeps 20 ms before every step" --late $last:20
  run gpu_slow_ddp_${g}gpu ddp $g gpu_side '[{"rank":0,"gpu_products":12}]' \
    "DDP, $g ranks on $g GPUs: rank 0 queues 12 extra 8192^3 bf16 matrix products before every backward pass" --gpu-slow 0:12
  run oneoff_ddp_${g}gpu ddp $g one_off '[{"rank":0,"delay_ms":300,"step":40,"one_off":true}]' \
    "DDP, $g ranks on $g GPUs: rank 0 sleeps 300 ms once, before step 40; nothing else" --stall 0:40:300
  run clean_fsdp_${g}gpu fsdp $g none '[]' "FSDP2, $g ranks on $g GPUs, nothing planted" --layers 3
  run everyn_ddp_${g}gpu ddp $g every_nth "[{\"rank\":$last,\"delay_ms\":25,\"every\":3,\"phase\":0}]" \
    "DDP, $g ranks on $g GPUs: rank $last sleeps 25 ms before every 3rd step" --late $last:25:3:0
  run alternating_ddp_${g}gpu ddp $g alternating "[{\"rank\":0,\"delay_ms\":20,\"every\":2,\"phase\":0},{\"rank\":$last,\"delay_ms\":20,\"every\":2,\"phase\":1}]" \
    "DDP, $g ranks on $g GPUs: rank 0 sleeps 20 ms before even steps, rank $last before odd steps" --late 0:20:2:0 --late $last:20:2:1
  RUNS=none
fi

run clean_ddp ddp 4 none '[]' "DDP, 4 ranks, nothing planted"
run clean_fsdp fsdp 4 none '[]' "FSDP2, 4 ranks, nothing planted" --layers 3
run clean_ddp3 ddp 3 none '[]' "DDP, 3 ranks, nothing planted"
run persistent_ddp ddp 4 persistent '[{"rank":2,"delay_ms":20,"every":1}]' \
  "DDP, 4 ranks: rank 2 sleeps 20 ms before every step" --late 2:20
run everyn_oneoff_ddp ddp 4 every_nth+one_off \
  '[{"rank":1,"delay_ms":25,"every":3,"phase":0},{"rank":3,"delay_ms":400,"step":50,"one_off":true}]' \
  "DDP, 4 ranks: rank 1 sleeps 25 ms before every 3rd step; rank 3 once 400 ms before step 50" \
  --late 1:25:3:0 --stall 3:50:400
run alternating_ddp ddp 4 alternating '[{"rank":1,"delay_ms":20,"every":2,"phase":0},{"rank":2,"delay_ms":20,"every":2,"phase":1}]' \
  "DDP, 4 ranks: rank 1 sleeps 20 ms before even steps, rank 2 before odd steps" --late 1:20:2:0 --late 2:20:2:1
run gpu_slow_ddp ddp 4 gpu_side '[{"rank":3,"gpu_products":12}]' \
  "DDP, 4 ranks: rank 3 queues 12 extra 8192^3 bf16 matrix products before every backward pass" --gpu-slow 3:12
run oneoff_ddp ddp 3 one_off '[{"rank":0,"delay_ms":300,"step":40,"one_off":true}]' \
  "DDP, 3 ranks: rank 0 sleeps 300 ms once, before step 40; nothing else" --stall 0:40:300
run persistent_fsdp fsdp 4 persistent '[{"rank":1,"delay_ms":15,"every":1}]' \
  "FSDP2, 4 ranks: rank 1 sleeps 15 ms before every step" --layers 3 --late 1:15
run gpu_slow_fsdp fsdp 3 gpu_side '[{"rank":2,"gpu_products":12}]' \
  "FSDP2, 3 ranks: rank 2 queues 12 extra 8192^3 bf16 matrix products before every backward pass" --layers 3 --gpu-slow 2:12

(cd "$OUT/runs" && tar czf "$OUT/verdict.tgz" --exclude='*.spill' */)
log "verdict.tgz: $(du -k "$OUT/verdict.tgz" | cut -f1) KiB"
