#!/usr/bin/env bash
# gpu_wheel.sh: the wheel on a GPU machine, as a user gets it. Installs the wheel built elsewhere
# (`make wheel`, carried as .gpu/commlens-*.whl) with `pip install --no-index` into a venv that
# sees the machine's PyTorch (--system-site-packages), runs a 2-rank PyTorch DDP job turned on by
# the wheel's one line (examples/wheel/job.py: commlens.enable(DIR) before the process group;
# rank 1 planted 20 ms late before every step), then the installed `commlens report` and
# `commlens report --html` there. Two ranks on two GPUs where there are two, else sharing GPU 0
# as emulated nodes (examples/ddp/one_gpu.py). The job runs twice: with nothing set (the quiet
# default) and with COMMLENS_SUMMARY=print (each rank's table, as every rank printed before), and
# each rank's stderr lines at exit are counted from torchrun's per-rank logs.
#   examples/gpu_wheel.sh OUTDIR      (about 2 minutes)
# Leaves in OUTDIR: transcript.txt (every command and its output), report.txt, report.html,
# stderr_counts.txt, the profiles (profiles-default/, profiles-print/) and torchrun's logs.
set -u
OUT=${1:?usage: examples/gpu_wheel.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
T=$OUT/transcript.txt
: >"$T"
export NCCL_NVLS_ENABLE=0 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
for v in $(env | sed -n 's/^\(COMMLENS_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset NCCL_PROFILER_PLUGIN
say() { echo "$*" | tee -a "$T"; }
# run CMD...: the command and its output into the transcript; its exit status
run() { echo "\$ $*" >>"$T"; "$@" >>"$T" 2>&1; local rc=$?; echo "[exit $rc]" >>"$T"; return $rc; }
fail=0

set -- "$top"/.gpu/commlens-*.whl
[ $# -eq 1 ] && [ -f "$1" ] || { say "gpu_wheel: want one wheel in $top/.gpu (make wheel; copy build/dist/*.whl there), found: $*"; exit 1; }
whl=$1
say "== the machine"
run uname -srm; run python3 --version; run sh -c 'ldd --version | head -n 1'
run nvidia-smi -L
run python3 -c 'import torch; print("torch", torch.__version__, "NCCL", torch.cuda.nccl.version(), "GPUs", torch.cuda.device_count())'
say "wheel: $(basename "$whl"), $(stat -c %s "$whl") bytes"

# ---- install: a venv with pip; without ensurepip (no python3-venv), pip of the system for it ----
say "== install"
venv=$OUT/venv
rm -rf "$venv"
if run python3 -m venv --system-site-packages "$venv" && [ -x "$venv/bin/pip" ]; then
  run "$venv/bin/pip" install --no-index "$whl" || fail=1
else
  say "(python3 -m venv could not bring pip: the system's pip installs into the venv)"
  rm -rf "$venv"
  run python3 -m venv --without-pip --system-site-packages "$venv" &&
    run python3 -m pip --python "$venv/bin/python" install --no-index "$whl" || fail=1
fi
py=$venv/bin/python
cl=$venv/bin/commlens
# --system-site-packages sees the base interpreter's packages only; where python3 is itself a
# venv (PyTorch installed there), a .pth file lets the new venv see that one's packages too
if ! "$py" -c 'import torch' 2>/dev/null; then
  python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
    >"$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/machine-python.pth"
  run "$py" -c 'import torch; print("torch from", torch.__file__)' || fail=1
fi
[ -x "$cl" ] || { say "gpu_wheel: the install left no $cl (see $T)"; exit 1; }
run "$cl" --version || fail=1
run "$py" -m commlens --version || fail=1
run "$cl" --plugin-path || fail=1
run sh -c "objdump -p '$("$py" -c 'import commlens; print(commlens.cli_path())')' | grep NEEDED"

# ---- the job, twice ----
ngpu=$("$py" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
if [ "${ngpu:-0}" -ge 2 ]; then export VERDICT_SEPARATE_GPUS=1; how="two GPUs"; else how="sharing GPU 0 as two emulated nodes"; fi
job() {   # job NAME [VAR=VALUE...]: the 2-rank job with the wheel's enable; its logs in OUT/logs-NAME
  local name=$1; shift
  rm -rf "$OUT/profiles-$name" "$OUT/logs-$name" "$OUT/truth-$name"
  say "== the job ($name: 2 ranks, $how; DDP, 60 steps, rank 1 20 ms late before every step)"
  (cd "$OUT" && run env "$@" timeout -k 10 240 "$py" -m torch.distributed.run --standalone --nproc-per-node 2 \
     --log-dir "$OUT/logs-$name" --redirects 3 "$here/wheel/job.py" "$OUT/profiles-$name" \
     --mode ddp --steps 60 --late 1:20 --out "$OUT/truth-$name") || { say "the job ($name) failed (see $T)"; fail=1; }
  # each rank's stderr, from torchrun's logs (<log dir>/<run id>/attempt_0/<local rank>/stderr.log)
  for f in $(find "$OUT/logs-$name" -name stderr.log 2>/dev/null | sort); do
    local r; r=$(basename "$(dirname "$f")")
    echo "$name: rank $r: $(wc -l <"$f") stderr lines, $(grep -c '^commlens' "$f") from commlens, $(wc -c <"$f") bytes" |
      tee -a "$T" >>"$OUT/stderr_counts.txt"
    grep '^commlens' "$f" | head -n 3 | sed "s/^/  $name rank $r: /" >>"$T"
  done
}
: >"$OUT/stderr_counts.txt"
job default
job print COMMLENS_SUMMARY=print
cat "$OUT/stderr_counts.txt"
[ -s "$OUT/stderr_counts.txt" ] || { say "no per-rank stderr logs found under $OUT/logs-*"; fail=1; }

# ---- the installed CLI there ----
say "== commlens report, on this machine"
if run sh -c "'$cl' report '$OUT/profiles-default' >'$OUT/report.txt'"; then
  head -n 12 "$OUT/report.txt" | tee -a "$T"
else fail=1; fi
run "$cl" report "$OUT/profiles-default" --html "$OUT/report.html" || fail=1
[ -s "$OUT/report.html" ] && say "report.html: $(stat -c %s "$OUT/report.html") bytes" || fail=1
ls -la "$OUT/profiles-default" >>"$T" 2>&1
say "gpu_wheel: $([ $fail -eq 0 ] && echo done || echo 'some steps failed'); transcript in $T"
exit $fail
