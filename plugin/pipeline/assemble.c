/* assemble.c: see assemble.h. Owns the table of open events (by id), their lifetimes (starts
 * paired with stops, children with parents, orphans waiting for late parents, KernelCh held
 * for clock calibration), when a collective is complete, its GPU span, and the totals (stats,
 * summary, most exposed collectives). How each event is drawn is plugin/output/nccl_slices.c,
 * which gets finished events as const data. Never touches NCCL's memory. */
#include "plugin/pipeline/assemble.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/loghist.h"
#include "common/digest_codec.h"
#include "common/grow.h"
#include "common/hash.h"
#include "common/nccl.h"
#include "plugin/gpu/gpu_clock.h"
#include "plugin/output/nccl_slices.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(CL_STEP_NWAITS == CL_DG_NWAITS, "the digest keeps every proxy-step wait the trace shows");

#define MAX_OPEN (1u << 22)          /* open events kept at most (memory bound) */
#define TAB_BITS 12                  /* the open-event table's first size: 2^TAB_BITS slots */
#define MAX_DEV 65
#define NAPI 65536                   /* CollApi/P2pApi -> GroupApi links remembered ... */
#define API_WAYS 4                   /* ... in sets of this many, by a hash of the whole id */
#define CHILD_WAIT_NS 10000000000ull   /* a collective waits this long for open children */
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
  cl_ev **tab;                 /* open addressing by id */
  uint32_t cap, n;
  unsigned shift;              /* 64 - log2(cap): the home slot's bits (hash_id) */
  cl_ev *free_list;
  cl_ev *kch_parent;           /* the last span's collective (span_fast), NULL once removed */
  comm_cache *comms;
  size_t ncomms;
  uint32_t memo_serial;        /* the communicator comm_of answered last (loaded, hash known) ... */
  comm_cache *memo_cc;         /* ... and its entry; serial 0 and NULL: none (comm_of(0) is NULL) */
  cl_gpu_clock off[MAX_DEV];
  uint64_t *pend;           /* retained collectives awaiting completion (ids, FIFO) */
  cl_ev **held;                /* stopped KernelCh events waiting for their device's calibration */
  cl_ev **orph;                /* stopped children whose parent's start has not been seen yet */
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

/* ---- waiting for records not read yet ----
 * A collective waits for its channels and children, a child for its parent's start, up to a
 * bound. That bound is measured to the time up to which the rings have been read, not to the
 * clock: on a busy machine the format thread (at the lowest priority) can be seconds behind,
 * and a bound measured to the clock then gives up on records still in the rings (a collective
 * left untimed). A reader more than READ_LAG_MAX_NS behind is waited for no longer. */
#define READ_LAG_MAX_NS 30000000000ull
static uint64_t read_to(const cl_asm *a, uint64_t now) {
  if (!a->read_known || a->read_until >= now) return now;
  return now - a->read_until > READ_LAG_MAX_NS ? now - READ_LAG_MAX_NS : a->read_until;
}
/* How long since `t` at `now` (0 when `now` is earlier: a record's time can pass the horizon). */
static uint64_t waited(uint64_t now, uint64_t t) { return now > t ? now - t : 0; }
void cl_asm_read_until(cl_asm *a, uint64_t t) {
  if (!a->read_known || t > a->read_until) a->read_until = t;
  a->read_known = 1;
}


/* ---- small tables ---- */
/* cl_hash_slot with the table's shift kept (every open event is looked up a few times) */
static inline uint32_t hash_id(const cl_asm *a, uint64_t id) { return cl_hash_top(id, a->shift); }
static cl_ev **slot_of(cl_asm *a, uint64_t id) {
  uint32_t i = hash_id(a, id);
  while (a->tab[i] && a->tab[i]->id != id) i = (i + 1) & (a->cap - 1);
  return &a->tab[i];
}
static cl_ev *lookup(cl_asm *a, uint64_t id) { return id ? *slot_of(a, id) : NULL; }
const cl_ev *cl_asm_open_event(cl_asm *a, uint64_t id) { return lookup(a, id); }
static int grow(cl_asm *a) {
  uint32_t ncap = a->cap * 2;
  cl_ev **nt = calloc(ncap, sizeof *nt);
  if (!nt) return -1;
  cl_ev **old = a->tab;
  uint32_t ocap = a->cap;
  a->tab = nt;
  a->cap = ncap;
  a->shift--;
  for (uint32_t i = 0; i < ocap; i++) if (old[i]) *slot_of(a, old[i]->id) = old[i];
  free(old);
  return 0;
}
static void remove_ev(cl_asm *a, cl_ev *e) {
  if (e == a->kch_parent) a->kch_parent = NULL;
  if (e->untabled) goto free_it;
  uint32_t i = hash_id(a, e->id);
  while (a->tab[i] != e) i = (i + 1) & (a->cap - 1);
  a->tab[i] = NULL;
  for (uint32_t j = (i + 1) & (a->cap - 1); a->tab[j]; j = (j + 1) & (a->cap - 1)) {
    cl_ev *m = a->tab[j];          /* backward-shift deletion keeps probe chains intact */
    a->tab[j] = NULL;
    *slot_of(a, m->id) = m;
  }
  a->n--;
free_it:
  e->next_free = a->free_list;
  a->free_list = e;
}
static cl_ev *alloc_ev(cl_asm *a) {
  cl_ev *e = a->free_list;
  if (e) { a->free_list = e->next_free; return e; }
  return malloc(sizeof(cl_ev));
}

/* The communicator with serial `serial` (a cached copy of the registry's facts), or NULL.
 * Every finished event asks several times: the cached case is the inline test. */
static comm_cache *comm_load(cl_asm *a, uint32_t serial) {
  if (!serial) return NULL;
  a->memo_serial = 0;                  /* the table may move */
  a->memo_cc = NULL;
  if (cl_grow(&a->comms, &a->ncomms, serial, sizeof *a->comms, 16, 0) != 0) return NULL;
  comm_cache *c = &a->comms[serial - 1];
  if (!c->loaded || !c->info.d.hash) {
    if (a->deps.comm_lookup(serial, &c->info) != 0) return NULL;
    c->loaded = 1;
    cl_comm_facts *f = &c->f;
    if (c->info.d.name[0]) snprintf(f->label, sizeof f->label, "comm %s", c->info.d.name);
    else if (c->info.d.hash) snprintf(f->label, sizeof f->label, "comm %08llx", (unsigned long long)(c->info.d.hash >> 32));
    else snprintf(f->label, sizeof f->label, "comm #%u", serial);
    f->hash = c->info.d.hash;
    snprintf(f->name, sizeof f->name, "%s", c->info.d.name);
    f->rank = c->info.d.rank;
    f->nranks = c->info.d.nranks;
  }
  return c;
}
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
  return comm_load(a, serial);
}
static const cl_comm_facts *draw_comm(void *arg, uint32_t serial) {
  comm_cache *c = comm_of(arg, serial);
  return c ? &c->f : NULL;
}

/* ---- GPU timer -> host clock (gpu_clock.c), one clock per device ---- */
static cl_gpu_clock *clock_cc(cl_asm *a, const comm_cache *c) {
  int dev = c ? c->info.cuda_dev : -1;
  return &a->off[dev >= 0 && dev < MAX_DEV - 1 ? dev : MAX_DEV - 1];
}
static cl_gpu_clock *clock_of(cl_asm *a, uint32_t comm) { return clock_cc(a, comm_of(a, comm)); }
static uint32_t comm_dev(cl_asm *a, uint32_t comm) {
  comm_cache *cc = comm_of(a, comm);
  return cc && cc->info.cuda_dev >= 0 ? (uint32_t)cc->info.cuda_dev : 0;
}

/* ---- totals, then drawing: what happens to a finished event ---- */
/* The participant (GPU) of a communicator, remembered with its facts: every drawn event asks. */
static cl_part *part_cc(cl_asm *a, comm_cache *c, uint32_t comm) {
  if (!c) return cl_parts_of_dev(a->parts, -1);
  if (!c->part) c->part = cl_parts_of_comm(a->parts, comm);
  return c->part;
}
static cl_part *part_of(cl_asm *a, uint32_t comm) { return part_cc(a, comm_of(a, comm), comm); }

/* Drawing goes to the trace of the communicator's GPU (the first participant's when it has
 * none, or when out of memory); NULL when that GPU writes no trace (COMMLENS_OUTPUT=digest:
 * no JSON is formatted at all). */
static int drawn(const cl_part *p) { return !p || p->trace; }
static const cl_draw *draw_part(cl_asm *a, cl_part *p) {
  if (!drawn(p)) return NULL;
  if (p) a->draw.ct = p->ct;
  return &a->draw;
}
static const cl_draw *draw_for(cl_asm *a, uint32_t comm) { return draw_part(a, part_of(a, comm)); }

/* Bytes a unit of `count` moves: the datatype's size, times the ranks for AllGather and
 * ReduceScatter (`func`; NULL for p2p), as cl_coll_bytes reckons it. Every finished collective
 * asks, with a few distinct names: NCCL's are static strings (its ABI; the shims give the old
 * ABIs' the same), so a name's address stands for its text here, and the answer is remembered
 * by the two addresses, direct-mapped. */
static uint64_t bytes_per(cl_asm *a, const char *func, const char *dt, int nranks) {
  struct size_memo *m = &a->sizes[(((uintptr_t)func >> 4) ^ ((uintptr_t)dt >> 4) * 7u) % SIZE_MEMO];
  if (!m->known || m->func != func || m->dt != dt) {
    *m = (struct size_memo){func, dt, (uint32_t)cl_datatype_size(dt), (uint8_t)cl_coll_bytes_per_rank(func), 1};
  }
  return (uint64_t)m->size * (m->per_rank && nranks > 0 ? (uint64_t)nranks : 1);
}

/* A collective or p2p operation the timers' sample left out (CL_F_UNTIMED) and that got no
 * KernelCh anyway: its host times are all NCCL's events give of it (CUPTI's inside a window). */
static int sample_untimed(const cl_ev *c) { return (c->flags & CL_F_UNTIMED) && !c->kch_done; }

/* The digest's row of a finished collective (exporters/digest.h). Its names are NCCL's static
 * strings (bytes_per), so the digest and the summary find them by address. */
static void digest_coll(const comm_cache *cc, cl_part *p, const cl_ev *c, uint64_t s, uint64_t e, int code,
                        int64_t exposed_ns, int est, uint64_t bytes) {
  int coll = c->etype == CL_EV_COLL;
  cl_dg_coll r = {.comm_hash = cc && cc->info.d.hash ? cc->info.d.hash : coll ? c->p.coll.comm_hash : c->p.p2p.comm_hash,
                  .comm_name = cc ? cc->f.name : "", .rank = cc ? cc->f.rank : -1, .nranks = cc ? cc->f.nranks : -1,
                  .p2p = !coll, .func = cl_ev_func(c), .algo = coll ? c->p.coll.algo : NULL,
                  .proto = coll ? c->p.coll.proto : NULL, .seq = coll ? c->p.coll.seq : 0, .bytes = bytes,
                  .nchannels = coll ? c->p.coll.nchannels : c->p.p2p.nchannels, .peer = coll ? 0 : c->p.p2p.peer,
                  .enq_start = c->start, .enq_stop = c->stop, .src = code,
                  .gpu_start = code ? s : c->start, .gpu_end = code ? e : c->start,
                  .exposed_ns = exposed_ns, .tail_ch = c->tail_ch, .expo_est = est, .static_names = 1,
                  .untimed = sample_untimed(c)};
  cl_digest_coll(p->dg, &r);
}

/* A collective or p2p operation is finished with GPU span [s, e] from source `code`
 * (CL_DG_SRC_NONE: none);
 * exposed_ns < 0 when exposure is not known; est: it is estimated (sampled mode, outside the
 * windows). Counts it, feeds the summary, draws it. */
static void coll_done(cl_asm *a, const cl_ev *c, uint64_t s, uint64_t e, int code, int64_t exposed_ns, int est) {
  comm_cache *cc = comm_of(a, c->comm);
  int nranks = cc ? cc->info.d.nranks : -1;
  const char *func = cl_ev_func(c);
  uint64_t bytes = c->etype == CL_EV_COLL ? c->p.coll.count * bytes_per(a, func, c->p.coll.datatype, nranks)
                                          : c->p.p2p.count * bytes_per(a, NULL, c->p.p2p.datatype, 0);
  cl_part *p = part_cc(a, cc, c->comm);
  const cl_draw *dr = draw_part(a, p);
  int timed = code != CL_DG_SRC_NONE;
  a->stats.colls_done++;
  if (p) {
    p->colls_done++;
    if (sample_untimed(c)) p->colls_untimed++;
    else if (c->kch_done) p->colls_kch++;
    cl_summary_add_static(p->sum, func, bytes, c->etype == CL_EV_COLL ? nranks : 2, timed ? e - s : 0);
    if (cl_cfg.prom[0])                    /* enqueue to GPU start: 0 when the GPU was there first */
      cl_prom_comms_add(&p->prom, cc ? cc->info.d.hash : 0, bytes, timed, timed ? e - s : 0,
                        timed && s > c->start ? s - c->start : 0);
    if (p->dg) digest_coll(cc, p, c, s, e, code, exposed_ns, est, bytes);
    if (c->kch_first && timed && c->gmax > c->gmin && s == c->gmin && e == c->gmax) p->colls_one_ch++;
    else if (c->kch_done >= 2 && c->gtmin && c->gmax >= c->gtmin && c->gsmax >= c->gmin) {
      uint64_t ds = c->gsmax - c->gmin, de = c->gmax - c->gtmin;
      p->ch_spread_hist[cl_loghist_bucket(ds > de ? ds : de, CL_SPREAD_BUCKETS)]++;
    }
    if (est) {
      p->colls_expo_est++;
      if (timed && e > s) p->est_comm_ns += e - s;
      if (exposed_ns > 0) p->est_expo_ns += (uint64_t)exposed_ns;
      if (exposed_ns < 0) p->colls_expo_unknown++;
    }
  }
  if (est) a->stats.colls_expo_est++;
  /* CUPTI taken by another tool at its end: said on its slice and on the counter track */
  /* sampled mode: NCCL's kernel-channel timers time it whoever holds CUPTI (not lost; its
   * exposure is estimated) */
  int kch_timed = cl_cfg.cupti == CL_CUPTI_SAMPLED && code == CL_DG_SRC_KERNEL_CH;
  int cupti = code == CL_DG_SRC_CUPTI || code == CL_DG_SRC_CUPTI_GRAPH || code == CL_DG_SRC_CUPTI_CE;
  const char *lost = a->gj && !kch_timed && !cupti && cl_gj_lost(a->gj, c->stop)
                     ? CL_GPU_LOST_WHY : NULL;
  if (lost) {
    a->stats.colls_gpu_lost++;
    if (p) {
      p->colls_gpu_lost++;
      if (dr) cl_draw_gpu_lost(dr, c, lost, p->colls_gpu_lost);
    }
  }
  if (!timed) return;
  a->stats.colls_timed++;
  if (p) p->colls_timed++;
  if (dr) cl_draw_coll_gpu(dr, c, s, e, cl_dg_src_name(code), exposed_ns, est, bytes, lost);
  if (p && exposed_ns > 0 && c->etype == CL_EV_COLL)    /* the most exposed collectives, for the summary */
    cl_part_top_add(p, func, c->p.coll.seq, cc ? cc->info.d.hash : c->p.coll.comm_hash, (uint64_t)exposed_ns, e - s);
}

/* A KernelCh's stop timer and when the host saw it (the KernelChStop state, else the stop). */
static void kch_stop_timer(const cl_ev *e, uint64_t *pt, uint64_t *obs) {
  *pt = 0;
  *obs = e->stop;
  for (int i = 0; i < e->nst; i++)
    if (e->st[i].st == CL_ST_KERNEL_CH_STOP) { *pt = e->st[i].arg; *obs = e->st[i].ts; }
}

/* A KernelCh's timers on the host clock [*s, *t] (its device calibrated, or final; the host's
 * observations when implausible), folded into its parent's GPU span and tail channel and
 * counted in the digest; `ph` its v7 phases (NULL: none); `cc` the communicator `comm` (comm_of);
 * `first`: the one channel of its collective recorded (CL_F_KCH_FIRST), which the parent then
 * expects alone and which counts in neither its tail channel nor the digest's channel totals.
 * Returns whether implausible. */
static int kch_fold(cl_asm *a, comm_cache *cc, uint32_t comm, unsigned channel, uint64_t pt0, uint64_t obs0,
                    uint64_t pt1, uint64_t obs1, const cl_ev *ph, cl_ev *parent, int first, uint64_t *s_, uint64_t *t_) {
  cl_gpu_clock *o = clock_cc(a, cc);
  uint64_t s = cl_gpu_clock_to_host(o, pt0, obs0);
  uint64_t t = pt1 ? cl_gpu_clock_to_host(o, pt1, obs1) : 0;
  int implausible = !s || !t || pt1 < pt0;
  if (implausible) { s = obs0; t = obs1; a->stats.implausible_gpu++; }
  if (parent && first) parent->kch_first = 1;   /* expected_kch: this channel alone */
  if (parent && !implausible) {
    if (!parent->gmin || s < parent->gmin) parent->gmin = s;
    /* one channel of the collective (CL_F_KCH_FIRST): which finished last is not known */
    if (t > parent->gmax) { parent->gmax = t; parent->tail_ch = first ? -1 : (int)channel; }
    if (s > parent->gsmax) parent->gsmax = s;
    if (!parent->gtmin || t < parent->gtmin) parent->gtmin = t;
    int any = 0;
    for (int i = 0; ph && i < 3; i++)   /* per phase, the channel that spent longest in it */
      if (ph->ph_t[i]) { any = 1; if (ph->ph_t[i] - ph->ph_s[i] > parent->ph_ns[i]) parent->ph_ns[i] = ph->ph_t[i] - ph->ph_s[i]; }
    parent->ph_n += any;
  }
  cl_part *p = part_cc(a, cc, comm);
  if (p && p->dg && !implausible && !first) {   /* a channel's place among its collective's */
    cl_digest_chan(p->dg, cc ? cc->info.d.hash : 0, (int)channel, t - s,
                   parent && parent->etype == CL_EV_COLL ? (int64_t)parent->p.coll.seq : -1);
  }
  *s_ = s;
  *t_ = t;
  return implausible;
}

/* A KernelCh on the host clock (its device calibrated, or final): folded, then drawn. */
static void kch_done(cl_asm *a, const cl_ev *e, cl_ev *parent) {
  uint64_t stop_pt, stop_obs, s, t;
  kch_stop_timer(e, &stop_pt, &stop_obs);
  int implausible = kch_fold(a, comm_of(a, e->comm), e->comm, e->p.kernel_ch.channel, e->p.kernel_ch.ptimer,
                             e->start, stop_pt, stop_obs, e, parent, (e->flags & CL_F_KCH_FIRST) != 0, &s, &t);
  const cl_draw *d = draw_for(a, e->comm);
  if (d) cl_draw_kernel_ch(d, e, parent, s, t, stop_pt, implausible);
}

/* A proxy op: its span widens its collective's proxy span. */
static void proxy_op_done(cl_asm *a, const cl_ev *e, cl_ev *parent) {
  if (parent) {
    if (!parent->pmin || e->start < parent->pmin) parent->pmin = e->start;
    if (e->stop > parent->pmax) parent->pmax = e->stop;
  }
  const cl_draw *d = draw_for(a, e->comm);
  if (d) cl_draw_proxy_op(d, e, parent);
}

/* A proxy step: the bytes its wait states report (the last plausible size) count for its op. */
static void proxy_step_done(cl_asm *a, const cl_ev *e, cl_ev *op) {
  uint64_t bytes = 0;
  for (int i = 0; i < e->nst; i++)
    if (e->st[i].st == CL_ST_STEP_SEND_WAIT || e->st[i].st == CL_ST_STEP_RECV_FLUSH_WAIT ||
        e->st[i].st == CL_ST_STEP_RECV_WAIT)
      if (e->st[i].arg && e->st[i].arg < (1ull << 40)) bytes = e->st[i].arg;
  if (op) op->bytes += bytes;
  cl_part *p = part_of(a, e->comm);
  if (p && p->dg) {
    comm_cache *cc = comm_of(a, e->comm);
    uint64_t w[CL_STEP_NWAITS];
    cl_step_waits(e, w);
    cl_digest_proxy_step(p->dg, cc ? cc->info.d.hash : 0, op ? op->p.proxy_op.channel : 0, op ? op->p.proxy_op.peer : -1, w);
  }
  const cl_draw *d = draw_for(a, e->comm);
  if (d) cl_draw_proxy_step(d, e, op, bytes);
}

/* A v7 kernel phase: its GPU timers go to its KernelCh (drawn inside it, and folded into the
 * collective, by kch_done). NCCL stops every phase before its channel, so the KernelCh is open;
 * a phase without one, of an unknown id or with unusable timers is counted as lost. */
static void phase_done(cl_asm *a, const cl_ev *e, cl_ev *kch) {
  uint64_t stop_pt = 0;
  for (int i = 0; i < e->nst; i++) if (e->st[i].st == CL_ST_KERNEL_PHASE_STOP) stop_pt = e->st[i].arg;
  unsigned ph = e->p.kernel_phase.phase;
  if (!kch || kch->etype != CL_EV_KERNEL_CH || ph > 2 || !e->p.kernel_phase.ptimer ||
      stop_pt < e->p.kernel_phase.ptimer) {
    a->stats.phases_lost++;
    return;
  }
  kch->ph_s[ph] = e->p.kernel_phase.ptimer;
  kch->ph_t[ph] = stop_pt;
}

/* The collective's own span from its children: KernelCh (GPU timer), else proxy ops; its source
 * (CL_DG_SRC_NONE: neither). */
static int child_span(const cl_ev *c, uint64_t *s, uint64_t *e) {
  if (c->gmax > c->gmin && c->gmin) { *s = c->gmin; *e = c->gmax; return CL_DG_SRC_KERNEL_CH; }
  if (c->pmax > c->pmin && c->pmin) { *s = c->pmin; *e = c->pmax; return CL_DG_SRC_PROXY; }
  return CL_DG_SRC_NONE;
}

/* The collective's kernel from CUPTI: its launch group's kernel ("cupti"), or, for a CUDA-graph
 * replay, the replayed NCCL kernel its own span overlaps ("cupti_graph"); its source
 * (CL_DG_SRC_NONE: none yet). */
static int cupti_span(cl_asm *a, cl_ev *c, int settle, uint64_t *s, uint64_t *e, uint32_t *dev) {
  if (!a->gj) return CL_DG_SRC_NONE;
  if (c->ce) {                   /* its copies ("cupti_ce"); settle: the last time it asks */
    if (!cl_gj_ce_span(a->gj, c->ce_ticket, c->id, settle, s, e)) return CL_DG_SRC_NONE;
    *dev = comm_dev(a, c->comm);
    return CL_DG_SRC_CUPTI_CE;
  }
  if (cl_gj_span(a->gj, c->api_group, c->comm, s, e, dev)) return CL_DG_SRC_CUPTI;
  if (!cl_gj_graph_any(a->gj)) return CL_DG_SRC_NONE;
  uint32_t d = comm_dev(a, c->comm);
  uint64_t cs, ce;
  if (cl_gj_graph_seen(a->gj, d) && child_span(c, &cs, &ce) && cl_gj_graph_claim(a->gj, d, cs, ce, s, e)) {
    *dev = d;
    return CL_DG_SRC_CUPTI_GRAPH;
  }
  return CL_DG_SRC_NONE;
}

/* Whether a CUPTI span agrees with the collective's own KernelCh span: both are the GPU's times,
 * and NCCL's channels start and end inside its kernel. One further off is not its kernel (a join
 * that gave it another launch's, seen with FSDP's two streams in sampled mode) or is on a clock
 * CUPTI mapped elsewhere; NCCL's timers then time it. No KernelCh span: nothing to check. */
static int cupti_agrees(const cl_ev *c, uint64_t s, uint64_t e) {
  if (!(c->gmax > c->gmin && c->gmin)) return 1;
  uint64_t ds = s > c->gmin ? s - c->gmin : c->gmin - s, de = e > c->gmax ? e - c->gmax : c->gmax - e;
  return ds <= CL_ASM_CUPTI_KCH_TOL_NS && de <= CL_ASM_CUPTI_KCH_TOL_NS;
}

/* Whether a collective should wait for a CUPTI kernel record: CUPTI covered its time and it
 * has a launch group, or CUDA-graph replays run on its device. */
static int cupti_expected(cl_asm *a, const cl_ev *c) {
  if (c->ce) return a->gj && c->ce_ticket;
  return a->gj && cl_gj_covered(a->gj, c->stop) &&
         (c->api_group || cl_gj_graph_seen(a->gj, comm_dev(a, c->comm)));
}

/* Sampled mode: a span outside CUPTI's windows (or in a window's first quarter, at most 250 ms,
 * where kernels launched before it opened still run unrecorded) has no measured exposure. */
static int sampled_out(cl_asm *a, uint64_t s, uint64_t e) {
  if (cl_cfg.cupti != CL_CUPTI_SAMPLED || !a->gj) return 0;
  uint64_t guard = cl_cfg.sample_on_ns / 4 < 250000000ull ? cl_cfg.sample_on_ns / 4 : 250000000ull;
  return !cl_gj_covered_for(a->gj, s, e, guard);
}
/* Its exposure estimated from the measured ones: its communicator's exposed share of GPU time,
 * else every communicator's; -1 before any was measured. */
static int64_t expo_estimate(cl_asm *a, const cl_ev *c, uint64_t s, uint64_t e) {
  comm_cache *cc = comm_of(a, c->comm);
  uint64_t sp = cc && cc->m_span ? cc->m_span : a->m_span, ex = cc && cc->m_span ? cc->m_expo : a->m_expo;
  if (!sp || e <= s) return -1;
  return (int64_t)((double)(e - s) * ((double)ex / (double)sp));
}
/* A measured one teaches the estimate; first it checks it (the estimate it would have had
 * against what was measured: the error the report shows beside estimated exposure). */
static void expo_learn(cl_asm *a, const cl_ev *c, uint64_t s, uint64_t e, int64_t exposed) {
  if (cl_cfg.cupti != CL_CUPTI_SAMPLED || exposed < 0 || e <= s) return;
  int64_t guess = expo_estimate(a, c, s, e);
  if (guess >= 0) {
    cl_part *p = part_of(a, c->comm);
    if (p) { p->est_check_n++; p->est_check_pred_ns += (uint64_t)guess; p->est_check_meas_ns += (uint64_t)exposed; }
  }
  comm_cache *cc = comm_of(a, c->comm);
  if (cc) { cc->m_span += e - s; cc->m_expo += (uint64_t)exposed; }
  a->m_span += e - s;
  a->m_expo += (uint64_t)exposed;
}

/* The collective is done: choose its GPU span (CUPTI kernel, else KernelCh, else proxy ops).
 * With CUPTI the span waits for its exposure (kept in the table, `awaiting`); returns 1 when
 * the event can be freed now. */
static int finish_coll(cl_asm *a, cl_ev *c) {
  uint64_t s = 0, e = 0;
  uint32_t dev = 0;
  int src = cupti_span(a, c, 1, &s, &e, &dev);
  if (src && !cupti_agrees(c, s, e)) { a->stats.cupti_rejected++; src = CL_DG_SRC_NONE; }
  if (!src) { src = child_span(c, &s, &e); dev = comm_dev(a, c->comm); }
  /* outside the windows: queued like the measured ones (then estimated, in end-time order after
   * them, from what the windows before it taught) */
  c->expo_est = src && a->gj && sampled_out(a, s, e) &&
                (src == CL_DG_SRC_KERNEL_CH || !cl_gj_lost(a->gj, c->stop));
  if (src && a->gj && c->expo_est && cl_gj_expo_idle(a->gj)) {
    /* nothing measured waits ahead of it: estimated now, as its report would have been */
    coll_done(a, c, s, e, src, expo_estimate(a, c, s, e), 1);
    return 1;
  }
  if (src && a->gj) {
    comm_cache *cc = comm_of(a, c->comm);
    c->gs = s; c->ge = e; c->src = (uint8_t)src; c->awaiting = 1;
    cl_gj_expose(a->gj, c->id | (c->expo_est ? CL_GJ_TAG_ORDER_ONLY : 0), dev, cc ? cc->info.d.hash : 0, s, e);
    return 0;
  }
  coll_done(a, c, s, e, src, -1, 0);
  return 1;
}

static void on_exposed(void *arg, const cl_expo_result *r) {
  cl_asm *a = arg;
  uint64_t tag = r->span.tag;
  if (tag & CL_GJ_TAG_GRAPH) {   /* a replayed NCCL kernel no collective claimed */
    cl_part *p = cl_parts_of_dev(a->parts, (int)r->span.device);
    if (p && !r->incomplete)
      cl_part_top_add(p, cl_gj_graph_name(tag), 0, 0, r->exposed_ns, r->span.end_ns - r->span.start_ns);
    return;
  }
  cl_ev *c = lookup(a, tag & ~CL_GJ_TAG_ORDER_ONLY);
  if (!c || !c->awaiting) return;
  if (c->expo_est) {
    coll_done(a, c, c->gs, c->ge, c->src, expo_estimate(a, c, c->gs, c->ge), 1);
  } else {
    int64_t x = r->incomplete ? -1 : (int64_t)r->exposed_ns;
    expo_learn(a, c, c->gs, c->ge, x);
    coll_done(a, c, c->gs, c->ge, c->src, x, 0);
  }
  remove_ev(a, c);
}

static int coll_like(const cl_ev *e) { return e->etype == CL_EV_COLL || e->etype == CL_EV_P2P; }
static unsigned expected_kch(const cl_ev *c) {
  if (!(cl_cfg.mask & (1u << CL_EV_KERNEL_CH)) || (c->flags & CL_F_UNTIMED)) return 0;
  if (c->kch_first) return 1;   /* its other channels were not asked for */
  return c->etype == CL_EV_COLL ? c->p.coll.nchannels : c->p.p2p.nchannels;
}
/* Left out by the timers' sample, without a child, on a communicator that never had a proxy op:
 * nothing more will come of it, so it need not wait for the grace time. */
static int untimed_alone(cl_asm *a, const cl_ev *c) {
  if (!(c->flags & CL_F_UNTIMED) || c->nchild) return 0;
  const comm_cache *cc = comm_of(a, c->comm);
  return cc && !cc->net;
}
static void maybe_finish(cl_asm *a, cl_ev *c, uint64_t now, int force) {
  if (c->awaiting) return;
  if (!force) {
    if (!c->stopped || c->open_children) return;
    unsigned exp = expected_kch(c);
    uint64_t seen = read_to(a, now), since_stop = waited(seen, c->stop);
    /* channels still to come, and too soon to give up on them or on CUPTI: the common case,
     * answered before CUPTI is asked (each channel's stop asks) */
    if (exp && c->kch_done < exp && since_stop < CL_ASM_CUPTI_WAIT_NS && since_stop < CHILD_WAIT_NS) return;
    uint64_t last = c->last_child > c->stop ? c->last_child : c->stop;
    uint64_t s, e;
    uint32_t dev;
    int cupti_pending = cupti_expected(a, c) && !cupti_span(a, c, 0, &s, &e, &dev);
    if (cupti_pending) { if (since_stop < CL_ASM_CUPTI_WAIT_NS) return; }
    else if (exp && c->kch_done < exp) {
      /* KernelCh starts when the GPU reaches the work, which can be long after the enqueue
       * (a long kernel ahead in the stream): wait for every channel, up to CHILD_WAIT_NS */
      if (since_stop < CHILD_WAIT_NS) return;
    } else if (!exp && !untimed_alone(a, c) && waited(seen, last) < CL_ASM_GRACE_NS) return;
  }
  if (finish_coll(a, c)) remove_ev(a, c);
}

/* OS thread id of a thread serial (for matching CUPTI's launch records). */
static int os_tid(cl_asm *a, uint32_t serial) {
  if (cl_grow(&a->tids, &a->ntids, (size_t)serial + 1, sizeof *a->tids, 64, 0) != 0) return -1;
  if (!a->tids[serial]) a->tids[serial] = a->deps.os_tid(serial);
  return a->tids[serial];
}

/* ---- API -> group links ----
 * A collective's Coll event often starts after its API event stopped (at the group's end), so
 * the API's group is remembered apart. Ids are (thread serial << 40) | per-thread sequence:
 * threads that run in lockstep (one per GPU) reach the same sequences, so a slot chosen by the
 * sequence alone was taken by another thread's API event before the collective came. The set
 * is the sequence offset by a multiple of the serial: one thread's last NAPI links never evict
 * each other (a group of thousands of p2p calls keeps them all), and threads land apart. */
static api_link *link_set(cl_asm *a, uint64_t api) {
  uint64_t seq = api & ((1ull << CL_ID_SEQ_BITS) - 1);
  uint32_t h = (uint32_t)(seq + (uint64_t)CL_ID_SERIAL(api) * 0x9E37u) & (NAPI - 1);
  return &a->links[h & ~(uint32_t)(API_WAYS - 1)];
}
static void link_put(cl_asm *a, uint64_t api, uint64_t group) {
  api_link *set = link_set(a, api), *v = set;
  for (int i = 0; i < API_WAYS; i++) {
    if (set[i].api == api) { v = &set[i]; break; }
    if (set[i].seq < v->seq) v = &set[i];   /* an empty slot (seq 0), else the oldest */
  }
  *v = (api_link){api, group, ++a->nlinks};
}
static uint64_t link_group(cl_asm *a, uint64_t api) {
  const api_link *set = link_set(a, api);
  for (int i = 0; i < API_WAYS; i++) if (set[i].api == api) return set[i].group;
  return 0;
}

/* ---- feeding ---- */
static void adopt_orphans(cl_asm *a, cl_ev *parent, uint64_t now, int final);
static int is_child_type(unsigned t) {
  return t == CL_EV_KERNEL_CH || t == CL_EV_PROXY_OP || t == CL_EV_PROXY_STEP || t == CL_EV_NET_PLUGIN ||
         t == CL_EV_KERNEL_PHASE;
}

/* A copy-engine collective (NCCL 2.28+, events from ABI v6) is a collective like the others:
 * enqueued, GPU-timed (its copies, from CUPTI's memcpy records, stand in for the kernel), in
 * exposure, the digest and the report, matched across ranks by its seq. Its CeColl is read as a
 * Coll (algo "CE", proto its sync strategy, no channels); the stream its copies run on is kept.
 * Its CeSync and CeBatch children stay detail (the copy engine track). */
static void ce_as_coll(cl_ev *e) {
  cl_ce_coll ce = e->p.ce_coll;
  e->etype = CL_EV_COLL;
  e->p.coll = (cl_coll){.seq = ce.seq, .func = ce.func, .datatype = ce.datatype, .algo = "CE",
                        .proto = ce.sync_strategy, .count = ce.count, .root = ce.root, .user_tag = ce.user_tag};
  e->ce = 1;
  e->ce_stream = ce.stream_id;
}

/* Children read before their parent's start, still open: the parent, now read, is held open
 * by them as by any child (a slow proxy op on NCCL's proxy thread, whose ring the drain reads
 * before that of the thread that launched the collective: PyTorch's autograd thread, started
 * after it; the collective would otherwise be finished without it). With parent NULL, drops
 * the entries of children since stopped or gone (they wait as orphans, or were finished). */
static void adopt_early(cl_asm *a, cl_ev *parent) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < a->nearly; i++) {
    struct early x = a->early[i];
    cl_ev *c = lookup(a, x.child);
    if (!c || c->stopped || c->registered || c->parent != x.parent) continue;
    if (parent && x.parent == parent->id) {
      c->registered = 1;
      parent->open_children++;
      parent->nchild++;
      if (c->start > parent->last_child) parent->last_child = c->start;
      continue;
    }
    a->early[k++] = x;
  }
  a->nearly = k;
}

/* A child whose parent has not been seen yet (the parent's thread was drained later) keeps
 * the parent's id and is linked again at its stop; it just does not hold the parent open.
 * A span's start (`span`: a CL_F_SPAN record unpacked, its stop fed next) is not put in the
 * table, since nothing will look it up; returns the event (NULL if not kept). */
static cl_ev *feed_start(cl_asm *a, const cl_start_rec *r, int span) {
  const cl_rec *h = &r->hdr;
  cl_ev *parent = NULL;
  uint64_t pid = (h->flags & CL_F_FOREIGN) ? 0 : h->arg;
  int early = 0;                        /* a child read before its parent (adopt_early) */
  if (pid && is_child_type(h->etype)) {
    parent = lookup(a, pid);
    if (!parent) { a->stats.orphans++; early = 1; }
  }
  if (!h->id) { a->stats.stale++; return NULL; }   /* no handle is 0: never ours */
  if (!span && a->n >= MAX_OPEN) { a->stats.writer_drops++; return NULL; }
  if (!span && a->n * 2 >= a->cap && grow(a) != 0) { a->stats.writer_drops++; return NULL; }
  cl_ev *e = alloc_ev(a);
  if (!e) { a->stats.writer_drops++; return NULL; }
  memset(e, 0, offsetof(cl_ev, p));
  e->id = h->id;
  e->parent = pid;                      /* kept for every type: KernelLaunch needs its group */
  e->registered = parent != NULL;
  e->start = h->ts;
  e->comm = h->aux;
  e->thread = CL_ID_SERIAL(h->id);
  e->etype = h->etype;
  e->flags = h->flags;
  a->stats.ops_started += e->etype == CL_EV_COLL || e->etype == CL_EV_P2P || e->etype == CL_EV_CE_COLL;
  size_t plen = (size_t)(h->nslots - 1) * CL_SLOT_BYTES;
  if (plen > sizeof e->p) plen = sizeof e->p;
  memcpy(&e->p, &r->p, plen);
  e->ce = 0; e->ce_stream = 0; e->ce_ticket = 0;
  if (e->etype == CL_EV_CE_COLL) ce_as_coll(e);
  e->open_children = e->kch_done = e->nchild = 0;
  e->gmin = e->gmax = e->pmin = e->pmax = e->last_child = e->bytes = 0;
  e->gsmax = e->gtmin = 0;
  e->kch_first = 0;
  e->tail_ch = -1;
  memset(e->ph_s, 0, sizeof e->ph_s); memset(e->ph_t, 0, sizeof e->ph_t); memset(e->ph_ns, 0, sizeof e->ph_ns);
  e->ph_n = 0;
  e->user_tag = e->etype == CL_EV_COLL ? e->p.coll.user_tag : e->etype == CL_EV_P2P ? e->p.p2p.user_tag : 0;
  e->enq_tid = 0;
  e->enq_ts = 0;
  e->expo_est = 0;
  e->api_group = 0;
  e->awaiting = 0;
  e->untabled = span;
  if (!span) {
    *slot_of(a, e->id) = e;
    a->n++;
  }
  a->stats.starts++;
  if (h->flags & CL_F_FOREIGN) a->stats.foreign++;
  if (e->comm && (e->etype == CL_EV_COLL || e->etype == CL_EV_P2P)) {
    uint64_t hash = e->etype == CL_EV_COLL ? e->p.coll.comm_hash : e->p.p2p.comm_hash;
    comm_cache *c = comm_of(a, e->comm);
    if (hash && c && !c->info.d.hash) {
      a->deps.comm_learn(e->comm, hash, e->p.rank);
      c->loaded = 0;
      if (a->memo_cc == c) { a->memo_serial = 0; a->memo_cc = NULL; }
    }
  }
  if (parent) { parent->open_children++; parent->nchild++; parent->last_child = h->ts; }
  else if (early && !span && cl_grow(&a->early, &a->cap_early, (size_t)a->nearly + 1, sizeof *a->early, 64, 0) == 0)
    a->early[a->nearly++] = (struct early){e->id, pid};
  if (e->etype == CL_EV_PROXY_OP && e->comm && !(h->flags & CL_F_FOREIGN)) {   /* untimed_alone */
    comm_cache *c = comm_of(a, e->comm);
    if (c) c->net = 1;
  }
  if ((e->etype == CL_EV_COLL_API || e->etype == CL_EV_P2P_API) && pid) link_put(a, h->id, pid);
  if ((e->etype == CL_EV_COLL || e->etype == CL_EV_P2P) && pid)
    e->api_group = link_group(a, pid);   /* v5+: parent is the API event */
  if ((a->norph || a->nearly) && (coll_like(e) || e->etype == CL_EV_PROXY_OP || e->etype == CL_EV_PROXY_STEP ||
                                   e->etype == CL_EV_KERNEL_CH)) {
    if (a->nearly) adopt_early(a, e);
    if (a->norph) adopt_orphans(a, e, h->ts, 0);
  }
  return e;
}

/* A stopped child event with its parent (NULL if it has none or it is gone for good). */
static void finish_child(cl_asm *a, cl_ev *e, cl_ev *parent) {
  uint64_t ts = e->stop;
  switch (e->etype) {
  case CL_EV_KERNEL_CH: {
    uint64_t stop_pt, stop_obs;
    kch_stop_timer(e, &stop_pt, &stop_obs);
    cl_gpu_clock *o = clock_of(a, e->comm);
    cl_gpu_clock_sample(o, e->p.kernel_ch.ptimer, e->start);
    cl_gpu_clock_sample(o, stop_pt, stop_obs);
    if (!cl_gpu_clock_ready(o)) {                  /* drawn once the device is calibrated */
      /* it keeps its collective open until drawn, even if it started before the collective's
       * start was read (unregistered): finishing the collective first would cut it off */
      if (parent && !e->registered) { parent->open_children++; e->registered = 1; }
      if (cl_grow(&a->held, &a->cap_held, (size_t)a->nheld + 1, sizeof *a->held, 256, 0) == 0) {
        a->held[a->nheld++] = e;
        unsigned k = (unsigned)(o - a->off);
        a->held_on[k / 64] |= 1ull << (k % 64);
        return;
      }
    }
    kch_done(a, e, parent);
    if (parent) parent->kch_done++;
    break;
  }
  case CL_EV_PROXY_OP: proxy_op_done(a, e, parent); break;
  case CL_EV_PROXY_STEP: proxy_step_done(a, e, parent); break;
  case CL_EV_KERNEL_PHASE: phase_done(a, e, parent); break;
  default: {
    const cl_draw *d = draw_for(a, e->comm);
    if (d) cl_draw_other(d, e);
    break;
  }
  }
  if (parent) {
    if (e->registered && parent->open_children) parent->open_children--;
    parent->last_child = ts;
    if (coll_like(parent)) maybe_finish(a, parent, ts, 0);
  }
  remove_ev(a, e);
}

#define ORPHAN_WAIT_NS 1000000000ull

static void feed_stop(cl_asm *a, cl_ev *e, uint64_t ts) {
  e->stop = ts < e->start ? e->start : ts;
  e->stopped = 1;
  const cl_draw *d = draw_for(a, e->comm);
  switch (e->etype) {
  case CL_EV_KERNEL_LAUNCH:
    if (a->gj && e->parent) {
      comm_cache *cc = comm_of(a, e->comm);
      const cl_ev *grp = lookup(a, e->parent);   /* its GroupApi, open until the group ends */
      cl_gj_launch l = {.tid = os_tid(a, e->thread), .start = e->start, .stop = e->stop,
                        .group = e->parent, .comm = e->comm, .dev = cc ? cc->info.cuda_dev : -1,
                        .stream_id = e->p.kernel_launch.stream_id,
                        .captured = grp && grp->etype == CL_EV_GROUP_API && grp->p.group_api.graph_captured};
      cl_gj_kernel_launch(a->gj, &l);
    }
    if (d) cl_draw_api(d, e);
    break;
  case CL_EV_GROUP_API: case CL_EV_COLL_API: case CL_EV_P2P_API:
    if (d) cl_draw_api(d, e);
    break;
  case CL_EV_GROUP: if (d) cl_draw_enqueue(d, e); break;
  case CL_EV_COLL: case CL_EV_P2P:
    if (e->ce && a->gj && cl_gj_covered(a->gj, e->start))   /* its copies are recorded */
      e->ce_ticket = cl_gj_ce_enqueue(a->gj, e->id, comm_dev(a, e->comm), e->ce_stream, e->start);
    e->enq_tid = d ? cl_draw_enqueue(d, e) : 0;
    e->enq_ts = e->start;
    if (a->pend_tail - a->pend_head == a->pend_cap) {      /* grow the FIFO */
      uint32_t nc = a->pend_cap ? a->pend_cap * 2 : 1024;
      uint64_t *n = malloc(nc * sizeof *n);
      if (n) {
        for (uint32_t i = 0; i < a->pend_cap; i++) n[i] = a->pend[(a->pend_head + i) % a->pend_cap];
        free(a->pend);
        a->pend = n;
        a->pend_tail -= a->pend_head;
        a->pend_head = 0;
        a->pend_cap = nc;
      }
    }
    if (a->pend_tail - a->pend_head < a->pend_cap) a->pend[a->pend_tail++ % a->pend_cap] = e->id;
    maybe_finish(a, e, ts, 0);
    return;                               /* kept until its children are done */
  default: {
    cl_ev *parent = e->parent ? lookup(a, e->parent) : NULL;
    if (!parent && e->parent && is_child_type(e->etype)) {
      /* Its parent's thread may simply not have been read yet: wait for the parent's start. */
      if (cl_grow(&a->orph, &a->cap_orph, (size_t)a->norph + 1, sizeof *a->orph, 64, 0) == 0) {
        a->orph[a->norph++] = e;
        return;
      }
    }
    finish_child(a, e, parent);
    return;
  }
  }
  remove_ev(a, e);
}

/* A new event may be the parent that parked children were waiting for; or orphans expire. */
static void adopt_orphans(cl_asm *a, cl_ev *parent, uint64_t now, int final) {
  uint32_t k = 0;
  uint64_t seen = read_to(a, now);
  for (uint32_t i = 0; i < a->norph; i++) {
    cl_ev *o = a->orph[i];
    if (parent && o->parent == parent->id) finish_child(a, o, parent);
    else if (!parent && (final || waited(seen, o->stop) > ORPHAN_WAIT_NS)) finish_child(a, o, NULL);
    else a->orph[k++] = o;
  }
  a->norph = k;
}

static void add_state(cl_ev *e, uint32_t st, uint64_t ts, uint64_t arg) {
  if (e->nst < sizeof e->st / sizeof e->st[0]) e->st[e->nst++] = (cl_ev_state){(uint8_t)st, ts, arg};
  else e->st[e->nst - 1] = (cl_ev_state){(uint8_t)st, ts, arg};
}

static void feed_stop_rec(cl_asm *a, cl_ev *e, const cl_rec *r) {
  if (r->flags & CL_F_STOP_KCH_STATE) add_state(e, CL_ST_KERNEL_CH_STOP, r->ts - r->aux, r->arg);
  feed_stop(a, e, r->ts);
}

/* A span (a whole KernelCh in one record) whose collective is open, whose device's clock is
 * calibrated and which nothing draws (a digest): folded into its collective straight from the
 * record, with no event made, as feed_start, feed_stop, finish_child and kch_done would (the
 * common case between CUPTI's windows). 0: it takes that path instead. */
static int span_fast(cl_asm *a, const cl_rec *h, const cl_kch_tail *t) {
  if ((h->flags & CL_F_FOREIGN) || !h->arg) return 0;
  /* a collective's channels come one after another: its event is remembered */
  cl_ev *parent = a->kch_parent && a->kch_parent->id == h->arg ? a->kch_parent : lookup(a, h->arg);
  if (!parent || !coll_like(parent)) return 0;
  a->kch_parent = parent;
  comm_cache *cc = comm_of(a, h->aux);
  if (drawn(part_cc(a, cc, h->aux))) return 0;   /* the event is made, to be drawn (draw_for) */
  cl_gpu_clock *o = clock_cc(a, cc);
  if (!cl_gpu_clock_ready(o)) return 0;
  uint64_t stop_ts = t->stop_ts < h->ts ? h->ts : t->stop_ts;
  int folded = (t->stop_flags & CL_F_STOP_KCH_STATE) != 0;
  uint64_t pt1 = folded ? t->stop_arg : 0, obs1 = folded ? t->stop_ts - t->stop_aux : stop_ts, s, tt;
  /* a start that took its stop's time (hotpath.c) gives a sample looser than the stop's: none */
  if (h->ts != obs1) cl_gpu_clock_sample(o, t->ptimer, h->ts);
  cl_gpu_clock_sample(o, pt1, obs1);
  a->stats.starts++;
  a->stats.spans_folded++;
  kch_fold(a, cc, h->aux, t->channel, t->ptimer, h->ts, pt1, obs1, NULL, parent, (h->flags & CL_F_KCH_FIRST) != 0, &s,
           &tt);
  parent->nchild++;
  parent->kch_done++;
  parent->last_child = stop_ts;
  /* only the last channel can finish it (else a later span, its stop or the tick does): one call
   * a collective instead of one a channel */
  unsigned exp = expected_kch(parent);
  if (parent->stopped && !parent->open_children && (!exp || parent->kch_done >= exp))
    maybe_finish(a, parent, stop_ts, 0);
  return 1;
}

/* A span record: folded (span_fast), else unpacked as the start (header, payload slot) and the
 * stop it stands for. */
static __attribute__((noinline)) void feed_span(cl_asm *a, const cl_rec *r) {
  if (r->nslots != 2 || r->etype != CL_EV_KERNEL_CH) {   /* a span is a KernelCh in two slots */
    a->stats.stale++;
    return;
  }
  cl_kch_tail t;
  memcpy(&t, r + 1, sizeof t);
  if (span_fast(a, r, &t)) return;
  cl_start_rec st;
  st.hdr = *r;
  memset(&st.p, 0, CL_SLOT_BYTES);
  st.p.kernel_ch.ptimer = t.ptimer;
  st.p.kernel_ch.channel = t.channel;
  const cl_rec stop = {.kind = CL_REC_STOP, .nslots = 1, .flags = t.stop_flags, .aux = t.stop_aux, .id = r->id,
                       .ts = t.stop_ts, .arg = t.stop_arg};
  cl_ev *e = feed_start(a, &st, 1);
  if (e) feed_stop_rec(a, e, &stop);
}

/* Every record: a dispatch, each kind's work apart (no registers saved for the others'). */
void cl_asm_feed(cl_asm *a, const cl_rec *r) {
  a->stats.records++;
  if (r->kind == CL_REC_START) {
    if (!(r->flags & CL_F_SPAN)) feed_start(a, (const cl_start_rec *)r, 0);
    else feed_span(a, r);
    return;
  }
  cl_ev *e = lookup(a, r->id);
  if (!e || e->stopped) {                 /* re-stopped (stale handle), or its start was dropped */
    a->stats.stale++;
    return;
  }
  if (r->kind == CL_REC_STOP) feed_stop_rec(a, e, r);
  else if (r->kind == CL_REC_STATE) add_state(e, r->aux, r->ts, r->arg);
}

/* Draws held KernelCh events whose device is calibrated (all of them when final). Each tick
 * asks first whether any clock they wait for is ready: until one is, nothing is walked (a job
 * holds thousands in its first 100 ms, and a clock may never calibrate). */
static void release_held(cl_asm *a, uint64_t now, int final) {
  if (!a->nheld) return;
  if (!final) {
    int any = 0;
    for (unsigned k = 0; k < MAX_DEV && !any; k++)
      any = (a->held_on[k / 64] >> (k % 64) & 1) && cl_gpu_clock_ready(&a->off[k]);
    if (!any) return;
  }
  uint32_t k = 0;
  a->held_on[0] = a->held_on[1] = 0;
  for (uint32_t i = 0; i < a->nheld; i++) {
    cl_ev *e = a->held[i];
    cl_gpu_clock *o = clock_of(a, e->comm);
    if (!final && !cl_gpu_clock_ready(o)) {
      unsigned d = (unsigned)(o - a->off);
      a->held_on[d / 64] |= 1ull << (d % 64);
      a->held[k++] = e;
      continue;
    }
    cl_ev *parent = e->parent ? lookup(a, e->parent) : NULL;
    kch_done(a, e, parent);
    if (parent) {
      parent->kch_done++;
      if (e->registered && parent->open_children) parent->open_children--;
      parent->last_child = e->stop;
    }
    remove_ev(a, e);
    if (parent) maybe_finish(a, parent, now, 0);
  }
  a->nheld = k;
}

void cl_asm_tick(cl_asm *a, uint64_t now, int final) {
  if (a->norph) adopt_orphans(a, NULL, now, final);
  if (a->nearly) adopt_early(a, NULL);
  release_held(a, now, final);
  while (a->pend_head != a->pend_tail) {
    uint64_t id = a->pend[a->pend_head % a->pend_cap];
    cl_ev *c = lookup(a, id);
    if (c && !c->awaiting && !final) {
      uint64_t last = c->last_child > c->stop ? c->last_child : c->stop;
      uint64_t wait = cupti_expected(a, c) ? CL_ASM_CUPTI_WAIT_NS : CL_ASM_GRACE_NS;
      /* children still open (a KernelCh held for clock calibration, a slow proxy op) keep it,
       * up to CHILD_WAIT_NS: finishing now would cut them off their collective */
      unsigned exp = expected_kch(c);
      uint64_t seen = read_to(a, now);
      int children_open = (c->open_children || (exp && c->kch_done < exp)) && waited(seen, c->stop) < CHILD_WAIT_NS;
      if (waited(seen, last) < wait || children_open) {
        maybe_finish(a, c, now, 0);           /* its CUPTI span may have arrived */
        if (lookup(a, id) != c) c = NULL;     /* finished just now (and freed): forget it */
        else if (!c->awaiting) break;
      }
    }
    a->pend_head++;
    if (c && !c->awaiting) maybe_finish(a, c, now, 1);
  }
  if (final) {                              /* whatever never stopped: count it, keep nothing */
    for (uint32_t i = 0; i < a->cap; i++) {
      cl_ev *e = a->tab[i];
      if (!e) continue;
      if (coll_like(e) && e->stopped && !e->awaiting) { maybe_finish(a, e, now, 1); if (a->tab[i] != e) i--; continue; }
    }
  }
}

static int draw_os_tid(void *arg, uint32_t serial) { return os_tid(arg, serial); }

cl_asm *cl_asm_new(cl_parts *parts, cl_gj *gj, const cl_asm_deps *deps) {
  cl_asm *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->parts = parts;
  a->deps = *deps;
  a->draw = (cl_draw){.ct = NULL, .comm = draw_comm, .os_tid = draw_os_tid, .arg = a};
  a->gj = gj;
  if (gj) cl_gj_on_exposed(gj, on_exposed, a);
  a->cap = 1u << TAB_BITS;
  a->shift = 64 - TAB_BITS;
  a->tab = calloc(a->cap, sizeof *a->tab);
  if (!a->tab) { free(a); return NULL; }
  return a;
}

void cl_asm_free(cl_asm *a) {
  if (!a) return;
  for (uint32_t i = 0; i < a->cap; i++) free(a->tab[i]);
  for (uint32_t i = 0; i < a->nheld; i++) if (a->held[i]->untabled) free(a->held[i]);   /* spans */
  for (uint32_t i = 0; i < a->norph; i++) if (a->orph[i]->untabled) free(a->orph[i]);
  for (cl_ev *e = a->free_list; e;) { cl_ev *n = e->next_free; free(e); e = n; }
  free(a->tab); free(a->comms); free(a->pend); free(a->held); free(a->tids); free(a->orph); free(a->early);
  free(a);
}

void cl_asm_get_stats(const cl_asm *a, cl_asm_stats *s) { *s = a->stats; s->open_now = a->n; }

void cl_asm_clocks_from(cl_asm *dst, const cl_asm *src) { memcpy(dst->off, src->off, sizeof dst->off); }

void cl_asm_offsets_json(const cl_asm *a, const cl_part *p, cl_sb *b) {
  sb_puts(b, "[");
  int first = 1;
  int mine = p->dev >= 0 && p->dev < MAX_DEV - 1 ? p->dev : MAX_DEV - 1;
  for (int d = 0; d < MAX_DEV; d++) {
    const cl_gpu_clock *o = &a->off[d];
    if ((!o->samples && !o->implausible) || d != mine) continue;
    sb_puts(b, first ? "{" : ",{");
    first = 0;
    sb_puts(b, "\"device\":"); sb_i64(b, d == MAX_DEV - 1 ? -1 : d);
    sb_puts(b, ",\"host_minus_gpu_ns\":"); sb_i64(b, cl_gpu_clock_offset(o));
    sb_puts(b, ",\"samples\":"); sb_u64(b, o->samples);
    sb_puts(b, ",\"implausible\":"); sb_u64(b, o->implausible);
    sb_puts(b, "}");
  }
  sb_puts(b, "]");
}

void cl_asm_exposure_json(cl_asm *a, cl_part *p, cl_sb *b) {
  if (!a->gj) { sb_puts(b, "null"); return; }
  cl_gj_counts n;
  cl_gj_totals(a->gj, p, &n);
  sb_printf(b, "{\"comm_ns\":%llu,\"exposed_ns\":%llu,\"overlap_ppm\":%u,\"spans\":%llu,"
            "\"nccl_kernels\":%llu,\"compute_kernels\":%llu,\"classified_by_name\":%llu,"
            "\"joined_by\":\"%s\",\"joined_by_stream\":%llu,\"without_launch\":%llu,"
            "\"launches_nccl\":%llu,\"launches_other\":%llu,\"graph_kernels\":%llu,"
            "\"graph_kernels_joined\":%llu,\"cupti_covered_ns\":%llu,",
            (unsigned long long)n.t.comm_ns, (unsigned long long)n.t.exposed_ns, cl_expo_overlap_ppm(&n.t),
            (unsigned long long)n.t.spans, (unsigned long long)n.nccl_kernels,
            (unsigned long long)n.compute_kernels, (unsigned long long)n.by_name,
            cl_gj_by_stream(a->gj) ? "stream order" : "correlation id",
            (unsigned long long)n.by_stream, (unsigned long long)n.no_launch,
            (unsigned long long)n.launches_nccl, (unsigned long long)n.launches_other,
            (unsigned long long)n.graph_kernels, (unsigned long long)n.graph_claimed,
            (unsigned long long)cl_gj_covered_ns(a->gj, cl_now()));
  uint64_t agree, differ, repaired;
  cl_gj_join_check(a->gj, &agree, &differ, &repaired);
  sb_printf(b, "\"stream_join\":{\"agree_with_correlation\":%llu,\"differ\":%llu,\"repaired\":%llu},",
            (unsigned long long)agree, (unsigned long long)differ, (unsigned long long)repaired);
  if (cl_cfg.cupti == CL_CUPTI_SAMPLED)   /* outside CUPTI's windows: estimated, and how well it did inside */
    sb_printf(b, "\"estimated\":{\"collectives\":%llu,\"comm_ns\":%llu,\"exposed_ns\":%llu,\"unknown\":%llu,\"check_n\":%llu,"
              "\"check_estimated_ns\":%llu,\"check_measured_ns\":%llu,\"windows_s\":%.3f,\"period_s\":%.3f},",
              (unsigned long long)p->colls_expo_est, (unsigned long long)p->est_comm_ns, (unsigned long long)p->est_expo_ns,
              (unsigned long long)p->colls_expo_unknown,
              (unsigned long long)p->est_check_n, (unsigned long long)p->est_check_pred_ns,
              (unsigned long long)p->est_check_meas_ns, (double)cl_cfg.sample_on_ns / 1e9, (double)cl_cfg.sample_period_ns / 1e9);
  sb_puts(b, "\"comms\":[");
  cl_expo_comm_totals ct[CL_EXPO_MAX_COMMS + 1];
  size_t nct = cl_gj_comms(a->gj, p, ct, sizeof ct / sizeof ct[0]);
  for (size_t i = 0; i < nct && i < sizeof ct / sizeof ct[0]; i++) {
    /* per communicator; comm 0: replayed graph kernels no collective claimed, and the
     * communicators past the table's cap */
    sb_printf(b, "%s{\"comm\":\"", i ? "," : "");
    sb_hex(b, ct[i].comm);
    sb_printf(b, "\",\"comm_ns\":%llu,\"exposed_ns\":%llu,\"overlap_ppm\":%u,\"spans\":%llu}",
              (unsigned long long)ct[i].t.comm_ns, (unsigned long long)ct[i].t.exposed_ns,
              cl_expo_overlap_ppm(&ct[i].t), (unsigned long long)ct[i].t.spans);
  }
  sb_puts(b, "],\"top\":[");
  for (int i = 0; i < CL_NTOP && p->top[i].exposed; i++) {
    sb_printf(b, "%s{\"func\":", i ? "," : "");
    sb_jstr(b, p->top[i].func);
    sb_printf(b, ",\"seq\":%llu,\"comm\":\"", (unsigned long long)p->top[i].seq);
    sb_hex(b, p->top[i].comm);
    sb_printf(b, "\",\"exposed_ns\":%llu,\"dur_ns\":%llu}", (unsigned long long)p->top[i].exposed,
              (unsigned long long)p->top[i].dur);
  }
  uint64_t sn, sx, sc, wid, wx;
  cl_gj_steps(a->gj, p, &sn, &sx, &sc, &wid, &wx);
  sb_printf(b, "],\"steps\":{\"count\":%llu,\"exposed_ns_mean\":%llu,\"comm_ns_mean\":%llu,"
            "\"worst_step\":%llu,\"worst_exposed_ns\":%llu}}",
            (unsigned long long)sn, (unsigned long long)(sn ? sx / sn : 0), (unsigned long long)(sn ? sc / sn : 0),
            (unsigned long long)wid, (unsigned long long)wx);
}
