#!/usr/bin/env bash
# gpu_default.sh: what the default (COMMLENS_CUPTI=kernels, no COMMLENS_* variable but the output
# directory) does on a machine with ONE GPU, where every rank is its own process sharing GPU 0
# as its own emulated node (NCCL_HOSTID, sockets). Runs:
#   1. CUPTI's cost per kernel launch by mechanism (bench/cupti_cost.cu: none, kernel records,
#      + the stream-id lookup the default makes at each NCCL launch, + driver API records as
#      COMMLENS_CUPTI=full), 3 interleaved rounds;
#   2. the example job in the default mode: 4 ranks with rank 2 delayed 10 ms (and the same
#      with COMMLENS_CUPTI=full, whose join checks the default's), AllReduce and SendRecv (a join
#      that slips at the switch shows as a kernel of the other op), hidden compute (exposure
#      against examples/check_exposure.py), CUDA-graph replays;
#   3. PyTorch DDP (its own NCCL), 2 ranks on the GPU, rank 1 a straggler, default mode;
#   4. collective latency of the example job, 2 ranks, 8 B .. 256 KiB, interleaved rounds of no
#      plugin, COMMLENS_CUPTI=off, the default, and full.
#   5. PyTorch beside torch.profiler (examples/ddp/coexist.py), without and with commlens: Kineto
#      must count the same kernels.
# PARTS picks what runs (default "cost job ddp coexist lat"); ddp also runs once with COMMLENS_CUPTI=full,
# whose join by correlation id checks the default's join by stream order (stream_join in the
# trace tail). Traces and CSVs are packed into OUTDIR/runs.tgz for `commlens report`, check_join.py and
# check_exposure.py off the GPU machine (it has no json-c for the CLI).
#   examples/gpu_default.sh OUTDIR   (binaries from .gpu/: clex, libnccl-profiler-commlens.so)
set -u
. "$(dirname "$0")/gpu_common.sh" gpu_default.sh "$@"
nvidia-smi --query-gpu=name,driver_version --format=csv >"$OUT/env.txt" 2>&1
export CLEX=${CLEX:-$PWD/.gpu/clex} TIMEOUT=${TIMEOUT:-180}
unset COMMLENS_CUPTI COMMLENS_EVENTS
PARTS=${PARTS:-cost job ddp coexist lat}
want() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

# 1. CUPTI's cost per launch
if ! want cost; then :
elif make -C bench cupti_cost BUILD="$PWD/.gpu/bench" >"$OUT/cupti_cost_build.log" 2>&1; then
  for r in 1 2 3; do
    for m in none kernel streamid driver; do "$PWD/.gpu/bench/bench-cupti-cost" "$m" >>"$OUT/cupti_cost.txt" 2>&1; done
  done
  log "cupti_cost: $(grep -c ns/launch "$OUT/cupti_cost.txt") rows"
else
  log "cupti_cost: build failed (see cupti_cost_build.log)"
fi

run() {  # name nranks extra-clex-args... (the caller's COMMLENS_* settings, none by default)
  local name=$1 n=$2; shift 2
  local t0=$SECONDS
  NRANKS=$n NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_DIR=$OUT/$name/traces "$here/run_modes.sh" twonode "$OUT/$name" "$@"
  log "$name: exit $? in $((SECONDS - t0)) s, $(ls "$OUT/$name/traces" 2>/dev/null | grep -c 'trace.json') trace file(s)"
}
# 2. the example job, default mode
want job && {
DELAY4="--ops allreduce,sendrecv --min-bytes 8 --max-bytes 1M --factor 8 --iters 10 --delay-rank 2 --delay-us 10000"
# shellcheck disable=SC2086 # a list of clex arguments
run def_delay4 4 $DELAY4
# the same with full: its correlation join checks the stream join on this job too (stream_join)
# shellcheck disable=SC2086
COMMLENS_CUPTI=full run full_delay4 4 $DELAY4
run def_overlap 2 --ops allreduce --min-bytes 64K --max-bytes 4M --factor 4 --iters 8 --compute overlap --compute-us 300
run def_graph 2 --graph 1 --ops allreduce,sendrecv --min-bytes 64K --max-bytes 4M --factor 4 --iters 5 --warmup 1
}

# 3. PyTorch DDP, default mode, then full (its correlation join checks the stream join)
for c in kernels full; do
  want ddp || break
  t0=$SECONDS
  d=ddp; [ $c = full ] && d=ddp_full
  NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_CUPTI=$c COMMLENS_DIR=$OUT/$d/traces TIMEOUT=240 NPROC=2 "$here/ddp/run.sh" --one-gpu \
    --steps 40 --layers 4 --hidden 2048 --batch 4096 --straggler-rank 1 --straggler-ms 20 >"$OUT/$d.log" 2>&1
  log "$d: exit $? in $((SECONDS - t0)) s, $(ls "$OUT/$d/traces" 2>/dev/null | grep -c 'trace.json') trace file(s)"
done

# 5. beside torch.profiler: Kineto's kernel counts without commlens and with its default
for c in none default; do
  want coexist || break
  d=$OUT/coexist_$c
  mkdir -p "$d"
  envs=(NCCL_PROFILER_PLUGIN=none)
  [ $c = default ] && envs=(NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_DIR=$d/traces)
  env "${envs[@]}" SCRIPT=coexist.py TIMEOUT=180 NPROC=2 "$here/ddp/run.sh" --one-gpu --out "$d" --steps 20 --mb 8 \
    >"$d.log" 2>&1
  log "coexist_$c: exit $?; $(grep -h '^KINETO' "$d.log" | tr '\n' ' ')"
done

# 4. latency, interleaved: none, off, kernels (default), full
for r in 1 2 3 4; do
  want lat || break
  for c in none off kernels full; do
    d=$OUT/lat/$c-$r
    case $c in
      none) NRANKS=2 "$here/run_modes.sh" twonode "$d" --ops allreduce --min-bytes 8 --max-bytes 256K --factor 8 --iters 300 --warmup 30 >/dev/null 2>&1 ;;
      *) NRANKS=2 NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_CUPTI=$c COMMLENS_SUMMARY=file COMMLENS_DIR=$d/traces \
           "$here/run_modes.sh" twonode "$d" --ops allreduce --min-bytes 8 --max-bytes 256K --factor 8 --iters 300 --warmup 30 >/dev/null 2>&1 ;;
    esac
    echo "$c $r exit $?" >>"$OUT/lat/runs.txt"
  done
done
if want lat; then
  rm -rf "$OUT"/lat/*/traces/*.trace.json   # the summaries stay; the traces are not needed here
  log "latency: $(grep -c 'exit 0' "$OUT/lat/runs.txt") of 16 runs ok"
fi
(cd "$OUT" && tar czf runs.tgz --exclude=runs.tgz */)
cat "$OUT/status.txt"
