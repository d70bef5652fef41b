/* writer.h: the background writer thread. It drains the per-thread rings, pairs starts with
 * stops, derives GPU spans, and streams the per-rank trace and the summary through the
 * exporters. Called by plugin/process.c only (lifecycle), never from the hot path. */
#ifndef COMMLENS_WRITER_H
#define COMMLENS_WRITER_H
/* Starts the thread if it is not running (the first init, or an init after the last
 * finalize). Opens the output lazily. Returns 0, or -1 if no thread could start (logged). */
int cl_writer_start(void);
/* Drains everything recorded so far, writes it, flushes the file, and stops the thread
 * (the last finalize). Bounded: gives up after a few seconds rather than hang NCCL. */
void cl_writer_stop(void);
/* Process exit: stop, then the final stats, the summary, and close the file. Idempotent. */
void cl_writer_finish(void);
/* Fork child: forget the parent's thread and file without touching them. */
void cl_writer_after_fork_child(void);
#endif
