/* test_perm_test.c: the straggler test's null model (tools/commlens/analyse/perm_test.c): the
 * Chernoff bound of the permutation distribution against the exact distribution (computed by
 * convolution on small integer-valued cases), its limits, the families (every unit, every k-th
 * unit), the cap, and the rate at which exchangeable data names anyone (at most alpha). */
#include "tl.h"
#include "tools/commlens/analyse/perm_test.h"
#include "tools/commlens/base/util.h"
#include <math.h>

static uint64_t rng;
static double urand(void) {            /* xorshift64*, fixed seeds: deterministic */
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return (double)((rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

typedef struct { CL_VEC(cl_pt_unit) u; CL_VEC(cl_pt_entry) e; } data;
static void data_free(data *d) { free(d->u.a); free(d->e.a); memset(d, 0, sizeof *d); }
/* A unit of `parts` participants whose nonzero effects are v[0..n) held by who[0..n). */
static void unit(data *d, int parts, int n, const int32_t *who, const double *v) {
  cl_pt_unit x = { (uint32_t)d->e.n, 0, parts, (int64_t)d->u.n };
  CL_PUSH(d->u, x);
  for (int j = 0; j < n; j++) if (v[j] > 0) { CL_PUSH(d->e, ((cl_pt_entry){ who[j], v[j] })); d->u.a[d->u.n - 1].count++; }
}

/* P(sum >= t) exactly, for integer values in [0, 64), by convolving each unit's distribution. */
static double exact_tail(const data *d, double t) {
  enum { MAXS = 4096 };
  static double p[MAXS], q[MAXS];
  memset(p, 0, sizeof p); p[0] = 1;
  int top = 0;
  for (size_t i = 0; i < d->u.n; i++) {
    const cl_pt_unit *u = &d->u.a[i];
    memset(q, 0, sizeof q);
    int vmax = 0;
    for (int s = 0; s <= top; s++) {
      if (!p[s]) continue;
      q[s] += p[s] * (double)(u->nparts - (int)u->count) / u->nparts;
      for (uint32_t j = 0; j < u->count; j++) {
        int v = (int)d->e.a[u->first + j].v;
        if (v > vmax) vmax = v;
        q[s + v] += p[s] / u->nparts;
      }
    }
    top += vmax;
    memcpy(p, q, sizeof p);
  }
  double sum = 0;
  for (int s = (int)ceil(t - 1e-9); s <= top; s++) if (s >= 0) sum += p[s];
  return sum;
}

TL_TEST(bound_is_above_the_exact_tail_and_close_to_it) {
  int checked = 0;
  double worst = 1;
  for (int c = 0; c < 300; c++) {
    rng = 0x7e57000ULL + (uint64_t)c;
    data d = {0};
    int nu = 3 + (int)(urand() * 20), parts = 2 + (int)(urand() * 5);
    double total_max = 0;
    for (int i = 0; i < nu; i++) {
      int32_t who[8]; double v[8];
      int n = (int)(urand() * (parts + 1));
      double m = 0;
      for (int j = 0; j < n; j++) { who[j] = j; v[j] = 1 + (int)(urand() * 9); m = fmax(m, v[j]); }
      unit(&d, parts, n, who, v);
      total_max += m;
    }
    for (double t = 1; t <= total_max; t += 1 + (int)(urand() * 4)) {
      double ex = exact_tail(&d, t), lb = cl_pt_log_tail(d.u.a, d.u.n, d.e.a, 0, t);
      double b = exp(lb);
      CHECK(b >= ex * (1 - 1e-9), "case %d t %g: bound %g below the exact tail %g", c, t, b, ex);
      if (ex > 1e-8 && ex < 0.05) { checked++; worst = fmin(worst, ex / b); }
    }
    CHECK(cl_pt_log_tail(d.u.a, d.u.n, d.e.a, 0, total_max + 0.5) == -INFINITY, "beyond the largest sum: impossible");
    data_free(&d);
  }
  /* Chernoff's gap to the exact tail is polynomial, not exponential: within 40x here */
  CHECK(checked > 100 && worst > 1.0 / 40, "%d tails checked, the loosest bound %.1fx the exact", checked, 1 / worst);
}

/* Small jobs are counted, not bounded: values on the test's own levels (multiples of 1/32 of
 * the cap) give exactly the permutation p-value, times the participants (five units: no
 * periodic family, the every-unit family has all of alpha). */
TL_TEST(small_jobs_get_the_exact_permutation_p_value) {
  for (int c = 0; c < 40; c++) {
    rng = 0xe7ac7000ULL + (uint64_t)c;
    data d = {0};
    int parts = 2 + (int)(urand() * 4);
    for (int i = 0; i < 5; i++) {   /* each unit: 32 (the cap, three times or more), or 1-31 */
      int32_t who[8]; double v[8];
      int n = 1 + (int)(urand() * parts);
      for (int j = 0; j < n; j++) { who[j] = j; v[j] = j == 0 && i < 3 ? 32 : 1 + (int)(urand() * 31); }
      for (int j = n - 1; j > 0; j--) { int k = (int)(urand() * (j + 1)); int32_t t = who[j]; who[j] = who[k]; who[k] = t; }
      unit(&d, parts, n, who, v);
    }
    cl_pt_result r[8];
    cl_pt_run(d.u.a, d.u.n, d.e.a, parts, parts, 0.01, 8, r);
    for (int w = 0; w < parts; w++) {
      double t = 0;
      for (size_t j = 0; j < d.e.n; j++) if (d.e.a[j].who == w) t += d.e.a[j].v;
      if (r[w].k != 1) continue;   /* the walk stops at the first p of 1 */
      double want = fmin(1, exact_tail(&d, t) * parts);
      CHECK(fabs(r[w].p - want) <= 1e-9 * want + 1e-15, "case %d rank %d: p %g, exact %g", c, w, r[w].p, want);
    }
    data_free(&d);
  }
}

TL_TEST(limits_are_exact) {
  data d = {0};
  for (int i = 0; i < 10; i++) { int32_t w = i % 4; double v = 5; unit(&d, 4, 1, &w, &v); }
  /* one participant holding all ten of the only effects: (1/4)^10 exactly */
  CHECK(fabs(cl_pt_log_tail(d.u.a, d.u.n, d.e.a, 0, 50) - 10 * log(0.25)) < 1e-9, "the largest sum");
  CHECK(cl_pt_log_tail(d.u.a, d.u.n, d.e.a, 0, 12.5) == 0, "at the mean: 1");
  CHECK(cl_pt_log_tail(d.u.a, d.u.n, d.e.a, 0, 5) == 0, "below the mean: 1");
  /* capped at 2: the largest sum is 20 */
  CHECK(fabs(cl_pt_log_tail(d.u.a, d.u.n, d.e.a, 2, 20) - 10 * log(0.25)) < 1e-9, "capped");
  data_free(&d);
}

TL_TEST(cap_is_the_ninetieth_percentile_of_unit_maxima) {
  data d = {0};
  for (int i = 1; i <= 20; i++) { int32_t w[2] = {0, 1}; double v[2] = {(double)i, (double)i / 2}; unit(&d, 4, 2, w, v); }
  CHECK(cl_pt_cap(d.u.a, d.u.n, d.e.a) == 18, "cap %g", cl_pt_cap(d.u.a, d.u.n, d.e.a));
  data_free(&d);
}

/* Two participants: rank 1 late by 25 every third unit, each unit's noise 0-2 to either: named
 * (by either family). Two taking turns, each late every second unit and never otherwise: the
 * every-unit family cannot tell them from chance (half of each unit's effect goes to either),
 * the every-second family at phases 0 and 1 names both. */
TL_TEST(every_kth_unit_is_its_own_family) {
  rng = 99;
  data d = {0};
  for (int i = 0; i < 60; i++) {
    int32_t w = urand() < 0.5 ? 0 : 1; double v = urand() * 2;
    if (i % 3 == 0) { w = 1; v = 25; }
    unit(&d, 2, 1, &w, &v);
  }
  cl_pt_result r[2];
  cl_pt_run(d.u.a, d.u.n, d.e.a, 2, 2, 0.01, 8, r);
  CHECK(r[1].p < 1e-4, "rank 1: p %g, k %d phase %d", r[1].p, r[1].k, r[1].phase);
  CHECK(r[0].p > 0.01, "rank 0: p %g", r[0].p);
  data_free(&d);
  /* two ranks taking turns: each every second unit, 20 late, nothing else */
  for (int i = 0; i < 40; i++) { int32_t w = i % 2; double v = 20; unit(&d, 2, 1, &w, &v); }
  cl_pt_run(d.u.a, d.u.n, d.e.a, 2, 2, 0.01, 8, r);
  CHECK(r[0].p < 1e-3 && r[0].k == 2 && r[0].phase == 0 && r[1].p < 1e-3 && r[1].k == 2 && r[1].phase == 1,
        "turns: p %g (k %d ph %d), %g (k %d ph %d)", r[0].p, r[0].k, r[0].phase, r[1].p, r[1].k, r[1].phase);
  data_free(&d);
}

/* Exchangeable data of many shapes (each unit's effects, heavy-tailed, dealt to random
 * participants): the share of data sets in which anyone is named stays at most alpha. */
TL_TEST(exchangeable_data_names_anyone_at_most_alpha) {
  int sets = 1500, named = 0;
  for (int s = 0; s < sets; s++) {
    rng = 0xe8c4000ULL + (uint64_t)s;
    int parts = 2 + (int)(urand() * 15), nu = 5 + (int)(urand() * 200);
    data d = {0};
    for (int i = 0; i < nu; i++) {
      int32_t who[16]; double v[16];
      int n = 1 + (int)(urand() * 2.5);
      if (n > parts) n = parts;
      for (int j = 0; j < n; j++) {
        int w;
        do { w = (int)(urand() * parts); int dup = 0; for (int k = 0; k < j; k++) dup |= who[k] == w; if (!dup) break; } while (1);
        who[j] = w;
        v[j] = s % 2 ? pow(1 - urand(), -1.0 / 1.5) : -log(1 - urand());   /* Pareto or exponential */
      }
      unit(&d, parts, n, who, v);
    }
    cl_pt_result r[16];
    cl_pt_run(d.u.a, d.u.n, d.e.a, parts, parts, 0.01, 8, r);
    int any = 0;
    for (int w = 0; w < parts; w++) any |= r[w].p <= 0.01;
    named += any;
    data_free(&d);
  }
  fprintf(stderr, "  %d of %d exchangeable data sets named someone\n", named, sets);
  CHECK(named <= sets / 100, "%d of %d exchangeable data sets named someone (alpha 1%%)", named, sets);
}

TL_MAIN("tools/perm_test")
