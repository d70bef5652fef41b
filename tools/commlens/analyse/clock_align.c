/* clock_align.c: feeds the loaded job to the clock model (one clock per host boot, causal
 * bounds between hosts) and writes each rank's resulting alignment back into the job, so every
 * stage after this one reads times on the reference clock (and its JSON form, cl_clock_json). Never estimates an offset between
 * ranks of one host boot. */
#include "tools/commlens/analyse/clock_align.h"
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>

/* An instance member's start on its own clock for the causal bounds: the host enqueue when the
 * trace paired one, else the GPU start (the earlier: any time at or before the true start). */
static int64_t member_start(const cl_coll *c) {
  return c->enq != CL_NO_TIME && c->enq < c->start ? c->enq : c->start;
}

void cl_clock_align(cl_job *job, cl_clock_model *m) {
  cl_cm_rank *cr = cl_xcalloc((size_t)job->n + 1, sizeof *cr);
  for (int i = 0; i < job->n; i++) {
    const cl_info *in = &job->r[i]->info;
    cr[i] = (cl_cm_rank){ in->host, in->boot_id, in->clock_id, in->sync_known, in->sync_unsynchronised,
                          in->sync_esterror_us, in->sync_maxerror_us };
  }
  cl_cm_inst *ci = cl_xmalloc((job->inst.n + 1) * sizeof *ci);
  cl_cm_obs *co = cl_xmalloc((job->mem.n + 1) * sizeof *co);
  for (size_t k = 0; k < job->inst.n; k++) {
    const cl_inst *in = &job->inst.a[k];
    ci[k] = (cl_cm_inst){ in->first, in->count, cl_cm_func_is_causal(cl_func_name(in->func)) };
    for (uint32_t j = 0; j < in->count; j++) {
      const cl_member *mb = &job->mem.a[in->first + j];
      const cl_coll *c = &job->r[mb->rank_idx]->colls.a[mb->coll_idx];
      co[in->first + j] = (cl_cm_obs){ (int32_t)mb->rank_idx, member_start(c), c->end };
    }
  }
  cl_cm_input cin = { job->n, cr, job->inst.n, ci, co };
  cl_cm_build(&cin, m);
  free(cr); free(ci); free(co);
  job->ref_rank = job->n ? job->r[0]->rank : 0;
  for (int i = 0; i < job->n; i++) {
    cl_rank *r = job->r[i];
    double est, lo, hi;
    const cl_cm_clock *ck = &m->clock[m->clock_of_rank[i]];
    /* one offset per rank: the line at the middle of the instances it was fitted on, which a
     * trace and a digest of the same run share (a rank's own span is not: a trace holds more
     * events than its digest, and with drift the offset moves with the time it is read at) */
    int64_t mid = ck->pair >= 0 ? m->pair[ck->pair].t_mid : r->t_min / 2 + r->t_max / 2;
    int bounded = cl_cm_offset(m, i, mid, &est, &lo, &hi);
    r->aligned = bounded;
    r->offset_ns = bounded ? (int64_t)llround(est) : 0;
    r->off_err_ns = r->off_mad_ns = bounded ? (int64_t)llround((hi - lo) / 2) : 0;
    r->off_samples = ck->pair >= 0 ? (int)m->pair[ck->pair].nconstraints : 0;
    r->off_via = job->r[ck->parent >= 0 ? m->clock[ck->parent].first_rank : ck->first_rank]->rank;
  }
}

void cl_clock_json(json_object *o, const cl_rank *r) {
  json_object_object_add(o, "aligned", json_object_new_boolean(r->aligned));
  json_object_object_add(o, "offset_ns", json_object_new_int64(r->offset_ns));
  json_object_object_add(o, "err_ns", json_object_new_int64(r->off_err_ns));
  json_object_object_add(o, "mad_ns", json_object_new_int64(r->off_mad_ns));
  json_object_object_add(o, "samples", json_object_new_int(r->off_samples));
  json_object_object_add(o, "via_rank", json_object_new_int(r->off_via));
}
