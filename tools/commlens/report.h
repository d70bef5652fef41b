/* report.h: `commlens report` (analysis + text/JSON output) and `commlens merge`. */
#ifndef COMMLENS_CLI_REPORT_H
#define COMMLENS_CLI_REPORT_H
#include "load.h"
#include <stdio.h>

/* Writes the report for an aligned job (instances built). Returns 0 on success. */
int cl_report(cl_job *job, int json, int top, FILE *out);

enum { CL_MERGE_JSON = 0, CL_MERGE_PFTRACE = 1 };
typedef struct {
  const char *out;                 /* output path; .gz -> gzip */
  int format;                      /* CL_MERGE_JSON (Chrome trace) or CL_MERGE_PFTRACE (Perfetto protobuf) */
  unsigned char *ranks;            /* selected ranks bitmap or NULL (all) */
  int has_comm; uint64_t comm;     /* --comm */
  int has_window; double w_start_ms, w_end_ms;   /* --window, relative to the first event */
  int has_steps; long step_a, step_b;            /* --steps */
  int threads;
} cl_merge_opts;
/* Writes the merged Perfetto trace. Returns 0 when a trace was written. */
int cl_merge(cl_job *job, const cl_merge_opts *o);
/* nccl-tests bus-bandwidth factor for func over n ranks. */
double cl_busbw_factor(const char *func, int n);
#endif
