/* writer.h: the output side of one process: sets up the run, starts and stops the drain
 * (drain.c) and format (format.c) threads, and at exit writes the final tail and the summary.
 * Called by plugin/process.c only (lifecycle), never from the hot path. */
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
