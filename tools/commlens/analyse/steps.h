/* steps.h: iteration boundaries without NVTX ranges, from the repeating pattern of one
 * communicator's collectives ((func, bytes) in issue order): the shortest period that explains
 * the sequence after its start-up, followed through a few extra or missing collectives; and,
 * given per-instance results, each step's culprit, its lateness and the steps that cost most.
 * No I/O. */
#ifndef COMMLENS_ANALYSE_STEPS_H
#define COMMLENS_ANALYSE_STEPS_H
#include <stddef.h>
#include <stdint.h>

#define CL_ST_MIN_SCORE 0.8      /* share of collectives the period must predict to be believed */
#define CL_ST_NEAR_BEST 0.02     /* periods scoring this close to the best: the shortest wins */
#define CL_ST_MAX_PERIOD 4096    /* collectives per step searched */
#define CL_ST_WINDOW 20000       /* collectives scored per period (bounds the search) */
#define CL_ST_CHUNKS 5           /* stretches scored apart; a period scores their median */
#define CL_ST_GAP_JUMP 4.0       /* sorted gaps between collectives jumping this much part a
                                    step's collectives from the gap between steps */
#define CL_ST_GAP_MIN_SHARE 50   /* each side of that jump holds at least 1/this of the gaps */

/* One collective of one communicator, in issue order. t: its first arrival (any one clock, ns;
 * 0 if unknown: steps then start at the pattern's first collective). */
typedef struct { int32_t func; int64_t bytes; int64_t t; } cl_st_coll;

typedef struct {
  int found;                 /* a repeating pattern was found */
  uint32_t period;           /* collectives per step */
  double score;              /* share of collectives the period predicts */
  uint32_t startup;          /* collectives before the first step */
  uint32_t nextra;           /* collectives the pattern did not expect (kept in their step) */
  uint32_t nmissing;         /* collectives the pattern expected and did not see */
  uint32_t nsteps;
  int32_t *step_of;          /* per collective: its step, -1 before the first (or off pattern) */
  uint32_t *step_first;      /* per step: its first collective */
  int64_t *step_t;           /* per step: the t of its first collective */
} cl_steps;

/* Detects the steps of c[0..n) (the caller frees out with cl_steps_free). */
void cl_steps_detect(const cl_st_coll *c, size_t n, cl_steps *out);
void cl_steps_free(cl_steps *s);
/* The step holding time t (another communicator's instance, on the same clock): the last step
 * starting at or before t; -1 before the first. */
int32_t cl_steps_at(const cl_steps *s, int64_t t);

/* Per-step verdict from per-instance results (see analyse/straggler.h): for each instance its
 * step, the participant that arrived last (-1: none), its margin over the next, the wait it
 * caused, and what the step would save were every participant there at the median time. */
typedef struct { int32_t step, last; uint8_t called; double margin_ns, wait_ns, over_median_ns; } cl_st_inst;
typedef struct {
  int32_t step;
  int32_t culprit;           /* who caused most wait in the step by called last arrivals; -1 */
  double lateness_ns;        /* the culprit's largest margin in the step */
  double lost_ns;            /* sum of over_median_ns of the step's instances */
  double wait_ns;            /* all wait of the step */
  int64_t ninst;
} cl_step_verdict;
/* Fills out[0..nsteps) (step k at out[k]) and order[0..nsteps): steps by lost time, most first. */
void cl_steps_attribute(const cl_st_inst *in, size_t n, uint32_t nsteps, cl_step_verdict *out, uint32_t *order);
#endif
