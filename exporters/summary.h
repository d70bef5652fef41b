/* summary.h: the per-rank summary: per collective type and size bucket, count, bytes, GPU
 * time, algorithm and bus bandwidth (nccl-tests factors), plus event and drop counts.
 * Fed by the assembler as collectives complete; written at process exit. */
#ifndef COMMLENS_SUMMARY_H
#define COMMLENS_SUMMARY_H
#include <stdint.h>
#include <stdio.h>

typedef struct cl_summary cl_summary;
cl_summary *cl_summary_new(void);
void cl_summary_free(cl_summary *s);
/* One collective: `bytes` is nccl-tests' size; gpu_ns = 0 when no GPU span was known. */
void cl_summary_add(cl_summary *s, const char *func, uint64_t bytes, int nranks, uint64_t gpu_ns);
/* Same, for a name whose text never changes (NCCL's, by its ABI): a row it found before is found
 * again by its address, not its text. */
void cl_summary_add_static(cl_summary *s, const char *func, uint64_t bytes, int nranks, uint64_t gpu_ns);
/* The table, one header line and one line per (collective, size bucket). */
void cl_summary_print(const cl_summary *s, FILE *f, const char *prefix);
/* JSON array of the same rows. */
void cl_summary_json(const cl_summary *s, FILE *f);
/* One row as the other exporters see it (algbw/busbw in bytes per second, 0 when untimed). */
typedef struct {
  const char *func;
  uint64_t size_min;          /* the size bucket's lower bound, bytes */
  int nranks;
  uint64_t count, timed, bytes, gpu_ns;
  double algbw_bps, busbw_bps;
} cl_summary_row;
/* Calls fn for each row (in no particular order). */
void cl_summary_each(const cl_summary *s, void (*fn)(void *arg, const cl_summary_row *r), void *arg);
#endif
