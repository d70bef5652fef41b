/* util.c: allocation, selection (median), rank lists and time formatting for the CLI.
 * Pure helpers: no I/O besides the out-of-memory message. */
#include "util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static void cl_oom(size_t n) {
  fprintf(stderr, "commlens: out of memory (%zu bytes)\n", n);
  exit(3);
}
void *cl_xmalloc(size_t n) { void *p = malloc(n ? n : 1); if (!p) cl_oom(n); return p; }
void *cl_xcalloc(size_t n, size_t sz) { void *p = calloc(n ? n : 1, sz ? sz : 1); if (!p) cl_oom(n * sz); return p; }
void *cl_xrealloc(void *p, size_t n) { p = realloc(p, n ? n : 1); if (!p) cl_oom(n); return p; }
char *cl_xstrndup(const char *s, size_t n) {
  char *d = cl_xmalloc(n + 1); if (n) memcpy(d, s, n); d[n] = 0; return d;   /* s may be NULL when n == 0 */
}

int cl_parse_ranks(const char *s, unsigned char **out) {
  unsigned char *m = cl_xcalloc(65536, 1);
  const char *p = s;
  while (*p) {
    char *q; long a = strtol(p, &q, 10), b = a;
    if (q == p || a < 0 || a > 65535) goto bad;
    p = q;
    if (*p == '-') { p++; b = strtol(p, &q, 10); if (q == p || b < a || b > 65535) goto bad; p = q; }
    for (long r = a; r <= b; r++) m[r] = 1;
    if (*p == ',') p++; else if (*p) goto bad;
  }
  *out = m; return 0;
bad:
  free(m); return -1;
}

/* Quickselect: median without sorting everything (v is reordered). */
#define CL_SELECT(T, name)                                                              \
  static T name(T *v, size_t n, size_t kk) {  /* Wirth's selection */                 \
    long l = 0, m = (long)n - 1, k = (long)kk;                                          \
    while (l < m) {                                                                     \
      T x = v[k]; long i = l, j = m;                                                    \
      do {                                                                              \
        while (v[i] < x) i++;                                                           \
        while (x < v[j]) j--;                                                           \
        if (i <= j) { T t = v[i]; v[i] = v[j]; v[j] = t; i++; j--; }                    \
      } while (i <= j);                                                                 \
      if (j < k) l = i;                                                                 \
      if (k < i) m = j;                                                                 \
    }                                                                                   \
    return v[k];                                                                        \
  }
CL_SELECT(int64_t, cl_select_i64)
CL_SELECT(double, cl_select_dbl)

int64_t cl_median_i64(int64_t *v, size_t n) {
  if (n % 2) return cl_select_i64(v, n, n / 2);
  int64_t a = cl_select_i64(v, n, n / 2 - 1), b = cl_select_i64(v, n, n / 2);
  return a + (b - a) / 2;
}
double cl_median_dbl(double *v, size_t n) {
  if (n % 2) return cl_select_dbl(v, n, n / 2);
  double a = cl_select_dbl(v, n, n / 2 - 1), b = cl_select_dbl(v, n, n / 2);
  return (a + b) / 2;
}

const char *cl_fmt_time(char *buf, size_t n, double ns) {
  double a = fabs(ns);
  if (a >= 1e9) snprintf(buf, n, "%.3f s", ns / 1e9);
  else if (a >= 1e6) snprintf(buf, n, "%.3f ms", ns / 1e6);
  else if (a >= 1e3) snprintf(buf, n, "%.1f us", ns / 1e3);
  else snprintf(buf, n, "%.0f ns", ns);
  return buf;
}
