/* hotpath.c: startEvent / stopEvent / recordEventState after the ABI shim.
 * The rule for this file: no malloc, no lock, no system call other than the vDSO clock read,
 * and never a dereference of a pointer NCCL gives us (handles are ids, not addresses).
 * Each call writes one fixed-size record into the calling thread's ring and returns (but for a
 * KernelChStop state, which waits for its stop: cl_event_stop; and, when only a digest is
 * written, a KernelCh's start, which waits for its stop in the ring's cl_kch_open table, so
 * that the whole event is one record: anything else of that KernelCh sends the start out
 * first, and a newer KernelCh on the same entry does too); a full
 * ring (or none) drops the record and counts it, and hands out the id marked CL_ID_DROPPED:
 * the event's children are then dropped at their start and counted too. */
#include "plugin/capture/hotpath.h"
#include "common/clock.h"
#include "plugin/capture/gate.h"
#include "plugin/capture/ring.h"
#include <string.h>

static inline cl_ring *ring_self(void) {
  cl_ring *r = cl_t_ring;
  if (__builtin_expect(r == NULL, 0)) {
    r = cl_ring_claim();      /* once per thread */
    if (!r) atomic_fetch_add_explicit(&cl_rings_unclaimed_drops, 1, memory_order_relaxed);
  } else if (__builtin_expect(atomic_load_explicit(&r->next, memory_order_relaxed) != NULL, 0)) {
    r = cl_ring_move(r);      /* the drain prepared a larger ring (rare) */
  }
  return r;
}

/* The next call's cost is sampled (sample_cost). */
static inline int sample_due(cl_ring *r) {
  return ((atomic_load_explicit(&r->calls, memory_order_relaxed) + 1) & (CL_SAMPLE_EVERY - 1)) == 32;
}

static inline void sample_cost(cl_ring *r, uint64_t t0) {
  uint64_t c = atomic_load_explicit(&r->calls, memory_order_relaxed) + 1;
  atomic_store_explicit(&r->calls, c, memory_order_relaxed);
  /* the 32nd, 1056th, ... call: not a thread's first, which finds everything cold and would
   * weigh on the mean of a thread that makes few calls; early enough that short runs get one */
  if (__builtin_expect((c & (CL_SAMPLE_EVERY - 1)) == 32, 0)) {
    uint64_t dt = cl_now() - t0;
    atomic_store_explicit(&r->sampled_ns,
        atomic_load_explicit(&r->sampled_ns, memory_order_relaxed) + dt, memory_order_relaxed);
    atomic_store_explicit(&r->nsampled,
        atomic_load_explicit(&r->nsampled, memory_order_relaxed) + 1, memory_order_relaxed);
    _Atomic uint32_t *h = &r->sample_hist[cl_sample_bucket(dt)];
    atomic_store_explicit(h, atomic_load_explicit(h, memory_order_relaxed) + 1, memory_order_relaxed);
  }
}

/* A KernelCh (event `id`) held back in its thread's table until its stop, when only a digest is
 * written: the two records become one (cl_event_stop). Its start reads no clock (ts 0): it takes
 * the time its stop is seen, or that of what sends it out first (cl_ring_kch_out), one read
 * fewer a channel. What reads it: the GPU clock's calibration, which that later time only
 * loosens (a channel's stop sample is the tighter one: docs/decisions/0022-kernelch-records.md), and a plausibility
 * bound the stop's time also keeps. The call whose cost is sampled reads it. */
static inline __attribute__((always_inline)) void *kch_hold(cl_ring *r, uint64_t id, uint32_t comm_serial, unsigned flags, uint64_t parent,
                             int32_t rank, unsigned channel, uint64_t ptimer) {
  uint64_t t0 = sample_due(r) ? cl_now() : 0;
  cl_kch_open *o = &r->kch[id & (CL_KCH_OPEN - 1)];
  if (o->id) cl_ring_kch_out(r, o, NULL, 0);
  *o = (cl_kch_open){.id = id, .parent = parent, .ts = t0, .ptimer = ptimer, .comm = comm_serial, .rank = rank,
                     .flags = (uint8_t)flags, .channel = (uint8_t)channel};
  sample_cost(r, t0);
  return (void *)(uintptr_t)id;
}

/* A KernelCh not asked for (cl_kch_first: its collective has a channel recorded): counted, no
 * handle (NCCL then neither records its states nor stops it). */
static inline void *kch_untimed(cl_ring *r) {
  atomic_store_explicit(&r->kch_untimed, atomic_load_explicit(&r->kch_untimed, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  return NULL;
}

/* While one channel a collective is enough (gate.h cl_kch_first): 1 for the first KernelCh of
 * its collective (parent) on this thread, marked CL_F_KCH_FIRST in *flags; 0 for its others,
 * also once the gate has turned off again (a window opened meanwhile), so that no collective is
 * left with part of its channels; 1 again, marked, for a channel seen before of it (a CUDA
 * graph's next replay, ring.h cl_kch_timed). 1 for every other KernelCh, and for one whose
 * collective is not ours to name (none, or another process's). */
/* kch_pick's 0 (r->kch, a parent of ours): a further channel of a collective with its channel
 * recorded on this thread, now marked seen. */
static inline int kch_further(cl_ring *r, uint64_t parent, unsigned channel) {
  cl_kch_timed *t = &cl_ring_kch_timed(r)[cl_kch_timed_slot(parent)];
  uint64_t bit = 1ull << (channel & 63);
  if (t->parent != parent || (t->chans & bit)) return 0;
  t->chans |= bit;
  return 1;
}
static inline int kch_pick(cl_ring *r, uint64_t parent, unsigned channel, unsigned *flags) {
  if (!r->kch || !parent || (*flags & CL_F_FOREIGN)) return 1;
  if (kch_further(r, parent, channel)) return 0;
  if (!atomic_load_explicit(&cl_kch_first, memory_order_relaxed)) return 1;
  cl_ring_kch_timed(r)[cl_kch_timed_slot(parent)] = (cl_kch_timed){parent, 1ull << (channel & 63)};
  *flags |= CL_F_KCH_FIRST;
  return 1;
}

void *cl_event_start(uint32_t comm_serial, unsigned etype, unsigned flags, uint64_t parent,
                     const cl_payload *p, unsigned payload_bytes) {
  if (__builtin_expect(!atomic_load_explicit(&cl_enabled, memory_order_relaxed), 0)) return NULL;
  if (__builtin_expect(atomic_load_explicit(&cl_window_by_coll, memory_order_relaxed), 0) &&
      !cl_gate_coll(etype))
    return NULL;
  if (__builtin_expect(!atomic_load_explicit(&cl_capturing, memory_order_relaxed), 0)) return NULL;
  cl_ring *r = ring_self();
  if (!r) return (void *)(uintptr_t)CL_ID_DROPPED;
  if (__builtin_expect((parent & CL_ID_DROPPED) && !(flags & CL_F_FOREIGN), 0)) {   /* its parent was lost */
    atomic_store_explicit(&r->dropped_children,
        atomic_load_explicit(&r->dropped_children, memory_order_relaxed) + 1, memory_order_relaxed);
    return (void *)(uintptr_t)CL_ID_DROPPED;
  }
  if (__builtin_expect(r->kst_id != 0, 0)) cl_ring_kst_flush(r);   /* records keep their thread's order */
  if (etype == CL_EV_KERNEL_CH && !kch_pick(r, parent, p->kernel_ch.channel, &flags)) return kch_untimed(r);
  uint64_t id = r->id_base | ++r->seq;
  unsigned bytes = (unsigned)offsetof(cl_payload, group_api) + payload_bytes;
  if (etype == CL_EV_KERNEL_CH && r->kch && bytes <= CL_SLOT_BYTES &&
      atomic_load_explicit(&cl_digest_only, memory_order_relaxed)) {
    return kch_hold(r, id, comm_serial, flags, parent, p->rank, p->kernel_ch.channel, p->kernel_ch.ptimer);
  }
  uint64_t t0 = cl_now();
  if (__builtin_expect(etype == CL_EV_KERNEL_PHASE, 0)) {   /* a child of a held-back KernelCh */
    cl_kch_open *o = cl_ring_kch_find(r, parent);
    if (o) cl_ring_kch_out(r, o, NULL, t0);
  }
  unsigned n = 1 + (bytes + CL_SLOT_BYTES - 1) / CL_SLOT_BYTES;
  uint64_t pos;
  cl_rec *rec = cl_ring_reserve(r, n, &pos);
  if (rec) {
    rec->kind = CL_REC_START;
    rec->nslots = (uint8_t)n;
    rec->etype = (uint8_t)etype;
    rec->flags = (uint8_t)flags;
    rec->aux = comm_serial;
    rec->id = id;
    rec->ts = t0;
    rec->arg = parent;
    memcpy(rec + 1, p, bytes);
    cl_ring_commit(r, pos, n);
  }
  sample_cost(r, t0);
  return (void *)(uintptr_t)(rec ? id : id | CL_ID_DROPPED);
}

/* A KernelCh's start past the check for a further channel (cl_event_kch_start): held back as
 * cl_event_start would hold it, without the payload's assembly; anything unusual goes the
 * general way. Apart, so that the frequent answer above it saves no registers. */
static __attribute__((noinline)) void *kch_start(cl_ring *r, uint32_t comm_serial, unsigned flags, uint64_t parent,
                                                int32_t rank, unsigned channel, uint64_t ptimer) {
  if (__builtin_expect(!r || !r->kch || r->kst_id || (parent & CL_ID_DROPPED) ||
                       atomic_load_explicit(&r->next, memory_order_relaxed) != NULL ||
                       !atomic_load_explicit(&cl_digest_only, memory_order_relaxed) ||
                       atomic_load_explicit(&cl_window_by_coll, memory_order_relaxed) ||
                       !atomic_load_explicit(&cl_capturing, memory_order_relaxed) ||
                       !atomic_load_explicit(&cl_enabled, memory_order_relaxed), 0)) {
    cl_payload p = {.rank = rank, .kernel_ch = {.ptimer = ptimer, .channel = (uint8_t)channel}};
    return cl_event_start(comm_serial, CL_EV_KERNEL_CH, flags, parent, &p, (unsigned)sizeof p.kernel_ch);
  }
  if (!kch_pick(r, parent, channel, &flags)) return kch_untimed(r);
  return kch_hold(r, r->id_base | ++r->seq, comm_serial, flags, parent, rank, channel, ptimer);
}

/* A KernelCh's start, the most frequent call NCCL makes (a start, a KernelChStop state and a
 * stop per channel of every collective). Most of them, while the gate says one channel a
 * collective is enough, are a further channel of a collective whose one channel is recorded
 * (a collective has up to 64): answered here, as kch_pick would answer it once kch_start's
 * gates pass. Nothing is written, so no KernelChStop state waiting on the thread need go out
 * first. */
void *cl_event_kch_start(uint32_t comm_serial, unsigned flags, uint64_t parent, int32_t rank, unsigned channel,
                         uint64_t ptimer) {
  cl_ring *r = cl_t_ring;
  if (__builtin_expect(r && r->kch && parent && !(flags & CL_F_FOREIGN) &&
                       atomic_load_explicit(&r->next, memory_order_relaxed) == NULL &&
                       atomic_load_explicit(&cl_enabled, memory_order_relaxed) &&
                       atomic_load_explicit(&cl_capturing, memory_order_relaxed) &&
                       !atomic_load_explicit(&cl_window_by_coll, memory_order_relaxed), 1) &&
      kch_further(r, parent, channel))
    return kch_untimed(r);
  return kch_start(r, comm_serial, flags, parent, rank, channel, ptimer);
}

void *cl_event_skipped(void) {
  cl_ring *r = ring_self();
  if (r) atomic_store_explicit(&r->skipped, atomic_load_explicit(&r->skipped, memory_order_relaxed) + 1,
                               memory_order_relaxed);
  return NULL;
}

void *cl_event_quiet(void) {
  cl_event_skipped();
  return (void *)(uintptr_t)CL_ID_QUIET;
}

/* NCCL records KernelChStop on a KernelCh and stops it at once, on one thread: the state waits
 * in the thread's ring and rides in the stop's record (CL_F_STOP_KCH_STATE), one record where
 * there were two. Anything else on the thread writes it out first, as its own record. */
void cl_event_stop(void *handle) {
  if (!handle || ((uintptr_t)handle & CL_ID_DROPPED) || !atomic_load_explicit(&cl_enabled, memory_order_relaxed)) return;
  cl_ring *r = ring_self();
  if (!r) return;
  uint64_t id = (uint64_t)(uintptr_t)handle;
  cl_kch_open *o = cl_ring_kch_find(r, id);
  /* NCCL stops a KernelCh just after its KernelChStop state: a held one takes the state's time
   * as its stop's (one clock read fewer), but on a call whose cost is sampled. That case, most
   * of NCCL's stops, first and on its own: the state folds, as below, with aux 0. */
  if (o && r->kst_id == id && !sample_due(r)) {
    cl_ring_kch_span(r, o, r->kst_ts, r->kst_arg);
    r->kst_id = 0;
    sample_cost(r, 0);   /* counted; not sampled (sample_due said so) */
    return;
  }
  uint64_t t0 = cl_now();
  int kst = r->kst_id == id && t0 >= r->kst_ts && t0 - r->kst_ts <= UINT32_MAX;   /* the state folds */
  if (o && r->kst_id && !kst) {   /* a state that does not fold: it goes first, then the rest */
    cl_ring_kst_flush(r);
    o = cl_ring_kch_find(r, id);
  }
  if (o) {   /* a held-back KernelCh: start, payload and stop in one record */
    cl_rec stop = {.kind = CL_REC_STOP, .nslots = 1, .flags = kst ? CL_F_STOP_KCH_STATE : 0,
                   .aux = kst ? (uint32_t)(t0 - r->kst_ts) : 0, .id = id, .ts = t0, .arg = kst ? r->kst_arg : 0};
    cl_ring_kch_out(r, o, &stop, 0);
    if (kst) r->kst_id = 0;
  } else if (kst) {
    cl_ring_put1(r, id, CL_REC_STOP, CL_F_STOP_KCH_STATE, (uint32_t)(t0 - r->kst_ts), t0, r->kst_arg);
    r->kst_id = 0;
  } else {
    if (r->kst_id) cl_ring_kst_flush(r);
    cl_ring_put1(r, id, CL_REC_STOP, 0, 0, t0, 0);
  }
  sample_cost(r, t0);
}

void cl_event_state(void *handle, int state, uint64_t arg) {
  if (!handle || ((uintptr_t)handle & CL_ID_DROPPED) || !atomic_load_explicit(&cl_enabled, memory_order_relaxed)) return;
  cl_ring *r = ring_self();
  if (!r) return;
  uint64_t t0 = cl_now();
  if (r->kst_id) cl_ring_kst_flush(r);
  if (state != CL_ST_KERNEL_CH_STOP) {   /* a held-back KernelCh's start goes before its state */
    cl_kch_open *o = cl_ring_kch_find(r, (uint64_t)(uintptr_t)handle);
    if (o) cl_ring_kch_out(r, o, NULL, t0);
  }
  if (state == CL_ST_KERNEL_CH_STOP) {
    r->kst_id = (uint64_t)(uintptr_t)handle;
    r->kst_ts = t0;
    r->kst_arg = arg;
  } else {
    cl_ring_put1(r, (uint64_t)(uintptr_t)handle, CL_REC_STATE, 0, (uint32_t)state, t0, arg);
  }
  sample_cost(r, t0);
}
