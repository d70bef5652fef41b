/* csv.h: `commlens merge -f csv`: one row per GPU-timed collective and p2p operation per rank
 * (traces and digests alike), on the reference rank's clock, as RFC 4180 CSV that query engines
 * (DuckDB, pandas, Spark, sqlite's .import) read. Columns: docs/cli.md. */
#ifndef COMMLENS_CLI_CSV_H
#define COMMLENS_CLI_CSV_H
#include "tools/commlens/model/load.h"

/* The header line. */
const char *cl_csv_header(void);
/* The rows of rank r whose communicator passes (has_comm: only `comm`) and whose GPU span
 * overlaps [ws, we] (aligned ns), each handed to put as text; returns how many. */
int64_t cl_csv_rank(const cl_rank *r, int has_comm, uint64_t comm, int64_t ws, int64_t we,
                    void (*put)(void *arg, const char *s, size_t n), void *arg);
#endif
