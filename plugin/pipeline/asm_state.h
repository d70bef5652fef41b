/* asm_state.h: the assembler's own state, shared by the files it is cut into (asm_feed.c: the
 * open events' lifetimes; asm_finish.c: a collective's end and what each consumer gets of it;
 * asm_comms.c: the communicator cache; asm_json.c: the trace tail's JSON). Nobody else includes
 * it: to the rest of the plugin cl_asm is opaque and a finished event is a const cl_nccl_ev. */
#ifndef COMMLENS_ASM_STATE_H
#define COMMLENS_ASM_STATE_H
#include "common/hash.h"
#include "plugin/gpu/gpu_clock.h"
#include "plugin/pipeline/assemble.h"

/* An open event: the assembler's bookkeeping while it is open, and what drawing reads (d: a
 * finished event is handed over as &e->d; last, its payload and states last of all, so that
 * one clear of everything before d.p starts an event). */
typedef struct cl_asm_ev {
  uint32_t open_children, kch_done, nchild;
  uint64_t gmin, gmax, pmin, pmax, last_child;
  uint64_t gsmax, gtmin;              /* Coll/P2p: its channels' latest start and earliest end */
  int kch_first;                      /* Coll/P2p: one channel recorded (CL_F_KCH_FIRST) */
  int registered;
  int untabled;                       /* not in the table of open events (a span: one record) */
  uint64_t api_group;                 /* Coll/P2p (v5+): the GroupApi its launch belongs to */
  uint64_t gs, ge;                    /* chosen GPU span while waiting for its exposure */
  uint8_t src;                        /* the chosen span's source (common/digest_codec.h CL_DG_SRC_) */
  int awaiting;
  int expo_est;                /* sampled mode: outside CUPTI's windows, exposure to be estimated */
  /* a copy-engine collective (its CeColl read as a Coll: algo "CE", proto its sync strategy):
   * the stream its copies run on (CUPTI id plus one, 0 unknown) */
  uint8_t ce;
  uint32_t ce_stream;
  uint64_t ce_ticket;                 /* its place in the GPU join's copy-engine ring (0: none) */
  struct cl_asm_ev *next_free;
  cl_nccl_ev d;
} cl_asm_ev;
/* What drawing reads of an open event that may be missing (a parent: NULL). */
static inline const cl_nccl_ev *drawn_ev(const cl_asm_ev *e) { return e ? &e->d : NULL; }

#define MAX_DEV 65
#define NAPI 65536                   /* CollApi/P2pApi -> GroupApi links remembered ... */
#define API_WAYS 4                   /* ... in sets of this many, by a hash of the whole id */
#define SIZE_MEMO 16                   /* (function, datatype) names whose sizes are remembered */

typedef struct { uint64_t api, group, seq; } api_link;

/* m_span, m_expo: GPU time and exposed time of the collectives measured inside CUPTI's sampling
 * windows (COMMLENS_CUPTI=sampled), the ratio the ones outside are estimated with. */
/* net: a proxy op of the communicator was seen (its collectives have network children) */
typedef struct { int loaded, net; cl_comm_info info; cl_comm_facts f; cl_part *part; uint64_t m_span, m_expo; } comm_cache;
struct cl_asm {
  cl_parts *parts;          /* whose trace, summary and totals each event goes to */
  cl_asm_deps deps;
  cl_draw draw;             /* what drawing gets: the participant's ct (draw_for) and
                               read-only lookups into this state */
  cl_asm_ev **tab;                 /* open addressing by id */
  uint32_t cap, n;
  unsigned shift;              /* 64 - log2(cap): the home slot's bits (hash_id) */
  cl_asm_ev *free_list;
  cl_asm_ev *kch_parent;           /* the last span's collective (span_fast), NULL once removed */
  comm_cache *comms;
  size_t ncomms;
  uint32_t memo_serial;        /* the communicator comm_of answered last (loaded, hash known) ... */
  comm_cache *memo_cc;         /* ... and its entry; serial 0 and NULL: none (comm_of(0) is NULL) */
  cl_gpu_clock off[MAX_DEV];
  uint64_t *pend;           /* retained collectives awaiting completion (ids, FIFO) */
  cl_asm_ev **held;                /* stopped KernelCh events waiting for their device's calibration */
  cl_asm_ev **orph;                /* stopped children whose parent's start has not been seen yet */
  uint32_t norph;
  size_t cap_orph;
  struct early { uint64_t child, parent; } *early;   /* open children whose parent's start has not
                                                        been seen yet (held open by it once seen) */
  uint32_t nearly;
  size_t cap_early;
  cl_gj *gj;                /* CUPTI join, NULL without CUPTI */
  api_link links[NAPI];     /* API event id -> its GroupApi (link_put, link_group) */
  uint64_t nlinks;
  int *tids;                /* OS thread id by thread serial (0 = not looked up) */
  size_t ntids;
  uint32_t nheld;
  size_t cap_held;
  uint64_t held_on[2];      /* the clocks (a->off index) some held event waits for, a bit each */
  uint32_t pend_head, pend_tail, pend_cap;
  cl_asm_stats stats;
  struct size_memo { const char *func, *dt; uint32_t size; uint8_t per_rank, known; } sizes[SIZE_MEMO];   /* bytes_per */
  uint64_t m_span, m_expo;  /* the same over every communicator (sampled mode) */
  uint64_t read_until;      /* every record committed before it was fed (cl_asm_read_until) */
  int read_known;           /* 0: never said; the waits run to the caller's time */
};

/* ---- the open-event table (open addressing by id) ---- */
/* cl_hash_slot with the table's shift kept (every open event is looked up a few times) */
static inline uint32_t hash_id(const cl_asm *a, uint64_t id) { return cl_hash_top(id, a->shift); }
static inline cl_asm_ev **slot_of(cl_asm *a, uint64_t id) {
  uint32_t i = hash_id(a, id);
  while (a->tab[i] && a->tab[i]->d.id != id) i = (i + 1) & (a->cap - 1);
  return &a->tab[i];
}
static inline cl_asm_ev *lookup(cl_asm *a, uint64_t id) { return id ? *slot_of(a, id) : NULL; }
/* The open event with this id, NULL if none (valid until the next feed or tick). */
const cl_asm_ev *cl_asm_open_event(cl_asm *a, uint64_t id);

/* ---- the communicator cache (asm_comms.c) ---- */
/* The communicator with serial `serial` (a cached copy of the registry's facts), or NULL.
 * Every finished event asks several times: the cached case is the inline test. */
comm_cache *cl_asm_comm_load(cl_asm *a, uint32_t serial);
static inline comm_cache *comm_of(cl_asm *a, uint32_t serial) {
  if (serial == a->memo_serial) return a->memo_cc;   /* a collective's events ask several times */
  if (serial - 1u < a->ncomms) {       /* serial 0 wraps past ncomms */
    comm_cache *c = &a->comms[serial - 1];
    if (c->loaded && c->info.d.hash) {
      a->memo_serial = serial;
      a->memo_cc = c;
      return c;
    }
  }
  return cl_asm_comm_load(a, serial);
}
/* GPU timer -> host clock (gpu_clock.c), one clock per device */
static inline cl_gpu_clock *clock_cc(cl_asm *a, const comm_cache *c) {
  int dev = c ? c->info.cuda_dev : -1;
  return &a->off[dev >= 0 && dev < MAX_DEV - 1 ? dev : MAX_DEV - 1];
}
static inline uint32_t comm_dev(cl_asm *a, uint32_t comm) {
  comm_cache *cc = comm_of(a, comm);
  return cc && cc->info.cuda_dev >= 0 ? (uint32_t)cc->info.cuda_dev : 0;
}

/* ---- where a finished event goes ---- */
/* The participant (GPU) of a communicator, remembered with its facts: every drawn event asks. */
static inline cl_part *part_cc(cl_asm *a, comm_cache *c, uint32_t comm) {
  if (!c) return cl_parts_of_dev(a->parts, -1);
  if (!c->part) c->part = cl_parts_of_comm(a->parts, comm);
  return c->part;
}
static inline cl_part *part_of(cl_asm *a, uint32_t comm) { return part_cc(a, comm_of(a, comm), comm); }

/* Drawing goes to the trace of the communicator's GPU (the first participant's when it has
 * none, or when out of memory); NULL when that GPU writes no trace (COMMLENS_OUTPUT=digest:
 * no JSON is formatted at all). */
static inline int drawn(const cl_part *p) { return !p || p->trace; }
static inline const cl_draw *draw_part(cl_asm *a, cl_part *p) {
  if (!drawn(p)) return NULL;
  if (p) a->draw.ct = p->ct;
  return &a->draw;
}
static inline const cl_draw *draw_for(cl_asm *a, uint32_t comm) { return draw_part(a, part_of(a, comm)); }

/* ---- a collective's end (asm_finish.c) ---- */
/* The collective's kernel from CUPTI: its launch group's kernel ("cupti"), or, for a CUDA-graph
 * replay, the replayed NCCL kernel its own span overlaps ("cupti_graph"), or its copies
 * ("cupti_ce"; settle: the last time it asks); its source (CL_DG_SRC_NONE: none yet). */
int cl_asm_cupti_span(cl_asm *a, cl_asm_ev *c, int settle, uint64_t *s, uint64_t *e, uint32_t *dev);
/* Whether a collective should wait for a CUPTI kernel record: CUPTI covered its time and it
 * has a launch group, or CUDA-graph replays run on its device. Asked at every stop of a
 * collective's children: inline. */
static inline int cl_asm_cupti_expected(cl_asm *a, const cl_asm_ev *c) {
  if (c->ce) return a->gj && c->ce_ticket;
  return a->gj && cl_gj_covered(a->gj, c->d.stop) &&
         (c->api_group || cl_gj_graph_seen(a->gj, comm_dev(a, c->d.comm)));
}
/* The collective is done: choose its GPU span (CUPTI kernel, else KernelCh, else proxy ops).
 * With CUPTI the span waits for its exposure (kept in the table, `awaiting`); returns 1 when
 * the event can be freed now. */
int cl_asm_finish_coll(cl_asm *a, cl_asm_ev *c);
/* The exposure of a collective that was `awaiting` it came (r): it is done. */
void cl_asm_exposed(cl_asm *a, cl_asm_ev *c, const cl_expo_result *r);
#endif
