/* clock_model.c: see clock_model.h. Owns grouping ranks into clocks, the spanning tree of host
 * pairs, the per-pair fit from causal bounds and the queries. It never estimates an offset
 * between ranks of one clock, and never reads files. */
#include "tools/commlens/analyse/clock_model.h"
#include "tools/commlens/base/util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *cl_cm_source_name(enum cl_cm_source s) {
  switch (s) {
  case CL_CM_CAUSAL: return "causal bounds";
  case CL_CM_CAUSAL_WIDENED: return "causal bounds (inconsistent, widened)";
  case CL_CM_SYNC_ONLY: return "clock sync only";
  case CL_CM_UNKNOWN: return "unknown";
  }
  return "?";
}

int cl_cm_func_is_causal(const char *f) {
  static const char *const causal[] = {"AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "AllToAll"};
  for (size_t i = 0; f && i < sizeof causal / sizeof *causal; i++)
    if (!strcmp(f, causal[i])) return 1;
  return 0;
}

/* ---- clocks: one per host boot ---- */
static const char *nz(const char *s) { return s ? s : ""; }
/* Two ranks share a clock when both name a host and the same boot id, or (traces without a boot
 * id) the same host name, and the same clock id: a process that names a timeline of its own (a
 * replay runs each recording from its own start) shares it with no other process of its host.
 * A rank naming no host is a clock of its own. */
static int clock_cmp(const cl_cm_rank *a, const cl_cm_rank *b) {
  int c = strcmp(nz(a->host), nz(b->host));
  if (!c) c = strcmp(nz(a->boot_id), nz(b->boot_id));
  return c ? c : strcmp(nz(a->clock_id), nz(b->clock_id));
}
static const cl_cm_rank *g_ranks;
static int cmp_rank_clock(const void *x, const void *y) {
  int a = *(const int *)x, b = *(const int *)y;
  int c = clock_cmp(&g_ranks[a], &g_ranks[b]);
  return c ? c : a - b;
}
static void group_clocks(const cl_cm_input *in, cl_clock_model *m) {
  int n = in->nranks;
  int *ord = cl_xmalloc((size_t)(n ? n : 1) * sizeof *ord);
  for (int i = 0; i < n; i++) ord[i] = i;
  g_ranks = in->ranks;
  qsort(ord, (size_t)n, sizeof *ord, cmp_rank_clock);
  m->clock = cl_xcalloc((size_t)(n ? n : 1), sizeof *m->clock);
  for (int k = 0; k < n; k++) {
    const cl_cm_rank *r = &in->ranks[ord[k]];
    int same = k > 0 && nz(r->host)[0] && !clock_cmp(r, &in->ranks[ord[k - 1]]);
    if (!same) m->clock[m->nclocks++] = (cl_cm_clock){ord[k], 0, -1, -1, 0};
    cl_cm_clock *c = &m->clock[m->nclocks - 1];
    if (ord[k] < c->first_rank) c->first_rank = ord[k];
    c->nranks++;
    m->clock_of_rank[ord[k]] = m->nclocks - 1;
  }
  free(ord);
}

/* ---- the spanning tree: each round attaches clocks that share an instance with the tree ---- */
typedef struct { int x, anchor; } link;
static int cmp_link(const void *a, const void *b) {
  const link *p = a, *q = b;
  return p->x != q->x ? p->x - q->x : p->anchor - q->anchor;
}
static void build_tree(const cl_cm_input *in, cl_clock_model *m) {
  int nc = m->nclocks;
  uint32_t *stamp = cl_xmalloc((size_t)nc * sizeof *stamp);
  int *present = cl_xmalloc((size_t)nc * sizeof *present);
  for (;;) {
    CL_VEC(link) links = {0};
    for (int c = 0; c < nc; c++) stamp[c] = UINT32_MAX;
    for (size_t k = 0; k < in->ninst; k++) {
      const cl_cm_inst *ins = &in->inst[k];
      if (!ins->causal) continue;
      int np = 0, anchor = -1;
      for (uint32_t j = 0; j < ins->count; j++) {
        int32_t r = in->obs[ins->first + j].rank;
        if (r < 0 || r >= m->nranks) continue;
        int c = m->clock_of_rank[r];
        if (stamp[c] == (uint32_t)k) continue;
        stamp[c] = (uint32_t)k; present[np++] = c;
        int in_tree = c == m->root || m->clock[c].parent >= 0;
        if (in_tree && (anchor < 0 || m->clock[c].depth < m->clock[anchor].depth ||
                        (m->clock[c].depth == m->clock[anchor].depth && c < anchor))) anchor = c;
      }
      if (anchor < 0) continue;
      for (int j = 0; j < np; j++)
        if (present[j] != m->root && m->clock[present[j]].parent < 0) CL_PUSH(links, ((link){present[j], anchor}));
    }
    if (!links.n) { free(links.a); break; }
    qsort(links.a, links.n, sizeof *links.a, cmp_link);
    /* per new clock, the anchor it shares most instances with (ties: shallower, lower) */
    for (size_t a = 0; a < links.n;) {
      int x = links.a[a].x, best = -1; size_t best_n = 0;
      size_t e = a;
      while (e < links.n && links.a[e].x == x) {
        size_t s = e;
        while (e < links.n && links.a[e].x == x && links.a[e].anchor == links.a[s].anchor) e++;
        int an = links.a[s].anchor;
        if (e - s > best_n || (e - s == best_n && m->clock[an].depth < m->clock[best].depth)) { best = an; best_n = e - s; }
      }
      m->clock[x].parent = best;
      m->clock[x].depth = m->clock[best].depth + 1;
      a = e;
    }
    free(links.a);
  }
  free(stamp); free(present);
}

/* ---- one host pair: the lines offset(t) = a + b*tau that every bound admits ---- */
typedef struct { int64_t t; double l, u; } bound;   /* t: parent clock; l, u: minus a base */
typedef struct { double tau, v; } pt;
static int cmp_bound(const void *a, const void *b) {
  const bound *p = a, *q = b;
  return (p->t > q->t) - (p->t < q->t);
}
static double cross(pt o, pt a, pt b) { return (a.tau - o.tau) * (b.v - o.v) - (a.v - o.v) * (b.tau - o.tau); }
/* The vertices of the upper (sign 1) or lower (sign -1) convex hull of points sorted by tau:
 * a line lies above every point iff it lies above the upper hull's vertices. */
static size_t hull(const pt *p, size_t n, int sign, pt *out) {
  size_t h = 0;
  for (size_t i = 0; i < n; i++) {
    if (h && p[i].tau == out[h - 1].tau) {           /* same time: keep the binding value */
      if (sign * (p[i].v - out[h - 1].v) > 0) h--; else continue;
    }
    while (h >= 2 && sign * cross(out[h - 2], out[h - 1], p[i]) >= 0) h--;
    out[h++] = p[i];
  }
  return h;
}
typedef struct { const pt *L, *U; size_t nl, nu; double tau; } fitset;
/* min over U of (u - b tau) - max over L of (l - b tau): the room for `a` at drift b (concave). */
static double slack(const fitset *f, double b) {
  double mu = INFINITY, ml = -INFINITY;
  for (size_t i = 0; i < f->nu; i++) mu = fmin(mu, f->U[i].v - b * f->U[i].tau);
  for (size_t i = 0; i < f->nl; i++) ml = fmax(ml, f->L[i].v - b * f->L[i].tau);
  return mu - ml;
}
/* The highest / lowest offset at time f->tau over the lines of drift b that the bounds admit. */
static double hi_at(const fitset *f, double b) {
  double mu = INFINITY;
  for (size_t i = 0; i < f->nu; i++) mu = fmin(mu, f->U[i].v + b * (f->tau - f->U[i].tau));
  return mu;
}
static double lo_at(const fitset *f, double b) {
  double ml = -INFINITY;
  for (size_t i = 0; i < f->nl; i++) ml = fmax(ml, f->L[i].v + b * (f->tau - f->L[i].tau));
  return -ml;    /* negated: maximised like the others */
}
/* Maximum of a concave function of b over [b0, b1] (ternary search; 120 rounds reach doubles). */
static double argmax(const fitset *f, double (*fn)(const fitset *, double), double b0, double b1) {
  for (int it = 0; it < 120 && b1 > b0; it++) {
    double m1 = b0 + (b1 - b0) / 3, m2 = b1 - (b1 - b0) / 3;
    if (fn(f, m1) < fn(f, m2)) b0 = m1; else b1 = m2;
  }
  return (b0 + b1) / 2;
}
/* The edge of {b : slack(b) >= 0} between `in` (feasible) and `out`. */
static double edge(const fitset *f, double in, double out) {
  for (int it = 0; it < 100; it++) {
    double mid = (in + out) / 2;
    if (slack(f, mid) >= 0) in = mid; else out = mid;
  }
  return in;
}

static void fit_pair(cl_cm_pair *p, bound *bs, size_t n, double widen) {
  qsort(bs, n, sizeof *bs, cmp_bound);
  pt *lp = cl_xmalloc(n * sizeof *lp), *up = cl_xmalloc(n * sizeof *up);
  pt *lh = cl_xmalloc(n * sizeof *lh), *uh = cl_xmalloc(n * sizeof *uh);
  for (size_t i = 0; i < n; i++) {
    double tau = (double)(bs[i].t - p->t0);
    lp[i] = (pt){tau, bs[i].l}; up[i] = (pt){tau, bs[i].u};
  }
  fitset f = {lh, uh, hull(lp, n, 1, lh), hull(up, n, -1, uh), 0};
  double B = CL_CM_MAX_DRIFT;
  double bstar = argmax(&f, slack, -B, B), g = slack(&f, bstar);
  p->source = CL_CM_CAUSAL;
  if (g < 0) {            /* no line fits every bound: move every bound out by the deficit */
    for (size_t i = 0; i < f.nl; i++) lh[i].v += g;
    for (size_t i = 0; i < f.nu; i++) uh[i].v -= g;
    p->source = CL_CM_CAUSAL_WIDENED;
    p->deficit_ns = -g;
  }
  p->drift_lo = slack(&f, -B) >= 0 ? -B : edge(&f, bstar, -B);
  p->drift_hi = slack(&f, B) >= 0 ? B : edge(&f, bstar, B);
  p->drift = bstar;
  double tmax = (double)(p->t1 - p->t0);
  /* the estimate: the middle of the room for `a` at the drift with most room */
  double mu = INFINITY, ml = -INFINITY;
  for (size_t i = 0; i < f.nu; i++) mu = fmin(mu, uh[i].v - bstar * uh[i].tau);
  for (size_t i = 0; i < f.nl; i++) ml = fmax(ml, lh[i].v - bstar * lh[i].tau);
  double a = (mu + ml) / 2;
  for (int j = 0; j < CL_CM_GRID; j++) {
    f.tau = tmax * j / (CL_CM_GRID - 1);
    double bh = argmax(&f, hi_at, p->drift_lo, p->drift_hi), bl = argmax(&f, lo_at, p->drift_lo, p->drift_hi);
    p->grid_hi[j] = hi_at(&f, bh);
    p->grid_lo[j] = -lo_at(&f, bl);
    /* the estimate is admitted, so it lies inside (guards the last rounding digit) */
    double e = a + bstar * f.tau;
    if (p->grid_hi[j] < e) p->grid_hi[j] = e;
    if (p->grid_lo[j] > e) p->grid_lo[j] = e;
    double w = p->grid_hi[j] - p->grid_lo[j] + 2 * widen;
    if (w > p->max_width_ns) p->max_width_ns = w;
  }
  p->widen_ns = widen;
  p->t_mid = p->t0 + (int64_t)(tmax / 2);
  p->line_ns = a + bstar * (double)(p->t_mid - p->t0);
  free(lp); free(up); free(lh); free(uh);
  /* grid values and line_ns are relative to the base the caller subtracted */
}

/* The raw interval (without widen) of pair p at parent time t, conservative between grid points
 * (the upper end is convex in t, the lower concave: chords bound them) and outside the span
 * (slopes are bounded by the admitted drifts). */
static void pair_raw(const cl_cm_pair *p, int64_t t, double *lo, double *hi) {
  double tmax = (double)(p->t1 - p->t0), tau = (double)(t - p->t0);
  if (tmax <= 0 || tau <= 0) {
    double d = tau < 0 ? -tau : 0;
    *hi = p->grid_hi[0] - p->drift_lo * d; *lo = p->grid_lo[0] - p->drift_hi * d;
    if (tmax <= 0 && tau > 0) { *hi = p->grid_hi[0] + p->drift_hi * tau; *lo = p->grid_lo[0] + p->drift_lo * tau; }
    return;
  }
  if (tau >= tmax) {
    double d = tau - tmax;
    *hi = p->grid_hi[CL_CM_GRID - 1] + p->drift_hi * d; *lo = p->grid_lo[CL_CM_GRID - 1] + p->drift_lo * d;
    return;
  }
  double x = tau / tmax * (CL_CM_GRID - 1);
  int j = (int)x; if (j > CL_CM_GRID - 2) j = CL_CM_GRID - 2;
  double w = x - j;
  *hi = p->grid_hi[j] * (1 - w) + p->grid_hi[j + 1] * w;
  *lo = p->grid_lo[j] * (1 - w) + p->grid_lo[j + 1] * w;
}

/* The pair's estimate and widened interval at parent time t. Returns 0 when unbounded. */
static int pair_at(const cl_cm_pair *p, int64_t t, double *est, double *lo, double *hi) {
  if (p->source == CL_CM_UNKNOWN) { *est = 0; *lo = -INFINITY; *hi = INFINITY; return 0; }
  if (p->source == CL_CM_SYNC_ONLY) { *est = 0; *lo = -p->widen_ns; *hi = p->widen_ns; return 1; }
  *est = p->line_ns + p->drift * (double)(t - p->t_mid);
  pair_raw(p, t, lo, hi);
  if (*est > *hi) *est = *hi;
  if (*est < *lo) *est = *lo;
  *lo -= p->widen_ns; *hi += p->widen_ns;
  /* both hosts synchronised: neither clock is further than its maxerror from true time, which
   * may bound what causality cannot (a host late every time looks like a clock ahead); bounds
   * that disagree with it mean the sync claim is wrong, and causality alone is kept */
  double S = p->sync_bound_ns;
  if (S < *hi - *lo && fmax(*lo, -S) <= fmin(*hi, S) && (*lo < -S || *hi > S)) {
    *lo = fmax(*lo, -S); *hi = fmin(*hi, S);
    *est = (*lo + *hi) / 2;
  }
  return 1;
}

static int synced(const cl_cm_rank *r) { return r->sync_known && !r->unsynchronised; }
/* A host's sync error (estimated or maximum), ns; 0 when not synchronised or not recorded (the
 * kernel's figures then mean nothing). */
static double sync_err_ns(const cl_cm_rank *r, int max) {
  if (!synced(r)) return 0;
  return 1e3 * (double)(max ? r->maxerror_us : r->esterror_us);
}

static void fit_pairs(const cl_cm_input *in, cl_clock_model *m) {
  int nc = m->nclocks;
  CL_VEC(bound) *bs = cl_xcalloc((size_t)nc, sizeof *bs);
  int64_t *tb = cl_xcalloc((size_t)nc, sizeof *tb), *te = cl_xcalloc((size_t)nc, sizeof *te), *vb = cl_xcalloc((size_t)nc, sizeof *vb);
  uint32_t *stamp = cl_xmalloc((size_t)nc * sizeof *stamp);
  int64_t *minend = cl_xmalloc((size_t)nc * sizeof *minend), *maxstart = cl_xmalloc((size_t)nc * sizeof *maxstart);
  int *present = cl_xmalloc((size_t)nc * sizeof *present);
  for (int c = 0; c < nc; c++) stamp[c] = UINT32_MAX;
  for (size_t k = 0; k < in->ninst; k++) {
    const cl_cm_inst *ins = &in->inst[k];
    if (!ins->causal) continue;
    int np = 0;
    for (uint32_t j = 0; j < ins->count; j++) {
      const cl_cm_obs *o = &in->obs[ins->first + j];
      if (o->rank < 0 || o->rank >= m->nranks || o->end < o->start) continue;
      int c = m->clock_of_rank[o->rank];
      if (stamp[c] != (uint32_t)k) { stamp[c] = (uint32_t)k; present[np++] = c; minend[c] = o->end; maxstart[c] = o->start; }
      if (o->end < minend[c]) minend[c] = o->end;
      if (o->start > maxstart[c]) maxstart[c] = o->start;
    }
    for (int j = 0; j < np; j++) {
      int c = present[j], p = m->clock[c].parent;
      if (p < 0 || stamp[p] != (uint32_t)k) continue;
      /* child - parent offset d: end_c - d >= start_p and end_p >= start_c - d */
      int64_t t = maxstart[p];
      if (!bs[c].n) { tb[c] = te[c] = t; vb[c] = minend[c] - maxstart[p]; }
      if (t < tb[c]) tb[c] = t;
      if (t > te[c]) te[c] = t;
      CL_PUSH(bs[c], ((bound){t, (double)(maxstart[c] - minend[p] - vb[c]), (double)(minend[c] - maxstart[p] - vb[c])}));
    }
  }
  m->pair = cl_xcalloc((size_t)nc, sizeof *m->pair);
  for (int c = 0; c < nc; c++) {
    int p = m->clock[c].parent;
    if (p < 0) continue;
    if (!bs[c].n) { m->clock[c].parent = -1; continue; }   /* only malformed spans joined it */
    cl_cm_pair *e = &m->pair[m->npairs];
    m->clock[c].pair = m->npairs++;
    e->child = c; e->parent = p; e->nconstraints = (int64_t)bs[c].n;
    const cl_cm_rank *rc = &in->ranks[m->clock[c].first_rank], *rp = &in->ranks[m->clock[p].first_rank];
    e->t0 = tb[c]; e->t1 = te[c];
    fit_pair(e, bs[c].a, bs[c].n, sync_err_ns(rc, 0) + sync_err_ns(rp, 0));
    e->sync_bound_ns = synced(rc) && synced(rp) ? sync_err_ns(rc, 1) + sync_err_ns(rp, 1) : INFINITY;
    for (int j = 0; j < CL_CM_GRID; j++) { e->grid_lo[j] += (double)vb[c]; e->grid_hi[j] += (double)vb[c]; }
    e->line_ns += (double)vb[c];
    pair_at(e, e->t_mid, &e->offset_ns, &e->lo_ns, &e->hi_ns);
    free(bs[c].a);
  }
  /* clocks the tree did not reach hang off the reference: by the sync state, or unbounded */
  for (int c = 0; c < nc; c++) {
    if (c == m->root || m->clock[c].parent >= 0) continue;
    const cl_cm_rank *rc = &in->ranks[m->clock[c].first_rank], *rr = &in->ranks[m->clock[m->root].first_rank];
    cl_cm_pair *e = &m->pair[m->npairs];
    m->clock[c].pair = m->npairs++;
    m->clock[c].parent = m->root; m->clock[c].depth = 1;
    e->child = c; e->parent = m->root;
    int both = synced(rc) && synced(rr);
    e->source = both ? CL_CM_SYNC_ONLY : CL_CM_UNKNOWN;
    e->widen_ns = both ? sync_err_ns(rc, 1) + sync_err_ns(rr, 1) : INFINITY;
    e->sync_bound_ns = e->widen_ns;
    e->lo_ns = -e->widen_ns; e->hi_ns = e->widen_ns; e->max_width_ns = 2 * e->widen_ns;
  }
  free(bs); free(tb); free(te); free(vb); free(stamp); free(minend); free(maxstart); free(present);
}

void cl_cm_build(const cl_cm_input *in, cl_clock_model *m) {
  memset(m, 0, sizeof *m);
  m->nranks = in->nranks;
  m->clock_of_rank = cl_xcalloc((size_t)(in->nranks ? in->nranks : 1), sizeof *m->clock_of_rank);
  group_clocks(in, m);
  if (!m->nclocks) { m->pair = cl_xcalloc(1, sizeof *m->pair); return; }
  m->root = m->clock_of_rank[0];
  build_tree(in, m);
  fit_pairs(in, m);
  for (int c = 0; c < m->nclocks; c++) {    /* depths again: fit_pairs may re-hang clocks */
    int d = 0;
    for (int x = c; x != m->root && m->clock[x].parent >= 0 && d <= m->nclocks; x = m->clock[x].parent) d++;
    m->clock[c].depth = d;
  }
}

void cl_cm_free(cl_clock_model *m) {
  free(m->clock_of_rank); free(m->clock); free(m->pair);
  memset(m, 0, sizeof *m);
}

/* Clock c minus the reference at reference time t: estimate and interval (path sums). */
static int clock_at(const cl_clock_model *m, int c, int64_t t, double *est, double *lo, double *hi) {
  if (c == m->root || m->clock[c].pair < 0) { *est = *lo = *hi = 0; return 1; }
  double pe, pl, ph;
  int ok = clock_at(m, m->clock[c].parent, t, &pe, &pl, &ph);
  double e, l, h;
  ok &= pair_at(&m->pair[m->clock[c].pair], t + (int64_t)pe, &e, &l, &h);
  *est = pe + e; *lo = pl + l; *hi = ph + h;
  return ok;
}

int cl_cm_offset(const cl_clock_model *m, int rank, int64_t t, double *est, double *lo, double *hi) {
  *est = *lo = *hi = 0;
  if (rank < 0 || rank >= m->nranks) return 0;
  int c = m->clock_of_rank[rank];
  double e0;
  /* t is on the rank's clock: a first pass finds the reference time near it */
  double l, h;
  clock_at(m, c, t, &e0, &l, &h);
  return clock_at(m, c, t - (int64_t)e0, est, lo, hi);
}

int64_t cl_cm_align(const cl_clock_model *m, int rank, int64_t t) {
  double e, l, h;
  cl_cm_offset(m, rank, t, &e, &l, &h);
  return t - (int64_t)llround(e);
}

int cl_cm_pair_error(const cl_clock_model *m, int r, int s, int64_t t, double *lo, double *hi) {
  *lo = *hi = 0;
  if (r < 0 || s < 0 || r >= m->nranks || s >= m->nranks) return 0;
  int a = m->clock_of_rank[r], b = m->clock_of_rank[s];
  /* D = off_a - off_b over the tree path through the lowest common ancestor; E = D_est - D */
  double dest = 0, dlo = 0, dhi = 0;
  int ok = 1;
  while (a != b) {
    int up_a = m->clock[a].depth >= m->clock[b].depth;
    int c = up_a ? a : b;
    if (m->clock[c].pair < 0) return 0;    /* cannot happen: only the root has no pair */
    double pe, pl, ph, e, l, h;
    clock_at(m, m->clock[c].parent, t, &pe, &pl, &ph);
    ok &= pair_at(&m->pair[m->clock[c].pair], t + (int64_t)pe, &e, &l, &h);
    if (up_a) { dest += e; dlo += l; dhi += h; a = m->clock[a].parent; }
    else { dest -= e; dlo -= h; dhi -= l; b = m->clock[b].parent; }
  }
  if (!ok) { *lo = -INFINITY; *hi = INFINITY; return 0; }
  *lo = dest - dhi; *hi = dest - dlo;
  return 1;
}

int cl_cm_lateness_called(const cl_clock_model *m, int r, int s, int64_t t, double lateness_ns) {
  double lo, hi;
  if (!cl_cm_pair_error(m, r, s, t, &lo, &hi)) return 0;
  return lateness_ns + lo > 0;
}
