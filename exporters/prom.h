/* prom.h: one rank's live metrics in the Prometheus text exposition format, for the
 * node-exporter textfile collector (COMMLENS_PROM): written whole to a temporary file in the
 * same directory, then renamed over the previous one, so a scrape never sees half a file.
 * Names follow Prometheus' conventions: a commlens_ prefix, base units (seconds, bytes),
 * _total on counters, one HELP and TYPE per family. Writer thread only. */
#ifndef COMMLENS_PROM_H
#define COMMLENS_PROM_H
#include "exporters/summary.h"
#include "exporters/strbuf.h"
#include <stdint.h>

/* What one rank (one GPU) reports besides its summary rows. */
typedef struct {
  int rank, gpu;
  const char *host, *job, *version;
  int abi;
  uint64_t events, records, dropped, calls, per_call_ns;
  double overhead_ratio;                  /* the plugin's share of wall time, 0..1 */
  uint64_t colls, colls_timed;
  int has_exposure;                       /* CUPTI: the two below are known */
  uint64_t comm_ns, exposed_ns;
} cl_prom_rank;

/* The whole exposition text into b (reset first). */
void cl_prom_format(cl_sb *b, const cl_prom_rank *r, const cl_summary *sum);
/* Formats and replaces `path` atomically (a fresh path.XXXXXX made exclusively, mode 0644,
 * then renamed over it). 0, or an errno. */
int cl_prom_write(const char *path, const cl_prom_rank *r, const cl_summary *sum);
#endif
