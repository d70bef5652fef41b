/* blame.h: the waits each rank caused, from the verdict's per-instance results
 * (analyse/verdict.h decides each instance's last arrival, its margin over the next, the wait
 * it caused, whether it is start-up and whether the margin is called: beyond 50 us and the
 * clock error). Per rank: the called last arrivals outside start-up, their median margin and
 * the wait they caused, and all the wait it caused; ranks ordered with two or more called last
 * arrivals first, by that wait. With NVTX steps, each step's lost time (the wait of its
 * instances) and the rank that caused most of it. Who is a straggler is the verdict's to say,
 * not this ranking's. */
#ifndef COMMLENS_BLAME_H
#define COMMLENS_BLAME_H
#include "tools/commlens/model/load.h"
#include "tools/commlens/analyse/straggler.h"
#include <stdint.h>

typedef struct {
  int32_t culprit;           /* rank index of the last arrival, -1: fewer than 2 ranks */
  double wait;               /* sum over members of (last arrival - own arrival), ns */
  double margin;             /* last arrival - the next-latest arrival, ns */
  double transfer;           /* shortest duration across ranks, ns */
  double coll_time;          /* last end - first arrival, ns */
  int warmup, significant;   /* the verdict's start-up and called flags */
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
  cl_blame_step *steps; size_t nsteps;   /* by lost time, most first */
} cl_blame;

/* Computes everything from the job's instances and the verdict's per-instance results (v->inst
 * indexed like job->inst). */
void cl_blame_compute(const cl_job *job, const cl_sg_verdict *v, cl_blame *b);
void cl_blame_free(cl_blame *b);
#endif
