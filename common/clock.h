/* clock.h: the plugin's time base. Host times are CLOCK_MONOTONIC nanoseconds (a vDSO read);
 * they become Unix-epoch time through one offset measured per process. */
#ifndef COMMLENS_CLOCK_H
#define COMMLENS_CLOCK_H
#include <stdint.h>
#include <time.h>
static inline uint64_t cl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* Measures realtime - monotonic; *err_ns gets half the width of the best bracketing read. */
int64_t cl_clock_measure_offset(int64_t *err_ns);
/* Formats ns as microseconds with exactly three decimals ("123.456"); returns length. */
int cl_fmt_us(char *buf, int64_t ns);
#endif
