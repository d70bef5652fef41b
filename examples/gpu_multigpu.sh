#!/usr/bin/env bash
# gpu_multigpu.sh: commlens on jobs in which one process drives several GPUs, on a machine with 2 or
# more (with fewer it says so and exits 0). Every run is under the plugin with COMMLENS_CUPTI=on (or as set),
# its traces in OUTDIR/<run>/traces and its output in OUTDIR/<run>/log.txt:
#   - nccl-tests all_reduce_perf -g N (one thread, N GPUs) and -t N -g 1 (a thread per GPU), for
#     N = 2 and, with 4 GPUs, 4; once -g 2 -G 5 (CUDA graphs). Needs NCCL_TESTS (skipped without);
#   - clex --devices N, one thread (grouped calls; the straggler a spin kernel on rank 1's stream)
#     and a thread per GPU (rank 1's thread sleeps; once also its stream spins), all with
#     --delay-rank 1 --delay-us 3000;
#   - examples/jax/psum.py on every GPU, plain and with device 1 slow (skipped without jax);
#   - after each run: examples/check_exposure.py over its traces and `commlens report` over them
#     when the CLI is built; a closing table (run, files written, exit codes).
#   examples/gpu_multigpu.sh OUTDIR   (from the repository root; the plugin from .gpu/, else build/;
#   clex is built into .gpu/clex when nvcc is there)
#   Environment: NCCL_TESTS (nccl-tests' build directory), TIMEOUT (seconds per run, 300), PYTHON,
#   RECORD=1 (also COMMLENS_RECORD each run's ABI stream into OUTDIR/<run>/record, for test/data).
#   Exit status: 1 if a run or a check failed, else 0.
set -u
. "$(dirname "$0")/gpu_common.sh" gpu_multigpu.sh "$@" # exports NCCL_NVLS_ENABLE=0 for every run
shopt -s nullglob
TIMEOUT=${TIMEOUT:-300}
PY=${PYTHON:-python3}

if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  ngpu=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
else
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
fi
if [ "$ngpu" -lt 2 ]; then
  log "gpu_multigpu.sh: $ngpu GPU(s) visible, these runs need at least 2: nothing run"
  exit 0
fi
NS="2"
[ "$ngpu" -ge 4 ] && NS="2 4"
{ nvidia-smi -L; nvidia-smi topo -m; } >"$OUT/env.txt" 2>&1

[ -e "$PLUGIN" ] || PLUGIN=$PWD/build/libnccl-profiler-commlens.so
[ -e "$PLUGIN" ] || { log "gpu_multigpu.sh: no plugin in .gpu/ or build/ (make lib)"; exit 1; }
CLI=
for c in "$PWD/.gpu/commlens" "$PWD/build/commlens"; do [ -x "$c" ] && { CLI=$c; break; }; done
log "gpu_multigpu.sh: $ngpu GPUs, N in {$NS}; plugin $PLUGIN; CLI ${CLI:-(none: no report)}"

CLEX=$PWD/.gpu/clex
make -s -C "$here/allreduce" OUT="$CLEX" >"$OUT/build-clex.log" 2>&1 ||
  log "building clex failed (build-clex.log); using $CLEX if it is there"

rows=()
failed=0
run() {  # name command...: one run under commlens, then its checks and a row of the closing table
  local name=$1 d=$OUT/$1
  shift
  mkdir -p "$d"
  local rec=()
  [ "${RECORD:-0}" = 1 ] && rec=(env COMMLENS_RECORD="$d/record")
  NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_CUPTI=${COMMLENS_CUPTI:-on} COMMLENS_DIR=$d/traces NCCL_DEBUG=${NCCL_DEBUG:-WARN} \
    ${rec[@]+"${rec[@]}"} timeout -k 10 "$TIMEOUT" "$@" >"$d/log.txt" 2>&1
  local rc=$? check=- report=- files=("$d"/traces/*)
  local traces=("$d"/traces/*.trace.json*)
  if [ ${#traces[@]} -gt 0 ]; then
    python3 "$here/check_exposure.py" "${traces[@]}" >"$d/check.txt" 2>&1
    check=$?
    if [ -n "$CLI" ]; then
      "$CLI" report "$d/traces" >"$d/report.txt" 2>&1
      report=$?
    fi
  fi
  case "$rc $check $report" in "0 "[0-]" "[0-]) ;; *) failed=1 ;; esac
  log "$name: exit $rc, ${#files[@]} files, check_exposure $check, report $report"
  rows+=("$(printf '%-24s %5s %4s %6s %6s' "$name" "${#files[@]}" "$rc" "$check" "$report")")
}

if [ -z "${NCCL_TESTS:-}" ]; then
  log "nccl-tests: skipped (set NCCL_TESTS=/path/to/nccl-tests/build)"
elif [ ! -x "$NCCL_TESTS/all_reduce_perf" ]; then
  log "nccl-tests: skipped ($NCCL_TESTS/all_reduce_perf is not there)"
else
  AR=("$NCCL_TESTS/all_reduce_perf" -b 8 -e 64M -f 4 -n 20 -w 5 -c 1)
  for n in $NS; do
    run "nccltests-g$n" "${AR[@]}" -g "$n"
    run "nccltests-t$n" "${AR[@]}" -t "$n" -g 1
  done
  run nccltests-g2-graph "${AR[@]}" -g 2 -G 5
fi

if [ -x "$CLEX" ] && "$CLEX" --help | grep -q -- --devices; then
  CX=(--ops allreduce,allgather,sendrecv --min-bytes 1M --max-bytes 16M --factor 4 --iters 10 --warmup 2
      --delay-rank 1 --delay-us 3000)
  for n in $NS; do
    run "clex-d$n-onethread" "$CLEX" --devices "$n" --threads 0 "${CX[@]}" --csv "$OUT/clex-d$n-onethread/clex.csv"
    run "clex-d$n-threads" "$CLEX" --devices "$n" --threads 1 "${CX[@]}" --csv "$OUT/clex-d$n-threads/clex.csv"
  done
  run clex-d2-threads-stream "$CLEX" --devices 2 --threads 1 --delay-how stream "${CX[@]}"
else
  log "clex: skipped ($CLEX is missing or has no --devices: make -C examples/allreduce OUT=$CLEX)"
fi

if "$PY" -c 'import jax' >/dev/null 2>&1; then
  export XLA_PYTHON_CLIENT_PREALLOCATE=false
  run jax-psum "$PY" "$here/jax/psum.py" --steps 20
  run jax-psum-delay "$PY" "$here/jax/psum.py" --steps 20 --delay-device 1 --delay-ms 3
else
  log "jax: skipped (no jax in $PY)"
fi

{
  echo
  printf '%-24s %5s %4s %6s %6s\n' run files rc check report
  printf '%s\n' ${rows[@]+"${rows[@]}"}
} | tee -a "$OUT/status.txt"
exit "$failed"
