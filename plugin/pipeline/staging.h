/* staging.h: binary records between the rings and the formatter. The writer thread copies
 * ring records here at memory speed, so rings never overflow while JSON formatting catches
 * up; past a memory budget, whole chunks go to a spill file and come back in order. FIFO by
 * construction: once a chunk has been spilled, later chunks are spilled too until the file is
 * read empty, encoded compactly (spill_codec.h). Memory is bounded by the budget; a spill that
 * cannot be written drops (counted). */
#ifndef COMMLENS_STAGING_H
#define COMMLENS_STAGING_H
#include "commlens/event.h"
#include "plugin/capture/ring.h"
#include <stddef.h>
#include <stdint.h>

typedef struct cl_stage cl_stage;
/* mem_budget: bytes kept in memory; spill_dir: the directory the overflow file is made in,
 * nameless (O_TMPFILE, else unlinked right after an exclusive create: nothing planted is ever
 * opened, nothing is left after a crash); "" = drop instead. */
cl_stage *cl_stage_new(uint64_t mem_budget, const char *spill_dir);
void cl_stage_free(cl_stage *s);            /* closes (and so frees) the spill file */
/* Copies whole records (n slots, starting at a record header). Returns slots dropped. */
size_t cl_stage_append(cl_stage *s, const cl_rec *recs, size_t nslots);
/* Consumer: hands up to `max` of the oldest records to `fn` one at a time, in order, and
 * consumes them. Returns how many were handed over (0: staging is empty). */
typedef void (*cl_stage_sink)(void *arg, const cl_rec *rec);
size_t cl_stage_take(cl_stage *s, size_t max, cl_stage_sink fn, void *arg);
/* Slots ever handed to append (*in) and ever taken out or lost (*out); the difference is what
 * staging still holds: in memory, in the file, or in the drain's hands while it writes a chunk
 * (then take finds nothing, yet those records are still on their way). Any thread. */
void cl_stage_counts(const cl_stage *s, uint64_t *in, uint64_t *out);
/* in == out: nothing staged, nor on its way (NULL: empty). Any thread. */
int cl_stage_empty(const cl_stage *s);
/* The records committed to the rings before a moment, to tell when all of them have been read:
 * each ring's head then, and staging's count of slots handed in once the rings' tails were past
 * those heads (read after the tails, it includes every copy made before them). */
typedef struct { cl_rings_mark rings; uint64_t stage_target; int target_set; } cl_read_mark;
void cl_read_mark_now(cl_read_mark *m);
/* Slots of the mark's records not yet taken out of staging `st` (NULL: no staging): still in a
 * ring (*ring_slots), or in staging (*staged_slots: memory, spill file, or a chunk the drain is
 * writing). Both 0: every record committed before the mark has been handed to staging's
 * consumer. Counting, not "staging looked empty": a chunk in the drain's hands while it is
 * written to the spill file is in neither the queue nor the fill buffer. */
void cl_read_mark_unread(cl_read_mark *m, const cl_stage *st, uint64_t *ring_slots, uint64_t *staged_slots);
uint64_t cl_stage_spilled(const cl_stage *s);   /* slots that went through the file */
uint64_t cl_stage_dropped(const cl_stage *s);   /* slots lost (spill failed) */
/* The spill file's descriptor (-1: none yet) and the bytes written to it so far: for tests
 * that read or damage the file as an outsider could. */
int cl_stage_spill_fd(const cl_stage *s);
uint64_t cl_stage_spill_end(const cl_stage *s);
#endif
