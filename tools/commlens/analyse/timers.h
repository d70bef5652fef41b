/* timers.h: whether every rank timed the same collective instances with NCCL's kernel-channel
 * timers, where they were sampled (COMMLENS_TIMERS=sampled, docs/sampling.md). Each rank's
 * digest marks the instances the sample left out (model/timers.h); an instance seen on two
 * ranks or more is timed on all of them, left out on all of them, or mixed: a rank that is not
 * with the others there is named. */
#ifndef COMMLENS_CLI_TIMERS_H
#define COMMLENS_CLI_TIMERS_H
#include "tools/commlens/model/load.h"
#include <stdint.h>

typedef struct {
  int sampled;                  /* some rank's sample left a collective out (else nothing to say) */
  int64_t n_seen, n_out;        /* collectives over every rank, and of them left out */
  int64_t compared;             /* instances (comm, func, seq) seen on 2+ ranks */
  int64_t timed_all, out_all, mixed;
  int64_t *differ;              /* per rank (cl_job.r's index): mixed instances it is not with most ranks in */
  int64_t n_over;               /* instances a rank's marks could not keep (model/timers.h) */
} cl_timers_an;

void cl_timers_check(const cl_job *job, cl_timers_an *t);
void cl_timers_an_free(cl_timers_an *t);
#endif
