/* v3.c: ncclProfiler_v3 (NCCL 2.26): v2 plus KernelCh (no GPU timer; newer NCCL's adapter
 * never delivers KernelChStop to v3) and NetPlugin events. */
#include "old_common.h"

#define v3_ABI 3

static clabi_result v3_init(void **ctx, int *mask) { return cl_old_init(ctx, mask, v3_ABI); }

static clabi_result v3_start(void *ctx, void **h, clabi_descr_v3 *d) {
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
    CL_OLD_STRING_COLL(clabi_descr_v3, d, p, refs, nrefs);
    break;
  case CLABI_EV_P2P:
    et = CL_EV_P2P; size = CL_PSIZE(p2p);
    CL_OLD_STRING_P2P(clabi_descr_v3, d, p, refs, nrefs);
    break;
  case CLABI_EV_KERNEL_CH:
    et = CL_EV_KERNEL_CH; size = CL_PSIZE(kernel_ch);
    p.kernel_ch.channel = d->kernelCh.channelId;
    p.kernel_ch.ptimer = 0;
    break;
  case CLABI_EV_NET_PLUGIN:
    et = CL_EV_NET_PLUGIN; size = CL_PSIZE(net);
    cl_shim_net(d->netPlugin.id, d->netPlugin.data, &p);
    if (p.net.data_len) refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v3, netPlugin.data), d->netPlugin.data, p.net.data_len};
    break;
  default:
    if (!cl_old_common_event(d->type, &d->proxyOp, d->proxyStep.step, &p, &flags, &et, &size))
      return CLABI_SUCCESS;
  }
  *h = cl_event_start(serial, et, flags, (uint64_t)(uintptr_t)d->parentObj, &p, size);
  if (CL_RECORDING()) cl_recorder_start(v3_ABI, ctx, d, sizeof *d, refs, nrefs, *h);
  return CLABI_SUCCESS;
}

/* The first 8 bytes of the 16-byte v1..v3 state args: transSize, or appendedProxyOps. */
CL_SHIM_COMMON(v3, clabi_state_args_v1, *(const uint64_t *)a)

CL_EXPORT const clabi_profiler_v3 ncclProfiler_v3 = {
  "commlens", v3_init, v3_start, v3_stop, v3_state, v3_finalize,
};
