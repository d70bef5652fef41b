#!/usr/bin/env bash
# gpu_verdict_unseen.sh: records a second set of planted-truth runs for the straggler verdict, of
# classes the first set (examples/gpu_verdict.sh) lacks: effects of 2-3 ms, every 2nd or 3rd step,
# ranks taking turns, a burst of steps, a torch.profiler window on every rank, GPU-side slowness
# on some steps, and long clean runs (150-200 steps). Default mode: nothing set but
# NCCL_PROFILER_PLUGIN and COMMLENS_DIR (the traces are written beside the digests).
#   examples/gpu_verdict_unseen.sh OUTDIR PLUGIN
# With two GPUs, lanes A and B run side by side, each 3-4 ranks time-sharing one GPU as emulated
# nodes (sockets); lane C then runs 2 ranks on 2 GPUs. With one GPU: A and B one after the other
# on GPU 0, no lane C. Each lane is packed into OUTDIR/verdict-<lane>.tgz.
set -u
OUT=${1:?usage: gpu_verdict_unseen.sh OUTDIR PLUGIN}
PLUGIN=${2:?usage: gpu_verdict_unseen.sh OUTDIR PLUGIN}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 COMMLENS_OUTPUT=${COMMLENS_OUTPUT:-both}
unset COMMLENS_CUPTI COMMLENS_EVENTS COMMLENS_GZIP NVTX_INJECTION64_PATH
here=$(cd "$(dirname "$0")" && pwd)
log() { echo "$*" | tee -a "$OUT/status.txt"; }
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1) x$ngpu; torch $(python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())' 2>&1)"
BUDGET=${BUDGET:-440}; STEPS=${STEPS:-100}; RUNS=${RUNS:-}; RUN_TIMEOUT=${RUN_TIMEOUT:-150}; sfx=
. "$here/verdict/run_lib.sh"

lane_a() {
  run u_clean_ddp_long ddp 4 none '[]' "DDP, 4 ranks, 150 steps, nothing planted" --steps 150
  run u_late2_ddp ddp 4 persistent '[{"rank":1,"delay_ms":2,"every":1}]' \
    "DDP, 4 ranks: rank 1 sleeps 2 ms before every step" --late 1:2
  run u_profwin_late8_ddp ddp 4 persistent '[{"rank":3,"delay_ms":8,"every":1}]' \
    "DDP, 4 ranks, torch.profiler on every rank for steps 10-19: rank 3 sleeps 8 ms before every step" \
    --late 3:8 --profile-window 10:20
  run u_every2_30_fsdp fsdp 4 every_nth '[{"rank":2,"delay_ms":30,"every":2,"phase":1}]' \
    "FSDP2, 4 ranks: rank 2 sleeps 30 ms before every 2nd step (1, 3, 5, ...)" --layers 3 --late 2:30:2:1
  run u_burst_ddp ddp 4 burst '[{"rank":0,"delay_ms":15,"first":40,"last":59}]' \
    "DDP, 4 ranks: rank 0 sleeps 15 ms before steps 40-59; nothing else" --burst 0:40:59:15
  run u_clean_fsdp_long fsdp 4 none '[]' "FSDP2, 4 ranks, 150 steps, nothing planted" --layers 3 --steps 150
}
lane_b() {
  run u_late3_ddp ddp 4 persistent '[{"rank":2,"delay_ms":3,"every":1}]' \
    "DDP, 4 ranks: rank 2 sleeps 3 ms before every step" --late 2:3
  run u_turns20_ddp ddp 4 alternating '[{"rank":0,"delay_ms":20,"every":2,"phase":0},{"rank":3,"delay_ms":20,"every":2,"phase":1}]' \
    "DDP, 4 ranks: rank 0 sleeps 20 ms before even steps, rank 3 before odd steps" --late 0:20:2:0 --late 3:20:2:1
  run u_profwin_clean_ddp ddp 4 none '[]' \
    "DDP, 4 ranks, torch.profiler on every rank for steps 10-19, nothing planted" --profile-window 10:20
  run u_clean_ddp3_long ddp 3 none '[]' "DDP, 3 ranks, 200 steps, nothing planted" --steps 200
  run u_gpu_slow4_fsdp fsdp 4 gpu_side '[{"rank":1,"gpu_products":8,"every":4,"phase":2}]' \
    "FSDP2, 4 ranks: rank 1 queues 8 extra 8192^3 bf16 matrix products before the backward pass of every 4th step (2, 6, 10, ...)" \
    --layers 3 --gpu-slow 1:8:4:2
  run u_oneoff_fsdp fsdp 4 one_off '[{"rank":3,"delay_ms":250,"step":60,"one_off":true}]' \
    "FSDP2, 4 ranks: rank 3 sleeps 250 ms once, before step 60; nothing else" --layers 3 --stall 3:60:250
}
lane_c() {
  export VERDICT_SEPARATE_GPUS=1
  run u_clean_ddp_2gpu_long ddp 2 none '[]' "DDP, 2 ranks on 2 GPUs, 150 steps, nothing planted" --steps 150
  run u_every3_15_fsdp_2gpu fsdp 2 every_nth '[{"rank":1,"delay_ms":15,"every":3,"phase":0}]' \
    "FSDP2, 2 ranks on 2 GPUs: rank 1 sleeps 15 ms before every 3rd step (0, 3, 6, ...)" --layers 3 --late 1:15:3:0
  run u_late3_ddp_2gpu ddp 2 persistent '[{"rank":0,"delay_ms":3,"every":1}]' \
    "DDP, 2 ranks on 2 GPUs: rank 0 sleeps 3 ms before every step" --late 0:3
  run u_turns10_ddp_2gpu ddp 2 alternating '[{"rank":0,"delay_ms":10,"every":2,"phase":0},{"rank":1,"delay_ms":10,"every":2,"phase":1}]' \
    "DDP, 2 ranks on 2 GPUs: rank 0 sleeps 10 ms before even steps, rank 1 before odd steps" --late 0:10:2:0 --late 1:10:2:1
  run u_clean_fsdp_2gpu_long fsdp 2 none '[]' "FSDP2, 2 ranks on 2 GPUs, 150 steps, nothing planted" --layers 3 --steps 150
  run u_gpu_slow2_ddp_2gpu ddp 2 gpu_side '[{"rank":1,"gpu_products":4,"every":2,"phase":0}]' \
    "DDP, 2 ranks on 2 GPUs: rank 1 queues 4 extra 8192^3 bf16 matrix products before the backward pass of even steps" \
    --gpu-slow 1:4:2:0
}
pack() { (cd "$OUT/runs" && tar czf "$OUT/verdict-$1.tgz" --exclude='*.spill' $(ls -d u_* 2>/dev/null | grep -E "$2")) &&
         log "verdict-$1.tgz: $(du -k "$OUT/verdict-$1.tgz" | cut -f1) KiB"; }
if [ "$ngpu" -ge 2 ]; then
  (VERDICT_GPU=0 lane_a) & (VERDICT_GPU=1 lane_b) & wait
  lane_c
else
  VERDICT_GPU=0 lane_a; VERDICT_GPU=0 lane_b
fi
pack a 'clean_ddp_long|late2_ddp|profwin_late8|every2_30|burst_ddp|clean_fsdp_long$'
pack b 'late3_ddp$|turns20|profwin_clean|clean_ddp3_long|gpu_slow4|oneoff_fsdp'
pack c '_2gpu'
