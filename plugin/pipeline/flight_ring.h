/* flight_ring.h: the flight recorder's memory: a FIFO of whole ring records (header + payload slots,
 * the compact binary form they travel in, never formatted), bounded by bytes and by age. A
 * record that does not fit, or that is older than the window behind the newest, evicts the
 * oldest, and each eviction is counted. Format thread only (the one that feeds it and dumps). */
#ifndef COMMLENS_FLIGHT_RING_H
#define COMMLENS_FLIGHT_RING_H
#include "commlens/event.h"
#include <stdint.h>

typedef struct cl_fring cl_fring;

typedef struct {
  uint64_t kept;            /* records held now */
  uint64_t put;             /* records ever put */
  uint64_t evicted_age;     /* evicted: older than the window behind the newest record */
  uint64_t evicted_room;    /* evicted: the memory bound */
  uint64_t bytes, cap_bytes;/* slots in use and the bound, in bytes */
  uint64_t oldest_ts, newest_ts;   /* of the records held (0 when empty) */
} cl_fring_stats;

/* A store of at most `bytes` (whole 32-byte slots, at least 4 of them) keeping records no
 * older than `keep_ns` behind the newest. NULL when out of memory. The caller frees it. */
cl_fring *cl_fring_new(uint64_t bytes, uint64_t keep_ns);
void cl_fring_free(cl_fring *f);
/* Copies one record (r->nslots slots, 1..4). Never fails: old records give way. */
void cl_fring_put(cl_fring *f, const cl_rec *r);
/* Hands every record held to fn, oldest first, each contiguous (valid during the call). */
typedef void (*cl_fring_fn)(void *arg, const cl_rec *r);
void cl_fring_each(const cl_fring *f, cl_fring_fn fn, void *arg);
void cl_fring_get_stats(const cl_fring *f, cl_fring_stats *s);
#endif
