/* v4.c: ncclProfiler_v4 (NCCL 2.27): the communicator's hash, name and rank come in init;
 * KernelCh carries GPU start/stop timers; the type is one byte (the rest is padding NCCL's
 * adapter leaves uninitialised, so only the byte is read). No API events. */
#include "shim.h"
#include <stdio.h>
#include <unistd.h>

#define v4_ABI 4

static clabi_result v4_init(void **ctx, int *mask, const char *commName, uint64_t commHash,
                            int nNodes, int nranks, int rank, clabi_logger logfn) {
  cl_comm_desc d = {.hash = commHash, .nnodes = nNodes, .nranks = nranks, .rank = rank,
                    .abi = v4_ABI, .logfn = (cl_logger_fn)logfn};
  if (commName) snprintf(d.name, sizeof d.name, "%s", commName);
  return cl_shim_init(ctx, mask, &d);
}

static clabi_result v4_start(void *ctx, void **h, clabi_descr_v4 *d) {
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
  case CLABI_EV_GROUP: et = CL_EV_GROUP; size = 0; break;
  case CLABI_EV_COLL:
    et = CL_EV_COLL; size = CL_PSIZE(coll);
    p.coll = (cl_coll){.seq = d->coll.seqNumber, .func = d->coll.func, .datatype = d->coll.datatype,
                       .algo = d->coll.algo, .proto = d->coll.proto, .count = d->coll.count,
                       .root = d->coll.root, .nchannels = d->coll.nChannels, .nwarps = d->coll.nWarps};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v4, coll.func), d->coll.func, cl_str_len(d->coll.func)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v4, coll.datatype), d->coll.datatype, cl_str_len(d->coll.datatype)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v4, coll.algo), d->coll.algo, cl_str_len(d->coll.algo)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v4, coll.proto), d->coll.proto, cl_str_len(d->coll.proto)};
    break;
  case CLABI_EV_P2P:
    et = CL_EV_P2P; size = CL_PSIZE(p2p);
    p.p2p = (cl_p2p){.func = d->p2p.func, .datatype = d->p2p.datatype, .count = d->p2p.count,
                     .peer = d->p2p.peer, .nchannels = d->p2p.nChannels};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v4, p2p.func), d->p2p.func, cl_str_len(d->p2p.func)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v4, p2p.datatype), d->p2p.datatype, cl_str_len(d->p2p.datatype)};
    break;
  case CLABI_EV_PROXY_OP:
    et = CL_EV_PROXY_OP; size = CL_PSIZE(proxy_op);
    cl_shim_proxy_op(&d->proxyOp, &p, &flags);
    break;
  case CLABI_EV_PROXY_STEP:
    et = CL_EV_PROXY_STEP; size = CL_PSIZE(proxy_step); p.proxy_step.step = d->proxyStep.step; break;
  case CLABI_EV_PROXY_CTRL: et = CL_EV_PROXY_CTRL; size = 0; break;
  case CLABI_EV_KERNEL_CH:
    et = CL_EV_KERNEL_CH; size = CL_PSIZE(kernel_ch);
    p.kernel_ch.channel = d->kernelCh.channelId;
    p.kernel_ch.ptimer = d->kernelCh.pTimer;
    break;
  case CLABI_EV_NET_PLUGIN:
    et = CL_EV_NET_PLUGIN; size = CL_PSIZE(net);
    cl_shim_net(d->netPlugin.id, d->netPlugin.data, &p);
    if (p.net.data_len) refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v4, netPlugin.data), d->netPlugin.data, p.net.data_len};
    break;
  default: return CLABI_SUCCESS;
  }
  *h = cl_event_start(serial, et, flags, (uint64_t)(uintptr_t)d->parentObj, &p, size);
  if (CL_RECORDING()) cl_recorder_start(v4_ABI, ctx, d, sizeof *d, refs, nrefs, *h);
  return CLABI_SUCCESS;
}

CL_SHIM_COMMON(v4, clabi_state_args_v4, *(const uint64_t *)a)

CL_EXPORT const clabi_profiler_v4 ncclProfiler_v4 = {
  "commlens", v4_init, v4_start, v4_stop, v4_state, v4_finalize,
};
