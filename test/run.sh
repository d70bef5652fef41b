#!/bin/sh
# Runs every test program given on the command line; each prints its own
# "suite: N passed, N failed" line. Closes with the totals in the plain form CI reads.
# Options between programs apply to the programs after them (one call runs every variant,
# so the last line counts everything):
#   --prefix P          prefix P to the suite names printed (e.g. asan/)
#   --env K=V           run the programs with K=V in their environment (no spaces in V)
#   --clear             forget the prefix and the --env settings; also starts a new group
#   --cmd 'CMD'         run CMD with sh -c, as if it were a program (fuzz runs)
#   --check-san-logs D  a suite "<prefix>sanitizer": fails if D holds any sanitizer report
# Groups (the programs between two --clear: plain, each sanitizer variant, the fuzz runs) run
# side by side, each in order, their output printed group by group when all have ended;
# TEST_JOBS=1 runs them one after another. TEST_TIMES=FILE keeps every program's seconds.

# ---- one group: the programs of "$@" in order; prints its lines, then "@tally P F S" ----
run_group() {
  passed=0; failed=0; broken=0; prefix=; envs=; times=
  while [ $# -gt 0 ]; do
    case "$1" in
    --prefix) prefix=$2; shift 2; continue ;;
    --env) envs="$envs $2"; shift 2; continue ;;
    --clear) prefix=; envs=; shift; continue ;;
    --cmd) ts=$(date +%s); out=$(env $envs sh -c "$2" 2>&1); rc=$?; tally "$out" $rc "$2"; timed "$(echo "$2" | awk '{print $4}')" $ts; shift 2; continue ;;
    --check-san-logs)
      d=$2; shift 2
      # A ThreadSanitizer runtime that could not map its shadow memory at start-up (seen
      # intermittently in exec'd children on this kernel: "failed to allocate ... errno: 12")
      # reports no finding about our code; a test that needed that process has already failed.
      for f in "$d"/*; do
        [ -f "$f" ] || continue
        if ! grep -qv 'ThreadSanitizer failed to allocate' "$f"; then
          echo "note: ignoring $f (TSan start-up failure, no report)"; rm -f "$f"
        fi
      done
      if [ -n "$(ls -A "$d" 2>/dev/null)" ]; then
        for f in "$d"/*; do echo "== $f"; head -n 60 "$f"; done
        echo "${prefix}sanitizer: 0 passed, 1 failed (reports in $d)"; failed=$((failed+1))
      else
        echo "${prefix}sanitizer: 1 passed, 0 failed"; passed=$((passed+1))
      fi
      continue ;;
    esac
    t=$1; shift
    ts=$(date +%s)
    out=$(env $envs "$t" 2>&1); rc=$?
    tally "$out" $rc "$t"
    timed "$t" $ts
  done
  printf '%s\n' "$times" | awk 'NF {print "@time " $0}'
  echo "@tally $passed $((failed+broken))"
}
timed() {                    # $1 = name, $2 = start second
  times="$times
$(( $(date +%s) - $2 )) $prefix$(basename "$1" | cut -c1-40)"
}
tally() {   # $1 = output, $2 = exit status, $3 = name for messages
  out=$1; rc=$2
  line=$(printf '%s\n' "$out" | grep -E '^[a-z0-9_/-]+: [0-9]+ passed, [0-9]+ failed' | tail -n 1)
  if [ -z "$line" ]; then
    printf '%s\n' "$out" | tail -n 30
    echo "$prefix$3: crashed or printed no result line (exit $rc)"; broken=$((broken+1)); return
  fi
  p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then printf '%s\n' "$out" | grep -E 'FAIL|error|Assert|Sanitizer|runtime error' | head -n 40; fi
  [ $rc -ne 0 ] && [ "$f" -eq 0 ] && f=1
  echo "$prefix$line" | sed -E "s/: [0-9]+ passed, [0-9]+ failed.*/: $p passed, $f failed/"
  passed=$((passed+p)); failed=$((failed+f))
}
quote() { printf "'%s' " "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# ---- split the arguments into groups at --clear; start each ----
t0_all=$(date +%s)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/commlens-run-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ngroups=0; group=; pids=
start_group() {
  [ -n "$group" ] || return 0
  ngroups=$((ngroups+1))
  eval "set -- $group"
  if [ "${TEST_JOBS:-0}" = 1 ]; then run_group "$@" >"$tmp/g$ngroups" 2>&1
  else run_group "$@" >"$tmp/g$ngroups" 2>&1 & pids="$pids $!"; fi
  group=
}
while [ $# -gt 0 ]; do
  [ "$1" = --clear ] && start_group
  group="$group$(quote "$1")"
  shift
done
start_group
for p in $pids; do wait "$p"; done

# ---- print the groups in order, then the slowest programs and the totals ----
passed=0; failed=0; i=0
while [ $i -lt $ngroups ]; do
  i=$((i+1))
  grep -v '^@' "$tmp/g$i"
  tl=$(grep '^@tally' "$tmp/g$i" | tail -n 1)
  if [ -z "$tl" ]; then echo "group $i ended without a tally"; failed=$((failed+1)); continue; fi
  passed=$((passed + $(echo "$tl" | awk '{print $2}'))); failed=$((failed + $(echo "$tl" | awk '{print $3}')))
done
cat "$tmp"/g* | sed -n 's/^@time //p' | sort -rn >"$tmp/times"
[ -n "$TEST_TIMES" ] && cp "$tmp/times" "$TEST_TIMES"
echo "slowest: $(head -n 6 "$tmp/times" | awk 'NF >= 2 {printf "%s%s %ss", sep, $2, $1; sep=", "}') (all $(( $(date +%s) - t0_all )) s)"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
