/* timers.h: which collective instances each rank's digest (or trace) says NCCL's kernel-channel
 * timers left out (COMMLENS_TIMERS=sampled, docs/sampling.md), kept as two bits a collective
 * per (communicator, function): seen, and left out. What the report compares across ranks
 * (analyse/timers.c). */
#ifndef COMMLENS_CLI_TIMERS_MODEL_H
#define COMMLENS_CLI_TIMERS_MODEL_H
#include <stddef.h>
#include <stdint.h>

#define CL_TMARK_MAX_SPAN (1ll << 26)   /* seqs a (comm, func) keeps past its first: 16 MiB of bits */

/* One (comm, func) of one rank: bit k of seen/out is seq base + k; base is a multiple of 64. */
typedef struct {
  uint64_t comm; int32_t func;
  int64_t base, top;         /* the lowest seq kept, and one past the highest seen */
  uint64_t *seen, *out; size_t words;
} cl_tmark;
typedef struct {
  cl_tmark *m; size_t n, cap;
  int64_t n_out, n_seen;     /* collectives marked left out, and seen */
  int64_t n_over;            /* seqs past CL_TMARK_MAX_SPAN or before the base: not kept */
  size_t last;               /* the entry the last mark went to */
} cl_tmarks;

/* A collective instance of the rank: (comm, func, seq), left out (`out`) or not. */
void cl_tmarks_note(cl_tmarks *t, uint64_t comm, int32_t func, int64_t seq, int out);
/* The entry of (comm, func), NULL if none. */
const cl_tmark *cl_tmarks_find(const cl_tmarks *t, uint64_t comm, int32_t func);
static inline int cl_tmark_bit(const uint64_t *w, int64_t k) { return (int)(w[k >> 6] >> (k & 63) & 1); }
void cl_tmarks_free(cl_tmarks *t);
#endif
