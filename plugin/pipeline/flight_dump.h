/* flight_dump.h: one flight-recorder dump: the records the flight ring holds, assembled and
 * drawn exactly as the main trace is (plugin/pipeline/asm_feed.c, plugin/output/nccl_slices.c),
 * into one new Chrome-trace file per participant (GPU) under <dir>/flight/, with the
 * collectives this rank had not finished drawn and described (commlensFlight). Format thread
 * only; it never touches the main trace's assembler or files. */
#ifndef COMMLENS_FLIGHT_DUMP_H
#define COMMLENS_FLIGHT_DUMP_H
#include "plugin/pipeline/assemble.h"
#include "plugin/pipeline/flight_ring.h"
#include "plugin/pipeline/flight_watch.h"
#include <stdint.h>

/* Why a dump was made: trigger names the file ("signal", "hang", "late"); `why` is a JSON
 * object's members (no braces, may be "") saying what crossed which line. */
typedef struct { const char *trigger; int number; const char *why; uint64_t now; } cl_dump_req;

/* Writes the dump; returns the files written (0: none, a message was logged). The first
 * file's path goes to first (n bytes). `clocks`: the main assembler, whose GPU clocks the dump
 * starts from (read only; NULL: the dump calibrates its own). */
int cl_flight_dump(const cl_fring *fr, cl_watch *w, const cl_dump_req *req, const cl_asm *clocks, char *first, size_t n);
#endif
