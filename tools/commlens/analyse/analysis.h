/* analysis.h: what the report concludes (analyse/analysis.c), computed once from the aligned
 * job for every output form: the verdict first (analyse/verdict.h), then the figures. */
#ifndef COMMLENS_CLI_ANALYSIS_H
#define COMMLENS_CLI_ANALYSIS_H
#include "tools/commlens/model/load.h"
#include "tools/commlens/analyse/blame.h"
#include "tools/commlens/analyse/hang.h"
#include "tools/commlens/analyse/verdict.h"
#include "tools/commlens/analyse/channels.h"
#include "tools/commlens/analyse/tags.h"
#include "tools/commlens/analyse/timers.h"
#include <stdint.h>

/* What the report concludes, for every output form (text, JSON, HTML). Times in ns. */
typedef struct {                   /* per rank, indexed like cl_job.r */
  double blame;                    /* Σ of the others' waits on the instances it arrived last */
  double waited, late_sum, coll_time, transfer, comm_union;
  int64_t n_last, n_inst;          /* instances it arrived last in / took part in */
  uint32_t worst[3]; double worst_w[3];   /* its instances that made others wait the most */
} cl_rank_an;
typedef struct {                   /* per instance, indexed like cl_job.inst */
  int32_t culprit;                 /* rank index of the last arrival, -1: fewer than 2 ranks */
  double wait, transfer, late;     /* Σ waits, shortest duration, last - median arrival */
  double busbw, ratio;             /* GB/s; vs the median of its (func, bytes), 0: no median */
  int64_t med_arrival;             /* median arrival, on the reference rank's clock */
} cl_inst_an;
typedef struct { int ri; cl_chan *c; double mean, ratio; } cl_chan_row;   /* ratio: vs_median */
typedef struct {
  cl_rank_an *ra; cl_inst_an *ia;
  cl_chan_row *ch; size_t nch;     /* every (rank, comm, channel), slowest first */
  uint32_t *lowbw; size_t nlow;    /* instances below their size's median, lowest first */
  double tot_coll, tot_wait, tot_transfer;
  double span;                     /* first to last event of every rank, aligned */
  int64_t n_multi;                 /* instances matched on 2+ ranks */
  const cl_clock_model *cm;         /* the clock model the job was aligned with (the caller's) */
  cl_verdict_an vd;                /* the answer: the straggler verdict, its steps (verdict.h) */
  cl_channels_an chv;              /* the channel verdict, per rank with kernel_ch (channels.h) */
  cl_blame bl;                     /* waits per rank and NVTX step, from the verdict's instances */
  cl_hang hang;                    /* what flight-recorder dumps say about a hang (hang.h) */
  cl_tags tags;                    /* by v7 user tag, and each rank's exposure split (tags.h) */
  cl_timers_an timers;             /* whether every rank timed the same instances (timers.h) */
} cl_analysis;
/* Fills *an from a job aligned by cl_clock_align with model cm (borrowed: it must outlive an);
 * cl_analysis_free releases it. */
void cl_analyse(cl_job *job, const cl_clock_model *cm, cl_analysis *an);
void cl_analysis_free(cl_analysis *an);
/* A rank's exposed communication into *out (-1: none recorded); returns its source or NULL. */
const char *cl_rank_exposed(const cl_rank *r, double *out);
/* What a channel's proxy steps say: "waited on peer", "waited on local GPU", "no waits", "-". */
const char *cl_chan_verdict(const cl_chan *c);
/* The peer this channel waited on the most (-1: none) and that wait, ns. */
void cl_chan_top_peer(const cl_chan *c, int *peer, int64_t *w);

#endif
