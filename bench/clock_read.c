/* clock_read.c: what one host clock read costs on this machine, the plugin's (CLOCK_MONOTONIC
 * through the vDSO: common/clock.h cl_now) beside the TSC's (rdtsc, x86-64 only), to price the
 * reads NCCL's threads make per collective. Medians of 15 runs of 200,000 reads each, with the
 * fastest and slowest run. `make -C bench clock_read BUILD=...`, then `$(BUILD)/bench-clock-read`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define RUNS 15
#define READS 200000

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static void report(const char *what, double *v) {
  qsort(v, RUNS, sizeof *v, cmp_d);
  printf("%-32s %6.1f ns a read (runs %.1f .. %.1f)\n", what, v[RUNS / 2], v[0], v[RUNS - 1]);
}

int main(void) {
  double mono[RUNS], tsc[RUNS];
  volatile uint64_t sink = 0;
  for (int k = 0; k < RUNS; k++) {
    uint64_t t0 = mono_ns();
    for (int i = 0; i < READS; i++) sink += mono_ns();
    mono[k] = (double)(mono_ns() - t0) / READS;
#if defined(__x86_64__)
    t0 = mono_ns();
    for (int i = 0; i < READS; i++) sink += __rdtsc();
    tsc[k] = (double)(mono_ns() - t0) / READS;
#endif
  }
  report("clock_gettime(CLOCK_MONOTONIC)", mono);
#if defined(__x86_64__)
  report("rdtsc", tsc);
#else
  (void)tsc;
#endif
  return (int)(sink & 0);
}
