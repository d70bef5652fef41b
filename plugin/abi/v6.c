/* v6.c: ncclProfiler_v6 (NCCL 2.29, 2.30): v5 plus copy-engine collectives (CeColl, CeSync,
 * CeBatch). NCCL never calls recordEventState for them; their host spans are enqueue only. */
#include "shim.h"
#include "v5_common.h"

#define v6_ABI 6

static clabi_result v6_init(void **ctx, uint64_t commId, int *mask, const char *commName,
                            int nNodes, int nranks, int rank, clabi_logger logfn) {
  return cl_v5_init(v6_ABI, ctx, commId, mask, commName, nNodes, nranks, rank, logfn);
}

static clabi_result v6_start(void *ctx, void **h, clabi_descr_v6 *d) {
  if (!h) return CLABI_SUCCESS;
  *h = NULL;
  if (!d) return CLABI_SUCCESS;
  if (cl_is_ce_type(d->type))
    *h = cl_v6_start_ce(ctx, d, v6_ABI, 0);
  else
    *h = cl_v5_start_common(ctx, d->type, d->parentObj, d->rank, d, v6_ABI, 0);
  return CLABI_SUCCESS;
}

CL_SHIM_COMMON(v6, clabi_state_args_v4, *(const uint64_t *)a)

CL_EXPORT const clabi_profiler_v6 ncclProfiler_v6 = {
  "commlens", v6_init, v6_start, v6_stop, v6_state, v6_finalize,
};
