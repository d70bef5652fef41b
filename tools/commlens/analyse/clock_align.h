/* clock_align.h: the job's clock model (analyse/clock_model.h) built from the loaded job, and
 * every rank's alignment taken from it: ranks of one host boot at offset exactly 0, other hosts
 * at their pair's estimate with its interval. */
#ifndef COMMLENS_ANALYSE_CLOCK_ALIGN_H
#define COMMLENS_ANALYSE_CLOCK_ALIGN_H
#include "tools/commlens/model/load.h"
#include "tools/commlens/analyse/clock_model.h"

/* Builds *m from the job's instances (cl_job_instances first; the caller frees m with
 * cl_cm_free) and sets each rank's aligned, offset_ns (at the middle of its trace), off_err_ns
 * and off_mad_ns (half the interval), off_samples (the pair's constraints) and off_via (the
 * lowest rank of the parent clock). A rank whose offset is unbounded stays unaligned. */
void cl_clock_align(cl_job *job, cl_clock_model *m);
#endif
