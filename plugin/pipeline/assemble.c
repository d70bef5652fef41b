/* assemble.c: see assemble.h. Owns the table of open events (by id), their lifetimes (starts
 * paired with stops, children with parents, orphans waiting for late parents, KernelCh held
 * for clock calibration), and when a collective is complete. How each event is drawn lives
 * in slices.c. Never touches NCCL's memory. */
#include "plugin/pipeline/assemble_impl.h"
#include "common/clock.h"
#include "common/config.h"
#include "plugin/output/names.h"
#include "plugin/capture/ring.h"
#include <stdlib.h>
#include <string.h>


/* ---- small tables ---- */
static inline uint32_t hash_id(uint64_t id, uint32_t cap) {
  return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}
static ev **slot_of(cl_asm *a, uint64_t id) {
  uint32_t i = hash_id(id, a->cap);
  while (a->tab[i] && a->tab[i]->id != id) i = (i + 1) & (a->cap - 1);
  return &a->tab[i];
}
static ev *lookup(cl_asm *a, uint64_t id) { return id ? *slot_of(a, id) : NULL; }
static int grow(cl_asm *a) {
  uint32_t ncap = a->cap * 2;
  ev **nt = calloc(ncap, sizeof *nt);
  if (!nt) return -1;
  ev **old = a->tab;
  uint32_t ocap = a->cap;
  a->tab = nt;
  a->cap = ncap;
  for (uint32_t i = 0; i < ocap; i++) if (old[i]) *slot_of(a, old[i]->id) = old[i];
  free(old);
  return 0;
}
static void remove_ev(cl_asm *a, ev *e) {
  uint32_t i = hash_id(e->id, a->cap);
  while (a->tab[i] != e) i = (i + 1) & (a->cap - 1);
  a->tab[i] = NULL;
  for (uint32_t j = (i + 1) & (a->cap - 1); a->tab[j]; j = (j + 1) & (a->cap - 1)) {
    ev *m = a->tab[j];          /* backward-shift deletion keeps probe chains intact */
    a->tab[j] = NULL;
    *slot_of(a, m->id) = m;
  }
  a->n--;
  e->next_free = a->free_list;
  a->free_list = e;
}
static ev *alloc_ev(cl_asm *a) {
  ev *e = a->free_list;
  if (e) { a->free_list = e->next_free; return e; }
  return malloc(sizeof(ev));
}

comm_cache *cl_asm_comm(cl_asm *a, uint32_t serial) {
  if (!serial) return NULL;
  if (serial > a->ncomms) {
    uint32_t nc = a->ncomms ? a->ncomms : 16;
    while (nc < serial) nc *= 2;
    comm_cache *n = realloc(a->comms, nc * sizeof *n);
    if (!n) return NULL;
    memset(n + a->ncomms, 0, (nc - a->ncomms) * sizeof *n);
    a->comms = n;
    a->ncomms = nc;
  }
  comm_cache *c = &a->comms[serial - 1];
  if (!c->loaded || !c->info.d.hash) {
    if (cl_comm_lookup(serial, &c->info) != 0) return NULL;
    c->loaded = 1;
    if (c->info.d.name[0]) snprintf(c->label, sizeof c->label, "comm %s", c->info.d.name);
    else if (c->info.d.hash) snprintf(c->label, sizeof c->label, "comm %08llx", (unsigned long long)(c->info.d.hash >> 32));
    else snprintf(c->label, sizeof c->label, "comm #%u", serial);
  }
  return c;
}

/* ---- GPU timer -> host clock (gpu_clock.c), one clock per device ---- */
cl_gpu_clock *cl_asm_clock(cl_asm *a, uint32_t comm) {
  comm_cache *c = cl_asm_comm(a, comm);
  int dev = c ? c->info.cuda_dev : -1;
  return &a->off[dev >= 0 && dev < MAX_DEV - 1 ? dev : MAX_DEV - 1];
}
static uint32_t comm_dev(cl_asm *a, uint32_t comm) {
  comm_cache *cc = cl_asm_comm(a, comm);
  return cc && cc->info.cuda_dev >= 0 ? (uint32_t)cc->info.cuda_dev : 0;
}

/* The collective's own span from its children: KernelCh (GPU timer), else proxy ops. */
static const char *child_span(const ev *c, uint64_t *s, uint64_t *e) {
  if (c->gmax > c->gmin && c->gmin) { *s = c->gmin; *e = c->gmax; return "kernel_ch"; }
  if (c->pmax > c->pmin && c->pmin) { *s = c->pmin; *e = c->pmax; return "proxy"; }
  return NULL;
}

/* The collective's kernel from CUPTI: its launch group's kernel ("cupti"), or, for a CUDA-graph
 * replay, the replayed NCCL kernel its own span overlaps ("cupti_graph"). NULL if none yet. */
static const char *cupti_span(cl_asm *a, ev *c, uint64_t *s, uint64_t *e, uint32_t *dev) {
  if (!a->gj) return NULL;
  if (cl_gj_span(a->gj, c->api_group, c->comm, s, e, dev)) return "cupti";
  uint32_t d = comm_dev(a, c->comm);
  uint64_t cs, ce;
  if (cl_gj_graph_seen(a->gj, d) && child_span(c, &cs, &ce) && cl_gj_graph_claim(a->gj, d, cs, ce, s, e)) {
    *dev = d;
    return "cupti_graph";
  }
  return NULL;
}

/* Whether a collective should wait for a CUPTI kernel record: CUPTI covered its time and it
 * has a launch group, or CUDA-graph replays run on its device. */
static int cupti_expected(cl_asm *a, const ev *c) {
  return a->gj && cl_gj_covered(a->gj, c->stop) &&
         (c->api_group || cl_gj_graph_seen(a->gj, comm_dev(a, c->comm)));
}

/* The collective is done: choose its GPU span (CUPTI kernel, else KernelCh, else proxy ops).
 * With CUPTI the span waits for its exposure (kept in the table, `awaiting`); returns 1 when
 * the event can be freed now. */
static int finish_coll(cl_asm *a, ev *c) {
  uint64_t s = 0, e = 0;
  uint32_t dev = 0;
  const char *src = cupti_span(a, c, &s, &e, &dev);
  if (!src) { src = child_span(c, &s, &e); dev = comm_dev(a, c->comm); }
  if (src && a->gj) {
    comm_cache *cc = cl_asm_comm(a, c->comm);
    c->gs = s; c->ge = e; c->src = src; c->awaiting = 1;
    cl_gj_expose(a->gj, c->id, dev, cc ? cc->info.d.hash : 0, s, e);
    return 0;
  }
  cl_slice_coll_gpu(a, c, s, e, src, -1);
  return 1;
}

static void on_exposed(void *arg, const cl_expo_result *r) {
  cl_asm *a = arg;
  uint64_t tag = r->span.tag;
  if (tag & CL_GJ_TAG_GRAPH) {   /* a replayed NCCL kernel no collective claimed */
    if (!r->incomplete)
      cl_asm_top_add(a, cl_gj_graph_name(tag), 0, 0, r->exposed_ns, r->span.end_ns - r->span.start_ns);
    return;
  }
  ev *c = lookup(a, tag);
  if (!c || !c->awaiting) return;
  cl_slice_coll_gpu(a, c, c->gs, c->ge, c->src, r->incomplete ? -1 : (int64_t)r->exposed_ns);
  remove_ev(a, c);
}

static int coll_like(const ev *e) { return e->etype == CL_EV_COLL || e->etype == CL_EV_P2P; }
static unsigned expected_kch(const ev *c) {
  if (!(cl_cfg.mask & (1u << CL_EV_KERNEL_CH))) return 0;
  return c->etype == CL_EV_COLL ? c->p.coll.nchannels : c->p.p2p.nchannels;
}
static void maybe_finish(cl_asm *a, ev *c, uint64_t now, int force) {
  if (c->awaiting) return;
  if (!force) {
    if (!c->stopped || c->open_children) return;
    unsigned exp = expected_kch(c);
    uint64_t last = c->last_child > c->stop ? c->last_child : c->stop;
    uint64_t s, e;
    uint32_t dev;
    int cupti_pending = cupti_expected(a, c) && !cupti_span(a, c, &s, &e, &dev);
    if (cupti_pending) { if (now - c->stop < CUPTI_WAIT_NS) return; }
    else if (exp && c->kch_done < exp) {
      /* KernelCh starts when the GPU reaches the work, which can be long after the enqueue
       * (a long kernel ahead in the stream): wait for every channel, up to CHILD_WAIT_NS */
      if (now - c->stop < CHILD_WAIT_NS) return;
    } else if (!exp && now - last < GRACE_NS) return;
  }
  if (finish_coll(a, c)) remove_ev(a, c);
}

/* OS thread id of a thread serial (for matching CUPTI's launch records). */
int cl_asm_os_tid(cl_asm *a, uint32_t serial) {
  if (serial >= a->ntids) {
    uint32_t nc = a->ntids ? a->ntids : 64;
    while (nc <= serial) nc *= 2;
    int *n = realloc(a->tids, nc * sizeof *n);
    if (!n) return -1;
    memset(n + a->ntids, 0, (nc - a->ntids) * sizeof *n);
    a->tids = n;
    a->ntids = nc;
  }
  if (!a->tids[serial]) a->tids[serial] = cl_ring_os_tid(serial);
  return a->tids[serial];
}

/* ---- feeding ---- */
static void adopt_orphans(cl_asm *a, ev *parent, uint64_t now, int final);
static int is_child_type(unsigned t) {
  return t == CL_EV_KERNEL_CH || t == CL_EV_PROXY_OP || t == CL_EV_PROXY_STEP || t == CL_EV_NET_PLUGIN;
}

/* A child whose parent has not been seen yet (the parent's thread was drained later) keeps
 * the parent's id and is linked again at its stop; it just does not hold the parent open. */
static void feed_start(cl_asm *a, const cl_start_rec *r) {
  const cl_rec *h = &r->hdr;
  ev *parent = NULL;
  uint64_t pid = (h->flags & CL_F_FOREIGN) ? 0 : h->arg;
  if (pid && is_child_type(h->etype)) {
    parent = lookup(a, pid);
    if (!parent) a->stats.orphans++;
  }
  if (a->n >= MAX_OPEN) { a->stats.writer_drops++; return; }
  if (a->n * 2 >= a->cap && grow(a) != 0) { a->stats.writer_drops++; return; }
  ev *e = alloc_ev(a);
  if (!e) { a->stats.writer_drops++; return; }
  memset(e, 0, offsetof(ev, p));
  e->id = h->id;
  e->parent = pid;                      /* kept for every type: KernelLaunch needs its group */
  e->registered = parent != NULL;
  e->start = h->ts;
  e->comm = h->aux;
  e->thread = CL_ID_SERIAL(h->id);
  e->etype = h->etype;
  e->flags = h->flags;
  size_t plen = (size_t)(h->nslots - 1) * CL_SLOT_BYTES;
  if (plen > sizeof e->p) plen = sizeof e->p;
  memcpy(&e->p, &r->p, plen);
  e->open_children = e->kch_done = e->nchild = 0;
  e->gmin = e->gmax = e->pmin = e->pmax = e->last_child = e->bytes = 0;
  e->tail_ch = -1;
  e->enq_tid = 0;
  e->enq_ts = 0;
  *slot_of(a, e->id) = e;
  a->n++;
 
  a->stats.starts++;
  if (h->flags & CL_F_FOREIGN) a->stats.foreign++;
  if (e->comm && (e->etype == CL_EV_COLL || e->etype == CL_EV_P2P)) {
    uint64_t hash = e->etype == CL_EV_COLL ? e->p.coll.comm_hash : e->p.p2p.comm_hash;
    comm_cache *c = cl_asm_comm(a, e->comm);
    if (hash && c && !c->info.d.hash) { cl_comm_learn(e->comm, hash, e->p.rank); c->loaded = 0; }
  }
  if (parent) { parent->open_children++; parent->nchild++; parent->last_child = h->ts; }
  e->api_group = 0;
  e->awaiting = 0;
  if ((e->etype == CL_EV_COLL_API || e->etype == CL_EV_P2P_API) && pid)
    a->links[h->id % NAPI] = (api_link){h->id, pid};
  if ((e->etype == CL_EV_COLL || e->etype == CL_EV_P2P) && pid) {
    const api_link *l = &a->links[pid % NAPI];
    if (l->api == pid) e->api_group = l->group;   /* v5+: parent is the API event */
  }
  if (a->norph && (coll_like(e) || e->etype == CL_EV_PROXY_OP || e->etype == CL_EV_PROXY_STEP))
    adopt_orphans(a, e, h->ts, 0);
}

/* A stopped child event with its parent (NULL if it has none or it is gone for good). */
static void finish_child(cl_asm *a, ev *e, ev *parent) {
  uint64_t ts = e->stop;
  switch (e->etype) {
  case CL_EV_KERNEL_CH: {
    uint64_t stop_pt, stop_obs;
    cl_slice_kch_stop_timer(e, &stop_pt, &stop_obs);
    cl_gpu_clock *o = cl_asm_clock(a, e->comm);
    cl_gpu_clock_sample(o, e->p.kernel_ch.ptimer, e->start);
    cl_gpu_clock_sample(o, stop_pt, stop_obs);
    if (!cl_gpu_clock_ready(o)) {                  /* drawn once the device is calibrated */
      /* it keeps its collective open until drawn, even if it started before the collective's
       * start was read (unregistered): finishing the collective first would cut it off */
      if (parent && !e->registered) { parent->open_children++; e->registered = 1; }
      if (a->nheld == a->cap_held) {
        uint32_t nc = a->cap_held ? a->cap_held * 2 : 256;
        ev **n = realloc(a->held, nc * sizeof *n);
        if (n) { a->held = n; a->cap_held = nc; }
      }
      if (a->nheld < a->cap_held) { a->held[a->nheld++] = e; return; }
    }
    cl_slice_kernel_ch(a, e, parent);
    if (parent) parent->kch_done++;
    break;
  }
  case CL_EV_PROXY_OP: cl_slice_proxy_op(a, e, parent); break;
  case CL_EV_PROXY_STEP: cl_slice_proxy_step(a, e, parent); break;
  default: cl_slice_other(a, e); break;
  }
  if (parent) {
    if (e->registered && parent->open_children) parent->open_children--;
    parent->last_child = ts;
    if (coll_like(parent)) maybe_finish(a, parent, ts, 0);
  }
  remove_ev(a, e);
}

#define ORPHAN_WAIT_NS 1000000000ull

static void feed_stop(cl_asm *a, ev *e, uint64_t ts) {
  e->stop = ts < e->start ? e->start : ts;
  e->stopped = 1;
  switch (e->etype) {
  case CL_EV_KERNEL_LAUNCH:
    if (a->gj && e->parent) cl_gj_kernel_launch(a->gj, cl_asm_os_tid(a, e->thread), e->start, e->stop, e->parent, e->comm);
    cl_slice_api(a, e); break;
  case CL_EV_GROUP_API: case CL_EV_COLL_API: case CL_EV_P2P_API:
    cl_slice_api(a, e); break;
  case CL_EV_GROUP: cl_slice_enqueue(a, e); break;
  case CL_EV_COLL: case CL_EV_P2P:
    cl_slice_enqueue(a, e);
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
    ev *parent = e->parent ? lookup(a, e->parent) : NULL;
    if (!parent && e->parent && is_child_type(e->etype)) {
      /* Its parent's thread may simply not have been read yet: wait for the parent's start. */
      if (a->norph == a->cap_orph) {
        uint32_t nc = a->cap_orph ? a->cap_orph * 2 : 64;
        ev **n = realloc(a->orph, nc * sizeof *n);
        if (n) { a->orph = n; a->cap_orph = nc; }
      }
      if (a->norph < a->cap_orph) { a->orph[a->norph++] = e; return; }
    }
    finish_child(a, e, parent);
    return;
  }
  }
  remove_ev(a, e);
}

/* A new event may be the parent that parked children were waiting for; or orphans expire. */
static void adopt_orphans(cl_asm *a, ev *parent, uint64_t now, int final) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < a->norph; i++) {
    ev *o = a->orph[i];
    if (parent && o->parent == parent->id) finish_child(a, o, parent);
    else if (!parent && (final || now - o->stop > ORPHAN_WAIT_NS)) finish_child(a, o, NULL);
    else a->orph[k++] = o;
  }
  a->norph = k;
}

void cl_asm_feed(cl_asm *a, const cl_rec *r) {
  a->stats.records++;
  if (r->kind == CL_REC_START) { feed_start(a, (const cl_start_rec *)r); return; }
  ev *e = lookup(a, r->id);
  if (!e || e->stopped) {                 /* re-stopped (stale handle), or its start was dropped */
    a->stats.stale++;
    return;
  }
  if (r->kind == CL_REC_STOP) {
    feed_stop(a, e, r->ts);
  } else if (r->kind == CL_REC_STATE) {
    if (e->nst < sizeof e->st / sizeof e->st[0]) e->st[e->nst++] = (ev_state){(uint8_t)r->aux, r->ts, r->arg};
    else e->st[e->nst - 1] = (ev_state){(uint8_t)r->aux, r->ts, r->arg};
  }
}

/* Draws held KernelCh events whose device is calibrated (all of them when final). */
static void release_held(cl_asm *a, uint64_t now, int final) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < a->nheld; i++) {
    ev *e = a->held[i];
    if (!final && !cl_gpu_clock_ready(cl_asm_clock(a, e->comm))) { a->held[k++] = e; continue; }
    ev *parent = e->parent ? lookup(a, e->parent) : NULL;
    cl_slice_kernel_ch(a, e, parent);
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
  release_held(a, now, final);
  while (a->pend_head != a->pend_tail) {
    uint64_t id = a->pend[a->pend_head % a->pend_cap];
    ev *c = lookup(a, id);
    if (c && !c->awaiting && !final) {
      uint64_t last = c->last_child > c->stop ? c->last_child : c->stop;
      uint64_t wait = cupti_expected(a, c) ? CUPTI_WAIT_NS : GRACE_NS;
      /* children still open (a KernelCh held for clock calibration, a slow proxy op) keep it,
       * up to CHILD_WAIT_NS: finishing now would cut them off their collective */
      unsigned exp = expected_kch(c);
      int children_open = (c->open_children || (exp && c->kch_done < exp)) && now - c->stop < CHILD_WAIT_NS;
      if (now - last < wait || children_open) {
        maybe_finish(a, c, now, 0);           /* its CUPTI span may have arrived */
        if (lookup(a, id) == c && !c->awaiting) break;
      }
    }
    a->pend_head++;
    if (c && !c->awaiting) maybe_finish(a, c, now, 1);
  }
  if (final) {                              /* whatever never stopped: count it, keep nothing */
    for (uint32_t i = 0; i < a->cap; i++) {
      ev *e = a->tab[i];
      if (!e) continue;
      if (coll_like(e) && e->stopped && !e->awaiting) { maybe_finish(a, e, now, 1); if (a->tab[i] != e) i--; continue; }
    }
  }
}

cl_asm *cl_asm_new(cl_ct *ct, cl_summary *sum, cl_gj *gj) {
  cl_asm *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->ct = ct;
  a->sum = sum;
  a->gj = gj;
  if (gj) cl_gj_on_exposed(gj, on_exposed, a);
  a->cap = 1 << 12;
  a->tab = calloc(a->cap, sizeof *a->tab);
  if (!a->tab) { free(a); return NULL; }
  return a;
}

void cl_asm_free(cl_asm *a) {
  if (!a) return;
  for (uint32_t i = 0; i < a->cap; i++) free(a->tab[i]);
  for (ev *e = a->free_list; e;) { ev *n = e->next_free; free(e); e = n; }
  free(a->tab); free(a->comms); free(a->pend); free(a->held); free(a->tids); free(a->orph);
  free(a);
}

void cl_asm_get_stats(const cl_asm *a, cl_asm_stats *s) { *s = a->stats; s->open_now = a->n; }

void cl_asm_offsets_json(const cl_asm *a, cl_sb *b) {
  sb_puts(b, "[");
  int first = 1;
  for (int d = 0; d < MAX_DEV; d++) {
    const cl_gpu_clock *o = &a->off[d];
    if (!o->samples && !o->implausible) continue;
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

void cl_asm_exposure_json(cl_asm *a, cl_sb *b) {
  if (!a->gj) { sb_puts(b, "null"); return; }
  cl_gj_counts n;
  cl_gj_totals(a->gj, &n);
  sb_printf(b, "{\"comm_ns\":%llu,\"exposed_ns\":%llu,\"overlap_ppm\":%u,\"spans\":%llu,"
            "\"nccl_kernels\":%llu,\"compute_kernels\":%llu,\"classified_by_name\":%llu,"
            "\"launches_nccl\":%llu,\"launches_other\":%llu,\"graph_kernels\":%llu,"
            "\"graph_kernels_joined\":%llu,\"cupti_covered_ns\":%llu,\"comms\":[",
            (unsigned long long)n.t.comm_ns, (unsigned long long)n.t.exposed_ns, cl_expo_overlap_ppm(&n.t),
            (unsigned long long)n.t.spans, (unsigned long long)n.nccl_kernels,
            (unsigned long long)n.compute_kernels, (unsigned long long)n.by_name,
            (unsigned long long)n.launches_nccl, (unsigned long long)n.launches_other,
            (unsigned long long)n.graph_kernels, (unsigned long long)n.graph_claimed,
            (unsigned long long)cl_gj_covered_ns(a->gj, cl_now()));
  cl_expo_comm_totals ct[CL_EXPO_MAX_COMMS + 1];
  size_t nct = cl_gj_comms(a->gj, ct, sizeof ct / sizeof ct[0]);
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
  for (int i = 0; i < NTOP && a->top[i].exposed; i++) {
    sb_printf(b, "%s{\"func\":", i ? "," : "");
    sb_jstr(b, a->top[i].func);
    sb_printf(b, ",\"seq\":%llu,\"comm\":\"", (unsigned long long)a->top[i].seq);
    sb_hex(b, a->top[i].comm);
    sb_printf(b, "\",\"exposed_ns\":%llu,\"dur_ns\":%llu}", (unsigned long long)a->top[i].exposed,
              (unsigned long long)a->top[i].dur);
  }
  uint64_t sn, sx, sc, wid, wx;
  cl_gj_steps(a->gj, &sn, &sx, &sc, &wid, &wx);
  sb_printf(b, "],\"steps\":{\"count\":%llu,\"exposed_ns_mean\":%llu,\"comm_ns_mean\":%llu,"
            "\"worst_step\":%llu,\"worst_exposed_ns\":%llu}}",
            (unsigned long long)sn, (unsigned long long)(sn ? sx / sn : 0), (unsigned long long)(sn ? sc / sn : 0),
            (unsigned long long)wid, (unsigned long long)wx);
}
