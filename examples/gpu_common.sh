# gpu_common.sh: sourced by the examples/gpu_*.sh scripts (after `set -u`), with the script's
# usage name as $1 and its arguments after: OUT (the output directory, made), PLUGIN (the
# commlens library carried in .gpu/), here (examples/), log (a line to OUT/status.txt and
# stdout), NCCL_NVLS_ENABLE=0, which the lent GPU machines need in every environment, and
# COMMLENS_OUTPUT=both unless set.
OUT=${2:?usage: $1 OUTDIR}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
# the checks here read each rank's trace (check_join.py, check_exposure.py): both outputs, so the
# digest (the default) is written beside it
export COMMLENS_OUTPUT=${COMMLENS_OUTPUT:-both}
PLUGIN=$PWD/.gpu/libnccl-profiler-commlens.so
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { echo "$*" | tee -a "$OUT/status.txt"; }
