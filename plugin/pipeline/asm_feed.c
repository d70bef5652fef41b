/* asm_feed.c: see assemble.h and asm_state.h. Owns the table of open events (by id) and their lifetimes (starts
 * paired with stops, children with parents, orphans waiting for late parents, KernelCh held
 * for clock calibration) and when a collective is complete; its end (GPU span, exposure, what
 * each consumer gets) is asm_finish.c, how each event is drawn plugin/output/nccl_slices.c,
 * which gets finished events as const data. Never touches NCCL's memory. */
#include "plugin/pipeline/asm_state.h"
#include "common/config.h"
#include "common/digest_codec.h"
#include "common/grow.h"
#include "common/nccl.h"
#include "plugin/output/nccl_slices.h"
#include <stdlib.h>
#include <string.h>

_Static_assert(offsetof(cl_asm_ev, d.p) + sizeof(cl_payload) == offsetof(cl_asm_ev, d.st) &&
               offsetof(cl_asm_ev, d.st) + sizeof(((cl_asm_ev *)0)->d.st) == sizeof(cl_asm_ev),
               "an open event's payload and states come last (feed_start clears what precedes them)");
_Static_assert(CL_STEP_NWAITS == CL_DG_NWAITS, "the digest keeps every proxy-step wait the trace shows");

#define MAX_OPEN (1u << 22)          /* open events kept at most (memory bound) */
#define TAB_BITS 12                  /* the open-event table's first size: 2^TAB_BITS slots */
#define CHILD_WAIT_NS 10000000000ull   /* a collective waits this long for open children */

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
const cl_asm_ev *cl_asm_open_event(cl_asm *a, uint64_t id) { return lookup(a, id); }
static int grow(cl_asm *a) {
  uint32_t ncap = a->cap * 2;
  cl_asm_ev **nt = calloc(ncap, sizeof *nt);
  if (!nt) return -1;
  cl_asm_ev **old = a->tab;
  uint32_t ocap = a->cap;
  a->tab = nt;
  a->cap = ncap;
  a->shift--;
  for (uint32_t i = 0; i < ocap; i++) if (old[i]) *slot_of(a, old[i]->d.id) = old[i];
  free(old);
  return 0;
}
static void remove_ev(cl_asm *a, cl_asm_ev *e) {
  if (e == a->kch_parent) a->kch_parent = NULL;
  if (e->untabled) goto free_it;
  uint32_t i = hash_id(a, e->d.id);
  while (a->tab[i] != e) i = (i + 1) & (a->cap - 1);
  a->tab[i] = NULL;
  for (uint32_t j = (i + 1) & (a->cap - 1); a->tab[j]; j = (j + 1) & (a->cap - 1)) {
    cl_asm_ev *m = a->tab[j];          /* backward-shift deletion keeps probe chains intact */
    a->tab[j] = NULL;
    *slot_of(a, m->d.id) = m;
  }
  a->n--;
free_it:
  e->next_free = a->free_list;
  a->free_list = e;
}
static cl_asm_ev *alloc_ev(cl_asm *a) {
  cl_asm_ev *e = a->free_list;
  if (e) { a->free_list = e->next_free; return e; }
  return malloc(sizeof(cl_asm_ev));
}

static const cl_comm_facts *draw_comm(void *arg, uint32_t serial) {
  comm_cache *c = comm_of(arg, serial);
  return c ? &c->f : NULL;
}

/* ---- GPU timer -> host clock (gpu_clock.c), one clock per device ---- */
static cl_gpu_clock *clock_of(cl_asm *a, uint32_t comm) { return clock_cc(a, comm_of(a, comm)); }
/* A KernelCh's stop timer and when the host saw it (the KernelChStop state, else the stop). */
static void kch_stop_timer(const cl_asm_ev *e, uint64_t *pt, uint64_t *obs) {
  *pt = 0;
  *obs = e->d.stop;
  for (int i = 0; i < e->d.nst; i++)
    if (e->d.st[i].st == CL_ST_KERNEL_CH_STOP) { *pt = e->d.st[i].arg; *obs = e->d.st[i].ts; }
}

/* A KernelCh's timers on the host clock [*s, *t] (its device calibrated, or final; the host's
 * observations when implausible), folded into its parent's GPU span and tail channel and
 * counted in the digest; `ph` its v7 phases (NULL: none); `cc` the communicator `comm` (comm_of);
 * `first`: the one channel of its collective recorded (CL_F_KCH_FIRST), which the parent then
 * expects alone and which counts in neither its tail channel nor the digest's channel totals.
 * Returns whether implausible. */
static int kch_fold(cl_asm *a, comm_cache *cc, uint32_t comm, unsigned channel, uint64_t pt0, uint64_t obs0,
                    uint64_t pt1, uint64_t obs1, const cl_asm_ev *ph, cl_asm_ev *parent, int first, uint64_t *s_, uint64_t *t_) {
  cl_gpu_clock *o = clock_cc(a, cc);
  uint64_t s = cl_gpu_clock_to_host(o, pt0, obs0);
  uint64_t t = pt1 ? cl_gpu_clock_to_host(o, pt1, obs1) : 0;
  int implausible = !s || !t || pt1 < pt0;
  if (implausible) { s = obs0; t = obs1; a->stats.implausible_gpu++; }
  if (parent && first) parent->kch_first = 1;   /* expected_kch: this channel alone */
  if (parent && !implausible) {
    if (!parent->gmin || s < parent->gmin) parent->gmin = s;
    /* one channel of the collective (CL_F_KCH_FIRST): which finished last is not known */
    if (t > parent->gmax) { parent->gmax = t; parent->d.tail_ch = first ? -1 : (int)channel; }
    if (s > parent->gsmax) parent->gsmax = s;
    if (!parent->gtmin || t < parent->gtmin) parent->gtmin = t;
    int any = 0;
    for (int i = 0; ph && i < 3; i++)   /* per phase, the channel that spent longest in it */
      if (ph->d.ph_t[i]) { any = 1; if (ph->d.ph_t[i] - ph->d.ph_s[i] > parent->d.ph_ns[i]) parent->d.ph_ns[i] = ph->d.ph_t[i] - ph->d.ph_s[i]; }
    parent->d.ph_n += any;
  }
  cl_part *p = part_cc(a, cc, comm);
  if (p && p->dg && !implausible && !first) {   /* a channel's place among its collective's */
    cl_digest_chan(p->dg, cc ? cc->info.d.hash : 0, (int)channel, t - s,
                   parent && parent->d.etype == CL_EV_COLL ? (int64_t)parent->d.p.coll.seq : -1);
  }
  *s_ = s;
  *t_ = t;
  return implausible;
}

/* A KernelCh on the host clock (its device calibrated, or final): folded, then drawn. */
static void kch_done(cl_asm *a, const cl_asm_ev *e, cl_asm_ev *parent) {
  uint64_t stop_pt, stop_obs, s, t;
  kch_stop_timer(e, &stop_pt, &stop_obs);
  int implausible = kch_fold(a, comm_of(a, e->d.comm), e->d.comm, e->d.p.kernel_ch.channel, e->d.p.kernel_ch.ptimer,
                             e->d.start, stop_pt, stop_obs, e, parent, (e->d.flags & CL_F_KCH_FIRST) != 0, &s, &t);
  const cl_draw *d = draw_for(a, e->d.comm);
  if (d) cl_draw_kernel_ch(d, &e->d, drawn_ev(parent), s, t, stop_pt, implausible);
}

/* A proxy op: its span widens its collective's proxy span. */
static void proxy_op_done(cl_asm *a, const cl_asm_ev *e, cl_asm_ev *parent) {
  if (parent) {
    if (!parent->pmin || e->d.start < parent->pmin) parent->pmin = e->d.start;
    if (e->d.stop > parent->pmax) parent->pmax = e->d.stop;
  }
  const cl_draw *d = draw_for(a, e->d.comm);
  if (d) cl_draw_proxy_op(d, &e->d, drawn_ev(parent));
}

/* A proxy step: the bytes its wait states report (the last plausible size) count for its op. */
static void proxy_step_done(cl_asm *a, const cl_asm_ev *e, cl_asm_ev *op) {
  uint64_t bytes = 0;
  for (int i = 0; i < e->d.nst; i++)
    if (e->d.st[i].st == CL_ST_STEP_SEND_WAIT || e->d.st[i].st == CL_ST_STEP_RECV_FLUSH_WAIT ||
        e->d.st[i].st == CL_ST_STEP_RECV_WAIT)
      if (e->d.st[i].arg && e->d.st[i].arg < (1ull << 40)) bytes = e->d.st[i].arg;
  if (op) op->d.bytes += bytes;
  cl_part *p = part_of(a, e->d.comm);
  if (p && p->dg) {
    comm_cache *cc = comm_of(a, e->d.comm);
    uint64_t w[CL_STEP_NWAITS];
    cl_step_waits(&e->d, w);
    cl_digest_proxy_step(p->dg, cc ? cc->info.d.hash : 0, op ? op->d.p.proxy_op.channel : 0, op ? op->d.p.proxy_op.peer : -1, w);
  }
  const cl_draw *d = draw_for(a, e->d.comm);
  if (d) cl_draw_proxy_step(d, &e->d, drawn_ev(op), bytes);
}

/* A v7 kernel phase: its GPU timers go to its KernelCh (drawn inside it, and folded into the
 * collective, by kch_done). NCCL stops every phase before its channel, so the KernelCh is open;
 * a phase without one, of an unknown id or with unusable timers is counted as lost. */
static void phase_done(cl_asm *a, const cl_asm_ev *e, cl_asm_ev *kch) {
  uint64_t stop_pt = 0;
  for (int i = 0; i < e->d.nst; i++) if (e->d.st[i].st == CL_ST_KERNEL_PHASE_STOP) stop_pt = e->d.st[i].arg;
  unsigned ph = e->d.p.kernel_phase.phase;
  if (!kch || kch->d.etype != CL_EV_KERNEL_CH || ph > 2 || !e->d.p.kernel_phase.ptimer ||
      stop_pt < e->d.p.kernel_phase.ptimer) {
    a->stats.phases_lost++;
    return;
  }
  kch->d.ph_s[ph] = e->d.p.kernel_phase.ptimer;
  kch->d.ph_t[ph] = stop_pt;
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
  cl_asm_ev *c = lookup(a, tag & ~CL_GJ_TAG_ORDER_ONLY);
  if (!c || !c->awaiting) return;
  cl_asm_exposed(a, c, r);
  remove_ev(a, c);
}

static int coll_like(const cl_asm_ev *e) { return e->d.etype == CL_EV_COLL || e->d.etype == CL_EV_P2P; }
static unsigned expected_kch(const cl_asm_ev *c) {
  if (!(cl_cfg.mask & (1u << CL_EV_KERNEL_CH)) || (c->d.flags & CL_F_UNTIMED)) return 0;
  if (c->kch_first) return 1;   /* its other channels were not asked for */
  return c->d.etype == CL_EV_COLL ? c->d.p.coll.nchannels : c->d.p.p2p.nchannels;
}
/* Left out by the timers' sample, without a child, on a communicator that never had a proxy op:
 * nothing more will come of it, so it need not wait for the grace time. */
static int untimed_alone(cl_asm *a, const cl_asm_ev *c) {
  if (!(c->d.flags & CL_F_UNTIMED) || c->nchild) return 0;
  const comm_cache *cc = comm_of(a, c->d.comm);
  return cc && !cc->net;
}
static void maybe_finish(cl_asm *a, cl_asm_ev *c, uint64_t now, int force) {
  if (c->awaiting) return;
  if (!force) {
    if (!c->d.stopped || c->open_children) return;
    unsigned exp = expected_kch(c);
    uint64_t seen = read_to(a, now), since_stop = waited(seen, c->d.stop);
    /* channels still to come, and too soon to give up on them or on CUPTI: the common case,
     * answered before CUPTI is asked (each channel's stop asks) */
    if (exp && c->kch_done < exp && since_stop < CL_ASM_CUPTI_WAIT_NS && since_stop < CHILD_WAIT_NS) return;
    uint64_t last = c->last_child > c->d.stop ? c->last_child : c->d.stop;
    uint64_t s, e;
    uint32_t dev;
    int cupti_pending = cl_asm_cupti_expected(a, c) && !cl_asm_cupti_span(a, c, 0, &s, &e, &dev);
    if (cupti_pending) { if (since_stop < CL_ASM_CUPTI_WAIT_NS) return; }
    else if (exp && c->kch_done < exp) {
      /* KernelCh starts when the GPU reaches the work, which can be long after the enqueue
       * (a long kernel ahead in the stream): wait for every channel, up to CHILD_WAIT_NS */
      if (since_stop < CHILD_WAIT_NS) return;
    } else if (!exp && !untimed_alone(a, c) && waited(seen, last) < CL_ASM_GRACE_NS) return;
  }
  if (cl_asm_finish_coll(a, c)) remove_ev(a, c);
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
static void adopt_orphans(cl_asm *a, cl_asm_ev *parent, uint64_t now, int final);
static int is_child_type(unsigned t) {
  return t == CL_EV_KERNEL_CH || t == CL_EV_PROXY_OP || t == CL_EV_PROXY_STEP || t == CL_EV_NET_PLUGIN ||
         t == CL_EV_KERNEL_PHASE;
}

/* A copy-engine collective (NCCL 2.28+, events from ABI v6) is a collective like the others:
 * enqueued, GPU-timed (its copies, from CUPTI's memcpy records, stand in for the kernel), in
 * exposure, the digest and the report, matched across ranks by its seq. Its CeColl is read as a
 * Coll (algo "CE", proto its sync strategy, no channels); the stream its copies run on is kept.
 * Its CeSync and CeBatch children stay detail (the copy engine track). */
static void ce_as_coll(cl_asm_ev *e) {
  cl_ce_coll ce = e->d.p.ce_coll;
  e->d.etype = CL_EV_COLL;
  e->d.p.coll = (cl_coll){.seq = ce.seq, .func = ce.func, .datatype = ce.datatype, .algo = "CE",
                        .proto = ce.sync_strategy, .count = ce.count, .root = ce.root, .user_tag = ce.user_tag};
  e->ce = 1;
  e->ce_stream = ce.stream_id;
}

/* Children read before their parent's start, still open: the parent, now read, is held open
 * by them as by any child (a slow proxy op on NCCL's proxy thread, whose ring the drain reads
 * before that of the thread that launched the collective: PyTorch's autograd thread, started
 * after it; the collective would otherwise be finished without it). With parent NULL, drops
 * the entries of children since stopped or gone (they wait as orphans, or were finished). */
static void adopt_early(cl_asm *a, cl_asm_ev *parent) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < a->nearly; i++) {
    struct early x = a->early[i];
    cl_asm_ev *c = lookup(a, x.child);
    if (!c || c->d.stopped || c->registered || c->d.parent != x.parent) continue;
    if (parent && x.parent == parent->d.id) {
      c->registered = 1;
      parent->open_children++;
      parent->nchild++;
      if (c->d.start > parent->last_child) parent->last_child = c->d.start;
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
static cl_asm_ev *feed_start(cl_asm *a, const cl_start_rec *r, int span) {
  const cl_rec *h = &r->hdr;
  cl_asm_ev *parent = NULL;
  uint64_t pid = (h->flags & CL_F_FOREIGN) ? 0 : h->arg;
  int early = 0;                        /* a child read before its parent (adopt_early) */
  if (pid && is_child_type(h->etype)) {
    parent = lookup(a, pid);
    if (!parent) { a->stats.orphans++; early = 1; }
  }
  if (!h->id) { a->stats.stale++; return NULL; }   /* no handle is 0: never ours */
  if (!span && a->n >= MAX_OPEN) { a->stats.writer_drops++; return NULL; }
  if (!span && a->n * 2 >= a->cap && grow(a) != 0) { a->stats.writer_drops++; return NULL; }
  cl_asm_ev *e = alloc_ev(a);
  if (!e) { a->stats.writer_drops++; return NULL; }
  memset(e, 0, offsetof(cl_asm_ev, d.p));   /* all but the payload (copied next) and the states */
  e->d.id = h->id;
  e->d.parent = pid;                    /* kept for every type: KernelLaunch needs its group */
  e->d.start = h->ts;
  e->d.comm = h->aux;
  e->d.thread = CL_ID_SERIAL(h->id);
  e->d.etype = h->etype;
  e->d.flags = h->flags;
  e->d.tail_ch = -1;
  e->registered = parent != NULL;
  e->untabled = span;
  a->stats.ops_started += e->d.etype == CL_EV_COLL || e->d.etype == CL_EV_P2P || e->d.etype == CL_EV_CE_COLL;
  size_t plen = (size_t)(h->nslots - 1) * CL_SLOT_BYTES;
  if (plen > sizeof e->d.p) plen = sizeof e->d.p;
  memcpy(&e->d.p, &r->p, plen);
  if (e->d.etype == CL_EV_CE_COLL) ce_as_coll(e);
  e->d.user_tag = e->d.etype == CL_EV_COLL ? e->d.p.coll.user_tag : e->d.etype == CL_EV_P2P ? e->d.p.p2p.user_tag : 0;
  if (!span) {
    *slot_of(a, e->d.id) = e;
    a->n++;
  }
  a->stats.starts++;
  if (h->flags & CL_F_FOREIGN) a->stats.foreign++;
  if (e->d.comm && (e->d.etype == CL_EV_COLL || e->d.etype == CL_EV_P2P)) {
    uint64_t hash = e->d.etype == CL_EV_COLL ? e->d.p.coll.comm_hash : e->d.p.p2p.comm_hash;
    comm_cache *c = comm_of(a, e->d.comm);
    if (hash && c && !c->info.d.hash) {
      a->deps.comm_learn(e->d.comm, hash, e->d.p.rank);
      c->loaded = 0;
      if (a->memo_cc == c) { a->memo_serial = 0; a->memo_cc = NULL; }
    }
  }
  if (parent) { parent->open_children++; parent->nchild++; parent->last_child = h->ts; }
  else if (early && !span && cl_grow(&a->early, &a->cap_early, (size_t)a->nearly + 1, sizeof *a->early, 64, 0) == 0)
    a->early[a->nearly++] = (struct early){e->d.id, pid};
  if (e->d.etype == CL_EV_PROXY_OP && e->d.comm && !(h->flags & CL_F_FOREIGN)) {   /* untimed_alone */
    comm_cache *c = comm_of(a, e->d.comm);
    if (c) c->net = 1;
  }
  if ((e->d.etype == CL_EV_COLL_API || e->d.etype == CL_EV_P2P_API) && pid) link_put(a, h->id, pid);
  if ((e->d.etype == CL_EV_COLL || e->d.etype == CL_EV_P2P) && pid)
    e->api_group = link_group(a, pid);   /* v5+: parent is the API event */
  if ((a->norph || a->nearly) && (coll_like(e) || e->d.etype == CL_EV_PROXY_OP || e->d.etype == CL_EV_PROXY_STEP ||
                                   e->d.etype == CL_EV_KERNEL_CH)) {
    if (a->nearly) adopt_early(a, e);
    if (a->norph) adopt_orphans(a, e, h->ts, 0);
  }
  return e;
}

/* A stopped child event with its parent (NULL if it has none or it is gone for good). */
static void finish_child(cl_asm *a, cl_asm_ev *e, cl_asm_ev *parent) {
  uint64_t ts = e->d.stop;
  switch (e->d.etype) {
  case CL_EV_KERNEL_CH: {
    uint64_t stop_pt, stop_obs;
    kch_stop_timer(e, &stop_pt, &stop_obs);
    cl_gpu_clock *o = clock_of(a, e->d.comm);
    cl_gpu_clock_sample(o, e->d.p.kernel_ch.ptimer, e->d.start);
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
    const cl_draw *d = draw_for(a, e->d.comm);
    if (d) cl_draw_other(d, &e->d);
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

static void feed_stop(cl_asm *a, cl_asm_ev *e, uint64_t ts) {
  e->d.stop = ts < e->d.start ? e->d.start : ts;
  e->d.stopped = 1;
  const cl_draw *d = draw_for(a, e->d.comm);
  switch (e->d.etype) {
  case CL_EV_KERNEL_LAUNCH:
    if (a->gj && e->d.parent) {
      comm_cache *cc = comm_of(a, e->d.comm);
      const cl_asm_ev *grp = lookup(a, e->d.parent);   /* its GroupApi, open until the group ends */
      cl_gj_launch l = {.tid = os_tid(a, e->d.thread), .start = e->d.start, .stop = e->d.stop,
                        .group = e->d.parent, .comm = e->d.comm, .dev = cc ? cc->info.cuda_dev : -1,
                        .stream_id = e->d.p.kernel_launch.stream_id,
                        .captured = grp && grp->d.etype == CL_EV_GROUP_API && grp->d.p.group_api.graph_captured};
      cl_gj_kernel_launch(a->gj, &l);
    }
    if (d) cl_draw_api(d, &e->d);
    break;
  case CL_EV_GROUP_API: case CL_EV_COLL_API: case CL_EV_P2P_API:
    if (d) cl_draw_api(d, &e->d);
    break;
  case CL_EV_GROUP: if (d) cl_draw_enqueue(d, &e->d); break;
  case CL_EV_COLL: case CL_EV_P2P:
    if (e->ce && a->gj && cl_gj_covered(a->gj, e->d.start))   /* its copies are recorded */
      e->ce_ticket = cl_gj_ce_enqueue(a->gj, e->d.id, comm_dev(a, e->d.comm), e->ce_stream, e->d.start);
    e->d.enq_tid = d ? cl_draw_enqueue(d, &e->d) : 0;
    e->d.enq_ts = e->d.start;
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
    if (a->pend_tail - a->pend_head < a->pend_cap) a->pend[a->pend_tail++ % a->pend_cap] = e->d.id;
    maybe_finish(a, e, ts, 0);
    return;                               /* kept until its children are done */
  default: {
    cl_asm_ev *parent = e->d.parent ? lookup(a, e->d.parent) : NULL;
    if (!parent && e->d.parent && is_child_type(e->d.etype)) {
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
static void adopt_orphans(cl_asm *a, cl_asm_ev *parent, uint64_t now, int final) {
  uint32_t k = 0;
  uint64_t seen = read_to(a, now);
  for (uint32_t i = 0; i < a->norph; i++) {
    cl_asm_ev *ov = a->orph[i];
    if (parent && ov->d.parent == parent->d.id) finish_child(a, ov, parent);
    else if (!parent && (final || waited(seen, ov->d.stop) > ORPHAN_WAIT_NS)) finish_child(a, ov, NULL);
    else a->orph[k++] = ov;
  }
  a->norph = k;
}

static void add_state(cl_asm_ev *e, uint32_t st, uint64_t ts, uint64_t arg) {
  if (e->d.nst < sizeof e->d.st / sizeof e->d.st[0]) e->d.st[e->d.nst++] = (cl_nccl_ev_state){(uint8_t)st, ts, arg};
  else e->d.st[e->d.nst - 1] = (cl_nccl_ev_state){(uint8_t)st, ts, arg};
}

static void feed_stop_rec(cl_asm *a, cl_asm_ev *e, const cl_rec *r) {
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
  cl_asm_ev *parent = a->kch_parent && a->kch_parent->d.id == h->arg ? a->kch_parent : lookup(a, h->arg);
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
  if (parent->d.stopped && !parent->open_children && (!exp || parent->kch_done >= exp))
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
  cl_asm_ev *e = feed_start(a, &st, 1);
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
  cl_asm_ev *e = lookup(a, r->id);
  if (!e || e->d.stopped) {                 /* re-stopped (stale handle), or its start was dropped */
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
    cl_asm_ev *e = a->held[i];
    cl_gpu_clock *o = clock_of(a, e->d.comm);
    if (!final && !cl_gpu_clock_ready(o)) {
      unsigned d = (unsigned)(o - a->off);
      a->held_on[d / 64] |= 1ull << (d % 64);
      a->held[k++] = e;
      continue;
    }
    cl_asm_ev *parent = e->d.parent ? lookup(a, e->d.parent) : NULL;
    kch_done(a, e, parent);
    if (parent) {
      parent->kch_done++;
      if (e->registered && parent->open_children) parent->open_children--;
      parent->last_child = e->d.stop;
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
    cl_asm_ev *c = lookup(a, id);
    if (c && !c->awaiting && !final) {
      uint64_t last = c->last_child > c->d.stop ? c->last_child : c->d.stop;
      uint64_t wait = cl_asm_cupti_expected(a, c) ? CL_ASM_CUPTI_WAIT_NS : CL_ASM_GRACE_NS;
      /* children still open (a KernelCh held for clock calibration, a slow proxy op) keep it,
       * up to CHILD_WAIT_NS: finishing now would cut them off their collective */
      unsigned exp = expected_kch(c);
      uint64_t seen = read_to(a, now);
      int children_open = (c->open_children || (exp && c->kch_done < exp)) && waited(seen, c->d.stop) < CHILD_WAIT_NS;
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
      cl_asm_ev *e = a->tab[i];
      if (!e) continue;
      if (coll_like(e) && e->d.stopped && !e->awaiting) { maybe_finish(a, e, now, 1); if (a->tab[i] != e) i--; continue; }
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
  for (cl_asm_ev *e = a->free_list; e;) { cl_asm_ev *n = e->next_free; free(e); e = n; }
  free(a->tab); free(a->comms); free(a->pend); free(a->held); free(a->tids); free(a->orph); free(a->early);
  free(a);
}

void cl_asm_get_stats(const cl_asm *a, cl_asm_stats *s) { *s = a->stats; s->open_now = a->n; }

void cl_asm_clocks_from(cl_asm *dst, const cl_asm *src) { memcpy(dst->off, src->off, sizeof dst->off); }
