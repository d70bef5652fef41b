/* clock.c: measures the monotonic-to-realtime offset (best of several bracketed reads) and
 * prints nanosecond times as exact microsecond text, never through a double. */
#include "common/clock.h"

int64_t cl_clock_best_offset(int (*read)(void *arg, int64_t *ns), void *arg, int reads, int64_t *err_ns) {
  int64_t best_off = 0, best_w = INT64_MAX;
  for (int i = 0; i < reads; i++) {
    int64_t other;
    uint64_t m0 = cl_now();
    if (read(arg, &other) != 0) { if (err_ns) *err_ns = -1; return 0; }
    uint64_t m1 = cl_now();
    int64_t w = (int64_t)(m1 - m0);
    if (w < best_w) { best_w = w; best_off = other - (int64_t)(m0 + (m1 - m0) / 2); }
  }
  if (err_ns) *err_ns = best_w / 2 + 1;
  return best_off;
}

static int read_realtime(void *arg, int64_t *ns) {
  (void)arg;
  struct timespec r;
  clock_gettime(CLOCK_REALTIME, &r);
  *ns = (int64_t)r.tv_sec * 1000000000ll + r.tv_nsec;
  return 0;
}

int64_t cl_clock_measure_offset(int64_t *err_ns) { return cl_clock_best_offset(read_realtime, NULL, 16, err_ns); }

int cl_fmt_us(char *buf, int64_t ns) {
  char tmp[32];
  int n = 0, neg = ns < 0;
  uint64_t v = neg ? (uint64_t)(-(ns + 1)) + 1 : (uint64_t)ns;
  uint64_t frac = v % 1000, whole = v / 1000;
  tmp[n++] = (char)('0' + frac % 10); tmp[n++] = (char)('0' + frac / 10 % 10);
  tmp[n++] = (char)('0' + frac / 100); tmp[n++] = '.';
  do { tmp[n++] = (char)('0' + whole % 10); whole /= 10; } while (whole);
  int len = 0;
  if (neg) buf[len++] = '-';
  while (n) buf[len++] = tmp[--n];
  buf[len] = 0;
  return len;
}
