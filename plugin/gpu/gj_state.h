/* gj_state.h: the GPU join's own state (gpu_join.h), shared by the files it is cut into:
 * gj_join.c (the joins by stream order and by correlation id, NVTX steps, the exposure engine's
 * feed), gj_cover.c (when CUPTI recorded), gj_graph.c (the pool of kernels with no launch to
 * join: CUDA-graph replays), gj_copy.c (copy-engine collectives' copies) and gj_parts.c (per
 * participant). Nobody else includes it: to the rest of the plugin cl_gj is opaque. */
#ifndef COMMLENS_GJ_STATE_H
#define COMMLENS_GJ_STATE_H
#include "plugin/gpu/gpu_join.h"
#include <stdint.h>

/* The tables' sizes: each bounds memory, and what falls out is counted, never waited for. */
#define NWIN 65536                     /* KernelLaunch windows remembered (0.5 s at 100k launches/s) */
#define NCORR (1u << 16)               /* correlation ids classified (direct-mapped) */
#define NSPAN 65536                    /* launch groups with a known kernel span (read within seconds) ... */
#define SPAN_WAYS 8                    /* ... in sets of this many slots; the oldest goes first */
#define NHOLD 65536                    /* kernel records waiting for their launch record */
#define NMARK 1024                     /* open NVTX ranges (direct-mapped by id) */
#define NGK 8192                       /* replayed NCCL kernels waiting for a collective */
#define NCOVER 32                      /* CUPTI coverage intervals kept (full: the oldest two merge) */
#define NSQ 64                         /* streams whose NCCL kernels are joined by launch order */
#define LAUNCH_KEEP_NS 5000000000ull   /* KernelLaunch windows kept this long */
#define SID_ANY UINT32_MAX             /* a launch whose stream id is unknown (stream_q.sid) */
#define DEV_ANY UINT32_MAX             /* a stream whose device no kernel said yet (stream_q.dev) */

/* A KernelLaunch event; `matched` once its kernel (or launch record) was found; `joined` once
 * the join by stream order gave it a kernel, `passed` when it gave up on it. */
typedef struct { int tid; uint64_t start, stop, group; uint32_t comm; int dev; uint32_t sid;
                 uint8_t matched, captured, joined, passed; } kl_win;
/* An NCCL kernel waiting in its stream's queue; `known`: its launch group is already known by
 * correlation id (COMMLENS_CUPTI=full), and the queue only checks the join by stream order. */
typedef struct { uint64_t s, e, group; const char *name; uint32_t dev, comm, corr; uint8_t known; } pend_k;
/* A join made: the launch's group and communicator, and the kernel given to it. */
typedef struct { uint64_t group; uint32_t comm; pend_k k; } join_ent;
/* One stream's join by launch order: its NCCL kernels, in launch order (their correlation ids:
 * CUPTI numbers API calls process-wide in call order), where in the window ring its oldest
 * waiting launch may be, and its last joins. CUPTI fills a buffer per launching thread and hands
 * a buffer over only once every record in it is complete, so a stream whose kernels come from
 * two threads (PyTorch: the main thread and autograd's) gets its records out of order, at times
 * later than SETTLE_NS: such a record redoes the joins after it (repair()). */
#define NHIST 64                       /* a stream's last joins, redone when a record comes late */
typedef struct {
  uint32_t dev, sid;                   /* sid: CUPTI stream id + 1 (SID_ANY: launches whose stream
                                          id is unknown); dev DEV_ANY until a kernel says it */
  uint64_t *w;                         /* its launches (window numbers), in start order */
  size_t wh, wn, wcap;                 /* waiting: w[wh..wn) */
  pend_k *k;
  size_t head, n, cap;                 /* waiting: k[head..n) */
  join_ent hist[NHIST];
  uint64_t nhist;
} stream_q;
typedef struct { uint32_t corr; uint8_t cls; uint64_t group; uint32_t comm; } corr_ent; /* cls: 1 nccl 2 other */
typedef struct { uint64_t group; uint32_t comm, dev; uint64_t s, e, seq; } span_ent;
typedef struct { uint64_t s, e; const char *name; uint32_t dev; uint8_t claimed; } gk_ent;
/* A memcpy record, kept for the copy-engine collective that enqueued it (cl_gj_ce_span), and a
 * copy-engine collective waiting for its copies. */
typedef struct { uint64_t s, e; uint32_t dev, stream; uint8_t claimed; } cp_ent;
typedef struct { uint64_t id, after, s, e; uint32_t dev, stream, got; uint8_t done; } ce_req;
typedef struct { uint32_t dev, stream, per; } ce_learn;   /* copies a collective makes on a stream */
#define NCELEARN 64                    /* streams whose copies per collective are learned */
#define NCOPY 4096                     /* recent memcpy records (a CE collective has a few per peer) */

/* What the join keeps per participant (one GPU's trace): its exposure totals, windows and
 * steps, and its kernel counts. */
typedef struct {
  cl_gj *g;
  cl_part *p;                            /* NULL until first used */
  cl_expo_agg *agg;
  uint64_t nccl_kernels, compute_kernels, by_name, by_stream, no_launch, graph_kernels, graph_claimed;
  uint64_t steps, step_exposed_sum, step_comm_sum, worst_step_id, worst_step_exposed;
} gj_part;

#define NSTEPKEEP 256                  /* recent NVTX steps, for participants that come late */
typedef struct { uint64_t s, e, id; } kept_step;

/* An interval CUPTI recorded kernels for us: [s, e) (e 0: still open); gap: it ended at a sampling
 * window's end (COMMLENS_CUPTI=sampled), not because another tool took CUPTI. */
typedef struct { uint64_t s, e; int gap; } cover_t;

struct cl_gj {
  cl_parts *parts;
  cl_gj_exposed_fn fn;
  void *arg;
  int by_stream;                         /* no launch records: join NCCL kernels by stream order */
  int draw_compute;                      /* a slice per compute kernel (cl_gj_draw_compute) */
  kl_win win[NWIN];                      /* KernelLaunch windows, a ring (cl_gj_kernel_launch) */
  uint64_t nwin_total;
  stream_q *sq;                          /* NSQ of them (with launch records: a check only) */
  uint64_t last_kernel_end;              /* the latest end of any kernel record */
  uint64_t check_agree, check_differ;    /* launch records on: stream order vs correlation id */
  uint64_t repaired;                     /* joins redone for a late record */
  corr_ent corr[NCORR];                  /* launch records by correlation id, direct-mapped */
  span_ent span[NSPAN];                  /* launch groups' kernel spans, in sets of SPAN_WAYS */
  uint64_t nspan;                        /* spans set, numbering them */
  cl_gpu_activity *hold;
  uint32_t nhold;
  uint64_t hold_since[NHOLD];
  cl_expo *expo;
  gj_part part[CL_MAX_PARTS];
  uint64_t launches_matched, launches_other;
  gk_ent gk[NGK];                        /* replayed NCCL kernels, in arrival order */
  uint64_t ngk, gk_next;                 /* added; the oldest not yet released */
  uint64_t gk_max_e;                     /* the latest end of any added: none ends after it */
  uint64_t graph_devs;                   /* devices with replayed NCCL kernels (bit per device) */
  uint64_t graph_kernels;
  struct { uint32_t id; uint64_t s; const char *name; } marks[NMARK];   /* open NVTX ranges */
  kept_step stepkeep[NSTEPKEEP];
  uint64_t nsteps_seen;
  uint64_t next_step_id;
  cover_t cover[NCOVER];                 /* CUPTI's coverage, oldest first */
  uint32_t ncover;
  cp_ent copy[NCOPY];                    /* recent memcpy records, a ring */
  uint64_t ncopy;
  ce_req *ce;                            /* recent copy-engine collectives, a ring of NCEREQ */
  uint64_t nce, ce_head;                 /* added; the oldest that may still take copies */
  ce_learn learn[NCELEARN];
  uint64_t now;                          /* the host time of the last cl_gj_advance */
};

/* ---- when CUPTI recorded (gj_cover.c) ---- */
/* The coverage holding t, or NULL. */
const cover_t *cl_gj_cover_of(const cl_gj *g, uint64_t t);

/* ---- per participant (gj_parts.c) ---- */
/* A participant's state made on its first use: its aggregator, fed the NVTX steps it missed
 * (NULL when out of memory: that participant then reports no exposure). */
gj_part *cl_gj_part_new(cl_gj *g, cl_part *p);
/* The join's state of the participant of device `dev` (cl_parts_of_dev), NULL when none or out
 * of memory. Every kernel record asks: the made case is the inline test. */
static inline gj_part *cl_gj_dev_state(cl_gj *g, int dev) {
  cl_part *p = cl_parts_of_dev(g->parts, dev);
  if (!p) return NULL;
  gj_part *q = &g->part[p->index];
  return q->agg ? q : cl_gj_part_new(g, p);
}

/* ---- the pool of NCCL kernels with no launch (gj_graph.c) ---- */
/* Pools an NCCL kernel with no launch to join it by: a graph replay, or one whose launch is
 * unknown (lost, or before CUPTI started). */
void cl_gj_pool_kernel(cl_gj *g, const cl_gpu_activity *k, int replay);
/* Replayed kernels no collective claimed in time (GRAPH_HOLD_NS; all when final) count as
 * communication on their own. */
void cl_gj_pool_release(cl_gj *g, uint64_t now, int final);

/* ---- copy-engine collectives (gj_copy.c) ---- */
/* A memcpy record, kept for the copy-engine collective that made it. */
void cl_gj_copy_record(cl_gj *g, const cl_gpu_activity *a);
#endif
