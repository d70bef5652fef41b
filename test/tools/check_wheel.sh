#!/bin/sh
# check_wheel.sh: the wheel `make wheel` built, as a user gets it. Checks the file (its name and
# platform tag, every RECORD hash), installs it with `pip install --no-index` into a fresh venv,
# and runs what it installed: `commlens --version` and `python -m commlens` (the one VERSION),
# the license (METADATA says Apache-2.0, the dist-info holds the tree's LICENSE),
# the module (commlens.plugin_path() loads and exports the profiler ABI), the CLI reading a real
# recorded job (test/data/verdict/persistent_ddp: the report byte for byte its golden, the HTML
# page), the CLI's shared libraries (glibc only), and commlens.enable() end to end: the recorded
# 2-rank NVLink run replayed through the plugin it names, rank 0's one line at exit, the report.
#   sh test/tools/check_wheel.sh BUILD     (absolute; holds dist/*.whl and commlens-replay)
# Prints "wheel/install: N passed, N failed". Without Python's venv module it checks the file
# alone and says why.
B=${1:?usage: check_wheel.sh BUILD}
cd "$(dirname "$0")/../.." || exit 1
top=$(pwd)
passed=0; failed=0
ok() { passed=$((passed+1)); }
no() { failed=$((failed+1)); echo "  FAIL $*"; }
check() { what=$1; shift; if "$@"; then ok; else no "$what"; fi; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/commlens-wheel-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
version=$(cat VERSION)

# ---- the file ----
set -- "$B"/dist/commlens-*.whl
if [ $# -ne 1 ] || [ ! -f "$1" ]; then
  echo "  FAIL want one wheel in $B/dist, found: $*"; echo "wheel/install: 0 passed, 1 failed"; exit 1
fi
whl=$1
case $(basename "$whl") in
  "commlens-$version-py3-none-manylinux_2_"[0-9]*"_x86_64.whl") ok ;;
  *) no "the wheel's name $(basename "$whl") is not commlens-$version-py3-none-manylinux_2_NN_x86_64.whl" ;;
esac
if out=$(python3 - "$whl" <<'EOF'
import base64, csv, hashlib, io, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
rec = [n for n in names if n.endswith(".dist-info/RECORD")]
assert len(rec) == 1, "no RECORD"
rows = list(csv.reader(io.TextIOWrapper(z.open(rec[0]), "utf-8")))
listed = {r[0] for r in rows}
assert listed == names, "RECORD lists %s, the zip holds %s" % (sorted(listed ^ names), "")
for name, h, size in rows:
    if name == rec[0]:
        continue
    data = z.read(name)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert h == want and int(size) == len(data), "%s: RECORD says %s %s" % (name, h, size)
for exe in ("commlens/bin/commlens",):
    assert (z.getinfo(exe).external_attr >> 16) & 0o111, exe + " is not executable in the zip"
EOF
); then ok; else no "the wheel's RECORD: $out"; fi

# ---- installed into a fresh venv ----
venv=$tmp/venv
if ! python3 -m venv "$venv" >"$tmp/venv.log" 2>&1; then
  echo "  note: python3 -m venv failed ($(tail -n 1 "$tmp/venv.log")): the wheel is not installed here"
  echo "wheel/install: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit
fi
py=$venv/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
if "$venv/bin/pip" install --no-index --no-cache-dir "$whl" >"$tmp/pip.log" 2>&1; then ok
else no "pip install --no-index $whl:"; tail -n 5 "$tmp/pip.log"; echo "wheel/install: $passed passed, $failed failed"; exit 1; fi

check "commlens --version is not 'commlens $version'" [ "$("$venv/bin/commlens" --version)" = "commlens $version" ]
check "python -m commlens --version is not 'commlens $version'" [ "$("$py" -m commlens --version)" = "commlens $version" ]
if out=$("$py" - "$version" "$top/LICENSE" <<'EOF' 2>&1
import ctypes, importlib.metadata as md, os, sys, commlens
assert commlens.__version__ == sys.argv[1], commlens.__version__
assert md.metadata("commlens")["License"] == "Apache-2.0", md.metadata("commlens")["License"]
assert md.distribution("commlens").read_text("LICENSE") == open(sys.argv[2]).read(), "the wheel's LICENSE is not the tree's"
p = commlens.plugin_path()
assert os.path.isabs(p) and p.startswith(sys.prefix), p
lib = ctypes.CDLL(p)
for v in ("ncclProfiler_v5", "ncclProfiler_v6"):
    getattr(lib, v)          # AttributeError when the ABI table is not exported
try:
    commlens.enable(no_such_setting=1)
    raise SystemExit("enable() took a setting the plugin does not have")
except TypeError:
    pass
EOF
); then ok; else no "the module: $out"; fi
check "commlens --plugin-path is not commlens.plugin_path()" \
  [ "$("$venv/bin/commlens" --plugin-path)" = "$("$py" -c 'import commlens; print(commlens.plugin_path())')" ]
needs=$(objdump -p "$("$py" -c 'import commlens; print(commlens.cli_path())')" 2>/dev/null | awk '$1 == "NEEDED" {print $2}' | tr '\n' ' ')
case $needs in
  *libc.so.6*) case $needs in *json-c*|*libz*) no "the installed CLI needs $needs" ;; *) ok ;; esac ;;
  *) no "objdump could not read the installed CLI ($needs)" ;;
esac

# the CLI on a real recorded job: the report as its golden, and the HTML page
golden=test/data/golden/verdict/persistent_ddp/report.txt
if (cd test/data/verdict && "$venv/bin/commlens" report persistent_ddp >"$tmp/report.txt" 2>"$tmp/report.err") &&
   cmp -s "$tmp/report.txt" "$golden"; then ok
else no "commlens report persistent_ddp differs from $golden:"; diff "$golden" "$tmp/report.txt" | head -n 10; cat "$tmp/report.err"; fi
if "$venv/bin/commlens" report test/data/verdict/persistent_ddp --html "$tmp/page.html" >/dev/null 2>&1 &&
   head -c 15 "$tmp/page.html" | grep -q '<!DOCTYPE html>'; then ok
else no "commlens report --html wrote no page"; fi

# commlens.enable() end to end: the plugin it names records a replayed 2-rank job; rank 0 says
# where the files are, rank 1 nothing; the installed CLI reads them
if [ -x "$B/commlens-replay" ]; then
  if out=$(cd "$tmp" && "$py" - "$B/commlens-replay" "$top/test/data/real" <<'EOF' 2>&1
import os, subprocess, sys, commlens
replay, real = sys.argv[1], sys.argv[2]
d = commlens.enable("job", output="digest", cupti="off")
assert d == os.path.abspath("job") and os.environ["COMMLENS_DIR"] == d, d
assert os.environ["NCCL_PROFILER_PLUGIN"] == commlens.plugin_path()
procs = [subprocess.Popen([replay, "--fast", "%s/nccl2.28.3-h200x2-nvlink-r%d.rec.gz" % (real, r),
                           os.environ["NCCL_PROFILER_PLUGIN"]], env=dict(os.environ, RANK=str(r)),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for r in (0, 1)]
err = [p.communicate()[1] for p in procs]
assert all(p.returncode == 0 for p in procs), err
line = "commlens: this job's profiles are in %s; read them with: commlens report %s\n" % (d, d)
assert err[0] == line, "rank 0 said %r" % err[0]
assert err[1] == "", "rank 1 said %r" % err[1]
EOF
); then ok; else no "commlens.enable() and the replayed job: $out"; fi
  if "$venv/bin/commlens" report "$tmp/job" >"$tmp/job.txt" 2>&1 && grep -q '^Verdict: ' "$tmp/job.txt" &&
     grep -q ' 2 rank(s)' "$tmp/job.txt"; then ok
  else no "commlens report on the enabled job:"; head -n 12 "$tmp/job.txt"; fi
else
  no "$B/commlens-replay is missing (make builds it for the tests)"
fi
echo "wheel/install: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
