#!/usr/bin/env bash
# mask_sampling.sh: what the default costs a latency-bound loop of small collectives, side by side
# with no plugin, NCCL's Inspector and a null plugin asking for NCCL's kernel-channel timers; then
# the launch-bound step (bench/sampled_cost.sh). One call of the GPU machine, within BUDGET_S.
#
#   bench/mask_sampling.sh OUTDIR [PLUGIN]      (run from the repository root)
#     PLUGIN   the commlens library (default .gpu/libnccl-profiler-commlens.so, built here)
#
# The loop (LOOP): torch, bench/allreduce_loop.py; c, bench/host_loop.cu (built here against
# PyTorch's NCCL), the same loop without Python, HOST_US [30] of the host's own work between two
# calls, the calling thread's time inside ncclAllReduce measured too. 2 ranks (a GPU each when
# there are two, else both on GPU 0 as emulated nodes over sockets: said in OUTDIR/env.txt),
# BLOCKS blocks of ITERS 8-byte all_reduces (WARMUP_S whole seconds with LOOP=c); each round
# runs every configuration once, the order turned each round:
#   none         no plugin
#   cl-default   commlens as shipped (COMMLENS_TIMERS=sampled, flight recorder on)
#   cl-noflight  the same with COMMLENS_FLIGHT_S=0 (the recorder's cost, by difference)
#   cl-all       COMMLENS_TIMERS=all (every collective timed: the default before)
#   inspector    NCCL's Inspector (NCCL_INSPECTOR_ENABLE=1), built here from NCCL_SRC
#   cl-nocupti   the default with COMMLENS_CUPTI=0 (no kernel records, no timers: host events only)
#   null-kch     bench/null_plugin.c asking Coll + KernelCh (NCCL's own cost of its timers)
#   null-dflt    the null plugin asking the default's events, timers left out (0x5F0F: NCCL's own
#                cost of handing them to a plugin, which no plugin can cut)
#   null-none    the null plugin asking nothing
# Then bench/sampled_cost.sh (the cuda launch-bound step: tiny kernels and 2 all_reduces a step,
# shortened) if the budget has room. Environment [defaults]: ROUNDS [3] BLOCKS [6] ITERS [5000]
# WARMUP_S [3: the loop times its blocks after the first of commlens's CUPTI windows, which lasts from
# the start to 1 s after the first collective, and before the next, 30 s on: the cost between windows;
# the windows' own share is the launch-bound step's "in-window" figure, over the 30 s period]
# BUDGET_S [480] (no round starts that is not expected to end within it) CONFIGS [the nine above
# but cl-nocupti and null-dflt]
# NCCL_SRC [.gpu/nccl-src: NVIDIA/nccl; ext-profiler/inspector/ is what is built] PYTHON [python3] LOOP [torch]
# LB_RUN_S [60] LB_NONE_S [12] LB_BENCHES [cuda; empty: no launch-bound step] DRY_RUN [0; 1 prints what
# would run] PIN [1: rank k on its own 4 cores, 2+4k..5+4k, where taskset and 16 cores are there; the
# loop is bound by its host thread, and threads moved between cores made rounds 10 us apart].
# Output: OUTDIR/loop/r<round>/<config>.txt (the RESULT line and the log), the commlens runs'
# digests and summaries of round 1 (OUTDIR/loop/r1/<config>/), OUTDIR/table.md, OUTDIR/lb/.
set -u
OUT=${1:?usage: bench/mask_sampling.sh OUTDIR [PLUGIN]}
PLUGIN=${2:-$PWD/.gpu/libnccl-profiler-commlens.so}
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-3}; BLOCKS=${BLOCKS:-6}; ITERS=${ITERS:-5000}; BUDGET_S=${BUDGET_S:-480}; WARMUP_S=${WARMUP_S:-3}
CONFIGS=${CONFIGS:-none cl-default cl-noflight cl-all inspector null-kch null-none}   # and cl-nocupti, null-dflt
NCCL_SRC=${NCCL_SRC:-$PWD/.gpu/nccl-src}; PYTHON=${PYTHON:-python3}; DRY=${DRY_RUN:-0}; PIN=${PIN:-1}
LOOP=${LOOP:-torch}; HOST_US=${HOST_US:-30}
case $LOOP in torch|c) ;; *) echo "mask_sampling.sh: LOOP is torch or c, not '$LOOP'" >&2; exit 2;; esac
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$OUT/loop" "$OUT/bin" || exit 2
OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0
T0=$SECONDS
left() { echo $((BUDGET_S - (SECONDS - T0))); }

# ---- what runs where ----
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
{ command -v taskset >/dev/null && [ "$(nproc)" -ge 16 ]; } || PIN=0
SHARED=; [ "${ngpu:-0}" -lt 2 ] && SHARED=--shared-gpu
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 2
  if [ "$LOOP" = c ]; then echo "loop: bench/host_loop.cu, $HOST_US us of host work an iteration"; else echo "loop: bench/allreduce_loop.py"; fi
  if [ -n "$SHARED" ]; then echo "GPUs: ${ngpu:-0}; ranks: both on GPU 0, as emulated nodes over sockets"
  else echo "GPUs: $ngpu; ranks: one GPU each"; fi
  if [ "$PIN" = 1 ]; then echo "cores: rank k on 2+4k..5+4k (taskset)"; else echo "cores: not pinned"; fi
  "$PYTHON" -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1; } \
  | tee "$OUT/env.txt"

# ---- the plugins: commlens (carried), the null plugin and Inspector (built here) ----
NULL_LIB=$OUT/bin/libnccl-profiler-null.so
INSPECTOR_LIB=$OUT/bin/libnccl-profiler-inspector.so
HOST_LOOP=$OUT/bin/host_loop
. "$here/nvcc_nccl.sh"
build() {
  if [ "$LOOP" = c ] && ! nvcc_nccl "$here/host_loop.cu" "$HOST_LOOP" "$OUT/bin/host_loop.log"; then
    echo "host_loop: build failed (bin/host_loop.log)" | tee -a "$OUT/skipped.txt"; exit 3
  fi
  [ -f "$PLUGIN" ] || { echo "no commlens plugin at $PLUGIN" | tee -a "$OUT/skipped.txt"; }
  gcc -std=c11 -D_GNU_SOURCE -O2 -fPIC -fvisibility=hidden -Iinclude -shared -o "$NULL_LIB" "$here/null_plugin.c" \
    -Wl,-z,nodelete >"$OUT/bin/null.log" 2>&1 || echo "null plugin: build failed (bin/null.log)" | tee -a "$OUT/skipped.txt"
  local src=$NCCL_SRC/ext-profiler/inspector b=$OUT/bin/inspector
  if [ -d "$src" ]; then
    rm -rf "$b" && cp -r "$src" "$b" && \
    printf '#include "version.h"\nconst char* get_git_version_info() { return "commlens bench"; }\n' >"$b/version.cc" && \
    (cd "$b" && timeout 120 g++ -I"$CUDA_HOME/include" -Inccl -O3 -fPIC -shared -DNDEBUG -o "$INSPECTOR_LIB" \
       version.cc inspector_plugin.cc inspector.cc json.cc -L"$CUDA_HOME/lib64" -lcudart -lpthread) >"$OUT/bin/inspector.log" 2>&1 \
      || echo "inspector: build failed (bin/inspector.log)" | tee -a "$OUT/skipped.txt"
  else
    echo "inspector: no NCCL sources at $NCCL_SRC (ext-profiler/inspector)" | tee -a "$OUT/skipped.txt"
  fi
}
lib_of() { case $1 in cl-*) echo "$PLUGIN";; null-*) echo "$NULL_LIB";; inspector) echo "$INSPECTOR_LIB";; *) echo;; esac; }

# ---- one run: a configuration's 2 ranks ----
port=29600
one() {  # config round
  local cfg=$1 r=$2 d=$OUT/loop/r$2 lib env=() pids=() rc=0 s k cmd node pin
  lib=$(lib_of "$cfg"); mkdir -p "$d"
  [ "$cfg" != none ] && env+=(NCCL_PROFILER_PLUGIN="$lib")
  case $cfg in
    cl-*) env+=(COMMLENS_DIR="$d/$cfg" COMMLENS_SUMMARY=file);;&
    cl-noflight) env+=(COMMLENS_FLIGHT_S=0);;
    cl-all) env+=(COMMLENS_TIMERS=all);;
    cl-nocupti) env+=(COMMLENS_CUPTI=0);;
    inspector) env+=(NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR="$d/$cfg.dir");;
    null-kch) env+=(NULLPROF_MASK=0x42 NULLPROF_MARK="$d/$cfg.mark");;
    null-dflt) env+=(NULLPROF_MASK=0x5F0F NULLPROF_MARK="$d/$cfg.mark");;
    null-none) env+=(NULLPROF_MASK=0 NULLPROF_MARK="$d/$cfg.mark");;
  esac
  port=$((port + 1))
  if [ "$DRY" = 1 ]; then echo "round $r: $cfg: env ${env[*]:-} $LOOP loop ${SHARED:-}"; return; fi
  for k in 0 1; do
    pin=(); [ "$PIN" = 1 ] && pin=(taskset -c $((2 + 4 * k))-$((5 + 4 * k)))
    if [ "$LOOP" = c ]; then   # the same count of warm-up calls on both ranks, past WARMUP_S
      cmd=("$HOST_LOOP" --rank $k --nranks 2 --device $([ -n "$SHARED" ] && echo 0 || echo $k) --id-file "$d/$cfg.id"
           --blocks "$BLOCKS" --iters "$ITERS" --host-us "$HOST_US" --warmup $(( WARMUP_S * 1000000 / (HOST_US + 3) )))
    else
      cmd=("$PYTHON" "$here/allreduce_loop.py" --blocks "$BLOCKS" --iters "$ITERS" --warmup-s "$WARMUP_S" ${SHARED:-})
    fi
    node=(); [ -n "$SHARED" ] && [ "$LOOP" = c ] && node=(NCCL_HOSTID=host$k NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
      NCCL_NET=Socket NCCL_IB_DISABLE=1 NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo})   # as one_gpu.py sets
    "${pin[@]}" env "${env[@]}" "${node[@]}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT RANK=$k LOCAL_RANK=$k WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port timeout -k 5 120 "${cmd[@]}" >"$d/$cfg.rank$k.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; s=$?; [ $rc -eq 0 ] && rc=$s; done
  { grep -h '^RESULT ' "$d/$cfg.rank0.log" "$d/$cfg.rank1.log"; echo "rc=$rc"; grep -h 'PROFILER/Plugin' "$d/$cfg.rank0.log" | head -n 2; } >"$d/$cfg.txt"
  [ "$r" -gt 1 ] && rm -rf "$d/$cfg" "$d/$cfg.dir"   # round 1's outputs stay: digests for `commlens report`
  echo "round $r: $cfg: exit $rc ($(left) s left)"
}

[ "$DRY" = 1 ] || build
cfgs=()
for c in $CONFIGS; do
  l=$(lib_of "$c")
  if [ "$DRY" != 1 ] && [ "$c" != none ] && [ ! -f "$l" ]; then echo "skip $c: no library" | tee -a "$OUT/skipped.txt"; continue; fi
  cfgs+=("$c")
done
per=0
for r in $(seq 1 "$ROUNDS"); do
  if [ "$r" -gt 1 ] && [ "$per" -gt "$(left)" ]; then echo "stopping after $((r - 1)) rounds (budget)" | tee -a "$OUT/skipped.txt"; break; fi
  rs=$SECONDS; n=${#cfgs[@]}
  for i in $(seq 0 $((n - 1))); do one "${cfgs[$(( (i + r) % n ))]}" "$r"; done
  per=$((SECONDS - rs))
done
[ "$DRY" = 1 ] || "$PYTHON" "$here/mask_sampling_table.py" "$OUT" | tee "$OUT/table.md"

# ---- the launch-bound step, shortened to what the budget leaves ----
LB_RUN_S=${LB_RUN_S:-60}; LB_NONE_S=${LB_NONE_S:-12}; LB_BENCHES=${LB_BENCHES-cuda}
need=$(( $(echo $LB_BENCHES | wc -w) * (LB_RUN_S + 2 * LB_NONE_S + 45) + 90 ))   # three runs a bench, starts, nvcc
if [ -z "$LB_BENCHES" ]; then
  echo "launch-bound step: not asked for (LB_BENCHES empty)"
elif [ "$(left)" -ge "$need" ] || [ "$DRY" = 1 ]; then
  echo "launch-bound step ($LB_BENCHES): RUN_S=$LB_RUN_S NONE_S=$LB_NONE_S ($(left) s left)"
  [ "$DRY" = 1 ] || RUN_S=$LB_RUN_S NONE_S=$LB_NONE_S BENCHES=$LB_BENCHES PYTHON=$PYTHON \
    bash "$here/sampled_cost.sh" "$OUT/lb" "$PLUGIN" >"$OUT/lb.log" 2>&1
  [ "$DRY" = 1 ] || { cat "$OUT/lb/sampled_cost.txt" 2>/dev/null; grep -h "NCCL's kernel-channel timers on a sample\|GPU timing" \
    "$OUT"/lb/*/traces/*.summary.txt 2>/dev/null | cut -c1-300; }
else
  echo "launch-bound steps skipped: $(left) s left, $need wanted" | tee -a "$OUT/skipped.txt"
fi
echo "done in $((SECONDS - T0)) s"
