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
/* Adds a rank's alignment as cl_clock_align left it (aligned, offset_ns, err_ns, mad_ns,
 * samples, via_rank) to a JSON object: merge's metadata and report --json describe it the same
 * way. */
struct json_object;
void cl_clock_json(struct json_object *o, const cl_rank *r);
#endif
