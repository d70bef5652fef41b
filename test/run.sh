#!/bin/sh
# Runs every test program given on the command line; each prints its own
# "suite: N passed, N failed" line. Closes with the totals in the plain form CI reads.
# Options between programs apply to the programs after them (one call runs every variant,
# so the last line counts everything):
#   --prefix P          prefix P to the suite names printed (e.g. asan/)
#   --env K=V           run the programs with K=V in their environment (no spaces in V)
#   --clear             forget the prefix and the --env settings
#   --cmd 'CMD'         run CMD with sh -c, as if it were a program (fuzz runs)
#   --check-san-logs D  a suite "<prefix>sanitizer": fails if D holds any sanitizer report
passed=0; failed=0; broken=0
prefix=; envs=
times=                       # "seconds name" per program, for the slowest-suites line
t0_all=$(date +%s)
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
failed=$((failed+broken))
echo "slowest: $(printf '%s\n' "$times" | sort -rn | head -n 6 | awk 'NF {printf "%s%s %ss", sep, $2, $1; sep=", "}') (all $(( $(date +%s) - t0_all )) s)"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
