/* v1.c: ncclProfiler_v1 (NCCL 2.23): func, datatype, algo and proto are NCCL's enum values
 * of that release; they are mapped to the same strings later versions pass. Values outside
 * the known range map to "unknown" rather than being trusted as indexes. */
#include "old_common.h"

#define v1_ABI 1

static const char *const g_funcs[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                      "AllReduce", "SendRecv", "Send", "Recv"};
static const char *const g_types[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32",
                                      "ncclInt64", "ncclUint64", "ncclFloat16", "ncclFloat32",
                                      "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
                                      "ncclFloat8e5m2"};
static const char *const g_algos[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                      "NVLS", "NVLS_TREE", "PAT"};
static const char *const g_protos[] = {"LL", "LL128", "SIMPLE"};
#define PICK(tab, v) ((unsigned)(v) < sizeof(tab) / sizeof(tab[0]) ? tab[v] : "unknown")

static clabi_result v1_init(void **ctx, int *mask) { return cl_old_init(ctx, mask, v1_ABI); }

static clabi_result v1_start(void *ctx, void **h, clabi_descr_v1 *d) {
  if (!h) return CLABI_SUCCESS;
  *h = NULL;
  if (!d) return CLABI_SUCCESS;
  cl_payload p;
  unsigned flags = 0, size, et;
  uint32_t serial = cl_shim_comm(ctx, &flags);
  p.rank = d->rank;
  p._pad = 0;
  switch (d->type) {
  case CLABI_EV_COLL:
    et = CL_EV_COLL; size = CL_PSIZE(coll);
    p.coll = (cl_coll){.seq = d->coll.seqNumber, .func = PICK(g_funcs, d->coll.func),
                       .datatype = PICK(g_types, d->coll.datatype), .algo = PICK(g_algos, d->coll.algo),
                       .proto = PICK(g_protos, d->coll.proto), .count = d->coll.count,
                       .comm_hash = d->coll.commHash, .root = d->coll.root,
                       .nchannels = d->coll.nMaxChannels, .nwarps = d->coll.nWarps,
                       .is_collnet = (uint8_t)(d->coll.isCollnet != 0), .is_nvls = (uint8_t)(d->coll.isNvls != 0)};
    break;
  case CLABI_EV_P2P:
    et = CL_EV_P2P; size = CL_PSIZE(p2p);
    p.p2p = (cl_p2p){.func = PICK(g_funcs, d->p2p.func), .datatype = PICK(g_types, d->p2p.datatype),
                     .count = d->p2p.count, .comm_hash = d->p2p.commHash, .peer = d->p2p.peer};
    break;
  default:
    if (!cl_old_common_event(d->type, &d->proxyOp, d->proxyStep.step, &p, &flags, &et, &size))
      return CLABI_SUCCESS;
  }
  *h = cl_event_start(serial, et, flags, (uint64_t)(uintptr_t)d->parentObj, &p, size);
  if (CL_RECORDING()) cl_recorder_start(v1_ABI, ctx, d, sizeof *d, NULL, 0, *h);
  return CLABI_SUCCESS;
}

CL_SHIM_COMMON(v1, clabi_state_args_v1, *(const uint64_t *)a)

CL_EXPORT const clabi_profiler_v1 ncclProfiler_v1 = {
  "commlens", v1_init, v1_start, v1_stop, v1_state, v1_finalize,
};
