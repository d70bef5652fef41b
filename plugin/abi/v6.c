/* v6.c: ncclProfiler_v6 (NCCL 2.29, 2.30): v5 plus copy-engine collectives (CeColl, CeSync,
 * CeBatch). NCCL never calls recordEventState for them; their host spans are enqueue only. */
#include "shim.h"
#include "v5_common.h"

#define v6_ABI 6

static clabi_result v6_init(void **ctx, uint64_t commId, int *mask, const char *commName,
                            int nNodes, int nranks, int rank, clabi_logger logfn) {
  cl_comm_desc d = {.hash = commId, .nnodes = nNodes, .nranks = nranks, .rank = rank,
                    .abi = v6_ABI, .logfn = (cl_logger_fn)logfn};
  if (commName) snprintf(d.name, sizeof d.name, "%s", commName);
  return cl_shim_init(ctx, mask, &d);
}

static void *v6_start_ce(void *ctx, const clabi_descr_v6 *d) {
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
                             .intra_batch_sync = cl_flag(&d->ceColl.intraBatchSync)};
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
  void *h = cl_event_start(serial, et, flags, (uint64_t)(uintptr_t)d->parentObj, &p, size);
  if (CL_RECORDING()) cl_recorder_start(6, ctx, d, sizeof *d, refs, nrefs, h);
  return h;
}

static clabi_result v6_start(void *ctx, void **h, clabi_descr_v6 *d) {
  if (!h) return CLABI_SUCCESS;
  *h = NULL;
  if (!d) return CLABI_SUCCESS;
  if (d->type == CLABI_EV_CE_COLL || d->type == CLABI_EV_CE_SYNC || d->type == CLABI_EV_CE_BATCH)
    *h = v6_start_ce(ctx, d);
  else
    *h = cl_v5_start_common(ctx, d->type, d->parentObj, d->rank, d, 6);
  return CLABI_SUCCESS;
}

CL_SHIM_COMMON(v6, clabi_state_args_v4, *(const uint64_t *)a)

CL_EXPORT const clabi_profiler_v6 ncclProfiler_v6 = {
  "commlens", v6_init, v6_start, v6_stop, v6_state, v6_finalize,
};
