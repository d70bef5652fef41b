/* assemble.h: turns ring records into finished events. Pairs starts with stops (across
 * threads, out of order), keeps parents until their children finish, derives a collective's
 * completion and GPU span from its children, maps GPU timers onto the host clock, and hands
 * slices to the Chrome exporter and totals to the summary. Writer thread only. */
#ifndef COMMLENS_ASSEMBLE_H
#define COMMLENS_ASSEMBLE_H
#include "commlens/event.h"
#include "exporters/chrome_trace.h"
#include "exporters/summary.h"
#include "exporters/strbuf.h"
#include "plugin/gpu/gpu_join.h"
#include <stdint.h>

typedef struct cl_asm cl_asm;

typedef struct {
  uint64_t records, starts, stale, deferred_dropped, foreign, orphans, open_now, writer_drops;
  uint64_t colls_done, colls_timed, implausible_gpu;
} cl_asm_stats;

/* gj: the CUPTI join (borrowed; NULL without CUPTI): collectives take their kernel's span
 * from it and wait for their exposure. */
cl_asm *cl_asm_new(cl_ct *ct, cl_summary *sum, cl_gj *gj);
void cl_asm_free(cl_asm *a);
/* Feeds one record (header + payload slots). Records of one thread arrive in order; across
 * threads, a child may arrive before its parent (tolerated). */
void cl_asm_feed(cl_asm *a, const cl_rec *r);
/* Finishes collectives whose children are done or who waited longer than the grace time. */
void cl_asm_tick(cl_asm *a, uint64_t now, int final);
void cl_asm_get_stats(const cl_asm *a, cl_asm_stats *s);
/* Per-device GPU clock offsets as a JSON array (for the trace tail). */
void cl_asm_offsets_json(const cl_asm *a, cl_sb *b);
/* Exposure totals and the most exposed collectives, as JSON ("null" without CUPTI). */
void cl_asm_exposure_json(cl_asm *a, cl_sb *b);
#endif
