/* old_common.h: what v1, v2 and v3 share: the communicator is named in each Coll/P2p
 * descriptor (no identity in init), and proxy events have the same layout. The collective
 * fields differ in type between v1 (enums) and v2/v3 (strings), so each file maps those. */
#ifndef COMMLENS_OLD_COMMON_H
#define COMMLENS_OLD_COMMON_H
#include "shim.h"
#include <stdio.h>
#include <unistd.h>

static inline clabi_result cl_old_init(void **ctx, int *mask, int abi) {
  cl_comm_desc d = {.nnodes = -1, .nranks = -1, .rank = -1, .abi = abi};
  return cl_shim_init(ctx, mask, &d);
}

/* Events whose layout is the same from v1 to v3; returns 0 if the type is not one of them. */
static inline int cl_old_common_event(unsigned type, const struct clabi_proxy_op *op,
                                      int step, cl_payload *p, unsigned *flags, unsigned *et,
                                      unsigned *size) {
  switch (type) {
  case CLABI_EV_GROUP: *et = CL_EV_GROUP; *size = 0; return 1;
  case CLABI_EV_PROXY_OP: *et = CL_EV_PROXY_OP; *size = CL_PSIZE(proxy_op); cl_shim_proxy_op(op, p, flags); return 1;
  case CLABI_EV_PROXY_STEP: *et = CL_EV_PROXY_STEP; *size = CL_PSIZE(proxy_step); p->proxy_step.step = step; return 1;
  case CLABI_EV_PROXY_CTRL: *et = CL_EV_PROXY_CTRL; *size = 0; return 1;
  default: return 0;
  }
}

/* v2/v3 collective and p2p members have the same names; a macro serves both layouts. */
#define CL_OLD_STRING_COLL(DT, d, p, refs, nrefs)                                              \
  do {                                                                                         \
    (p).coll = (cl_coll){.seq = (d)->coll.seqNumber, .func = (d)->coll.func,                  \
                         .datatype = (d)->coll.datatype, .algo = (d)->coll.algo,              \
                         .proto = (d)->coll.proto, .count = (d)->coll.count,                  \
                         .comm_hash = (d)->coll.commHash, .root = (d)->coll.root,             \
                         .nchannels = (d)->coll.nMaxChannels, .nwarps = (d)->coll.nWarps};    \
    refs[nrefs++] = (cl_ref){offsetof(DT, coll.func), (d)->coll.func, cl_str_len((d)->coll.func)};            \
    refs[nrefs++] = (cl_ref){offsetof(DT, coll.datatype), (d)->coll.datatype, cl_str_len((d)->coll.datatype)}; \
    refs[nrefs++] = (cl_ref){offsetof(DT, coll.algo), (d)->coll.algo, cl_str_len((d)->coll.algo)};            \
    refs[nrefs++] = (cl_ref){offsetof(DT, coll.proto), (d)->coll.proto, cl_str_len((d)->coll.proto)};         \
  } while (0)
#define CL_OLD_STRING_P2P(DT, d, p, refs, nrefs)                                               \
  do {                                                                                         \
    (p).p2p = (cl_p2p){.func = (d)->p2p.func, .datatype = (d)->p2p.datatype,                  \
                       .count = (d)->p2p.count, .comm_hash = (d)->p2p.commHash,               \
                       .peer = (d)->p2p.peer};                                                \
    refs[nrefs++] = (cl_ref){offsetof(DT, p2p.func), (d)->p2p.func, cl_str_len((d)->p2p.func)};              \
    refs[nrefs++] = (cl_ref){offsetof(DT, p2p.datatype), (d)->p2p.datatype, cl_str_len((d)->p2p.datatype)};  \
  } while (0)
#endif
