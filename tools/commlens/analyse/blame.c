/* blame.c: see blame.h. Works from the loader's aggregates only; arrivals are aligned onto
 * the reference rank's clock (cl_aligned). */
#include "tools/commlens/analyse/blame.h"
#include "tools/commlens/base/util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Arrivals, margin, wait and times of one instance. */
static void measure(const cl_job *job, const cl_inst *in, cl_blame_inst *bi) {
  int64_t last = INT64_MIN, second = INT64_MIN, first = INT64_MAX, end = INT64_MIN, mind = INT64_MAX;
  int32_t culprit = -1;
  for (uint32_t m = 0; m < in->count; m++) {
    const cl_member *mb = &job->mem.a[in->first + m];
    const cl_rank *r = job->r[mb->rank_idx];
    const cl_coll *c = &r->colls.a[mb->coll_idx];
    int64_t s = cl_aligned(r, c->start), e = cl_aligned(r, c->end);
    if (s > last) { second = last; last = s; culprit = (int32_t)mb->rank_idx; }
    else if (s > second) second = s;
    if (s < first) first = s;
    if (e > end) end = e;
    if (c->end - c->start < mind) mind = c->end - c->start;
  }
  double wait = 0;
  for (uint32_t m = 0; m < in->count; m++) {
    const cl_member *mb = &job->mem.a[in->first + m];
    const cl_rank *r = job->r[mb->rank_idx];
    wait += (double)(last - cl_aligned(r, r->colls.a[mb->coll_idx].start));
  }
  *bi = (cl_blame_inst){culprit, wait, (double)(last - second), (double)mind, (double)(end - first), 0, 0, first, last, -1};
}

/* Instance ids sorted by (comm, func, bytes, seq): groups of like instances in order. */
static const cl_job *g_job;
static int cmp_group(const void *a, const void *b) {
  const cl_inst *x = &g_job->inst.a[*(const uint32_t *)a], *y = &g_job->inst.a[*(const uint32_t *)b];
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}
static int same_group(const cl_inst *x, const cl_inst *y) {
  return x->comm == y->comm && x->func == y->func && x->bytes == y->bytes;
}

static void find_warmup(const cl_job *job, cl_blame *b, uint32_t *ids, size_t nid) {
  g_job = job;
  qsort(ids, nid, sizeof *ids, cmp_group);
  double *t = cl_xmalloc((nid + 1) * sizeof(double));
  b->warmup_end = 0;
  for (size_t a = 0; a < nid;) {            /* large groups: the leading run of outliers */
    size_t e = a;
    while (e < nid && same_group(&job->inst.a[ids[e]], &job->inst.a[ids[a]])) e++;
    if (e - a >= 3) {
      for (size_t k = a; k < e; k++) t[k - a] = b->inst[ids[k]].coll_time;
      double med = cl_median_dbl(t, e - a);
      for (size_t k = a; k < e && k - a < (e - a) / 2; k++) {
        cl_blame_inst *bi = &b->inst[ids[k]];
        if (bi->coll_time <= CL_BLAME_WARMUP_FACTOR * med) break;
        bi->warmup = 1;
        int64_t end = bi->first_arrival + (int64_t)bi->coll_time;
        if (end > b->warmup_end) b->warmup_end = end;
      }
    }
    a = e;
  }
  for (size_t a = 0; a < nid;) {            /* small groups: inside the warm-up found above */
    size_t e = a;
    while (e < nid && same_group(&job->inst.a[ids[e]], &job->inst.a[ids[a]])) e++;
    if (e - a < 3)
      for (size_t k = a; k < e; k++) {
        cl_blame_inst *bi = &b->inst[ids[k]];
        if (b->warmup_end && bi->first_arrival + (int64_t)bi->coll_time <= b->warmup_end) bi->warmup = 1;
      }
    a = e;
  }
  free(t);
}

static const cl_blame *g_b;
static double rank_key(const cl_blame_rank *r) { return r->persistent ? r->wait_sig : r->wait_all; }
static int cmp_rank(const void *a, const void *b) {
  const cl_blame_rank *x = &g_b->rank[*(const int *)a], *y = &g_b->rank[*(const int *)b];
  if (x->persistent != y->persistent) return y->persistent - x->persistent;
  double kx = rank_key(x), ky = rank_key(y);
  return kx < ky ? 1 : kx > ky ? -1 : *(const int *)a - *(const int *)b;
}
static const cl_rank *g_ref;
static int cmp_step_start(const void *a, const void *b) {
  int64_t x = g_ref->steps.a[*(const size_t *)a].start, y = g_ref->steps.a[*(const size_t *)b].start;
  return (x > y) - (x < y);
}
static int cmp_step(const void *a, const void *b) {
  const cl_blame_step *x = a, *y = b;
  return x->lost < y->lost ? 1 : x->lost > y->lost ? -1 : (x->step > y->step) - (x->step < y->step);
}

/* NVTX steps of the reference rank (aligned): each instance goes to the step holding its first
 * arrival; a step's lost time is the wait of its instances, its culprit the rank that caused
 * most of it. */
static void per_step(const cl_job *job, cl_blame *b) {
  const cl_rank *ref = NULL;
  for (int i = 0; i < job->n; i++) if (job->r[i]->steps.n && (!ref || job->r[i]->rank == job->ref_rank)) ref = job->r[i];
  if (!ref) return;
  size_t ns = ref->steps.n;
  b->steps = cl_xcalloc(ns, sizeof *b->steps);
  double *by_rank = cl_xcalloc((size_t)job->n * ns, sizeof(double));
  size_t *by_start = cl_xmalloc(ns * sizeof *by_start);
  for (size_t s = 0; s < ns; s++) by_start[s] = s;
  g_ref = ref;
  qsort(by_start, ns, sizeof *by_start, cmp_step_start);
  for (size_t ii = 0; ii < job->inst.n; ii++) {
    cl_blame_inst *bi = &b->inst[ii];
    if (bi->culprit < 0) continue;
    size_t lo = 0, hi = ns;                  /* the last step starting at or before the arrival */
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (cl_aligned(ref, ref->steps.a[by_start[mid]].start) <= bi->first_arrival) lo = mid; else hi = mid;
    }
    size_t s = by_start[lo];
    const cl_step *st = &ref->steps.a[s];
    if (bi->first_arrival < cl_aligned(ref, st->start) || bi->first_arrival >= cl_aligned(ref, st->end)) continue;
    bi->step = st->step;
    b->steps[s].step = st->step;
    b->steps[s].lost += bi->wait;
    b->steps[s].n_inst++;
    by_rank[s * (size_t)job->n + (size_t)bi->culprit] += bi->wait;
  }
  free(by_start);
  for (size_t s = 0; s < ns; s++) {
    if (!b->steps[s].n_inst) continue;
    b->steps[s].culprit = -1;
    for (int r = 0; r < job->n; r++)
      if (by_rank[s * (size_t)job->n + (size_t)r] > b->steps[s].culprit_wait) {
        b->steps[s].culprit_wait = by_rank[s * (size_t)job->n + (size_t)r];
        b->steps[s].culprit = r;
      }
    b->steps[b->nsteps++] = b->steps[s];
  }
  free(by_rank);
  qsort(b->steps, b->nsteps, sizeof *b->steps, cmp_step);
}

void cl_blame_compute(const cl_job *job, cl_blame *b) {
  memset(b, 0, sizeof *b);
  size_t ni = job->inst.n;
  b->inst = cl_xcalloc(ni ? ni : 1, sizeof *b->inst);
  b->rank = cl_xcalloc((size_t)job->n + 1, sizeof *b->rank);
  b->order = cl_xcalloc((size_t)job->n + 1, sizeof *b->order);
  uint32_t *ids = cl_xmalloc((ni + 1) * sizeof *ids);
  size_t nid = 0;
  for (size_t ii = 0; ii < ni; ii++) {
    b->inst[ii].culprit = -1;
    b->inst[ii].step = -1;
    if (job->inst.a[ii].count < 2) continue;
    measure(job, &job->inst.a[ii], &b->inst[ii]);
    ids[nid++] = (uint32_t)ii;
  }
  find_warmup(job, b, ids, nid);
  free(ids);
  double **margins = cl_xcalloc((size_t)job->n + 1, sizeof *margins);
  for (size_t ii = 0; ii < ni; ii++) {
    cl_blame_inst *bi = &b->inst[ii];
    if (bi->culprit < 0) continue;
    const cl_inst *in = &job->inst.a[ii];
    if (bi->warmup) b->n_warmup++;
    else {
      b->n_eligible++;
      for (uint32_t m = 0; m < in->count; m++) b->rank[job->mem.a[in->first + m].rank_idx].n_eligible++;
    }
    cl_blame_rank *r = &b->rank[bi->culprit];
    r->wait_all += bi->wait;
    if (bi->warmup) { r->wait_warmup += bi->wait; r->n_last_warmup++; continue; }
    double need = fmax(CL_BLAME_MIN_MARGIN_NS, CL_BLAME_MARGIN_OF_TRANSFER * bi->transfer);
    if (bi->margin <= need) continue;
    bi->significant = 1;
    if (!margins[bi->culprit]) margins[bi->culprit] = cl_xmalloc((ni + 1) * sizeof(double));
    margins[bi->culprit][r->n_sig++] = bi->margin;
    r->wait_sig += bi->wait;
    for (int k = 0; k < 3; k++)
      if (r->n_sig - 1 <= k || r->worst_w[k] < bi->wait) {
        for (int j = 2; j > k; j--) { r->worst[j] = r->worst[j - 1]; r->worst_w[j] = r->worst_w[j - 1]; }
        r->worst[k] = (uint32_t)ii; r->worst_w[k] = bi->wait;
        break;
      }
  }
  for (int i = 0; i < job->n; i++) {
    cl_blame_rank *r = &b->rank[i];
    if (r->n_sig) r->median_margin = cl_median_dbl(margins[i], (size_t)r->n_sig);
    r->persistent = r->n_sig >= 2;
    free(margins[i]);
    b->order[i] = i;
  }
  free(margins);
  g_b = b;
  qsort(b->order, (size_t)job->n, sizeof *b->order, cmp_rank);
  if (job->n >= 2) {
    const cl_blame_rank *a = &b->rank[b->order[0]], *c = &b->rank[b->order[1]];
    double ka = rank_key(a), kc = a->persistent && !c->persistent ? c->wait_sig : rank_key(c);
    b->confidence = kc > 0 ? ka / kc : (ka > 0 ? INFINITY : 0);
  }
  per_step(job, b);
}

void cl_blame_free(cl_blame *b) {
  free(b->inst); free(b->rank); free(b->order); free(b->steps);
  memset(b, 0, sizeof *b);
}
