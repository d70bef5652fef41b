/* assemble_impl.h: what assemble.c (event lifetimes) and slices.c (formatting each event
 * type as trace slices) share: the open-event record, the communicator cache and the
 * assembler's state. Private to those two files. */
#ifndef COMMLENS_ASSEMBLE_IMPL_H
#define COMMLENS_ASSEMBLE_IMPL_H
#include "plugin/pipeline/assemble.h"
#include "plugin/capture/contexts.h"
#include "plugin/gpu/gpu_clock.h"
#include "plugin/gpu/gpu_join.h"
#include <stdint.h>

#define GRACE_NS 200000000ull        /* a collective with no KernelCh count waits this long */
#define MAX_OPEN (1u << 22)          /* open events kept at most (memory bound) */
#define MAX_DEV 65
#define CUPTI_WAIT_NS 2500000000ull /* a collective waits this long for its kernel's CUPTI record */
#define NAPI 65536                   /* CollApi/P2pApi -> GroupApi links remembered */
#define NTOP 10
#define CHILD_WAIT_NS 10000000000ull   /* a collective waits this long for open children */

typedef struct { uint8_t st; uint64_t ts, arg; } ev_state;

typedef struct ev {
  uint64_t id, parent, start, stop;
  uint32_t comm, thread;
  uint8_t etype, flags, stopped, nst;
  cl_payload p;
  ev_state st[8];
  uint32_t open_children, kch_done, nchild;
  uint64_t gmin, gmax, pmin, pmax, last_child, bytes;
  int tail_ch, implausible, registered;
  uint32_t enq_tid;
  uint64_t enq_ts;
  uint64_t api_group;       /* Coll/P2p (v5+): the GroupApi its launch belongs to */
  uint64_t gs, ge;          /* chosen GPU span while waiting for its exposure */
  const char *src;
  int awaiting;
  struct ev *next_free;
} ev;

typedef struct { uint64_t api, group; } api_link;
typedef struct { const char *func; uint64_t seq, comm, exposed, dur; } top_ent;

typedef struct { int loaded; cl_comm_info info; char label[80]; } comm_cache;
struct cl_asm {
  cl_ct *ct;
  cl_summary *sum;
  ev **tab;                 /* open addressing by id */
  uint32_t cap, n;
  ev *free_list;
  comm_cache *comms;
  uint32_t ncomms;
  cl_gpu_clock off[MAX_DEV];
  uint64_t *pend;           /* retained collectives awaiting completion (ids, FIFO) */
  ev **held;                /* stopped KernelCh events waiting for their device's calibration */
  ev **orph;                /* stopped children whose parent's start has not been seen yet */
  uint32_t norph, cap_orph;
  cl_gj *gj;                /* CUPTI join, NULL without CUPTI */
  api_link links[NAPI];     /* direct-mapped by API event id */
  int *tids;                /* OS thread id by thread serial (0 = not looked up) */
  uint32_t ntids;
  top_ent top[NTOP];
  uint32_t nheld, cap_held;
  uint32_t pend_head, pend_tail, pend_cap;
  cl_asm_stats stats;
};

/* The communicator with serial `serial` (cached copy of what comm.c registered), or NULL. */
comm_cache *cl_asm_comm(cl_asm *a, uint32_t serial);
/* The GPU clock of the device a communicator runs on. */
cl_gpu_clock *cl_asm_clock(cl_asm *a, uint32_t comm);
/* OS thread id of a thread serial (matches CUPTI's launch records). */
int cl_asm_os_tid(cl_asm *a, uint32_t serial);

/* slices.c: one function per event type, called when the event is complete. */
const char *cl_slice_coll_func(const ev *c);
void cl_slice_kch_stop_timer(const ev *e, uint64_t *pt, uint64_t *obs);
void cl_slice_api(cl_asm *a, ev *e);
void cl_slice_enqueue(cl_asm *a, ev *e);
/* exposed_ns < 0: exposure unknown (no CUPTI). Also feeds the summary. */
void cl_slice_coll_gpu(cl_asm *a, ev *c, uint64_t s, uint64_t e, const char *src, int64_t exposed_ns);
/* Keeps the NTOP most exposed collectives (func is static or interned). */
void cl_asm_top_add(cl_asm *a, const char *func, uint64_t seq, uint64_t comm, uint64_t exposed, uint64_t dur);
void cl_slice_kernel_ch(cl_asm *a, ev *e, ev *parent);
void cl_slice_proxy_op(cl_asm *a, ev *e, ev *parent);
void cl_slice_proxy_step(cl_asm *a, ev *e, ev *op);
void cl_slice_other(cl_asm *a, ev *e);
#endif
