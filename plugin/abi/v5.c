/* v5.c: ncclProfiler_v5 (NCCL 2.28): 64-bit type, API events (GroupApi, CollApi, P2pApi,
 * KernelLaunch) with CUDA streams; Coll/P2p parents are their API events and the group
 * comes as parentGroup. v6 reuses these translators for its shared union members. */
#include "shim.h"
#include "v5_common.h"

#define v5_ABI 5

static clabi_result v5_init(void **ctx, uint64_t commId, int *mask, const char *commName,
                            int nNodes, int nranks, int rank, clabi_logger logfn) {
  return cl_v5_init(v5_ABI, ctx, commId, mask, commName, nNodes, nranks, rank, logfn);
}

static clabi_result v5_start(void *ctx, void **h, clabi_descr_v5 *d) {
  if (!h) return CLABI_SUCCESS;
  *h = NULL;
  if (!d) return CLABI_SUCCESS;
  *h = cl_v5_start_common(ctx, d->type, d->parentObj, d->rank, d, v5_ABI, 0);
  return CLABI_SUCCESS;
}

CL_SHIM_COMMON(v5, clabi_state_args_v4, *(const uint64_t *)a)

CL_EXPORT const clabi_profiler_v5 ncclProfiler_v5 = {
  "commlens", v5_init, v5_start, v5_stop, v5_state, v5_finalize,
};
