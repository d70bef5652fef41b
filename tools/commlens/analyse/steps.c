/* steps.c: see steps.h. Owns the period search, the start-up and phase of the pattern, the walk
 * that follows it through extra and missing collectives, and the per-step culprit. Bounded:
 * the search scores at most CL_ST_WINDOW positions per period. No I/O. */
#include "tools/commlens/analyse/steps.h"
#include "tools/commlens/base/util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- tokens: equal (func, bytes) get equal small ids ---- */
static const cl_st_coll *g_c;
static int cmp_kind(const void *a, const void *b) {
  const cl_st_coll *x = &g_c[*(const uint32_t *)a], *y = &g_c[*(const uint32_t *)b];
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
  return 0;
}
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The gap before a collective that sets a step's boundary apart: the two classes of gaps
 * (in log time: the microseconds between one step's buckets, the forward pass, optimizer and
 * data loading between steps) split where their between-class variance is largest (Otsu),
 * kept when the classes' medians differ CL_ST_GAP_JUMP times or more, each holds at least
 * 1/CL_ST_GAP_MIN_SHARE of the gaps and the long ones are at most half. 0: no such split (or
 * times unknown). */
static int64_t big_gap(const cl_st_coll *c, size_t n) {
  int64_t *g = cl_xmalloc((n + 1) * sizeof *g);
  size_t ng = 0;
  for (size_t i = 1; i < n; i++) {
    if (!c[i].t || !c[i - 1].t) { free(g); return 0; }
    g[ng++] = c[i].t - c[i - 1].t > 1000 ? c[i].t - c[i - 1].t : 1000;   /* gaps under 1 us are one */
  }
  qsort(g, ng, sizeof *g, cmp_i64);
  double *lg = cl_xmalloc((ng + 1) * sizeof *lg), tot = 0, left = 0, best = -1;
  for (size_t k = 0; k < ng; k++) { lg[k] = log((double)g[k]); tot += lg[k]; }
  size_t lo = ng / CL_ST_GAP_MIN_SHARE > 1 ? ng / CL_ST_GAP_MIN_SHARE : 1, split = 0;
  for (size_t k = 1; k < ng; k++) {        /* classes [0, k) and [k, ng) */
    left += lg[k - 1];
    if (k < lo || ng - k < lo || g[k] == g[k - 1]) continue;
    double m0 = left / (double)k, m1 = (tot - left) / (double)(ng - k);
    double bv = (double)k * (double)(ng - k) * (m1 - m0) * (m1 - m0);
    if (bv > best) { best = bv; split = k; }
  }
  /* the long gaps set steps apart only while they are the fewer: when most gaps are long, the
   * short ones are a late thread catching up (a stall, then its collectives back to back), not
   * collectives of one step */
  int64_t thr = 0;
  if (split && ng - split <= split && (double)g[split + (ng - split) / 2] >= CL_ST_GAP_JUMP * (double)g[split / 2])
    thr = g[split];
  free(lg); free(g);
  return thr;
}

/* Tokens: equal (func, bytes) get equal small ids, told apart by whether a step-sized gap
 * comes before them (a job whose every collective is alike still has its steps in time):
 * then tok = 2 * id + gap, and *gaps is set. */
static uint32_t *tokens(const cl_st_coll *c, size_t n, int *gaps) {
  uint32_t *ord = cl_xmalloc((n + 1) * sizeof *ord), *tok = cl_xmalloc((n + 1) * sizeof *tok);
  for (size_t i = 0; i < n; i++) ord[i] = (uint32_t)i;
  g_c = c;
  qsort(ord, n, sizeof *ord, cmp_kind);
  uint32_t id = 0;
  for (size_t k = 0; k < n; k++) {
    if (k && cmp_kind(&ord[k - 1], &ord[k])) id++;
    tok[ord[k]] = id;
  }
  free(ord);
  int64_t thr = big_gap(c, n);
  *gaps = thr != 0;
  if (thr)
    for (size_t i = 0; i < n; i++) tok[i] = 2 * tok[i] + (i && c[i].t - c[i - 1].t >= thr);
  return tok;
}

/* Share of positions i in [from, to) with tok[i] == tok[i + p]. */
static double score(const uint32_t *tok, size_t n, size_t from, size_t to, size_t p) {
  size_t m = 0, k = 0;
  for (size_t i = from; i < to && i + p < n; i++, k++) m += tok[i] == tok[i + p];
  return k ? (double)m / (double)k : 0;
}

/* Whether tok[s .. s+p) repeats at s+p. */
static int period_at(const uint32_t *tok, size_t n, size_t s, size_t p) {
  if (s + 2 * p > n) return 0;
  for (size_t k = 0; k < p; k++) if (tok[s + k] != tok[s + k + p]) return 0;
  return 1;
}

/* The offset in the period where steps begin: after the largest typical gap (the forward pass,
 * the optimizer step, data loading sit between steps, not between a step's collectives). */
static size_t phase(const cl_st_coll *c, size_t n, size_t s, size_t p) {
  if (p == 1) return 0;
  int64_t *g = cl_xmalloc(64 * sizeof *g);
  size_t best = 0; int64_t best_med = INT64_MIN;
  for (size_t f = 0; f < p; f++) {
    size_t ng = 0;
    for (size_t i = s + f + (f ? 0 : p); i < n && ng < 64; i += p) g[ng++] = c[i].t - c[i - 1].t;
    if (!ng) continue;
    qsort(g, ng, sizeof *g, cmp_i64);
    if (g[ng / 2] > best_med) { best_med = g[ng / 2]; best = f; }
  }
  free(g);
  return best;
}

static void new_step(cl_steps *o, const cl_st_coll *c, size_t i, size_t *cap) {
  if (o->nsteps == *cap) {
    *cap = *cap ? 2 * *cap : 64;
    o->step_first = cl_xrealloc(o->step_first, *cap * sizeof *o->step_first);
    o->step_t = cl_xrealloc(o->step_t, *cap * sizeof *o->step_t);
  }
  o->step_first[o->nsteps] = (uint32_t)i; o->step_t[o->nsteps] = c[i].t;
  o->nsteps++;
}

/* How many of the next AGREE_LEN collectives from i follow the pattern from its place j. */
#define AGREE_LEN 16
static size_t agree(const uint32_t *tok, size_t n, size_t i, const uint32_t *pat, size_t p, size_t j) {
  size_t m = 0;
  for (size_t k = 0; k < AGREE_LEN && i + k < n; k++) m += tok[i + k] == pat[(j + k) % p];
  return m;
}

/* Follows the pattern pat[0..p) from position i0. A collective the pattern does not expect is
 * an extra (kept in its step), or stands in for the expected one, or shows that the expected
 * ones before it are missing: whichever reading the next collectives agree with. A step begins at the first pat[0] after a complete period. More than p unexpected
 * collectives in a row leave the pattern (they belong to no step) until a whole period is seen
 * again. */
static void walk(const cl_st_coll *c, const uint32_t *tok, size_t n, size_t i0, const uint32_t *pat, size_t p, cl_steps *o) {
  size_t cap = 0, j = 0, off = 0;
  int on = 1, pending = 0;
  new_step(o, c, i0, &cap);
  for (size_t i = i0; i < n; i++) {
    if (!on) {
      int back = 1;
      for (size_t k = 0; k < p && back; k++) back = i + k < n && tok[i + k] == pat[k];
      if (!back) continue;
      on = 1; j = 0; off = 0; pending = 0;
      new_step(o, c, i, &cap);
    }
    if (pending && j == 0 && tok[i] == pat[0]) { new_step(o, c, i, &cap); pending = 0; }
    int32_t cur = (int32_t)o->nsteps - 1;
    if (tok[i] == pat[j]) {
      o->step_of[i] = cur; off = 0;
      if (++j == p) { j = 0; pending = 1; }
      continue;
    }
    /* which reading explains the next collectives best: this one is extra, it stands in for
     * the expected one, or the next m expected ones are missing (ties: extra) */
    size_t best = agree(tok, n, i + 1, pat, p, j), miss = 0;
    int sub = 0;
    for (size_t m = 1; m <= 3 && m < p; m++) {
      if (tok[i] != pat[(j + m) % p]) continue;
      size_t a = agree(tok, n, i, pat, p, j + m);
      if (a > best) { best = a; miss = m; }
    }
    if (!miss && agree(tok, n, i + 1, pat, p, j + 1) > best) sub = 1;
    if (miss) {
      o->nmissing += (uint32_t)miss;
      for (size_t m = 0; m < miss; m++) {
        if (pending && j == 0) { new_step(o, c, i, &cap); pending = 0; }
        if (++j == p) { j = 0; pending = 1; }
      }
      i--;                                    /* now tok[i] == pat[j] */
      continue;
    }
    if (sub) { o->nmissing++; if (++j == p) { j = 0; pending = 1; } }
    o->step_of[i] = cur; o->nextra++;
    if (++off > p) {                          /* off the pattern: these belong to no step */
      for (size_t k = i + 1 - off; k <= i; k++) o->step_of[k] = -1;
      o->nextra -= (uint32_t)off;
      on = 0;
    }
  }
}

/* The shortest period of tok that scores within CL_ST_NEAR_BEST of the best (each period scored
 * on [from, to) as the median over CL_ST_CHUNKS stretches, so that a different phase in one of
 * them, an evaluation pass, does not decide); 0 if none predicts CL_ST_MIN_SCORE. */
static size_t best_period(const uint32_t *tok, size_t n, size_t from, size_t to, size_t pmax, double *score_out) {
  double *sc = cl_xmalloc((pmax + 2) * sizeof *sc), best = 0, part[CL_ST_CHUNKS];
  size_t len = (to - from + CL_ST_CHUNKS - 1) / CL_ST_CHUNKS;
  for (size_t p = 1; p <= pmax; p++) {
    size_t np = 0;
    for (size_t a = from; a < to; a += len) part[np++] = score(tok, n, a, a + len < to ? a + len : to, p);
    sc[p] = cl_median_dbl(part, np);
    if (sc[p] > best) best = sc[p];
  }
  size_t p = 0;
  for (size_t q = 1; q <= pmax && !p; q++) if (sc[q] >= best - CL_ST_NEAR_BEST) p = q;
  free(sc);
  *score_out = best;
  return best < CL_ST_MIN_SCORE ? 0 : p;
}

/* Whether the step-sized gaps on [from, to) mark the steps of period p: CL_ST_MIN_SCORE of them
 * recur p collectives later, and one place in the period has one in CL_ST_MIN_SCORE of the
 * periods. Gaps that do not are the machine's hiccups (a preempted thread, a loaded node), not
 * step boundaries: a period "found" in them is chance. */
static int gaps_mark_steps(const uint32_t *tok, size_t n, size_t from, size_t to, size_t p) {
  size_t marked = 0, kept = 0, *at = cl_xcalloc(p, sizeof *at), most = 0;
  for (size_t i = from; i < to; i++) {
    if (!(tok[i] & 1)) continue;
    if (++at[(i - from) % p] > most) most = at[(i - from) % p];
    if (i + p < n) { marked++; kept += tok[i + p] & 1; }
  }
  free(at);
  return (double)kept >= CL_ST_MIN_SCORE * (double)marked && (double)most >= CL_ST_MIN_SCORE * (double)((to - from) / p);
}

void cl_steps_detect(const cl_st_coll *c, size_t n, cl_steps *o) {
  memset(o, 0, sizeof *o);
  o->step_of = cl_xmalloc((n + 1) * sizeof *o->step_of);
  for (size_t i = 0; i < n; i++) o->step_of[i] = -1;
  if (n < 6) return;
  int gaps;
  uint32_t *tok = tokens(c, n, &gaps);
  /* score periods on the sequence past its first quarter (past the start-up) */
  size_t from = n / 4, to = n;
  if (to - from > CL_ST_WINDOW) to = from + CL_ST_WINDOW;
  size_t pmax = (n - from) / 3;
  if (pmax > CL_ST_MAX_PERIOD) pmax = CL_ST_MAX_PERIOD;
  double best;
  size_t p = best_period(tok, n, from, to, pmax, &best);
  if (gaps && (!p || !gaps_mark_steps(tok, n, from, to, p))) {   /* the gaps are not the steps */
    for (size_t i = 0; i < n; i++) tok[i] >>= 1;
    p = best_period(tok, n, from, to, pmax, &best);
  } else if (gaps) {
    /* the gaps' period may span several steps: a rank late every third step parts each third
     * step by a longer gap than the others (a real 2-GPU FSDP run: 27 collectives a "step").
     * Where the (func, bytes) pattern alone repeats within it, the repeat is the step (under
     * gradient accumulation that is a micro-batch: a finer unit, not a wrong one) */
    uint32_t *plain = cl_xmalloc((n + 1) * sizeof *plain);
    for (size_t i = 0; i < n; i++) plain[i] = tok[i] >> 1;
    double b0;
    size_t p0 = best_period(plain, n, from, to, pmax, &b0);
    if (p0 > 1 && p0 < p && p % p0 == 0) {
      memcpy(tok, plain, n * sizeof *tok);
      p = p0; best = b0;
    }
    free(plain);
  }
  if (!p) { free(tok); return; }
  size_t s = 0;
  while (s < n && !period_at(tok, n, s, p)) s++;
  if (s >= n) { free(tok); return; }
  size_t i0 = s + phase(c, n, s, p);
  uint32_t *pat = cl_xmalloc(p * sizeof *pat);
  memcpy(pat, tok + i0, p * sizeof *pat);
  o->found = 1; o->period = (uint32_t)p; o->score = best; o->startup = (uint32_t)i0;
  walk(c, tok, n, i0, pat, p, o);
  free(pat); free(tok);
}

void cl_steps_free(cl_steps *s) {
  free(s->step_of); free(s->step_first); free(s->step_t);
  memset(s, 0, sizeof *s);
}

int32_t cl_steps_at(const cl_steps *s, int64_t t) {
  if (!s->nsteps || t < s->step_t[0]) return -1;
  size_t lo = 0, hi = s->nsteps;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (s->step_t[mid] <= t) lo = mid; else hi = mid;
  }
  return (int32_t)lo;
}

/* ---- per step: the culprit and what the step lost ---- */
typedef struct { int32_t step, who; double wait, margin; } rec;
static int cmp_rec(const void *a, const void *b) {
  const rec *x = a, *y = b;
  return x->step != y->step ? x->step - y->step : x->who - y->who;
}
static const cl_step_verdict *g_sv;
static int cmp_lost(const void *a, const void *b) {
  const cl_step_verdict *x = &g_sv[*(const uint32_t *)a], *y = &g_sv[*(const uint32_t *)b];
  if (x->lost_ns != y->lost_ns) return x->lost_ns < y->lost_ns ? 1 : -1;
  return x->step - y->step;
}

void cl_steps_attribute(const cl_st_inst *in, size_t n, uint32_t nsteps, cl_step_verdict *out, uint32_t *order) {
  for (uint32_t k = 0; k < nsteps; k++) out[k] = (cl_step_verdict){(int32_t)k, -1, 0, 0, 0, 0};
  rec *r = cl_xmalloc((n + 1) * sizeof *r);
  size_t nr = 0;
  for (size_t i = 0; i < n; i++) {
    const cl_st_inst *x = &in[i];
    if (x->step < 0 || (uint32_t)x->step >= nsteps) continue;
    cl_step_verdict *v = &out[x->step];
    v->ninst++; v->lost_ns += x->over_median_ns; v->wait_ns += x->wait_ns;
    if (x->called && x->last >= 0) r[nr++] = (rec){x->step, x->last, x->wait_ns, x->margin_ns};
  }
  qsort(r, nr, sizeof *r, cmp_rec);
  double best = 0;
  for (size_t a = 0; a < nr;) {
    size_t e = a; double w = 0, lat = 0;
    while (e < nr && r[e].step == r[a].step && r[e].who == r[a].who) { w += r[e].wait; lat = fmax(lat, r[e].margin); e++; }
    cl_step_verdict *v = &out[r[a].step];
    if (v->culprit < 0) best = 0;
    if (v->culprit < 0 || w > best) { v->culprit = r[a].who; v->lateness_ns = lat; best = w; }
    a = e;
  }
  free(r);
  for (uint32_t k = 0; k < nsteps; k++) order[k] = k;
  g_sv = out;
  qsort(order, nsteps, sizeof *order, cmp_lost);
}
