#!/bin/sh
# fuzz/coverage.sh DIR TARGET...: runs each coverage-instrumented DIR/fuzz_TARGET once over its
# kept inputs (fuzz/corpus/TARGET, fuzz/regress/TARGET), merges the profiles and prints line
# coverage per folder of our sources, then per file (llvm-cov report).
dir=$1; shift
prof=$(command -v llvm-profdata || ls /usr/bin/llvm-profdata-* 2>/dev/null | head -n 1)
cov=$(command -v llvm-cov || ls /usr/bin/llvm-cov-* 2>/dev/null | head -n 1)
[ -n "$prof" ] && [ -n "$cov" ] || { echo "fuzz-coverage: llvm-profdata and llvm-cov are needed (apt-get install llvm)"; exit 1; }
rm -f "$dir"/*.profraw
objs=""
for t in "$@"; do
  inputs="fuzz/corpus/$t"; [ -d "fuzz/regress/$t" ] && inputs="$inputs fuzz/regress/$t"
  LLVM_PROFILE_FILE="$dir/$t-%p.profraw" "$dir/fuzz_$t" -runs=0 -max_len=16384 $inputs >"$dir/run-$t.log" 2>&1 \
    || { tail -n 20 "$dir/run-$t.log"; echo "fuzz-coverage: $t failed on its own corpus"; exit 1; }
  n=$(ls fuzz/corpus/$t | wc -l)
  echo "fuzz-coverage: $t: $n corpus inputs"
  objs="$objs -object $dir/fuzz_$t"
done
"$prof" merge -sparse "$dir"/*.profraw -o "$dir/all.profdata" || exit 1
set -- $objs; shift     # llvm-cov takes the first binary bare, the others after -object
"$cov" report "$1" "$@" -instr-profile="$dir/all.profdata" plugin common exporters tools/commlens >"$dir/report.txt" || exit 1
# Per folder: sum the per-file Lines columns (total, missed) of llvm-cov's table.
awk '$1 ~ /\.(c|h)$/ { split($1, p, "/"); d = p[1] (p[1] == "plugin" || p[1] == "tools" ? "/" p[2] : "");
       if (d ~ /\.c$|\.h$/) d = p[1]; lt[d] += $8; lm[d] += $9; T += $8; M += $9 }
     END { for (d in lt) printf "  %-22s lines %6d  covered %6.1f%%\n", d, lt[d], 100 * (lt[d] - lm[d]) / lt[d];
           printf "  %-22s lines %6d  covered %6.1f%%\n", "all", T, 100 * (T - M) / T }' "$dir/report.txt" | sort
echo "fuzz-coverage: per file in $dir/report.txt"
