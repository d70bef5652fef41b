/* h_encode.c: the harness's event descriptors in every ABI version's layout (nccl_profiler_abi.h),
 * as NCCL's adapters fill them (padding and unused members left as garbage); it only encodes,
 * and never calls the plugin. */
#include "harness.h"
#include <string.h>

static const char *const g_v1_funcs[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                         "AllReduce", "SendRecv", "Send", "Recv", NULL};
static const char *const g_v1_types[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32",
                                         "ncclInt64", "ncclUint64", "ncclFloat16", "ncclFloat32",
                                         "ncclFloat64", "ncclBfloat16", NULL};
static const char *const g_v1_algos[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                         "NVLS", "NVLS_TREE", "PAT", NULL};
static const char *const g_v1_protos[] = {"LL", "LL128", "SIMPLE", NULL};

int h_v1_code(const char *kind, const char *s) {
  const char *const *t = !strcmp(kind, "func") ? g_v1_funcs : !strcmp(kind, "datatype") ? g_v1_types
                       : !strcmp(kind, "algo") ? g_v1_algos : g_v1_protos;
  for (int i = 0; s && t[i]; i++) if (!strcmp(t[i], s)) return i;
  return -1;
}

#define ENC_PROXY(d, e)                                                                  \
  case CLABI_EV_PROXY_OP:                                                                \
    d->proxyOp = (struct clabi_proxy_op){.pid = e->pid, .channelId = e->channel,         \
                                         .peer = e->peer, .nSteps = e->nsteps,           \
                                         .chunkSize = e->chunk_size, .isSend = e->is_send}; \
    break;                                                                               \
  case CLABI_EV_PROXY_STEP: d->proxyStep.step = e->step; break;

/* v1: the names as codes of NCCL's enums of the time */
static size_t enc_v1(const h_event *e, void *buf) {
  clabi_descr_v1 *d = buf;
  d->type = (uint8_t)e->type; d->parentObj = e->parent; d->rank = e->rank;
  switch (e->type) {
  case CLABI_EV_COLL:
    d->coll.name = e->comm_name; d->coll.commHash = e->comm_hash; d->coll.seqNumber = e->seq;
    d->coll.func = (uint8_t)h_v1_code("func", e->func); d->coll.sendBuff = e->sendbuff;
    d->coll.recvBuff = e->recvbuff; d->coll.count = e->count; d->coll.root = e->root;
    d->coll.datatype = (uint8_t)h_v1_code("datatype", e->datatype); d->coll.op = 0;
    d->coll.trafficBytes = e->count * 4; d->coll.nMaxChannels = e->nchannels;
    d->coll.nWarps = e->nwarps; d->coll.algo = (uint8_t)h_v1_code("algo", e->algo);
    d->coll.proto = (uint8_t)h_v1_code("proto", e->proto); d->coll.isCollnet = 0; d->coll.isNvls = 0;
    break;
  case CLABI_EV_P2P:
    d->p2p.name = e->comm_name; d->p2p.commHash = e->comm_hash;
    d->p2p.func = (uint8_t)h_v1_code("func", e->func); d->p2p.buff = e->recvbuff;
    d->p2p.datatype = (uint8_t)h_v1_code("datatype", e->datatype); d->p2p.count = e->count;
    d->p2p.peer = e->peer;
    break;
  ENC_PROXY(d, e)
  }
  return sizeof *d;
}

static size_t enc_v2(const h_event *e, void *buf) {
  clabi_descr_v2 *d = buf;
  d->type = (uint8_t)e->type; d->parentObj = e->parent; d->rank = e->rank;
  switch (e->type) {
  case CLABI_EV_COLL:
    d->coll.name = e->comm_name; d->coll.commHash = e->comm_hash; d->coll.seqNumber = e->seq;
    d->coll.func = e->func; d->coll.sendBuff = e->sendbuff; d->coll.recvBuff = e->recvbuff;
    d->coll.count = e->count; d->coll.root = e->root; d->coll.datatype = e->datatype;
    d->coll.trafficBytes = e->count * 4; d->coll.nMaxChannels = e->nchannels;
    d->coll.nWarps = e->nwarps; d->coll.algo = e->algo; d->coll.proto = e->proto;
    break;
  case CLABI_EV_P2P:
    d->p2p.name = e->comm_name; d->p2p.commHash = e->comm_hash; d->p2p.func = e->func;
    d->p2p.buff = e->recvbuff; d->p2p.datatype = e->datatype; d->p2p.count = e->count;
    d->p2p.peer = e->peer;
    break;
  ENC_PROXY(d, e)
  }
  return sizeof *d;
}

/* v3: adds the kernel channels and the network plugin's events */
static size_t enc_v3(const h_event *e, void *buf) {
  clabi_descr_v3 *d = buf;
  d->type = (uint8_t)e->type; d->parentObj = e->parent; d->rank = e->rank;
  switch (e->type) {
  case CLABI_EV_COLL:
    d->coll.name = e->comm_name; d->coll.commHash = e->comm_hash; d->coll.seqNumber = e->seq;
    d->coll.func = e->func; d->coll.sendBuff = e->sendbuff; d->coll.recvBuff = e->recvbuff;
    d->coll.count = e->count; d->coll.root = e->root; d->coll.datatype = e->datatype;
    d->coll.nMaxChannels = e->nchannels; d->coll.nWarps = e->nwarps; d->coll.algo = e->algo;
    d->coll.proto = e->proto;
    break;
  case CLABI_EV_P2P:
    d->p2p.name = e->comm_name; d->p2p.commHash = e->comm_hash; d->p2p.func = e->func;
    d->p2p.buff = e->recvbuff; d->p2p.datatype = e->datatype; d->p2p.count = e->count;
    d->p2p.peer = e->peer;
    break;
  case CLABI_EV_KERNEL_CH: d->kernelCh.channelId = e->channel; break;
  case CLABI_EV_NET_PLUGIN: d->netPlugin.id = e->net_id; d->netPlugin.data = e->net_data; break;
  ENC_PROXY(d, e)
  }
  return sizeof *d;
}

static size_t enc_v4(const h_event *e, void *buf) {
  clabi_descr_v4 *d = buf;
  d->type = (uint8_t)e->type; d->parentObj = e->parent; d->rank = e->rank;
  switch (e->type) {
  case CLABI_EV_COLL:
    d->coll.seqNumber = e->seq; d->coll.func = e->func; d->coll.sendBuff = e->sendbuff;
    d->coll.recvBuff = e->recvbuff; d->coll.count = e->count; d->coll.root = e->root;
    d->coll.datatype = e->datatype; d->coll.nChannels = e->nchannels; d->coll.nWarps = e->nwarps;
    d->coll.algo = e->algo; d->coll.proto = e->proto;
    break;
  case CLABI_EV_P2P:
    d->p2p.func = e->func; d->p2p.buff = e->recvbuff; d->p2p.datatype = e->datatype;
    d->p2p.count = e->count; d->p2p.peer = e->peer; d->p2p.nChannels = e->nchannels;
    break;
  case CLABI_EV_KERNEL_CH: d->kernelCh.channelId = e->channel; d->kernelCh.pTimer = e->ptimer; break;
  case CLABI_EV_NET_PLUGIN: d->netPlugin.id = e->net_id; d->netPlugin.data = e->net_data; break;
  ENC_PROXY(d, e)
  }
  return sizeof *d;
}

/* v5: the API events, kernel launches and launch groups; v6: the copy-engine collectives */
static size_t enc_v5_v6(int abi, const h_event *e, void *buf) {
  clabi_descr_v6 *d = buf;   /* v5 is the same layout without the CE members */
  d->type = e->type; d->parentObj = e->parent; d->rank = e->rank;
  switch (e->type) {
  case CLABI_EV_GROUP_API:
    d->groupApi.graphCaptured = e->graph_captured; d->groupApi.groupDepth = e->group_depth; break;
  case CLABI_EV_COLL_API:
    d->collApi.func = e->func; d->collApi.count = e->count; d->collApi.datatype = e->datatype;
    d->collApi.root = e->root; d->collApi.stream = e->stream;
    d->collApi.graphCaptured = e->graph_captured != 0;
    break;
  case CLABI_EV_P2P_API:
    d->p2pApi.func = e->func; d->p2pApi.count = e->count; d->p2pApi.datatype = e->datatype;
    d->p2pApi.stream = e->stream; d->p2pApi.graphCaptured = e->graph_captured != 0;
    break;
  case CLABI_EV_KERNEL_LAUNCH: d->kernelLaunch.stream = e->stream; break;
  case CLABI_EV_COLL:
    d->coll.seqNumber = e->seq; d->coll.func = e->func; d->coll.sendBuff = e->sendbuff;
    d->coll.recvBuff = e->recvbuff; d->coll.count = e->count; d->coll.root = e->root;
    d->coll.datatype = e->datatype; d->coll.nChannels = e->nchannels; d->coll.nWarps = e->nwarps;
    d->coll.algo = e->algo; d->coll.proto = e->proto; d->coll.parentGroup = e->parent_group;
    break;
  case CLABI_EV_P2P:
    d->p2p.func = e->func; d->p2p.buff = e->recvbuff; d->p2p.datatype = e->datatype;
    d->p2p.count = e->count; d->p2p.peer = e->peer; d->p2p.nChannels = e->nchannels;
    d->p2p.parentGroup = e->parent_group;
    break;
  case CLABI_EV_KERNEL_CH: d->kernelCh.channelId = e->channel; d->kernelCh.pTimer = e->ptimer; break;
  case CLABI_EV_NET_PLUGIN: d->netPlugin.id = e->net_id; d->netPlugin.data = e->net_data; break;
  case CLABI_EV_CE_COLL:
    d->ceColl.seqNumber = e->seq; d->ceColl.func = e->func; d->ceColl.sendBuff = e->sendbuff;
    d->ceColl.recvBuff = e->recvbuff; d->ceColl.count = e->count; d->ceColl.root = e->root;
    d->ceColl.datatype = e->datatype; d->ceColl.syncStrategy = "MC";
    d->ceColl.intraBatchSync = false; d->ceColl.batchSize = 1; d->ceColl.numBatches = 1;
    d->ceColl.ceSeqNum = (uint32_t)e->seq; d->ceColl.stream = e->stream;
    break;
  case CLABI_EV_CE_SYNC: d->ceCollSync.isComplete = true; d->ceCollSync.nRanks = 2; break;
  case CLABI_EV_CE_BATCH:
    d->ceCollBatch.numOps = 1; d->ceCollBatch.totalBytes = e->count * 4;
    d->ceCollBatch.useIntraSync = false;
    break;
  ENC_PROXY(d, e)
  }
  return abi == 5 ? sizeof(clabi_descr_v5) : sizeof(clabi_descr_v6);
}

static size_t enc_v7(const h_event *e, void *buf) {
  /* v7 keeps every v6 member's offsets and appends (nccl_profiler_abi.h): the v6 encoding,
   * then the tags and the KernelPhase member */
  h_event six = *e;
  if (e->type == CLABI_EV_KERNEL_PHASE) six.type = 0;
  enc_v5_v6(6, &six, buf);
  clabi_descr_v7 *d = buf;
  d->type = e->type;
  switch (e->type) {
  case CLABI_EV_COLL_API: d->collApi.userTag = e->user_tag; break;
  case CLABI_EV_P2P_API: d->p2pApi.userTag = e->user_tag; break;
  case CLABI_EV_COLL:
    d->coll.kernelVariant = "default"; d->coll.isSymColl = false; d->coll.userTag = e->user_tag; break;
  case CLABI_EV_P2P: d->p2p.userTag = e->user_tag; break;
  case CLABI_EV_CE_COLL: d->ceColl.userTag = e->user_tag; break;
  case CLABI_EV_KERNEL_PHASE:
    d->kernelPhase.channelId = e->channel; d->kernelPhase.phaseId = e->phase;
    d->kernelPhase.phaseName = e->phase_name; d->kernelPhase.pTimer = e->ptimer;
    break;
  }
  return sizeof *d;
}

size_t h_encode(int abi, const h_event *e, void *buf) {
  memset(buf, 0xA5, 128);   /* NCCL's adapters leave padding and unused members uninitialised */
  switch (abi) {
  case 1: return enc_v1(e, buf);
  case 2: return enc_v2(e, buf);
  case 3: return enc_v3(e, buf);
  case 4: return enc_v4(e, buf);
  case 5:
  case 6: return enc_v5_v6(abi, e, buf);
  case 7: return enc_v7(e, buf);
  }
  return 0;
}
