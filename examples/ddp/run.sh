#!/usr/bin/env bash
# run.sh: starts examples/ddp/ddp_train.py (or SCRIPT, e.g. coexist.py) on this machine's GPUs with
# torchrun (NPROC processes, default 2), with NCCL_NVLS_ENABLE=0 and a timeout. The profiler comes
# from the caller's environment (NCCL_PROFILER_PLUGIN, COMMLENS_*).
# Usage: [SCRIPT=coexist.py] examples/ddp/run.sh [script args]
set -u
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0
NPROC=${NPROC:-2}
TIMEOUT=${TIMEOUT:-300}
PYTHON=${PYTHON:-python3}
SCRIPT=${SCRIPT:-ddp_train.py}
# torchrun starts each rank as a fresh `python` process (fork+exec before any CUDA use).
exec timeout -k 10 "$TIMEOUT" "$PYTHON" -m torch.distributed.run --standalone \
  --nproc-per-node "$NPROC" "$here/$SCRIPT" "$@"
