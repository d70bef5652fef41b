/* attempts.h: the attempts of one job (model/attempts.c): which process wrote each file (its
 * header's host, boot, pid and start), and processes in order of start cut into attempts where
 * a rank comes back (a restarted job's process of a rank that already has one). */
#ifndef COMMLENS_CLI_ATTEMPTS_H
#define COMMLENS_CLI_ATTEMPTS_H
#include "tools/commlens/read/trace_read.h"
#include <stddef.h>
#include <stdint.h>

/* One attempt: when its first process started (ns, INT64_MAX not known), its processes, files,
 * flight dumps and hang dumps among them. */
typedef struct { int64_t start_ns; int nproc, nfiles, ndumps, nhang; } cl_attempt;

/* For n files of one job (headers in info[i], dumps' commlensFlight too; rank[i] the rank each
 * is of): the attempt of each into attempt[i] (0 the oldest; -1 when its process's start is not
 * known: no start in the header, no dump), the attempts' summaries into *out (malloc'd, the
 * caller frees). Returns how many attempts there are. */
int cl_attempts_of(const cl_info *const *info, const int *rank, size_t n, int *attempt, cl_attempt **out);
#endif
