/* gpu_join.h: joins NCCL's events with CUPTI's GPU activity, on the writer thread. It gives
 * each launch group (GroupApi, communicator) its kernel's GPU span, draws GPU kernel tracks, and
 * runs the exposure engine over NCCL spans against compute kernels. Which kernel is a launch's:
 *
 * - By stream and launch order (CUPTI's kernel records only: COMMLENS_CUPTI=kernels, and the
 *   default, sampled, inside its windows). A KernelLaunch event carries CUPTI's id of the
 *   launch's stream; kernels on one stream run in launch order, so the k-th NCCL kernel of a
 *   stream (in correlation-id order: CUPTI numbers API calls in call order) is its k-th
 *   uncaptured NCCL launch (in start order). Joins are made half a second after a kernel ends; a
 *   record later than that (CUPTI hands a launching thread's buffer over only when all its
 *   records are complete) redoes the joins after it. NCCL's kernels are told from compute
 *   kernels by name here. A kernel that starts before the oldest waiting launch of its stream,
 *   or that no launch is left for, is NCCL's without a known launch: it waits in the pool below
 *   like a graph replay (a collective may claim it by overlap), else counts as communication on
 *   its own. With launch records on, the join by stream order runs too, as a check
 *   (cl_gj_join_check).
 * - By correlation id (COMMLENS_CUPTI=full: the driver API launch records too): the launch API
 *   record lies inside a KernelLaunch event on the same OS thread, so NCCL's kernels are known
 *   by NCCL's own events, not by names (names serve only where NCCL gives no KernelLaunch: ABI
 *   < v5 and CUDA-graph replays).
 *
 * CUDA-graph replays: NCCL records the launch once (at capture) and the kernel runs at every
 * replay, under the graph launch's correlation id. Replayed NCCL kernels wait in a pool: a
 * replayed collective (whose Coll events NCCL fires from a host callback when the plan has
 * proxy work or KernelCh is on) claims the kernel that overlaps its own KernelCh/proxy span on
 * the same device and takes its GPU span. A replayed kernel no collective claimed (intra-node
 * replays fire no Coll events at all) still counts as communication on its own, with the
 * kernel's name for the collective. */
#ifndef COMMLENS_GPU_JOIN_H
#define COMMLENS_GPU_JOIN_H
#include "plugin/gpu/cupti.h"
#include "exporters/chrome_trace.h"
#include "plugin/gpu/exposure.h"
#include "plugin/output/participants.h"
#include <stdint.h>

typedef struct cl_gj cl_gj;
/* Called once per reported span with its exposed time and pieces (valid during the call
 * only); r->span.tag is what cl_gj_expose was given (or CL_GJ_TAG_GRAPH...). */
typedef void (*cl_gj_exposed_fn)(void *arg, const cl_expo_result *r);

/* Copy-engine collectives (NCCL 2.28+; their events from ABI v6): collective `id` was enqueued
 * at `after` on the stream whose CUPTI id plus one is `stream` (cl_cupti_stream_id) of device
 * `dev`; cl_gj_ce_enqueue returns its ticket (0: not kept), which cl_gj_ce_span takes with the
 * id. Its copies are CUPTI's memcpy records on that stream, assigned in stream order as they
 * come (gj_copy.c says how a collective's end is told apart from the next one's start).
 * cl_gj_ce_span: its GPU span, the first copy's start to the last one's end, once it is complete
 * (0 until then); with `settle` (the last time it is asked) whatever copies it has, and it
 * takes no more. The stream's waits for its peers (stream memory operations, which CUPTI does
 * not record) are not in the span. */
uint64_t cl_gj_ce_enqueue(cl_gj *g, uint64_t id, uint32_t dev, uint32_t stream, uint64_t after);
int cl_gj_ce_span(cl_gj *g, uint64_t ticket, uint64_t id, int settle, uint64_t *s, uint64_t *e);

/* Draws each GPU's kernels, launches, exposure and steps into that GPU's participant of
 * `parts` (borrowed) and keeps their totals per participant. */
cl_gj *cl_gj_new(cl_parts *parts, int by_stream);
/* Who hears about each reported span (the assembler; set once, before any span is queued). */
void cl_gj_on_exposed(cl_gj *g, cl_gj_exposed_fn fn, void *arg);
void cl_gj_free(cl_gj *g);
/* Draws every compute kernel as a slice on its stream's track (on: COMMLENS_CUPTI=full). Off,
 * the default: compute kernels count only as exposure's compute and in the totals; NCCL's
 * kernels are drawn either way. */
void cl_gj_draw_compute(cl_gj *g, int on);
/* 1 if NCCL's kernels are joined by stream and launch order, 0 by correlation id. */
int cl_gj_by_stream(const cl_gj *g);
/* A KernelLaunch event ended. */
typedef struct {
  int tid;                    /* OS thread that launched */
  uint64_t start, stop;       /* the event, host clock */
  uint64_t group;             /* launch group: the GroupApi id */
  uint32_t comm;              /* communicator serial */
  int dev;                    /* its CUDA device, -1 unknown */
  uint32_t stream_id;         /* CUPTI's stream id + 1 (0: unknown: any stream of dev) */
  int captured;               /* under CUDA-graph capture: its kernel runs at replays only */
} cl_gj_launch;
void cl_gj_kernel_launch(cl_gj *g, const cl_gj_launch *l);
/* One CUPTI record. */
void cl_gj_activity(cl_gj *g, const cl_gpu_activity *a);
/* The NCCL kernel span of (group, comm), if its kernel record has arrived: 1 and *s, *e. */
int cl_gj_span(cl_gj *g, uint64_t group, uint32_t comm, uint64_t *s, uint64_t *e, uint32_t *dev);
/* With launch records on (the join by correlation id), the join by stream order runs beside it
 * as a check: joins that agree and differ; and joins redone because a record came late. */
void cl_gj_join_check(const cl_gj *g, uint64_t *agree, uint64_t *differ, uint64_t *repaired);
/* CUDA-graph replays: 1 if replayed NCCL kernels were seen on `device` (a collective with no
 * kernel span yet may be waiting for one). */
int cl_gj_graph_seen(const cl_gj *g, uint32_t device);
/* ... on any device (cl_gj_graph_seen is 0 for every device when this is). */
int cl_gj_graph_any(const cl_gj *g);
/* The replayed NCCL kernel on `device` that best overlaps [s, e] (a collective's KernelCh or
 * proxy span): 1 and its span in *ks, *ke, and it is no longer counted on its own. */
int cl_gj_graph_claim(cl_gj *g, uint32_t device, uint64_t s, uint64_t e, uint64_t *ks, uint64_t *ke);
/* Tags of the unclaimed replayed kernels handed to the exposed callback (tag & mask): the
 * callback gets their name through cl_gj_graph_name. */
#define CL_GJ_TAG_GRAPH (1ull << 63)
/* A span queued only to keep its place in end-time order (sampled mode, outside CUPTI's windows:
 * its exposure is estimated by the caller): reported back, left out of the exposure totals. */
#define CL_GJ_TAG_ORDER_ONLY (1ull << 62)
const char *cl_gj_graph_name(uint64_t tag);
/* Queues a collective's GPU span for exposure; `fn` reports it once compute is known. */
void cl_gj_expose(cl_gj *g, uint64_t tag, uint32_t device, uint64_t comm_hash, uint64_t s, uint64_t e);
/* Nothing queued for exposure: a span queued only for its order would be reported at once. */
int cl_gj_expo_idle(const cl_gj *g);
/* Makes every join by stream order that can be made now, settled or not (the end of the run:
 * the assembler's last pass needs the spans). */
void cl_gj_join_all(cl_gj *g);
/* Moves the exposure watermark to `now - lag` (everything when final) and resolves held
 * kernel records. */
void cl_gj_advance(cl_gj *g, uint64_t now, int final);
/* CUPTI records for us from `now` on, until cl_gj_stop(t): collectives outside these
 * intervals do not wait for a kernel record. */
void cl_gj_start(cl_gj *g, uint64_t now);
void cl_gj_stop(cl_gj *g, uint64_t t);
/* The same at the end of a sampling window (COMMLENS_CUPTI=sampled): times after it are a gap
 * in the sampling, not lost to another tool. */
void cl_gj_stop_window(cl_gj *g, uint64_t t);
int cl_gj_covered(const cl_gj *g, uint64_t t);
/* 1 if [s, e] lies in one coverage interval, at least `guard` ns after its start (kernels
 * launched before the interval began were not recorded but may still run in its first part). */
int cl_gj_covered_for(const cl_gj *g, uint64_t s, uint64_t e, uint64_t guard);
/* 1 if CUPTI had recorded for us before t but did not at t: another tool took CUPTI (it holds
 * the subscriber slot or our records went to its callbacks). The one rule for "lacks GPU timing
 * because CUPTI was taken"; a run without CUPTI, or before it started, is not lost. */
int cl_gj_lost(const cl_gj *g, uint64_t t);
uint64_t cl_gj_covered_ns(const cl_gj *g, uint64_t now);
/* Whether CUPTI's records stopped reaching us while we believe we record: NCCL's KernelLaunch
 * events keep coming but their launch API records do not (another client, e.g. torch.profiler,
 * registered its own buffer callbacks, or finalized CUPTI). 1 and, in *last_ok, the end of the
 * last KernelLaunch that did get its record. */
int cl_gj_launches_lost(cl_gj *g, uint64_t now, uint64_t *last_ok);
/* Launch records can sit in a partly filled CUPTI buffer until a forced flush: check again
 * after one before believing it. */
/* A participant's NVTX steps (ranges named "step..." on any thread of the process, cut on
 * its GPU): count, sums, and the most exposed one. */
void cl_gj_steps(cl_gj *g, cl_part *p, uint64_t *n, uint64_t *exposed_sum, uint64_t *comm_sum,
                 uint64_t *worst_id, uint64_t *worst_exposed);
typedef struct {
  cl_expo_totals t;           /* communication and exposed time (unions) */
  uint64_t nccl_kernels, compute_kernels;
  uint64_t by_name;           /* NCCL kernels recognised by name (no launch record to go by) */
  uint64_t by_stream;         /* ... and joined to their launch by stream and launch order */
  uint64_t no_launch;         /* ... with no launch known (not graph replays) */
  uint64_t launches_nccl, launches_other;   /* launch API records inside / outside KernelLaunch
                                               (the process's: a launch record names no GPU) */
  uint64_t graph_kernels;     /* replayed NCCL kernels (CUDA graphs) */
  uint64_t graph_claimed;     /* ... joined to a replayed collective's events */
} cl_gj_counts;
/* A participant's totals for its summary and trace tail (its own GPU's kernels only). */
void cl_gj_totals(cl_gj *g, cl_part *p, cl_gj_counts *c);
/* A participant's per-communicator totals (cl_expo_agg_comms): up to max copied, the count
 * returned. */
size_t cl_gj_comms(cl_gj *g, cl_part *p, cl_expo_comm_totals *out, size_t max);
#endif
