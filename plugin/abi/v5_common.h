/* v5_common.h: translation of the descriptor members v5, v6 and v7 share (v6's union prefix is
 * v5's, CLABI_V5_UNION_MEMBERS; v7 keeps every shared member's offsets and only appends, see
 * clabi_descr_v7), the CE members v6 and v7 share, and the recorder's view of the strings. */
#ifndef COMMLENS_V5_COMMON_H
#define COMMLENS_V5_COMMON_H
#include "shim.h"
#include "plugin/capture/gate.h"
#include "plugin/capture/hotpath.h"
#include "plugin/capture/timers.h"
#include "plugin/gpu/cupti.h"
#include <stdio.h>
#include <unistd.h>

/* The events the shims may answer with no handle (plugin/capture/gate.h, cl_skip_launch_events). */
#define CL_V5_LAUNCH_EVENTS (CLABI_EV_GROUP_API | CLABI_EV_COLL_API | CLABI_EV_P2P_API | CLABI_EV_KERNEL_LAUNCH)

/* init of v5, v6 and v7 (one signature): the communicator's facts, then the common tail. */
static inline clabi_result cl_v5_init(int abi, void **ctx, uint64_t commId, int *mask, const char *commName,
                                      int nNodes, int nranks, int rank, clabi_logger logfn) {
  cl_comm_desc d = {.hash = commId, .nnodes = nNodes, .nranks = nranks, .rank = rank,
                    .abi = abi, .logfn = (cl_logger_fn)logfn};
  if (commName) snprintf(d.name, sizeof d.name, "%s", commName);
  return cl_shim_init(ctx, mask, &d);
}

/* The descriptor's size for the recorder, by ABI version (5, 6 or 7). */
static inline unsigned cl_v5_descr_len(int abi) {
  return abi == 5 ? sizeof(clabi_descr_v5) : abi == 6 ? sizeof(clabi_descr_v6) : sizeof(clabi_descr_v7);
}

static __attribute__((noinline)) void *cl_v5_start_any(void *ctx, uint64_t type, void *parentObj, int rank,
                                                       const void *dv, int abi, uint64_t tag);
/* A CollApi or P2pApi start: the timers' sample counts the call and asks for the next one's mask
 * (plugin/capture/timers.h); the handle says whether this call's operation is timed: a quiet one
 * when the API event is not recorded (gate.h cl_skip_launch_events), else its id, noted when not
 * timed. Apart (noinline): one per operation. */
static __attribute__((noinline)) void *cl_v5_start_api(void *ctx, uint64_t type, void *parentObj, int rank,
                                                       const void *dv, int abi, uint64_t tag) {
  const clabi_descr_v5 *d = dv;
  int coll = type == CLABI_EV_COLL_API;
  int timed = cl_timers_call(ctx, coll ? CL_TIMERS_COLL : CL_TIMERS_P2P,
                             cl_flag(coll ? &d->collApi.graphCaptured : &d->p2pApi.graphCaptured));
  if (!CL_RECORDING() && atomic_load_explicit(&cl_skip_launch_events, memory_order_relaxed)) {
    cl_event_skipped();
    return (void *)(uintptr_t)(timed ? CL_ID_QUIET_API_TIMED : CL_ID_QUIET_API_UNTIMED);
  }
  void *h = cl_v5_start_any(ctx, type, parentObj, rank, dv, abi, tag);
  uint64_t id = (uint64_t)(uintptr_t)h;
  if (!timed && id && !(id & CL_ID_DROPPED)) cl_timers_note_untimed(id);
  return h;
}
/* The START flags and parent of a Coll or P2p whose parentObj is its API event's handle (v5+):
 * CL_F_UNTIMED when that call's operation is not timed; a quiet handle is no parent. */
static inline uint64_t cl_v5_op_parent(void *parentObj, unsigned *flags) {
  uint64_t par = (uint64_t)(uintptr_t)parentObj;
  if (par == CL_ID_QUIET_API_TIMED || par == CL_ID_QUIET_API_UNTIMED) {
    if (par == CL_ID_QUIET_API_UNTIMED) *flags |= CL_F_UNTIMED;
    return 0;
  }
  if (cl_timers_untimed_id(par)) *flags |= CL_F_UNTIMED;
  return par;
}
/* `d` is a clabi_descr_v5, v6 or v7 (same offsets for these members); CE members and v7's
 * KernelPhase are handled by their versions. `tag`: the v7 userTag of an API or Coll/P2p
 * event (0 before v7). A KernelCh (most of NCCL's calls: no payload to assemble) and the
 * events answered without a record are started here; the rest apart (cl_v5_start_any), so
 * that the frequent calls save no registers. */
static inline void *cl_v5_start_common(void *ctx, uint64_t type, void *parentObj, int rank,
                                       const void *dv, int abi, uint64_t tag) {
  const clabi_descr_v5 *d = dv;
  if (type == CLABI_EV_COLL_API || type == CLABI_EV_P2P_API) return cl_v5_start_api(ctx, type, parentObj, rank, dv, abi, tag);
  if (!CL_RECORDING()) {   /* the recorder keeps every event whole: cl_v5_start_any */
    if (type == CLABI_EV_KERNEL_CH) {
      unsigned flags = 0;
      uint32_t serial = cl_shim_comm(ctx, &flags);
      return cl_event_kch_start(serial, flags, (uint64_t)(uintptr_t)parentObj, rank, d->kernelCh.channelId,
                                d->kernelCh.pTimer);
    }
    /* GroupApi, CollApi, P2pApi, KernelLaunch: not needed now (gate.h) */
    if ((type & ~(uint64_t)CL_V5_LAUNCH_EVENTS) == 0 && type &&
        atomic_load_explicit(&cl_skip_launch_events, memory_order_relaxed))
      return cl_event_skipped();
    /* a Group (no event's parent since v5) when only a digest is written: a handle, no record */
    if (type == CLABI_EV_GROUP && atomic_load_explicit(&cl_digest_only, memory_order_relaxed))
      return cl_event_quiet();
  }
  return cl_v5_start_any(ctx, type, parentObj, rank, dv, abi, tag);
}
/* A CollApi (`coll`) or P2pApi's payload, with the recorder's string references when it records
 * (`rec`). */
static inline void cl_v5_api_payload(const clabi_descr_v5 *d, int coll, uint64_t tag, int rec, cl_payload *p,
                                     cl_ref *refs, int *nrefs) {
  p->coll_api.func = coll ? d->collApi.func : d->p2pApi.func;
  p->coll_api.datatype = coll ? d->collApi.datatype : d->p2pApi.datatype;
  p->coll_api.count = coll ? d->collApi.count : d->p2pApi.count;
  p->coll_api.stream = (uint64_t)(uintptr_t)(coll ? d->collApi.stream : d->p2pApi.stream);
  p->coll_api.root = coll ? d->collApi.root : -1;
  p->coll_api.graph_captured = cl_flag(coll ? &d->collApi.graphCaptured : &d->p2pApi.graphCaptured);
  p->coll_api.user_tag = tag;
  if (!rec) return;
  refs[(*nrefs)++] = (cl_ref){coll ? offsetof(clabi_descr_v5, collApi.func) : offsetof(clabi_descr_v5, p2pApi.func),
                              p->coll_api.func, cl_str_len(p->coll_api.func)};
  refs[(*nrefs)++] = (cl_ref){coll ? offsetof(clabi_descr_v5, collApi.datatype) : offsetof(clabi_descr_v5, p2pApi.datatype),
                              p->coll_api.datatype, cl_str_len(p->coll_api.datatype)};
}
/* A Coll (`coll`) or P2p's payload, with the recorder's string references when it records. */
static inline void cl_v5_op_payload(const clabi_descr_v5 *d, int coll, uint64_t tag, int rec, cl_payload *p,
                                    cl_ref *refs, int *nrefs) {
  if (coll) {
    p->coll = (cl_coll){.seq = d->coll.seqNumber, .func = d->coll.func, .datatype = d->coll.datatype,
                        .algo = d->coll.algo, .proto = d->coll.proto, .count = d->coll.count,
                        .parent_group = (uint64_t)(uintptr_t)d->coll.parentGroup, .root = d->coll.root,
                        .nchannels = d->coll.nChannels, .nwarps = d->coll.nWarps, .user_tag = tag};
    if (!rec) return;
    refs[(*nrefs)++] = (cl_ref){offsetof(clabi_descr_v5, coll.func), d->coll.func, cl_str_len(d->coll.func)};
    refs[(*nrefs)++] = (cl_ref){offsetof(clabi_descr_v5, coll.datatype), d->coll.datatype, cl_str_len(d->coll.datatype)};
    refs[(*nrefs)++] = (cl_ref){offsetof(clabi_descr_v5, coll.algo), d->coll.algo, cl_str_len(d->coll.algo)};
    refs[(*nrefs)++] = (cl_ref){offsetof(clabi_descr_v5, coll.proto), d->coll.proto, cl_str_len(d->coll.proto)};
    return;
  }
  p->p2p = (cl_p2p){.func = d->p2p.func, .datatype = d->p2p.datatype, .count = d->p2p.count,
                    .parent_group = (uint64_t)(uintptr_t)d->p2p.parentGroup, .peer = d->p2p.peer,
                    .nchannels = d->p2p.nChannels, .user_tag = tag};
  if (!rec) return;
  refs[(*nrefs)++] = (cl_ref){offsetof(clabi_descr_v5, p2p.func), d->p2p.func, cl_str_len(d->p2p.func)};
  refs[(*nrefs)++] = (cl_ref){offsetof(clabi_descr_v5, p2p.datatype), d->p2p.datatype, cl_str_len(d->p2p.datatype)};
}
/* Every other start, and every start while the recorder records. */
static void *cl_v5_start_any(void *ctx, uint64_t type, void *parentObj, int rank, const void *dv, int abi,
                             uint64_t tag) {
  const clabi_descr_v5 *d = dv;
  cl_payload p;
  unsigned flags = 0, size, et;
  cl_ref refs[4];
  int nrefs = 0;
  /* the recorder's string references; their lengths are read only when it records */
  const int rec = CL_RECORDING();
  uint32_t serial = cl_shim_comm(ctx, &flags);
  uint64_t parent = (uint64_t)(uintptr_t)parentObj;
  p.rank = rank;
  p._pad = 0;
  switch (type) {
  case CLABI_EV_GROUP_API:
    et = CL_EV_GROUP_API; size = CL_PSIZE(group_api);
    p.group_api.graph_captured = d->groupApi.graphCaptured;
    p.group_api.depth = d->groupApi.groupDepth;
    break;
  case CLABI_EV_COLL_API:
  case CLABI_EV_P2P_API:
    et = type == CLABI_EV_COLL_API ? CL_EV_COLL_API : CL_EV_P2P_API; size = CL_PSIZE(coll_api);
    cl_v5_api_payload(d, type == CLABI_EV_COLL_API, tag, rec, &p, refs, &nrefs);
    break;
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
  case CLABI_EV_P2P:
    et = type == CLABI_EV_COLL ? CL_EV_COLL : CL_EV_P2P;
    size = type == CLABI_EV_COLL ? CL_PSIZE(coll) : CL_PSIZE(p2p);
    parent = cl_v5_op_parent(parentObj, &flags);
    cl_v5_op_payload(d, type == CLABI_EV_COLL, tag, rec, &p, refs, &nrefs);
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
    if (rec && p.net.data_len) refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v5, netPlugin.data), d->netPlugin.data, p.net.data_len};
    break;
  default:
    return NULL;   /* v6/v7 handle their own types before calling us; anything else is unknown */
  }
  void *h = cl_event_start(serial, et, flags, parent, &p, size);
  if (rec) cl_recorder_start(abi, ctx, dv, cl_v5_descr_len(abi), refs, nrefs, h);
  return h;
}

/* The copy-engine types (CeColl, CeSync, CeBatch) of a clabi_descr_v6 or v7 (same offsets);
 * `tag`: v7's ceColl.userTag (0 in v6). */
static inline void *cl_v6_start_ce(void *ctx, const void *dv, int abi, uint64_t tag) {
  const clabi_descr_v6 *d = dv;
  cl_payload p;
  unsigned flags = 0, size, et;
  cl_ref refs[3];
  int nrefs = 0;
  uint32_t serial = cl_shim_comm(ctx, &flags);
  p.rank = d->rank;
  p._pad = 0;
  if (d->type == CLABI_EV_CE_COLL) {
    et = CL_EV_CE_COLL; size = CL_PSIZE(ce_coll);
    p.ce_coll = (cl_ce_coll){.seq = d->ceColl.seqNumber, .func = d->ceColl.func,
                             .datatype = d->ceColl.datatype, .sync_strategy = d->ceColl.syncStrategy,
                             .count = d->ceColl.count, .stream = (uint64_t)(uintptr_t)d->ceColl.stream,
                             .root = d->ceColl.root, .batch_size = d->ceColl.batchSize,
                             .num_batches = d->ceColl.numBatches, .ce_seq = d->ceColl.ceSeqNum,
                             .intra_batch_sync = cl_flag(&d->ceColl.intraBatchSync), .user_tag = tag,
                             .stream_id = cl_cupti_stream_id((uint64_t)(uintptr_t)d->ceColl.stream)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v6, ceColl.func), d->ceColl.func, cl_str_len(d->ceColl.func)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v6, ceColl.datatype), d->ceColl.datatype, cl_str_len(d->ceColl.datatype)};
    refs[nrefs++] = (cl_ref){offsetof(clabi_descr_v6, ceColl.syncStrategy), d->ceColl.syncStrategy, cl_str_len(d->ceColl.syncStrategy)};
  } else if (d->type == CLABI_EV_CE_SYNC) {
    et = CL_EV_CE_SYNC; size = CL_PSIZE(ce_sync);
    p.ce_sync = (cl_ce_sync){.nranks = d->ceCollSync.nRanks, .is_complete = cl_flag(&d->ceCollSync.isComplete)};
  } else {
    et = CL_EV_CE_BATCH; size = CL_PSIZE(ce_batch);
    p.ce_batch = (cl_ce_batch){.total_bytes = d->ceCollBatch.totalBytes, .num_ops = d->ceCollBatch.numOps,
                               .use_intra_sync = cl_flag(&d->ceCollBatch.useIntraSync)};
  }
  /* a CeColl's parent is its CollApi: a quiet handle is none (no kernel channels: no timers) */
  unsigned api_flags = 0;
  uint64_t parent = d->type == CLABI_EV_CE_COLL ? cl_v5_op_parent(d->parentObj, &api_flags) : (uint64_t)(uintptr_t)d->parentObj;
  void *h = cl_event_start(serial, et, flags, parent, &p, size);
  if (CL_RECORDING()) cl_recorder_start(abi, ctx, dv, cl_v5_descr_len(abi), refs, nrefs, h);
  return h;
}
static inline int cl_is_ce_type(uint64_t t) {
  return t == CLABI_EV_CE_COLL || t == CLABI_EV_CE_SYNC || t == CLABI_EV_CE_BATCH;
}
#endif
