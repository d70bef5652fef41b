#!/usr/bin/env bash
# nccltests_overhead.sh: the NVLink overhead table (docs/performance.md) with nccl-tests, one process
# driving 2 GPUs: all_reduce_perf -g 2 -b 8 -e 1M -f 8, configurations interleaved round-robin
# ROUNDS times, per NCCL library given. Each round runs every configuration once, in an order
# rotated per round, so drift and warm-up spread evenly.
#
#   bench/nccltests_overhead.sh OUTDIR NCCL_TESTS_BUILD [NAME=LIBDIR ...]
#     NAME=LIBDIR   an NCCL to test (LD_LIBRARY_PATH=LIBDIR); none given: the system's ("sys")
# Environment: CL_LIB (commlens plugin), NULL_LIB (bench null plugin), INSPECTOR_LIB, EXAMPLE_LIB
#   (NCCL's inspector and example plugins; a configuration whose library is missing is skipped),
#   ROUNDS [8], CONFIGS ["none null cl-default cl-full inspector example"], ITERS [2000],
#   also known: null-kch (the null plugin asking the default mask and KernelCh: NCCL's own cost of
#   kernel-channel timers), cl-nocupti (COMMLENS_CUPTI=off: commlens' events alone), cl-kch (no
#   CUPTI, GPU spans from KernelCh), cl-sampled (COMMLENS_CUPTI=sampled where the plugin has it),
#   cl-before (BEFORE_LIB, another build of commlens in its default mode: a change priced against
#   the commit before it, in the same rounds),
#   RUN_TIMEOUT [60], BUDGET_S [400] (no round starts unless it is expected to end within it),
#   SIZES ["-b 8 -e 1M -f 8"], WARMUP [100: warm-up iterations per size; commlens's first CUPTI window
#   closes COMMLENS_CUPTI_SAMPLE's W after the first collective, so a warm-up longer than W keeps the
#   window and its close out of every timed size].
# Output: OUTDIR/<nccl>/r<round>/<config>.log, OUTDIR/table.md (printed too). A run whose plugin
# NCCL did not load (no "PROFILER/Plugin: Loaded" line) is INVALID and left out of the table.
set -u
OUT=${1:?OUTDIR}; NT=${2:?nccl-tests build dir}; shift 2
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-8}
CONFIGS=${CONFIGS:-none null cl-default cl-full inspector example}
ITERS=${ITERS:-2000}
SIZES=${SIZES:--b 8 -e 1M -f 8}
WARMUP=${WARMUP:-100}
RUN_TIMEOUT=${RUN_TIMEOUT:-60}
BUDGET_S=${BUDGET_S:-400}
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
ncls=("$@"); [ ${#ncls[@]} -eq 0 ] && ncls=(sys=)
lib_of() {
  case $1 in
    null*) echo "${NULL_LIB:-}";; cl-before) echo "${BEFORE_LIB:-}";; cl-*) echo "${CL_LIB:-}";;
    inspector) echo "${INSPECTOR_LIB:-}";; example) echo "${EXAMPLE_LIB:-}";; *) echo;;
  esac
}
cfgs=()
for c in $CONFIGS; do
  l=$(lib_of "$c")
  if [ "$c" != none ] && [ ! -f "$l" ]; then echo "skip $c: no library ('$l')" | tee -a "$OUT/skipped.txt"; continue; fi
  cfgs+=("$c")
done
one() {  # nccl-name libdir config round
  local d=$OUT/$1/r$4 lib; lib=$(lib_of "$3"); mkdir -p "$d" "$d/$3.dir"
  local env=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT)
  [ -n "$2" ] && env+=(LD_LIBRARY_PATH="$2:${LD_LIBRARY_PATH:-}")
  [ "$3" != none ] && env+=(NCCL_PROFILER_PLUGIN="$lib")
  case $3 in
    null) env+=(NULLPROF_MASK=0xF0F NULLPROF_MARK="$d/$3.dir/mark");;
    null-kch) env+=(NULLPROF_MASK=0xF4F NULLPROF_MARK="$d/$3.dir/mark");;
    cl-default|cl-before) env+=(COMMLENS_DIR="$d/$3.dir");;
    cl-nocupti) env+=(COMMLENS_DIR="$d/$3.dir" COMMLENS_CUPTI=off);;
    cl-kch) env+=(COMMLENS_DIR="$d/$3.dir" COMMLENS_CUPTI=off COMMLENS_EVENTS=default+kernelch);;
    cl-sampled) env+=(COMMLENS_DIR="$d/$3.dir" COMMLENS_CUPTI=sampled);;
    cl-full) env+=(COMMLENS_DIR="$d/$3.dir" COMMLENS_EVENTS=full COMMLENS_CUPTI=full);;
    inspector) env+=(NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR="$d/$3.dir");;
    example) env+=(NCCL_PROFILE_EVENT_MASK=3855 NCCL_PROFILE_DUMP_FILE="$d/$3.dir/example");;
  esac
  env "${env[@]}" timeout -k 5 "$RUN_TIMEOUT" "$NT/all_reduce_perf" -g 2 $SIZES \
    -n "$ITERS" -w "$WARMUP" -c 0 >"$d/$3.log" 2>&1
  echo "rc=$?" >>"$d/$3.log"
  echo "output bytes: $(du -sb "$d/$3.dir" | cut -f1)" >>"$d/$3.log"
  rm -rf "$d/$3.dir"   # traces and dumps can be large; their size is in the log
}
t0=$(date +%s); per=0
for r in $(seq 1 "$ROUNDS"); do
  now=$(date +%s)
  if [ "$r" -gt 1 ] && [ $((now - t0 + per)) -gt "$BUDGET_S" ]; then
    echo "stopping after $((r-1)) rounds (budget ${BUDGET_S}s)" | tee -a "$OUT/skipped.txt"; break
  fi
  rs=$(date +%s)
  n=${#cfgs[@]}
  for nc in "${ncls[@]}"; do
    for i in $(seq 0 $((n-1))); do
      c=${cfgs[$(( (i + r) % n ))]}
      one "${nc%%=*}" "${nc#*=}" "$c" "$r"
    done
  done
  per=$(( $(date +%s) - rs ))
done
python3 "$here/nccltests_table.py" "$OUT" | tee "$OUT/table.md"
