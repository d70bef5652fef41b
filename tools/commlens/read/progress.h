/* progress.h: one progress line on stderr for the CLI's long passes (reading the traces,
 * writing the merged trace): files done of all, events per second, time left. Shown only
 * when stderr is a terminal; otherwise nothing is printed and no thread is started. */
#ifndef COMMLENS_CLI_PROGRESS_H
#define COMMLENS_CLI_PROGRESS_H
#include <stdint.h>

/* Starts a pass over `nfiles` files holding about `total_bytes` bytes of event text, named
 * by `verb` ("reading"). One pass at a time; the first frame is drawn at once. */
void cl_progress_begin(const char *verb, int nfiles, double total_bytes);
/* Erases the line (and stops its thread). Nothing happens without a pass. */
void cl_progress_end(void);
/* Counts one file as done (any thread). */
void cl_progress_file_done(void);

/* A reader thread's count of events not yet reported: cheap to bump per event, flushed into
 * the shared counters every CL_PROGRESS_BATCH events and at the end of each file. */
typedef struct { int64_t events, bytes; } cl_progress_batch;
#define CL_PROGRESS_BATCH 4096
void cl_progress_flush(cl_progress_batch *b);
static inline void cl_progress_count(cl_progress_batch *b, int64_t bytes) {
  b->bytes += bytes;
  if (++b->events == CL_PROGRESS_BATCH) cl_progress_flush(b);
}

/* About how many bytes of event text the trace file at `path` holds: its size, or for a
 * gzip file the uncompressed size its trailer states (size x 8 when that cannot be right). */
double cl_progress_estimate(const char *path);
#endif
