/* pftrace.h: Perfetto's native protobuf trace for `commlens merge --format pftrace`
 * (schema: perfetto_min.proto). Each rank is one packet sequence with its own interning
 * (event names, categories, argument names, short string values), one process track and a
 * thread track per Chrome-trace tid, so ranks are encoded in parallel and concatenated.
 * Encodes events one at a time: nothing is kept but the interning tables and track ids. */
#ifndef COMMLENS_CLI_PFTRACE_H
#define COMMLENS_CLI_PFTRACE_H
#include "tools/commlens/read/trace_read.h"
#include <stddef.h>
#include <stdint.h>

struct json_object;
typedef struct cl_pft_seq cl_pft_seq;

/* Starts rank `rank`'s sequence: its process track (pid = rank, named `pname`) and, at `ts`,
 * an instant "commlens_clock" whose arguments are the flat object `meta` (not taken). */
cl_pft_seq *cl_pft_seq_new(int rank, const char *pname, int64_t ts, struct json_object *meta);
/* Encodes one event of the rank's file: `ts` is its aligned time (ns). `flow` (0: none) is a
 * cross-rank flow id the slice takes part in, or for a flow step (s/t/f) its id made unique
 * across ranks by the merge (a step without one is not carried). Events of kinds Perfetto's TrackEvent does not
 * carry (async b/e/n, ...) are counted, not written. */
void cl_pft_event(cl_pft_seq *s, const cl_ev *ev, int64_t ts, uint64_t flow);
/* The bytes encoded since the last call; valid until the next call on s. */
const uint8_t *cl_pft_take(cl_pft_seq *s, size_t *n);
/* Frees the sequence; returns how many events it could not carry. */
int64_t cl_pft_seq_free(cl_pft_seq *s);

/* The merge's own sequence: a global track "commlens merge" holding one instant, at `ts`,
 * whose arguments are the flat object `meta` (not taken). Written into buf (caller frees). */
uint8_t *cl_pft_merge_header(int64_t ts, struct json_object *meta, size_t *n);
#endif
