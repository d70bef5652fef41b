#!/usr/bin/env bash
# run_modes.sh: starts clex (examples/allreduce) as NRANKS separate processes on one machine in one
# of three transport modes, so the same job can be profiled over NVLink, over sockets, and as if
# it spanned two hosts. The profiler is whatever the caller's environment selects.
#
#   examples/run_modes.sh MODE OUTDIR [extra clex args]
#     MODE    nvlink   NCCL's default transports (P2P over NVLink between the GPUs)
#             socket   NET/Socket over loopback: NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
#                      NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo
#             twonode  socket, plus a different NCCL_HOSTID per rank (host0, host1, ...), so NCCL
#                      believes every rank is on its own node
#     OUTDIR  gets rank<R>.log (stdout and stderr of rank R), rank<R>.csv, nccl.id
#   Environment: CLEX (binary; default .gpu/clex, else examples/allreduce/clex), NRANKS (2),
#   TIMEOUT (seconds, 300). NCCL_PROFILER_PLUGIN, COMMLENS_*, NCCL_DEBUG, ... pass through.
#   Exit status: 0 if every rank exited 0, else the first failure's (124 = timed out).
set -u

usage() { sed -n '5,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
MODE=$1
OUTDIR=$2
shift 2

here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${CLEX:-}" ]; then
  if [ -x .gpu/clex ]; then CLEX=.gpu/clex; else CLEX=$here/allreduce/clex; fi
fi
[ -x "$CLEX" ] || { echo "run_modes.sh: clex binary '$CLEX' not found (set CLEX=)" >&2; exit 2; }
NRANKS=${NRANKS:-2}
TIMEOUT=${TIMEOUT:-300}

# Mandatory on the lent machines: NVLink SHARP (multicast) must stay off.
export NCCL_NVLS_ENABLE=0
case "$MODE" in
  nvlink) ;;
  socket|twonode)
    export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket
    export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
    export NCCL_IB_DISABLE=1
    ;;
  *) echo "run_modes.sh: unknown mode '$MODE' (nvlink, socket, twonode)" >&2; exit 2 ;;
esac
# One GPU per pretend node: keep NCCL from looking for a multi-node NVLink domain.
[ "$MODE" = twonode ] && export NCCL_MNNVL_ENABLE=0

mkdir -p "$OUTDIR" || exit 2
ID_FILE=$OUTDIR/nccl.id
rm -f "$ID_FILE" "$ID_FILE".tmp.*

pids=()
# `timeout` puts each rank in its own process group, out of reach of the terminal's ^C: pass it on.
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; exit 130' INT TERM
for ((r = 0; r < NRANKS; r++)); do
  if [ "$MODE" = twonode ]; then hostid=host$r; local_rank=0; local_size=1
  else hostid=${NCCL_HOSTID:-}; local_rank=$r; local_size=$NRANKS; fi
  # Each rank is a fresh process (exec, never a fork of a CUDA process); `timeout` kills it if
  # it hangs, e.g. in a collective whose peer died.
  (
    export RANK=$r WORLD_SIZE=$NRANKS LOCAL_RANK=$local_rank LOCAL_WORLD_SIZE=$local_size
    if [ -n "$hostid" ]; then export NCCL_HOSTID=$hostid; fi
    exec timeout -k 10 "$TIMEOUT" "$CLEX" --rank "$r" --nranks "$NRANKS" --id-file "$ID_FILE" \
      --csv "$OUTDIR/rank$r.csv" "$@"
  ) >"$OUTDIR/rank$r.log" 2>&1 &
  pids+=($!)
done

# Wait for all; on the first failure stop the others at once (they would hang in NCCL).
rc=0
for ((left = NRANKS; left > 0; left--)); do
  wait -n
  st=$?
  if [ "$st" -ne 0 ] && [ "$rc" -eq 0 ]; then
    rc=$st
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  fi
done

for ((r = 0; r < NRANKS; r++)); do
  if ! grep -q '^# correctness: OK' "$OUTDIR/rank$r.log" 2>/dev/null && \
     ! grep -q '^# abort:' "$OUTDIR/rank$r.log" 2>/dev/null; then
    echo "run_modes.sh: rank $r did not finish cleanly; last lines of $OUTDIR/rank$r.log:" >&2
    tail -n 5 "$OUTDIR/rank$r.log" >&2
    [ "$rc" -ne 0 ] || rc=1
  fi
done
[ "$rc" -eq 124 ] && echo "run_modes.sh: timed out after ${TIMEOUT}s" >&2
exit "$rc"
