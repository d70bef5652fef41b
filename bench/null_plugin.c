/* null_plugin.c: a profiler plugin that does nothing, the baseline for bench/overhead.sh. It asks
 * NCCL for the events in NULLPROF_MASK, so NCCL pays its own instrumentation cost for that mask,
 * and then returns at once from every call. It must never allocate, lock or log on the hot path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "commlens/nccl_profiler_abi.h"

#define NULLPROF_EXPORT __attribute__((visibility("default")))

/* A NULL handle would make NCCL skip the children of an event (and their cost): hand out one
 * fixed non-NULL handle instead, so NCCL does all the work a real plugin would make it do. */
static char nullprof_dummy_handle;
static char nullprof_dummy_context;

/* NULLPROF_MASK: decimal or 0x-prefixed hex; unset, empty or malformed means 0 (no events). */
static int nullprof_mask_from_env(void) {
  const char *s = getenv("NULLPROF_MASK");
  if (!s || !*s) return 0;
  int base = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10;
  char *end;
  long v = strtol(s, &end, base);
  return (*end == '\0' && v >= 0 && v <= 0x7fffffffL) ? (int)v : 0;
}

/* NULLPROF_MARK: if set, a file to which each init appends one line, so a benchmark can prove
 * that the plugin was really loaded. Init is not on the hot path. */
static void nullprof_mark(const char *abi, int mask, const char *commName, int rank, int nranks) {
  const char *path = getenv("NULLPROF_MARK");
  if (!path || !*path) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "nullprof %s mask=0x%x comm=%s rank=%d nranks=%d\n", abi, (unsigned)mask,
          commName ? commName : "", rank, nranks);
  fclose(f);
}

/* v5 and v6 (NCCL 2.29+) share init's signature. NCCL takes the newest table it knows, as it
 * does with commlens: both then pay for the same events (the mark says which table). */
static clabi_result nullprof_init(const char *abi, void **context, int *eActivationMask,
                                  const char *commName, int nranks, int rank) {
  *context = &nullprof_dummy_context;
  *eActivationMask = nullprof_mask_from_env();
  nullprof_mark(abi, *eActivationMask, commName, rank, nranks);
  return CLABI_SUCCESS;
}
static clabi_result nullprof_init_v5(void **context, uint64_t commId, int *eActivationMask,
                                     const char *commName, int nNodes, int nranks, int rank,
                                     clabi_logger logfn) {
  (void)commId; (void)nNodes; (void)logfn;
  return nullprof_init("v5", context, eActivationMask, commName, nranks, rank);
}
static clabi_result nullprof_init_v6(void **context, uint64_t commId, int *eActivationMask,
                                     const char *commName, int nNodes, int nranks, int rank,
                                     clabi_logger logfn) {
  (void)commId; (void)nNodes; (void)logfn;
  return nullprof_init("v6", context, eActivationMask, commName, nranks, rank);
}

static clabi_result nullprof_init_v4(void **context, int *eActivationMask, const char *commName,
                                     uint64_t commHash, int nNodes, int nranks, int rank,
                                     clabi_logger logfn) {
  (void)commHash; (void)nNodes; (void)logfn;
  return nullprof_init("v4", context, eActivationMask, commName, nranks, rank);
}

/* Hot path: return at once. */
static clabi_result nullprof_start_v5(void *context, void **eHandle, clabi_descr_v5 *eDescr) {
  (void)context; (void)eDescr;
  *eHandle = &nullprof_dummy_handle;
  return CLABI_SUCCESS;
}

static clabi_result nullprof_start_v6(void *context, void **eHandle, clabi_descr_v6 *eDescr) {
  (void)context; (void)eDescr;
  *eHandle = &nullprof_dummy_handle;
  return CLABI_SUCCESS;
}

static clabi_result nullprof_start_v4(void *context, void **eHandle, clabi_descr_v4 *eDescr) {
  (void)context; (void)eDescr;
  *eHandle = &nullprof_dummy_handle;
  return CLABI_SUCCESS;
}

static clabi_result nullprof_stop(void *eHandle) {
  (void)eHandle;
  return CLABI_SUCCESS;
}

static clabi_result nullprof_state(void *eHandle, int eState, clabi_state_args_v4 *eStateArgs) {
  (void)eHandle; (void)eState; (void)eStateArgs;
  return CLABI_SUCCESS;
}

static clabi_result nullprof_finalize(void *context) {
  (void)context;
  return CLABI_SUCCESS;
}

NULLPROF_EXPORT clabi_profiler_v6 ncclProfiler_v6 = {
  "null", nullprof_init_v6, nullprof_start_v6, nullprof_stop, nullprof_state, nullprof_finalize,
};

NULLPROF_EXPORT clabi_profiler_v5 ncclProfiler_v5 = {
  "null", nullprof_init_v5, nullprof_start_v5, nullprof_stop, nullprof_state, nullprof_finalize,
};

NULLPROF_EXPORT clabi_profiler_v4 ncclProfiler_v4 = {
  "null", nullprof_init_v4, nullprof_start_v4, nullprof_stop, nullprof_state, nullprof_finalize,
};
