# run_lib.sh: sourced by examples/gpu_verdict*.sh (bash, after `set -u`). Defines run(), which
# records one planted-truth run of examples/verdict/train.py under torchrun into $OUT/runs/<name>
# (the plugin's files in traces/, the truth in manifest.json), and want(), which says whether
# RUNS names a run. Needs OUT, PLUGIN, here (examples/), log, STEPS, BUDGET, RUNS and sfx set.
want() { [ -z "$RUNS" ] && return 0; case " $RUNS " in *" $1 "*) return 0 ;; esac; return 1; }

# run NAME MODE NRANKS PATTERN PLANTED_JSON DESCRIPTION train.py-args...
# (STEPS from the environment unless train.py-args name --steps last)
run() {
  local name=$1 mode=$2 n=$3 pattern=$4 planted=$5 what=$6; shift 6
  want "$name" || return 0
  name=$name$sfx
  if [ $SECONDS -ge "$BUDGET" ]; then log "$name: skipped (budget of $BUDGET s spent)"; return 0; fi
  local d=$OUT/runs/$name t0=$SECONDS
  mkdir -p "$d/traces"
  NCCL_PROFILER_PLUGIN=$PLUGIN COMMLENS_DIR=$d/traces timeout -k 10 ${RUN_TIMEOUT:-120} \
    python3 -m torch.distributed.run --standalone --nproc-per-node "$n" "$here/verdict/train.py" \
    --mode "$mode" --steps "$STEPS" --out "$d" "$@" >"$d/log.txt" 2>&1
  local rc=$?
  python3 "$here/verdict/manifest.py" "$d" "$name" "$mode" "$n" "$pattern" "$planted" "$what" "$rc"
  [ $rc = 0 ] || tail -n 5 "$d/log.txt" | tee -a "$OUT/status.txt"
  log "$name: exit $rc in $((SECONDS - t0)) s, $(ls "$d/traces" | grep -c 'trace.json') trace(s), $(du -sk "$d/traces" | cut -f1) KiB"
}
