/* exposure.c: exposed-communication accounting (see exposure.h for the definitions). Owns
 * sorted sets of disjoint intervals per device; never touches CUPTI, files or the clock, so
 * every rule here is unit-tested on integer timelines. Allocation happens only when a set or
 * queue grows, up to its cap; a failed allocation drops the input and counts it. */
#include "plugin/gpu/exposure.h"
#include "plugin/gpu/ivset.h"
#include "common/grow.h"
#include <stdlib.h>
#include <string.h>

/* ---- the engine ---- */
#define CL_EXPO_MAX_DEVICES 1024

typedef struct { cl_ivset compute; int used; } expo_dev;

struct cl_expo {
  cl_expo_limits lim;
  cl_expo_report_fn fn;
  void *arg;
  expo_dev *devs;
  size_t ndevs;
  cl_expo_span *pend;
  size_t npend, cappend;
  size_t nmeasured;           /* pending spans that are not order-only */
  uint64_t wm;
  int have_wm;
  cl_expo_iv *scratch;
  size_t scratch_cap;
  cl_expo_stats st;
};

cl_expo *cl_expo_new(const cl_expo_limits *limits, cl_expo_report_fn fn, void *arg) {
  cl_expo *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->lim.max_pending = 65536;
  e->lim.max_intervals = 262144;
  e->lim.retain_ns = 2000000000ull;
  if (limits) {
    if (limits->max_pending) e->lim.max_pending = limits->max_pending;
    if (limits->max_intervals) e->lim.max_intervals = limits->max_intervals;
    e->lim.retain_ns = limits->retain_ns;
  }
  e->fn = fn; e->arg = arg;
  return e;
}

void cl_expo_free(cl_expo *e) {
  if (!e) return;
  for (size_t i = 0; i < e->ndevs; i++) cl_iv_free(&e->devs[i].compute);
  free(e->devs); free(e->pend); free(e->scratch); free(e);
}

static expo_dev *get_dev(cl_expo *e, uint32_t device, int create) {
  if (device >= CL_EXPO_MAX_DEVICES) return NULL;
  if (device >= e->ndevs) {
    if (!create) return NULL;
    size_t n = device + 1 < 8 ? 8 : (size_t)device + 1;
    expo_dev *nd = realloc(e->devs, n * sizeof *nd);
    if (!nd) return NULL;
    memset(nd + e->ndevs, 0, (n - e->ndevs) * sizeof *nd);
    e->devs = nd; e->ndevs = n;
  }
  expo_dev *d = &e->devs[device];
  if (!d->used && create) { d->used = 1; d->compute.max = e->lim.max_intervals; }
  return d->used ? d : NULL;
}

int cl_expo_add_compute(cl_expo *e, uint32_t device, uint64_t start_ns, uint64_t end_ns) {
  if (end_ns <= start_ns) return 0;
  e->st.compute_in++;
  expo_dev *d = get_dev(e, device, 1);
  if (!d || end_ns <= d->compute.lost_below) { e->st.compute_dropped++; return -1; }
  if (e->have_wm && start_ns < e->wm) e->st.compute_late++;
  size_t lost = 0;
  cl_iv_add(&d->compute, start_ns, end_ns, &lost);
  e->st.compute_dropped += lost;   /* older intervals forgotten, or this one refused */
  return lost && end_ns <= d->compute.lost_below ? -1 : 0;
}

int cl_expo_add_span(cl_expo *e, const cl_expo_span *s) {
  if (e->npend >= e->lim.max_pending) { e->st.spans_overflow++; return -1; }
  if (cl_grow(&e->pend, &e->cappend, e->npend + 1, sizeof *e->pend, 256, e->lim.max_pending) != 0) {
    e->st.spans_overflow++;
    return -1;
  }
  cl_expo_span *p = &e->pend[e->npend++];
  *p = *s;
  if (p->end_ns < p->start_ns) p->end_ns = p->start_ns;
  e->nmeasured += !p->order_only;
  e->st.spans_in++;
  return 0;
}

static int span_cmp(const void *a, const void *b) {
  const cl_expo_span *x = a, *y = b;
  if (x->end_ns != y->end_ns) return x->end_ns < y->end_ns ? -1 : 1;
  if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
  if (x->tag != y->tag) return x->tag < y->tag ? -1 : 1;
  return 0;
}

/* Gaps of the device's compute union inside the span go to e->scratch. */
static void report_one(cl_expo *e, const cl_expo_span *s) {
  e->nmeasured -= !s->order_only;
  cl_expo_result r;
  memset(&r, 0, sizeof r);
  r.span = *s;
  expo_dev *d = get_dev(e, s->device, 0);
  size_t n = 0;
  uint64_t cur = s->start_ns, exposed = 0;
  const cl_ivset *cs = d ? &d->compute : NULL;
  size_t i = cs ? cl_iv_first_end_after(cs, s->start_ns) : 0;
  for (;;) {
    uint64_t gap_end = s->end_ns;
    int more = cs && i < cs->n && cs->v[i].start_ns < s->end_ns;
    if (more && cs->v[i].start_ns < gap_end) gap_end = cs->v[i].start_ns;
    if (gap_end > cur) {
      if (cl_grow(&e->scratch, &e->scratch_cap, n + 1, sizeof *e->scratch, 64, 0) == 0) e->scratch[n++] = (cl_expo_iv){cur, gap_end};
      exposed += gap_end - cur;   /* exact even if the piece list could not grow */
    }
    if (!more) break;
    if (cs->v[i].end_ns > cur) cur = cs->v[i].end_ns;
    if (cur >= s->end_ns) break;
    i++;
  }
  r.exposed_ns = exposed;
  r.pieces = e->scratch;
  r.npieces = n;
  r.incomplete = cs && s->start_ns < cs->lost_below;
  if (r.incomplete) e->st.spans_late++;
  e->st.spans_reported++;
  if (e->fn) e->fn(e->arg, &r);
}

static void report_ready(cl_expo *e, uint64_t wm, int all) {
  if (!e->nmeasured) all = 1;   /* only order-only spans: none has anything left to wait for */
  size_t k = 0, nready = 0;
  /* move ready spans to the tail, keep the order of the rest */
  cl_expo_span *ready = NULL;
  for (size_t i = 0; i < e->npend; i++) if (all || e->pend[i].end_ns <= wm) nready++;
  if (!nready) return;
  ready = malloc(nready * sizeof *ready);
  size_t r = 0;
  for (size_t i = 0; i < e->npend; i++) {
    if (all || e->pend[i].end_ns <= wm) { if (ready) ready[r++] = e->pend[i]; else report_one(e, &e->pend[i]); }
    else e->pend[k++] = e->pend[i];
  }
  e->npend = k;
  if (!ready) return;   /* out of memory: reported unsorted above */
  qsort(ready, nready, sizeof *ready, span_cmp);
  for (size_t i = 0; i < nready; i++) report_one(e, &ready[i]);
  free(ready);
  if (!all && e->npend && !e->nmeasured) report_ready(e, wm, 1);   /* the last measured one went */
}

void cl_expo_advance(cl_expo *e, uint64_t watermark) {
  if (e->have_wm && watermark <= e->wm) return;
  e->wm = watermark; e->have_wm = 1;
  report_ready(e, watermark, 0);
  /* keep history that a pending span or a span arriving within retain_ns may still need */
  uint64_t floor = watermark > e->lim.retain_ns ? watermark - e->lim.retain_ns : 0;
  for (size_t i = 0; i < e->npend; i++)
    if (e->pend[i].start_ns < floor) floor = e->pend[i].start_ns;
  for (size_t i = 0; i < e->ndevs; i++)
    if (e->devs[i].used) cl_iv_prune(&e->devs[i].compute, floor);
}

uint64_t cl_expo_reported_upto(const cl_expo *e) {
  uint64_t t = e->have_wm ? e->wm : 0;
  for (size_t i = 0; i < e->npend; i++) if (e->pend[i].start_ns < t) t = e->pend[i].start_ns;
  return t;
}

void cl_expo_finish(cl_expo *e) { report_ready(e, 0, 1); }
size_t cl_expo_pending(const cl_expo *e) { return e->npend; }

void cl_expo_get_stats(const cl_expo *e, cl_expo_stats *out) { *out = e->st; }

/* ---- aggregation ---- */

#define CL_EXPO_AGG_MAX_IV 65536
#define CL_EXPO_MAX_STEPS 4096

typedef struct { uint64_t comm; cl_ivset c, x; cl_expo_totals t; } agg_comm;
typedef struct { uint64_t start_ns, end_ns, id; } agg_step;

struct cl_expo_agg {
  uint64_t bucket_ns, retain_ns;
  cl_expo_window_fn fn;
  void *arg;
  cl_ivset c, x;                 /* comm union and exposed union, recent history */
  cl_expo_totals tot;
  agg_comm comms[CL_EXPO_MAX_COMMS + 1];   /* last slot: "other" */
  size_t ncomms;
  agg_step *steps;
  size_t nsteps, capsteps;
  uint64_t next_bucket;       /* index of the first bucket not closed yet */
  int have_bucket, closed_bucket;
  uint64_t wm;
};

cl_expo_agg *cl_expo_agg_new(uint64_t bucket_ns, uint64_t retain_ns, cl_expo_window_fn fn,
                             void *arg) {
  cl_expo_agg *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->bucket_ns = bucket_ns; a->retain_ns = retain_ns; a->fn = fn; a->arg = arg;
  a->c.max = a->x.max = CL_EXPO_AGG_MAX_IV;
  return a;
}

void cl_expo_agg_free(cl_expo_agg *a) {
  if (!a) return;
  cl_iv_free(&a->c); cl_iv_free(&a->x);
  for (size_t i = 0; i <= CL_EXPO_MAX_COMMS; i++) { cl_iv_free(&a->comms[i].c); cl_iv_free(&a->comms[i].x); }
  free(a->steps); free(a);
}

static agg_comm *agg_comm_slot(cl_expo_agg *a, uint64_t comm) {
  for (size_t i = 0; i < a->ncomms; i++) if (a->comms[i].comm == comm) return &a->comms[i];
  agg_comm *s = a->ncomms < CL_EXPO_MAX_COMMS ? &a->comms[a->ncomms++] : &a->comms[CL_EXPO_MAX_COMMS];
  if (s == &a->comms[CL_EXPO_MAX_COMMS]) comm = 0;
  s->comm = comm;
  s->c.max = s->x.max = 4096;
  return s;
}

void cl_expo_agg_add(cl_expo_agg *a, const cl_expo_result *r) {
  uint64_t s = r->span.start_ns, e = r->span.end_ns;
  agg_comm *pc = agg_comm_slot(a, r->span.comm);
  a->tot.spans++; pc->t.spans++;
  a->tot.comm_ns += cl_iv_add(&a->c, s, e, NULL);
  pc->t.comm_ns += cl_iv_add(&pc->c, s, e, NULL);
  for (size_t i = 0; i < r->npieces; i++) {
    a->tot.exposed_ns += cl_iv_add(&a->x, r->pieces[i].start_ns, r->pieces[i].end_ns, NULL);
    pc->t.exposed_ns += cl_iv_add(&pc->x, r->pieces[i].start_ns, r->pieces[i].end_ns, NULL);
  }
  if (a->bucket_ns && e > s) {
    uint64_t b = s / a->bucket_ns;
    if (!a->have_bucket) { a->next_bucket = b; a->have_bucket = 1; }
    else if (b < a->next_bucket && !a->closed_bucket) a->next_bucket = b;
  }
}

int cl_expo_add_step(cl_expo_agg *a, uint64_t start_ns, uint64_t end_ns, uint64_t id) {
  if (end_ns < start_ns) return -1;
  if (a->nsteps == a->capsteps && a->capsteps >= CL_EXPO_MAX_STEPS) return -1;
  if (cl_grow(&a->steps, &a->capsteps, a->nsteps + 1, sizeof *a->steps, 16, 0) != 0) return -1;
  a->steps[a->nsteps++] = (agg_step){start_ns, end_ns, id};
  return 0;
}

static void emit(cl_expo_agg *a, cl_expo_win_kind k, uint64_t id, uint64_t s, uint64_t e) {
  cl_expo_window w;
  w.kind = k; w.id = id; w.start_ns = s; w.end_ns = e;
  w.comm_ns = cl_iv_covered(&a->c, s, e);
  w.exposed_ns = cl_iv_covered(&a->x, s, e);
  w.late = s < a->c.lost_below || s < a->x.lost_below;
  if (k == CL_EXPO_WIN_BUCKET && !w.comm_ns) return;
  if (a->fn) a->fn(a->arg, &w);
}

static int step_cmp(const void *p, const void *q) {
  const agg_step *x = p, *y = q;
  if (x->end_ns != y->end_ns) return x->end_ns < y->end_ns ? -1 : 1;
  return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static void agg_close(cl_expo_agg *a, uint64_t wm, int all) {
  if (a->bucket_ns && a->have_bucket) {
    uint64_t B = a->bucket_ns, last = all ? UINT64_MAX / B : wm / B;  /* buckets < last close */
    if (all && a->c.n) last = (a->c.v[a->c.n - 1].end_ns - 1) / B + 1;
    while (a->next_bucket < last) {
      uint64_t bs = a->next_bucket * B, be = bs + B;
      emit(a, CL_EXPO_WIN_BUCKET, a->next_bucket, bs, be);
      a->closed_bucket = 1;
      size_t i = cl_iv_first_end_after(&a->c, be);   /* skip empty buckets */
      uint64_t nb = i < a->c.n ? a->c.v[i].start_ns / B : last;
      a->next_bucket = nb > a->next_bucket + 1 ? nb : a->next_bucket + 1;
    }
  }
  if (a->nsteps) {
    qsort(a->steps, a->nsteps, sizeof *a->steps, step_cmp);
    size_t k = 0;
    for (size_t i = 0; i < a->nsteps; i++) {
      if (all || a->steps[i].end_ns <= wm)
        emit(a, CL_EXPO_WIN_STEP, a->steps[i].id, a->steps[i].start_ns, a->steps[i].end_ns);
      else a->steps[k++] = a->steps[i];
    }
    a->nsteps = k;
  }
}

void cl_expo_agg_advance(cl_expo_agg *a, uint64_t watermark) {
  if (watermark < a->wm) return;
  a->wm = watermark;
  agg_close(a, watermark, 0);
  uint64_t floor = watermark > a->retain_ns ? watermark - a->retain_ns : 0;
  for (size_t i = 0; i <= CL_EXPO_MAX_COMMS; i++) { cl_iv_prune(&a->comms[i].c, floor); cl_iv_prune(&a->comms[i].x, floor); }
  if (a->bucket_ns && a->have_bucket && a->next_bucket * a->bucket_ns < floor)
    floor = a->next_bucket * a->bucket_ns;
  for (size_t i = 0; i < a->nsteps; i++) if (a->steps[i].start_ns < floor) floor = a->steps[i].start_ns;
  cl_iv_prune(&a->c, floor); cl_iv_prune(&a->x, floor);
}

void cl_expo_agg_finish(cl_expo_agg *a) { agg_close(a, 0, 1); }

void cl_expo_agg_totals(const cl_expo_agg *a, cl_expo_totals *out) { *out = a->tot; }

size_t cl_expo_agg_comms(const cl_expo_agg *a, cl_expo_comm_totals *out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i <= CL_EXPO_MAX_COMMS; i++) {
    const agg_comm *s = &a->comms[i];
    if (i >= a->ncomms && i != CL_EXPO_MAX_COMMS) continue;
    if (!s->t.spans) continue;
    if (n < max) { out[n].comm = s->comm; out[n].t = s->t; }
    n++;
  }
  return n;
}

uint32_t cl_expo_overlap_ppm(const cl_expo_totals *t) {
  if (!t->comm_ns) return 0;
  uint64_t hidden = t->exposed_ns < t->comm_ns ? t->comm_ns - t->exposed_ns : 0;
  return (uint32_t)((unsigned __int128)hidden * 1000000u / t->comm_ns);
}
