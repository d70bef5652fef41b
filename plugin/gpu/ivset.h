/* ivset.h: sorted, disjoint, non-touching half-open intervals under a size cap
 * (plugin/gpu/ivset.c). A zeroed cl_ivset with `max` set is an empty set. */
#ifndef COMMLENS_IVSET_H
#define COMMLENS_IVSET_H
#include <stddef.h>
#include <stdint.h>

typedef struct { uint64_t start_ns, end_ns; } cl_expo_iv;   /* half-open [start, end) */

typedef struct {
  cl_expo_iv *v;
  size_t n, cap, max;
  uint64_t lost_below;   /* history ending at or before this was dropped (cap or prune) */
} cl_ivset;

/* Inserts [a, b) and returns how many ns it newly covered. *lost (may be NULL) grows by the
 * intervals the cap made the set lose: its oldest (a sixteenth of the cap, at most those older
 * than [a, b)), or [a, b) itself when it is older than all the set keeps (lost_below then
 * covers it). */
uint64_t cl_iv_add(cl_ivset *s, uint64_t a, uint64_t b, size_t *lost);
/* First index whose end is > t (ends are sorted because intervals are disjoint). */
size_t cl_iv_first_end_after(const cl_ivset *s, uint64_t t);
/* ns of [a, b) covered by the set. */
uint64_t cl_iv_covered(const cl_ivset *s, uint64_t a, uint64_t b);
/* Forgets intervals ending at or before t. */
void cl_iv_prune(cl_ivset *s, uint64_t t);
/* Frees the intervals and zeroes the set. */
void cl_iv_free(cl_ivset *s);
#endif
