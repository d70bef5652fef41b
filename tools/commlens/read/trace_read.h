/* trace_read.h: streaming reader for commlens per-rank traces (trace-format.md).
 * Reads plain or gzip JSON through a bounded buffer (gz_read.h), hands each traceEvents element
 * to a callback as a parsed view (cl_ev, json_scan.h) plus its raw text, and parses the small
 * header and stats objects with json-c. Never holds more than one buffer of the file in memory. */
#ifndef COMMLENS_CLI_TRACE_READ_H
#define COMMLENS_CLI_TRACE_READ_H
#include "tools/commlens/read/gz_read.h"     /* cl_input_open, which the digest reader shares */
#include "tools/commlens/read/json_scan.h"   /* cl_ev, the event the callback gets */
#include "tools/commlens/read/trace_info.h"
#include <stdint.h>
#include <stddef.h>

typedef void (*cl_ev_fn)(const cl_ev *ev, void *arg);
/* Reads `path` (plain or .gz), calling fn for every complete event. Returns 0 if the file
 * looked like a commlens trace (header seen), -1 otherwise; info->msg says why. With
 * header_only the scan stops at the first event. Only a regular file is read (a FIFO or a
 * symbolic link is refused, never waited on). Damage inside the event array (a corrupt
 * gzip member, invalid JSON) costs the events it touches: everything before it is kept and
 * reading resumes at the next gzip member or event line (info->msg says where and what). */
int cl_trace_scan(const char *path, cl_ev_fn fn, void *arg, cl_info *info, int header_only);
void cl_info_free(cl_info *info);

#endif
