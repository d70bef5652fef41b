/* channels.h: the channel verdict. Per rank, the channels of each collective are the
 * participants and their kernel_ch ends the arrivals (one clock: no clock error); the straggler
 * verdict (straggler.h) finds a channel that ends last beyond chance, one-off channel stalls, or
 * none, with the same start-up rule, units (steps) and false-accusation rate as the ranks'. */
#ifndef COMMLENS_ANALYSE_CHANNELS_H
#define COMMLENS_ANALYSE_CHANNELS_H
#include "tools/commlens/analyse/verdict.h"

#define CL_CH_MIN_MARGIN_NS 10000.0   /* channels of one kernel end within a few us of each other */

/* One rank's channel verdict. v.inst[i] is key[i]'s result; participants are channel numbers. */
typedef struct {
  int rank_idx;                    /* index into cl_job.r */
  cl_sg_verdict v;
  struct cl_ch_key { uint64_t comm; int64_t seq; int32_t func; } *key;   /* per instance */
  char line[512];                  /* cl_sg_verdict_line with "channel" */
} cl_ch_rank;

typedef struct {
  cl_ch_rank *r; int n;            /* ranks with channel events, in job order */
  int head;                        /* index into r of the rank the headline names; -1: none */
  int64_t n_over;                  /* kernel_ch slices past the loader's cap (not analysed) */
  char line[640];                  /* the headline: a slow channel, stalls, none, or no events */
} cl_channels_an;

/* Computes *out from the aligned job and its rank verdict (steps, start-up, wall time). Frees
 * with cl_channels_free. */
void cl_channels_compute(const cl_job *job, const cl_verdict_an *vd, cl_channels_an *out);
void cl_channels_free(cl_channels_an *out);
#endif
