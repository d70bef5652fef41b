/* spill_strings.h: what makes a spilled chunk pointer-free. Payload strings (cl_str) are
 * NCCL's static strings, pointers into this process: before a chunk goes to the spill file
 * each is replaced by its index in a bounded, append-only table of the strings seen, and after
 * a chunk is read back every record is checked (shape, type, index) before any index becomes
 * a pointer again. Nothing read from the file is ever followed as an address. One writer (the
 * drain: cl_spill_strings_out) and one reader (the formatter: cl_spill_strings_in) at once. */
#ifndef COMMLENS_SPILL_STRINGS_H
#define COMMLENS_SPILL_STRINGS_H
#include "commlens/event.h"
#include <stddef.h>

#define CL_SPILL_STRINGS_MAX 4096   /* distinct strings; NCCL has a few dozen */

typedef struct cl_spill_strings cl_spill_strings;
cl_spill_strings *cl_spill_strings_new(void);
void cl_spill_strings_free(cl_spill_strings *t);
/* Replaces every string of the whole records recs[0..n) by its index + 1 (0: NULL, and a
 * string past a full table, which then reads back as NULL). Drain thread only. */
void cl_spill_strings_out(cl_spill_strings *t, cl_rec *recs, size_t n);
/* Checks the records recs[0..n) decoded from the file and puts the strings back. 0, or -1 when
 * any record is malformed (the caller drops the chunk; recs may be partly mapped). Safe beside
 * a concurrent cl_spill_strings_out for chunks that were written before this one was queued. */
int cl_spill_strings_in(const cl_spill_strings *t, cl_rec *recs, size_t n);
#endif
