/* jobsim.h: a simulated training job with known truth, for the straggler verdict's calibration
 * (test/tools/test_calibration.c, bench/calibrate.c). N ranks x S steps; each step a realistic
 * pattern of collectives (DDP buckets; FSDP all-gathers and reduce-scatters per layer; tensor-
 * parallel all-reduces on their own communicators beside a data-parallel one); noise (per-rank
 * heavy-tailed jitter, OS hiccups, a GPU time-shared by several ranks with its scheduler's
 * slices, clocks of different hosts apart, start-up); and planted effects whose every late
 * (rank, step) is recorded. Each rank is written as a digest by the plugin's own writer
 * (exporters/digest.c), read back by the CLI's loader and judged by the CLI's verdict. */
#ifndef COMMLENS_TEST_JOBSIM_H
#define COMMLENS_TEST_JOBSIM_H
#include <stddef.h>
#include <stdint.h>

enum js_work { JS_DDP, JS_FSDP, JS_TP };
enum js_plant {
  JS_CLEAN,        /* nothing planted */
  JS_PERSISTENT,   /* every step */
  JS_PERIODIC,     /* every `period`-th step from `phase` */
  JS_TURNS,        /* `nvictim` ranks take turns: victim i late in steps = i (mod nvictim) */
  JS_RANDOM,       /* a random `share` of the steps */
  JS_BURST,        /* steps burst_from .. burst_to */
  JS_ONEOFF        /* one step, `oneoff_step` */
};

typedef struct {
  int nranks, nsteps;
  enum js_work work;
  int per_host;              /* ranks of one host boot (one clock) */
  int per_gpu;               /* > 1: that many ranks time-share one GPU (ranks of one host) */
  double clock_err_ns;       /* hosts' clocks off by up to +- this; at most 50 us (always
                                the least): the hosts say they are synchronised (NTP, maxerror
                                100 us); more: they say they are not */
  double step_ns;            /* compute of one step, on one GPU of its own */
  double jitter_ns;          /* scale of each rank's per-step host jitter (Laplace) */
  double hiccup_p;           /* chance per (rank, step) of an OS hiccup (Pareto, from 0.2 ms) */
  int profiler_from, profiler_to;   /* steps with a burst of host work on every rank (to < from: none) */
  double profiler_ns;        /* its mean per rank and step */
  /* planted */
  enum js_plant plant;
  int victim[4], nvictim;
  double late_ns;            /* how late, each time */
  int gpu_side;              /* late on the GPU (more work before its collectives), not on the host */
  int period, phase, burst_from, burst_to, oneoff_step;
  double share;              /* JS_RANDOM */
  uint64_t seed;
} js_cfg;

/* Defaults: 4 ranks x 100 steps of DDP, a GPU each, one host, 60 ms steps, 0.3 ms jitter. */
void js_defaults(js_cfg *c);

/* What was planted, per rank and step (after the first, start-up step): how late it made the
 * rank, and on which side. */
typedef struct {
  int nranks, nsteps;
  double job_ns;             /* the job's span */
  double planted_ns;         /* over the steps, the longest planted delay of each */
  double cost_ns;            /* what the plant cost: the span less that of the same job (the
                                same noise) with nothing planted */
  double *late;              /* [rank * nsteps + step], ns */
  int gpu_side;
  int planted[4], nplanted;  /* the victims, as the verdict must name them */
} js_truth;

/* Writes every rank of the job into dir (which must exist and be empty) as digests; fills
 * *truth (js_truth_free). 0 on success, -1 with a message on stderr. */
int js_write(const js_cfg *c, const char *dir, js_truth *truth);
void js_truth_free(js_truth *t);

/* The CLI's verdict on dir, as the calibration reads it. */
typedef struct {
  int kind;                  /* enum cl_sg_kind */
  int named[64], nnamed;     /* named stragglers' global ranks, costliest first */
  int pattern;               /* the first's enum cl_sg_pattern */
  int period;                /* ... its period (EVERY_KTH, TURNS) */
  int gpu_side;              /* ... late on the GPU */
  int stalls[8], nstalls;    /* one-off stalls' ranks, largest first */
  int largest;               /* the largest effect's rank, named or not (-1: none) */
  double largest_share;      /* its cost / the job */
  char line[512];
} js_verdict;
/* Loads dir with the CLI's loader (threads), aligns its clocks and computes the verdict.
 * 0 on success. */
int js_judge(const char *dir, int threads, js_verdict *out);

/* How the verdict read against the truth. */
typedef struct {
  int accused;               /* someone named as a straggler (a clean job: a false accusation) */
  int first;                 /* a planted rank named first */
  int all;                   /* every planted rank named */
  int wrong;                 /* a rank named that was not planted */
  int pattern;               /* the first named's pattern is the planted one (and its side) */
  int oneoff;                /* JS_ONEOFF: the planted rank listed as a one-off stall (or named) */
  int stalls;                /* one-off stalls listed */
} js_score;
void js_score_of(const js_cfg *c, const js_truth *t, const js_verdict *v, js_score *s);
/* Writes the job under a fresh directory in base, judges it and removes it. 0 on success. */
int js_run(const js_cfg *c, const char *base, int threads, js_truth *t, js_verdict *v);

/* The calibration's layouts: ranks x steps x (time-shared GPUs) x (hosts with clocks apart). */
typedef struct { int nranks, nsteps, shared, clocks; } js_layout;
/* A job of layout l with its noise and workload drawn from seed (nothing planted). */
void js_layout_job(const js_layout *l, uint64_t seed, js_cfg *c);
/* How late a planted rank must be for its effect to cost `share` of each step of c at `freq` of
 * the steps (a time-shared GPU's steps are per_gpu times longer), and at least three times the
 * timing resolution of the side it is late on (the host: 50 us; a time-shared GPU: its k - 1
 * slices and a tenth; between hosts whose clocks are apart: both clocks' error). */
double js_late_for(const js_cfg *c, double share, double freq, int gpu_side);
/* Plants `plant` on c: victims drawn from seed, late by late_ns; frequency: JS_PERIODIC every
 * period-th step, JS_RANDOM and JS_BURST share of the steps, JS_TURNS nvictim ranks. */
void js_plant_on(js_cfg *c, enum js_plant plant, double late_ns, int gpu_side, double share, int nvictim, uint64_t seed);

/* A layout's or an effect's short name, for tables. */
const char *js_plant_name(enum js_plant p);
const char *js_work_name(enum js_work w);
#endif
