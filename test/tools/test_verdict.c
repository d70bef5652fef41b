/* test_verdict.c: the straggler verdict (tools/commlens/analyse/straggler.c) on synthetic jobs
 * shaped like the real runs of test/data/verdict: ranks time-sharing one GPU (arrivals on a 2.26 ms
 * scheduler slice, every rank last about equally often), persistent, every-third-step,
 * alternating and GPU-side stragglers, a one-off 400 ms stall, start-up outliers; and a
 * property test: over many clean jobs the false-accusation rate stays under the stated one. */
#include "tl.h"
#include "tools/commlens/analyse/straggler.h"
#include "tools/commlens/analyse/steps.h"
#include "tools/commlens/base/util.h"
#include <math.h>

static uint64_t rng_state;
static double urand(void) {            /* xorshift64*, fixed seeds: deterministic */
  rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

#define SLICE 2260000.0              /* the GPU's scheduler slice, ns */
#define XFER 300000.0                /* transfer time once everyone is there */
enum { AR = 1, AG = 2, BC = 3 };      /* func ids */

typedef struct {
  CL_VEC(cl_sg_inst) inst; CL_VEC(cl_sg_arrival) arr;
  int64_t t; int64_t seq;
  const int32_t *clock;   /* per participant: its clock (cl_sg_arrival.clock), or NULL: unknown */
} job;
static void job_free(job *j) { free(j->inst.a); free(j->arr.a); }

/* One instance: rank i arrives at j->t + off[i]; all end one transfer after the last. */
static uint32_t add_inst_x(job *j, int func, int64_t bytes, int step, int R, const double *off, int64_t err, double xfer) {
  double last = -INFINITY;
  for (int i = 0; i < R; i++) last = fmax(last, off[i]);
  CL_PUSH(j->inst, ((cl_sg_inst){0xc0, j->seq++, bytes, func, step, 0, (uint32_t)j->arr.n, (uint32_t)R}));
  for (int i = 0; i < R; i++)
    CL_PUSH(j->arr, ((cl_sg_arrival){.who = i, .value = j->t + (int64_t)off[i], .err = err, .end = j->t + (int64_t)(last + xfer), .clock = j->clock ? j->clock[i] : 0}));
  j->t += (int64_t)(last + xfer) + 20000000;     /* 20 ms of compute to the next */
  return (uint32_t)(j->inst.n - 1);
}
static uint32_t add_inst(job *j, int func, int64_t bytes, int step, int R, const double *off, int64_t err) {
  return add_inst_x(j, func, bytes, step, R, off, err, XFER);
}
/* Time-sliced arrivals: a random order, one slice apart, plus a few us. */
static void sliced(int R, double *off) {
  int perm[64];
  for (int i = 0; i < R; i++) perm[i] = i;
  for (int i = R - 1; i > 0; i--) { int k = (int)(urand() * (i + 1)); int t = perm[i]; perm[i] = perm[k]; perm[k] = t; }
  for (int i = 0; i < R; i++) off[perm[i]] = i * SLICE + urand() * 30000;
}
/* The start-up of the recorded clean run: AllGather #0 with rank 0 25.7 ms late, a one-off
 * Broadcast with rank 0 18.0 ms late, and two slow first AllReduces (connection set-up). */
static void startup(job *j, int R, uint32_t *ag, uint32_t *bc) {
  double off[64];
  sliced(R, off); off[0] += 25.7e6; *ag = add_inst(j, AG, 4096, -1, R, off, 0);
  sliced(R, off); off[0] += 18.0e6; *bc = add_inst(j, BC, 8, -1, R, off, 0);
  for (int k = 0; k < 2; k++) {         /* connection set-up: 80 ms once everyone is there */
    sliced(R, off);
    add_inst_x(j, AR, 1 << 20, -1, R, off, 0, 80e6);
  }
}
static cl_sg_input input_of(const job *j, int R, enum cl_sg_evidence ev, const char *const *hosts) {
  return (cl_sg_input){R, hosts, NULL, j->inst.n, j->inst.a, j->arr.a, ev, 0, 0, 0, NULL, CL_SG_ENQUEUE, 0};
}
/* The verdict of job j and its line. */
static void analyse(const job *j, int R, enum cl_sg_evidence ev, const char *const *hosts, cl_sg_verdict *v, char *line) {
  cl_sg_input in = input_of(j, R, ev, hosts);
  cl_sg_analyse(&in, v);
  cl_sg_verdict_line(v, line, 512);
}
/* Four ranks on one time-shared GPU: the start-up, then 120 sliced instances that `plant`
 * may change (step s, offsets); returns the instance id of step `want` in *id. */
static void sliced_job(job *j, uint64_t seed, void (*plant)(int s, double *off), int want, uint32_t *id) {
  rng_state = seed;
  uint32_t ag, bc;
  startup(j, 4, &ag, &bc);
  double off[64];
  for (int s = 0; s < 120; s++) {
    sliced(4, off);
    if (plant) plant(s, off);
    uint32_t k = add_inst(j, AR, 1 << 20, -1, 4, off, 0);
    if (s == want && id) *id = k;
  }
}
static int starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }
static const char *const HOSTS[4] = {"h0", "h1", "h2", "h3"};

TL_TEST(time_shared_gpu_clean_run_finds_no_straggler_and_ignores_the_startup) {
  for (int R = 3; R <= 4; R++) {
    rng_state = 0xabc + (uint64_t)R;
    job j = {0}; uint32_t ag, bc;
    j.t = 1000000000;
    startup(&j, R, &ag, &bc);
    double off[64];
    for (int s = 0; s < 120; s++) { sliced(R, off); add_inst(&j, AR, 1 << 20, -1, R, off, 0); }
    cl_sg_verdict v; char line[512];
    analyse(&j, R, CL_SG_GPU_START, HOSTS, &v, line);
    CHECK(v.kind == CL_SG_NONE, "R=%d: %s", R, line);
    CHECK(starts(line, "no straggler found: the largest effect was rank "), "R=%d: %s", R, line);
    CHECK(v.inst[ag].startup && v.inst[bc].startup, "the start-up AllGather and Broadcast are start-up");
    CHECK(v.n_startup == 4, "R=%d: 4 start-up instances (first AllGather, Broadcast, two set-up AllReduce), got %lld",
          R, (long long)v.n_startup);
    CHECK(v.n_eligible == 120, "120 steady instances, got %lld", (long long)v.n_eligible);
    CHECK(v.noise_floor_ns > 0.8 * SLICE && v.noise_floor_ns < 1.5 * SLICE, "noise floor %g: about one slice", v.noise_floor_ns);
    CHECK(v.startup_end > 0, "the start-up period has an end");
    cl_sg_free(&v); job_free(&j);
  }
}

/* Two ranks of one host (one clock) and two of another, every arrival's clock error 2 ms
 * against the reference: rank 1 is 3 ms behind rank 0 on their shared clock, the other host's
 * ranks 6-7 ms before it (beyond the two clocks' 4 ms). Within one clock no error separates
 * rank 1 from rank 0, so its lateness is called; the same margin across clocks is not. What is
 * certain is the least lateness over every other rank, each pair's error counted: 2 ms (6 ms
 * over rank 3, less 4); with the other host 4-5 ms before rank 1, inside that error, nothing. */
TL_TEST(a_margin_on_one_clock_carries_no_clock_error) {
  static const int32_t same[4] = {1, 1, 2, 2}, apart[4] = {1, 2, 3, 4};
  static const char *const H[4] = {"a", "a", "b", "b"};
  for (int pass = 0; pass < 2; pass++) {
    job j = {0}; j.t = 1000000000; j.clock = pass ? apart : same;
    for (int s = 0; s < 40; s++) {
      double off[4] = {0, 3e6 + 1000.0 * (s % 7), -4e6, -3e6};
      add_inst(&j, AR, 1 << 20, s, 4, off, 2000000);
    }
    cl_sg_verdict v; char line[512];
    analyse(&j, 4, CL_SG_GPU_START, H, &v, line);
    if (!pass) CHECK(v.kind == CL_SG_STRAGGLER && v.straggler[0].who == 1 && v.n_within_clock == 0 &&
                     fabs(v.straggler[0].median_lateness_ns - 2e6) < 10e3, "one clock: %s", line);
    else CHECK(v.kind != CL_SG_STRAGGLER && v.n_within_clock > 30, "clocks apart, margin 3 ms inside 2 ms + 2 ms: %s", line);
    cl_sg_free(&v);
    if (!pass) {   /* the other host 4-5 ms before rank 1: inside the 4 ms of the two clocks */
      for (size_t k = 0; k < j.arr.n; k++) if (j.arr.a[k].who >= 2) j.arr.a[k].value += 2000000;
      analyse(&j, 4, CL_SG_GPU_START, H, &v, line);
      CHECK(v.kind != CL_SG_STRAGGLER, "the other host inside the clock error: %s", line);
      cl_sg_free(&v);
    }
    job_free(&j);
  }
}

TL_TEST(persistent_straggler_is_named_with_its_cost) {
  rng_state = 11;
  job j = {0}; uint32_t ag, bc;
  startup(&j, 4, &ag, &bc);
  double off[64], planted = 0;
  for (int s = 0; s < 120; s++) {
    sliced(4, off);
    double late = 3e6 + urand() * 22e6;
    off[2] = 3 * SLICE + late;            /* rank 2 comes after everyone, 3-25 ms more */
    planted += late;
    add_inst(&j, AR, 1 << 20, -1, 4, off, 0);
  }
  cl_sg_verdict v; char line[512];
  analyse(&j, 4, CL_SG_GPU_START, HOSTS, &v, line);
  REQUIRE(v.kind == CL_SG_STRAGGLER, "%s", line);
  CHECK(v.nstraggler == 1 && v.straggler[0].who == 2, "rank 2 alone: %s", line);
  CHECK(v.straggler[0].last_count == 120 && v.straggler[0].units == 120, "last in 120 of 120");
  CHECK(v.straggler[0].median_lateness_ns > 3e6, "median lateness %g", v.straggler[0].median_lateness_ns);
  /* the what-if: arriving at the median saves its lateness plus the slices above the median */
  CHECK(v.straggler[0].cost_ns > planted && v.straggler[0].cost_ns < planted + 120 * 2.5 * SLICE,
        "cost %g, planted %g", v.straggler[0].cost_ns, planted);
  CHECK(v.straggler[0].confidence > 0.99, "confidence %g", v.straggler[0].confidence);
  CHECK(v.straggler[0].nevidence == CL_SG_EVIDENCE_MAX, "evidence instances kept");
  CHECK(starts(line, "rank 2 (host h2) is a straggler: late every instance (120 of 120) by a median "), "%s", line);
  CHECK(strstr(line, "; it cost the job ") && strstr(line, "%)"), "%s", line);
  CHECK(v.nstall == 0, "no stall: %zu", v.nstall);
  cl_sg_free(&v); job_free(&j);
}

static void third_and_stall(int s, double *off) {
  if (s % 3 == 0) off[1] = 3 * SLICE + 25e6;
  if (s == 50) off[3] = 3 * SLICE + 400e6;
}
TL_TEST(every_third_step_straggler_beside_a_single_stall) {
  job j = {0}; uint32_t stall = 0;
  sliced_job(&j, 12, third_and_stall, 50, &stall);
  cl_sg_verdict v; char line[512];
  analyse(&j, 4, CL_SG_GPU_START, HOSTS, &v, line);
  REQUIRE(v.kind == CL_SG_STRAGGLER, "%s", line);
  CHECK(v.nstraggler == 1 && v.straggler[0].who == 1, "rank 1 named alone: %s", line);
  CHECK(v.straggler[0].last_count >= 40, "last in %lld", (long long)v.straggler[0].last_count);
  CHECK(v.n_startup == 4 && v.n_eligible == 120, "its late steps are not start-up (%lld)", (long long)v.n_startup);
  CHECK(fabs(v.straggler[0].median_lateness_ns - (25e6 + 3 * SLICE - 2 * SLICE)) < 2 * SLICE,
        "median lateness %g, about 25 ms", v.straggler[0].median_lateness_ns);
  REQUIRE(v.nstall == 1, "one stall listed, got %zu", v.nstall);
  CHECK(v.stall[0].who == 3 && v.stall[0].inst == stall && v.stall[0].margin_ns > 390e6, "the 400 ms stall of rank 3");
  cl_sg_free(&v); job_free(&j);
}

static void one_stall(int s, double *off) { if (s == 77) off[3] = 3 * SLICE + 400e6; }
TL_TEST(single_stall_alone_is_one_off_stalls_only) {
  job j = {0};
  sliced_job(&j, 13, one_stall, -1, NULL);
  cl_sg_verdict v; char line[512];
  analyse(&j, 4, CL_SG_GPU_START, HOSTS, &v, line);
  CHECK(v.kind == CL_SG_STALLS_ONLY, "%s", line);
  CHECK(starts(line, "one-off stalls only: rank 3 +"), "%s", line);
  cl_sg_free(&v); job_free(&j);
}

static void alternate(int s, double *off) { off[s % 2 ? 2 : 1] = 3 * SLICE + 10e6 + (s % 2 ? 2e6 : 0); }
TL_TEST(alternating_between_two_ranks_names_both) {
  job j = {0};
  sliced_job(&j, 14, alternate, -1, NULL);
  cl_sg_verdict v; char line[512];
  analyse(&j, 4, CL_SG_ENQUEUE, NULL, &v, line);
  REQUIRE(v.kind == CL_SG_STRAGGLER && v.nstraggler == 2, "%s (%d)", line, v.nstraggler);
  CHECK(v.straggler[0].who == 2 && v.straggler[1].who == 1, "the costlier (rank 2, 12 ms) first");
  CHECK(starts(line, "rank 2 is a straggler: late every 2nd instance (60 of 60), taking turns with rank 1, by a median "), "%s", line);
  cl_sg_free(&v); job_free(&j);
}

/* Sixteen ranks on separate GPUs, arrivals spread over 3 ms (every instance has a called last
 * arrival), 100 instances: rank 1 late by 10 ms in 20, ranks 2 and 3 in 12 each, in turn.
 * Against chance over all 100 (p = 1/16, Bonferroni x16) ranks 2 and 3 are not rare enough;
 * once rank 1 is named, its units are removed and the others are tested over those left
 * (p = 1/15), where they are. All three are named, rank 1 first. */
static int turn(int s) {
  static const int8_t who[25] = {1, 2, -1, 3, 1, -1, -1, 2, -1, 1, 3, -1, -1, -1, 2, 1, -1, 3, -1, 1, -1, -1, -1, -1, -1};
  return who[s % 25];
}
TL_TEST(stragglers_taking_turns_are_named_one_after_another) {
  rng_state = 77;
  job j = {0};
  double off[64];
  for (int s = 0; s < 102; s++) {
    for (int i = 0; i < 16; i++) off[i] = urand() * 3e6;
    if (s >= 2 && turn(s - 2) >= 0) off[turn(s - 2)] += 10e6;
    add_inst(&j, AR, 1 << 20, -1, 16, off, 0);
  }
  cl_sg_verdict v; char line[512];
  analyse(&j, 16, CL_SG_GPU_START, NULL, &v, line);
  REQUIRE(v.kind == CL_SG_STRAGGLER, "%s", line);
  int named[16] = {0};
  for (int k = 0; k < v.nstraggler; k++) named[v.straggler[k].who & 15] = 1;
  CHECK(v.nstraggler == 3 && named[1] && named[2] && named[3], "%d named: %s", v.nstraggler, line);
  CHECK(v.straggler[0].who == 1, "the costliest (rank 1) first: %s", line);
  CHECK(strstr(line, "; so are rank 2") || strstr(line, "; so are rank 3"), "the line names the others: %s", line);
  cl_sg_free(&v); job_free(&j);
}

TL_TEST(gpu_side_slow_rank_from_its_gpu_wait) {
  /* v7 initial_sync: each rank's GPU waits for its peers; the slow GPU's rank waits least */
  rng_state = 15;
  job j = {0};
  for (int s = 0; s < 100; s++) {
    CL_PUSH(j.inst, ((cl_sg_inst){0xc0, s, 1 << 20, AR, -1, 0, (uint32_t)j.arr.n, 4}));
    for (int r = 0; r < 4; r++) {
      double wait = r == 3 ? urand() * 50e3 : 4e6 + urand() * 2e6;
      CL_PUSH(j.arr, ((cl_sg_arrival){.who = r, .value = (int64_t)wait}));
    }
  }
  cl_sg_input in = input_of(&j, 4, CL_SG_GPU_WAIT, HOSTS);
  in.job_ns = 10000000000LL;
  cl_sg_verdict v; cl_sg_analyse(&in, &v);
  char line[512];
  cl_sg_verdict_line(&v, line, sizeof line);
  REQUIRE(v.kind == CL_SG_STRAGGLER, "%s", line);
  CHECK(v.straggler[0].who == 3 && v.evidence == CL_SG_GPU_WAIT, "rank 3 by GPU wait: %s", line);
  CHECK(!strcmp(cl_sg_evidence_key(v.evidence), "gpu_wait"), "the JSON key says which evidence");
  CHECK(v.straggler[0].last_count == 99, "last in all but the first, got %lld", (long long)v.straggler[0].last_count);
  CHECK(v.straggler[0].median_lateness_ns > 3.5e6, "lateness = the others' least wait: %g", v.straggler[0].median_lateness_ns);
  CHECK(strstr(line, "of 10.000 s ("), "%s", line);
  cl_sg_free(&v); job_free(&j);
}

/* A steady bias is named when what it costs the job beyond the others reaches the floor, and
 * reported below it otherwise. Two ranks on GPUs of their own (as recorded on 2x H100): rank 0
 * last in ~73% of the instances by 0.1-1.3 ms, rank 1 when last by as much: beyond chance in
 * count and in effect. Steps of 20 ms: about 1.6% of the job, named; of 200 ms: about 0.2%,
 * the largest effect, below the floor. */
TL_TEST(a_steady_bias_is_named_only_at_the_materiality_floor) {
  for (int pass = 0; pass < 2; pass++) {
    rng_state = 33;
    job j = {0};
    double off[2];
    for (int s = 0; s < 240; s++) {
      int late = urand() < 0.73 ? 0 : 1;
      off[late] = 100e3 + urand() * 1.2e6; off[!late] = 0;
      add_inst(&j, AR, 1 << 20, -1, 2, off, 0);
      if (pass) j.t += 180000000;        /* 180 ms more compute between instances */
    }
    cl_sg_verdict v; char line[512];
    analyse(&j, 2, CL_SG_GPU_START, HOSTS, &v, line);
    if (!pass) CHECK(v.kind == CL_SG_STRAGGLER && v.straggler[0].who == 0 && v.straggler[0].excess_ns >= 0.01 * v.job_ns,
                     "20 ms steps: %s", line);
    else CHECK(v.kind == CL_SG_NONE && v.largest.who == 0 && v.largest.p_value < CL_SG_ALPHA && strstr(line, ", below the 1% floor"),
               "200 ms steps: %s", line);
    cl_sg_free(&v); job_free(&j);
  }
}

/* Rank 0 last in 40% of the instances by 70 us (a fixed extra bit of host work) in a run whose
 * margins are ms: beyond chance in count, but what it costs is a fraction of a per mille of the
 * job: not named. */
TL_TEST(always_a_little_behind_in_a_run_of_ms_margins_is_not_a_straggler) {
  rng_state = 21;
  job j = {0};
  double off[64];
  for (int s = 0; s < 200; s++) {
    double last = 0;
    for (int r = 0; r < 4; r++) { off[r] = urand() * 5e6; if (r) last = fmax(last, off[r]); }
    if (urand() < 0.4) off[0] = last + 70e3;
    add_inst(&j, AR, 1 << 20, -1, 4, off, 0);
  }
  cl_sg_verdict v; char line[512];
  analyse(&j, 4, CL_SG_ENQUEUE, HOSTS, &v, line);
  CHECK(v.kind == CL_SG_NONE, "%s", line);
  cl_sg_free(&v); job_free(&j);
}

TL_TEST(lateness_inside_the_clock_error_is_not_called) {
  /* two hosts whose clocks are known to 2 ms each: a 3 ms lateness could be the clocks */
  rng_state = 16;
  job j = {0};
  double off[64];
  for (int s = 0; s < 100; s++) {
    for (int r = 0; r < 4; r++) off[r] = urand() * 30e3;
    off[2] = 3e6;
    add_inst(&j, AR, 1 << 20, -1, 4, off, 2000000);
  }
  cl_sg_verdict v; char line[512];
  analyse(&j, 4, CL_SG_ENQUEUE, HOSTS, &v, line);
  CHECK(v.kind == CL_SG_NONE, "%s", line);
  CHECK(v.n_within_clock == 99, "99 lasts inside the clock error, got %lld", (long long)v.n_within_clock);
  CHECK(starts(line, "no straggler found: no rank was late by more than 50.0 us beyond the clock error and the timing "
                     "resolution; noise floor "), "%s", line);
  cl_sg_free(&v);
  /* the same lateness with clocks known to 100 us is called */
  for (size_t k = 0; k < j.arr.n; k++) j.arr.a[k].err = 100000;
  analyse(&j, 4, CL_SG_ENQUEUE, HOSTS, &v, line);
  CHECK(v.kind == CL_SG_STRAGGLER && v.straggler[0].who == 2, "%s", line);
  cl_sg_free(&v); job_free(&j);
}

/* DDP-like steps of 10 buckets: a clean run whose scheduler delays one random rank for a whole
 * step (the buckets of a step are not independent), and the same with a real straggler. */
TL_TEST(steps_are_the_units_when_known) {
  for (int planted = 0; planted < 2; planted++) {
    rng_state = 17 + (uint64_t)planted;
    job j = {0};
    double off[64];
    for (int s = 0; s < 60; s++) {
      int slow = (int)(urand() * 4);
      for (int b = 0; b < 10; b++) {
        for (int r = 0; r < 4; r++) off[r] = urand() * 100e3 + (r == slow ? SLICE : 0);
        if (planted) off[1] = SLICE + 6e6;
        add_inst(&j, AR, (b + 1) << 20, s, 4, off, 0);
      }
    }
    cl_sg_verdict v; char line[512];
    analyse(&j, 4, CL_SG_ENQUEUE, HOSTS, &v, line);
    CHECK(v.unit_is_step, "units are steps");
    if (!planted) CHECK(v.kind == CL_SG_NONE, "clean: %s", line);
    else CHECK(v.kind == CL_SG_STRAGGLER && v.straggler[0].who == 1 && v.straggler[0].last_count == 59 &&
               v.straggler[0].units == 59, "planted: %s", line);
    cl_sg_free(&v); job_free(&j);
  }
}

TL_TEST(tail_channel_with_the_same_machinery) {
  rng_state = 18;
  job j = {0};
  double off[64];
  for (int k = 0; k < 80; k++) {
    for (int c = 0; c < 8; c++) off[c] = urand() * 20e3 + (c == 5 ? 400e3 : 0);
    add_inst(&j, AR, 1 << 20, -1, 8, off, 0);
  }
  cl_sg_input in = input_of(&j, 8, CL_SG_CHANNEL_END, NULL);
  in.who_word = "channel";
  cl_sg_verdict v; cl_sg_analyse(&in, &v);
  char line[512];
  cl_sg_verdict_line(&v, line, sizeof line);
  CHECK(v.kind == CL_SG_STRAGGLER && v.straggler[0].who == 5, "%s", line);
  CHECK(starts(line, "channel 5 is slow: late every instance (79 of 79)"), "%s", line);
  cl_sg_free(&v); job_free(&j);
}

/* Many clean jobs of random shapes and noise (fixed seeds): accusations stay under alpha. */
TL_TEST(false_accusation_rate_stays_under_the_stated_rate) {
  int jobs = 400, accused = 0, stalls = 0;
  for (int n = 0; n < jobs; n++) {
    rng_state = 0x5eed0000ULL + (uint64_t)n;
    int R = 2 + (int)(urand() * 31), N = 20 + (int)(urand() * 300), noise = n % 3;
    job j = {0};
    double off[64];
    for (int s = 0; s < N; s++) {
      if (noise == 0) sliced(R, off);
      else for (int r = 0; r < R; r++) off[r] = noise == 1 ? urand() * 5e6 : -log(1 - urand()) * 1e6;
      add_inst(&j, AR, 1 << 20, -1, R, off, 0);
    }
    cl_sg_input in = input_of(&j, R, CL_SG_ENQUEUE, NULL);
    cl_sg_verdict v; cl_sg_analyse(&in, &v);
    if (v.kind == CL_SG_STRAGGLER) accused++;
    if (v.kind == CL_SG_STALLS_ONLY) stalls++;
    cl_sg_free(&v); job_free(&j);
  }
  CHECK(accused <= (int)(CL_SG_ALPHA * jobs), "%d of %d clean jobs accused (alpha %g)", accused, jobs, CL_SG_ALPHA);
  /* a stall is listed where chance would give one with probability alpha (exponential tails) */
  CHECK(accused + stalls <= (int)(2 * CL_SG_ALPHA * jobs), "%d of %d clean jobs not \"no straggler found\"", accused + stalls, jobs);
  /* and the test has power: a rank last 60% of the time over 4 is found */
  int found = 0;
  for (int n = 0; n < 50; n++) {
    rng_state = 0xbeef0000ULL + (uint64_t)n;
    job j = {0};
    double off[64];
    for (int s = 0; s < 100; s++) {
      for (int r = 0; r < 4; r++) off[r] = urand() * 5e6;
      if (urand() < 0.47) off[0] = 5e6 + urand() * 5e6;
      add_inst(&j, AR, 1 << 20, -1, 4, off, 0);
    }
    cl_sg_input in = input_of(&j, 4, CL_SG_ENQUEUE, NULL);
    cl_sg_verdict v; cl_sg_analyse(&in, &v);
    if (v.kind == CL_SG_STRAGGLER && v.straggler[0].who == 0) found++;
    cl_sg_free(&v); job_free(&j);
  }
  CHECK(found >= 45, "a rank last 60%% of the time found in %d of 50 jobs", found);
}

TL_TEST(large_job_is_bounded) {
  /* 4,096 ranks x 300 instances: linear passes and sorts only (no per-pair work) */
  rng_state = 19;
  job j = {0};
  static double off[4096];
  for (int s = 0; s < 300; s++) {
    double last = 0;
    CL_PUSH(j.inst, ((cl_sg_inst){0xc0, s, 1 << 20, AR, -1, 0, (uint32_t)j.arr.n, 4096}));
    for (int r = 0; r < 4096; r++) { off[r] = urand() * 1e6 + (r == 4000 ? 2e6 : 0); last = fmax(last, off[r]); }
    for (int r = 0; r < 4096; r++) CL_PUSH(j.arr, ((cl_sg_arrival){.who = r, .value = j.t + (int64_t)off[r], .end = j.t + (int64_t)last + 100000}));
    j.t += 30000000;
  }
  cl_sg_input in = input_of(&j, 4096, CL_SG_ENQUEUE, NULL);
  cl_sg_verdict v; cl_sg_analyse(&in, &v);
  CHECK(v.kind == CL_SG_STRAGGLER && v.straggler[0].who == 4000 && v.straggler[0].last_count == 299, "rank 4000");
  cl_sg_free(&v); job_free(&j);
}

TL_MAIN("tools/verdict")
