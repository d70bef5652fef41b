/* phase_evidence.h: the v7 kernel-phase evidence for the straggler verdict. A collective's
 * initial_sync is the time its kernel waited on the GPU for its peers: measured where it
 * happens, with no clock between hosts, so the rank that waited least while the others waited
 * is the late one (straggler.h, CL_SG_GPU_WAIT). The verdict (verdict.c) asks here whether the
 * job has this evidence and reads each member's value. No I/O. */
#ifndef COMMLENS_ANALYSE_PHASE_EVIDENCE_H
#define COMMLENS_ANALYSE_PHASE_EVIDENCE_H
#include "tools/commlens/model/load.h"
#include "tools/commlens/analyse/straggler.h"

/* 1 when every member of every instance matched on 2+ ranks carries its kernel phases: the
 * verdict then rests on GPU wait. A job where some lack them (an older NCCL on some rank,
 * phases not requested, a kernel that does not report them) keeps GPU starts: mixing the two
 * measures in one instance would compare a duration with a time. */
int cl_phase_evidence_usable(const cl_job *job);
/* The arrival the verdict reads for one member: value = its GPU wait (ns), no clock error, no
 * clock (wait durations of different hosts compare directly), end unknown. */
cl_sg_arrival cl_phase_arrival(const cl_rank *r, size_t k, int rank_idx);
/* The job's wall time for the verdict line (GPU wait carries no times): the longest rank's
 * first-to-last event span, ns. */
int64_t cl_phase_job_ns(const cl_job *job);
#endif
