/* calibrate.c: the straggler verdict on at least 10,000 simulated jobs with known truth
 * (test/sim/jobsim.c: digests written by the plugin's writer, read and judged by the CLI's own
 * code), printing the calibration tables: false accusations of clean jobs per layout (ranks x
 * steps x time-shared GPUs x hosts with clocks apart), recall by effect size and frequency,
 * subtle effects against the noise, one-off stalls, and how often the pattern was named right.
 * Its seeds are its own: the rules were not fitted on them (test/tools/test_calibration.c holds
 * the development and the held-back sets).
 * usage: calibrate [--workers N] [--scale X] [--dir DIR] [--verbose] [--planted-only]
 * (make calibrate; X scales every table's job count, 1 = 10,000+ jobs; --planted-only leaves
 * the clean layouts out; --verbose lists every clean job accused and planted one missed) */
#include "test/sim/jobsim.h"
#include "tools/commlens/analyse/straggler.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SEED_BASE 0xca11b2a7e0000000ULL

enum table { T_CLEAN, T_SIZE, T_SUBTLE, T_ONEOFF };
typedef struct {
  enum table t; js_layout l; enum js_plant plant; double cost, share, sigma, step_ns; int gpu, nvic, row, col;
  uint64_t seed;
} spec;
typedef struct { js_score s; double planted_share, late_ns, jitter_ns; int victim, done, failed; char line[512]; } result;

typedef struct { spec *a; size_t n, cap; } specs;
static void push(specs *v, spec s) {
  if (v->n == v->cap) { v->cap = v->cap ? 2 * v->cap : 1024; v->a = realloc(v->a, v->cap * sizeof *v->a); }
  v->a[v->n++] = s;
}

/* ---- the jobs ---- */
static const int RANKS[5] = { 2, 4, 8, 64, 512 }, STEPS[3] = { 10, 100, 2000 };
static int clean_count(int r, int s, double scale) {
  double n = (double)r * s <= 51200 ? 150 : (double)r * s <= 204800 ? 60 : 15;
  return (int)ceil(n * scale);
}
/* recall tables: the columns' patterns */
typedef struct { const char *name; enum js_plant plant; double share; int gpu, nvic; } column;
static const column COLS[6] = {
  { "every step", JS_PERSISTENT, 1, 0, 1 }, { "GPU, every step", JS_PERSISTENT, 1, 1, 1 },
  { "every 4th", JS_PERIODIC, 0.25, 0, 1 }, { "random 10%", JS_RANDOM, 0.1, 0, 1 },
  { "burst 10%", JS_BURST, 0.1, 0, 1 }, { "2 take turns", JS_TURNS, 0.5, 0, 2 } };
static const double COSTS[5] = { 0.005, 0.01, 0.02, 0.05, 0.1 };   /* of each step */
static const double SUBTLE[4] = { 0.5, 1, 2, 3 };
static const int SUBTLE_RANKS[3] = { 4, 8, 64 };

static void build(specs *v, double scale, int clean) {
  uint64_t seed = SEED_BASE;
  for (int ri = 0; ri < 5; ri++)   /* (left out, they still take their seeds: the planted jobs stay the same) */
    for (int si = 0; si < 3; si++)
      for (int sh = 0; sh < 2; sh++)
        for (int ck = 0; ck < 2; ck++)
          for (int k = 0; k < clean_count(RANKS[ri], STEPS[si], scale); k++, seed++)
            if (clean) push(v, (spec){ T_CLEAN, { RANKS[ri], STEPS[si], sh, ck }, JS_CLEAN, 0, 0, 0, 0, 0, 0,
                                       ((ri * 3 + si) * 2 + sh) * 2 + ck, 0, seed + 1 });
  /* recall: 2-64 ranks, 100 steps (a tenth of them 2,000), GPUs shared or not, clocks apart or not */
  int per = (int)ceil(60 * scale);
  for (int row = 0; row < 5; row++)
    for (int col = 0; col < 6; col++)
      for (int k = 0; k < per; k++) {
        js_layout l = { RANKS[k % 4], k % 10 == 9 ? 2000 : 100, (k / 4) % 2, (k / 8) % 2 };
        if (l.nranks == 64 && l.nsteps == 2000) l.nranks = 8;
        push(v, (spec){ T_SIZE, l, COLS[col].plant, COSTS[row], COLS[col].share, 0, 0, COLS[col].gpu,
                        COLS[col].nvic, row, col, ++seed });
      }
  /* subtle: late by 0.5-3 times a 2 ms jitter, every step of 30 ms */
  for (int row = 0; row < 4; row++)
    for (int col = 0; col < 3; col++)
      for (int k = 0; k < per; k++)
        push(v, (spec){ T_SUBTLE, { SUBTLE_RANKS[col], 100, k % 2, (k / 2) % 2 }, JS_PERSISTENT, SUBTLE[row], 1,
                        2e6, 30e6, 0, 1, row, col, ++seed });
  for (int row = 0; row < 2; row++)
    for (int k = 0; k < per; k++)
      push(v, (spec){ T_ONEOFF, { RANKS[k % 4], 100, k % 2, (k / 2) % 2 }, JS_ONEOFF, row ? 0.05 : 0.01, 0, 0, 0, 0, 1,
                      row, 0, ++seed });
}

static void run_one(const spec *sp, const char *dir, result *out) {
  js_cfg c;
  js_layout_job(&sp->l, sp->seed, &c);
  if (sp->sigma > 0) { c.jitter_ns = sp->sigma; c.step_ns = sp->step_ns; }
  /* how late: a share of each step (recall tables), a multiple of the jitter (subtle), a share
   * of the whole job at once (one-offs) */
  double late = sp->t == T_SUBTLE ? sp->cost * c.jitter_ns
              : sp->t == T_ONEOFF ? sp->cost * c.nsteps * c.step_ns * c.per_gpu
                                  : js_late_for(&c, sp->cost, sp->share, sp->gpu);
  if (sp->plant != JS_CLEAN) js_plant_on(&c, sp->plant, late, sp->gpu, sp->share, sp->nvic, sp->seed);
  out->late_ns = late; out->jitter_ns = c.jitter_ns;
  js_truth t;
  js_verdict v;
  if (js_run(&c, dir, 1, &t, &v) != 0) { out->failed = 1; out->done = 1; js_truth_free(&t); return; }
  js_score_of(&c, &t, &v, &out->s);
  out->planted_share = t.job_ns > 0 ? t.cost_ns / t.job_ns : 0;
  out->victim = c.victim[0];
  snprintf(out->line, sizeof out->line, "%s", v.line);
  out->done = 1;
  js_truth_free(&t);
}

/* ---- the tables ---- */
static double upper95(int k, int n) {   /* one-sided 95% upper bound of a rate (Clopper-Pearson, bisected) */
  if (n == 0) return 1;
  double lo = (double)k / n, hi = 1;
  for (int it = 0; it < 60; it++) {
    double p = (lo + hi) / 2, cdf = 0, term = pow(1 - p, n);
    for (int j = 0; j <= k; j++) { cdf += term; term *= (double)(n - j) / (j + 1) * p / (1 - p); }
    if (cdf > 0.05) lo = p; else hi = p;
  }
  return hi;
}

static void print_clean(const specs *v, const result *r) {
  printf("\nFalse accusations of clean jobs, per layout (alpha = 1%% per job)\n");
  printf("%6s %6s %7s %7s %6s %9s %8s %14s\n", "ranks", "steps", "shared", "clocks", "jobs", "accused", "rate", "95% upper");
  int tot = 0, acc = 0, stalls = 0;
  for (int lay = 0; lay < 60; lay++) {
    int n = 0, a = 0, st = 0;
    const spec *one = NULL;
    for (size_t i = 0; i < v->n; i++)
      if (v->a[i].t == T_CLEAN && v->a[i].row == lay && r[i].done && !r[i].failed) {
        n++; a += r[i].s.accused; st += r[i].s.stalls > 0; one = &v->a[i];
      }
    if (!one) continue;
    printf("%6d %6d %7s %7s %6d %9d %7.2f%% %13.2f%%\n", one->l.nranks, one->l.nsteps, one->l.shared ? "4/GPU" : "no",
           one->l.clocks ? "apart" : "one", n, a, 100.0 * a / n, 100 * upper95(a, n));
    tot += n; acc += a; stalls += st;
  }
  printf("all clean jobs: %d, accused %d (%.2f%%, 95%% upper %.2f%%); with a one-off stall listed: %d\n", tot, acc,
         100.0 * acc / (tot ? tot : 1), 100 * upper95(acc, tot), stalls);
}

/* One recall table: rows x cols of "first%" (turns: "all%"), the planted cost share beside. */
static void print_recall(const specs *v, const result *r, enum table t, int nrow, int ncol, const char *const *rown,
                         const char *const *coln, const char *title, int clocks) {
  printf("\n%s\n%-14s", title, "");
  for (int c = 0; c < ncol; c++) printf(" %21s", coln[c]);
  printf("\n");
  for (int row = 0; row < nrow; row++) {
    printf("%-14s", rown[row]);
    for (int c = 0; c < ncol; c++) {
      int n = 0, ok = 0, pat = 0, wrong = 0;
      double share = 0;
      for (size_t i = 0; i < v->n; i++) {
        const spec *s = &v->a[i];
        if (s->t != t || s->row != row || s->col != c || !r[i].done || r[i].failed) continue;
        if (clocks >= 0 && s->l.clocks != clocks) continue;
        n++; share += r[i].planted_share; pat += r[i].s.pattern; wrong += r[i].s.wrong;
        ok += s->plant == JS_TURNS ? r[i].s.all : s->plant == JS_ONEOFF ? r[i].s.oneoff : r[i].s.first;
      }
      if (!n) { printf(" %21s", "-"); continue; }
      char cell[64];
      snprintf(cell, sizeof cell, "%3.0f%% p%3.0f%% w%d %4.1f%%", 100.0 * ok / n, 100.0 * pat / n, wrong, 100 * share / n);
      printf(" %21s", cell);
    }
    printf("\n");
  }
}

int main(int argc, char **argv) {
  int workers = 2, verbose = 0, clean = 1;
  double scale = 1;
  const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--workers") && i + 1 < argc) workers = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--scale") && i + 1 < argc) scale = atof(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--verbose")) verbose = 1;   /* every clean job accused, every planted one missed */
    else if (!strcmp(argv[i], "--planted-only")) clean = 0;
    else { fprintf(stderr, "usage: calibrate [--workers N] [--scale X] [--dir DIR] [--verbose] [--planted-only]\n"); return 2; }
  }
  struct stat ds;
  if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode) || access(dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "calibrate: %s is not a directory this process can write\n", dir);
    return 2;
  }
  specs v = {0};
  build(&v, scale, clean);
  result *r = mmap(NULL, v.n * sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (r == MAP_FAILED) { perror("mmap"); return 1; }
  memset(r, 0, v.n * sizeof *r);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  fprintf(stderr, "calibrate: %zu jobs, %d worker(s), under %s\n", v.n, workers, dir);
  for (int w = 0; w < workers; w++)
    if (fork() == 0) {
      for (size_t i = (size_t)w; i < v.n; i += (size_t)workers) {
        run_one(&v.a[i], dir, &r[i]);
        if (w == 0 && i % 500 < (size_t)workers) fprintf(stderr, "  %zu of %zu\n", i, v.n);
      }
      _exit(0);
    }
  int st, bad = 0;
  while (wait(&st) > 0) bad |= !WIFEXITED(st) || WEXITSTATUS(st);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  size_t failed = 0;
  for (size_t i = 0; i < v.n; i++) failed += !r[i].done || r[i].failed;
  printf("calibrate: %zu simulated jobs (seeds from %#llx), %zu failed to run, %.0f s\n", v.n,
         (unsigned long long)SEED_BASE, failed, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
  for (size_t i = 0; i < v.n && verbose; i++) {
    const spec *s = &v.a[i];
    int miss = s->t != T_CLEAN && !(s->plant == JS_TURNS ? r[i].s.all : s->plant == JS_ONEOFF ? r[i].s.oneoff : r[i].s.first);
    if ((s->t == T_CLEAN && r[i].s.accused) || miss || r[i].s.wrong)
      printf("  %s %d ranks %d steps%s%s, %s %.1f ms, victim %d, costing %.1f%% (seed %#llx): %s\n",
             s->t == T_CLEAN ? "accused" : "missed", s->l.nranks, s->l.nsteps, s->l.shared ? " shared" : "",
             s->l.clocks ? " clocks" : "", js_plant_name(s->plant), r[i].late_ns / 1e6, r[i].victim,
             100 * r[i].planted_share, (unsigned long long)s->seed, r[i].line);
  }
  print_clean(&v, r);
  static const char *const size_rows[5] = { "0.5% a step", "1% a step", "2% a step", "5% a step", "10% a step" };
  const char *cols[6];
  for (int c = 0; c < 6; c++) cols[c] = COLS[c].name;
  for (int ck = 0; ck < 2; ck++)
    print_recall(&v, r, T_SIZE, 5, 6, size_rows, cols, ck ?
                 "The same, hosts whose clocks are apart (unsynchronised, up to +-2 ms): a host late every step looks like "
                 "a clock ahead" :
                 "Recall by effect size (what it costs each step) and frequency: named first (turns: both named), p = pattern "
                 "right, w = jobs naming an unplanted rank, then what the plant cost the job (its span over its clean twin's); "
                 "2-64 ranks, 100 or 2,000 steps, jitter 0.1-1 ms, steps 30-120 ms (x4 on time-shared GPUs), each at least "
                 "3x its side's resolution; hosts whose clocks agree (synchronised, within 50 us)", ck);
  static const char *const sub_rows[4] = { "0.5 x jitter", "1 x jitter", "2 x jitter", "3 x jitter" };
  static const char *const sub_cols[3] = { "4 ranks", "8 ranks", "64 ranks" };
  print_recall(&v, r, T_SUBTLE, 4, 3, sub_rows, sub_cols,
               "Subtle effects: late every step by a multiple of a 2 ms jitter (steps of 30 ms, 100 steps)", -1);
  static const char *const one_rows[2] = { "1% of the job", "5% of the job" };
  static const char *const one_cols[1] = { "listed" };
  print_recall(&v, r, T_ONEOFF, 2, 1, one_rows, one_cols, "One-off stalls, costing the job 1% or 5% at once: the planted rank listed (or named)", -1);
  munmap(r, v.n * sizeof *r);
  free(v.a);
  return bad || failed ? 1 : 0;
}
