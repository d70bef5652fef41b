/* flight_watch.h: what a rank can tell on its own about its collectives while they run, for
 * the flight recorder's triggers: which collectives it started and has not finished (a hang),
 * and how long each finished one ran on its GPU (lateness: a long run is time spent waiting
 * for a late peer). Fed the same records as the assembler; format thread only.
 * "Finished" on this rank: the enqueue stopped and every KernelCh and ProxyOp child that
 * started has stopped; with KernelCh events on (ABI v4+) also one KernelCh stop per channel.
 * A finished collective finishes every earlier one of its communicator (one stream, in order).
 * A collective with no child and no KernelCh expected gives no completion signal: it is never
 * called hung. */
#ifndef COMMLENS_FLIGHT_WATCH_H
#define COMMLENS_FLIGHT_WATCH_H
#include "commlens/event.h"
#include "exporters/strbuf.h"
#include <stdint.h>

#define CL_WATCH_MAX_CH 64

typedef struct cl_watch cl_watch;

/* A collective started on this rank and not finished. */
typedef struct {
  uint64_t id, seq, start;          /* start: the enqueue's start (monotonic ns) */
  uint32_t comm;                    /* communicator serial */
  const char *func;                 /* NCCL's static string */
  int nchannels, stopped;           /* stopped: the enqueue returned */
  uint64_t ch_started, ch_done;     /* KernelCh channels (bit per channel) */
  uint64_t proxy_open_ch;           /* channels with a ProxyOp still open */
  uint32_t kids_open, kids_seen;
  int kch_expected;                 /* KernelCh stops that finish it (0: none expected) */
} cl_watch_coll;

/* A finished collective that ran at least the lateness threshold on this GPU. */
typedef struct { uint32_t comm; uint64_t seq, dur_ns; const char *func; int timer; } cl_watch_late;

/* kch_expected: KernelCh events are asked for and stop (ABI v4+); late_ns: the lateness
 * threshold (0: off). NULL when out of memory. */
cl_watch *cl_watch_new(int kch_expected, uint64_t late_ns);
void cl_watch_free(cl_watch *w);
void cl_watch_feed(cl_watch *w, const cl_rec *r);
/* The oldest collective not finished `hang_ns` after its start (at `now`) that can be judged
 * (it has children, or KernelCh is expected): 1 and *out, else 0. */
int cl_watch_hung(cl_watch *w, uint64_t now, uint64_t hang_ns, cl_watch_coll *out);
/* The first late collective since the last call, once per episode (an episode ends at a
 * collective under the threshold): 1 and *out, else 0. */
int cl_watch_take_late(cl_watch *w, cl_watch_late *out);
/* Every unfinished collective (judgeable or not), oldest first. */
typedef void (*cl_watch_fn)(void *arg, const cl_watch_coll *c);
void cl_watch_each(cl_watch *w, cl_watch_fn fn, void *arg);
/* Per communicator serial the watch has seen: the highest seq started and finished (-1: none). */
typedef void (*cl_watch_comm_fn)(void *arg, uint32_t comm, int64_t last_started, int64_t last_done);
void cl_watch_each_comm(cl_watch *w, cl_watch_comm_fn fn, void *arg);
/* Collectives or children the watch could not follow (its tables were full). */
uint64_t cl_watch_untracked(const cl_watch *w);
#endif
