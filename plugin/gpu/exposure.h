/* exposure.h: the exposed-communication engine. Pure interval logic, no CUPTI, no I/O.
 *
 * Exposed communication of a collective on a device = the part of its GPU span not covered by
 * the union of compute intervals (non-NCCL kernels) on the same device. Compute intervals
 * arrive late and out of order (CUPTI buffers come every ~100 ms), so spans are held until
 * the caller's watermark (a time below which no more compute intervals will arrive) passes
 * their end, then reported once each through a callback. Memory is bounded: compute history
 * below the watermark minus `retain_ns` is dropped, and the number of pending spans and
 * stored intervals is capped (overflow counted).
 *
 * What counts as compute is the caller's choice; commlens feeds non-NCCL kernels only
 * (memcpy/memset stay out by default: a copy engine transfer does not hide communication
 * the way an SM kernel does, and NCCL's own copies would count against themselves).
 *
 * The aggregator (cl_expo_agg) turns the per-span results into totals: communication time is
 * the union of comm spans, exposed time the union of exposed pieces (overlapping collectives
 * are not counted twice), overlap = 1 - exposed/comm; per communicator, per time bucket and
 * per caller-supplied step range.
 *
 * Not thread-safe: one thread (the writer) owns an engine and its aggregators. */
#ifndef COMMLENS_EXPOSURE_H
#define COMMLENS_EXPOSURE_H
#include "plugin/gpu/ivset.h"
#include <stddef.h>
#include <stdint.h>


typedef struct {
  uint64_t start_ns, end_ns;  /* the collective's GPU span on this device */
  uint64_t tag;               /* caller's key, handed back untouched */
  uint64_t comm;              /* communicator hash, for per-communicator totals */
  uint32_t device, stream;
  uint8_t order_only;         /* asks only for its place in end-time order among the measured
                                 spans: reported at once whenever none of those is pending */
} cl_expo_span;

typedef struct {
  cl_expo_span span;
  uint64_t exposed_ns;        /* |span - union(compute)| */
  const cl_expo_iv *pieces;   /* exposed sub-intervals, sorted; valid during the callback only */
  size_t npieces;
  int incomplete;             /* compute history under the span was already dropped (late span) */
} cl_expo_result;

typedef void (*cl_expo_report_fn)(void *arg, const cl_expo_result *r);

typedef struct {
  size_t max_pending;         /* spans waiting for the watermark (default 65536) */
  size_t max_intervals;       /* merged compute intervals kept per device (default 262144) */
  uint64_t retain_ns;         /* compute history kept below the watermark (default 2 s) */
} cl_expo_limits;

typedef struct {
  uint64_t spans_in, spans_reported, spans_overflow, spans_late;
  uint64_t compute_in, compute_late, compute_dropped;  /* late: under an already reported
                                                          watermark; dropped: merged intervals
                                                          the cap forgot, and ones refused */
} cl_expo_stats;

typedef struct cl_expo cl_expo;

/* Creates an engine (NULL limits = defaults). `fn` is called from cl_expo_advance/finish.
 * Returns NULL on allocation failure. The caller frees with cl_expo_free. */
cl_expo *cl_expo_new(const cl_expo_limits *limits, cl_expo_report_fn fn, void *arg);
void cl_expo_free(cl_expo *e);
/* Adds one compute interval on `device`. Empty or inverted intervals are ignored.
 * Returns 0, or -1 if it was dropped (counted). */
int cl_expo_add_compute(cl_expo *e, uint32_t device, uint64_t start_ns, uint64_t end_ns);
/* Queues one communication span (copied). Returns 0, or -1 if the pending cap was hit. */
int cl_expo_add_span(cl_expo *e, const cl_expo_span *s);
/* Promises that every compute interval ending before `watermark` has been added: reports
 * (in end-time order) each pending span with end <= watermark, then, once no span but
 * order-only ones is pending, those too (nothing measured is left for them to follow); then
 * drops old history. A watermark lower than a previous one is ignored. */
void cl_expo_advance(cl_expo *e, uint64_t watermark);
/* The time below which every span's result has been reported: min(watermark, start of the
 * earliest pending span). Advance the aggregators to this, not to the raw watermark. */
uint64_t cl_expo_reported_upto(const cl_expo *e);
/* Reports every pending span, whatever its end (process exit, after the last drain). */
void cl_expo_finish(cl_expo *e);
/* Spans queued and not reported yet. */
size_t cl_expo_pending(const cl_expo *e);
void cl_expo_get_stats(const cl_expo *e, cl_expo_stats *out);

/* ---- aggregation ---- */
typedef enum { CL_EXPO_WIN_BUCKET = 1, CL_EXPO_WIN_STEP = 2 } cl_expo_win_kind;

typedef struct {
  cl_expo_win_kind kind;
  uint64_t id;                /* bucket: index (start / bucket_ns); step: the caller's id */
  uint64_t start_ns, end_ns;
  uint64_t comm_ns, exposed_ns;   /* unions, clipped to the window */
  int late;                   /* data for this window arrived after it was closed */
} cl_expo_window;

typedef void (*cl_expo_window_fn)(void *arg, const cl_expo_window *w);

typedef struct {
  uint64_t comm_ns, exposed_ns;   /* unions over the whole run */
  uint64_t spans;
} cl_expo_totals;

#define CL_EXPO_MAX_COMMS 64        /* communicators with totals of their own; the rest share one */
typedef struct {
  uint64_t comm;              /* communicator hash (0 = the "other" slot once the cap is hit) */
  cl_expo_totals t;
} cl_expo_comm_totals;

typedef struct cl_expo_agg cl_expo_agg;

/* One aggregator per rank (device). bucket_ns = 0 disables buckets. `fn` gets each closed
 * bucket that saw communication, and each step, from cl_expo_agg_advance/finish. */
cl_expo_agg *cl_expo_agg_new(uint64_t bucket_ns, uint64_t retain_ns, cl_expo_window_fn fn,
                             void *arg);
void cl_expo_agg_free(cl_expo_agg *a);
/* Adds one result from the engine (call it from the engine's report callback). */
void cl_expo_agg_add(cl_expo_agg *a, const cl_expo_result *r);
/* Declares a step range [start, end) (e.g. an NVTX range mapped onto GPU time). Steps must be
 * declared before the watermark passes their end minus retain_ns to be exact. */
int cl_expo_add_step(cl_expo_agg *a, uint64_t start_ns, uint64_t end_ns, uint64_t id);
/* Closes buckets and steps ending at or before `watermark` (cl_expo_reported_upto). */
void cl_expo_agg_advance(cl_expo_agg *a, uint64_t watermark);
/* Closes everything (process exit). */
void cl_expo_agg_finish(cl_expo_agg *a);
void cl_expo_agg_totals(const cl_expo_agg *a, cl_expo_totals *out);
/* Copies up to `max` per-communicator totals to `out`; returns how many exist. */
size_t cl_expo_agg_comms(const cl_expo_agg *a, cl_expo_comm_totals *out, size_t max);
/* overlap = 1 - exposed/comm in parts per million (1000000 = fully hidden; 0 if comm is 0),
 * an integer so that printing never goes through a double. */
uint32_t cl_expo_overlap_ppm(const cl_expo_totals *t);
#endif
