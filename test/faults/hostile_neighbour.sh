#!/bin/sh
# hostile_neighbour.sh: a second user of the node plants hard links, symlinks, FIFOs and plain
# files at every path the plugin and the CLI write (the names a clean run of the same job made,
# the temporaries beside them, the old fixed spill name), in a shared world-writable directory;
# the job (a replayed real NCCL run) and the CLI then run as root beside them. Nothing outside
# the output directory may change, nothing may crash or hang, and the job's trace is complete.
# Needs root and useradd (CI runs as root); says it skipped otherwise.
# usage: hostile_neighbour.sh BUILD_DIR   (prints "faults/hostile_neighbour: N passed, N failed")
set -u
SUITE=faults/hostile_neighbour
B=$(cd "${1:-build}" && pwd)
CLI=$B/commlens
REPLAY=$B/commlens-replay
LIB=$B/libnccl-profiler-commlens.so
TOP=$(cd "$(dirname "$0")/../.." && pwd)
REC=$TOP/test/data/real/nccl2.28.3-h200x2-socket-r0.rec.gz
NB=commlens-nb
passed=0; failed=0
ok() { passed=$((passed+1)); }
bad() { failed=$((failed+1)); echo "  FAIL $*"; }
check() { if eval "$1"; then ok; else bad "$2"; fi; }
skip() { echo "$SUITE: 0 passed, 0 failed (skipped: $*)"; exit 0; }

[ "$(id -u)" = 0 ] || skip "needs root to add a second user"
for t in useradd runuser mkfifo sha256sum timeout; do command -v $t >/dev/null 2>&1 || skip "no $t"; done
for f in "$CLI" "$REPLAY" "$LIB" "$REC"; do [ -e "$f" ] || skip "missing $f"; done
if ! id -u $NB >/dev/null 2>&1; then
  useradd -M -r -s /bin/sh $NB 2>/dev/null || id -u $NB >/dev/null 2>&1 || skip "useradd $NB failed"
fi
as_nb() { runuser -u $NB -- "$@"; }
as_nb true || skip "runuser to $NB does not work here"

W=$(mktemp -d /tmp/commlens-hostile-XXXXXX)
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
mkdir "$W/clean" "$W/shared" "$W/victim" "$W/nbhome"
chmod 1777 "$W/shared"                 # like /tmp or a scratch area: everyone may create
chown $NB "$W/nbhome"
# Victims: a root file a symlink points at, and the neighbour's own file it hard-links to
# (fs.protected_hardlinks lets a user link only files it owns: the damage lands on its data,
# and through it on anyone who trusts that path).
echo "root's data" >"$W/victim/root_file"; chmod 644 "$W/victim/root_file"
as_nb sh -c "echo 'neighbour data' > '$W/nbhome/nb_file'"
victims() { cat "$W/victim/root_file" "$W/nbhome/nb_file" | sha256sum; }
before=$(victims)

# The job: one rank of a recorded real run replayed through the plugin, with Prometheus
# textfiles and the summary file on, gzip or not.
job_env() {   # $1 = output dir, $2 = gzip 0/1
  echo "COMMLENS_DIR=$1 COMMLENS_PROM=$1 COMMLENS_SUMMARY=file COMMLENS_GZIP=$2 COMMLENS_EXIT_WAIT_S=20"
}
colls() {     # "collectives events dropped" of the traces under $1, as the CLI reads them
  timeout 60 "$CLI" report --json "$1" 2>/dev/null | python3 -c '
import json,sys
try:
    r=json.load(sys.stdin)["ranks"]
    print(sum(x["colls"] for x in r), sum(x["plugin"]["events"] for x in r), sum(x["plugin"]["dropped"] for x in r))
except Exception: print("unreadable")' 2>/dev/null
}

for gz in 0 1; do
  rm -rf "$W/clean"/* "$W/shared"/*
  # 1. a clean run tells which names the job writes (its pid in them)
  env $(job_env "$W/clean" $gz) sh -c 'echo $$ >"$0/../clean.pid"; exec "$1" --virtual-clock --fast "$2" "$3"' \
      "$W/clean" "$REPLAY" "$REC" "$LIB" >"$W/clean.log" 2>&1
  check '[ $? = 0 ]' "gzip=$gz: clean replay failed: $(tail -n 3 "$W/clean.log")"
  cpid=$(cat "$W/clean.pid")
  # the Prometheus file lives only while the job does: its name is the trace's with .prom
  names=$(cd "$W/clean" && ls && ls | sed -n 's/\.trace\.json\(\.gz\)\{0,1\}$/.prom/p')
  check '[ -n "$names" ]' "gzip=$gz: the clean run wrote nothing"
  want=$(colls "$W/clean")
  # 2. the hostile run: the neighbour plants at every name for the job's pid before it starts
  cat >"$W/plant.sh" <<EOF
d=\$1; pid=\$2; k=0
for n in $(echo $names | tr '\n' ' ') commlens-$(hostname)-$cpid.spill; do
  n=\$(echo "\$n" | sed "s/-$cpid/-\$pid/g")
  for p in "\$d/\$n" "\$d/\$n.tmp"; do
    case \$((k % 4)) in
      0) ln -s "$W/victim/root_file" "\$p" ;;
      1) ln "$W/nbhome/nb_file" "\$p" ;;
      2) mkfifo "\$p" ;;
      3) echo planted > "\$p" ;;
    esac
    k=\$((k+1))
  done
done
EOF
  env $(job_env "$W/shared" $gz) timeout 300 sh -c '
      runuser -u "$4" -- sh "$0/../plant.sh" "$0" $$ || exit 99
      exec "$1" --virtual-clock --fast "$2" "$3"' \
      "$W/shared" "$REPLAY" "$REC" "$LIB" $NB >"$W/hostile.log" 2>&1
  rc=$?
  check '[ $rc = 0 ]' "gzip=$gz: the job beside planted files exited $rc (124: hung): $(tail -n 5 "$W/hostile.log")"
  check '[ "$(victims)" = "$before" ]' "gzip=$gz: a file outside the output directory changed"
  got=$(colls "$W/shared")
  check '[ "${want%% *}" -gt 0 ] 2>/dev/null && [ "$got" = "$want" ]' "gzip=$gz: the trace beside planted files holds (collectives events dropped) $got, the clean run $want"
done

# 3. the CLI: planted temporaries beside its outputs, a FIFO among its inputs
cp -r "$W/clean" "$W/in"
as_nb true
chmod 1777 "$W/in"
for out in report.html merged.json merged.pftrace; do
  as_nb ln -s "$W/victim/root_file" "$W/in/$out.tmp"
done
as_nb mkfifo "$W/in/commlens-r9-fifo-1.trace.json"
timeout 120 "$CLI" report --html "$W/in/report.html" "$W/in" >"$W/cli.log" 2>&1
rc=$?
check '[ $rc != 124 ]' "report hung on a FIFO among its inputs"
check '[ $rc = 0 ] && [ -s "$W/in/report.html" ] && [ ! -L "$W/in/report.html" ]' "report --html beside planted files: exit $rc: $(tail -n 3 "$W/cli.log")"
timeout 120 "$CLI" merge "$W/in" -o "$W/in/merged.json" >"$W/cli.log" 2>&1
rc=$?
check '[ $rc != 124 ]' "merge hung on a FIFO among its inputs"
check '[ $rc = 0 ] && [ -s "$W/in/merged.json" ] && [ ! -L "$W/in/merged.json" ]' "merge beside planted files: exit $rc: $(tail -n 3 "$W/cli.log")"
timeout 120 "$CLI" merge "$W/in" -o "$W/in/merged.pftrace" >"$W/cli.log" 2>&1
rc=$?
check '[ $rc = 0 ] && [ -s "$W/in/merged.pftrace" ]' "merge --pftrace beside planted files: exit $rc: $(tail -n 3 "$W/cli.log")"
check '[ "$(victims)" = "$before" ]' "the CLI changed a file outside its output directory"

echo "$SUITE: $passed passed, $failed failed"
[ $failed = 0 ]
