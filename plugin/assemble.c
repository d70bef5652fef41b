/* assemble.c: see assemble.h. Owns the table of open events (by id), the per-thread
 * watermarks that tell "start not seen yet" from "already stopped", the GPU clock offsets,
 * and the rules that turn events into trace slices. Never touches NCCL's memory. */
#include "assemble.h"
#include "config.h"
#include "core.h"
#include "names.h"
#include "gpu_join.h"
#include "gpu_clock.h"
#include "clock.h"
#include "ring.h"
#include <stdlib.h>
#include <string.h>

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

static comm_cache *comm_of(cl_asm *a, uint32_t serial) {
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
static cl_gpu_clock *off_for(cl_asm *a, uint32_t comm) {
  comm_cache *c = comm_of(a, comm);
  int dev = c ? c->info.cuda_dev : -1;
  return &a->off[dev >= 0 && dev < MAX_DEV - 1 ? dev : MAX_DEV - 1];
}
/* ---- emission helpers ---- */
static void common_args(cl_asm *a, cl_sb *b, int *first, uint32_t comm, uint64_t fallback_hash) {
  comm_cache *c = comm_of(a, comm);
  sb_key(b, first, "comm");
  sb_puts(b, "\"");
  uint64_t h = c && c->info.d.hash ? c->info.d.hash : fallback_hash;
  sb_hex(b, h);
  sb_puts(b, "\"");
  if (c) {
    sb_key(b, first, "comm_name"); sb_jstr(b, c->info.d.name);
    sb_key(b, first, "rank"); sb_i64(b, c->info.d.rank);
    sb_key(b, first, "nranks"); sb_i64(b, c->info.d.nranks);
  }
}
static const char *label(cl_asm *a, uint32_t comm) {
  comm_cache *c = comm_of(a, comm);
  return c ? c->label : "comm ?";
}
enum { K_API = 1, K_APIGROUP, K_GROUPS, K_ENQ, K_GPU, K_CH, K_PSEND, K_PRECV, K_SSEND, K_SRECV, K_NET, K_CTRL, K_CE };
static uint64_t fam_key(int kind, uint32_t comm, uint32_t ch) {
  return ((uint64_t)kind << 56) | ((uint64_t)comm << 16) | ch;
}
static int fam_sort(int kind, uint32_t comm, uint32_t ch) {
  if (kind == K_API || kind == K_APIGROUP) return kind;
  return 100 + (int)comm * 1000 + (kind - K_GROUPS) * 70 + (int)ch;
}
static uint32_t lane(cl_asm *a, int kind, uint32_t comm, uint32_t ch, const char *name, uint64_t s, uint64_t e) {
  return ct_lane(a->ct, fam_key(kind, comm, ch), name, fam_sort(kind, comm, ch), s, e);
}

static const char *coll_func(const ev *c) {
  return c->etype == CL_EV_COLL ? c->p.coll.func : c->etype == CL_EV_P2P ? c->p.p2p.func : NULL;
}

static int os_tid(cl_asm *a, uint32_t serial);
/* ---- per-type emission at stop ---- */
static void emit_api(cl_asm *a, ev *e) {
  char fam[64], name[64];
  int grp = e->etype == CL_EV_GROUP_API;
  int tid_os = os_tid(a, e->thread);
  snprintf(fam, sizeof fam, grp ? "NCCL API groups (tid %d)" : "NCCL API (tid %d)", tid_os);
  uint32_t tid = ct_lane(a->ct, fam_key(grp ? K_APIGROUP : K_API, 0, e->thread), fam,
                         grp ? K_APIGROUP : K_API, e->start, e->stop);
  if (grp) snprintf(name, sizeof name, "ncclGroup");
  else if (e->etype == CL_EV_KERNEL_LAUNCH) snprintf(name, sizeof name, "KernelLaunch");
  else snprintf(name, sizeof name, "nccl%s", e->p.coll_api.func ? e->p.coll_api.func : "?");
  int first = ct_slice_begin(a->ct, tid, name, "api", e->start, e->stop - e->start);
  cl_sb *b = ct_body(a->ct);
  common_args(a, b, &first, e->comm, 0);
  if (e->etype == CL_EV_COLL_API || e->etype == CL_EV_P2P_API) {
    sb_key(b, &first, "count"); sb_u64(b, e->p.coll_api.count);
    sb_key(b, &first, "datatype"); sb_jstr(b, e->p.coll_api.datatype);
    if (e->etype == CL_EV_COLL_API) { sb_key(b, &first, "root"); sb_i64(b, e->p.coll_api.root); }
    sb_key(b, &first, "stream"); sb_puts(b, "\""); sb_hex(b, e->p.coll_api.stream); sb_puts(b, "\"");
    sb_key(b, &first, "graph_captured"); sb_puts(b, e->p.coll_api.graph_captured ? "true" : "false");
  } else if (e->etype == CL_EV_KERNEL_LAUNCH) {
    sb_key(b, &first, "stream"); sb_puts(b, "\""); sb_hex(b, e->p.kernel_launch.stream); sb_puts(b, "\"");
  } else {
    sb_key(b, &first, "depth"); sb_i64(b, e->p.group_api.depth);
    sb_key(b, &first, "graph_captured"); sb_puts(b, e->p.group_api.graph_captured ? "true" : "false");
  }
  ct_slice_end(a->ct);
}

static void emit_enqueue(cl_asm *a, ev *e) {
  char fam[96];
  const char *lab = label(a, e->comm);
  cl_sb *b = ct_body(a->ct);
  if (e->etype == CL_EV_GROUP) {
    snprintf(fam, sizeof fam, "%s: groups", lab);
    uint32_t tid = lane(a, K_GROUPS, e->comm, 0, fam, e->start, e->stop);
    int first = ct_slice_begin(a->ct, tid, "Group", "group", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, 0);
    ct_slice_end(a->ct);
    return;
  }
  snprintf(fam, sizeof fam, "%s: enqueue", lab);
  uint32_t tid = lane(a, K_ENQ, e->comm, 0, fam, e->start, e->stop);
  e->enq_tid = tid;
  e->enq_ts = e->start;
  comm_cache *c = comm_of(a, e->comm);
  int nranks = c ? c->info.d.nranks : -1;
  if (e->etype == CL_EV_COLL) {
    const cl_coll *k = &e->p.coll;
    int first = ct_slice_begin(a->ct, tid, k->func ? k->func : "?", "coll", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, k->comm_hash);
    sb_key(b, &first, "seq"); sb_u64(b, k->seq);
    sb_key(b, &first, "count"); sb_u64(b, k->count);
    sb_key(b, &first, "datatype"); sb_jstr(b, k->datatype);
    sb_key(b, &first, "root"); sb_i64(b, k->root);
    sb_key(b, &first, "algo"); sb_jstr(b, k->algo);
    sb_key(b, &first, "proto"); sb_jstr(b, k->proto);
    sb_key(b, &first, "nchannels"); sb_u64(b, k->nchannels);
    sb_key(b, &first, "nwarps"); sb_u64(b, k->nwarps);
    sb_key(b, &first, "bytes"); sb_u64(b, cl_coll_bytes(k->func, k->count, k->datatype, nranks));
    sb_key(b, &first, "Collective name"); sb_jstr(b, k->func);
    sb_key(b, &first, "In msg nelems"); sb_u64(b, k->count);
    sb_key(b, &first, "Group size"); sb_i64(b, nranks);
    sb_key(b, &first, "Seq"); sb_u64(b, k->seq);
  } else if (e->etype == CL_EV_P2P) {
    const cl_p2p *k = &e->p.p2p;
    int first = ct_slice_begin(a->ct, tid, k->func ? k->func : "?", "p2p", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, k->comm_hash);
    sb_key(b, &first, "peer"); sb_i64(b, k->peer);
    sb_key(b, &first, "count"); sb_u64(b, k->count);
    sb_key(b, &first, "datatype"); sb_jstr(b, k->datatype);
    sb_key(b, &first, "nchannels"); sb_u64(b, k->nchannels);
    sb_key(b, &first, "bytes"); sb_u64(b, (uint64_t)k->count * (uint64_t)cl_datatype_size(k->datatype));
  }
  ct_slice_end(a->ct);
}

/* Draws a collective's GPU span; exposed_ns < 0 when exposure is not known (no CUPTI). */
static void emit_coll_gpu(cl_asm *a, ev *c, uint64_t s, uint64_t e, const char *src, int64_t exposed_ns) {
  comm_cache *cc = comm_of(a, c->comm);
  int nranks = cc ? cc->info.d.nranks : -1;
  const char *func = coll_func(c);
  uint64_t bytes = c->etype == CL_EV_COLL
                   ? cl_coll_bytes(func, c->p.coll.count, c->p.coll.datatype, nranks)
                   : (uint64_t)c->p.p2p.count * (uint64_t)cl_datatype_size(c->p.p2p.datatype);
  a->stats.colls_done++;
  cl_summary_add(a->sum, func, bytes, c->etype == CL_EV_COLL ? nranks : 2, src ? e - s : 0);
  if (!src) return;
  a->stats.colls_timed++;
  char fam[96];
  snprintf(fam, sizeof fam, "%s: GPU", label(a, c->comm));
  uint32_t tid = lane(a, K_GPU, c->comm, 0, fam, s, e);
  cl_sb *b = ct_body(a->ct);
  int first = ct_slice_begin(a->ct, tid, func ? func : "?", "coll_gpu", s, e - s);
  common_args(a, b, &first, c->comm, c->etype == CL_EV_COLL ? c->p.coll.comm_hash : c->p.p2p.comm_hash);
  if (c->etype == CL_EV_COLL) {
    sb_key(b, &first, "seq"); sb_u64(b, c->p.coll.seq);
    sb_key(b, &first, "algo"); sb_jstr(b, c->p.coll.algo);
    sb_key(b, &first, "proto"); sb_jstr(b, c->p.coll.proto);
    sb_key(b, &first, "nchannels"); sb_u64(b, c->p.coll.nchannels);
  } else {
    sb_key(b, &first, "p2p_peer"); sb_i64(b, c->p.p2p.peer);
    sb_key(b, &first, "nchannels"); sb_u64(b, c->p.p2p.nchannels);
  }
  sb_key(b, &first, "bytes"); sb_u64(b, bytes);
  sb_key(b, &first, "source"); sb_jstr(b, src);
  if (c->tail_ch >= 0) { sb_key(b, &first, "tail_channel"); sb_i64(b, c->tail_ch); }
  if (exposed_ns >= 0) { sb_key(b, &first, "exposed_ns"); sb_i64(b, exposed_ns); }
  ct_slice_end(a->ct);
  if (c->enq_tid) ct_flow(a->ct, c->id, c->enq_tid, c->enq_ts, tid, s);
  if (exposed_ns > 0 && c->etype == CL_EV_COLL) {   /* the most exposed collectives, for the summary */
    int k = NTOP - 1;
    if ((uint64_t)exposed_ns > a->top[k].exposed) {
      while (k > 0 && a->top[k - 1].exposed < (uint64_t)exposed_ns) { a->top[k] = a->top[k - 1]; k--; }
      comm_cache *c2 = comm_of(a, c->comm);
      a->top[k] = (top_ent){func, c->p.coll.seq, c2 ? c2->info.d.hash : c->p.coll.comm_hash, (uint64_t)exposed_ns, e - s};
    }
  }
}

/* The collective is done: choose its GPU span (CUPTI kernel, else KernelCh, else proxy ops).
 * With CUPTI the span waits for its exposure (kept in the table, `awaiting`); returns 1 when
 * the event can be freed now. */
static int finish_coll(cl_asm *a, ev *c) {
  uint64_t s = 0, e = 0;
  uint32_t dev = 0;
  const char *src = NULL;
  if (a->gj && cl_gj_span(a->gj, c->api_group, c->comm, &s, &e, &dev)) src = "cupti";
  else if (c->gmax > c->gmin && c->gmin) { s = c->gmin; e = c->gmax; src = "kernel_ch"; }
  else if (c->pmax > c->pmin && c->pmin) { s = c->pmin; e = c->pmax; src = "proxy"; }
  if (src && a->gj) {
    if (src[0] != 'c') { comm_cache *cc = comm_of(a, c->comm); dev = cc && cc->info.cuda_dev >= 0 ? (uint32_t)cc->info.cuda_dev : 0; }
    comm_cache *cc = comm_of(a, c->comm);
    c->gs = s; c->ge = e; c->src = src; c->awaiting = 1;
    cl_gj_expose(a->gj, c->id, dev, cc ? cc->info.d.hash : 0, s, e);
    return 0;
  }
  emit_coll_gpu(a, c, s, e, src, -1);
  return 1;
}

static void on_exposed(void *arg, uint64_t tag, uint64_t exposed_ns, const cl_expo_iv *pieces,
                       size_t npieces, int incomplete) {
  (void)pieces; (void)npieces;
  cl_asm *a = arg;
  ev *c = lookup(a, tag);
  if (!c || !c->awaiting) return;
  emit_coll_gpu(a, c, c->gs, c->ge, c->src, incomplete ? -1 : (int64_t)exposed_ns);
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
    int cupti_pending = a->gj && c->api_group && cl_gj_covered(a->gj, c->stop) &&
                        !cl_gj_span(a->gj, c->api_group, c->comm, &s, &e, &dev);
    if (cupti_pending) { if (now - c->stop < CUPTI_WAIT_NS) return; }
    else if (exp && c->kch_done < exp) {
      /* KernelCh starts when the GPU reaches the work, which can be long after the enqueue
       * (a long kernel ahead in the stream): wait for every channel, up to CHILD_WAIT_NS */
      if (now - c->stop < CHILD_WAIT_NS) return;
    } else if (!exp && now - last < GRACE_NS) return;
  }
  if (finish_coll(a, c)) remove_ev(a, c);
}

static void kch_stop_timer(const ev *e, uint64_t *pt, uint64_t *obs) {
  *pt = 0;
  *obs = e->stop;
  for (int i = 0; i < e->nst; i++)
    if (e->st[i].st == CL_ST_KERNEL_CH_STOP) { *pt = e->st[i].arg; *obs = e->st[i].ts; }
}
static void emit_kernel_ch(cl_asm *a, ev *e, ev *parent) {
  uint64_t stop_pt, stop_obs;
  kch_stop_timer(e, &stop_pt, &stop_obs);
  cl_gpu_clock *o = off_for(a, e->comm);
  uint64_t s = cl_gpu_clock_to_host(o, e->p.kernel_ch.ptimer, e->start);
  uint64_t t = stop_pt ? cl_gpu_clock_to_host(o, stop_pt, stop_obs) : 0;
  int implausible = !s || !t || stop_pt < e->p.kernel_ch.ptimer;
  if (implausible) { s = e->start; t = stop_obs; a->stats.implausible_gpu++; }
  if (parent && !implausible) {
    if (!parent->gmin || s < parent->gmin) parent->gmin = s;
    if (t > parent->gmax) { parent->gmax = t; parent->tail_ch = e->p.kernel_ch.channel; }
  }
  char fam[96], name[32];
  snprintf(fam, sizeof fam, "%s: ch %u GPU", label(a, e->comm), e->p.kernel_ch.channel);
  snprintf(name, sizeof name, "ch %u", e->p.kernel_ch.channel);
  uint32_t tid = lane(a, K_CH, e->comm, e->p.kernel_ch.channel, fam, s, t);
  cl_sb *b = ct_body(a->ct);
  int first = ct_slice_begin(a->ct, tid, name, "kernel_ch", s, t - s);
  common_args(a, b, &first, e->comm, 0);
  sb_key(b, &first, "channel"); sb_u64(b, e->p.kernel_ch.channel);
  if (parent) {
    if (parent->etype == CL_EV_COLL) { sb_key(b, &first, "seq"); sb_u64(b, parent->p.coll.seq); }
    sb_key(b, &first, "func"); sb_jstr(b, coll_func(parent));
  }
  sb_key(b, &first, "gpu_start_ns"); sb_u64(b, e->p.kernel_ch.ptimer);
  sb_key(b, &first, "gpu_stop_ns"); sb_u64(b, stop_pt);
  if (implausible) { sb_key(b, &first, "implausible"); sb_puts(b, "true"); }
  ct_slice_end(a->ct);
}

static void emit_proxy_op(cl_asm *a, ev *e, ev *parent) {
  const cl_proxy_op *op = &e->p.proxy_op;
  if (parent) {
    if (!parent->pmin || e->start < parent->pmin) parent->pmin = e->start;
    if (e->stop > parent->pmax) parent->pmax = e->stop;
  }
  char fam[112];
  snprintf(fam, sizeof fam, "%s: ch %u proxy %s", label(a, e->comm), op->channel, op->is_send ? "send" : "recv");
  uint32_t tid = lane(a, op->is_send ? K_PSEND : K_PRECV, e->comm, op->channel, fam, e->start, e->stop);
  cl_sb *b = ct_body(a->ct);
  int first = ct_slice_begin(a->ct, tid, op->is_send ? "send" : "recv", "proxy_op", e->start, e->stop - e->start);
  common_args(a, b, &first, e->comm, 0);
  sb_key(b, &first, "channel"); sb_u64(b, op->channel);
  sb_key(b, &first, "peer"); sb_i64(b, op->peer);
  sb_key(b, &first, "nsteps"); sb_i64(b, op->nsteps);
  sb_key(b, &first, "chunk_size"); sb_i64(b, op->chunk_size);
  sb_key(b, &first, "bytes"); sb_u64(b, e->bytes);
  if (parent) {
    if (parent->etype == CL_EV_COLL) { sb_key(b, &first, "seq"); sb_u64(b, parent->p.coll.seq); }
    sb_key(b, &first, "func"); sb_jstr(b, coll_func(parent));
  }
  if (e->flags & CL_F_FOREIGN) { sb_key(b, &first, "pxn_pid"); sb_i64(b, op->pid); }
  ct_slice_end(a->ct);
}

static void emit_proxy_step(cl_asm *a, ev *e, ev *op) {
  int send = op ? op->p.proxy_op.is_send : 0;
  unsigned ch = op ? op->p.proxy_op.channel : 0;
  uint64_t ns[CL_ST__MAX + 1] = {0}, bytes = 0;
  for (int i = 0; i < e->nst; i++) {
    uint64_t end = i + 1 < e->nst ? e->st[i + 1].ts : e->stop;
    if (e->st[i].st <= CL_ST__MAX) ns[e->st[i].st] += end - e->st[i].ts;
    if (e->st[i].st == CL_ST_STEP_SEND_WAIT || e->st[i].st == CL_ST_STEP_RECV_FLUSH_WAIT ||
        e->st[i].st == CL_ST_STEP_RECV_WAIT) {
      if (e->st[i].arg && e->st[i].arg < (1ull << 40)) bytes = e->st[i].arg;
    }
  }
  if (op) op->bytes += bytes;
  char fam[112], name[32];
  snprintf(fam, sizeof fam, "%s: ch %u %s steps", label(a, e->comm), ch, send ? "send" : "recv");
  snprintf(name, sizeof name, "step %d", e->p.proxy_step.step);
  uint32_t tid = lane(a, send ? K_SSEND : K_SRECV, e->comm, ch, fam, e->start, e->stop);
  cl_sb *b = ct_body(a->ct);
  int first = ct_slice_begin(a->ct, tid, name, "proxy_step", e->start, e->stop - e->start);
  common_args(a, b, &first, e->comm, 0);
  sb_key(b, &first, "channel"); sb_u64(b, ch);
  if (op) { sb_key(b, &first, "peer"); sb_i64(b, op->p.proxy_op.peer); }
  sb_key(b, &first, "step"); sb_i64(b, e->p.proxy_step.step);
  sb_key(b, &first, "bytes"); sb_u64(b, bytes);
  sb_key(b, &first, "gpu_wait_ns"); sb_u64(b, ns[CL_ST_STEP_SEND_GPU_WAIT]);
  sb_key(b, &first, "peer_wait_ns"); sb_u64(b, ns[CL_ST_STEP_SEND_PEER_WAIT]);
  sb_key(b, &first, "send_wait_ns"); sb_u64(b, ns[CL_ST_STEP_SEND_WAIT]);
  sb_key(b, &first, "recv_wait_ns"); sb_u64(b, ns[CL_ST_STEP_RECV_WAIT]);
  sb_key(b, &first, "flush_wait_ns"); sb_u64(b, ns[CL_ST_STEP_RECV_FLUSH_WAIT]);
  sb_key(b, &first, "recv_gpu_wait_ns"); sb_u64(b, ns[CL_ST_STEP_RECV_GPU_WAIT]);
  ct_slice_end(a->ct);
  for (int i = 0; i < e->nst; i++) {        /* the phases, nested inside the step */
    uint64_t end = i + 1 < e->nst ? e->st[i + 1].ts : e->stop;
    int f2 = ct_slice_begin(a->ct, tid, cl_state_name(e->st[i].st), "proxy_state", e->st[i].ts, end - e->st[i].ts);
    (void)f2;
    ct_slice_end(a->ct);
  }
}

static void emit_other(cl_asm *a, ev *e) {
  char fam[112];
  cl_sb *b = ct_body(a->ct);
  int first;
  switch (e->etype) {
  case CL_EV_PROXY_CTRL: {
    const char *nm = e->nst ? cl_state_name(e->st[0].st) : "ProxyCtrl";
    int appended = -1;
    for (int i = 0; i < e->nst; i++) if (e->st[i].st == CL_ST_CTRL_APPEND_END) appended = (int)(uint32_t)e->st[i].arg;
    snprintf(fam, sizeof fam, "%s: proxy progress", label(a, e->comm));
    uint32_t tid = lane(a, K_CTRL, e->comm, 0, fam, e->start, e->stop);
    first = ct_slice_begin(a->ct, tid, nm, "proxy_ctrl", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, 0);
    if (appended >= 0) { sb_key(b, &first, "appended_ops"); sb_i64(b, appended); }
    ct_slice_end(a->ct);
    break;
  }
  case CL_EV_NET_PLUGIN: {
    uint32_t type = (uint32_t)e->p.net.id & 0xFFFF0000u;
    snprintf(fam, sizeof fam, "%s: net", label(a, e->comm));
    uint32_t tid = lane(a, K_NET, e->comm, 0, fam, e->start, e->stop);
    first = ct_slice_begin(a->ct, tid, type == 0x10000u ? "ib" : type == 0x20000u ? "socket" : "net",
                           "net", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, 0);
    sb_key(b, &first, "plugin_id"); sb_puts(b, "\""); sb_hex(b, (uint64_t)e->p.net.id); sb_puts(b, "\"");
    cl_net_args(b, &first, &e->p.net);
    ct_slice_end(a->ct);
    break;
  }
  case CL_EV_CE_COLL: case CL_EV_CE_SYNC: case CL_EV_CE_BATCH: {
    snprintf(fam, sizeof fam, "%s: copy engine", label(a, e->comm));
    uint32_t tid = lane(a, K_CE, e->comm, 0, fam, e->start, e->stop);
    first = ct_slice_begin(a->ct, tid, cl_event_name(e->etype), "ce", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, 0);
    if (e->etype == CL_EV_CE_COLL) {
      sb_key(b, &first, "func"); sb_jstr(b, e->p.ce_coll.func);
      sb_key(b, &first, "seq"); sb_u64(b, e->p.ce_coll.seq);
      sb_key(b, &first, "count"); sb_u64(b, e->p.ce_coll.count);
      sb_key(b, &first, "datatype"); sb_jstr(b, e->p.ce_coll.datatype);
      sb_key(b, &first, "sync"); sb_jstr(b, e->p.ce_coll.sync_strategy);
      sb_key(b, &first, "batches"); sb_u64(b, e->p.ce_coll.num_batches);
    } else if (e->etype == CL_EV_CE_BATCH) {
      sb_key(b, &first, "ops"); sb_i64(b, e->p.ce_batch.num_ops);
      sb_key(b, &first, "bytes"); sb_u64(b, e->p.ce_batch.total_bytes);
    } else {
      sb_key(b, &first, "nranks"); sb_i64(b, e->p.ce_sync.nranks);
    }
    ct_slice_end(a->ct);
    break;
  }
  default: break;
  }
}

/* OS thread id of a thread serial (for matching CUPTI's launch records). */
static int os_tid(cl_asm *a, uint32_t serial) {
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
    comm_cache *c = comm_of(a, e->comm);
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
    kch_stop_timer(e, &stop_pt, &stop_obs);
    cl_gpu_clock *o = off_for(a, e->comm);
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
    emit_kernel_ch(a, e, parent);
    if (parent) parent->kch_done++;
    break;
  }
  case CL_EV_PROXY_OP: emit_proxy_op(a, e, parent); break;
  case CL_EV_PROXY_STEP: emit_proxy_step(a, e, parent); break;
  default: emit_other(a, e); break;
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
    if (a->gj && e->parent) cl_gj_kernel_launch(a->gj, os_tid(a, e->thread), e->start, e->stop, e->parent, e->comm);
    emit_api(a, e); break;
  case CL_EV_GROUP_API: case CL_EV_COLL_API: case CL_EV_P2P_API:
    emit_api(a, e); break;
  case CL_EV_GROUP: emit_enqueue(a, e); break;
  case CL_EV_COLL: case CL_EV_P2P:
    emit_enqueue(a, e);
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
    if (!final && !cl_gpu_clock_ready(off_for(a, e->comm))) { a->held[k++] = e; continue; }
    ev *parent = e->parent ? lookup(a, e->parent) : NULL;
    emit_kernel_ch(a, e, parent);
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
      uint64_t wait = a->gj && c->api_group && cl_gj_covered(a->gj, c->stop) ? CUPTI_WAIT_NS : GRACE_NS;
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

cl_asm *cl_asm_new(cl_ct *ct, cl_summary *sum, int with_gpu_join) {
  cl_asm *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->ct = ct;
  a->sum = sum;
  if (with_gpu_join) a->gj = cl_gj_new(ct, on_exposed, a);
  a->cap = 1 << 12;
  a->tab = calloc(a->cap, sizeof *a->tab);
  if (!a->tab) { free(a); return NULL; }
  return a;
}

void cl_asm_free(cl_asm *a) {
  if (!a) return;
  for (uint32_t i = 0; i < a->cap; i++) free(a->tab[i]);
  for (ev *e = a->free_list; e;) { ev *n = e->next_free; free(e); e = n; }
  cl_gj_free(a->gj);
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

void cl_asm_gpu_activity(cl_asm *a, const cl_gpu_activity *r) { if (a->gj) cl_gj_activity(a->gj, r); }

void cl_asm_cupti_active(cl_asm *a, int on, uint64_t now) { if (a->gj) cl_gj_set_active(a->gj, on, now); }

void cl_asm_gpu_advance(cl_asm *a, uint64_t now, int final) {
  if (!a->gj) return;
  if (final) {
    cl_asm_tick(a, now, 1);              /* every collective gets its span queued first */
    cl_gj_advance(a->gj, now, 1);
  } else {
    cl_gj_advance(a->gj, now, 0);
  }
}

void cl_asm_exposure_json(cl_asm *a, cl_sb *b) {
  if (!a->gj) { sb_puts(b, "null"); return; }
  cl_expo_totals t;
  uint64_t nk, ck, bn, lm, lo;
  cl_gj_totals(a->gj, &t, &nk, &ck, &bn, &lm, &lo);
  sb_printf(b, "{\"comm_ns\":%llu,\"exposed_ns\":%llu,\"overlap_ppm\":%u,\"spans\":%llu,"
            "\"nccl_kernels\":%llu,\"compute_kernels\":%llu,\"classified_by_name\":%llu,"
            "\"launches_nccl\":%llu,\"launches_other\":%llu,\"cupti_covered_ns\":%llu,\"top\":[",
            (unsigned long long)t.comm_ns, (unsigned long long)t.exposed_ns, cl_expo_overlap_ppm(&t),
            (unsigned long long)t.spans, (unsigned long long)nk, (unsigned long long)ck, (unsigned long long)bn,
            (unsigned long long)lm, (unsigned long long)lo, (unsigned long long)cl_gj_covered_ns(a->gj, cl_now()));
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
