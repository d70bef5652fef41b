/* clock.h: the plugin's time base. Host times are CLOCK_MONOTONIC nanoseconds (a vDSO read);
 * they become Unix-epoch time through one offset measured per process. Every timestamp goes
 * through libc's clock_gettime by name, so that commlens-replay --virtual-clock can interpose it
 * (tools/replay/main.c defines and exports clock_gettime: a replay's plugin reads the recorded
 * run's times); what must run on real time reads the kernel's clock (cl_mono_kernel). */
#ifndef COMMLENS_CLOCK_H
#define COMMLENS_CLOCK_H
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static inline uint64_t cl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* other - monotonic for another clock, from the narrowest of `reads` monotonic-bracketed reads
 * of it (`read` returns 0 on success); *err_ns (if given) gets half that bracket's width.
 * Returns 0 with *err_ns = -1 if a read failed. */
int64_t cl_clock_best_offset(int (*read)(void *arg, int64_t *ns), void *arg, int reads, int64_t *err_ns);
/* Measures realtime - monotonic; *err_ns gets half the width of the best bracketing read. */
int64_t cl_clock_measure_offset(int64_t *err_ns);
/* CLOCK_MONOTONIC read from the kernel, never through clock_gettime: that symbol may be
 * interposed (commlens-replay --virtual-clock gives the plugin the recorded run's time there,
 * standing still between calls). For waits and pacing, which run on real time; never for a
 * timestamp (cl_now). */
static inline void cl_mono_kernel(struct timespec *ts) { syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ts); }
static inline uint64_t cl_mono_kernel_ns(void) {
  struct timespec ts;
  cl_mono_kernel(&ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* A CLOCK_REALTIME deadline `ms` milliseconds from now (for pthread_timedjoin_np). */
static inline struct timespec cl_deadline_ms(int ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  long long ns = (long long)dl.tv_nsec + (long long)(ms % 1000) * 1000000ll;
  dl.tv_sec += ms / 1000 + (time_t)(ns / 1000000000ll);
  dl.tv_nsec = (long)(ns % 1000000000ll);
  return dl;
}
/* Formats ns as microseconds with exactly three decimals ("123.456"); returns length. */
int cl_fmt_us(char *buf, int64_t ns);
#endif
