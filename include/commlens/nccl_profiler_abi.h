/* nccl_profiler_abi.h: commlens' own transcription of the NCCL profiler plugin ABI,
 * versions 1 to 7, written from NCCL's documented profiler interface (the profiler headers
 * NCCL ships for plugins, v1 to v6; v7 from NVIDIA/nccl master after 2.30,
 * docs/decisions/0086-abi-v7-version-gate.md says which commit and what is unconfirmed). Every struct is checked field by field against the x86-64
 * LP64 offsets of those layouts (below).
 * Only plugin/abi/ and the test harness may include this file. */
#ifndef COMMLENS_NCCL_PROFILER_ABI_H
#define COMMLENS_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int clabi_result;      /* ncclResult_t: an int-sized enum; 0 = ncclSuccess */
#define CLABI_SUCCESS 0
#define CLABI_INTERNAL_ERROR 3
#define CLABI_INVALID_USAGE 5

/* ncclDebugLogger_t: (level, flags, file, line, fmt, ...). */
typedef void (*clabi_logger)(int level, unsigned long flags, const char *file, int line,
                             const char *fmt, ...);
enum { CLABI_LOG_NONE = 0, CLABI_LOG_VERSION = 1, CLABI_LOG_WARN = 2, CLABI_LOG_INFO = 3,
       CLABI_LOG_ABORT = 4, CLABI_LOG_TRACE = 5 };
#define CLABI_LOG_SUBSYS_PROFILE 16384UL

/* Event type bits: shared by the descriptor's `type` field and the activation mask. */
enum {
  CLABI_EV_GROUP = 1 << 0, CLABI_EV_COLL = 1 << 1, CLABI_EV_P2P = 1 << 2,
  CLABI_EV_PROXY_OP = 1 << 3, CLABI_EV_PROXY_STEP = 1 << 4, CLABI_EV_PROXY_CTRL = 1 << 5,
  CLABI_EV_KERNEL_CH = 1 << 6, CLABI_EV_NET_PLUGIN = 1 << 7,           /* v3 */
  CLABI_EV_GROUP_API = 1 << 8, CLABI_EV_COLL_API = 1 << 9, CLABI_EV_P2P_API = 1 << 10,
  CLABI_EV_KERNEL_LAUNCH = 1 << 11,                                     /* v5 */
  CLABI_EV_CE_COLL = 1 << 12, CLABI_EV_CE_SYNC = 1 << 13, CLABI_EV_CE_BATCH = 1 << 14, /* v6 */
  CLABI_EV_KERNEL_PHASE = 1 << 15,                                      /* v7 */
};

/* recordEventState values: one numbering for every version. */
enum {
  CLABI_ST_PROXY_OP_SEND_POSTED = 0, CLABI_ST_PROXY_OP_SEND_REM_FIFO_WAIT = 1,
  CLABI_ST_PROXY_OP_SEND_TRANSMITTED = 2, CLABI_ST_PROXY_OP_SEND_DONE = 3,
  CLABI_ST_PROXY_OP_RECV_POSTED = 4, CLABI_ST_PROXY_OP_RECV_RECEIVED = 5,
  CLABI_ST_PROXY_OP_RECV_TRANSMITTED = 6, CLABI_ST_PROXY_OP_RECV_DONE = 7,
  CLABI_ST_STEP_SEND_GPU_WAIT = 8, CLABI_ST_STEP_SEND_WAIT = 9, CLABI_ST_STEP_RECV_WAIT = 10,
  CLABI_ST_STEP_RECV_FLUSH_WAIT = 11, CLABI_ST_STEP_RECV_GPU_WAIT = 12,
  CLABI_ST_CTRL_IDLE = 13, CLABI_ST_CTRL_ACTIVE = 14, CLABI_ST_CTRL_SLEEP = 15,
  CLABI_ST_CTRL_WAKEUP = 16, CLABI_ST_CTRL_APPEND = 17, CLABI_ST_CTRL_APPEND_END = 18,
  CLABI_ST_PROXY_OP_IN_PROGRESS = 19, CLABI_ST_STEP_SEND_PEER_WAIT = 20,
  CLABI_ST_NET_PLUGIN_UPDATE = 21, CLABI_ST_KERNEL_CH_STOP = 22,
  CLABI_ST_GROUP_START_API_STOP = 23, CLABI_ST_GROUP_END_API_START = 24,
  CLABI_ST_CE_COLL_START = 25, CLABI_ST_CE_COLL_COMPLETE = 26, CLABI_ST_CE_SYNC_START = 27,
  CLABI_ST_CE_SYNC_COMPLETE = 28, CLABI_ST_CE_BATCH_START = 29, CLABI_ST_CE_BATCH_COMPLETE = 30,
  CLABI_ST_KERNEL_PHASE_STOP = 31,   /* v7: arg is the phase's GPU stop time (kernelCh.pTimer) */
};
/* v7 kernel phase ids (kernelPhase.phaseId) */
enum { CLABI_PHASE_INITIAL_SYNC = 0, CLABI_PHASE_COMPUTE = 1, CLABI_PHASE_FINAL_SYNC = 2 };

/* The proxy-op member is the same in every version. */
struct clabi_proxy_op { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; };

/* ---------------- v1 (NCCL 2.23): one-byte type, enum-coded func/datatype/algo/proto ------ */
typedef struct {
  uint8_t type; void *parentObj; int rank;
  union {
    struct { const char *name; uint64_t commHash; uint64_t seqNumber; uint8_t func;
             const void *sendBuff; void *recvBuff; size_t count; int root; uint8_t datatype;
             uint32_t op; size_t trafficBytes; uint8_t nMaxChannels; uint8_t nWarps;
             uint8_t algo; uint8_t proto; int isCollnet; int isNvls; } coll;
    struct { const char *name; uint64_t commHash; uint8_t func; void *buff; uint8_t datatype;
             size_t count; int peer; } p2p;
    struct clabi_proxy_op proxyOp;
    struct { int step; } proxyStep;
  };
} clabi_descr_v1;

/* v1..v3 state args: 16 bytes. */
typedef union {
  struct { size_t transSize; int steps; } proxyOp;
  struct { int appendedProxyOps; } proxyCtrl;
} clabi_state_args_v1;

/* ---------------- v2 (NCCL 2.24-2.25): strings instead of enums ----------------------------- */
typedef struct {
  uint8_t type; void *parentObj; int rank;
  union {
    struct { const char *name; uint64_t commHash; uint64_t seqNumber; const char *func;
             const void *sendBuff; void *recvBuff; size_t count; int root; const char *datatype;
             size_t trafficBytes; uint8_t nMaxChannels; uint8_t nWarps; const char *algo;
             const char *proto; } coll;
    struct { const char *name; uint64_t commHash; const char *func; void *buff;
             const char *datatype; size_t count; int peer; } p2p;
    struct clabi_proxy_op proxyOp;
    struct { int step; } proxyStep;
  };
} clabi_descr_v2;

/* ---------------- v3 (NCCL 2.26): KernelCh (no timer) and NetPlugin ------------------------- */
typedef struct {
  uint8_t type; void *parentObj; int rank;
  union {
    struct { const char *name; uint64_t commHash; uint64_t seqNumber; const char *func;
             const void *sendBuff; void *recvBuff; size_t count; int root; const char *datatype;
             uint8_t nMaxChannels; uint8_t nWarps; const char *algo; const char *proto; } coll;
    struct { const char *name; uint64_t commHash; const char *func; void *buff;
             const char *datatype; size_t count; int peer; } p2p;
    struct clabi_proxy_op proxyOp;
    struct { int step; } proxyStep;
    struct { uint8_t channelId; } kernelCh;
    struct { int64_t id; void *data; } netPlugin;
  };
} clabi_descr_v3;

/* ---------------- v4 (NCCL 2.27): comm identity moves to init, KernelCh gets pTimer --------- */
typedef struct {
  uint8_t type; void *parentObj; int rank;
  union {
    struct { uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;
             size_t count; int root; const char *datatype; uint8_t nChannels; uint8_t nWarps;
             const char *algo; const char *proto; } coll;
    struct { const char *func; void *buff; const char *datatype; size_t count; int peer;
             uint8_t nChannels; } p2p;
    struct clabi_proxy_op proxyOp;
    struct { int step; } proxyStep;
    struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
    struct { int64_t id; void *data; } netPlugin;
  };
} clabi_descr_v4;

/* v4..v6 state args: 8 bytes. */
typedef union {
  struct { size_t transSize; } proxyStep;
  struct { int appendedProxyOps; } proxyCtrl;
  struct { void *data; } netPlugin;
  struct { uint64_t pTimer; } kernelCh;
} clabi_state_args_v4;

/* ---------------- v5 (NCCL 2.28): 64-bit type, API events; v6 (2.29): CE events ------------ */
#define CLABI_V5_UNION_MEMBERS                                                                  \
    struct { int graphCaptured; int groupDepth; } groupApi;                                     \
    struct { const char *func; size_t count; const char *datatype; int root; void *stream;     \
             bool graphCaptured; } collApi;                                                     \
    struct { const char *func; size_t count; const char *datatype; void *stream;               \
             bool graphCaptured; } p2pApi;                                                      \
    struct { void *stream; } kernelLaunch;                                                      \
    struct { uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;       \
             size_t count; int root; const char *datatype; uint8_t nChannels; uint8_t nWarps;  \
             const char *algo; const char *proto; void *parentGroup; } coll;                    \
    struct { const char *func; void *buff; const char *datatype; size_t count; int peer;       \
             uint8_t nChannels; void *parentGroup; } p2p;                                       \
    struct clabi_proxy_op proxyOp;                                                              \
    struct { int step; } proxyStep;                                                             \
    struct { uint8_t channelId; uint64_t pTimer; } kernelCh;                                    \
    struct { int64_t id; void *data; } netPlugin;

typedef struct {
  uint64_t type; void *parentObj; int rank;
  union { CLABI_V5_UNION_MEMBERS };
} clabi_descr_v5;

typedef struct {
  uint64_t type; void *parentObj; int rank;
  union {
    CLABI_V5_UNION_MEMBERS
    struct { uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;
             size_t count; int root; const char *datatype; const char *syncStrategy;
             bool intraBatchSync; uint32_t batchSize; uint32_t numBatches; uint32_t ceSeqNum;
             void *stream; } ceColl;
    struct { bool isComplete; int nRanks; } ceCollSync;
    struct { int numOps; size_t totalBytes; bool useIntraSync; } ceCollBatch;
  };
} clabi_descr_v6;

/* ---------------- v7 (NVIDIA/nccl master after 2.30): user tags, kernel phases ---------------
 * Same header; every v5/v6 member keeps its offsets, the ones that gain fields grow at their end
 * (so v7's union is 112 bytes and the descriptor 136): userTag (0 = untagged) after the API
 * events' graphCaptured, after coll.parentGroup (with kernelVariant and isSymColl before it),
 * after p2p.parentGroup and ceColl.stream; and the KernelPhase member. */
typedef struct {
  uint64_t type; void *parentObj; int rank;
  union {
    struct { int graphCaptured; int groupDepth; } groupApi;
    struct { const char *func; size_t count; const char *datatype; int root; void *stream;
             bool graphCaptured; uint64_t userTag; } collApi;
    struct { const char *func; size_t count; const char *datatype; void *stream;
             bool graphCaptured; uint64_t userTag; } p2pApi;
    struct { void *stream; } kernelLaunch;
    struct { uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;
             size_t count; int root; const char *datatype; uint8_t nChannels; uint8_t nWarps;
             const char *algo; const char *proto; void *parentGroup; const char *kernelVariant;
             bool isSymColl; uint64_t userTag; } coll;
    struct { const char *func; void *buff; const char *datatype; size_t count; int peer;
             uint8_t nChannels; void *parentGroup; uint64_t userTag; } p2p;
    struct clabi_proxy_op proxyOp;
    struct { int step; } proxyStep;
    struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
    struct { int64_t id; void *data; } netPlugin;
    struct { uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;
             size_t count; int root; const char *datatype; const char *syncStrategy;
             bool intraBatchSync; uint32_t batchSize; uint32_t numBatches; uint32_t ceSeqNum;
             void *stream; uint64_t userTag; } ceColl;
    struct { bool isComplete; int nRanks; } ceCollSync;
    struct { int numOps; size_t totalBytes; bool useIntraSync; } ceCollBatch;
    /* phaseId: CLABI_PHASE_*; pTimer: the phase's GPU start (%globaltimer ns) */
    struct { uint8_t channelId; uint8_t phaseId; const char *phaseName; uint64_t pTimer; } kernelPhase;
  };
} clabi_descr_v7;

/* ---------------- function tables: {name, init, start, stop, state, finalize} ---------------- */
#define CLABI_TABLE(V, INIT_ARGS, DESCR, STATE_ARGS)                                            \
  typedef struct {                                                                              \
    const char *name;                                                                           \
    clabi_result (*init) INIT_ARGS;                                                             \
    clabi_result (*startEvent)(void *context, void **eHandle, DESCR *eDescr);                   \
    clabi_result (*stopEvent)(void *eHandle);                                                   \
    clabi_result (*recordEventState)(void *eHandle, int eState, STATE_ARGS *eStateArgs);        \
    clabi_result (*finalize)(void *context);                                                    \
  } clabi_profiler_##V;

#define CLABI_INIT_V1 (void **context, int *eActivationMask)
#define CLABI_INIT_V4 (void **context, int *eActivationMask, const char *commName,             \
                       uint64_t commHash, int nNodes, int nranks, int rank, clabi_logger logfn)
#define CLABI_INIT_V5 (void **context, uint64_t commId, int *eActivationMask,                   \
                       const char *commName, int nNodes, int nranks, int rank, clabi_logger logfn)
CLABI_TABLE(v1, CLABI_INIT_V1, clabi_descr_v1, clabi_state_args_v1)
CLABI_TABLE(v2, CLABI_INIT_V1, clabi_descr_v2, clabi_state_args_v1)
CLABI_TABLE(v3, CLABI_INIT_V1, clabi_descr_v3, clabi_state_args_v1)
CLABI_TABLE(v4, CLABI_INIT_V4, clabi_descr_v4, clabi_state_args_v4)
CLABI_TABLE(v5, CLABI_INIT_V5, clabi_descr_v5, clabi_state_args_v4)
CLABI_TABLE(v6, CLABI_INIT_V5, clabi_descr_v6, clabi_state_args_v4)
CLABI_TABLE(v7, CLABI_INIT_V5, clabi_descr_v7, clabi_state_args_v4)

/* ---------------- NetPlugin v1 descriptors (data of a NetPlugin event) ---------------------- */
#define CLABI_NET_VER_MASK 0x0000FFFFu
#define CLABI_NET_TYPE_MASK 0xFFFF0000u
#define CLABI_NET_TYPE_IB 0x10000u
#define CLABI_NET_TYPE_SOCK 0x20000u
typedef struct { uint8_t type; union { struct { int device; uint64_t wr_id; int opcode; int qpNum;
                 size_t length; } qp; }; } clabi_net_ib_v1;
typedef struct { uint8_t type; union { struct { int fd; int op; size_t length; } sock; }; } clabi_net_sock_v1;

/* ---------------- layout checks: every field offset and size of the layouts above ---------- */
#define CLABI_AT(T, F, OFF) _Static_assert(offsetof(T, F) == (OFF), #T "." #F " offset")
#define CLABI_SIZE(T, N) _Static_assert(sizeof(T) == (N), #T " size")
CLABI_SIZE(clabi_descr_v1, 120); CLABI_SIZE(clabi_descr_v2, 128); CLABI_SIZE(clabi_descr_v3, 120);
CLABI_SIZE(clabi_descr_v4, 104); CLABI_SIZE(clabi_descr_v5, 112); CLABI_SIZE(clabi_descr_v6, 112);
CLABI_SIZE(clabi_state_args_v1, 16); CLABI_SIZE(clabi_state_args_v4, 8);
CLABI_AT(clabi_descr_v1, parentObj, 8); CLABI_AT(clabi_descr_v1, rank, 16);
CLABI_AT(clabi_descr_v1, coll.seqNumber, 40); CLABI_AT(clabi_descr_v1, coll.func, 48);
CLABI_AT(clabi_descr_v1, coll.count, 72); CLABI_AT(clabi_descr_v1, coll.datatype, 84);
CLABI_AT(clabi_descr_v1, coll.nMaxChannels, 104); CLABI_AT(clabi_descr_v1, coll.algo, 106);
CLABI_AT(clabi_descr_v1, coll.isNvls, 112); CLABI_AT(clabi_descr_v1, p2p.peer, 72);
CLABI_AT(clabi_descr_v2, coll.datatype, 88); CLABI_AT(clabi_descr_v2, coll.nMaxChannels, 104);
CLABI_AT(clabi_descr_v2, coll.proto, 120); CLABI_AT(clabi_descr_v2, p2p.count, 64);
CLABI_AT(clabi_descr_v3, coll.nMaxChannels, 96); CLABI_AT(clabi_descr_v3, coll.proto, 112);
CLABI_AT(clabi_descr_v3, kernelCh.channelId, 24); CLABI_AT(clabi_descr_v3, netPlugin.data, 32);
CLABI_AT(clabi_descr_v4, coll.seqNumber, 24); CLABI_AT(clabi_descr_v4, coll.nChannels, 80);
CLABI_AT(clabi_descr_v4, coll.proto, 96); CLABI_AT(clabi_descr_v4, p2p.nChannels, 60);
CLABI_AT(clabi_descr_v4, kernelCh.pTimer, 32);
CLABI_AT(clabi_descr_v5, parentObj, 8); CLABI_AT(clabi_descr_v5, rank, 16);
CLABI_AT(clabi_descr_v5, groupApi.groupDepth, 28);
CLABI_AT(clabi_descr_v5, collApi.func, 24); CLABI_AT(clabi_descr_v5, collApi.count, 32);
CLABI_AT(clabi_descr_v5, collApi.datatype, 40); CLABI_AT(clabi_descr_v5, collApi.root, 48);
CLABI_AT(clabi_descr_v5, collApi.stream, 56); CLABI_AT(clabi_descr_v5, collApi.graphCaptured, 64);
CLABI_AT(clabi_descr_v5, p2pApi.stream, 48); CLABI_AT(clabi_descr_v5, p2pApi.graphCaptured, 56);
CLABI_AT(clabi_descr_v5, kernelLaunch.stream, 24);
CLABI_AT(clabi_descr_v5, coll.seqNumber, 24); CLABI_AT(clabi_descr_v5, coll.func, 32);
CLABI_AT(clabi_descr_v5, coll.count, 56); CLABI_AT(clabi_descr_v5, coll.root, 64);
CLABI_AT(clabi_descr_v5, coll.datatype, 72); CLABI_AT(clabi_descr_v5, coll.nChannels, 80);
CLABI_AT(clabi_descr_v5, coll.nWarps, 81); CLABI_AT(clabi_descr_v5, coll.algo, 88);
CLABI_AT(clabi_descr_v5, coll.proto, 96); CLABI_AT(clabi_descr_v5, coll.parentGroup, 104);
CLABI_AT(clabi_descr_v5, p2p.func, 24); CLABI_AT(clabi_descr_v5, p2p.datatype, 40);
CLABI_AT(clabi_descr_v5, p2p.count, 48); CLABI_AT(clabi_descr_v5, p2p.peer, 56);
CLABI_AT(clabi_descr_v5, p2p.nChannels, 60); CLABI_AT(clabi_descr_v5, p2p.parentGroup, 64);
CLABI_AT(clabi_descr_v5, proxyOp.pid, 24); CLABI_AT(clabi_descr_v5, proxyOp.channelId, 28);
CLABI_AT(clabi_descr_v5, proxyOp.peer, 32); CLABI_AT(clabi_descr_v5, proxyOp.nSteps, 36);
CLABI_AT(clabi_descr_v5, proxyOp.chunkSize, 40); CLABI_AT(clabi_descr_v5, proxyOp.isSend, 44);
CLABI_AT(clabi_descr_v5, proxyStep.step, 24); CLABI_AT(clabi_descr_v5, kernelCh.channelId, 24);
CLABI_AT(clabi_descr_v5, kernelCh.pTimer, 32); CLABI_AT(clabi_descr_v5, netPlugin.id, 24);
CLABI_AT(clabi_descr_v5, netPlugin.data, 32);
CLABI_AT(clabi_descr_v6, ceColl.datatype, 72); CLABI_AT(clabi_descr_v6, ceColl.syncStrategy, 80);
CLABI_AT(clabi_descr_v6, ceColl.intraBatchSync, 88); CLABI_AT(clabi_descr_v6, ceColl.batchSize, 92);
CLABI_AT(clabi_descr_v6, ceColl.numBatches, 96); CLABI_AT(clabi_descr_v6, ceColl.ceSeqNum, 100);
CLABI_AT(clabi_descr_v6, ceColl.stream, 104); CLABI_AT(clabi_descr_v6, ceCollSync.nRanks, 28);
CLABI_AT(clabi_descr_v6, ceCollBatch.totalBytes, 32);
CLABI_AT(clabi_descr_v6, ceCollBatch.useIntraSync, 40);
CLABI_SIZE(clabi_descr_v7, 136);
CLABI_AT(clabi_descr_v7, collApi.graphCaptured, 64); CLABI_AT(clabi_descr_v7, collApi.userTag, 72);
CLABI_AT(clabi_descr_v7, p2pApi.graphCaptured, 56); CLABI_AT(clabi_descr_v7, p2pApi.userTag, 64);
CLABI_AT(clabi_descr_v7, coll.parentGroup, 104); CLABI_AT(clabi_descr_v7, coll.kernelVariant, 112);
CLABI_AT(clabi_descr_v7, coll.isSymColl, 120); CLABI_AT(clabi_descr_v7, coll.userTag, 128);
CLABI_AT(clabi_descr_v7, p2p.parentGroup, 64); CLABI_AT(clabi_descr_v7, p2p.userTag, 72);
CLABI_AT(clabi_descr_v7, ceColl.stream, 104); CLABI_AT(clabi_descr_v7, ceColl.userTag, 112);
CLABI_AT(clabi_descr_v7, kernelPhase.channelId, 24); CLABI_AT(clabi_descr_v7, kernelPhase.phaseId, 25);
CLABI_AT(clabi_descr_v7, kernelPhase.phaseName, 32); CLABI_AT(clabi_descr_v7, kernelPhase.pTimer, 40);
/* the members v7 shares with v5/v6 sit where v5 has them (v5_common.h reads them so) */
CLABI_AT(clabi_descr_v7, coll.nChannels, 80); CLABI_AT(clabi_descr_v7, p2p.nChannels, 60);
CLABI_AT(clabi_descr_v7, kernelCh.pTimer, 32); CLABI_AT(clabi_descr_v7, proxyOp.isSend, 44);
CLABI_AT(clabi_descr_v7, netPlugin.data, 32); CLABI_AT(clabi_descr_v7, ceCollBatch.useIntraSync, 40);
CLABI_SIZE(clabi_net_ib_v1, 40); CLABI_SIZE(clabi_net_sock_v1, 24);
CLABI_AT(clabi_net_ib_v1, qp.qpNum, 28); CLABI_AT(clabi_net_ib_v1, qp.length, 32);
CLABI_AT(clabi_net_sock_v1, sock.op, 12); CLABI_AT(clabi_net_sock_v1, sock.length, 16);
_Static_assert(sizeof(clabi_profiler_v5) == 48, "function table is 6 pointers");

#endif
