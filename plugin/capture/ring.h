/* ring.h: per-thread single-producer/single-consumer record rings. The owning thread writes
 * records without locks; the writer thread is the only consumer. A thread claims a ring at
 * its first event (the one slow step of a thread's life); memory for all rings together is
 * bounded by COMMLENS_BUFFER_MB. A full ring drops the record and counts it.
 * A ring the drain finds a quarter full is given a larger successor (4x, up to CL_RING_MAX_BYTES,
 * while the budget keeps room for CL_RING_SPARE more threads): the drain prepares it, the
 * producer moves at its next event, leaving a MOVED record, and the drain reads the old ring
 * to that record before the new one. A busy proxy thread thereby rides out the drain being
 * descheduled for tens of milliseconds (bench-hotpath; docs/decisions/0019-per-thread-rings.md). */
#ifndef COMMLENS_RING_H
#define COMMLENS_RING_H
#include "commlens/event.h"
#include "common/loghist.h"
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CL_MAX_RINGS 1024
#define CL_RING_MAX_BYTES (16u << 20)
#define CL_SERIAL_LIMIT (1u << 23)   /* thread serials below it: no id reaches CL_ID_DROPPED */
#define CL_RING_MIN_SLOTS 512   /* 16 KiB: the smallest ring a crowded budget hands out */
#define CL_RING_SPARE 8          /* default-size rings the budget keeps for new threads */

enum { CL_RING_FREE = 0, CL_RING_LIVE = 1, CL_RING_DEAD = 2 };

/* Timed calls are also counted by duration (common/loghist.h: four buckets an octave), so the
 * writer can give a median beside the mean: the mean also counts the calls the OS interrupted. */
#define CL_SAMPLE_BUCKETS 64
static inline unsigned cl_sample_bucket(uint64_t ns) { return cl_loghist_bucket(ns, CL_SAMPLE_BUCKETS); }
static inline uint64_t cl_sample_floor(unsigned b) { return cl_loghist_floor(b); }

/* A KernelCh held back by its thread until its stop, to go out as one record (hotpath.c; gate.h
 * cl_digest_only): its START record's fields and its payload's (cl_kernel_ch and the rank). */
#define CL_KCH_OPEN 64          /* held at once per thread, by id: a newer one sends the older out */
typedef struct cl_kch_open {
  uint64_t id, parent, ts;      /* id 0: free; ts 0: not read (cl_ring_kch_out gives it one) */
  uint64_t ptimer;
  uint32_t comm;
  int32_t rank;
  uint8_t flags, channel;
} cl_kch_open;

/* After the held-back table, in the same allocation: the collectives (parent ids) whose channel
 * this thread recorded lately, by cl_kch_timed_slot, while one channel a collective is enough
 * (gate.h cl_kch_first), with the channels seen of them since (bit c for channel c mod 64). A
 * collective's channels start one after another on NCCL's proxy thread, interleaved with a few
 * others' at most; a channel seen again is a CUDA graph's next replay of the collective (its
 * KernelCh name the collective captured), which gets a channel of its own. */
#define CL_KCH_TIMED 64
typedef struct { uint64_t parent, chans; } cl_kch_timed;
static inline unsigned cl_kch_timed_slot(uint64_t parent) {
  return (unsigned)((parent ^ (parent >> CL_ID_SEQ_BITS)) & (CL_KCH_TIMED - 1));
}

typedef struct cl_ring {
  /* producer's cache line */
  _Alignas(64) _Atomic uint64_t head;   /* slots written and committed */
  uint64_t tail_cache;                  /* producer's last view of tail */
  uint64_t id_base;                     /* serial << CL_ID_SEQ_BITS */
  uint64_t seq;                         /* last event sequence of this thread */
  _Atomic uint64_t dropped;             /* records that did not fit (relaxed, producer-only) */
  _Atomic uint64_t dropped_children;    /* events not recorded because their parent was lost (same) */
  _Atomic uint64_t calls;               /* hot-path calls, for the overhead figure */
  _Atomic uint64_t skipped;             /* API and KernelLaunch events answered with no handle
                                           (gate.h cl_skip_launch_events; producer-only) */
  _Atomic uint64_t kch_untimed;         /* KernelCh not asked for: their collective had a channel
                                           recorded (gate.h cl_kch_first; producer-only) */
  _Atomic uint64_t sampled_ns, nsampled;/* timed calls (1 in CL_SAMPLE_EVERY) */
  struct cl_ring *_Atomic next;         /* a larger ring the drain prepared: move at next event */
  uint64_t kst_id, kst_ts, kst_arg;     /* a KernelChStop state waiting for its stop (hotpath.c);
                                           kst_id 0: none */
  cl_kch_open *kch;                     /* CL_KCH_OPEN held-back KernelCh (NULL: none held back);
                                           goes on with its thread to a successor ring */
  /* consumer's cache line */
  _Alignas(64) _Atomic uint64_t tail;
  /* set at claim, read by both */
  _Alignas(64) cl_rec *slots;
  uint64_t cap;                         /* slots, a power of two */
  _Atomic int state;                    /* CL_RING_* */
  _Atomic uint32_t serial;              /* thread serial (ids); 0 while the ring changes hands */
  _Atomic int os_tid;                   /* published before serial (see cl_ring_os_tid) */
  _Atomic int waiting;                  /* a successor the drain skips until the MOVED record */
  _Atomic uint32_t sample_hist[CL_SAMPLE_BUCKETS];   /* timed calls by duration (cl_sample_bucket) */
} cl_ring;

#define CL_SAMPLE_EVERY 1024

extern _Thread_local cl_ring *cl_t_ring;
extern cl_ring cl_rings[CL_MAX_RINGS];
extern _Atomic uint64_t cl_rings_unclaimed_drops;   /* events of threads that got no ring */

/* Claims a ring for the calling thread (slow path; may allocate). NULL if over budget. */
cl_ring *cl_ring_claim(void);
/* Consumer (one thread at a time: plugin/pipeline/drain.c says which): hands every committed
 * record of every ring to `fn`, in runs of whole records (header + payload slots, one thread's
 * records in order), consumes them, and returns a dead thread's emptied ring to the pool. The
 * only code that knows the ring's framing (wrap padding). Returns the records handed over. */
typedef void (*cl_ring_sink)(void *arg, const cl_rec *recs, size_t nslots);
uint64_t cl_rings_drain(cl_ring_sink fn, void *arg);
/* The same, handing over at most `max_slots` slots. Every pass starts at the first ring, as an
 * unbounded one does: the rings are in the order their threads first recorded, so a collective's
 * thread is read before the proxy thread that reports its channels, and a channel read before
 * its collective (an orphan, adopted later at several times the cost) stays rare. A pass that
 * resumed where the last one stopped read channels ahead of their collectives: the writer's
 * instructions per collective went from 4,950 to 13,300 (bench/replay_cost.c stream, callgrind). */
uint64_t cl_rings_drain_max(cl_ring_sink fn, void *arg, uint64_t max_slots);
/* 1 when every ring was read to its head when looked at (any thread): records committed before
 * the call are in staging or past it once the drain's copy is seen taken. */
int cl_rings_idle(void);
/* 1 when a ring holds more than its capacity >> shift slots unread (any thread). */
int cl_rings_filling(unsigned shift);
/* How far each ring had been committed at one moment, to learn later whether everything
 * committed before it has been consumed (the flight recorder's signal dump waits for that).
 * A mark names each ring by its serial: a ring that has since been retired or handed to
 * another thread was read empty before that, so it holds nothing from before the mark. */
typedef struct {
  int n;
  uint32_t serial[CL_MAX_RINGS];
  uint64_t head[CL_MAX_RINGS];
} cl_rings_mark;
void cl_rings_mark_now(cl_rings_mark *m);
/* Slots committed before the mark that the drain has not consumed yet (0: each of them was
 * handed to the drain's sink, whose copy happened before its ring's tail moved). Any thread. */
uint64_t cl_rings_behind(const cl_rings_mark *m);
/* Counters of every ring together (relaxed reads; any thread). */
typedef struct { uint64_t dropped, dropped_children, unclaimed, calls, skipped, kch_untimed, sampled_ns, nsampled, hist[CL_SAMPLE_BUCKETS]; } cl_ring_totals;
/* The median timed call from t->hist (the middle of its bucket), 0 if none. */
uint64_t cl_rings_median_ns(const cl_ring_totals *t);
void cl_rings_totals(cl_ring_totals *t);
/* Rings made so far (cl_rings[0 .. count-1]; a ring, once made, stays). */
int cl_rings_count(void);
/* OS thread id of the thread holding serial `serial` (0 if not found, or if its ring has
 * since passed to another thread: never another thread's id). Any thread. */
int cl_ring_os_tid(uint32_t serial);
/* Producer: continue in the successor the drain prepared (r->next); returns it. */
cl_ring *cl_ring_move(cl_ring *r);
/* Fork child: forget every ring (they belong to the parent's threads). */
void cl_rings_reset_after_fork(void);

/* Producer: room for n slots, or NULL (counted as a drop). Wraps with a PAD record. One slot
 * always stays free, for the MOVED record. */
static inline cl_rec *cl_ring_reserve(cl_ring *r, unsigned n, uint64_t *pos_out) {
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  uint64_t idx = head & (r->cap - 1);
  uint64_t need = n + ((idx + n > r->cap) ? r->cap - idx : 0);
  if (head + need - r->tail_cache > r->cap - 1) {
    r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head + need - r->tail_cache > r->cap - 1) {
      atomic_store_explicit(&r->dropped, atomic_load_explicit(&r->dropped, memory_order_relaxed) + 1,
                            memory_order_relaxed);
      return NULL;
    }
  }
  if (need != n) {            /* not enough room before the end: pad to it, start at 0 */
    cl_rec *pad = &r->slots[idx];
    pad->kind = CL_REC_PAD;
    pad->nslots = 0;          /* PAD means: skip to the end of the buffer */
    head += need - n;
    idx = 0;
  }
  *pos_out = head;
  return &r->slots[idx];
}
static inline void cl_ring_commit(cl_ring *r, uint64_t pos, unsigned n) {
  atomic_store_explicit(&r->head, pos + n, memory_order_release);
}
/* Producer: one single-slot record (STOP or STATE), or a counted drop when the ring is full. */
static inline void cl_ring_put1(cl_ring *r, uint64_t id, unsigned kind, unsigned flags, uint32_t aux,
                                uint64_t ts, uint64_t arg) {
  uint64_t pos;
  cl_rec *rec = cl_ring_reserve(r, 1, &pos);
  if (!rec) return;
  *rec = (cl_rec){.kind = (uint8_t)kind, .nslots = 1, .flags = (uint8_t)flags, .aux = aux, .id = id, .ts = ts, .arg = arg};
  cl_ring_commit(r, pos, 1);
}
/* The plugin's clock (cl_now), out of line: the rare branch of the writer below (a held-back
 * KernelCh's start written before its stop, with no time to take) stays a call in the hot
 * path's inlined copies of it. */
uint64_t cl_ring_now(void);
/* Producer: the ring's table of collectives timed lately (CL_KCH_TIMED entries; r->kch set). */
static inline cl_kch_timed *cl_ring_kch_timed(cl_ring *r) { return (cl_kch_timed *)(void *)(r->kch + CL_KCH_OPEN); }
/* Producer: the held-back KernelCh with id `id`, or NULL. */
static inline cl_kch_open *cl_ring_kch_find(cl_ring *r, uint64_t id) {
  if (!r->kch || !id) return NULL;       /* 0 marks a free entry */
  cl_kch_open *o = &r->kch[id & (CL_KCH_OPEN - 1)];
  return o->id == id ? o : NULL;
}
/* Producer: a held-back KernelCh written out, its entry freed. With `stop` NULL, as the START
 * record it is (another event of it came, a newer one needs its place, its thread ends; its
 * stop will be a STOP record); else the whole event in one two-slot record, `stop`'s fields in
 * its tail (CL_F_SPAN, cl_kch_tail). A start that read no clock takes the time its stop (or
 * KernelChStop state) was seen; written before its stop, `seen` (the time of what sends it
 * out: a record of this KernelCh after it keeps its order), or now when 0. Always inlined: the
 * hot path's calls. */
static inline __attribute__((always_inline)) void cl_ring_kch_out(cl_ring *r, cl_kch_open *o, const cl_rec *stop,
                                                                  uint64_t seen) {
  uint64_t pos;
  cl_rec *rec = cl_ring_reserve(r, 2, &pos);
  if (rec) {
    uint64_t ts = o->ts ? o->ts : stop ? stop->ts - stop->aux : seen ? seen : cl_ring_now();
    rec[0] = (cl_rec){.kind = CL_REC_START, .nslots = 2, .etype = CL_EV_KERNEL_CH,
                      .flags = (uint8_t)(o->flags | (stop ? CL_F_SPAN : 0)), .aux = o->comm, .id = o->id,
                      .ts = ts, .arg = o->parent};
    if (stop) {
      cl_kch_tail *t = (cl_kch_tail *)(void *)(rec + 1);   /* in place: a copy cost the hot path */
      t->ptimer = o->ptimer;
      t->stop_ts = stop->ts;
      t->stop_arg = stop->arg;
      t->stop_aux = stop->aux;
      t->channel = o->channel;
      t->stop_flags = stop->flags;
      t->_pad = 0;
    } else {   /* the payload slot as cl_event_start writes it: rank, pad, cl_kernel_ch, zeros */
      unsigned char slot[CL_SLOT_BYTES] = {0};
      cl_kernel_ch k = {.ptimer = o->ptimer, .channel = o->channel};
      __builtin_memcpy(slot + offsetof(cl_payload, rank), &o->rank, sizeof o->rank);
      __builtin_memcpy(slot + offsetof(cl_payload, kernel_ch), &k, sizeof k);
      __builtin_memcpy(rec + 1, slot, CL_SLOT_BYTES);
    }
    cl_ring_commit(r, pos, 2);
  }
  o->id = 0;
}
/* Producer: cl_ring_kch_out of a held-back KernelCh whose stop comes at once after its
 * KernelChStop state (seen at `ts`, timer `arg`): the stop's record as cl_event_stop folds it
 * (CL_F_STOP_KCH_STATE, aux 0). */
static inline void cl_ring_kch_span(cl_ring *r, cl_kch_open *o, uint64_t ts, uint64_t arg) {
  const cl_rec stop = {.kind = CL_REC_STOP, .nslots = 1, .flags = CL_F_STOP_KCH_STATE, .id = o->id, .ts = ts, .arg = arg};
  cl_ring_kch_out(r, o, &stop, 0);
}
/* Producer: the KernelChStop state waiting for its stop (kst_id), written out as the STATE
 * record it is (hotpath.c; the thread's exit), after its KernelCh's start if that was held. */
static inline void cl_ring_kst_flush(cl_ring *r) {
  cl_kch_open *o = cl_ring_kch_find(r, r->kst_id);
  if (o) cl_ring_kch_out(r, o, NULL, r->kst_ts);
  cl_ring_put1(r, r->kst_id, CL_REC_STATE, 0, CL_ST_KERNEL_CH_STOP, r->kst_ts, r->kst_arg);
  r->kst_id = 0;
}
#endif
