/* self_stats.h: the plugin's self-measure (commlensStats), one owner (self_stats.c): what every
 * stage counted, gathered per participant, and the texts that report it. Writer threads only. */
#ifndef COMMLENS_SELF_STATS_H
#define COMMLENS_SELF_STATS_H
#include "plugin/pipeline/format.h"
#include <stdint.h>

/* What the stats tail and the summary report, gathered from every stage. */
typedef struct {
  uint64_t events, records, dropped, stale, foreign, orphans, open_now;
  uint64_t dropped_ring, dropped_no_ring, dropped_staging, dropped_children, spilled;
  uint64_t utf8_replaced;   /* invalid UTF-8 bytes written as U+FFFD (the process's) */
  uint64_t colls_done, colls_timed, implausible_gpu, calls, per_call_ns, elapsed_ns;
  uint64_t colls_gpu_lost;  /* collectives CUPTI did not time: another tool held it */
  uint64_t per_call_median_ns;     /* the median timed call (per_call_ns is their mean) */
  uint64_t cupti_rejected;         /* CUPTI spans left for NCCL's own (assemble.h) */
  uint64_t launch_events_skipped;  /* API and KernelLaunch events answered with no handle while
                                      neither the trace nor CUPTI's join needed them (gate.h) */
  uint64_t kch_untimed;            /* KernelCh not asked for: one channel a collective (gate.h
                                      cl_kch_first) */
  unsigned process_gpus;    /* participants of this process (files it writes) */
} cl_run_stats;

/* The figures of participant p of the run (its own events and collectives, the process's rest). */
void cl_stats_gather(cl_run_stats *s, const cl_format_deps *run, const cl_part *p);
/* The plugin's share of wall time in percent (calls x mean call time / elapsed), the one
 * formula the tail, the summary and the live metrics report. */
double cl_stats_overhead_pct(const cl_run_stats *s);
/* tail := "\n],\"commlensStats\":{...}}\n" for p: the figures, GPU clock offsets, CUPTI's state
 * and the exposure results (final: the run has ended). */
void cl_stats_tail(cl_sb *tail, const cl_format_deps *run, cl_part *p, int final);
/* The same commlensStats object alone (no brackets around it): the digest's stats block. */
void cl_stats_object(cl_sb *b, const cl_format_deps *run, cl_part *p, int final);
/* The summary's first line (version, ABI, events, drops, hot-path cost) and its GPU line (how
 * many collectives got GPU time, from what, and the exposure, or why none). */
void cl_stats_summary_head(const cl_run_stats *s, char *out, size_t n);
void cl_stats_gpu_line(const cl_format_deps *run, cl_part *p, const cl_run_stats *s, char *out, size_t n);
/* Room for the GPU line with every part at its longest (about 1,300 bytes; test_asm_cupti.c). */
#define CL_GPU_LINE_MAX 2048
#endif
