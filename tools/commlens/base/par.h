/* par.h: the CLI's one way to spread a pass over threads: [0, n) cut into contiguous parts, one
 * a thread, each part's results written where its indices say, so that any thread count gives
 * the result of one thread. Nothing here knows what the pass computes. */
#ifndef COMMLENS_CLI_PAR_H
#define COMMLENS_CLI_PAR_H
#include <stddef.h>

#define CL_PAR_MAX 64   /* threads at most (more are taken as this many) */

/* Calls fn(lo, hi, part, arg) over [0, n) cut into `threads` contiguous parts (part 0 covers the
 * lowest indices; fewer parts when n is small), part 0 on the calling thread, the others on
 * threads of their own; returns the number of parts once all have returned (0 when n is 0).
 * Where a thread cannot be started its part runs on the caller. fn must write nothing another
 * part writes: a sum or a minimum goes to a per-part slot that the caller reduces in part order. */
int cl_par_parts(size_t n, int threads, void (*fn)(size_t lo, size_t hi, int part, void *arg), void *arg);

/* The thread count for `requested` (0: the CPUs this process may run on), within 1..CL_PAR_MAX. */
int cl_par_threads(int requested);
#endif
