/* blame.c: see blame.h. Each instance's culprit, margin, wait and start-up flag are the
 * verdict's (analyse/verdict.c: decided once); this file sums them per rank and per NVTX step. */
#include "tools/commlens/analyse/blame.h"
#include "tools/commlens/base/util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The instance's times from its spans: transfer (the shortest duration across ranks) and the
 * collective time (last end - first arrival); who was last, by how much and the wait it caused
 * are the verdict's (analyse/verdict.c), not measured again here. */
static void measure(const cl_job *job, const cl_inst *in, const cl_sg_inst_result *vi, cl_blame_inst *bi) {
  int64_t mind = INT64_MAX;
  for (uint32_t m = 0; m < in->count; m++) {
    const cl_member *mb = &job->mem.a[in->first + m];
    const cl_coll *c = &job->r[mb->rank_idx]->colls.a[mb->coll_idx];
    if (c->end - c->start < mind) mind = c->end - c->start;
  }
  *bi = (cl_blame_inst){ vi->last, vi->wait_ns, vi->margin_ns, (double)mind, vi->coll_ns, vi->startup, vi->called,
                         vi->t_first, vi->t_last, -1 };
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

void cl_blame_compute(const cl_job *job, const cl_sg_verdict *v, cl_blame *b) {
  memset(b, 0, sizeof *b);
  size_t ni = job->inst.n;
  b->inst = cl_xcalloc(ni ? ni : 1, sizeof *b->inst);
  b->rank = cl_xcalloc((size_t)job->n + 1, sizeof *b->rank);
  b->order = cl_xcalloc((size_t)job->n + 1, sizeof *b->order);
  for (size_t ii = 0; ii < ni; ii++) {
    b->inst[ii].culprit = -1;
    b->inst[ii].step = -1;
    if (job->inst.a[ii].count < 2 || v->inst[ii].last < 0) continue;
    measure(job, &job->inst.a[ii], &v->inst[ii], &b->inst[ii]);
    if (b->inst[ii].warmup && b->inst[ii].first_arrival + (int64_t)b->inst[ii].coll_time > b->warmup_end)
      b->warmup_end = b->inst[ii].first_arrival + (int64_t)b->inst[ii].coll_time;
  }
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
    if (!bi->significant) continue;
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
  per_step(job, b);
}

void cl_blame_free(cl_blame *b) {
  free(b->inst); free(b->rank); free(b->order); free(b->steps);
  memset(b, 0, sizeof *b);
}
