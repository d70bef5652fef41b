/* v7.c: ncclProfiler_v7 (NVIDIA/nccl master after 2.30): v6 plus the application's userTag on
 * API, Coll/P2p and CeColl events, and KernelPhase events (initial_sync, compute, final_sync,
 * GPU-timed) under each KernelCh. The layout is not in a tagged release yet
 * (docs/decisions/0086-abi-v7-version-gate.md). */
#include "shim.h"
#include "v5_common.h"

#define v7_ABI 7

/* NVIDIA's NCCL has this v7 from 2.31 on. Earlier NCCLs that look up ncclProfiler_v7 are
 * pre-releases or forks with other layouts under the same name (docs/decisions/0086-abi-v7-version-gate.md: a userTag
 * event type, device FIFO members in the function table): read as ours, their
 * descriptors would give garbage, or strings read at garbage addresses. Such an NCCL gets an
 * init that fails, which NCCL takes as "continue without a profiler". An NCCL whose version
 * cannot be read (linked in statically) is taken to be NVIDIA's. */
#define V7_FIRST_NCCL 23100

static clabi_result v7_init(void **ctx, uint64_t commId, int *mask, const char *commName,
                            int nNodes, int nranks, int rank, clabi_logger logfn) {
  int v = cl_shim_nccl_version();
  if (v > 0 && v < V7_FIRST_NCCL) {
    cl_log_set_logger((cl_logger_fn)logfn);
    cl_log_once("v7-layout", CL_LOG_WARN, "NCCL %d.%d.%d asks for profiler ABI v7, which NVIDIA's NCCL has from "
                "2.31 on; a v7 in an earlier NCCL is a pre-release or fork layout commlens does not know, so "
                "profiling is off for this NCCL rather than its events misread", v / 10000, v / 100 % 100, v % 100);
    if (ctx) *ctx = NULL;
    if (mask) *mask = 0;
    return CLABI_INTERNAL_ERROR;
  }
  return cl_v5_init(v7_ABI, ctx, commId, mask, commName, nNodes, nranks, rank, logfn);
}

/* The userTag of the event types that carry one (0 for the others). */
static uint64_t v7_tag(const clabi_descr_v7 *d) {
  switch (d->type) {
  case CLABI_EV_COLL_API: return d->collApi.userTag;
  case CLABI_EV_P2P_API: return d->p2pApi.userTag;
  case CLABI_EV_COLL: return d->coll.userTag;
  case CLABI_EV_P2P: return d->p2p.userTag;
  case CLABI_EV_CE_COLL: return d->ceColl.userTag;
  default: return 0;
  }
}

/* A kernel phase: its channel, which phase and its GPU start; NCCL's phase name is not kept
 * (the id names it, plugin/output/names.c), only recorded for replays. */
static void *v7_start_phase(void *ctx, const clabi_descr_v7 *d) {
  cl_payload p;
  unsigned flags = 0;
  uint32_t serial = cl_shim_comm(ctx, &flags);
  p.rank = d->rank;
  p._pad = 0;
  p.kernel_phase = (cl_kernel_phase){.ptimer = d->kernelPhase.pTimer, .channel = d->kernelPhase.channelId,
                                     .phase = d->kernelPhase.phaseId};
  void *h = cl_event_start(serial, CL_EV_KERNEL_PHASE, flags, (uint64_t)(uintptr_t)d->parentObj, &p,
                           CL_PSIZE(kernel_phase));
  if (CL_RECORDING()) {
    cl_ref r = {offsetof(clabi_descr_v7, kernelPhase.phaseName), d->kernelPhase.phaseName,
                cl_str_len(d->kernelPhase.phaseName)};
    cl_recorder_start(v7_ABI, ctx, d, sizeof *d, &r, 1, h);
  }
  return h;
}

static clabi_result v7_start(void *ctx, void **h, clabi_descr_v7 *d) {
  if (!h) return CLABI_SUCCESS;
  *h = NULL;
  if (!d) return CLABI_SUCCESS;
  if (d->type == CLABI_EV_KERNEL_PHASE) *h = v7_start_phase(ctx, d);
  else if (cl_is_ce_type(d->type)) *h = cl_v6_start_ce(ctx, d, v7_ABI, v7_tag(d));
  else *h = cl_v5_start_common(ctx, d->type, d->parentObj, d->rank, d, v7_ABI, v7_tag(d));
  return CLABI_SUCCESS;
}

CL_SHIM_COMMON(v7, clabi_state_args_v4, *(const uint64_t *)a)

/* Spare NULL members after the table: a fork's v7 with more functions (createDeviceFifo, ...)
 * reads NULLs there, not the next symbol's bytes, before its init fails (above). */
CL_EXPORT const struct { clabi_profiler_v7 t; void *spare[8]; } ncclProfiler_v7 = {
  {"commlens", v7_init, v7_start, v7_stop, v7_state, v7_finalize}, {0},
};
