/* straggler.c: see straggler.h. Owns the per-instance last arrival, the start-up rule, the null
 * model (one-sided binomial tail, Bonferroni over participants), the noise floor, the what-if
 * cost and the verdict line. Reads only its input arrays; never touches files. */
#include "tools/commlens/analyse/straggler.h"
#include "tools/commlens/analyse/steps.h"
#include "tools/commlens/base/util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cl_sg_evidence_name(enum cl_sg_evidence e) {
  switch (e) {
  case CL_SG_GPU_WAIT: return "GPU wait for peers (initial_sync)";
  case CL_SG_GPU_START: return "GPU start";
  case CL_SG_ENQUEUE: return "host enqueue";
  case CL_SG_CHANNEL_END: return "channel end";
  }
  return "?";
}
const char *cl_sg_evidence_key(enum cl_sg_evidence e) {
  switch (e) {
  case CL_SG_GPU_WAIT: return "gpu_wait";
  case CL_SG_GPU_START: return "gpu_start";
  case CL_SG_ENQUEUE: return "host_enqueue";
  case CL_SG_CHANNEL_END: return "channel_end";
  }
  return "?";
}
const char *cl_sg_kind_name(enum cl_sg_kind k) {
  switch (k) {
  case CL_SG_NO_DATA: return "no_data";
  case CL_SG_NONE: return "none";
  case CL_SG_STALLS_ONLY: return "stalls_only";
  case CL_SG_STRAGGLER: return "straggler";
  }
  return "?";
}

double cl_sg_binom_tail(int64_t k, int64_t n, double p) {
  if (k <= 0) return 1;
  if (k > n || p <= 0) return 0;
  if (p >= 1) return 1;
  double lp = log(p), lq = log1p(-p), base = lgamma((double)n + 1), sum = 0;
  if ((double)k <= (double)n * p) {           /* at or below the mean: sum the lower side */
    for (int64_t j = 0; j < k; j++)
      sum += exp(base - lgamma((double)j + 1) - lgamma((double)(n - j) + 1) + (double)j * lp + (double)(n - j) * lq);
    return fmax(0, fmin(1, 1 - sum));
  }
  for (int64_t j = k; j <= n; j++) {          /* terms fall from k on: stop when negligible */
    double t = exp(base - lgamma((double)j + 1) - lgamma((double)(n - j) + 1) + (double)j * lp + (double)(n - j) * lq);
    sum += t;
    if (t < sum * 1e-17) break;
  }
  return fmin(1, sum);
}

/* ---- one instance: last, second, margin, wait, the what-if ---- */
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static void measure(const cl_sg_input *in, double min_margin, const cl_sg_inst *ins, cl_sg_inst_result *r, double *scratch) {
  int wait_mode = in->evidence == CL_SG_GPU_WAIT;
  double last = -INFINITY, second = -INFINITY, first = INFINITY, end = -INFINITY;
  int32_t wl = -1, ws = -1, cl = 0, cs = 0; double el = 0, es = 0;
  uint32_t n = 0;
  for (uint32_t j = 0; j < ins->count; j++) {
    const cl_sg_arrival *a = &in->arr[ins->first + j];
    if (a->who < 0 || a->who >= in->nwho) continue;
    double v = wait_mode ? -(double)a->value : (double)a->value;
    scratch[n++] = v;
    /* ties go to the lower participant: deterministic, and a tie has margin 0 (never called) */
    if (v > last || (v == last && a->who < wl)) {
      second = last; ws = wl; es = el; cs = cl; last = v; wl = a->who; el = (double)a->err; cl = a->clock;
    } else if (v > second || (v == second && a->who < ws)) { second = v; ws = a->who; es = (double)a->err; cs = a->clock; }
    if (v < first) first = v;
    if (a->end && (double)a->end > end) end = (double)a->end;
  }
  memset(r, 0, sizeof *r);
  r->last = r->second = -1;
  if (n < 2) return;
  qsort(scratch, n, sizeof *scratch, cmp_dbl);
  double med = n % 2 ? scratch[n / 2] : (scratch[n / 2 - 1] + scratch[n / 2]) / 2;
  double wait = 0;
  for (uint32_t j = 0; j < n; j++) wait += last - scratch[j];
  r->last = wl; r->second = ws;
  r->margin_ns = last - second; r->err_ns = cl && cl == cs ? 0 : el + es; r->wait_ns = wait;
  r->over_median_ns = last - fmax(second, med);
  if (!wait_mode) {
    r->t_first = (int64_t)first; r->t_last = (int64_t)last;
    if (end > first) r->coll_ns = end - first;
    if (end > last) r->xfer_ns = end - last;
  }
  r->called = r->margin_ns > fmax(min_margin, r->err_ns);
}

/* ---- start-up: first of each (comm, func, bytes), a leading run of outliers, set-up ---- */
static const cl_sg_inst *g_inst;
static int cmp_group(const void *a, const void *b) {
  const cl_sg_inst *x = &g_inst[*(const uint32_t *)a], *y = &g_inst[*(const uint32_t *)b];
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}
static int same_group(const cl_sg_inst *x, const cl_sg_inst *y) {
  return x->comm == y->comm && x->func == y->func && x->bytes == y->bytes;
}
static void find_startup(const cl_sg_input *in, cl_sg_verdict *v, uint32_t *ids, size_t nid) {
  g_inst = in->inst;
  qsort(ids, nid, sizeof *ids, cmp_group);
  double *t = cl_xmalloc((nid + 1) * sizeof *t);
  for (size_t a = 0; a < nid;) {
    size_t e = a, nt = 0;
    while (e < nid && same_group(&in->inst[ids[e]], &in->inst[ids[a]])) e++;
    v->inst[ids[a]].startup = 1;                       /* the first of its kind: set-up, lazy init */
    for (size_t k = a + 1; k < e; k++) if (v->inst[ids[k]].xfer_ns > 0) t[nt++] = v->inst[ids[k]].xfer_ns;
    if (nt >= 3) {
      double med = cl_median_dbl(t, nt);
      for (size_t k = a + 1; k < e && k - a <= (e - a) / 2; k++) {
        if (v->inst[ids[k]].xfer_ns <= CL_SG_STARTUP_FACTOR * med) break;
        v->inst[ids[k]].startup = 1;
      }
    }
    a = e;
  }
  free(t);
  for (size_t k = 0; k < nid; k++) if (in->inst[ids[k]].setup) v->inst[ids[k]].startup = 1;
  /* the start-up period: up to the end of the start-up instances that begin before the first
   * steady one */
  int64_t first_steady = INT64_MAX;
  for (size_t k = 0; k < nid; k++)
    if (!v->inst[ids[k]].startup && v->inst[ids[k]].t_first < first_steady) first_steady = v->inst[ids[k]].t_first;
  for (size_t k = 0; k < nid; k++) {
    const cl_sg_inst_result *r = &v->inst[ids[k]];
    if (!r->startup) continue;
    v->n_startup++;
    int64_t end = r->t_first + (int64_t)r->coll_ns;
    if (r->t_first <= first_steady && end > v->startup_end) v->startup_end = end;
  }
}

/* ---- units (steps, else instances) and their culprits ---- */
typedef struct { int32_t unit; uint32_t inst; } unit_inst;
static int cmp_unit_inst(const void *a, const void *b) {
  const unit_inst *x = a, *y = b;
  return x->unit != y->unit ? x->unit - y->unit : (x->inst > y->inst) - (x->inst < y->inst);
}
static int cmp_i32(const void *a, const void *b) { return *(const int32_t *)a - *(const int32_t *)b; }

typedef struct { int64_t k, n; double psum; double *lat; size_t nlat, cap; } who_stat;

/* The median lateness of the participants last no more often than chance, over the units they
 * were last in (0: none): the run's own spread, which several stragglers taking turns (each
 * beyond chance) do not set. */
static double chance_lateness(const who_stat *ws, const uint8_t *passes, int nwho) {
  size_t n = 0;
  for (int w = 0; w < nwho; w++) if (!passes[w]) n += ws[w].nlat;
  if (!n) return 0;
  double *l = cl_xmalloc(n * sizeof *l);
  n = 0;
  for (int w = 0; w < nwho; w++)
    if (!passes[w]) for (size_t k = 0; k < ws[w].nlat; k++) l[n++] = ws[w].lat[k];
  double med = cl_median_dbl(l, n);
  free(l);
  return med;
}

/* Sorted distinct steps of the eligible instances (unit ids index it). */
static int32_t unit_of(const cl_sg_input *in, int steps, const int32_t *step_ids, size_t nsteps, uint32_t i, int32_t serial) {
  if (!steps) return serial;
  int32_t s = in->inst[i].step;
  const int32_t *p = bsearch(&s, step_ids, nsteps, sizeof *step_ids, cmp_i32);
  return p ? (int32_t)(p - step_ids) : -1;
}

/* Each unit's culprit (-1: none) and participants: mem[first[u] .. first[u + 1]). */
typedef struct { int32_t *culprit; uint32_t *first; CL_VEC(int32_t) mem; size_t n; } unit_table;

static void count_units(const cl_sg_input *in, cl_sg_verdict *v, const uint32_t *elig, size_t ne, who_stat *ws,
                        unit_table *ut) {
  int steps = 0;
  for (size_t k = 0; k < ne; k++) if (in->inst[elig[k]].step >= 0) steps = 1;
  v->unit_is_step = steps;
  int32_t *step_ids = cl_xmalloc((ne + 1) * sizeof *step_ids);
  size_t nsteps = 0;
  if (steps) {
    for (size_t k = 0; k < ne; k++) if (in->inst[elig[k]].step >= 0) step_ids[nsteps++] = in->inst[elig[k]].step;
    qsort(step_ids, nsteps, sizeof *step_ids, cmp_i32);
    size_t d = 0;
    for (size_t k = 0; k < nsteps; k++) if (!d || step_ids[d - 1] != step_ids[k]) step_ids[d++] = step_ids[k];
    nsteps = d;
  }
  size_t nunits = steps ? nsteps : ne;
  v->n_units = (int64_t)nunits;
  /* culprit per unit: the per-step rule (analyse/steps.h), instances being steps of one */
  cl_st_inst *si = cl_xmalloc((ne + 1) * sizeof *si);
  unit_inst *ui = cl_xmalloc((ne + 1) * sizeof *ui);
  size_t nui = 0;
  for (size_t k = 0; k < ne; k++) {
    int32_t u = unit_of(in, steps, step_ids, nsteps, elig[k], (int32_t)k);
    const cl_sg_inst_result *r = &v->inst[elig[k]];
    si[k] = (cl_st_inst){u, r->last, r->called, r->margin_ns, r->wait_ns, r->over_median_ns};
    if (u >= 0) ui[nui++] = (unit_inst){u, elig[k]};
  }
  cl_step_verdict *ur = cl_xmalloc((nunits + 1) * sizeof *ur);
  uint32_t *order = cl_xmalloc((nunits + 1) * sizeof *order);
  cl_steps_attribute(si, ne, (uint32_t)nunits, ur, order);
  free(si); free(order);
  ut->n = nunits;
  ut->culprit = cl_xmalloc((nunits + 1) * sizeof *ut->culprit);
  ut->first = cl_xcalloc(nunits + 2, sizeof *ut->first);
  for (size_t u = 0; u < nunits; u++) ut->culprit[u] = ur[u].culprit;
  /* participation: each participant counts a unit once; p = 1/(participants of the unit) */
  qsort(ui, nui, sizeof *ui, cmp_unit_inst);
  int32_t *stamp = cl_xmalloc((size_t)in->nwho * sizeof *stamp);
  for (int w = 0; w < in->nwho; w++) stamp[w] = -1;
  int32_t *members = cl_xmalloc((size_t)in->nwho * sizeof *members);
  for (size_t a = 0; a < nui;) {
    size_t e = a, nm = 0;
    while (e < nui && ui[e].unit == ui[a].unit) {
      const cl_sg_inst *ins = &in->inst[ui[e].inst];
      for (uint32_t j = 0; j < ins->count; j++) {
        int32_t w = in->arr[ins->first + j].who;
        if (w < 0 || w >= in->nwho || stamp[w] == ui[a].unit) continue;
        stamp[w] = ui[a].unit; members[nm++] = w;
      }
      e++;
    }
    for (size_t j = 0; j < nm; j++) { ws[members[j]].n++; ws[members[j]].psum += 1.0 / (double)nm; }
    ut->first[ui[a].unit] = (uint32_t)ut->mem.n;     /* units come in order: their runs are contiguous */
    for (size_t j = 0; j < nm; j++) CL_PUSH(ut->mem, members[j]);
    ut->first[ui[a].unit + 1] = (uint32_t)ut->mem.n;
    const cl_step_verdict *u = &ur[ui[a].unit];
    if (u->culprit >= 0) {
      who_stat *s = &ws[u->culprit];
      s->k++;
      if (s->nlat == s->cap) { s->cap = s->cap ? 2 * s->cap : 16; s->lat = cl_xrealloc(s->lat, s->cap * sizeof *s->lat); }
      s->lat[s->nlat++] = u->lateness_ns;
    }
    a = e;
  }
  free(stamp); free(members); free(ui); free(ur); free(step_ids);
}

/* The null model, one participant at a time (a step-down test): each one not yet named is
 * tested against chance over the units whose culprit is not named, with p = 1/(participants
 * not named) per unit, Bonferroni over every participant; the most significant below alpha is
 * named, its units removed, and the rest tested again. Stragglers taking turns each take a
 * share of the units that chance over all of them would explain; once one is named, the next
 * stands out among the units left. The first round is the plain test: padj of a participant
 * never named is its first-round value. */
static void test_against_chance(const unit_table *ut, int nwho, int nparts, double alpha, double *padj, uint8_t *passes) {
  int64_t *k = cl_xmalloc(((size_t)nwho + 1) * sizeof *k), *n = cl_xmalloc(((size_t)nwho + 1) * sizeof *n);
  double *ps = cl_xmalloc(((size_t)nwho + 1) * sizeof *ps);
  for (int w = 0; w < nwho; w++) { padj[w] = 1; passes[w] = 0; }
  for (int round = 0;; round++) {
    for (int w = 0; w < nwho; w++) { k[w] = n[w] = 0; ps[w] = 0; }
    for (size_t u = 0; u < ut->n; u++) {
      int32_t c = ut->culprit[u];
      if (c >= 0 && passes[c]) continue;
      size_t m = 0;
      for (uint32_t j = ut->first[u]; j < ut->first[u + 1]; j++) m += !passes[ut->mem.a[j]];
      for (uint32_t j = ut->first[u]; j < ut->first[u + 1]; j++) {
        int32_t w = ut->mem.a[j];
        if (passes[w]) continue;
        n[w]++; ps[w] += 1.0 / (double)m;
      }
      if (c >= 0) k[c]++;
    }
    int best = -1; double bp = 1;
    for (int w = 0; w < nwho; w++) {
      if (passes[w] || !n[w] || !k[w]) continue;
      double p = fmin(1, cl_sg_binom_tail(k[w], n[w], ps[w] / (double)n[w]) * nparts);
      if (!round) padj[w] = p;
      if (p < alpha && (best < 0 || p < bp)) { best = w; bp = p; }
    }
    if (best < 0) break;
    passes[best] = 1; padj[best] = bp;
  }
  free(k); free(n); free(ps);
}

/* ---- cost: the union of [last - over_median, last] over the instances it was last in ---- */
typedef struct { double a, b; } span;
static int cmp_span(const void *x, const void *y) { return cmp_dbl(&((const span *)x)->a, &((const span *)y)->a); }
static double cost_of(const cl_sg_input *in, const cl_sg_verdict *v, const uint32_t *elig, size_t ne, int32_t who) {
  span *sp = cl_xmalloc((ne + 1) * sizeof *sp);
  size_t n = 0; double sum = 0;
  for (size_t k = 0; k < ne; k++) {
    const cl_sg_inst_result *r = &v->inst[elig[k]];
    if (r->last != who || r->over_median_ns <= 0) continue;
    sum += r->over_median_ns;
    sp[n++] = (span){(double)r->t_last - r->over_median_ns, (double)r->t_last};
  }
  if (in->evidence != CL_SG_GPU_WAIT) {       /* concurrent communicators: count time once */
    qsort(sp, n, sizeof *sp, cmp_span);
    sum = 0;
    for (size_t k = 0; k < n;) {
      double a = sp[k].a, b = sp[k].b;
      while (++k < n && sp[k].a <= b) b = fmax(b, sp[k].b);
      sum += b - a;
    }
  }
  free(sp);
  return sum;
}

static const cl_sg_verdict *g_v;
static int cmp_evidence(const void *a, const void *b) {
  double x = g_v->inst[*(const uint32_t *)a].over_median_ns, y = g_v->inst[*(const uint32_t *)b].over_median_ns;
  if (x != y) return x < y ? 1 : -1;
  return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}
static void fill_suspect(const cl_sg_input *in, const cl_sg_verdict *v, const uint32_t *elig, size_t ne,
                         const who_stat *s, int32_t who, double p_adj, cl_sg_suspect *out) {
  memset(out, 0, sizeof *out);
  out->who = who; out->host = in->host ? in->host[who] : NULL;
  out->last_count = s->k; out->units = s->n; out->expected = s->psum;
  double *lat = cl_xmalloc((s->nlat + 1) * sizeof *lat);
  if (s->nlat) { memcpy(lat, s->lat, s->nlat * sizeof *lat); out->median_lateness_ns = cl_median_dbl(lat, s->nlat); }
  free(lat);
  out->cost_ns = cost_of(in, v, elig, ne, who);
  out->p_value = p_adj; out->confidence = 1 - p_adj;
  uint32_t *ev = cl_xmalloc((ne + 1) * sizeof *ev);
  size_t n = 0;
  for (size_t k = 0; k < ne; k++) if (v->inst[elig[k]].last == who && v->inst[elig[k]].called) ev[n++] = elig[k];
  g_v = v;
  qsort(ev, n, sizeof *ev, cmp_evidence);
  for (size_t k = 0; k < n && k < CL_SG_EVIDENCE_MAX; k++) out->evidence[out->nevidence++] = ev[k];
  free(ev);
}

static int cmp_stall(const void *a, const void *b) {
  const cl_sg_stall *x = a, *y = b;
  if (x->margin_ns != y->margin_ns) return x->margin_ns < y->margin_ns ? 1 : -1;
  return (x->inst > y->inst) - (x->inst < y->inst);
}
static int cmp_suspect(const void *a, const void *b) {
  const cl_sg_suspect *x = a, *y = b;
  if (x->cost_ns != y->cost_ns) return x->cost_ns < y->cost_ns ? 1 : -1;
  return x->who - y->who;
}

/* A stall is a margin that chance reaches once per job with probability alpha at most (the
 * exponential-tail bound in cl_sg_analyse), so CL_SG_REPEAT stalls of one participant are no
 * accident even where counting last arrivals cannot tell it from chance: a rank late every
 * third step beside one other rank (its chance share is half), two ranks taking turns. Each
 * such participant not already named becomes a straggler on its stalls: K = its stalls, the
 * median over them, p bounded by alpha; its stalls leave the one-off list (they are its
 * evidence). */
static void name_repeated_stalls(const cl_sg_input *in, cl_sg_verdict *v, const uint32_t *elig, size_t ne,
                                 const who_stat *ws) {
  /* stalls are counted in units (steps where known): several stalled collectives of one step
   * are one stalled step */
  int64_t *cnt = cl_xcalloc((size_t)in->nwho + 1, sizeof *cnt);
  int32_t *key = cl_xmalloc((v->nstall + 1) * sizeof *key);
  for (int w = 0; w < in->nwho; w++) {
    size_t n = 0;
    for (size_t k = 0; k < v->nstall; k++)
      if (v->stall[k].who == w) key[n++] = v->unit_is_step ? in->inst[v->stall[k].inst].step : (int32_t)v->stall[k].inst;
    qsort(key, n, sizeof *key, cmp_i32);
    for (size_t k = 0; k < n; k++) cnt[w] += !k || key[k] != key[k - 1];
  }
  free(key);
  double *lat = cl_xmalloc((v->nstall + 1) * sizeof *lat);
  for (int w = 0; w < in->nwho; w++) {
    int named = 0;
    for (int s = 0; s < v->nstraggler; s++) named |= v->straggler[s].who == w;
    if (named || cnt[w] < CL_SG_REPEAT) continue;
    cl_sg_suspect *s = &v->straggler[v->nstraggler++];
    fill_suspect(in, v, elig, ne, &ws[w], w, v->alpha, s);
    size_t n = 0, keep = 0;
    for (size_t k = 0; k < v->nstall; k++) {
      if (v->stall[k].who == w) { lat[n++] = v->stall[k].margin_ns; v->inst[v->stall[k].inst].stall = 0; }
      else v->stall[keep++] = v->stall[k];
    }
    v->nstall = keep;
    s->stalls = s->last_count = cnt[w];
    s->median_lateness_ns = cl_median_dbl(lat, n);
  }
  free(lat); free(cnt);
  qsort(v->straggler, (size_t)v->nstraggler, sizeof *v->straggler, cmp_suspect);
}

void cl_sg_analyse(const cl_sg_input *in, cl_sg_verdict *v) {
  memset(v, 0, sizeof *v);
  v->evidence = in->evidence;
  v->who_word = in->who_word ? in->who_word : "rank";
  v->alpha = in->alpha > 0 ? in->alpha : CL_SG_ALPHA;
  v->min_margin_ns = in->min_margin_ns > 0 ? in->min_margin_ns : CL_SG_MIN_MARGIN_NS;
  v->largest.who = -1;
  v->n_inst = (int64_t)in->ninst;
  v->inst = cl_xcalloc(in->ninst + 1, sizeof *v->inst);
  size_t maxc = 1;
  for (size_t i = 0; i < in->ninst; i++) if (in->inst[i].count > maxc) maxc = in->inst[i].count;
  double *scratch = cl_xmalloc(maxc * sizeof *scratch);
  uint32_t *ids = cl_xmalloc((in->ninst + 1) * sizeof *ids);
  size_t nid = 0;
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (size_t i = 0; i < in->ninst; i++) {
    measure(in, v->min_margin_ns, &in->inst[i], &v->inst[i], scratch);
    if (v->inst[i].last < 0) continue;
    ids[nid++] = (uint32_t)i;
    const cl_sg_inst_result *r = &v->inst[i];
    if (r->t_first < t0) t0 = r->t_first;
    int64_t e = r->t_first + (int64_t)r->coll_ns;
    if (r->t_last > e) e = r->t_last;
    if (e > t1) t1 = e;
  }
  free(scratch);
  v->job_ns = in->job_ns > 0 ? (double)in->job_ns : (nid && t1 > t0 ? (double)(t1 - t0) : 0);
  find_startup(in, v, ids, nid);
  /* eligible: outside the start-up, in input order */
  size_t ne = 0;
  for (size_t i = 0; i < in->ninst; i++) if (v->inst[i].last >= 0 && !v->inst[i].startup) ids[ne++] = (uint32_t)i;
  v->n_eligible = (int64_t)ne;
  for (size_t k = 0; k < ne; k++) {
    const cl_sg_inst_result *r = &v->inst[ids[k]];
    if (!r->called && r->margin_ns > v->min_margin_ns) v->n_within_clock++;
  }
  if (!ne) { free(ids); v->kind = CL_SG_NO_DATA; return; }

  who_stat *ws = cl_xcalloc((size_t)in->nwho + 1, sizeof *ws);
  unit_table ut = {0};
  count_units(in, v, ids, ne, ws, &ut);
  int nparts = 0;
  for (int w = 0; w < in->nwho; w++) if (ws[w].n) nparts++;
  double *padj = cl_xmalloc(((size_t)in->nwho + 1) * sizeof *padj);
  uint8_t *passes = cl_xcalloc((size_t)in->nwho + 1, 1);
  test_against_chance(&ut, in->nwho, nparts, v->alpha, padj, passes);
  free(ut.culprit); free(ut.first); free(ut.mem.a);
  /* the noise floor: the run's median margin (with a straggler, its own margin; on a
   * time-shared GPU, one scheduler slice) */
  double *m = cl_xmalloc((ne + 1) * sizeof *m);
  for (size_t k = 0; k < ne; k++) m[k] = v->inst[ids[k]].margin_ns;
  v->noise_floor_ns = cl_median_dbl(m, ne);
  /* and the margin of the instances no one beyond chance was last in: a stall must stand out
   * from both (a frequent small lateness lowers the first) */
  size_t nm = 0;
  for (size_t k = 0; k < ne; k++) if (!passes[v->inst[ids[k]].last]) m[nm++] = v->inst[ids[k]].margin_ns;
  double floor_chance = nm ? cl_median_dbl(m, nm) : 0;
  free(m);
  /* stragglers: beyond chance in count, and late by the run's kind of margin, not a fraction
   * of it (a rank always a few us behind in a run whose margins are ms is not one) */
  v->straggler = cl_xcalloc((size_t)in->nwho + 1, sizeof *v->straggler);
  int best = -1;
  double spread = chance_lateness(ws, passes, in->nwho);
  for (int w = 0; w < in->nwho; w++) {
    if (!ws[w].k) continue;
    if (passes[w]) {
      cl_sg_suspect s;
      fill_suspect(in, v, ids, ne, &ws[w], w, padj[w], &s);
      /* at the floor (on a time-shared GPU: one scheduler slice) a rank the scheduler happens
       * to favour last beats chance too; there a straggler must be last in half the units */
      int at_floor = s.median_lateness_ns <= CL_SG_AT_FLOOR * v->noise_floor_ns;
      /* one rank a little behind in most steps (on separate GPUs: a slower card, the rank that
       * logs) by no more than the others are when they are last is the run's own spread with a
       * bias, not a straggler: its lateness must stand out from theirs, or (on a time-shared
       * GPU lateness comes in slices, a sleeper's like everyone's) its count from chance, at
       * twice its expected share */
      int above_others = s.median_lateness_ns >= CL_SG_OVER_OTHERS * spread ||
                         (double)s.last_count >= CL_SG_OVER_OTHERS * s.expected;   /* or its count speaks */
      if (s.median_lateness_ns >= CL_SG_FLOOR_SHARE * v->noise_floor_ns &&
          (!at_floor || 2 * s.last_count >= s.units) && above_others)
        v->straggler[v->nstraggler++] = s;
    }
    if (best < 0 || padj[w] < padj[best] || (padj[w] == padj[best] && ws[w].k > ws[best].k)) best = w;
  }
  if (best >= 0) fill_suspect(in, v, ids, ne, &ws[best], best, padj[best], &v->largest);
  qsort(v->straggler, (size_t)v->nstraggler, sizeof *v->straggler, cmp_suspect);
  /* one-off stalls: far beyond the noise floor, and beyond a named straggler's own lateness */
  /* chance margins have at most an exponential tail (the top gap of exponential arrivals is
   * exponential): P(margin > x) = 2^(-x / median), so over ne instances one exceeds
   * median * log2(ne / alpha) with probability alpha at most */
  double factor = fmax(CL_SG_STALL_FACTOR, log2((double)ne / v->alpha));
  double thr = factor * fmax(fmax(v->noise_floor_ns, floor_chance), v->min_margin_ns);
  v->stall = cl_xmalloc((ne + 1) * sizeof *v->stall);
  for (size_t k = 0; k < ne; k++) {
    cl_sg_inst_result *r = &v->inst[ids[k]];
    if (!r->called || r->margin_ns <= thr) continue;
    int own = 0;
    for (int s = 0; s < v->nstraggler; s++)
      if (v->straggler[s].who == r->last && r->margin_ns <= CL_SG_STALL_FACTOR * v->straggler[s].median_lateness_ns) own = 1;
    if (own) continue;
    r->stall = 1;
    v->stall[v->nstall++] = (cl_sg_stall){ids[k], r->last, r->margin_ns};
  }
  v->stall_threshold_ns = thr;
  name_repeated_stalls(in, v, ids, ne, ws);
  qsort(v->stall, v->nstall, sizeof *v->stall, cmp_stall);
  v->kind = v->nstraggler ? CL_SG_STRAGGLER : v->nstall ? CL_SG_STALLS_ONLY : CL_SG_NONE;
  for (int w = 0; w < in->nwho; w++) free(ws[w].lat);
  free(ws); free(padj); free(passes); free(ids);
}

void cl_sg_free(cl_sg_verdict *v) {
  free(v->straggler); free(v->stall); free(v->inst);
  memset(v, 0, sizeof *v);
}

/* "rank 2 (host n2)" or "rank 2" */
static void name_who(char *b, size_t n, const char *word, int32_t who, const char *host) {
  if (host && host[0]) snprintf(b, n, "%s %d (host %s)", word, who, cl_show(host));   /* a sentence: shown text */
  else snprintf(b, n, "%s %d", word, who);
  cl_utf8_cut(b);
}

const char *cl_sg_verdict_line(const cl_sg_verdict *v, char *buf, size_t n) {
  char who[300], t1[32], t2[32];
  const char *unit = v->unit_is_step ? "steps" : "instances";
  /* channels are not stragglers: a channel that ends last beyond chance is a slow one */
  int ch = !strcmp(v->who_word, "channel");
  size_t len = 0;
  switch (v->kind) {
  case CL_SG_NO_DATA:
    snprintf(buf, n, "no verdict: no instance outside the start-up period had two or more %ss", v->who_word);
    break;
  case CL_SG_STRAGGLER: {
    const cl_sg_suspect *s = &v->straggler[0];
    name_who(who, sizeof who, v->who_word, s->who, s->host);
    if (s->stalls)
      len = (size_t)snprintf(buf, n, "%s is %s: stalled in %lld of %lld %s by a median %s (a stall: over %s); it cost the job %.3f s",
                             who, ch ? "slow" : "a straggler", (long long)s->stalls, (long long)s->units, unit,
                             cl_fmt_time(t1, sizeof t1, s->median_lateness_ns),
                             cl_fmt_time(t2, sizeof t2, v->stall_threshold_ns), s->cost_ns / 1e9);
    else
      len = (size_t)snprintf(buf, n, "%s is %s: last in %lld of %lld %s by a median %s; it cost the job %.3f s",
                             who, ch ? "slow" : "a straggler", (long long)s->last_count, (long long)s->units, unit,
                             cl_fmt_time(t1, sizeof t1, s->median_lateness_ns), s->cost_ns / 1e9);
    if (v->job_ns > 0 && len < n)
      len += (size_t)snprintf(buf + len, n - len, " of %.3f s (%.1f%%)", v->job_ns / 1e9, 100.0 * s->cost_ns / v->job_ns);
    /* stragglers taking turns: every one named is in the line, not only the costliest */
    for (int k = 1; k < v->nstraggler && k <= 3 && len < n; k++) {
      name_who(who, sizeof who, v->who_word, v->straggler[k].who, v->straggler[k].host);
      len += (size_t)snprintf(buf + len, n - len, "%s%s", k == 1 ? (v->nstraggler > 2 ? "; so are " : "; so is ") : ", ", who);
    }
    if (v->nstraggler > 4 && len < n) snprintf(buf + len, n - len, " and %d more", v->nstraggler - 4);
    break;
  }
  case CL_SG_STALLS_ONLY:
    len = (size_t)snprintf(buf, n, "one-off stalls only:");
    for (size_t k = 0; k < v->nstall && k < 3 && len < n; k++) {
      const cl_sg_stall *st = &v->stall[k];
      len += (size_t)snprintf(buf + len, n - len, "%s %s %d +%s (instance %u)", k ? "," : "", v->who_word, st->who,
                              cl_fmt_time(t1, sizeof t1, st->margin_ns), st->inst);
    }
    if (v->nstall > 3 && len < n) len += (size_t)snprintf(buf + len, n - len, " and %zu more", v->nstall - 3);
    if (len < n) snprintf(buf + len, n - len, "; noise floor %s", cl_fmt_time(t2, sizeof t2, v->noise_floor_ns));
    break;
  case CL_SG_NONE:
    if (v->largest.who < 0) {
      snprintf(buf, n, "no %s found: no %s was last by more than %s and the clock error; noise floor %s",
               ch ? "slow channel" : "straggler", v->who_word, cl_fmt_time(t1, sizeof t1, v->min_margin_ns), cl_fmt_time(t2, sizeof t2, v->noise_floor_ns));
      break;
    }
    name_who(who, sizeof who, v->who_word, v->largest.who, v->largest.host);
    snprintf(buf, n, "no %s found: the largest effect was %s, last in %lld of %lld %s (%.1f by chance) by a median %s; noise floor %s",
             ch ? "slow channel" : "straggler", who, (long long)v->largest.last_count, (long long)v->largest.units, unit, v->largest.expected,
             cl_fmt_time(t1, sizeof t1, v->largest.median_lateness_ns), cl_fmt_time(t2, sizeof t2, v->noise_floor_ns));
    break;
  }
  return buf;
}
