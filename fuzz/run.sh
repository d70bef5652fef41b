#!/bin/sh
# fuzz/run.sh FUZZER TARGET SECONDS WORKDIR [long]: replays fuzz/regress/TARGET/* (each input
# must now pass), then fuzzes for SECONDS from fuzz/corpus/TARGET (long) or a sixteenth of it
# (fixed seed unless `long`).
# Prints "fuzz/TARGET: N passed, N failed" for test/run.sh.
fz=$1; t=$2; secs=$3; work=$4/work/$t; crash=$4/crashes/$t; mode=$5
mkdir -p "$work" "$crash"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0; failed=0
regress=$(ls fuzz/regress/$t 2>/dev/null | grep -v '^README' | sed "s|^|fuzz/regress/$t/|")
if [ -n "$regress" ]; then
  if "$fz" -runs=1 $regress >"$4/regress-$t.log" 2>&1; then passed=$((passed+1))
  else tail -n 40 "$4/regress-$t.log"; echo "FAIL fuzz/$t: a regression input fails again"; failed=$((failed+1)); fi
fi
maxlen=4096; case $t in cli|gz|pftrace|digest|flight) maxlen=16384 ;; esac
seed=1; [ "$mode" = long ] && seed=0
# A long run grows the kept corpus's work directory. make test's short run starts afresh from
# every 16th kept input (the whole corpus takes longer to read than the run's budget: 343
# replay inputs are ~80 s beside a busy machine), so each make test costs the same.
corpus=fuzz/corpus/$t
if [ "$mode" != long ]; then
  corpus=$4/seed/$t
  rm -rf "$corpus" "$work" && mkdir -p "$corpus" "$work"
  ls "fuzz/corpus/$t" | awk 'NR % 16 == 1' | while read -r f; do cp "fuzz/corpus/$t/$f" "$corpus/"; done
fi
if "$fz" -max_total_time="$secs" -seed=$seed -timeout=20 -rss_limit_mb=3072 -max_len=$maxlen \
     -artifact_prefix="$crash/" -print_final_stats=1 "$work" "$corpus" >"$4/run-$t.log" 2>&1; then
  passed=$((passed+1))
else
  tail -n 60 "$4/run-$t.log"; echo "FAIL fuzz/$t: crash input in $crash/"; failed=$((failed+1))
fi
execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$4/run-$t.log" | tail -n 1)
[ "$mode" = long ] && echo "fuzz/$t: ${execs:-?} executions in ${secs}s"
echo "fuzz/$t: $passed passed, $failed failed (${execs:-?} runs)"
[ $failed -eq 0 ]
