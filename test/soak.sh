#!/bin/sh
# test/soak.sh [RUNS] [LOADERS]: `make test` RUNS times in a row (default 30) while LOADERS busy
# loops (default 2, one per core here) keep every core loaded, as a shared CI machine is. Prints
# one line per run and a closing "soak: N of RUNS passed"; the log of every failed run is kept
# in $BUILD/soak/ (default build/). The first run builds; later runs rebuild only what changed.
runs=${1:-30}; loaders=${2:-2}; out=${BUILD:-build}/soak
mkdir -p "$out"
pids=
i=0
while [ $i -lt "$loaders" ]; do
  sh -c 'while :; do :; done' &
  pids="$pids $!"
  i=$((i+1))
done
trap 'kill $pids 2>/dev/null' EXIT
trap 'exit 130' INT TERM      # (the EXIT trap then stops the loaders)
ok=0; n=0
while [ $n -lt "$runs" ]; do
  n=$((n+1))
  t0=$(date +%s)
  if make test >"$out/run-$n.log" 2>&1; then rc=0; else rc=1; fi
  total=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/run-$n.log" | tail -n 1)
  slow=$(grep -E '^slowest:' "$out/run-$n.log" | tail -n 1)
  if [ $rc -eq 0 ]; then ok=$((ok+1)); rm -f "$out/run-$n.log"; res=pass; else res="FAIL (log: $out/run-$n.log)"; fi
  echo "soak run $n: $res: ${total:-no total}, $(( $(date +%s) - t0 )) s; $slow"
done
echo "soak: $ok of $runs passed with $loaders busy loops beside"
[ $ok -eq "$runs" ]
