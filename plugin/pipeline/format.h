/* format.h: the format thread: staged records -> the assembler -> Chrome-trace JSON, CUPTI's
 * records -> the GPU join, and a flush of the trace file at least every COMMLENS_FLUSH_MS.
 * It runs at the lowest priority: a backlog only grows staging, it never stalls NCCL. */
#ifndef COMMLENS_FORMAT_H
#define COMMLENS_FORMAT_H
#include "plugin/gpu/gpu_join.h"
#include "plugin/pipeline/assemble.h"
#include "plugin/pipeline/staging.h"

typedef struct {
  cl_stage *stage;
  cl_asm *asm_;
  cl_parts *parts;                  /* each GPU's trace body (plugin/output/participants.h) */
  cl_gj *gj;                        /* NULL without CUPTI */
  void (*flush)(int final);         /* writes the body and the stats tail (writer.c) */
  int cupti_rec;                    /* the format thread's: the join knows CUPTI records now */
} cl_format_deps;

/* Starts the thread with borrowed `d` (kept until stop). 0, or -1 if it could not start. */
int cl_format_start(cl_format_deps *d);
/* Asks the thread to end (call after the drain thread stopped); waits up to `timeout_ms`. 0 if it
 * ended (then the caller owns the backlog: cl_format_backlog), -1 if it was left running
 * detached (it keeps the run's state). */
int cl_format_stop(int timeout_ms);
/* Formats the whole backlog, takes CUPTI's last records, finishes every collective and flushes,
 * on the calling thread (the one that stopped the format thread, at the job's priority). */
void cl_format_backlog(cl_format_deps *d);
/* The end of the run, on the caller's thread once no format thread runs: the last CUPTI
 * records, every collective finished and every exposure reported. */
void cl_format_final(cl_format_deps *d);
#endif
