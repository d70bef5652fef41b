/* names.c: see names.h. The NetPlugin layouts are read from the bytes the shim copied, with
 * the offsets checked in nccl_profiler_abi.h (clabi_net_ib_v1, clabi_net_sock_v1). */
#include "plugin/output/names.h"
#include "commlens/nccl_profiler_abi.h"
#include <string.h>

const char *cl_event_name(unsigned t) {
  static const char *n[CL_EV__COUNT] = {"Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl",
    "KernelCh", "NetPlugin", "GroupApi", "CollApi", "P2pApi", "KernelLaunch", "CeColl", "CeSync", "CeBatch", "KernelPhase"};
  return t < CL_EV__COUNT ? n[t] : "Unknown";
}

const char *cl_state_name(unsigned s) {
  static const char *n[] = {"SendPosted", "SendRemFifoWait", "SendTransmitted", "SendDone",
    "RecvPosted", "RecvReceived", "RecvTransmitted", "RecvDone", "SendGPUWait", "SendWait",
    "RecvWait", "RecvFlushWait", "RecvGPUWait", "Idle", "Active", "Sleep", "Wakeup", "Append",
    "AppendEnd", "InProgress", "SendPeerWait", "NetPluginUpdate", "KernelChStop",
    "GroupStartApiStop", "GroupEndApiStart", "CeCollStart", "CeCollComplete", "CeSyncStart",
    "CeSyncComplete", "CeBatchStart", "CeBatchComplete", "KernelPhaseStop"};
  return s < sizeof n / sizeof n[0] ? n[s] : "Unknown";
}

void cl_net_args(cl_sb *b, int *first, const cl_net_plugin *n) {
  uint32_t type = (uint32_t)n->id & CLABI_NET_TYPE_MASK;
  if (type == CLABI_NET_TYPE_IB && n->data_len >= sizeof(clabi_net_ib_v1)) {
    clabi_net_ib_v1 d;
    memcpy(&d, n->data, sizeof d);
    sb_key(b, first, "device"); sb_i64(b, d.qp.device);
    sb_key(b, first, "qp"); sb_i64(b, d.qp.qpNum);
    sb_key(b, first, "opcode"); sb_i64(b, d.qp.opcode);
    sb_key(b, first, "wr_id"); sb_u64(b, d.qp.wr_id);
    sb_key(b, first, "length"); sb_u64(b, d.qp.length);
  } else if (type == CLABI_NET_TYPE_SOCK && n->data_len >= sizeof(clabi_net_sock_v1)) {
    clabi_net_sock_v1 d;
    memcpy(&d, n->data, sizeof d);
    sb_key(b, first, "fd"); sb_i64(b, d.sock.fd);
    sb_key(b, first, "op"); sb_i64(b, d.sock.op);
    sb_key(b, first, "length"); sb_u64(b, d.sock.length);
  }
}
