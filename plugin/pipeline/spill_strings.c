/* spill_strings.c: see spill_strings.h. The table is append-only: an index handed out stays
 * valid for the process's life, so the reader needs no lock, only the count (acquire) that
 * covers the entries a queued chunk can name. The pointer -> index lookup is the drain's own. */
#include "plugin/pipeline/spill_strings.h"
#include "common/hash.h"
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LOOKUP_SLOTS (2 * CL_SPILL_STRINGS_MAX)   /* open addressing, at most half full; a power of two */

struct cl_spill_strings {
  const char *str[CL_SPILL_STRINGS_MAX];
  _Atomic uint32_t n;
  struct { const char *p; uint32_t ix; } lookup[LOOKUP_SLOTS];   /* ix: index + 1, 0 = empty */
};

cl_spill_strings *cl_spill_strings_new(void) { return calloc(1, sizeof(cl_spill_strings)); }
void cl_spill_strings_free(cl_spill_strings *t) { free(t); }

/* The cl_str fields of a START record of type et, as byte offsets into the record (the payload
 * follows the header slot). Returns how many. */
static int str_fields(unsigned et, size_t *off) {
  const size_t p = offsetof(cl_start_rec, p);
  int k = 0;
  switch (et) {
  case CL_EV_COLL_API: case CL_EV_P2P_API:
    off[k++] = p + offsetof(cl_payload, coll_api.func);
    off[k++] = p + offsetof(cl_payload, coll_api.datatype);
    break;
  case CL_EV_COLL:
    off[k++] = p + offsetof(cl_payload, coll.func);
    off[k++] = p + offsetof(cl_payload, coll.datatype);
    off[k++] = p + offsetof(cl_payload, coll.algo);
    off[k++] = p + offsetof(cl_payload, coll.proto);
    break;
  case CL_EV_P2P:
    off[k++] = p + offsetof(cl_payload, p2p.func);
    off[k++] = p + offsetof(cl_payload, p2p.datatype);
    break;
  case CL_EV_CE_COLL:
    off[k++] = p + offsetof(cl_payload, ce_coll.func);
    off[k++] = p + offsetof(cl_payload, ce_coll.datatype);
    off[k++] = p + offsetof(cl_payload, ce_coll.sync_strategy);
    break;
  default: break;
  }
  return k;
}

static uint32_t intern(cl_spill_strings *t, const char *s) {
  if (!s) return 0;
  uint32_t n = atomic_load_explicit(&t->n, memory_order_relaxed);
  for (uint32_t h = cl_hash_slot((uint64_t)(uintptr_t)s, LOOKUP_SLOTS);; h = (h + 1) & (LOOKUP_SLOTS - 1)) {
    if (t->lookup[h].p == s && t->lookup[h].ix) return t->lookup[h].ix;
    if (t->lookup[h].ix) continue;
    if (n == CL_SPILL_STRINGS_MAX) return 0;          /* full: the string reads back as NULL */
    t->str[n] = s;
    t->lookup[h].p = s;
    t->lookup[h].ix = n + 1;
    atomic_store_explicit(&t->n, n + 1, memory_order_release);
    return n + 1;
  }
}

void cl_spill_strings_out(cl_spill_strings *t, cl_rec *recs, size_t n) {
  for (size_t i = 0; i < n; i += recs[i].nslots ? recs[i].nslots : 1) {
    if (recs[i].kind != CL_REC_START) continue;
    size_t off[4];
    int k = str_fields(recs[i].etype, off);
    for (int f = 0; f < k; f++) {
      if (off[f] + sizeof(uint64_t) > (size_t)recs[i].nslots * CL_SLOT_BYTES) continue;
      char *at = (char *)&recs[i] + off[f];
      const char *s;
      memcpy(&s, at, sizeof s);
      uint64_t ix = intern(t, s);
      memcpy(at, &ix, sizeof ix);
    }
  }
}

int cl_spill_strings_in(const cl_spill_strings *t, cl_rec *recs, size_t n) {
  uint32_t have = atomic_load_explicit(&((cl_spill_strings *)t)->n, memory_order_acquire);
  for (size_t i = 0; i < n;) {
    cl_rec *r = &recs[i];
    unsigned ns = r->nslots;
    if (ns < 1 || ns > 4 || ns > n - i) return -1;
    if (r->kind == CL_REC_START) {
      if (r->etype >= CL_EV__COUNT || ns < 2) return -1;
      cl_payload *p = &((cl_start_rec *)r)->p;
      if (r->etype == CL_EV_NET_PLUGIN && p->net.data_len > sizeof p->net.data) return -1;
      size_t off[4];
      int k = str_fields(r->etype, off);
      for (int f = 0; f < k; f++) {
        if (off[f] + sizeof(uint64_t) > (size_t)ns * CL_SLOT_BYTES) return -1;
        char *at = (char *)r + off[f];
        uint64_t ix;
        memcpy(&ix, at, sizeof ix);
        if (ix > have) return -1;
        const char *s = ix ? t->str[ix - 1] : NULL;
        memcpy(at, &s, sizeof s);
      }
    } else if (r->kind != CL_REC_STOP && r->kind != CL_REC_STATE) {
      return -1;
    }
    i += ns;
  }
  return 0;
}
