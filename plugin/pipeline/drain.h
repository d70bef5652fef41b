/* drain.h: the rings' readers. The format thread reads them itself when staging is empty
 * (cl_drain_direct), a few hundred records at a time into its own small buffer, with no second
 * thread and no staging between (the hop through staging was about 0.25 us a collective on an
 * H200 host's CPU). The drain thread is the safety net: it copies ring records into staging when
 * the format thread has not read them for 100 ms (a long write, a CUPTI flush) or a ring is a
 * sixteenth full, so a producer's ring is emptied whatever formatting and disk writes do. */
#ifndef COMMLENS_DRAIN_H
#define COMMLENS_DRAIN_H
#include "plugin/capture/ring.h"
#include "plugin/pipeline/staging.h"

/* Starts the thread over `st` (borrowed until stop). 0, or -1 if it could not start. */
int cl_drain_start(cl_stage *st);
/* Stops it after one last pass (everything committed before the call). Waits up to
 * `timeout_ms`: 0 if it ended, -1 if it was left running detached (staging is still its). */
int cl_drain_stop(int timeout_ms);
/* The format thread alone (the thread that stops it takes staging only): copies whole records,
 * up to `cap` slots, from the rings into `buf` when staging `st` is empty (staged records go
 * first, to keep each thread's order) and the drain thread is not reading them. The copy is
 * the only work done holding the rings: a nice-19 thread preempted there would keep the drain
 * out. Returns the slots copied (0: none, or not now). */
size_t cl_drain_direct(cl_stage *st, cl_rec *buf, size_t cap);
/* In a fork child (the writer's fork handler): the parent's readers are gone; so is their lock. */
void cl_drain_after_fork_child(void);
#endif
