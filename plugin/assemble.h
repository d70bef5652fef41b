/* assemble.h: turns ring records into finished events. Pairs starts with stops (across
 * threads, out of order), keeps parents until their children finish, derives a collective's
 * completion and GPU span from its children, maps GPU timers onto the host clock, and hands
 * slices to the Chrome exporter and totals to the summary. Writer thread only. */
#ifndef COMMLENS_ASSEMBLE_H
#define COMMLENS_ASSEMBLE_H
#include "commlens/event.h"
#include "../exporters/chrome_trace.h"
#include "../exporters/summary.h"
#include "../exporters/strbuf.h"
#include "cupti.h"
#include <stdint.h>

typedef struct cl_asm cl_asm;

typedef struct {
  uint64_t records, starts, stale, deferred_dropped, foreign, orphans, open_now, writer_drops;
  uint64_t colls_done, colls_timed, implausible_gpu;
} cl_asm_stats;

/* with_gpu_join: CUPTI records will be fed (cl_asm_gpu_activity) and exposure computed. */
cl_asm *cl_asm_new(cl_ct *ct, cl_summary *sum, int with_gpu_join);
void cl_asm_free(cl_asm *a);
/* Feeds one record (header + payload slots). Records of one thread arrive in order; across
 * threads, a child may arrive before its parent (tolerated). */
void cl_asm_feed(cl_asm *a, const cl_rec *r);
/* Finishes collectives whose children are done or who waited longer than the grace time. */
void cl_asm_tick(cl_asm *a, uint64_t now, int final);
void cl_asm_get_stats(const cl_asm *a, cl_asm_stats *s);
/* Per-device GPU clock offsets as a JSON array (for the trace tail). */
void cl_asm_offsets_json(const cl_asm *a, cl_sb *b);
/* CUPTI records, and the periodic/final advance of the CUPTI join and exposure. */
void cl_asm_gpu_activity(cl_asm *a, const cl_gpu_activity *r);
void cl_asm_gpu_advance(cl_asm *a, uint64_t now, int final);
/* CUPTI records GPU activity from `now` on. */
void cl_asm_cupti_started(cl_asm *a, uint64_t now);
/* CUPTI stopped recording for us at t (suspended, or another client took its records). */
void cl_asm_cupti_stopped(cl_asm *a, uint64_t t);
/* 1 if NCCL's launches have stopped getting CUPTI launch records (cl_gj_launches_lost). */
int cl_asm_cupti_lost(cl_asm *a, uint64_t now, uint64_t *last_ok);
/* Exposure totals and the most exposed collectives, as JSON ("null" without CUPTI). */
void cl_asm_exposure_json(cl_asm *a, cl_sb *b);
#endif
