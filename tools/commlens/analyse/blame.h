/* blame.h: who made everyone wait, ranked so that a rank late again and again comes before a
 * one-off wait. Per collective instance (arrivals aligned across ranks) the last rank is
 * "significantly" last when it arrived later than the next-latest rank by more than
 * max(CL_BLAME_MIN_MARGIN_NS, CL_BLAME_MARGIN_OF_TRANSFER x the instance's transfer time).
 * Warm-up is detected, not counted: within each group of like instances (same communicator,
 * function and size, by sequence number) the leading run whose collective time is an outlier
 * (over CL_BLAME_WARMUP_FACTOR x the group's median) is warm-up (connection set-up, lazy
 * initialisation); an instance of a small group (fewer than 3: a start-up broadcast) is
 * warm-up when it ends before the last warm-up instance of the larger groups does.
 * A rank is a persistent straggler when it was significantly last, outside warm-up, at least
 * twice; persistent ranks rank first, by the wait they caused in those instances; the rest
 * follow by all the wait they caused. With NVTX steps, each step's lost time (the wait of its
 * instances) and the rank that caused most of it. */
#ifndef COMMLENS_BLAME_H
#define COMMLENS_BLAME_H
#include "tools/commlens/model/load.h"
#include <stdint.h>

#define CL_BLAME_MIN_MARGIN_NS 50000.0
#define CL_BLAME_MARGIN_OF_TRANSFER 0.1
#define CL_BLAME_WARMUP_FACTOR 3.0

typedef struct {
  int32_t culprit;           /* rank index of the last arrival, -1: fewer than 2 ranks */
  double wait;               /* sum over members of (last arrival - own arrival), ns */
  double margin;             /* last arrival - the next-latest arrival, ns */
  double transfer;           /* shortest duration across ranks, ns */
  double coll_time;          /* last end - first arrival, ns */
  int warmup, significant;
  int64_t first_arrival;     /* aligned, ns */
  int64_t last_arrival;      /* the culprit's, aligned, ns */
  long step;                 /* NVTX step of the reference rank holding its first arrival, -1 */
} cl_blame_inst;

typedef struct {
  int64_t n_sig;             /* significantly last outside warm-up */
  int64_t n_eligible;        /* instances outside warm-up it took part in */
  double median_margin;      /* its median margin when significantly last, ns */
  double wait_sig;           /* wait caused in those instances, ns */
  double wait_all;           /* all wait caused, ns (warm-up and small margins included) */
  double wait_warmup;        /* wait caused in warm-up instances, ns */
  int64_t n_last_warmup;
  int persistent;
  uint32_t worst[3]; double worst_w[3];   /* its costliest significant instances */
} cl_blame_rank;

typedef struct { long step; double lost; int32_t culprit; double culprit_wait; int64_t n_inst; } cl_blame_step;

typedef struct {
  cl_blame_inst *inst;       /* by job instance index */
  cl_blame_rank *rank;       /* by rank index */
  int *order;                /* rank indices, most to blame first */
  int64_t n_warmup, n_eligible;
  int64_t warmup_end;        /* aligned ns; 0: no warm-up found */
  double confidence;         /* the top rank's ranking figure over the second's (inf: alone) */
  cl_blame_step *steps; size_t nsteps;   /* by lost time, most first */
} cl_blame;

/* Computes everything from the job's instances (cl_job_instances, cl_job_align done). */
void cl_blame_compute(const cl_job *job, cl_blame *b);
void cl_blame_free(cl_blame *b);
#endif
