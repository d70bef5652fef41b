/* flight_ring.c: see flight_ring.h. Slots are addressed by absolute position modulo the capacity; a record
 * may wrap, and is copied out whole when handed over. Nothing here allocates after _new. */
#include "plugin/pipeline/flight_ring.h"
#include <stdlib.h>
#include <string.h>

#define MAX_SLOTS 4   /* header + the payload's three slots (event.h: CL_PAYLOAD_MAX) */

struct cl_fring {
  cl_rec *slots;
  uint64_t cap;             /* slots */
  uint64_t head, tail;      /* absolute slot positions: [tail, head) is held */
  uint64_t keep_ns;
  uint64_t newest_ts;       /* of the last record put */
  cl_fring_stats st;
};

cl_fring *cl_fring_new(uint64_t bytes, uint64_t keep_ns) {
  cl_fring *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->cap = bytes / sizeof(cl_rec);
  if (f->cap < MAX_SLOTS) f->cap = MAX_SLOTS;
  f->slots = malloc(f->cap * sizeof *f->slots);
  if (!f->slots) { free(f); return NULL; }
  f->keep_ns = keep_ns;
  return f;
}

void cl_fring_free(cl_fring *f) {
  if (!f) return;
  free(f->slots);
  free(f);
}

static const cl_rec *at(const cl_fring *f, uint64_t pos) { return &f->slots[pos % f->cap]; }

static void evict_one(cl_fring *f, uint64_t *counter) {
  unsigned n = at(f, f->tail)->nslots;
  f->tail += n;
  f->st.kept--;
  (*counter)++;
}

void cl_fring_put(cl_fring *f, const cl_rec *r) {
  unsigned n = r->nslots;
  if (n < 1 || n > MAX_SLOTS) return;   /* not a record the rings make */
  while (f->head - f->tail + n > f->cap) evict_one(f, &f->st.evicted_room);
  for (unsigned i = 0; i < n; i++) f->slots[(f->head + i) % f->cap] = r[i];
  f->head += n;
  f->st.kept++;
  f->st.put++;
  f->newest_ts = r->ts;
  /* the window trails the newest record; records of other threads may come slightly out of
   * order, which only delays their eviction */
  while (f->tail != f->head && at(f, f->tail)->ts + f->keep_ns < r->ts) evict_one(f, &f->st.evicted_age);
}

void cl_fring_each(const cl_fring *f, cl_fring_fn fn, void *arg) {
  cl_rec buf[MAX_SLOTS];
  for (uint64_t pos = f->tail; pos != f->head;) {
    unsigned n = at(f, pos)->nslots;
    for (unsigned i = 0; i < n; i++) buf[i] = *at(f, pos + i);
    fn(arg, buf);
    pos += n;
  }
}

void cl_fring_get_stats(const cl_fring *f, cl_fring_stats *s) {
  *s = f->st;
  s->bytes = (f->head - f->tail) * sizeof(cl_rec);
  s->cap_bytes = f->cap * sizeof(cl_rec);
  s->oldest_ts = f->tail != f->head ? at(f, f->tail)->ts : 0;
  s->newest_ts = f->tail != f->head ? f->newest_ts : 0;
}
