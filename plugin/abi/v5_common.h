/* v5_common.h: translation of the descriptor members v5 and v6 share (their union prefix is
 * identical, see CLABI_V5_UNION_MEMBERS), plus the recorder's view of the string fields. */
#ifndef COMMLENS_V5_COMMON_H
#define COMMLENS_V5_COMMON_H
#include "shim.h"
#include "plugin/gpu/cupti.h"
#include <stdio.h>
#include <unistd.h>

/* `d` is a clabi_descr_v5 or clabi_descr_v6 (same prefix); CE members are handled by v6. */
static inline void *cl_v5_start_common(void *ctx, uint64_t type, void *parentObj, int rank,
                                       const void *dv, int abi) {
  const clabi_descr_v5 *d = dv;
  cl_payload p;
  unsigned flags = 0, size, et;
  cl_ref refs[4];
  int nrefs = 0;
  uint32_t serial = cl_shim_comm(ctx, &flags);
  p.rank = rank;
  p._pad = 0;
  switch (type) {
  case CLABI_EV_GROUP_API:
    et = CL_EV_GROUP_API; size = CL_PSIZE(group_api);
    p.group_api.graph_captured = d->groupApi.graphCaptured;
    p.group_api.depth = d->groupApi.groupDepth;
    break;
  case CLABI_EV_COLL_API:
  case CLABI_EV_P2P_API: {
    int coll = type == CLABI_EV_COLL_API;
    et = coll ? CL_EV_COLL_API : CL_EV_P2P_API; size = CL_PSIZE(coll_api);
    p.coll_api.func = coll ? d->collApi.func : d->p2pApi.func;
    p.coll_api.datatype = coll ? d->collApi.datatype : d->p2pApi.datatype;
    p.coll_api.count = coll ? d->collApi.count : d->p2pApi.count;
    p.coll_api.stream = (uint64_t)(uintptr_t)(coll ? d->collApi.stream : d->p2pApi.stream);
    p.coll_api.root = coll ? d->collApi.root : -1;
    p.coll_api.graph_captured = cl_flag(coll ? &d->collApi.graphCaptured : &d->p2pApi.graphCaptured);
    refs[nrefs++] = (cl_ref){coll ? offsetof(clabi_descr_v5, collApi.func) : offsetof(clabi_descr_v5, p2pApi.func),
                             p.coll_api.func, cl_str_len(p.coll_api.func)};
    refs[nrefs++] = (cl_ref){coll ? offsetof(clabi_descr_v5, collApi.datatype) : offsetof(clabi_descr_v5, p2pApi.datatype),
                             p.coll_api.datatype, cl_str_len(p.coll_api.datatype)};
    break;
  }
  case CLABI_EV_KERNEL_LAUNCH:
    et = CL_EV_KERNEL_LAUNCH; size = CL_PSIZE(kernel_launch);
    p.kernel_launch.stream = (uint64_t)(uintptr_t)d->kernelLaunch.stream;
    /* the stream is alive now (NCCL launches on it): CUPTI's id for it matches this launch
     * to its kernel record (gpu_join.h) */
    p.kernel_launch.stream_id = cl_cupti_stream_id(p.kernel_launch.stream);
    break;
  case CLABI_EV_GROUP:
    et = CL_EV_GROUP; size = 0;
    break;
  case CLABI_EV_COLL:
    et = CL_EV_COLL; size = CL_PSIZE(coll);
    p.coll = (cl_coll){.seq = d->coll.seqNumber, .func = d->coll.func, .datatype = d->coll.datatype,
                       .algo = d->coll.algo, .proto = d->coll.proto, .count = d->coll.count,
                       .parent_group = (uint64_t)(uintptr_t)d->coll.parentGroup, .root = d->coll.root,
                       .nchannels = d->coll.nChannels, .nwarps = d->coll.nWarps};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v5, coll.func), d->coll.func, cl_str_len(d->coll.func)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v5, coll.datatype), d->coll.datatype, cl_str_len(d->coll.datatype)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v5, coll.algo), d->coll.algo, cl_str_len(d->coll.algo)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v5, coll.proto), d->coll.proto, cl_str_len(d->coll.proto)};
    break;
  case CLABI_EV_P2P:
    et = CL_EV_P2P; size = CL_PSIZE(p2p);
    p.p2p = (cl_p2p){.func = d->p2p.func, .datatype = d->p2p.datatype, .count = d->p2p.count,
                     .parent_group = (uint64_t)(uintptr_t)d->p2p.parentGroup, .peer = d->p2p.peer,
                     .nchannels = d->p2p.nChannels};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v5, p2p.func), d->p2p.func, cl_str_len(d->p2p.func)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v5, p2p.datatype), d->p2p.datatype, cl_str_len(d->p2p.datatype)};
    break;
  case CLABI_EV_PROXY_OP:
    et = CL_EV_PROXY_OP; size = CL_PSIZE(proxy_op);
    cl_shim_proxy_op(&d->proxyOp, &p, &flags);
    break;
  case CLABI_EV_PROXY_STEP:
    et = CL_EV_PROXY_STEP; size = CL_PSIZE(proxy_step);
    p.proxy_step.step = d->proxyStep.step;
    break;
  case CLABI_EV_PROXY_CTRL:
    et = CL_EV_PROXY_CTRL; size = 0;
    break;
  case CLABI_EV_KERNEL_CH:
    et = CL_EV_KERNEL_CH; size = CL_PSIZE(kernel_ch);
    p.kernel_ch.channel = d->kernelCh.channelId;
    p.kernel_ch.ptimer = d->kernelCh.pTimer;
    break;
  case CLABI_EV_NET_PLUGIN:
    et = CL_EV_NET_PLUGIN; size = CL_PSIZE(net);
    cl_shim_net(d->netPlugin.id, d->netPlugin.data, &p);
    if (p.net.data_len) refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v5, netPlugin.data), d->netPlugin.data, p.net.data_len};
    break;
  default:
    return NULL;   /* v6 handles the CE types before calling us; anything else is unknown */
  }
  void *h = cl_event_start(serial, et, flags, (uint64_t)(uintptr_t)parentObj, &p, size);
  if (CL_RECORDING()) cl_recorder_start(abi, ctx, dv, abi == 5 ? sizeof(clabi_descr_v5) : sizeof(clabi_descr_v6), refs, nrefs, h);
  return h;
}
#endif
