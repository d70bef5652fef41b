/* rc_stream.h: the replayed streams of the CPU replay benchmark (bench/replay_cost.c). */
#ifndef COMMLENS_BENCH_RC_STREAM_H
#define COMMLENS_BENCH_RC_STREAM_H

/* The stream: a recording filtered to `mask`, its body repeated `copies` times (collective
 * sequence numbers and times moved on each time), every communicator on GPU 0, no finalize
 * (the writer finishes at exit, as in a job that never destroys its communicators). */
typedef struct { long colls, p2ps, launches, events, calls; } stream_counts;

/* Writes the stream of recording src to dst (gzip); counts what it holds into *c. 0, or -1 on
 * failure. */
int make_stream(const char *src, const char *dst, int copies, int mask, int abi, stream_counts *c);
#endif
