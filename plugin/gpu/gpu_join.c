/* gpu_join.c: see gpu_join.h. Tables are small open-addressed maps and FIFO windows, bounded
 * by count; what falls out of them is counted, never waited for. Writer thread only. */
#include "plugin/gpu/gpu_join.h"
#include "plugin/gpu/gpu_slices.h"
#include "common/grow.h"
#include "common/config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LAUNCH_KEEP_NS 5000000000ull   /* KernelLaunch windows kept this long */
#define HOLD_NS 300000000ull           /* a kernel whose launch record is missing waits this long */
#define EXPO_LAG_NS 1000000000ull      /* compute records can arrive this late (CUPTI buffers) */
#define NWIN 65536                     /* KernelLaunch windows remembered (0.5 s at 100k launches/s) */
#define NCORR (1u << 16)               /* correlation ids classified (direct-mapped) */
#define NSPAN 65536                    /* launch groups with a known kernel span */
#define SPAN_WAYS 8                    /* ... in sets of this many slots; the oldest goes first */
#define NHOLD 65536                    /* kernel records waiting for their launch record */
#define NMARK 1024                     /* open NVTX ranges (direct-mapped by id) */
#define NGK 8192                       /* replayed NCCL kernels waiting for a collective */
#define GRAPH_HOLD_NS 1500000000ull    /* ... this long after their end, then count on their own */
#define GRAPH_TOL_NS 50000ull          /* GPU-timer spans mapped to the host clock are this close */
#define LOST_AFTER_NS 2000000000ull    /* a KernelLaunch with no launch record this old is missed */
#define LOST_STREAK 8                  /* ... this many in a row: CUPTI's records go elsewhere */
#define NCOVER 32                      /* CUPTI coverage intervals kept */
#define NSQ 64                         /* streams whose NCCL kernels are joined by launch order */
#define SQ_MAX 65536                   /* NCCL kernels of one stream waiting to be joined */
#define SETTLE_NS 500000000ull         /* a stream's kernel records are joined this long after its end */
#define WIN_LAG_NS 300000000ull        /* KernelLaunch events reach the join within this */
#define NHIST 64                       /* a stream's last joins, redone when a record comes late */

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
#define SID_ANY UINT32_MAX
#define DEV_ANY UINT32_MAX
typedef struct { uint32_t corr; uint8_t cls; uint64_t group; uint32_t comm; } corr_ent; /* cls: 1 nccl 2 other */
typedef struct { uint64_t group; uint32_t comm, dev; uint64_t s, e, seq; } span_ent;
typedef struct { uint64_t s, e; const char *name; uint32_t dev; uint8_t claimed; } gk_ent;
/* A memcpy record, kept for the copy-engine collective that enqueued it (cl_gj_ce_span), and a
 * copy-engine collective waiting for its copies. */
typedef struct { uint64_t s, e; uint32_t dev, stream; uint8_t claimed; } cp_ent;
typedef struct { uint64_t id, after, s, e; uint32_t dev, stream, got; uint8_t done; } ce_req;
typedef struct { uint32_t dev, stream, per; } ce_learn;   /* copies a collective makes on a stream */
#define NCELEARN 64
#define NCOPY 4096                     /* recent memcpy records (a CE collective has a few per peer) */
#define NCEREQ 8192                    /* recent copy-engine collectives: ~40,000 a second at
                                          CUPTI's 100 ms flushes (seen: 19,000 a second, 1 MiB
                                          AllGathers on 2 H200s) */
#define CE_SCAN 512                    /* recent copies a newly read collective looks through */
#define CE_STALE_NS 2000000000ull     /* a collective enqueued this long before a copy began has all
                                          its copies, or they went unrecorded (CUPTI was off) */
#define CE_QUIET_NS 300000000ull      /* no copy of a collective comes this long after its last one */
#define CE_SLACK_NS 2000               /* a copy may read as starting this much before its enqueue
                                          (the GPU's timestamps mapped to the host clock) */

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
  kl_win win[NWIN];
  uint64_t nwin_total;
  stream_q *sq;                          /* NSQ of them (with launch records: a check only) */
  uint64_t last_kernel_end;              /* the latest end of any kernel record */
  uint64_t check_agree, check_differ;    /* launch records on: stream order vs correlation id */
  uint64_t repaired;                     /* joins redone for a late record */
  corr_ent corr[NCORR];
  span_ent span[NSPAN];
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

void cl_gj_start(cl_gj *g, uint64_t now) {
  if (g->ncover && !g->cover[g->ncover - 1].e) return;      /* already open */
  if (g->ncover == NCOVER) {                                 /* full: merge the two oldest */
    g->cover[0].e = g->cover[1].e;
    memmove(&g->cover[1], &g->cover[2], (NCOVER - 2) * sizeof g->cover[0]);
    g->ncover--;
  }
  g->cover[g->ncover].s = now;
  g->cover[g->ncover].gap = 0;
  g->cover[g->ncover++].e = 0;
}

void cl_gj_stop_window(cl_gj *g, uint64_t t) {
  if (!g->ncover || g->cover[g->ncover - 1].e) return;
  cl_gj_stop(g, t);
  g->cover[g->ncover - 1].gap = 1;
}

/* Whether t is past every coverage: none yet, or t at or after the end of the last (they are in
 * time order and apart, so no earlier one holds it). Between sampled windows every collective
 * asks a few times: answered without walking the NCOVER kept. */
static int past_all(const cl_gj *g, uint64_t t) {
  return !g->ncover || (g->cover[g->ncover - 1].e && t >= g->cover[g->ncover - 1].e);
}

int cl_gj_covered_for(const cl_gj *g, uint64_t s, uint64_t e, uint64_t guard) {
  if (past_all(g, s)) return 0;
  for (uint32_t i = g->ncover; i-- > 0;)
    if (s >= g->cover[i].s && (!g->cover[i].e || e < g->cover[i].e)) return s - g->cover[i].s >= guard;
  return 0;
}

void cl_gj_stop(cl_gj *g, uint64_t t) {
  if (!g->ncover || g->cover[g->ncover - 1].e) return;
  if (t <= g->cover[g->ncover - 1].s) t = g->cover[g->ncover - 1].s + 1;
  g->cover[g->ncover - 1].e = t;
  g->cover[g->ncover - 1].gap = 0;
  /* launches from t on get no kernel record: waiting, they would take the first kernels
   * recorded after CUPTI comes back (the join by stream order goes first with first) */
  uint32_t n = g->nwin_total < NWIN ? (uint32_t)g->nwin_total : NWIN;
  for (uint32_t k = 0; k < n; k++) {
    kl_win *w = &g->win[(g->nwin_total - 1 - k) % NWIN];
    if (w->start < t) break;
    w->passed = 1;
  }
}

/* The coverage holding t, or NULL. */
static const cover_t *cover_of(const cl_gj *g, uint64_t t) {
  if (past_all(g, t)) return NULL;
  for (uint32_t i = g->ncover; i-- > 0;)
    if (t >= g->cover[i].s && (!g->cover[i].e || t < g->cover[i].e)) return &g->cover[i];
  return NULL;
}

int cl_gj_covered(const cl_gj *g, uint64_t t) { return cover_of(g, t) != NULL; }

int cl_gj_lost(const cl_gj *g, uint64_t t) {
  if (!g->ncover || t < g->cover[0].s || cl_gj_covered(g, t)) return 0;
  for (uint32_t i = g->ncover; i-- > 0;)   /* the coverage before t: ended by a window, not taken */
    if (g->cover[i].s <= t) return !g->cover[i].gap;
  return 0;
}

uint64_t cl_gj_covered_ns(const cl_gj *g, uint64_t now) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < g->ncover; i++) {
    uint64_t e = g->cover[i].e ? g->cover[i].e : now;
    if (e > g->cover[i].s) sum += e - g->cover[i].s;
  }
  return sum;
}

int cl_gj_launches_lost(cl_gj *g, uint64_t now, uint64_t *last_ok) {
  if (!g->ncover || g->cover[g->ncover - 1].e) return 0;
  uint64_t since = g->cover[g->ncover - 1].s, oldest_miss = 0;
  uint32_t n = g->nwin_total < NWIN ? (uint32_t)g->nwin_total : NWIN, misses = 0;
  for (uint32_t k = 0; k < n; k++) {            /* newest first, back to the last matched one */
    const kl_win *w = &g->win[(g->nwin_total - 1 - k) % NWIN];
    if (w->start < since) break;
    if (w->captured) continue;                  /* its kernel runs at replays */
    if (w->stop + LOST_AFTER_NS > now) continue;  /* its record may still be on its way */
    if (w->matched) {
      if (misses < LOST_STREAK) return 0;
      /* joined by stream: kernel records that still come mean the launches went unjoined for
       * another reason (a kernel name we do not know), not that CUPTI's records go elsewhere */
      if (g->by_stream && g->last_kernel_end >= oldest_miss) return 0;
      *last_ok = w->stop;
      return 1;
    }
    misses++;
    oldest_miss = w->start;
  }
  /* no launch record at all in this coverage (the driver API kind refused): launches say
   * nothing about where records go */
  return 0;
}

static void on_window(void *arg, const cl_expo_window *w);

/* The join's state of a participant; its aggregator is made on first use (NULL when out of
 * memory: that participant then reports no exposure). */
static gj_part *part_state(cl_gj *g, cl_part *p) {
  gj_part *q = &g->part[p->index];
  if (q->agg) return q;
  q->g = g;
  q->p = p;
  q->agg = cl_expo_agg_new(100000000ull, 2000000000ull, on_window, q);
  if (!q->agg) return NULL;
  uint64_t first = g->nsteps_seen > NSTEPKEEP ? g->nsteps_seen - NSTEPKEEP : 0;
  for (uint64_t i = first; i < g->nsteps_seen; i++) {     /* the steps it missed */
    const kept_step *k = &g->stepkeep[i % NSTEPKEEP];
    cl_expo_add_step(q->agg, k->s, k->e, k->id);
  }
  return q;
}
static gj_part *dev_state(cl_gj *g, int dev) {
  cl_part *p = cl_parts_of_dev(g->parts, dev);
  return p ? part_state(g, p) : NULL;
}

static void on_result(void *arg, const cl_expo_result *r) {
  cl_gj *g = arg;
  gj_part *q = r->span.tag & CL_GJ_TAG_ORDER_ONLY ? NULL : dev_state(g, (int)r->span.device);
  if (q) {
    cl_expo_agg_add(q->agg, r);
    if (q->p->trace) cl_draw_exposed(q->p->ct, r);
  }
  if (g->fn) g->fn(g->arg, r);
}

static void on_window(void *arg, const cl_expo_window *w) {
  gj_part *q = arg;
  if (w->kind == CL_EXPO_WIN_STEP) {       /* one slice per NVTX step with its exposure */
    if (q->p->trace) cl_draw_step(q->p->ct, w);
    cl_digest_step(q->p->dg, w->id, w->start_ns, w->end_ns);
    q->steps++;
    q->step_exposed_sum += w->exposed_ns;
    q->step_comm_sum += w->comm_ns;
    if (w->exposed_ns >= q->worst_step_exposed) { q->worst_step_exposed = w->exposed_ns; q->worst_step_id = w->id; }
    return;
  }
  if (w->kind != CL_EXPO_WIN_BUCKET) return;
  if (q->p->trace) cl_draw_window_counters(q->p->ct, w);   /* exposed communication per 100 ms bucket */
}

void cl_gj_on_exposed(cl_gj *g, cl_gj_exposed_fn fn, void *arg) {
  g->fn = fn;
  g->arg = arg;
}

cl_gj *cl_gj_new(cl_parts *parts, int by_stream) {
  cl_gj *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->parts = parts;
  g->by_stream = by_stream;
  if (!by_stream) g->hold = malloc(NHOLD * sizeof *g->hold);   /* kernels wait for launch records */
  g->expo = cl_expo_new(NULL, on_result, g);
  g->sq = calloc(NSQ, sizeof *g->sq);
  if ((!by_stream && !g->hold) || !g->expo || !g->sq) { cl_gj_free(g); return NULL; }
  return g;
}

int cl_gj_by_stream(const cl_gj *g) { return g->by_stream; }
void cl_gj_draw_compute(cl_gj *g, int on) { g->draw_compute = on != 0; }

void cl_gj_free(cl_gj *g) {
  if (!g) return;
  cl_expo_free(g->expo);
  for (int i = 0; i < CL_MAX_PARTS; i++) cl_expo_agg_free(g->part[i].agg);
  free(g->hold);
  free(g->ce);
  for (int i = 0; g->sq && i < NSQ; i++) { free(g->sq[i].k); free(g->sq[i].w); }
  free(g->sq);
  free(g);
}

static void queue_window(cl_gj *g, uint64_t seq);

void cl_gj_kernel_launch(cl_gj *g, const cl_gj_launch *l) {
  uint64_t seq = g->nwin_total++;
  int lost = cl_gj_lost(g, l->start);   /* no kernel record will come for it */
  g->win[seq % NWIN] = (kl_win){l->tid, l->start, l->stop, l->group, l->comm, l->dev,
                                l->stream_id, 0, l->captured != 0, 0, (uint8_t)lost};
  /* it waits for a kernel only if CUPTI recorded kernels when it started: one between two
   * sampling windows (or in the lead before one) never gets a record, and waiting, it would
   * take the first kernels recorded after it (a launch without a stream id waits for any of its
   * device's), every later launch then one kernel behind */
  if (!l->captured && cl_gj_covered(g, l->start)) queue_window(g, seq);   /* covered: never lost */
}

void cl_gj_join_check(const cl_gj *g, uint64_t *agree, uint64_t *differ, uint64_t *repaired) {
  *agree = g->check_agree;
  *differ = g->check_differ;
  *repaired = g->repaired;
}

/* The KernelLaunch window holding this launch API record, if any. */
static kl_win *find_window(cl_gj *g, const cl_gpu_activity *l) {
  uint32_t n = g->nwin_total < NWIN ? (uint32_t)g->nwin_total : NWIN;
  for (uint32_t k = 0; k < n; k++) {          /* newest first: launches are recent */
    kl_win *w = &g->win[(g->nwin_total - 1 - k) % NWIN];
    if (l->start_ns > w->stop + LAUNCH_KEEP_NS) break;
    if ((int)l->thread == w->tid && l->start_ns >= w->start && l->end_ns <= w->stop) return w;
  }
  return NULL;
}

/* The slot of (group, comm): its own, or with `make` an empty one or the oldest of its set
 * (spans are read within seconds; at 100k launches a second a set of 8 holds them). NULL: none. */
static span_ent *span_slot(cl_gj *g, uint64_t group, uint32_t comm, int make) {
  uint32_t h = (uint32_t)((group * 0x9E3779B97F4A7C15ull + comm) >> 40) % NSPAN & ~(uint32_t)(SPAN_WAYS - 1);
  span_ent *set = &g->span[h], *old = set;
  for (int i = 0; i < SPAN_WAYS; i++) {
    if (set[i].group == group && set[i].comm == comm && group) return &set[i];
    if (set[i].seq < old->seq) old = &set[i];
  }
  if (!make) return NULL;
  for (int i = 0; i < SPAN_WAYS; i++) if (!set[i].group) return &set[i];
  return old;
}

/* Fallback only (CUDA-graph replays, ABI < v5, the join by stream order): NCCL's kernel names
 * (cupti.h), told once per distinct name by the bridge when it can. */
static int is_nccl_name(const cl_gpu_activity *k) {
  return k->name_class ? k->name_class == CL_GPU_NAME_NCCL : cl_gpu_is_nccl_name(k->name);
}

/* Counts a replayed kernel no collective claimed as communication on its own. Its tag carries
 * the interned name (names live until exit), so the report can name the collective. */
static void release_graph(cl_gj *g, gk_ent *k) {
  if (k->claimed) return;
  cl_expo_span sp = {.start_ns = k->s, .end_ns = k->e, .tag = CL_GJ_TAG_GRAPH | (uint64_t)(uintptr_t)k->name,
                     .comm = 0, .device = k->dev};
  cl_expo_add_span(g->expo, &sp);
}

/* Pools an NCCL kernel with no launch to join it by: a graph replay, or one whose launch is
 * unknown (lost, or before CUPTI started). */
static void add_graph_kernel(cl_gj *g, const cl_gpu_activity *k, int replay) {
  if (g->ngk - g->gk_next == NGK) release_graph(g, &g->gk[g->gk_next++ % NGK]);   /* pool full */
  g->gk[g->ngk++ % NGK] = (gk_ent){k->start_ns, k->end_ns, k->name, k->device, 0};
  if (k->end_ns > g->gk_max_e) g->gk_max_e = k->end_ns;
  if (replay) g->graph_kernels++;
  gj_part *q = dev_state(g, (int)k->device);
  if (q) { if (replay) q->graph_kernels++; else q->no_launch++; }
  if (k->device < 64) g->graph_devs |= 1ull << k->device;
}

/* A launch group's kernel span: the union of its kernels'. */
static void set_span(cl_gj *g, uint64_t group, uint32_t comm, const cl_gpu_activity *k) {
  span_ent *s = span_slot(g, group, comm, 1);
  if (s->group != group || s->comm != comm) *s = (span_ent){group, comm, k->device, k->start_ns, k->end_ns, ++g->nspan};
  else { if (k->start_ns < s->s) s->s = k->start_ns; if (k->end_ns > s->e) s->e = k->end_ns; }
}

int cl_gj_graph_seen(const cl_gj *g, uint32_t device) {
  return device < 64 ? (int)(g->graph_devs >> device & 1) : g->graph_kernels != 0;
}
int cl_gj_graph_any(const cl_gj *g) { return g->graph_devs != 0 || g->graph_kernels != 0; }

int cl_gj_graph_claim(cl_gj *g, uint32_t device, uint64_t s, uint64_t e, uint64_t *ks, uint64_t *ke) {
  gk_ent *best = NULL;
  uint64_t best_ov = 0, best_gap = GRAPH_TOL_NS + 1;   /* most overlap; else the nearest, within TOL */
  /* starts past every pooled kernel's end and tolerance: none overlaps, none is near (the
   * common case between sampling windows, with the window's unjoined kernels still pooled) */
  if (g->gk_max_e <= UINT64_MAX - GRAPH_TOL_NS && s > g->gk_max_e + GRAPH_TOL_NS) return 0;
  for (uint64_t i = g->ngk; i > g->gk_next; i--) {      /* newest first */
    gk_ent *k = &g->gk[(i - 1) % NGK];
    if (k->e + LAUNCH_KEEP_NS < s) break;
    if (k->dev != device) continue;
    uint64_t lo = k->s > s ? k->s : s, hi = k->e < e ? k->e : e;
    if (hi > lo) {
      if (hi - lo > best_ov) { best_ov = hi - lo; best = k; }
    } else if (!best_ov) {
      uint64_t gap = k->e <= s ? s - k->e : k->s - e;
      if (gap < best_gap) { best_gap = gap; best = k; }
    }
  }
  if (!best) return 0;
  if (!best->claimed) {
    best->claimed = 1;
    gj_part *q = dev_state(g, (int)device);
    if (q) q->graph_claimed++;
  }
  *ks = best->s;
  *ke = best->e;
  return 1;
}

const char *cl_gj_graph_name(uint64_t tag) {
  return (tag & CL_GJ_TAG_GRAPH) ? (const char *)(uintptr_t)(tag & ~CL_GJ_TAG_GRAPH) : NULL;
}

/* ---- the join by stream and launch order ---- */
/* The queue of stream `sid` on `dev` (DEV_ANY: whatever device it has; a queue whose device is
 * not known yet takes the first it is asked with), made if `make`; NULL when all NSQ are used. */
static stream_q *stream_of(cl_gj *g, uint32_t dev, uint32_t sid, int make) {
  stream_q *q = g->sq, *e = g->sq + NSQ;
  for (; q < e && q->sid; q++) {
    if (q->sid != sid) continue;
    if (dev == DEV_ANY || q->dev == dev) return q;
    if (q->dev == DEV_ANY) { q->dev = dev; return q; }
  }
  if (q == e || !make) return NULL;
  q->sid = sid;
  q->dev = dev;
  return q;
}

/* Room for one more at the end of the queue arr[*head..*n) (capacity *cap, at most `max`
 * waiting, an array of at most `max_cap`): the consumed front is reused before the array grows.
 * 0, or -1 when full. */
static int queue_room(void *arr, size_t *head, size_t *n, size_t *cap, size_t elem, size_t max, size_t max_cap) {
  char *a = *(char **)arr;
  if (*head && *n == *cap) {
    memmove(a, a + *head * elem, (*n - *head) * elem);
    *n -= *head;
    *head = 0;
  }
  if (*n - *head >= max) return -1;
  return cl_grow(arr, cap, *n + 1, elem, 256, max_cap);
}

/* A launch into its stream's queue, in start order (a stream's launches can come from several
 * threads, so not always in arrival order). Too many waiting: the oldest is given up. */
static void queue_window(cl_gj *g, uint64_t seq) {
  const kl_win *nw = &g->win[seq % NWIN];
  stream_q *q = stream_of(g, nw->dev < 0 ? DEV_ANY : (uint32_t)nw->dev, nw->sid ? nw->sid : SID_ANY, 1);
  if (!q) return;
  if (q->wn - q->wh >= NWIN) q->wh++;
  if (queue_room(&q->w, &q->wh, &q->wn, &q->wcap, sizeof *q->w, NWIN, NWIN + 1) != 0) return;
  size_t j = q->wn++;
  while (j > q->wh && g->win[q->w[j - 1] % NWIN].start > nw->start) { q->w[j] = q->w[j - 1]; j--; }
  q->w[j] = seq;
}

/* The first waiting launch of queue q (dropping what was joined, passed or overwritten), or NULL. */
static kl_win *first_window(cl_gj *g, stream_q *q) {
  uint64_t lo = g->nwin_total > NWIN ? g->nwin_total - NWIN : 0;
  while (q && q->wh < q->wn) {
    uint64_t seq = q->w[q->wh];
    kl_win *w = &g->win[seq % NWIN];
    if (seq >= lo && !w->joined && !w->passed) return w;
    q->wh++;
  }
  if (q && q->wh == q->wn) q->wh = q->wn = 0;
  return NULL;
}

/* q's waiting launch that started first: its own, or one whose stream id is unknown (same or
 * unknown device). */
static kl_win *oldest_window(cl_gj *g, stream_q *q) {
  kl_win *w = first_window(g, q);
  stream_q *any = stream_of(g, q->dev, SID_ANY, 0);
  kl_win *a = any && any != q ? first_window(g, any) : NULL;
  return !w || (a && a->start < w->start) ? a : w;
}

/* An NCCL kernel no launch is known for: pooled like a graph replay (gpu_join.h). */
static void no_launch(cl_gj *g, const pend_k *k) {
  cl_gpu_activity a = {.start_ns = k->s, .end_ns = k->e, .device = k->dev, .name = k->name, .kind = CL_GPU_KERNEL};
  add_graph_kernel(g, &a, 0);
}

/* Correlation ids in call order, across the 2^32 wrap. */
static int corr_before(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }

/* Counts a join against the correlation's (check mode), +1 or -1. */
static void check_join(cl_gj *g, const join_ent *j, int sign) {
  if (!j->k.known) return;
  uint64_t *c = j->k.group == j->group && j->k.comm == j->comm ? &g->check_agree : &g->check_differ;
  *c += (uint64_t)(int64_t)sign;
}

/* A launch group's span from its joins (a group whose work took several launches has several). */
static void respan(cl_gj *g, stream_q *q, uint64_t group, uint32_t comm) {
  span_ent *sp = span_slot(g, group, comm, 0);
  if (sp) sp->group = 0;
  uint64_t lo = q->nhist > NHIST ? q->nhist - NHIST : 0;
  for (uint64_t i = lo; i < q->nhist; i++) {
    const join_ent *j = &q->hist[i % NHIST];
    if (j->group != group || j->comm != comm) continue;
    cl_gpu_activity a = {.start_ns = j->k.s, .end_ns = j->k.e, .device = j->k.dev};
    set_span(g, group, comm, &a);
  }
}

static void join(cl_gj *g, stream_q *q, kl_win *w, const pend_k *k) {
  w->joined = 1;
  if (g->by_stream) w->matched = 1;
  join_ent *j = &q->hist[q->nhist++ % NHIST];
  *j = (join_ent){w->group, w->comm, *k};
  if (!g->by_stream) { check_join(g, j, 1); return; }
  cl_gpu_activity a = {.start_ns = k->s, .end_ns = k->e, .device = k->dev};
  set_span(g, w->group, w->comm, &a);
  gj_part *p = dev_state(g, (int)k->dev);
  if (p) p->by_stream++;
}

static void queue_pending(stream_q *q, const pend_k *pk, cl_gj *g);

/* A record that comes after a later launch's record was joined: the joins from the first
 * later one on each took the kernel of the launch before theirs. Each gets its own again, and
 * the newest joined kernel waits for the next launch. Collectives already drawn keep what they
 * got (see SETTLE_NS for how rarely). */
static void repair(cl_gj *g, stream_q *q, const pend_k *late) {
  uint64_t lo = q->nhist > NHIST ? q->nhist - NHIST : 0, p = q->nhist;
  while (p > lo && corr_before(late->corr, q->hist[(p - 1) % NHIST].k.corr)) p--;
  if (p == lo && p > 0) { if (g->by_stream) no_launch(g, late); return; }   /* too far back */
  pend_k carry = *late;
  for (uint64_t i = p; i < q->nhist; i++) {
    join_ent *j = &q->hist[i % NHIST];
    if (!g->by_stream) check_join(g, j, -1);
    pend_k old = j->k;
    j->k = carry;
    carry = old;
    if (!g->by_stream) check_join(g, j, 1);
    else respan(g, q, j->group, j->comm);
  }
  g->repaired++;
  queue_pending(q, &carry, g);   /* the newest kernel, without its launch again */
}

/* Joins q's settled kernels with its launches, first with first: kernels on one stream run in
 * launch order. Settled: SETTLE_NS after its end (its stream's earlier records have come, but
 * see repair()), and every launch before it has reached the join (WIN_LAG_NS). A kernel that
 * started before the oldest waiting launch is not that launch's (its own is unknown); a launch
 * whose kernel would have started LAUNCH_KEEP_NS after it never got one (its record was lost).
 * With launch records on, joins are only compared with the correlation's. */
static void pump(cl_gj *g, stream_q *q, uint64_t now, int final) {
  while (q->head < q->n) {
    const pend_k *k = &q->k[q->head];
    if (!final && (k->e + SETTLE_NS > now || k->s + WIN_LAG_NS > now)) break;
    kl_win *w = oldest_window(g, q);
    /* its kernel never came: too long ago, or before CUPTI last started recording (the end of a
     * sampling window: CUPTI's records were all handed over before it detached) */
    const cover_t *kc = w ? cover_of(g, k->s) : NULL;
    if (w && (k->s > w->stop + LAUNCH_KEEP_NS || (kc && w->start < kc->s))) { w->passed = 1; continue; }
    q->head++;
    if (!w || k->s < w->start) { if (g->by_stream) no_launch(g, k); continue; }
    join(g, q, w, k);
  }
  if (q->head == q->n) q->head = q->n = 0;
}

/* Into the waiting list, in launch order. */
static void queue_pending(stream_q *q, const pend_k *pk, cl_gj *g) {
  /* full: not joined */
  if (queue_room(&q->k, &q->head, &q->n, &q->cap, sizeof *q->k, SQ_MAX, SQ_MAX) != 0) {
    if (g->by_stream) no_launch(g, pk);
    return;
  }
  size_t j = q->n++;
  while (j > q->head && corr_before(pk->corr, q->k[j - 1].corr)) { q->k[j] = q->k[j - 1]; j--; }
  q->k[j] = *pk;
}

/* An NCCL kernel record (not a replay) for its stream's join. */
static void queue_kernel(cl_gj *g, const cl_gpu_activity *k, const corr_ent *known) {
  stream_q *q = stream_of(g, k->device, k->stream + 1, 1);
  pend_k pk = {k->start_ns, k->end_ns, known ? known->group : 0, k->name, k->device, known ? known->comm : 0,
               k->correlation, known != NULL};
  if (!q) { if (g->by_stream) no_launch(g, &pk); return; }   /* too many streams */
  if (q->nhist && corr_before(pk.corr, q->hist[(q->nhist - 1) % NHIST].k.corr)) repair(g, q, &pk);
  else queue_pending(q, &pk, g);
}

/* Classifies and uses one kernel record; returns 0 if its launch record is not known yet. */
static int use_kernel(cl_gj *g, const cl_gpu_activity *k, int force) {
  corr_ent *c = &g->corr[k->correlation % NCORR];
  int known = !g->by_stream && !k->graph_node && c->cls && c->corr == k->correlation;
  int nccl;
  if (known) nccl = c->cls == 1;
  else if (g->by_stream || k->graph_node || force || !g->nwin_total) {
    /* no launch record of its own (a graph replay carries the graph launch's correlation id;
     * a runtime launch; no KernelLaunch events): by name */
    nccl = is_nccl_name(k);
  }
  else return 0;
  gj_part *q = dev_state(g, (int)k->device);   /* the kernel's GPU's trace */
  if (!q) return 1;
  if (nccl && !known) q->by_name++;
  /* compute kernels: a slice each only when asked (COMMLENS_CUPTI=full); the default keeps
   * them as exposure's compute intervals and a count (a slice cost more CPU than all the rest
   * of a record's work: docs/decisions/0045-compute-kernels-not-drawn.md) */
  if ((nccl || g->draw_compute) && q->p->trace) cl_draw_gpu_kernel(q->p->ct, k, nccl);
  if (!nccl) {
    q->compute_kernels++;
    cl_expo_add_compute(g->expo, k->device, k->start_ns, k->end_ns);
    return 1;
  }
  q->nccl_kernels++;
  if (k->graph_node) { add_graph_kernel(g, k, 1); return 1; }
  if (known) set_span(g, c->group, c->comm, k);
  else if (!g->by_stream) add_graph_kernel(g, k, 0);   /* its launch record never came */
  queue_kernel(g, k, known ? c : NULL);                 /* the join, or its check */
  return 1;
}

/* NVTX ranges named "step..." (any case; a number in the name becomes the step id) are the
 * application's steps: exposure is also reported per step. */
static int step_name(const char *n, uint64_t *id, uint64_t *next) {
  if (!n || strncasecmp(n, "step", 4) != 0) return 0;
  const char *d = n + 4;
  while (*d && (*d < '0' || *d > '9')) d++;
  *id = *d ? strtoull(d, NULL, 10) : (*next)++;
  return 1;
}

static void on_mark(cl_gj *g, const cl_gpu_activity *a) {
  uint32_t slot = a->correlation % NMARK;
  if (a->kind == CL_GPU_MARK_START) {
    g->marks[slot].id = a->correlation;
    g->marks[slot].s = a->start_ns;
    g->marks[slot].name = a->name;
    return;
  }
  if (g->marks[slot].id != a->correlation || !g->marks[slot].name) return;
  uint64_t id;
  if (step_name(g->marks[slot].name, &id, &g->next_step_id) && a->start_ns > g->marks[slot].s) {
    /* a step is the process's (its threads mark it): every GPU's exposure is cut by it */
    g->stepkeep[g->nsteps_seen++ % NSTEPKEEP] = (kept_step){g->marks[slot].s, a->start_ns, id};
    for (int i = 0; i < CL_MAX_PARTS; i++)
      if (g->part[i].agg) cl_expo_add_step(g->part[i].agg, g->marks[slot].s, a->start_ns, id);
  }
  g->marks[slot].name = NULL;
}

/* A copy-engine collective's copies, assigned as CUPTI hands them over. A stream runs its work in
 * order, so the copies of one collective all come before those of the next; a copy can only be
 * a collective's that was enqueued before it began. How many memcpy records one collective
 * makes is not NCCL's op count (NCCL 2.30's AllGather on 2 H200s: CeBatch says 2 ops, CUPTI
 * recorded 1 copy per collective on each GPU), so it is learned per stream: when a copy begins
 * after the next collective was enqueued and the current one already has copies, the current
 * one is complete, and what it got is the stream's count from then on. */
static uint32_t *ce_per(cl_gj *g, uint32_t dev, uint32_t stream) {
  uint32_t k = (dev * 31u + stream) % NCELEARN;
  for (uint32_t i = 0; i < NCELEARN; i++) {
    ce_learn *l = &g->learn[(k + i) % NCELEARN];
    if (l->stream == stream && l->dev == dev) return &l->per;
    if (!l->stream) { l->dev = dev; l->stream = stream; l->per = 0; return &l->per; }
  }
  ce_learn *l = &g->learn[k];            /* full: the slot is reused */
  l->dev = dev; l->stream = stream; l->per = 0;
  return &l->per;
}
static void ce_assign(ce_req *r, cp_ent *c) {
  c->claimed = 1;
  if (!r->got || c->s < r->s) r->s = c->s;
  if (c->e > r->e) r->e = c->e;
  r->got++;
}
static void ce_place(cl_gj *g, cp_ent *c) {
  ce_req *r = NULL, *r2 = NULL;
  if (!g->ce) return;
  if (g->ce_head + NCEREQ < g->nce) g->ce_head = g->nce - NCEREQ;    /* overwritten: gone */
  while (g->ce_head < g->nce && g->ce[g->ce_head % NCEREQ].done) g->ce_head++;
  for (uint64_t i = g->ce_head; i < g->nce && !r2; i++) {
    ce_req *x = &g->ce[i % NCEREQ];
    if (x->done) continue;
    /* enqueued this long before a copy of any stream began: it has all its copies, or its copies
     * were not recorded (CUPTI was off then); either way it takes no more */
    if (c->s > x->after + CE_STALE_NS) { x->done = 1; continue; }
    if (x->dev != c->dev || x->stream != c->stream + 1) continue;
    if (x->after > c->s + CE_SLACK_NS) break;   /* enqueued after the copy began: nor the ones after it */
    if (!r) r = x; else r2 = x;
  }
  if (!r) return;                               /* its collective is not read yet */
  uint32_t *per = ce_per(g, c->dev, c->stream);
  if (r->got && r2 && (!*per || r->got >= *per)) {   /* the next one's first copy */
    if (!*per) *per = r->got;
    r->done = 1;
    r = r2;
  }
  ce_assign(r, c);
  if (*per && r->got >= *per) r->done = 1;
}
static int cmp_copy_start(const void *a, const void *b) {
  const cp_ent *x = *(cp_ent *const *)a, *y = *(cp_ent *const *)b;
  return (x->s > y->s) - (x->s < y->s);
}

uint64_t cl_gj_ce_enqueue(cl_gj *g, uint64_t id, uint32_t dev, uint32_t stream, uint64_t after) {
  if (!id || !stream) return 0;
  if (!g->ce && !(g->ce = calloc(NCEREQ, sizeof *g->ce))) return 0;   /* made for the first one */
  uint64_t ticket = ++g->nce;
  g->ce[(ticket - 1) % NCEREQ] = (ce_req){.id = id, .after = after, .dev = dev, .stream = stream};
  /* copies of its stream recorded before it (or an earlier one) was read, in start order */
  cp_ent *list[256];
  size_t n = 0;
  /* the recent ones only: a copy recorded before its collective was read is at most a CUPTI
   * flush old (100 ms), and the scan stays bounded per collective */
  uint64_t from = g->ncopy > CE_SCAN ? g->ncopy - CE_SCAN : 0;
  for (uint64_t i = from; i < g->ncopy && n < 256; i++) {
    cp_ent *c = &g->copy[i % NCOPY];
    if (!c->claimed && c->dev == dev && c->stream + 1 == stream) list[n++] = c;
  }
  qsort(list, n, sizeof *list, cmp_copy_start);
  for (size_t i = 0; i < n; i++) ce_place(g, list[i]);
  return ticket;
}

int cl_gj_ce_span(cl_gj *g, uint64_t ticket, uint64_t id, int settle, uint64_t *s, uint64_t *e) {
  if (!g->ce || !ticket || ticket > g->nce || ticket + NCEREQ <= g->nce) return 0;   /* none, or overwritten */
  ce_req *r = &g->ce[(ticket - 1) % NCEREQ];
  if (r->id != id) return 0;
  if (settle) r->done = 1;                    /* asked for the last time: it takes no more copies */
  /* the last collective of its stream so far: complete once CUPTI has handed over what ran
   * well after its last copy (its buffers are flushed every 100 ms) */
  if (r->got && g->now > r->e + CE_QUIET_NS) r->done = 1;
  if (!r->done || !r->got) return 0;
  *s = r->s; *e = r->e;
  return 1;
}

void cl_gj_activity(cl_gj *g, const cl_gpu_activity *a) {
  if (a->kind == CL_GPU_MARK_START || a->kind == CL_GPU_MARK_END) { on_mark(g, a); return; }
  if (a->kind == CL_GPU_LAUNCH) {
    kl_win *w = find_window(g, a);
    if (w) w->matched = 1;
    corr_ent *c = &g->corr[a->correlation % NCORR];
    *c = w ? (corr_ent){a->correlation, 1, w->group, w->comm} : (corr_ent){a->correlation, 2, 0, 0};
    if (w) g->launches_matched++; else g->launches_other++;
    /* under the thread that made it, in NCCL's launch's GPU's trace (a launch record names no
     * device: the application's go to the process's first GPU) */
    cl_part *p = w ? cl_parts_of_comm(g->parts, w->comm) : cl_parts_of_dev(g->parts, -1);
    if (p && p->trace) cl_draw_cuda_launch(p->ct, a, w != NULL);
    return;
  }
  if (a->kind == CL_GPU_MEMCPY) {   /* kept for the copy-engine collectives */
    cp_ent *c = &g->copy[g->ncopy++ % NCOPY];
    *c = (cp_ent){a->start_ns, a->end_ns < a->start_ns ? a->start_ns : a->end_ns, a->device, a->stream, 0};
    ce_place(g, c);
  }
  if (a->kind == CL_GPU_MEMCPY || a->kind == CL_GPU_MEMSET) {   /* not compute (exposure.h): drawn in full */
    cl_part *p = g->draw_compute ? cl_parts_of_dev(g->parts, (int)a->device) : NULL;
    if (p && p->trace) cl_draw_gpu_copy(p->ct, a);
    return;
  }
  if (a->kind != CL_GPU_KERNEL) return;
  if (a->end_ns > g->last_kernel_end) g->last_kernel_end = a->end_ns;
  if (use_kernel(g, a, 0)) return;
  if (g->nhold == NHOLD) { use_kernel(g, a, 1); return; }
  g->hold_since[g->nhold] = a->end_ns;
  g->hold[g->nhold++] = *a;
}

int cl_gj_span(cl_gj *g, uint64_t group, uint32_t comm, uint64_t *s, uint64_t *e, uint32_t *dev) {
  if (!group) return 0;   /* no launch group (between sampled windows): none kept, nothing to look up */
  span_ent *x = span_slot(g, group, comm, 0);
  if (!x) return 0;
  *s = x->s;
  *e = x->e;
  *dev = x->dev;
  return 1;
}

void cl_gj_expose(cl_gj *g, uint64_t tag, uint32_t device, uint64_t comm_hash, uint64_t s, uint64_t e) {
  cl_expo_span sp = {.start_ns = s, .end_ns = e, .tag = tag, .comm = comm_hash, .device = device,
                     .order_only = (tag & CL_GJ_TAG_ORDER_ONLY) != 0};
  if (cl_expo_add_span(g->expo, &sp) != 0 && g->fn) {   /* pending cap hit: unknown exposure */
    cl_expo_result r = {.span = sp, .incomplete = 1};
    g->fn(g->arg, &r);
  }
}

int cl_gj_expo_idle(const cl_gj *g) { return cl_expo_pending(g->expo) == 0; }

void cl_gj_advance(cl_gj *g, uint64_t now, int final) {
  if (now > g->now) g->now = now;
  uint32_t k = 0;
  for (uint32_t i = 0; i < g->nhold; i++) {   /* launch records arrive with the kernels, mostly */
    int force = final || now - g->hold_since[i] > HOLD_NS;
    if (!use_kernel(g, &g->hold[i], force)) { g->hold_since[k] = g->hold_since[i]; g->hold[k++] = g->hold[i]; }
  }
  g->nhold = k;
  for (stream_q *q = g->sq; g->sq && q < g->sq + NSQ && q->sid; q++) if (q->sid != SID_ANY) pump(g, q, now, final);
  /* replayed kernels no collective claimed in time count on their own */
  while (g->gk_next < g->ngk && (final || g->gk[g->gk_next % NGK].e + GRAPH_HOLD_NS < now))
    release_graph(g, &g->gk[g->gk_next++ % NGK]);
  if (final) {
    cl_expo_finish(g->expo);
    for (int i = 0; i < CL_MAX_PARTS; i++) if (g->part[i].agg) cl_expo_agg_finish(g->part[i].agg);
    return;
  }
  if (now > EXPO_LAG_NS) {
    uint64_t wm = now - EXPO_LAG_NS;          /* not past a replayed kernel still in the pool */
    if (g->gk_next < g->ngk && g->gk[g->gk_next % NGK].s < wm) wm = g->gk[g->gk_next % NGK].s;
    cl_expo_advance(g->expo, wm);
    uint64_t upto = cl_expo_reported_upto(g->expo);
    for (int i = 0; i < CL_MAX_PARTS; i++) if (g->part[i].agg) cl_expo_agg_advance(g->part[i].agg, upto);
  }
}

void cl_gj_join_all(cl_gj *g) {
  for (stream_q *q = g->sq; q < g->sq + NSQ && q->sid; q++) if (q->sid != SID_ANY) pump(g, q, 0, 1);
}

void cl_gj_steps(cl_gj *g, cl_part *p, uint64_t *n, uint64_t *exposed_sum, uint64_t *comm_sum,
                 uint64_t *worst_id, uint64_t *worst_exposed) {
  const gj_part *q = &g->part[p->index];
  *n = q->steps;
  *exposed_sum = q->step_exposed_sum;
  *comm_sum = q->step_comm_sum;
  *worst_id = q->worst_step_id;
  *worst_exposed = q->worst_step_exposed;
}

void cl_gj_totals(cl_gj *g, cl_part *p, cl_gj_counts *c) {
  const gj_part *q = &g->part[p->index];
  memset(c, 0, sizeof *c);
  if (q->agg) cl_expo_agg_totals(q->agg, &c->t);
  c->launches_nccl = g->launches_matched;
  c->launches_other = g->launches_other;
  c->nccl_kernels = q->nccl_kernels;
  c->compute_kernels = q->compute_kernels;
  c->by_name = q->by_name;
  c->by_stream = q->by_stream;
  c->no_launch = q->no_launch;
  c->graph_kernels = q->graph_kernels;
  c->graph_claimed = q->graph_claimed;
}

size_t cl_gj_comms(cl_gj *g, cl_part *p, cl_expo_comm_totals *out, size_t max) {
  const gj_part *q = &g->part[p->index];
  return q->agg ? cl_expo_agg_comms(q->agg, out, max) : 0;
}
