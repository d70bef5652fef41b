/* v2.c: ncclProfiler_v2 (NCCL 2.24, 2.25): strings for func, datatype, algo and proto; the
 * communicator is named in each Coll/P2p descriptor. No kernel or network-plugin events; on
 * newer NCCL the adapter passes Coll/P2p with the Group as parent and zeroed state args. */
#include "old_common.h"

#define v2_ABI 2

static clabi_result v2_init(void **ctx, int *mask) { return cl_old_init(ctx, mask, v2_ABI); }

static clabi_result v2_start(void *ctx, void **h, clabi_descr_v2 *d) {
  if (!h) return CLABI_SUCCESS;
  *h = NULL;
  if (!d) return CLABI_SUCCESS;
  cl_payload p;
  unsigned flags = 0, size, et;
  cl_ref refs[4];
  int nrefs = 0;
  uint32_t serial = cl_shim_comm(ctx, &flags);
  p.rank = d->rank;
  p._pad = 0;
  switch (d->type) {
  case CLABI_EV_COLL:
    et = CL_EV_COLL; size = CL_PSIZE(coll);
    CL_OLD_STRING_COLL(clabi_descr_v2, d, p, refs, nrefs);
    break;
  case CLABI_EV_P2P:
    et = CL_EV_P2P; size = CL_PSIZE(p2p);
    CL_OLD_STRING_P2P(clabi_descr_v2, d, p, refs, nrefs);
    break;
  default:
    if (!cl_old_common_event(d->type, &d->proxyOp, d->proxyStep.step, &p, &flags, &et, &size))
      return CLABI_SUCCESS;
  }
  *h = cl_event_start(serial, et, flags, (uint64_t)(uintptr_t)d->parentObj, &p, size);
  if (CL_RECORDING()) cl_recorder_start(v2_ABI, ctx, d, sizeof *d, refs, nrefs, *h);
  return CLABI_SUCCESS;
}

/* The first 8 bytes of the 16-byte v1..v3 state args: transSize, or appendedProxyOps. */
CL_SHIM_COMMON(v2, clabi_state_args_v1, *(const uint64_t *)a)

CL_EXPORT const clabi_profiler_v2 ncclProfiler_v2 = {
  "commlens", v2_init, v2_start, v2_stop, v2_state, v2_finalize,
};
