/* perm_test.c: see perm_test.h. Owns the permutation distribution of one participant's total
 * effect (counted exactly on leveled values where that is small, else bounded by Chernoff), the
 * cap on each unit's effect, and the families of the test (every unit; every k-th unit at each
 * phase) with their Bonferroni weights. Arithmetic only: never reads files, never decides
 * wording. */
#include "tools/commlens/analyse/perm_test.h"
#include "tools/commlens/base/util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The cumulant generating function of the sum, K(l) = sum over units of
 * log(mean over the unit's participants of exp(l x)), and its derivative (the mean under the
 * tilted distribution), with x = min(v, cap) / scale. Each unit's terms are taken relative to
 * its largest, so nothing overflows. */
typedef struct { const cl_pt_unit *u; size_t nu; const cl_pt_entry *e; double cap, scale; } tail_ctx;

static double xval(const tail_ctx *c, double v) { return (c->cap > 0 && v > c->cap ? c->cap : v) / c->scale; }
static int parts(const cl_pt_unit *u) { return u->nparts > (int32_t)u->count ? u->nparts : (int)u->count; }

static void cumulant(const tail_ctx *c, double l, double *k, double *dk) {
  double K = 0, D = 0;
  for (size_t i = 0; i < c->nu; i++) {
    const cl_pt_unit *u = &c->u[i];
    if (!u->count) continue;
    double xmax = 0;
    for (uint32_t j = 0; j < u->count; j++) xmax = fmax(xmax, xval(c, c->e[u->first + j].v));
    double m = l * xmax, s = (double)(parts(u) - (int)u->count) * exp(-m), sd = 0;
    for (uint32_t j = 0; j < u->count; j++) {
      double x = xval(c, c->e[u->first + j].v), w = exp(l * x - m);
      s += w; sd += x * w;
    }
    K += m + log(s) - log((double)parts(u));
    D += sd / s;
  }
  *k = K; *dk = D;
}

double cl_pt_log_tail(const cl_pt_unit *u, size_t nu, const cl_pt_entry *e, double cap, double t) {
  tail_ctx c = { u, nu, e, cap, 1 };
  double top = 0;
  for (size_t i = 0; i < nu; i++)
    for (uint32_t j = 0; j < u[i].count; j++) top = fmax(top, xval(&c, e[u[i].first + j].v));
  if (top <= 0) return t > 0 ? -INFINITY : 0;
  c.scale = top;
  double ts = t / top, k0, mean, most = 0, at_most = 0;
  cumulant(&c, 0, &k0, &mean);
  if (ts <= mean * (1 + 1e-12)) return 0;
  for (size_t i = 0; i < nu; i++) {   /* the largest sum: the participant holds every unit's largest */
    double xmax = 0; int n = 0;
    for (uint32_t j = 0; j < u[i].count; j++) xmax = fmax(xmax, xval(&c, e[u[i].first + j].v));
    for (uint32_t j = 0; j < u[i].count && xmax > 0; j++) n += xval(&c, e[u[i].first + j].v) >= xmax * (1 - 1e-12);
    most += xmax;
    if (xmax > 0) at_most += log((double)n / (double)parts(&u[i]));
  }
  if (ts > most * (1 + 1e-9)) return -INFINITY;
  if (ts >= most * (1 - 1e-9)) return at_most;   /* the limit l -> inf: exactly that assignment */
  /* K' rises from the mean to `most`: bisect for K'(l) = ts, where K(l) - l ts is least (any l
   * gives a valid bound; the root gives the tightest) */
  double lo = 0, hi = 1, k, dk;
  for (cumulant(&c, hi, &k, &dk); dk < ts && hi < 1e12; cumulant(&c, hi, &k, &dk)) { lo = hi; hi *= 4; }
  for (int it = 0; it < 60 && hi - lo > 1e-9 * hi; it++) {
    double mid = (lo + hi) / 2;
    cumulant(&c, mid, &k, &dk);
    if (dk < ts) lo = mid; else hi = mid;
  }
  cumulant(&c, hi, &k, &dk);
  return fmin(0, fmax(k - hi * ts, at_most));   /* never below the exact probability of the maximum */
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double cl_pt_cap(const cl_pt_unit *u, size_t nu, const cl_pt_entry *e) {
  double *m = cl_xmalloc((nu + 1) * sizeof *m);
  size_t n = 0;
  for (size_t i = 0; i < nu; i++) {
    double x = 0;
    for (uint32_t j = 0; j < u[i].count; j++) x = fmax(x, e[u[i].first + j].v);
    if (x > 0) m[n++] = x;
  }
  double cap = 0;
  if (n) {   /* the 98th percentile, and at least the third largest: two one-off stalls count as much as it */
    qsort(m, n, sizeof *m, cmp_dbl);
    size_t k = (size_t)ceil(0.98 * (double)n) - 1;
    if (n >= 3 && k > n - 3) k = n - 3;
    cap = m[k];
  }
  free(m);
  return cap;
}

/* ---- the exact distribution, where it is small enough to count ---- */
#define PT_LEVELS 32          /* a unit's capped value, rounded up to 1/32 of the cap */
#define PT_EXACT_WORK 1e7     /* (entries + 1) x states: counted exactly up to this, else bounded */

static int level(double v, double cap) {
  int l = (int)ceil(fmin(v, cap) / cap * PT_LEVELS);
  return l < 1 ? 1 : l > PT_LEVELS ? PT_LEVELS : l;
}

/* The permutation distribution of the sum of the units' values, each rounded up to a level of
 * the cap (a map of the data that treats every participant alike: the test of the leveled sum
 * is an exact permutation test), as tail[s] = P(sum >= s) for s in [0, *n); NULL when counting
 * it would cost more than PT_EXACT_WORK. */
static double *exact_tail(const cl_pt_unit *u, size_t nu, const cl_pt_entry *e, double cap, size_t *n) {
  double work = 0, states = 1;
  for (size_t i = 0; i < nu; i++) {
    states += PT_LEVELS;
    work += (double)((u[i].count < PT_LEVELS ? u[i].count : PT_LEVELS) + 1) * states;
  }
  if (cap <= 0 || work > PT_EXACT_WORK) return NULL;
  size_t cap_s = (size_t)states + 1, top = 0;
  double *p = cl_xcalloc(cap_s, sizeof *p), *q = cl_xcalloc(cap_s, sizeof *q), cnt[PT_LEVELS + 1];
  int lv[PT_LEVELS + 1];
  p[0] = 1;
  for (size_t i = 0; i < nu; i++) {
    if (!u[i].count) continue;
    double w = 1.0 / parts(&u[i]);
    memset(cnt, 0, sizeof cnt);
    cnt[0] = (double)(parts(&u[i]) - (int)u[i].count) * w;
    for (uint32_t j = 0; j < u[i].count; j++) cnt[level(e[u[i].first + j].v, cap)] += w;
    int nl = 0, hi = 0;   /* the unit's levels, each with the chance that a participant draws it */
    for (int l = 0; l <= PT_LEVELS; l++) if (cnt[l] > 0) { lv[nl++] = l; hi = l; }
    memset(q, 0, (top + (size_t)hi + 1) * sizeof *q);
    for (size_t s = 0; s <= top; s++)
      if (p[s] != 0) for (int k = 0; k < nl; k++) q[s + (size_t)lv[k]] += p[s] * cnt[lv[k]];
    top += (size_t)hi;
    double *t = p; p = q; q = t;
  }
  free(q);
  for (size_t s = top; s-- > 0;) p[s] += p[s + 1];   /* P(sum >= s) */
  *n = top + 1;
  return p;
}

/* ---- the families ---- */
static const double *g_t;
static int cmp_by_t(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  if (g_t[x] != g_t[y]) return g_t[x] < g_t[y] ? 1 : -1;
  return (x > y) - (x < y);
}

typedef struct {
  const cl_pt_entry *e; double cap; int nwho, nhyp; double alpha;
  double *t; int32_t *touched;   /* scratch, nwho each; t all zero between families */
  int64_t *lev;                  /* scratch: each participant's leveled total, zero between families */
  cl_pt_result *out;
} family_ctx;

/* One family (its units sub[0..n)) at Bonferroni weight w: participants by their capped total,
 * largest first, each p-value kept where it beats the participant's best so far. A smaller
 * total cannot have a smaller p-value, so the walk stops at the first that cannot be named
 * (every unit: at the first that reaches 1, so that the largest effects keep their p). */
static void family(family_ctx *f, const cl_pt_unit *sub, size_t n, double w, int32_t k, int32_t phase) {
  size_t nt = 0;
  double mean = 0, all = 0;
  for (size_t i = 0; i < n; i++)
    for (uint32_t j = 0; j < sub[i].count; j++) {
      const cl_pt_entry *x = &f->e[sub[i].first + j];
      if (x->who < 0 || x->who >= f->nwho || x->v <= 0) continue;
      double v = f->cap > 0 && x->v > f->cap ? f->cap : x->v;
      if (f->t[x->who] == 0) f->touched[nt++] = x->who;
      f->t[x->who] += v;
      all += v;
      mean += v / (double)parts(&sub[i]);
    }
  g_t = f->t;
  qsort(f->touched, nt, sizeof *f->touched, cmp_by_t);
  /* small enough: the exact distribution of the leveled sum (every participant's leveled total
   * counted alongside); else the Chernoff bound of the sum itself. Which one is decided by the
   * units' shape alone, before any participant is looked at */
  size_t ns = 0;
  double *tail = exact_tail(sub, n, f->e, f->cap, &ns);
  if (tail)
    for (size_t i = 0; i < n; i++)
      for (uint32_t j = 0; j < sub[i].count; j++) {
        const cl_pt_entry *x = &f->e[sub[i].first + j];
        if (x->who >= 0 && x->who < f->nwho && x->v > 0) f->lev[x->who] += level(x->v, f->cap);
      }
  for (size_t i = 0; i < nt; i++) {
    int32_t who = f->touched[i];
    double raw = tail ? (f->lev[who] < (int64_t)ns ? tail[f->lev[who]] : 0) : exp(cl_pt_log_tail(sub, n, f->e, f->cap, f->t[who]));
    double p = fmin(1, raw * (double)f->nhyp / w);
    double others = f->nhyp > 1 ? (all - f->t[who]) / (f->nhyp - 1) : 0;
    if (p < f->out[who].p || !f->out[who].k) f->out[who] = (cl_pt_result){ p, k, phase, f->t[who], mean, others };
    if (k == 1 ? p >= 1 : p > f->alpha) break;
  }
  for (size_t i = 0; i < nt; i++) { f->t[f->touched[i]] = 0; f->lev[f->touched[i]] = 0; }
  free(tail);
}

void cl_pt_run(const cl_pt_unit *u, size_t nu, const cl_pt_entry *e, int nwho, int nhyp, double alpha,
               int max_period, cl_pt_result *out) {
  for (int w = 0; w < nwho; w++) out[w] = (cl_pt_result){ 1, 0, 0, 0, 0, 0 };
  double cap = cl_pt_cap(u, nu, e);
  if (cap <= 0 || nhyp < 1 || nwho < 1) return;
  /* periods with at least three units at every phase; their weights fixed by the number of
   * units alone (known before any effect is seen) */
  int kmax = max_period;
  while (kmax >= 2 && (size_t)kmax * 3 > nu) kmax--;
  int phases = 0;
  for (int k = 2; k <= kmax; k++) phases += k;
  family_ctx f = { e, cap, nwho, nhyp, alpha, cl_xcalloc((size_t)nwho, sizeof(double)),
                   cl_xmalloc((size_t)nwho * sizeof(int32_t)), cl_xcalloc((size_t)nwho, sizeof(int64_t)), out };
  cl_pt_unit *sub = cl_xmalloc((nu + 1) * sizeof *sub);
  family(&f, u, nu, phases ? 0.5 : 1, 1, 0);
  for (int k = 2; k <= kmax; k++)
    for (int ph = 0; ph < k; ph++) {
      size_t n = 0;
      for (size_t i = 0; i < nu; i++)
        if (((u[i].index % k) + k) % k == ph) sub[n++] = u[i];
      family(&f, sub, n, 0.5 / phases, k, ph);
    }
  free(sub); free(f.t); free(f.touched); free(f.lev);
}
