#!/bin/sh
# Runs every test program given on the command line; each prints its own
# "suite: N passed, N failed" line. Closes with the totals in the plain form CI reads.
passed=0; failed=0; broken=0
for t in "$@"; do
  out=$("$t" 2>&1); rc=$?
  line=$(printf '%s\n' "$out" | grep -E '^[a-z_/]+: [0-9]+ passed, [0-9]+ failed' | tail -n 1)
  if [ -z "$line" ]; then
    printf '%s\n' "$out" | tail -n 30
    echo "$t: crashed or printed no result line (exit $rc)"; broken=$((broken+1)); continue
  fi
  p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then printf '%s\n' "$out" | grep -E 'FAIL|error|Assert' | head -n 40; fi
  [ $rc -ne 0 ] && [ "$f" -eq 0 ] && f=1
  echo "$line"
  passed=$((passed+p)); failed=$((failed+f))
done
failed=$((failed+broken))
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
