/* shim.h: what the per-version shims share: the pid/context checks that decide whether a
 * descriptor's parent may be trusted, payload builders for layouts common to several
 * versions, and the calls to the recorder of raw ABI calls (COMMLENS_RECORD, recorder.h).
 * Only plugin/abi/ includes this file. */
#ifndef COMMLENS_SHIM_H
#define COMMLENS_SHIM_H
#include "commlens/nccl_profiler_abi.h"
#include "plugin/plugin.h"
#include "plugin/abi/recorder.h"
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define CL_EXPORT __attribute__((visibility("default")))

/* Process id, cached (getpid is a system call); refreshed in a fork child. Atomic: every
 * init stores it while other threads' startEvent read it (relaxed: the value never differs). */
extern _Atomic pid_t cl_self_pid;

static inline unsigned cl_str_len(const char *s) { return s ? (unsigned)strlen(s) + 1 : 0; }
/* A `bool` field of NCCL's descriptor, read as the byte it is: a broken or foreign caller may
 * leave any value there, and loading such a byte as _Bool is undefined (fuzz_abi found it). */
static inline uint8_t cl_flag(const bool *b) {
  uint8_t v;
  memcpy(&v, b, 1);
  return v != 0;
}

/* Serial and flags for an event whose context NCCL passed: an unknown context (NULL,
 * foreign under PXN, or stale) gives serial 0 and marks the parent opaque. */
static inline uint32_t cl_shim_comm(void *ctx, unsigned *flags) {
  uint32_t s = cl_ctx_serial(ctx);
  if (!s) *flags |= ctx ? CL_F_FOREIGN : CL_F_NO_COMM;
  return s;
}

/* ProxyOp descriptors name the process that created the op: another process's op (PXN)
 * has a foreign context and parent, which are never looked at. */
static inline void cl_shim_proxy_op(const struct clabi_proxy_op *d, cl_payload *p, unsigned *flags) {
  p->proxy_op.pid = d->pid;
  p->proxy_op.channel = d->channelId;
  p->proxy_op.peer = d->peer;
  p->proxy_op.nsteps = d->nSteps;
  p->proxy_op.chunk_size = d->chunkSize;
  p->proxy_op.is_send = (uint8_t)(d->isSend != 0);
  if (d->pid != atomic_load_explicit(&cl_self_pid, memory_order_relaxed)) *flags |= CL_F_FOREIGN;
}

/* Payload sizes per event type (the union member used), for the record length. */
#define CL_PSIZE(member) ((unsigned)sizeof(((cl_payload *)0)->member))

/* NetPlugin data: copy the IB or socket v1 descriptor when the plugin id says which. */
static inline unsigned cl_net_data_len(int64_t id) {
  uint32_t type = (uint32_t)id & CLABI_NET_TYPE_MASK, ver = (uint32_t)id & CLABI_NET_VER_MASK;
  if (ver != 1) return 0;
  if (type == CLABI_NET_TYPE_IB) return sizeof(clabi_net_ib_v1);
  if (type == CLABI_NET_TYPE_SOCK) return sizeof(clabi_net_sock_v1);
  return 0;
}
static inline void cl_shim_net(int64_t id, const void *data, cl_payload *p) {
  p->net.id = id;
  unsigned n = data ? cl_net_data_len(id) : 0;
  p->net.data_len = (uint8_t)n;
  if (n) memcpy(p->net.data, data, n);
}

/* The version of the NCCL loaded in this process, as ncclGetVersion gives it (2.31.2: 23102);
 * 0 when it cannot be found (an NCCL linked in statically with its symbols hidden). Never
 * loads NCCL: it looks in the global scope, then for a libnccl.so.2 already loaded. */
int cl_shim_nccl_version(void);

/* Common tail of every version's init: our context and mask, the logger, one log line. */
static inline clabi_result cl_shim_init(void **ctx, int *mask, cl_comm_desc *d) {
  if (!ctx || !mask) return CLABI_SUCCESS;
  atomic_store_explicit(&cl_self_pid, getpid(), memory_order_relaxed);
  if (cl_comm_init(ctx, mask, d) != 0) *ctx = NULL;   /* events still flow, without a comm */
  cl_recorder_begin();
  if (CL_RECORDING()) cl_recorder_init(d->abi, *ctx, d, *mask);
  return CLABI_SUCCESS;
}

/* Stop, state and finalize are the same in every version once the state args are read. */
#define CL_SHIM_COMMON(V, STATE_ARGS, ARG_EXPR)                                              \
  static clabi_result V##_stop(void *h) {                                                    \
    if (CL_RECORDING()) cl_recorder_stop(V##_ABI, h);                                        \
    cl_event_stop(h);                                                                        \
    return CLABI_SUCCESS;                                                                    \
  }                                                                                          \
  static clabi_result V##_state(void *h, int st, STATE_ARGS *a) {                            \
    if (CL_RECORDING()) cl_recorder_state(V##_ABI, h, st, a, a ? sizeof *a : 0);             \
    cl_event_state(h, st, a ? (ARG_EXPR) : 0);                                               \
    return CLABI_SUCCESS;                                                                    \
  }                                                                                          \
  static clabi_result V##_finalize(void *ctx) {                                              \
    if (CL_RECORDING()) cl_recorder_finalize(V##_ABI, ctx);                                  \
    cl_comm_finalize(ctx);                                                                   \
    return CLABI_SUCCESS;                                                                    \
  }
#endif
