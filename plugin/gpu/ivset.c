/* ivset.c: a set of sorted, disjoint, non-touching half-open intervals with a cap on its size
 * (the exposure engine's unions of compute and communication time). Allocates only to grow, up
 * to the cap; past it the oldest intervals are forgotten (a sixteenth of the cap at once) and
 * counted in lost_below. */
#include "plugin/gpu/ivset.h"
#include "common/grow.h"
#include <stdlib.h>
#include <string.h>

size_t cl_iv_first_end_after(const cl_ivset *s, uint64_t t) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) { size_t mid = lo + (hi - lo) / 2; if (s->v[mid].end_ns > t) hi = mid; else lo = mid + 1; }
  return lo;
}

static int iv_reserve(cl_ivset *s, size_t need) { return cl_grow(&s->v, &s->cap, need, sizeof *s->v, 64, s->max); }

/* Forgets the k (1 <= k <= n) oldest intervals. */
static void iv_drop_first(cl_ivset *s, size_t k) {
  if (s->v[k - 1].end_ns > s->lost_below) s->lost_below = s->v[k - 1].end_ns;
  memmove(s->v, s->v + k, (s->n - k) * sizeof *s->v);
  s->n -= k;
}

uint64_t cl_iv_add(cl_ivset *s, uint64_t a, uint64_t b, size_t *lost) {
  if (b <= a) return 0;
  /* touching intervals merge too: first interval whose end >= a. Intervals mostly come in
   * time order (a GPU's kernels): at or after the last one's start, that is the last one or
   * the end, without a search. */
  size_t i;
  if (s->n && a >= s->v[s->n - 1].start_ns) i = a > s->v[s->n - 1].end_ns ? s->n : s->n - 1;
  else i = a ? cl_iv_first_end_after(s, a - 1) : 0;
  size_t j = i;
  uint64_t covered = 0, lo = a, hi = b;
  while (j < s->n && s->v[j].start_ns <= b) {
    uint64_t cs = s->v[j].start_ns > a ? s->v[j].start_ns : a;
    uint64_t ce = s->v[j].end_ns < b ? s->v[j].end_ns : b;
    if (ce > cs) covered += ce - cs;
    if (s->v[j].start_ns < lo) lo = s->v[j].start_ns;
    if (s->v[j].end_ns > hi) hi = s->v[j].end_ns;
    j++;
  }
  if (j == i) {   /* no merge: a new element at i */
    if (iv_reserve(s, s->n + 1) != 0) {
      if (!s->n || i == 0) {   /* older than all we keep: refused, and history up to it incomplete */
        if (b > s->lost_below) s->lost_below = b;
        if (lost) (*lost)++;
        return 0;
      }
      /* a sixteenth of the cap at once (up to the insertion point): forgetting one at a time
       * moved the whole set on every insertion into a full one */
      size_t k = s->max / 16 ? s->max / 16 : 1;
      if (k > i) k = i;
      iv_drop_first(s, k);
      i -= k;
      if (lost) *lost += k;
    }
    memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
    s->n++;
  } else if (j - i > 1) {
    memmove(s->v + i + 1, s->v + j, (s->n - j) * sizeof *s->v);
    s->n -= j - i - 1;
  }
  s->v[i].start_ns = lo; s->v[i].end_ns = hi;
  return (b - a) - covered;
}

uint64_t cl_iv_covered(const cl_ivset *s, uint64_t a, uint64_t b) {
  uint64_t c = 0;
  for (size_t i = cl_iv_first_end_after(s, a); i < s->n && s->v[i].start_ns < b; i++) {
    uint64_t cs = s->v[i].start_ns > a ? s->v[i].start_ns : a;
    uint64_t ce = s->v[i].end_ns < b ? s->v[i].end_ns : b;
    if (ce > cs) c += ce - cs;
  }
  return c;
}

void cl_iv_prune(cl_ivset *s, uint64_t t) {
  size_t k = cl_iv_first_end_after(s, t);
  if (!k) return;
  if (s->v[k - 1].end_ns > s->lost_below) s->lost_below = s->v[k - 1].end_ns;
  memmove(s->v, s->v + k, (s->n - k) * sizeof *s->v);
  s->n -= k;
}

void cl_iv_free(cl_ivset *s) { free(s->v); memset(s, 0, sizeof *s); }
