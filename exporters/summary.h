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
/* The table, one header line and one line per (collective, size bucket). */
void cl_summary_print(const cl_summary *s, FILE *f, const char *prefix);
/* JSON array of the same rows. */
void cl_summary_json(const cl_summary *s, FILE *f);
#endif
