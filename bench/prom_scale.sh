#!/bin/sh
# prom_scale.sh: 4,096 ranks through a real Prometheus. A simulated exporter (the
# sim_exporter case of test/exporters/test_prom_live.c: one exposition of NRANKS ranks written
# every second by the plugin's formatter, one planted straggler, rank NRANKS*3/4+1) is scraped
# every 1 s by Prometheus with the shipped rules; prints how long CommlensStraggler took to fire
# naming that rank, and the peak RSS of the test and its children (Prometheus among them).
# make test runs the same case with 256 ranks.
# usage: sh bench/prom_scale.sh [NRANKS]   (run from the repo root; needs prometheus, promtool)
set -e
NR=${1:-4096}
BUILD=${BUILD:-build}
make -s lib "$BUILD/test/exporters/test_prom_live"
COMMLENS_PROM_SIM_RANKS=$NR COMMLENS_LIB=$PWD/$BUILD/libnccl-profiler-commlens.so \
  /usr/bin/time -v "$BUILD/test/exporters/test_prom_live" simulated 2>"$BUILD/prom_scale.log" || {
  cat "$BUILD/prom_scale.log"; exit 1; }
grep -E 'note:|passed' "$BUILD/prom_scale.log"
grep -E 'Elapsed \(wall clock\)|Maximum resident set size' "$BUILD/prom_scale.log" | sed 's/^[[:space:]]*/  /'
