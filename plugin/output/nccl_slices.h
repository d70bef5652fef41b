/* nccl_slices.h: how each kind of NCCL event is drawn (docs/trace-format.md): its track, name,
 * category and args, and a collective's GPU span with its flow from the enqueue. The assembler
 * (plugin/pipeline/asm_feed.c, asm_finish.c) decides lifetimes, spans and totals and hands each finished event
 * here as const data; drawing changes nothing but the trace body. */
#ifndef COMMLENS_NCCL_SLICES_H
#define COMMLENS_NCCL_SLICES_H
#include "commlens/event.h"
#include "exporters/chrome_trace.h"
#include <stdint.h>

typedef struct { uint8_t st; uint64_t ts, arg; } cl_nccl_ev_state;

/* An NCCL event as the assembler completed it: what drawing reads (the assembler's bookkeeping
 * while the event is open is its own: plugin/pipeline/asm_state.h). */
typedef struct cl_nccl_ev {
  uint64_t id, parent, start, stop;
  uint32_t comm, thread;              /* communicator serial (0: none), thread serial */
  uint8_t etype, flags, stopped, nst;
  uint64_t bytes;                     /* ProxyOp: bytes its steps moved */
  int tail_ch;                        /* Coll/P2p: the channel that finished last, -1 unknown */
  uint64_t ph_s[3], ph_t[3];          /* KernelCh (v7): its phases' GPU start and stop timers,
                                         by phase id (0 initial_sync, 1 compute, 2 final_sync);
                                         0: not seen */
  uint64_t ph_ns[3];                  /* Coll/P2p: per phase, the longest any channel spent */
  uint32_t ph_n;                      /* Coll/P2p: channels that reported phases */
  uint64_t user_tag;                  /* Coll/P2p: the application's tag (v7; 0 untagged) */
  uint32_t enq_tid;                   /* Coll/P2p: its enqueue slice's track, for the GPU span's flow */
  uint64_t enq_ts;
  /* last, so that a new event clears what precedes them (plugin/pipeline/asm_feed.c feed_start):
   * the payload is copied in, the states are counted by nst */
  cl_payload p;
  cl_nccl_ev_state st[8];             /* states in arrival order */
} cl_nccl_ev;

/* What drawing shows of a communicator. */
typedef struct { char label[80]; uint64_t hash; char name[64]; int rank, nranks; } cl_comm_facts;

/* Where and with what drawing works: the trace body, and read-only lookups. */
typedef struct {
  cl_ct *ct;
  const cl_comm_facts *(*comm)(void *arg, uint32_t serial);   /* NULL: unknown */
  int (*os_tid)(void *arg, uint32_t thread_serial);           /* 0: unknown */
  void *arg;
} cl_draw;

/* The collective or p2p function name of a Coll/P2p event, NULL for others. */
const char *cl_nccl_ev_func(const cl_nccl_ev *c);
/* API calls (GroupApi, CollApi, P2pApi, KernelLaunch) on their thread's track. */
void cl_draw_api(const cl_draw *d, const cl_nccl_ev *e);
/* Group (async, 0 returned), Coll and P2p on their communicator's tracks; returns the enqueue
 * track (for the flow). */
uint32_t cl_draw_enqueue(const cl_draw *d, const cl_nccl_ev *e);
/* A collective's GPU span [s, e] timed by `src`, with `bytes` (nccl-tests' size); exposed_ns < 0
 * when exposure is not known, expo_est when it is estimated (args.exposure "estimated");
 * `gpu_timing` (NULL: none) says why CUPTI did not time it. */
void cl_draw_coll_gpu(const cl_draw *d, const cl_nccl_ev *c, uint64_t s, uint64_t e, const char *src,
                      int64_t exposed_ns, int expo_est, uint64_t bytes, const char *gpu_timing);
/* A collective without CUPTI's timing (`why`: another tool took CUPTI): the counter track
 * "GPU timing <why>" steps to `nlost` (the participant's count so far) at its stop. */
void cl_draw_gpu_lost(const cl_draw *d, const cl_nccl_ev *c, const char *why, uint64_t nlost);
/* A KernelCh on the host clock [s, t] (`implausible`: its GPU timers were not usable and the
 * host's observation times are drawn), with its parent collective if known; its v7 kernel
 * phases (e->ph_s/ph_t) nested inside it, placed by their GPU timers relative to its start. */
void cl_draw_kernel_ch(const cl_draw *d, const cl_nccl_ev *e, const cl_nccl_ev *parent, uint64_t s, uint64_t t,
                       uint64_t stop_ptimer, int implausible);
void cl_draw_proxy_op(const cl_draw *d, const cl_nccl_ev *e, const cl_nccl_ev *parent);
/* A proxy step with its phases nested inside; `bytes` as the assembler counted them. */
void cl_draw_proxy_step(const cl_draw *d, const cl_nccl_ev *e, const cl_nccl_ev *op, uint64_t bytes);
/* A proxy step's time in each wait phase (the trace's *_wait_ns args, the digest's channel
 * aggregates): indexed by CL_STEP_W_*. */
enum { CL_STEP_W_GPU, CL_STEP_W_PEER, CL_STEP_W_SEND, CL_STEP_W_RECV, CL_STEP_W_FLUSH, CL_STEP_W_RECV_GPU, CL_STEP_NWAITS };
void cl_step_waits(const cl_nccl_ev *e, uint64_t w[CL_STEP_NWAITS]);
/* ProxyCtrl, NetPlugin and copy-engine events. */
void cl_draw_other(const cl_draw *d, const cl_nccl_ev *e);
#endif
