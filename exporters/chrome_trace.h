/* chrome_trace.h: formats trace events for one rank (pid) into a body buffer: slices (X, and
 * async b/e), flows, counters and the metadata naming processes and tracks. Thread tracks come
 * in families (e.g. "comm 1a2b: GPU"); a family spreads slices that would partially overlap
 * over numbered lanes, so no thread track holds overlapping slices. Async tracks hold overlaps
 * themselves. Writer thread only. */
#ifndef COMMLENS_CHROME_TRACE_H
#define COMMLENS_CHROME_TRACE_H
#include "exporters/strbuf.h"
#include <stdint.h>

typedef struct cl_ct cl_ct;

cl_ct *ct_new(int pid, int64_t epoch_offset_ns);
void ct_free(cl_ct *ct);
cl_sb *ct_body(cl_ct *ct);                  /* events since the last take */
uint64_t ct_events(const cl_ct *ct);        /* events formatted so far */
void ct_process_meta(cl_ct *ct, const char *name, int sort_index);

/* A lane (tid) of family `key` free for [start, end]: the first lane whose slices all end by
 * `start`, so slices placed through it never overlap partially; names new lanes
 * "<name> lane k". `sort` orders families in the viewer. */
uint32_t ct_lane(cl_ct *ct, uint64_t key, const char *name, int sort, uint64_t start, uint64_t end);
/* As ct_lane, bounded: at most `max_lanes` lanes (0: any number), and a family not made yet is
 * made only when `may_make`. 0 when the slice gets no lane there (the caller places it on
 * another family). ct_lane_made: whether family `key` has its thread track. */
uint32_t ct_lane_bounded(cl_ct *ct, uint64_t key, const char *name, int sort, uint64_t start, uint64_t end,
                         uint32_t max_lanes, int may_make);
int ct_lane_made(cl_ct *ct, uint64_t key);
/* Top-level tracks of this rank so far: thread tracks (lanes included) and async track names. */
uint32_t ct_track_count(const cl_ct *ct);

/* Opens a complete slice; the caller appends args with sb_key/sb_* on ct_body() using the
 * returned `first` flag, then calls ct_slice_end. Times are monotonic ns. A slice never runs
 * backwards: an end before its start (a `dur` that wrapped below zero) is drawn as an instant,
 * and ct_lane places it so. Slices drawn on a tid without ct_lane must nest in one placed by it. */
int ct_slice_begin(cl_ct *ct, uint32_t tid, const char *name, const char *cat, uint64_t start,
                   uint64_t dur);
void ct_slice_end(cl_ct *ct);
/* Async slices (Chrome JSON "b"/"e", process-scoped ids): what overlaps on one track without
 * lanes. Perfetto keys an async slice's track by (pid, cat, id) and names it after its first
 * slice; its UI shows a process's async tracks of one name as one track, stacking overlaps.
 * So every slice of a track carries the track's name (a child nested under a slice shares its
 * id and cat and may have its own name). ct_async_track returns that name: `name` for a new
 * key while the rank has fewer than `budget` top-level tracks (thread tracks and async
 * names), else `fold_name`, the track `fold_key` that keys past the budget share (kept for
 * the key from then on; counted once). The string is owned by ct, valid until its next call. */
const char *ct_async_track(cl_ct *ct, uint64_t key, const char *name, uint64_t fold_key, const char *fold_name,
                           uint32_t budget);
uint64_t ct_async_id(cl_ct *ct);            /* a fresh id (never 0) */
/* Opens the "b" of slice `id` on track `name`; the caller appends args as for ct_slice_begin,
 * then ct_slice_end, then (after any children) ct_async_end with the same id and cat. The "b"
 * also carries "dur" (its "e" minus its "b", what our own readers use); the "e" no name: it
 * closes the innermost slice open on its track (Perfetto matches a name only when given). */
int ct_async_begin(cl_ct *ct, uint64_t id, const char *name, const char *cat, uint64_t start, uint64_t dur);
void ct_async_end(cl_ct *ct, uint64_t id, const char *cat, uint64_t end);
void ct_flow(cl_ct *ct, uint64_t id, uint32_t from_tid, uint64_t from_ts, uint32_t to_tid,
             uint64_t to_ts);
void ct_counter(cl_ct *ct, const char *name, uint64_t ts, const char *series, int64_t value);
#endif
