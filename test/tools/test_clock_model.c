/* test_clock_model.c: the clock model (tools/commlens/analyse/clock_model.c) on simulated jobs
 * whose true clocks the test plants: ranks of one host get offset 0 with error 0 whatever their
 * times look like; offsets of several ms and 20 ppm drift over an hour between hosts are
 * recovered inside the stated interval; a lateness inside the interval is never called. */
#include "tl.h"
#include "tools/commlens/analyse/clock_model.h"
#include "tools/commlens/base/util.h"
#include <math.h>

static uint64_t rng_state;
static double urand(void) {            /* xorshift64*, fixed seeds: deterministic */
  rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

#define T0 1700000000000000000LL     /* a realistic epoch in ns */
typedef struct { double off_ns, drift; } host_clock;
/* own clock of a host at true time t */
static int64_t own(const host_clock *h, int64_t t) { return t + (int64_t)llround(h->off_ns + h->drift * (double)(t - T0)); }
static double true_off(const host_clock *h, const host_clock *ref, int64_t t_true) {
  return (h->off_ns + h->drift * (double)(t_true - T0)) - (ref->off_ns + ref->drift * (double)(t_true - T0));
}

typedef struct {
  int nranks; cl_cm_rank ranks[64]; int host_of[64];
  CL_VEC(cl_cm_inst) inst; CL_VEC(cl_cm_obs) obs;
} sim;

/* One blocking collective at true time t among `members`: each starts after a random delay
 * (up to `jitter`, plus `late` on rank `late` >= 0 or on every rank of host -2 - `late`), all
 * end together one transfer after the last start (plus a few us each). Times are written on
 * each rank's own host clock. */
static void add_coll(sim *s, const host_clock *hc, const int *members, int n, int64_t t, double jitter,
                     int late_rank, double late, int causal) {
  int64_t st[64], last = 0;
  for (int i = 0; i < n; i++) {
    int is_late = late_rank >= 0 ? members[i] == late_rank : s->host_of[members[i]] == -2 - late_rank;
    st[i] = t + (int64_t)(urand() * jitter) + (is_late ? (int64_t)late : 0);
    if (st[i] > last) last = st[i];
  }
  CL_PUSH(s->inst, ((cl_cm_inst){(uint32_t)s->obs.n, (uint32_t)n, causal}));
  for (int i = 0; i < n; i++) {
    int64_t end = last + 150000 + (int64_t)(urand() * 20000);
    const host_clock *h = &hc[s->host_of[members[i]]];
    CL_PUSH(s->obs, ((cl_cm_obs){members[i], own(h, st[i]), own(h, end)}));
  }
}
static void add_rank(sim *s, const char *host, const char *boot, int hidx) {
  s->ranks[s->nranks] = (cl_cm_rank){host, boot, NULL, 1, 0, 40, 200};
  s->host_of[s->nranks++] = hidx;
}
static void sim_free(sim *s) { free(s->inst.a); free(s->obs.a); }
static void model_of(const sim *s, cl_clock_model *m) {
  cl_cm_input in = {s->nranks, s->ranks, s->inst.n, s->inst.a, s->obs.a};
  cl_cm_build(&in, m);
}
/* A simulated job of four hosts (multi_host below) and its model. */
static void multi_host(sim *s, host_clock *hc, int sync_known);
static void multi_host_model(uint64_t seed, sim *s, host_clock *hc, cl_clock_model *m) {
  rng_state = seed;
  multi_host(s, hc, 1);
  model_of(s, m);
}

TL_TEST(ranks_of_one_host_are_exactly_zero_even_when_times_look_skewed) {
  /* four processes time-sharing one GPU: GPU starts fall on 2.26 ms slices, so rank k looks
   * k slices late every time (what invented -2.257 ms offsets before) */
  sim s = {0};
  for (int r = 0; r < 4; r++) add_rank(&s, "node0", "b00t-0", 0);
  for (int k = 0; k < 200; k++) {
    CL_PUSH(s.inst, ((cl_cm_inst){(uint32_t)s.obs.n, 4, 1}));
    int64_t t = T0 + (int64_t)k * 50000000;
    for (int r = 0; r < 4; r++)
      CL_PUSH(s.obs, ((cl_cm_obs){r, t + r * 2257000, t + r * 2257000 + 100000}));
  }
  cl_clock_model m; model_of(&s, &m);
  CHECK(m.nclocks == 1, "one clock, got %d", m.nclocks);
  CHECK(m.npairs == 0, "no pair to estimate, got %d", m.npairs);
  for (int r = 0; r < 4; r++) {
    double e, lo, hi;
    CHECK(cl_cm_offset(&m, r, T0 + 1000, &e, &lo, &hi) == 1, "bounded");
    CHECK(e == 0 && lo == 0 && hi == 0, "rank %d: offset %g [%g, %g], want exactly 0", r, e, lo, hi);
    CHECK(cl_cm_align(&m, r, T0 + 12345) == T0 + 12345, "aligned time unchanged");
  }
  double lo, hi;
  CHECK(cl_cm_pair_error(&m, 3, 0, T0, &lo, &hi) == 1 && lo == 0 && hi == 0, "error 0 within one clock");
  CHECK(cl_cm_lateness_called(&m, 3, 0, T0, 1.0), "1 ns is a lateness on one clock");
  cl_cm_free(&m); sim_free(&s);
}

/* Two replays of one host (commlens-replay names each its own clock id): each replays its
 * recording from its own start, so one host and boot does not make them one clock. Rank 1's
 * replay started 17 ms after rank 0's (what `make demo` showed as "one clock (same boot)" and
 * 17 ms one-off stalls): two clocks, the shift recovered inside its interval. */
TL_TEST(replays_of_one_host_with_their_own_clock_ids_are_aligned_not_taken_as_one_clock) {
  sim s = {0};
  host_clock hc[2] = {{0, 0}, {17.3e6, 0}};
  add_rank(&s, "vm", "b00t-0", 0);
  add_rank(&s, "vm", "b00t-0", 1);
  s.ranks[0].clock_id = "replay-100-1";
  s.ranks[1].clock_id = "replay-101-2";
  int both[2] = {0, 1};
  rng_state = 99;
  for (int k = 0; k < 96; k++) add_coll(&s, hc, both, 2, T0 + (int64_t)k * 1600000, 100000, -1, 0, 1);
  cl_clock_model m; model_of(&s, &m);
  CHECK(m.nclocks == 2, "two clocks, got %d", m.nclocks);
  double e, lo, hi;
  CHECK(cl_cm_offset(&m, 1, T0 + 17300000 + 50 * 1600000, &e, &lo, &hi) == 1, "rank 1 joined to rank 0's clock");
  CHECK(lo <= 17.3e6 && 17.3e6 <= hi && hi - lo < 1e6, "offset %.0f in [%.0f, %.0f], planted 17.3 ms", e, lo, hi);
  cl_cm_free(&m);
  /* the same ranks without clock ids: one clock, as before */
  s.ranks[0].clock_id = s.ranks[1].clock_id = NULL;
  model_of(&s, &m);
  CHECK(m.nclocks == 1, "one clock without clock ids, got %d", m.nclocks);
  cl_cm_free(&m); sim_free(&s);
}

/* Three hosts of a world communicator, a fourth only in a sub-communicator with host 2 (so it is
 * reached through host 2); planted offsets of several ms and drifts up to 20 ppm over an hour. */
static void multi_host(sim *s, host_clock *hc, int sync_known) {
  hc[0] = (host_clock){0, 0};
  hc[1] = (host_clock){3.7e6, 20e-6};
  hc[2] = (host_clock){-5.2e6, -15e-6};
  hc[3] = (host_clock){8.9e6, 7e-6};
  static const char *names[4] = {"a", "b", "c", "d"}, *boots[4] = {"ba", "bb", "bc", "bd"};
  for (int h = 0; h < 4; h++)
    for (int j = 0; j < 2; j++) add_rank(s, names[h], boots[h], h);
  for (int r = 0; r < s->nranks; r++) {      /* clocks drifting 20 ppm are not disciplined */
    s->ranks[r].sync_known = sync_known; s->ranks[r].unsynchronised = 1;
  }
  int world[6] = {0, 1, 2, 3, 4, 5}, sub[4] = {4, 5, 6, 7};
  for (int k = 0; k < 3600; k++) {
    int64_t t = T0 + (int64_t)k * 1000000000LL;
    add_coll(s, hc, world, 6, t, 2e6, k % 6, k % 7 == 0 ? 5e6 : 0, 1);
    add_coll(s, hc, sub, 4, t + 400000000, 1e6, -1, 0, 1);
  }
}

TL_TEST(planted_offsets_and_drift_are_recovered_inside_the_interval) {
  sim s = {0}; host_clock hc[4]; cl_clock_model m;
  multi_host_model(0x1234567, &s, hc, &m);
  REQUIRE(m.nclocks == 4, "four clocks, got %d", m.nclocks);
  REQUIRE(m.npairs == 3, "three host pairs, got %d", m.npairs);
  CHECK(m.clock[m.clock_of_rank[6]].parent == m.clock_of_rank[4], "host d reached through host c");
  for (int i = 0; i < m.npairs; i++) {
    const cl_cm_pair *p = &m.pair[i];
    CHECK(p->source == CL_CM_CAUSAL, "pair %d from causal bounds", i);
    CHECK(p->nconstraints == 3600, "pair %d: %lld constraints", i, (long long)p->nconstraints);
    int hc_child = s.host_of[m.clock[p->child].first_rank], hc_par = s.host_of[m.clock[p->parent].first_rank];
    double td = hc[hc_child].drift - hc[hc_par].drift;
    CHECK(p->drift_lo <= td && td <= p->drift_hi, "pair %d: drift %g outside [%g, %g]", i, td, p->drift_lo, p->drift_hi);
    CHECK(fabs(p->drift - td) < 1e-6, "pair %d: drift %g, planted %g (within 1 ppm)", i, p->drift, td);
    CHECK(p->max_width_ns < 1e6, "pair %d: interval %g ns wide, want under 1 ms", i, p->max_width_ns);
    CHECK(p->lo_ns <= p->offset_ns && p->offset_ns <= p->hi_ns, "pair %d: estimate inside its interval", i);
  }
  /* every rank, every 5 minutes: the truth inside the interval, the estimate close to it */
  for (int r = 0; r < s.nranks; r++)
    for (int64_t t = T0; t <= T0 + 3600000000000LL; t += 300000000000LL) {
      const host_clock *h = &hc[s.host_of[r]];
      double truth = true_off(h, &hc[0], t), e, lo, hi;
      CHECK(cl_cm_offset(&m, r, own(h, t), &e, &lo, &hi) == 1, "bounded");
      CHECK(lo <= truth && truth <= hi, "rank %d at +%llds: truth %.0f outside [%.0f, %.0f]", r,
            (long long)((t - T0) / 1000000000), truth, lo, hi);
      CHECK(fabs(e - truth) < 300e3, "rank %d: estimate %.0f, truth %.0f", r, e, truth);
      if (s.host_of[r] == 0) CHECK(e == 0 && lo == 0 && hi == 0, "reference host exactly 0");
    }
  cl_cm_free(&m); sim_free(&s);
}

TL_TEST(lateness_inside_the_interval_is_never_called) {
  sim s = {0}; host_clock hc[4]; cl_clock_model m;
  multi_host_model(0x98765, &s, hc, &m);
  int called_wrong = 0, called_right = 0, big = 0;
  for (int i = 0; i < 20000; i++) {
    int r = (int)(urand() * 8), q = (int)(urand() * 8);
    if (r == q) continue;
    int64_t t = T0 + (int64_t)(urand() * 3.6e12);
    double truth = (urand() - 0.5) * 4e6;              /* true lateness of r over q: -2..2 ms */
    /* r arrives at t + truth, q at t: aligned on the model's estimates */
    int64_t ar = cl_cm_align(&m, r, own(&hc[s.host_of[r]], t + (int64_t)truth));
    int64_t aq = cl_cm_align(&m, q, own(&hc[s.host_of[q]], t));
    double L = (double)(ar - aq);
    if (L <= 0) continue;
    if (cl_cm_lateness_called(&m, r, q, aq, L)) {
      if (truth <= 0) called_wrong++;
      else called_right++;
    }
    if (truth > 1.5e6) big++;
  }
  CHECK(called_wrong == 0, "%d latenesses called that were not (truth <= 0)", called_wrong);
  CHECK(called_right > big / 2, "a lateness well outside the interval is called (%d of %d over 1.5 ms)", called_right, big);
  cl_cm_free(&m); sim_free(&s);
}

TL_TEST(hosts_without_a_shared_blocking_collective_fall_back_to_the_sync_state) {
  rng_state = 42;
  for (int synced = 0; synced < 2; synced++) {
    sim s = {0}; host_clock hc[2] = {{0, 0}, {0.3e6, 0}};
    add_rank(&s, "a", "ba", 0); add_rank(&s, "b", "bb", 1);
    for (int r = 0; r < 2; r++) s.ranks[r].sync_known = synced;
    int both[2] = {0, 1};
    for (int k = 0; k < 50; k++)          /* broadcasts only: the root may finish first */
      add_coll(&s, hc, both, 2, T0 + k * 1000000LL, 1e5, -1, 0, 0);
    cl_clock_model m; model_of(&s, &m);
    REQUIRE(m.npairs == 1, "one pair");
    double e, lo, hi;
    int bounded = cl_cm_offset(&m, 1, T0, &e, &lo, &hi);
    if (synced) {
      CHECK(m.pair[0].source == CL_CM_SYNC_ONLY, "sync only, got %s", cl_cm_source_name(m.pair[0].source));
      CHECK(bounded && lo == -400e3 && hi == 400e3, "+-(200+200) us maxerror, got [%g, %g]", lo, hi);
      CHECK(!cl_cm_lateness_called(&m, 1, 0, T0, 300e3), "300 us is inside 400 us of sync error");
      CHECK(cl_cm_lateness_called(&m, 1, 0, T0, 500e3), "500 us is outside it");
    } else {
      CHECK(m.pair[0].source == CL_CM_UNKNOWN, "unknown, got %s", cl_cm_source_name(m.pair[0].source));
      CHECK(!bounded, "unbounded");
      CHECK(!cl_cm_lateness_called(&m, 1, 0, T0, 1e9), "nothing is called across an unknown clock");
    }
    cl_cm_free(&m); sim_free(&s);
  }
}

TL_TEST(a_clock_step_widens_the_pair_instead_of_lying) {
  rng_state = 7;
  sim s = {0}; host_clock hc[2] = {{0, 0}, {1e6, 0}};
  add_rank(&s, "a", "ba", 0); add_rank(&s, "b", "bb", 1);
  s.ranks[1].unsynchronised = 1;              /* a stepped clock */
  int both[2] = {0, 1};
  for (int k = 0; k < 400; k++) {
    if (k == 200) hc[1].off_ns += 3e6;     /* host b's clock is stepped by 3 ms mid-run */
    add_coll(&s, hc, both, 2, T0 + k * 100000000LL, 1e5, -1, 0, 1);
  }
  cl_clock_model m; model_of(&s, &m);
  REQUIRE(m.npairs == 1, "one pair");
  CHECK(m.pair[0].source == CL_CM_CAUSAL_WIDENED, "inconsistent bounds said, got %s", cl_cm_source_name(m.pair[0].source));
  double e, lo, hi;
  cl_cm_offset(&m, 1, T0 + 1000000000LL + 1000000, &e, &lo, &hi);
  CHECK(lo <= 1e6 && 1e6 <= hi, "before the step: 1 ms inside [%g, %g]", lo, hi);
  cl_cm_offset(&m, 1, T0 + 30000000000LL + 4000000, &e, &lo, &hi);
  CHECK(lo <= 4e6 && 4e6 <= hi, "after the step: 4 ms inside [%g, %g]", lo, hi);
  cl_cm_free(&m); sim_free(&s);
}

TL_TEST(many_hosts_through_one_spanning_tree) {
  /* 4,096 ranks on 512 hosts of 8, each host's clock off by its own planted amount (up to
   * +-50 ms): every host pair is one tree edge, every offset recovered inside its interval */
  enum { H = 512, PER = 8, R = H * PER, N = 40 };
  static cl_cm_rank ranks[R];
  static char names[H][8];
  static host_clock hc[H];
  rng_state = 77;
  for (int h = 0; h < H; h++) {
    snprintf(names[h], sizeof names[h], "n%d", h);
    hc[h] = (host_clock){h ? (urand() - 0.5) * 1e8 : 0, 0};
  }
  for (int r = 0; r < R; r++) ranks[r] = (cl_cm_rank){names[r / PER], "boot", NULL, 0, 0, 0, 0};
  CL_VEC(cl_cm_inst) inst = {0}; CL_VEC(cl_cm_obs) obs = {0};
  for (int k = 0; k < N; k++) {
    int64_t t = T0 + (int64_t)k * 100000000;
    CL_PUSH(inst, ((cl_cm_inst){(uint32_t)obs.n, R, 1}));
    for (int r = 0; r < R; r++) {
      int64_t st = t + (int64_t)(urand() * 1e6);
      CL_PUSH(obs, ((cl_cm_obs){r, own(&hc[r / PER], st), own(&hc[r / PER], t + 1200000)}));
    }
  }
  cl_cm_input in = {R, ranks, inst.n, inst.a, obs.a};
  cl_clock_model m; cl_cm_build(&in, &m);
  CHECK(m.nclocks == H && m.npairs == H - 1, "%d clocks, %d pairs", m.nclocks, m.npairs);
  int outside = 0;
  for (int r = 0; r < R; r += 7) {
    double e, lo, hi, truth = hc[r / PER].off_ns;
    cl_cm_offset(&m, r, own(&hc[r / PER], T0 + 2000000000LL), &e, &lo, &hi);
    outside += !(lo <= truth && truth <= hi);
  }
  CHECK(outside == 0, "%d ranks' offsets outside their interval", outside);
  cl_cm_free(&m); free(inst.a); free(obs.a);
}

/* Host b's ranks start 5 ms after host a's every time: from causality alone that cannot be told
 * from b's clock being 5 ms ahead, and the interval must say so; the hosts' sync state (both
 * within 500 us of true time) settles it. */
TL_TEST(a_host_late_every_time_is_not_a_clock_offset_unless_sync_says_so) {
  for (int sync = 0; sync < 2; sync++) {
    rng_state = 31;
    sim s = {0}; host_clock hc[2] = {{0, 0}, {0.3e6, 0}};
    add_rank(&s, "a", "ba", 0); add_rank(&s, "a", "ba", 0); add_rank(&s, "b", "bb", 1); add_rank(&s, "b", "bb", 1);
    for (int r = 0; r < 4; r++) s.ranks[r] = (cl_cm_rank){r < 2 ? "a" : "b", r < 2 ? "ba" : "bb", NULL, sync, 0, 20, 500};
    int all[4] = {0, 1, 2, 3};
    for (int k = 0; k < 200; k++) {
      add_coll(&s, hc, all, 4, T0 + k * 100000000LL, 1e5, -2 - 1, 5e6, 1);   /* host b late */
    }
    cl_clock_model m; model_of(&s, &m);
    double e, lo, hi;
    cl_cm_offset(&m, 2, T0 + 5000000000LL, &e, &lo, &hi);
    CHECK(lo <= 0.3e6 && 0.3e6 <= hi, "sync %d: truth inside [%g, %g]", sync, lo, hi);
    /* rank 2's arrival, aligned, against rank 0's at one instance */
    const cl_cm_obs *o0 = &s.obs.a[4 * 100], *o2 = &s.obs.a[4 * 100 + 2];
    int64_t a0 = cl_cm_align(&m, 0, o0->start), a2 = cl_cm_align(&m, 2, o2->start);
    int called = cl_cm_lateness_called(&m, 2, 0, a0, (double)(a2 - a0));
    if (!sync) {
      CHECK(hi - lo > 5e6, "causality alone: wider than the lateness (%g)", hi - lo);
      CHECK(!called, "a lateness the clocks could explain is not called");
    } else {
      CHECK(lo >= -1e6 && hi <= 1e6, "within the sync bound: [%g, %g]", lo, hi);
      CHECK(m.pair[0].lo_ns <= m.pair[0].offset_ns && m.pair[0].offset_ns <= m.pair[0].hi_ns && m.pair[0].hi_ns <= 1e6,
            "the pair reports the cut interval and an estimate inside it");
      CHECK(called, "with the sync bound, the 5 ms lateness is called (%lld ns aligned)", (long long)(a2 - a0));
    }
    cl_cm_free(&m); sim_free(&s);
  }
}

TL_TEST(causal_collectives_by_name) {
  CHECK(cl_cm_func_is_causal("AllReduce") && cl_cm_func_is_causal("ReduceScatter"), "blocking ones");
  CHECK(!cl_cm_func_is_causal("Broadcast") && !cl_cm_func_is_causal("Reduce") && !cl_cm_func_is_causal(NULL), "rooted ones");
}

TL_MAIN("tools/clock_model")
