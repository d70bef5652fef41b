/* flight.h: the flight recorder (COMMLENS_FLIGHT_S): the last seconds of records kept in
 * memory (flight_ring.h) and written as a trace (flight_dump.h) when a signal asks, when a
 * collective hangs, or when one runs late (flight_watch.h). The writer sets it up and frees
 * it; the format thread feeds it and makes the dumps, so a dump never runs on NCCL's or the
 * application's threads. With COMMLENS_FLIGHT_S=0 every call returns at once. */
#ifndef COMMLENS_FLIGHT_H
#define COMMLENS_FLIGHT_H
#include "commlens/event.h"
#include "plugin/pipeline/assemble.h"
#include "plugin/pipeline/staging.h"
#include <stdint.h>

/* The writer's setup, before its threads start: the ring, the watch and the signal handler
 * (never over one the application set). Logs what it did. */
void cl_flight_setup(void);
/* Format thread: every record, in the order the assembler gets them. */
void cl_flight_feed(const cl_rec *r);
/* Format thread, every pass: dumps what is asked for. `caught_up`: every ring and staging
 * was empty this pass (a hang is only judged then: a backlog is not a hang). `stage`: the
 * staging the records pass through, followed for a signal's records (NULL: none). `clocks`:
 * the main assembler, whose GPU clocks a dump starts from (NULL: none). */
void cl_flight_tick(uint64_t now, int caught_up, const cl_stage *stage, const cl_asm *clocks);
/* Exit, after the format thread stopped: frees the memory (the handler stays: it only sets a
 * flag nothing reads any more). */
void cl_flight_free(void);
/* Fork child: the parent's ring is not the child's to dump. */
void cl_flight_after_fork_child(void);
#endif
