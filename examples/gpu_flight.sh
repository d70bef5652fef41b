#!/usr/bin/env bash
# gpu_flight.sh: the flight recorder on a real GPU run, on ONE GPU: a few ranks of
# examples/flight/hang.py, each its own torchrun process on GPU 0 as its own emulated node
# (NCCL_HOSTID, sockets, NCCL_NVLS_ENABLE=0), with COMMLENS_FLIGHT_S on.
#   1. while they all-reduce, every rank gets SIGUSR2: each writes a signal dump;
#   2. then rank HANG_RANK stops calling collectives; the others' next all-reduce never finishes,
#      and after COMMLENS_HANG_S each of them writes a hang dump naming the stuck collective and
#      the channels it still waited on;
#   3. the job is killed (it cannot end by itself), and the dumps are packed into OUTDIR/flight.tgz.
# Then, where the CLI is built (json-c: not on the GPU machines): commlens report on the dumps.
#   examples/gpu_flight.sh OUTDIR PLUGIN      (NRANKS=4 HANG_RANK=1 HANG_S=5 CLI=build/commlens)
set -u
OUT=${1:?usage: gpu_flight.sh OUTDIR PLUGIN}
PLUGIN=${2:?usage: gpu_flight.sh OUTDIR PLUGIN}
NRANKS=${NRANKS:-4}
HANG_RANK=${HANG_RANK:-1}
HANG_S=${HANG_S:-5}
CLI=${CLI:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/run" && mkdir -p "$OUT/run/traces"
run=$OUT/run
log() { echo "$*" | tee -a "$OUT/status.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); torch $(python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())' 2>&1)"
unset COMMLENS_CUPTI NVTX_INJECTION64_PATH
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN
export NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_DIR=$run/traces COMMLENS_FLIGHT_S=30 COMMLENS_HANG_S=$HANG_S \
       COMMLENS_EVENTS=default+kernelch COMMLENS_JOB=flight
# waits up to $1 s for `$2` (a shell test) to hold; 0 if it did
wait_for() { local t=$1; shift; for _ in $(seq $((t * 10))); do eval "$*" && return 0; sleep 0.1; done; return 1; }
count() { ls "$run/traces/flight" 2>/dev/null | grep -c -- "$1"; }

setsid python3 -m torch.distributed.run --standalone --nproc-per-node "$NRANKS" "$here/flight/hang.py" \
  --out "$run" --hang-rank "$HANG_RANK" >"$run/log.txt" 2>&1 &
job=$!
t0=$SECONDS
steps_ok() { for r in $(seq 0 $((NRANKS - 1))); do [ "$(cat "$run/step-r$r" 2>/dev/null || echo 0)" -ge 20 ] || return 1; done; }
if ! wait_for 180 steps_ok; then
  log "the job did not reach step 20 on every rank in 180 s"; tail -n 20 "$run/log.txt" | tee -a "$OUT/status.txt"
  kill -9 -- -$job 2>/dev/null; exit 1
fi
log "every rank past step 20 after $((SECONDS - t0)) s; SIGUSR2 to each"
for r in $(seq 0 $((NRANKS - 1))); do kill -USR2 "$(cat "$run/pid-r$r")"; done
wait_for 60 '[ "$(count .signal-)" -ge "$NRANKS" ]'
log "signal dumps: $(count .signal-) of $NRANKS"
touch "$run/hang"
wait_for 60 '[ -f "$run/stopped-r$HANG_RANK" ]'
log "rank $HANG_RANK stopped calling collectives after step $(cat "$run/stopped-r$HANG_RANK" 2>/dev/null)"
wait_for $((HANG_S + 90)) '[ "$(count .hang-)" -ge $((NRANKS - 1)) ]'
log "hang dumps: $(count .hang-) (of the $((NRANKS - 1)) ranks left waiting) after $((SECONDS - t0)) s"
kill -9 -- -$job 2>/dev/null
wait $job 2>/dev/null
log "the job was killed (exit $?), as it could not end by itself"
grep -h "flight recorder" "$run/log.txt" | sort | uniq -c | head -n 20 | tee -a "$OUT/status.txt"
ls -l "$run/traces/flight" | tee -a "$OUT/status.txt"
(cd "$run/traces" && tar czf "$OUT/flight.tgz" flight)
log "flight.tgz: $(du -k "$OUT/flight.tgz" | cut -f1) KiB"
if [ -n "$CLI" ] && [ -x "$CLI" ]; then
  "$CLI" report "$run/traces/flight" >"$OUT/report.txt" 2>&1
  head -n 20 "$OUT/report.txt" | tee -a "$OUT/status.txt"
else
  log "no CLI here (CLI=path/to/commlens): run commlens report on the unpacked flight/ directory elsewhere"
fi
