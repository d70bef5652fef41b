/* loghist.h: a histogram of durations, four buckets an octave: bucket b holds
 * [cl_loghist_floor(b), cl_loghist_floor(b + 1)) ns, the last bucket of n everything longer. */
#ifndef COMMLENS_LOGHIST_H
#define COMMLENS_LOGHIST_H
#include <stdint.h>

static inline unsigned cl_loghist_bucket(uint64_t ns, unsigned nbuckets) {
  if (ns < 4) return (unsigned)ns;
  unsigned o = 63u - (unsigned)__builtin_clzll(ns);     /* ns in [2^o, 2^(o+1)) */
  unsigned b = 4 * (o - 1) + (unsigned)((ns >> (o - 2)) & 3);
  return b < nbuckets ? b : nbuckets - 1;
}
static inline uint64_t cl_loghist_floor(unsigned b) {
  if (b < 4) return b;
  unsigned o = b / 4 + 1, sub = b % 4;
  return (uint64_t)(4 + sub) << (o - 2);
}
/* The counts in h together. */
static inline uint64_t cl_loghist_total(const uint32_t *h, unsigned nbuckets) {
  uint64_t n = 0;
  for (unsigned b = 0; b < nbuckets; b++) n += h[b];
  return n;
}
/* The upper edge of the bucket holding the q-quantile (0 < q <= 1) of n counts in h (0: none). */
static inline uint64_t cl_loghist_quantile(const uint32_t *h, unsigned nbuckets, double q) {
  uint64_t n = cl_loghist_total(h, nbuckets), seen = 0;
  if (!n) return 0;
  for (unsigned b = 0; b < nbuckets; b++) {
    seen += h[b];
    if ((double)seen >= q * (double)n) return cl_loghist_floor(b + 1);
  }
  return cl_loghist_floor(nbuckets);
}
/* A bucket edge in microseconds as the summary and the report print it ("under X us"): 1 at least,
 * the buckets below a microsecond being finer than one decimal shows. */
static inline double cl_loghist_us(uint64_t ns) { return ns < 1000 ? 1.0 : (double)ns / 1e3; }
#endif
