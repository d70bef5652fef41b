/* gpu_join.h: joins NCCL's events with CUPTI's GPU activity, on the writer thread. It learns
 * which CUPTI correlation ids are NCCL's launches (the launch API record lies inside a
 * KernelLaunch event on the same OS thread), so NCCL kernels are told from compute kernels by
 * NCCL's own events, not by kernel names (names serve only where NCCL gives no KernelLaunch:
 * ABI < v5 and CUDA-graph replays). It gives each launch group its kernel's GPU span, draws
 * GPU kernel tracks, and runs the exposure engine over NCCL spans against compute kernels. */
#ifndef COMMLENS_GPU_JOIN_H
#define COMMLENS_GPU_JOIN_H
#include "cupti.h"
#include "../exporters/chrome_trace.h"
#include "../exporters/exposure.h"
#include <stdint.h>

typedef struct cl_gj cl_gj;
/* Called once per reported collective with its exposed time and pieces (valid during the
 * call only). `tag` is what cl_gj_expose was given. */
typedef void (*cl_gj_exposed_fn)(void *arg, uint64_t tag, uint64_t exposed_ns,
                                 const cl_expo_iv *pieces, size_t npieces, int incomplete);

cl_gj *cl_gj_new(cl_ct *ct, cl_gj_exposed_fn fn, void *arg);
void cl_gj_free(cl_gj *g);
/* A KernelLaunch event ended: [start, stop] on OS thread `tid`, in launch group `group`
 * (the GroupApi id) for communicator `comm` (serial). */
void cl_gj_kernel_launch(cl_gj *g, int tid, uint64_t start, uint64_t stop, uint64_t group, uint32_t comm);
/* One CUPTI record. */
void cl_gj_activity(cl_gj *g, const cl_gpu_activity *a);
/* The NCCL kernel span of (group, comm), if its kernel record has arrived: 1 and *s, *e. */
int cl_gj_span(cl_gj *g, uint64_t group, uint32_t comm, uint64_t *s, uint64_t *e, uint32_t *dev);
/* Queues a collective's GPU span for exposure; `fn` reports it once compute is known. */
void cl_gj_expose(cl_gj *g, uint64_t tag, uint32_t device, uint64_t comm_hash, uint64_t s, uint64_t e);
/* Moves the exposure watermark to `now - lag` (everything when final) and resolves held
 * kernel records. */
void cl_gj_advance(cl_gj *g, uint64_t now, int final);
/* CUPTI records from `now` on: collectives from before it do not wait for a kernel record. */
void cl_gj_start(cl_gj *g, uint64_t now);
int cl_gj_covered(const cl_gj *g, uint64_t t);
uint64_t cl_gj_covered_ns(const cl_gj *g, uint64_t now);
/* NVTX steps seen (ranges named "step..."): count, sums, and the most exposed one. */
void cl_gj_steps(cl_gj *g, uint64_t *n, uint64_t *exposed_sum, uint64_t *comm_sum, uint64_t *worst_id,
                 uint64_t *worst_exposed);
/* Totals for the summary and the trace tail. */
void cl_gj_totals(cl_gj *g, cl_expo_totals *t, uint64_t *nccl_kernels, uint64_t *compute_kernels,
                  uint64_t *by_name, uint64_t *launches_matched, uint64_t *launches_other);
#endif
