/* verdict.h: the product's answer, built from the aligned job: the straggler verdict
 * (analyse/straggler.h) over every instance, in steps (NVTX, else detected by analyse/steps.h),
 * with the evidence it used, and the per-step verdict. Each instance's last arrival, margin
 * and wait are computed here once (cl_sg_verdict.inst, by job instance index); blame.c and the
 * renderers read them. */
#ifndef COMMLENS_ANALYSE_VERDICT_H
#define COMMLENS_ANALYSE_VERDICT_H
#include "tools/commlens/model/load.h"
#include "tools/commlens/analyse/clock_model.h"
#include "tools/commlens/analyse/straggler.h"
#include "tools/commlens/analyse/steps.h"
#include "tools/commlens/analyse/gpu_share.h"

enum cl_steps_source { CL_STEPS_NONE, CL_STEPS_NVTX, CL_STEPS_PATTERN };
const char *cl_steps_source_key(enum cl_steps_source s);   /* "nvtx", "pattern", NULL */

typedef struct {
  cl_sg_verdict v;                   /* v.inst[i] is job instance i */
  int32_t *inst_step;                /* per job instance: its step, -1 none */
  int64_t *arrival;                  /* per job member (cl_job.mem): its arrival (GPU start) on
                                        the reference clock */
  cl_gpu_share share;                /* ranks time-sharing a GPU, and its slice */
  enum cl_steps_source steps_source;
  uint64_t steps_comm;               /* CL_STEPS_PATTERN: the communicator it was found on */
  cl_steps st;                       /* CL_STEPS_PATTERN: the detected steps */
  uint32_t nsteps;                   /* steps counted (pattern: st.nsteps; NVTX: largest + 1) */
  cl_step_verdict *stepv;            /* by step */
  uint32_t *step_order;              /* steps by lost time, most first */
  char line[512];                    /* cl_sg_verdict_line, as printed */
  /* instances the verdict leaves out (v.inst[i].last is -1 for them) */
  int64_t n_not_causal;              /* Broadcast, Reduce, ...: only the root makes others wait */
  int64_t n_impossible;              /* a member's GPU start after another member's end, beyond
                                        the clock error: times that cannot be true */
} cl_verdict_an;

/* Computes *out from an aligned job (cl_clock_align done; m its model, only read). The
 * evidence is the GPU's own wait for peers when every member has v7 kernel phases
 * (phase_evidence.h: no clock needed), else the GPU start on the modelled clock (a GPU-side
 * straggler shows there and not in its host enqueues; on a time-shared GPU with its slices as
 * the resolution, analyse/gpu_share.h) with the host enqueue beside it when every rank has
 * them (a rank late to enqueue shows there at the host's resolution); steps are found in the
 * issue order and gaps of the host enqueues when every rank has them (a time-shared GPU's
 * starts blur the gaps between steps), else of the GPU starts. docs/verdict.md has the rules.
 * Frees with cl_verdict_free. */
void cl_verdict_compute(const cl_job *job, const cl_clock_model *m, cl_verdict_an *out);
void cl_verdict_free(cl_verdict_an *out);
/* Whether an instance's n aligned arrivals cannot be true: some member started after another
 * had ended, beyond both clock errors (on one clock: beyond none). Linear in n after a sort by
 * clock; idx: n entries of scratch. */
int cl_verdict_impossible(const cl_sg_arrival *a, uint32_t n, uint32_t *idx);
#endif
