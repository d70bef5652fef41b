/* drain.h: the drain thread. It only copies ring records into staging, so a producer's ring
 * is emptied within about a hundred microseconds whatever formatting and disk writes do. */
#ifndef COMMLENS_DRAIN_H
#define COMMLENS_DRAIN_H
#include "plugin/pipeline/staging.h"

/* Starts the thread over `st` (borrowed until stop). 0, or -1 if it could not start. */
int cl_drain_start(cl_stage *st);
/* Stops it after one last pass (everything committed before the call). Waits up to
 * `timeout_ms`: 0 if it ended, -1 if it was left running detached (staging is still its). */
int cl_drain_stop(int timeout_ms);
#endif
