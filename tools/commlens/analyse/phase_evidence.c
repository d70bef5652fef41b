/* phase_evidence.c: see phase_evidence.h. Owns when the verdict may rest on the GPU's own wait
 * for peers (v7 initial_sync) and how a member's wait becomes an arrival. */
#include "tools/commlens/analyse/phase_evidence.h"

int cl_phase_evidence_usable(const cl_job *job) {
  size_t members = 0;
  for (size_t k = 0; k < job->inst.n; k++) {
    const cl_inst *in = &job->inst.a[k];
    if (in->count < 2) continue;
    for (uint32_t j = 0; j < in->count; j++) {
      const cl_member *mb = &job->mem.a[in->first + j];
      if (!job->r[mb->rank_idx]->colls.a[mb->coll_idx].has_phase) return 0;
      members++;
    }
  }
  return members > 0;
}

cl_sg_arrival cl_phase_arrival(const cl_rank *r, size_t k, int rank_idx) {
  return (cl_sg_arrival){ .who = rank_idx, .value = cl_coll_v7_of(r, k).gwait };
}

int64_t cl_phase_job_ns(const cl_job *job) {
  int64_t span = 0;
  for (int i = 0; i < job->n; i++)
    if (job->r[i]->t_max > job->r[i]->t_min && job->r[i]->t_max - job->r[i]->t_min > span)
      span = job->r[i]->t_max - job->r[i]->t_min;
  return span;
}
