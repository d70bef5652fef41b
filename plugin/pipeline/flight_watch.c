/* flight_watch.c: see flight_watch.h. Two open-addressed tables (collectives and their
 * KernelCh/ProxyOp children, by event id) and one watermark per communicator; nothing here
 * formats or writes. Bounded: a full table leaves the event unfollowed, counted. */
#include "plugin/pipeline/flight_watch.h"
#include "common/hash.h"
#include "plugin/capture/contexts.h"
#include <stdlib.h>
#include <string.h>

#define COLL_CAP 1024u       /* open collectives followed at most (half the table) */
#define KID_CAP 16384u       /* open children followed at most (half the table) */

typedef struct { uint64_t id, parent, pt_start; uint8_t etype, channel; } w_kid;
typedef struct {
  cl_watch_coll c;
  uint64_t pt_min, pt_max, h_min, h_max;   /* KernelCh GPU timers and host times seen */
  int pt_bad;
  uint8_t proxy_open[CL_WATCH_MAX_CH];      /* open ProxyOps per channel */
} w_coll;
typedef struct { int64_t started, done; uint64_t done_start; int used, net; } w_comm;   /* net: a ProxyOp seen */

struct cl_watch {
  w_coll *colls; uint32_t ncolls;
  w_kid *kids; uint32_t nkids;
  w_comm comms[CL_MAX_COMMS + 1];
  int kch_expected;
  uint64_t late_ns;
  int late_episode, late_ready;
  cl_watch_late late;
  uint64_t untracked;
};

cl_watch *cl_watch_new(int kch_expected, uint64_t late_ns) {
  cl_watch *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->colls = calloc(2 * COLL_CAP, sizeof *w->colls);
  w->kids = calloc(2 * KID_CAP, sizeof *w->kids);
  if (!w->colls || !w->kids) { cl_watch_free(w); return NULL; }
  w->kch_expected = kch_expected;
  w->late_ns = late_ns;
  for (uint32_t i = 0; i <= CL_MAX_COMMS; i++) w->comms[i].started = w->comms[i].done = -1;
  return w;
}

void cl_watch_free(cl_watch *w) {
  if (!w) return;
  free(w->colls);
  free(w->kids);
  free(w);
}

/* ---- the two tables: linear probing, backward-shift deletion (ids are never 0) ---- */
static w_coll *coll_slot(cl_watch *w, uint64_t id) {
  uint32_t cap = 2 * COLL_CAP, i = cl_hash_slot(id, cap);
  while (w->colls[i].c.id && w->colls[i].c.id != id) i = (i + 1) & (cap - 1);
  return &w->colls[i];
}
static void coll_del(cl_watch *w, w_coll *e) {
  uint32_t cap = 2 * COLL_CAP, i = (uint32_t)(e - w->colls);
  e->c.id = 0;
  for (uint32_t j = (i + 1) & (cap - 1); w->colls[j].c.id; j = (j + 1) & (cap - 1)) {
    w_coll m = w->colls[j];
    w->colls[j].c.id = 0;
    *coll_slot(w, m.c.id) = m;
  }
  w->ncolls--;
}
static w_kid *kid_slot(cl_watch *w, uint64_t id) {
  uint32_t cap = 2 * KID_CAP, i = cl_hash_slot(id, cap);
  while (w->kids[i].id && w->kids[i].id != id) i = (i + 1) & (cap - 1);
  return &w->kids[i];
}
static void kid_del(cl_watch *w, w_kid *e) {
  uint32_t cap = 2 * KID_CAP, i = (uint32_t)(e - w->kids);
  e->id = 0;
  for (uint32_t j = (i + 1) & (cap - 1); w->kids[j].id; j = (j + 1) & (cap - 1)) {
    w_kid m = w->kids[j];
    w->kids[j].id = 0;
    *kid_slot(w, m.id) = m;
  }
  w->nkids--;
}

static w_comm *comm_of(cl_watch *w, uint32_t serial) {
  return serial && serial <= CL_MAX_COMMS ? &w->comms[serial] : &w->comms[0];
}

/* ---- finishing ---- */
static int finished(const cl_watch_coll *c) {
  if (!c->stopped || c->kids_open) return 0;
  if (c->kch_expected) return __builtin_popcountll(c->ch_done) >= c->kch_expected;
  return c->kids_seen > 0;
}

static void note_late(cl_watch *w, const w_coll *e) {
  if (!w->late_ns) return;
  int timer = !e->pt_bad && e->pt_max > e->pt_min && e->pt_min;
  uint64_t dur = timer ? e->pt_max - e->pt_min : e->h_max > e->h_min ? e->h_max - e->h_min : 0;
  if (!dur && !e->c.ch_done) return;             /* no channel timing: nothing to judge */
  if (dur < w->late_ns) { w->late_episode = 0; return; }
  if (w->late_episode) return;
  w->late_episode = 1;
  w->late_ready = 1;
  w->late = (cl_watch_late){e->c.comm, e->c.seq, dur, e->c.func, timer};
}

static void coll_finish(cl_watch *w, w_coll *e) {
  w_comm *m = comm_of(w, e->c.comm);
  if ((int64_t)e->c.seq > m->done) m->done = (int64_t)e->c.seq;
  if (e->c.start > m->done_start) m->done_start = e->c.start;
  note_late(w, e);
  coll_del(w, e);
}

static void maybe_finish(cl_watch *w, w_coll *e) {
  if (finished(&e->c)) coll_finish(w, e);
}

/* ---- feeding ---- */
static void start_coll(cl_watch *w, const cl_start_rec *r) {
  const cl_rec *h = &r->hdr;
  w_comm *m = comm_of(w, h->aux);
  m->used = 1;
  if ((int64_t)r->p.coll.seq > m->started) m->started = (int64_t)r->p.coll.seq;
  /* left out by the timers' sample on a communicator without network: nothing will say it
   * finished, and a later timed one that finishes settles it (settle) */
  if ((h->flags & CL_F_UNTIMED) && w->kch_expected && !m->net) return;
  if (w->ncolls >= COLL_CAP) { w->untracked++; return; }
  w_coll *e = coll_slot(w, h->id);
  if (e->c.id) return;                           /* the same id twice: keep the first */
  memset(e, 0, sizeof *e);
  e->c.id = h->id;
  e->c.seq = r->p.coll.seq;
  e->c.start = h->ts;
  e->c.comm = h->aux;
  e->c.func = r->p.coll.func;
  e->c.nchannels = r->p.coll.nchannels;
  /* the timers' sample left it out (CL_F_UNTIMED): no KernelCh comes */
  e->c.kch_expected = w->kch_expected && !(h->flags & CL_F_UNTIMED)
                      ? (r->p.coll.nchannels < CL_WATCH_MAX_CH ? r->p.coll.nchannels : CL_WATCH_MAX_CH) : 0;
  w->ncolls++;
}

/* ---- a KernelCh's parts, on its collective ---- */
/* started on channel `ch` at GPU timer `pt` (seen at host time `ts`) */
static void kch_started(w_coll *p, unsigned flags, unsigned ch, uint64_t pt, uint64_t ts) {
  p->c.kids_seen++;
  /* the one channel of its collective recorded (gate.h cl_kch_first): its others never come */
  if ((flags & CL_F_KCH_FIRST) && p->c.kch_expected) p->c.kch_expected = 1;
  p->c.ch_started |= 1ull << ch;
  if (!pt) p->pt_bad = 1;
  else if (!p->pt_min || pt < p->pt_min) p->pt_min = pt;
  if (!p->h_min || ts < p->h_min) p->h_min = ts;
}
/* its stop timer (the KernelChStop state): how far its GPU got */
static void kch_stop_timer(w_coll *p, uint64_t pt_start, uint64_t pt_stop) {
  if (!pt_stop || pt_stop < pt_start) p->pt_bad = 1;
  else if (pt_stop > p->pt_max) p->pt_max = pt_stop;
}
/* stopped, seen at host time `ts` */
static void kch_stopped(w_coll *p, unsigned ch, uint64_t ts) {
  p->c.ch_done |= 1ull << ch;
  if (ts > p->h_max) p->h_max = ts;
}

static void start_kid(cl_watch *w, const cl_start_rec *r) {
  const cl_rec *h = &r->hdr;
  if (h->flags & CL_F_FOREIGN) return;          /* another process's parent (PXN) */
  w_coll *p = coll_slot(w, h->arg);
  if (!p->c.id) return;                          /* not a collective we follow */
  if (h->etype == CL_EV_KERNEL_CH && !w->kch_expected) return;   /* v3: KernelCh never stops */
  if (w->nkids >= KID_CAP) { w->untracked++; return; }
  w_kid *k = kid_slot(w, h->id);
  if (k->id) return;
  unsigned ch = h->etype == CL_EV_KERNEL_CH ? r->p.kernel_ch.channel : r->p.proxy_op.channel;
  *k = (w_kid){h->id, h->arg, h->etype == CL_EV_KERNEL_CH ? r->p.kernel_ch.ptimer : 0, h->etype,
               (uint8_t)(ch < CL_WATCH_MAX_CH ? ch : CL_WATCH_MAX_CH - 1)};
  w->nkids++;
  p->c.kids_open++;
  if (h->etype == CL_EV_KERNEL_CH) {
    kch_started(p, h->flags, k->channel, k->pt_start, h->ts);
  } else {
    p->c.kids_seen++;
    comm_of(w, p->c.comm)->net = 1;
    if (p->proxy_open[k->channel] < UINT8_MAX) p->proxy_open[k->channel]++;
    p->c.proxy_open_ch |= 1ull << k->channel;
  }
}

static void stop_kid(cl_watch *w, w_kid *k, uint64_t ts) {
  w_coll *p = coll_slot(w, k->parent);
  if (p->c.id) {
    if (p->c.kids_open) p->c.kids_open--;
    if (k->etype == CL_EV_KERNEL_CH) {
      kch_stopped(p, k->channel, ts);
    } else if (p->proxy_open[k->channel] && --p->proxy_open[k->channel] == 0) {
      p->c.proxy_open_ch &= ~(1ull << k->channel);
    }
  }
  kid_del(w, k);
  if (p->c.id) maybe_finish(w, p);
}

/* A whole KernelCh in one record (CL_F_SPAN, held back on its thread when only a digest is
 * written): its start and its stop at once on its collective, never in the table of children. */
static void span_kid(cl_watch *w, const cl_rec *r) {
  if ((r->flags & CL_F_FOREIGN) || !w->kch_expected) return;
  w_coll *p = coll_slot(w, r->arg);
  if (!p->c.id) return;
  cl_kch_tail t;
  memcpy(&t, r + 1, sizeof t);
  unsigned ch = t.channel < CL_WATCH_MAX_CH ? t.channel : CL_WATCH_MAX_CH - 1;
  kch_started(p, r->flags, ch, t.ptimer, r->ts);
  if (t.stop_flags & CL_F_STOP_KCH_STATE) kch_stop_timer(p, t.ptimer, t.stop_arg);
  kch_stopped(p, ch, t.stop_ts);
  maybe_finish(w, p);
}

void cl_watch_feed(cl_watch *w, const cl_rec *r) {
  if (r->kind == CL_REC_START) {
    if (r->flags & CL_F_SPAN) { if (r->etype == CL_EV_KERNEL_CH && r->nslots == 2) span_kid(w, r); }
    else if (r->etype == CL_EV_COLL && r->nslots > 1) start_coll(w, (const cl_start_rec *)r);
    else if ((r->etype == CL_EV_KERNEL_CH || r->etype == CL_EV_PROXY_OP) && r->nslots > 1)
      start_kid(w, (const cl_start_rec *)r);
    return;
  }
  int kch_state = r->kind == CL_REC_STATE ? r->aux == CL_ST_KERNEL_CH_STOP
                  : r->kind == CL_REC_STOP && (r->flags & CL_F_STOP_KCH_STATE);
  if (kch_state) {                     /* the channel's stop timer */
    w_kid *k = kid_slot(w, r->id);
    w_coll *p = k->id ? coll_slot(w, k->parent) : NULL;
    if (p && p->c.id) kch_stop_timer(p, k->pt_start, r->arg);
  }
  if (r->kind != CL_REC_STOP) return;
  w_kid *k = kid_slot(w, r->id);
  if (k->id) { stop_kid(w, k, r->ts); return; }
  w_coll *e = coll_slot(w, r->id);
  if (!e->c.id) return;
  e->c.stopped = 1;
  maybe_finish(w, e);
}

/* ---- questions ---- */
/* Drops collectives a later finished one of their communicator has finished. */
static void settle(cl_watch *w) {
  for (uint32_t i = 0; i < 2 * COLL_CAP; i++) {
    w_coll *e = &w->colls[i];
    if (!e->c.id) continue;
    if (e->c.start <= comm_of(w, e->c.comm)->done_start) { coll_del(w, e); i--; }
  }
}

int cl_watch_hung(cl_watch *w, uint64_t now, uint64_t hang_ns, cl_watch_coll *out) {
  settle(w);
  const w_coll *best = NULL;
  for (uint32_t i = 0; i < 2 * COLL_CAP; i++) {
    const w_coll *e = &w->colls[i];
    if (!e->c.id || (!e->c.kch_expected && !e->c.kids_seen)) continue;
    if (now < e->c.start || now - e->c.start < hang_ns) continue;
    if (!best || e->c.start < best->c.start) best = e;
  }
  if (!best) return 0;
  *out = best->c;
  return 1;
}

int cl_watch_take_late(cl_watch *w, cl_watch_late *out) {
  if (!w->late_ready) return 0;
  w->late_ready = 0;
  *out = w->late;
  return 1;
}

static int cmp_start(const void *a, const void *b) {
  const cl_watch_coll *x = *(const cl_watch_coll *const *)a, *y = *(const cl_watch_coll *const *)b;
  return x->start < y->start ? -1 : x->start > y->start;
}

void cl_watch_each(cl_watch *w, cl_watch_fn fn, void *arg) {
  settle(w);
  const cl_watch_coll **v = malloc((w->ncolls + 1) * sizeof *v);
  if (!v) return;
  uint32_t n = 0;
  for (uint32_t i = 0; i < 2 * COLL_CAP; i++) if (w->colls[i].c.id) v[n++] = &w->colls[i].c;
  qsort(v, n, sizeof *v, cmp_start);
  for (uint32_t i = 0; i < n; i++) fn(arg, v[i]);
  free(v);
}

void cl_watch_each_comm(cl_watch *w, cl_watch_comm_fn fn, void *arg) {
  for (uint32_t s = 1; s <= CL_MAX_COMMS; s++)
    if (w->comms[s].used) fn(arg, s, w->comms[s].started, w->comms[s].done);
}

uint64_t cl_watch_untracked(const cl_watch *w) { return w->untracked; }
