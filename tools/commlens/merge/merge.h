/* merge.h: `commlens merge` (merge/merge.c): every rank on one clock in one Perfetto trace,
 * as Chrome JSON or Perfetto protobuf (merge/pftrace.c). */
#ifndef COMMLENS_CLI_MERGE_H
#define COMMLENS_CLI_MERGE_H
#include "tools/commlens/model/load.h"

enum { CL_MERGE_JSON = 0, CL_MERGE_PFTRACE = 1, CL_MERGE_CSV = 2 };
typedef struct {
  const char *out;                 /* output path; .gz -> gzip */
  int format;                      /* CL_MERGE_JSON (Chrome trace), CL_MERGE_PFTRACE (Perfetto protobuf), CL_MERGE_CSV (a table: csv.h) */
  unsigned char *ranks;            /* selected ranks bitmap or NULL (all) */
  int has_comm; uint64_t comm;     /* --comm */
  int has_window; double w_start_ms, w_end_ms;   /* --window, relative to the first event */
  int has_steps; long step_a, step_b;            /* --steps */
  int threads;
} cl_merge_opts;
/* Writes the merged Perfetto trace. Returns 0 when a trace was written. */
int cl_merge(cl_job *job, const cl_merge_opts *o);
#endif
