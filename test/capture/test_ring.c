/* test_ring.c: the ring pool's owner identity, and what the hot path writes into a ring.
 * Threads come and go (each claims a ring, records, exits; the drain recycles their rings for
 * newcomers) while another thread maps serials to OS thread ids, as the format thread does for
 * CUPTI's launch records. A serial must never map to another thread's id. Under
 * ThreadSanitizer (make test's tsan variant) this also catches an unsynchronised handover (the
 * owner's id was once written while being read). */
#include "tl.h"
#include "common/config.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/clock.h"
#include "plugin/capture/gate.h"
#include "plugin/capture/hotpath.h"
#include "plugin/capture/ring.h"
#include <sys/syscall.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define NTHREADS 64
static _Atomic uint32_t g_serial[NTHREADS];
static _Atomic int g_tid[NTHREADS];
static _Atomic int g_done, g_wrong, g_found, g_passes;

static void *churn(void *arg) {
  int k = (int)(intptr_t)arg;
  cl_ring *r = cl_ring_claim();
  if (r) {
    atomic_store(&g_tid[k], (int)syscall(SYS_gettid));
    atomic_store(&g_serial[k], (uint32_t)(r->id_base >> CL_ID_SEQ_BITS));
    uint64_t pos;
    cl_rec *rec = cl_ring_reserve(r, 1, &pos);
    if (rec) { memset(rec, 0, sizeof *rec); rec->kind = CL_REC_STOP; rec->nslots = 1; cl_ring_commit(r, pos, 1); }
  }
  return NULL;
}

static void sink(void *arg, const cl_rec *recs, size_t n) { (void)arg; (void)recs; (void)n; }

static void *mapper(void *arg) {
  (void)arg;
  while (!atomic_load(&g_done)) {
    cl_rings_drain(sink, NULL);                /* recycles the rings of exited threads */
    atomic_fetch_add(&g_passes, 1);
    for (int k = 0; k < NTHREADS; k++) {
      uint32_t s = atomic_load(&g_serial[k]);
      if (!s) continue;
      int tid = cl_ring_os_tid(s);
      if (tid) { atomic_fetch_add(&g_found, 1); if (tid != atomic_load(&g_tid[k])) atomic_fetch_add(&g_wrong, 1); }
    }
  }
  return NULL;
}

TL_TEST(serial_never_maps_to_another_threads_id) {
  cl_config_load();
  cl_cfg.buffer_bytes = 4u << 20;              /* a small pool: rings are reused at once */
  cl_cfg.rings_bytes = cl_cfg.buffer_bytes / 4 * 3;
  cl_cfg.ring_bytes = 64u << 10;
  pthread_t m;
  REQUIRE(pthread_create(&m, NULL, mapper, NULL) == 0, "mapper");
  for (int round = 0; round < 4; round++) {
    pthread_t t[NTHREADS / 4];
    for (int i = 0; i < NTHREADS / 4; i++) pthread_create(&t[i], NULL, churn, (void *)(intptr_t)(round * (NTHREADS / 4) + i));
    for (int i = 0; i < NTHREADS / 4; i++) pthread_join(t[i], NULL);
    /* the next round may reuse these rings once the mapper's drain has seen them empty */
    int p0 = atomic_load(&g_passes);
    while (atomic_load(&g_passes) < p0 + 2) sched_yield();
  }
  atomic_store(&g_done, 1);
  pthread_join(m, NULL);
  CHECK(atomic_load(&g_wrong) == 0, "%d lookups gave another thread's id", atomic_load(&g_wrong));
  int claimed = 0;
  for (int k = 0; k < NTHREADS; k++) claimed += atomic_load(&g_serial[k]) != 0;
  CHECK(claimed == NTHREADS, "only %d of %d threads got a ring", claimed, NTHREADS);
}

/* ---- growth: a busy thread moves to a larger ring and no record is lost or reordered ---- */
typedef struct { uint64_t next_id, bad, moved_seen, n; } order_t;
static void order_sink(void *arg, const cl_rec *recs, size_t n) {
  order_t *o = arg;
  for (size_t k = 0; k < n; k += recs[k].nslots ? recs[k].nslots : 1) {
    if (recs[k].kind == CL_REC_MOVED) o->moved_seen++;
    else if (recs[k].id != o->next_id++) o->bad++;
    o->n++;
  }
}
/* As the hot path does: move first if the drain prepared a successor, then reserve; a record of
 * `kind` and `n` slots with id `id`. */
static int put_n(uint64_t id, unsigned n, unsigned kind) {
  cl_ring *r = cl_t_ring;
  if (atomic_load_explicit(&r->next, memory_order_relaxed)) r = cl_ring_move(r);
  uint64_t pos;
  cl_rec *rec = cl_ring_reserve(r, n, &pos);
  if (!rec) return 0;
  memset(rec, 0, n * sizeof *rec);
  rec->kind = (uint8_t)kind;
  rec->nslots = (uint8_t)n;
  rec->id = id;
  cl_ring_commit(r, pos, n);
  return 1;
}
static int put_id(uint64_t id) { return put_n(id, 1, CL_REC_STOP); }

TL_TEST(a_quarter_full_ring_grows_and_keeps_order) {
  cl_config_load();
  cl_cfg.buffer_bytes = 64u << 20;
  cl_cfg.rings_bytes = cl_cfg.buffer_bytes / 4 * 3;
  cl_cfg.ring_bytes = 64u << 10;                /* 2048 slots */
  cl_ring *r0 = cl_ring_claim();
  REQUIRE(r0 && r0->cap == 2048, "claim");
  order_t o = {0};
  uint64_t id = 0;
  for (int i = 0; i < 600; i++) CHECK(put_id(id++), "room");        /* more than a quarter */
  cl_rings_drain(order_sink, &o);
  REQUIRE(atomic_load(&r0->next) != NULL, "a successor after a quarter-full pass");
  cl_ring *r1 = atomic_load(&r0->next);
  CHECK(r1->cap == 4 * r0->cap, "4x: %llu", (unsigned long long)r1->cap);
  for (int i = 0; i < 3000; i++) CHECK(put_id(id++), "room after the move");  /* > the old cap */
  CHECK(cl_t_ring == r1, "the thread writes to the successor");
  CHECK(atomic_load(&r0->state) == CL_RING_LIVE, "the old ring stays until its MOVED is read");
  cl_rings_drain(order_sink, &o);
  cl_rings_drain(order_sink, &o);
  CHECK(o.bad == 0 && o.moved_seen == 0 && o.next_id == id, "in order: %llu bad, %llu MOVED, %llu of %llu",
        (unsigned long long)o.bad, (unsigned long long)o.moved_seen, (unsigned long long)o.next_id, (unsigned long long)id);
  CHECK(atomic_load(&r0->state) == CL_RING_FREE && atomic_load(&r0->serial) == 0, "the old ring is back in the pool");
  CHECK(!atomic_load(&r1->waiting), "the successor is drained now");
  CHECK(cl_ring_os_tid((uint32_t)(r1->id_base >> CL_ID_SEQ_BITS)) == (int)syscall(SYS_gettid), "same thread");
}

/* ---- a bounded pass (the format thread's, plugin/pipeline/drain.c) ---- */
typedef struct { uint64_t slots, max_call, partial; order_t o; } bounded_t;
static void bounded_sink(void *arg, const cl_rec *recs, size_t n) {
  bounded_t *b = arg;
  size_t k = 0;
  while (k < n) k += recs[k].nslots ? recs[k].nslots : 1;
  if (k != n) b->partial++;                       /* a run must end on a record's end */
  b->slots += n;
  if (n > b->max_call) b->max_call = n;
  order_sink(&b->o, recs, n);
}

TL_TEST(a_bounded_pass_hands_over_whole_records_up_to_its_budget_in_order) {
  cl_config_load();
  cl_cfg.buffer_bytes = 64u << 20;
  cl_cfg.rings_bytes = cl_cfg.buffer_bytes / 4 * 3;
  cl_cfg.ring_bytes = 64u << 10;                /* 2048 slots */
  order_t left = {0};
  cl_rings_drain(order_sink, &left);            /* what earlier tests left (ids of their own) */
  REQUIRE(cl_t_ring || cl_ring_claim(), "claim");
  uint64_t id = 0;
  for (int round = 0; round < 20; round++) {    /* 6,000 slots: past the ring's end (a pad) more than once */
    bounded_t b = {0};
    b.o.next_id = id;
    for (int i = 0; i < 150; i++) {              /* under a quarter of the ring: it does not grow */
      unsigned n = 1 + (unsigned)(i % 3);        /* 1, 2 and 3 slots */
      CHECK(put_n(id++, n, CL_REC_START), "room");
    }
    uint64_t want = id - b.o.next_id, passes = 0;
    while (b.o.n < want && passes < 100) {
      uint64_t before = b.slots;
      cl_rings_drain_max(bounded_sink, &b, 37);  /* ends inside a record now and then */
      CHECK(b.slots - before <= 37, "a pass handed over %llu slots", (unsigned long long)(b.slots - before));
      passes++;
    }
    CHECK(b.o.n == want && b.o.bad == 0 && b.partial == 0 && b.max_call <= 37,
          "round %d: %llu of %llu records, %llu out of order, %llu cut, %llu passes", round,
          (unsigned long long)b.o.n, (unsigned long long)want, (unsigned long long)b.o.bad,
          (unsigned long long)b.partial, (unsigned long long)passes);
    CHECK(passes >= (want * 2) / 37, "round %d: %llu passes for %llu records", round, (unsigned long long)passes,
          (unsigned long long)want);
  }
  CHECK(cl_rings_idle(), "read to the head");
}

static _Atomic int g_prod_done;
static _Atomic uint64_t g_prod_cap;
static _Atomic int g_full;                      /* the producer found its ring full */
static void *producer(void *arg) {
  uint64_t n = *(uint64_t *)arg;
  if (!cl_ring_claim()) return NULL;
  for (uint64_t id = 0; id < n;)
    if (put_id(id)) id++;
    else atomic_store(&g_full, 1);              /* full: wait for the drain, lose nothing */
  atomic_store(&g_prod_cap, cl_t_ring->cap);
  atomic_store(&g_prod_done, 1);
  return NULL;
}
TL_TEST(growth_while_the_drain_runs_loses_and_reorders_nothing) {
  cl_config_load();
  cl_cfg.buffer_bytes = 64u << 20;
  cl_cfg.rings_bytes = cl_cfg.buffer_bytes / 4 * 3;
  cl_cfg.ring_bytes = 16u << 10;                /* 512 slots: the producer outruns the drain */
  uint64_t n = 2000000;
  order_t o = {0};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, producer, &n) == 0, "producer");
  while (!atomic_load(&g_prod_done))            /* drain only a full ring: every pass grows it */
    if (atomic_exchange(&g_full, 0)) cl_rings_drain(order_sink, &o);
  pthread_join(t, NULL);
  for (int i = 0; i < 4; i++) cl_rings_drain(order_sink, &o);
  CHECK(o.bad == 0 && o.next_id == n, "%llu of %llu in order, %llu out of order", (unsigned long long)o.next_id,
        (unsigned long long)n, (unsigned long long)o.bad);
  uint64_t cap = atomic_load(&g_prod_cap);
  CHECK(cap >= 8192 && cap * CL_SLOT_BYTES <= CL_RING_MAX_BYTES, "grew from 512 slots within the cap: %llu", (unsigned long long)cap);
}

/* A thread that ends before it moves to its prepared successor: both rings go back to the
 * pool, and the next thread that grows gets that successor instead of new memory. */
static cl_ring *_Atomic g_filled;                 /* the ring fill_and_exit wrote */
static void *fill_and_exit(void *arg) {
  (void)arg;
  if (!cl_ring_claim()) return NULL;
  for (uint64_t id = 0; id < 600; id++) put_id(id);   /* more than a quarter of 2048 slots */
  atomic_store(&g_filled, cl_t_ring);
  return NULL;
}
TL_TEST(a_successor_never_moved_to_is_reused) {
  cl_config_load();
  cl_cfg.buffer_bytes = 64u << 20;
  cl_cfg.rings_bytes = cl_cfg.buffer_bytes / 4 * 3;
  cl_cfg.ring_bytes = 64u << 10;
  order_t o = {0};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, fill_and_exit, NULL) == 0, "thread");
  pthread_join(t, NULL);                          /* it ended: its ring is DEAD */
  cl_ring *r = atomic_load(&g_filled);
  REQUIRE(r && r->cap == 2048, "the thread's ring");
  o.next_id = 0;
  cl_rings_drain(order_sink, &o);                 /* drains it, prepares a successor, recycles both */
  CHECK(atomic_load(&r->state) == CL_RING_FREE && atomic_load(&r->next) == NULL, "the ended thread's ring is free");
  cl_ring *succ = NULL;
  for (int i = 0; i < cl_rings_count(); i++)
    if (cl_rings[i].cap == 8192 && atomic_load(&cl_rings[i].state) == CL_RING_FREE) succ = &cl_rings[i];
  REQUIRE(succ, "its successor is free too");
  int after = cl_rings_count();
  REQUIRE(pthread_create(&t, NULL, fill_and_exit, NULL) == 0, "thread 2");
  pthread_join(t, NULL);
  cl_rings_drain(order_sink, &o);
  CHECK(cl_rings_count() == after, "the second growth reused the free successor: %d rings, %d before", cl_rings_count(), after);
}

/* The timed calls' histogram: every duration falls in the bucket whose range holds it, and
 * the median lands in the middle sample's bucket. */
TL_TEST(sample_buckets_hold_their_durations) {
  for (uint64_t ns = 0; ns < 40000; ns += 1 + ns / 97) {
    unsigned b = cl_sample_bucket(ns);
    CHECK(b < CL_SAMPLE_BUCKETS, "%llu ns: bucket %u", (unsigned long long)ns, b);
    if (b + 1 < CL_SAMPLE_BUCKETS)
      CHECK(cl_sample_floor(b) <= ns && ns < cl_sample_floor(b + 1), "%llu ns in [%llu, %llu)", (unsigned long long)ns,
            (unsigned long long)cl_sample_floor(b), (unsigned long long)cl_sample_floor(b + 1));
    else CHECK(cl_sample_floor(b) <= ns, "%llu ns past the last floor", (unsigned long long)ns);
  }
  cl_ring_totals t;
  memset(&t, 0, sizeof t);
  for (int i = 0; i < 60; i++) t.hist[cl_sample_bucket(40)]++;     /* most calls ~40 ns */
  for (int i = 0; i < 40; i++) t.hist[cl_sample_bucket(2000000)]++; /* some interrupted for ms */
  uint64_t m = cl_rings_median_ns(&t);
  CHECK(m >= 36 && m <= 44, "median %llu ns, want about 40", (unsigned long long)m);
  memset(&t, 0, sizeof t);
  CHECK(cl_rings_median_ns(&t) == 0, "no samples, no median");
}

TL_MAIN("capture/ring")

/* ---- the hot path's KernelChStop fold (plugin/capture/hotpath.c) ---- */
typedef struct { cl_rec r[64]; int n; uint32_t serial; } rec_list;
/* This thread's records (serial set), or every record (0): earlier tests' threads may still be
 * handing theirs over. */
static void collect(void *arg, const cl_rec *recs, size_t n) {
  rec_list *l = arg;
  for (size_t i = 0; i < n; i += recs[i].nslots ? recs[i].nslots : 1)
    if (l->n < 64 && (!l->serial || CL_ID_SERIAL(recs[i].id) == l->serial)) l->r[l->n++] = recs[i];
}
static int rec_is(const cl_rec *r, unsigned kind, void *h, unsigned flags) {
  return r->kind == kind && r->id == (uint64_t)(uintptr_t)h && r->flags == flags;
}

static void *state_then_exit(void *arg) {
  cl_payload kp = {.kernel_ch = {.ptimer = 1000, .channel = 1}};
  void *h = cl_event_start(1, CL_EV_KERNEL_CH, 0, 0, &kp, sizeof kp.kernel_ch);
  cl_event_state(h, CL_ST_KERNEL_CH_STOP, 9000);
  *(void **)arg = h;
  return NULL;
}

TL_TEST(kernel_ch_stop_state_rides_in_its_stop) {
  cl_config_load();
  atomic_store(&cl_enabled, 1);
  atomic_store(&cl_capturing, 1);
  rec_list l = {.n = 0};
  cl_rings_drain(collect, &l);                       /* what earlier tests left */
  l.n = 0;
  cl_payload kp = {.kernel_ch = {.ptimer = 1000, .channel = 3}}, sp = {.proxy_step = {.step = 1}};
  /* NCCL's order: the state, then the stop, on the KernelCh's thread: one record for both */
  void *a = cl_event_start(1, CL_EV_KERNEL_CH, 0, 0, &kp, sizeof kp.kernel_ch);
  cl_event_state(a, CL_ST_KERNEL_CH_STOP, 5000);
  cl_event_stop(a);
  /* other states are records of their own */
  void *b = cl_event_start(1, CL_EV_PROXY_STEP, 0, 0, &sp, sizeof sp.proxy_step);
  cl_event_state(b, CL_ST_STEP_SEND_WAIT, 4096);
  cl_event_stop(b);
  /* anything else on the thread before the stop writes the waiting state out first, in order */
  void *c = cl_event_start(1, CL_EV_KERNEL_CH, 0, 0, &kp, sizeof kp.kernel_ch);
  cl_event_state(c, CL_ST_KERNEL_CH_STOP, 7000);
  void *d = cl_event_start(1, CL_EV_KERNEL_CH, 0, 0, &kp, sizeof kp.kernel_ch);
  cl_event_stop(c);
  cl_event_stop(d);
  l.serial = CL_ID_SERIAL((uint64_t)(uintptr_t)a);
  cl_rings_drain(collect, &l);
  if (l.n != 10)
    for (int i = 0; i < l.n; i++)
      fprintf(stderr, "  record %d: kind %u etype %u flags %u id %llx aux %u arg %llu\n", i, l.r[i].kind, l.r[i].etype,
              l.r[i].flags, (unsigned long long)l.r[i].id, l.r[i].aux, (unsigned long long)l.r[i].arg);
  REQUIRE(l.n == 10, "%d records, want 10", l.n);
  CHECK(rec_is(&l.r[0], CL_REC_START, a, 0), "a's start");
  CHECK(rec_is(&l.r[1], CL_REC_STOP, a, CL_F_STOP_KCH_STATE) && l.r[1].arg == 5000 &&
        l.r[1].aux <= l.r[1].ts - l.r[0].ts, "a's stop carries its state (arg %llu, aux %u)",
        (unsigned long long)l.r[1].arg, l.r[1].aux);
  CHECK(rec_is(&l.r[2], CL_REC_START, b, 0) && rec_is(&l.r[3], CL_REC_STATE, b, 0) && l.r[3].aux == CL_ST_STEP_SEND_WAIT &&
        l.r[3].arg == 4096 && rec_is(&l.r[4], CL_REC_STOP, b, 0), "b: start, state, stop");
  CHECK(rec_is(&l.r[5], CL_REC_START, c, 0) && rec_is(&l.r[6], CL_REC_STATE, c, 0) && l.r[6].aux == CL_ST_KERNEL_CH_STOP &&
        l.r[6].arg == 7000 && l.r[6].ts <= l.r[7].ts, "c's state written out before d's start");
  CHECK(rec_is(&l.r[7], CL_REC_START, d, 0) && rec_is(&l.r[8], CL_REC_STOP, c, 0) && rec_is(&l.r[9], CL_REC_STOP, d, 0),
        "then d's start, c's stop, d's stop");
  /* a thread that ends between the state and the stop leaves the state as its own record */
  pthread_t t;
  void *e = NULL;
  REQUIRE(pthread_create(&t, NULL, state_then_exit, &e) == 0, "thread");
  pthread_join(t, NULL);
  rec_list m = {.n = 0, .serial = CL_ID_SERIAL((uint64_t)(uintptr_t)e)};
  cl_rings_drain(collect, &m);
  CHECK(m.n == 2 && rec_is(&m.r[0], CL_REC_START, e, 0) && rec_is(&m.r[1], CL_REC_STATE, e, 0) &&
        m.r[1].aux == CL_ST_KERNEL_CH_STOP && m.r[1].arg == 9000, "an ended thread's waiting state: %d records", m.n);
  atomic_store(&cl_enabled, 0);
}

/* ---- a KernelCh held back to its stop when only a digest is written (hotpath.c) ---- */
typedef struct { cl_rec r[256][4]; int n; uint32_t serial; } whole_list;   /* whole records */
static void collect_whole(void *arg, const cl_rec *recs, size_t n) {
  whole_list *l = arg;
  for (size_t i = 0; i < n; i += recs[i].nslots ? recs[i].nslots : 1)
    if (l->n < 256 && (!l->serial || CL_ID_SERIAL(recs[i].id) == l->serial) && recs[i].nslots <= 4)
      memcpy(l->r[l->n++], &recs[i], recs[i].nslots * sizeof recs[i]);
}
/* The tail of span r (its second slot). */
static cl_kch_tail tail_of(const cl_rec *r) {
  cl_kch_tail t;
  memcpy(&t, r + 1, sizeof t);
  return t;
}
/* r is the span of h: START with CL_F_SPAN, two slots, a tail with the payload's channel and the
 * stop, carrying the KernelChStop state `st` (0: none). */
static int span_is(const cl_rec *r, void *h, unsigned channel, uint64_t st) {
  cl_kch_tail t = tail_of(r);
  return r->kind == CL_REC_START && r->nslots == 2 && r->etype == CL_EV_KERNEL_CH && (r->flags & CL_F_SPAN) &&
         r->id == (uint64_t)(uintptr_t)h && t.channel == channel && t.stop_ts >= r->ts &&
         (st ? (t.stop_flags & CL_F_STOP_KCH_STATE) && t.stop_arg == st : !(t.stop_flags & CL_F_STOP_KCH_STATE));
}
static void *held_then_exit(void *arg) {
  cl_payload kp = {.kernel_ch = {.ptimer = 1000, .channel = 2}};
  *(void **)arg = cl_event_start(1, CL_EV_KERNEL_CH, 0, 0, &kp, sizeof kp.kernel_ch);
  return NULL;
}

/* A KernelCh's start through the general entry (`fast` 0) or the shims' own (1), rank 5,
 * channel 3, timer 1000, parent 77. */
static void *kch_start(int fast) {
  cl_payload kp = {.rank = 5, .kernel_ch = {.ptimer = 1000, .channel = 3}};
  return fast ? cl_event_kch_start(1, 0, 77, 5, 3, 1000) : cl_event_start(1, CL_EV_KERNEL_CH, 0, 77, &kp, sizeof kp.kernel_ch);
}

static void held_one_record(int fast) {
  static whole_list l;
  l.n = 0;
  l.serial = 0;
  cl_rings_drain(collect_whole, &l);                 /* what earlier tests left */
  l.n = 0;
  cl_payload ph = {.kernel_phase = {.phase = 1}};
  void *a = kch_start(fast);
  cl_event_state(a, CL_ST_KERNEL_CH_STOP, 5000);
  cl_event_stop(a);                                  /* start, state and stop: one record */
  void *b = kch_start(fast);
  cl_event_stop(b);                                  /* no state: one record still */
  void *c = kch_start(fast);
  cl_event_state(c, CL_ST_STEP_SEND_WAIT, 64);       /* another state: the start goes out first */
  cl_event_stop(c);
  void *d = kch_start(fast);
  void *e = cl_event_start(1, CL_EV_KERNEL_PHASE, 0, (uint64_t)(uintptr_t)d, &ph, sizeof ph.kernel_phase);
  cl_event_stop(e);                                  /* a child: its parent's start goes first */
  cl_event_stop(d);
  void *f = cl_event_start(1, CL_EV_KERNEL_PHASE, 0, 0, &ph, sizeof ph.kernel_phase);
  cl_event_stop(f);                                  /* parent 0 names no held KernelCh */
  l.serial = CL_ID_SERIAL((uint64_t)(uintptr_t)a);
  cl_rings_drain(collect_whole, &l);
  REQUIRE(l.n == 11, "%d records, want 11", l.n);
  cl_kch_tail ta = tail_of(l.r[0]), tb = tail_of(l.r[1]);
  CHECK(span_is(l.r[0], a, 3, 5000) && l.r[0][0].arg == 77 && ta.ptimer == 1000,
        "a: one record with its parent, timer and folded state");
  CHECK(ta.stop_aux <= ta.stop_ts - l.r[0][0].ts, "a: the state's time before the stop");
  /* a held start reads no clock: it takes the time its KernelChStop state (else its stop) was seen */
  CHECK(l.r[0][0].ts && l.r[0][0].ts == ta.stop_ts - ta.stop_aux, "a: start %llu, state seen at %llu",
        (unsigned long long)l.r[0][0].ts, (unsigned long long)(ta.stop_ts - ta.stop_aux));
  CHECK(span_is(l.r[1], b, 3, 0), "b: one record, no state");
  CHECK(l.r[1][0].ts && l.r[1][0].ts == tb.stop_ts, "b: start %llu, stop %llu", (unsigned long long)l.r[1][0].ts,
        (unsigned long long)tb.stop_ts);
  CHECK(l.r[2][0].ts && l.r[2][0].ts <= l.r[3][0].ts, "c: a start written before its stop has a time of its own");
  CHECK(rec_is(l.r[2], CL_REC_START, c, 0) && l.r[2][0].nslots == 2 && rec_is(l.r[3], CL_REC_STATE, c, 0) &&
        rec_is(l.r[4], CL_REC_STOP, c, 0), "c: start, state, stop");
  const cl_start_rec *cs = (const cl_start_rec *)l.r[2];
  CHECK(cs->p.rank == 5 && cs->p.kernel_ch.ptimer == 1000 && cs->p.kernel_ch.channel == 3 && l.r[2][0].arg == 77 &&
        l.r[2][0].aux == 1, "c: the start written out whole (rank %d, timer %llu, channel %u)", cs->p.rank,
        (unsigned long long)cs->p.kernel_ch.ptimer, cs->p.kernel_ch.channel);
  CHECK(rec_is(l.r[5], CL_REC_START, d, 0) && rec_is(l.r[6], CL_REC_START, e, 0) && rec_is(l.r[7], CL_REC_STOP, e, 0) &&
        rec_is(l.r[8], CL_REC_STOP, d, 0), "d and its phase: d's start, e's start and stop, d's stop");
  CHECK(rec_is(l.r[9], CL_REC_START, f, 0) && rec_is(l.r[10], CL_REC_STOP, f, 0), "f alone");
  /* more open at once than the table holds: the oldest's start goes out, nothing is lost */
  void *h[CL_KCH_OPEN + 1];
  for (int i = 0; i <= CL_KCH_OPEN; i++) h[i] = kch_start(fast);
  for (int i = 0; i <= CL_KCH_OPEN; i++) cl_event_stop(h[i]);
  l.n = 0;
  cl_rings_drain(collect_whole, &l);
  REQUIRE(l.n == CL_KCH_OPEN + 2, "%d records, want %d", l.n, CL_KCH_OPEN + 2);
  CHECK(rec_is(l.r[0], CL_REC_START, h[0], 0) && rec_is(l.r[1], CL_REC_STOP, h[0], 0), "the oldest: start, stop");
  int spans = 0;
  for (int i = 1; i <= CL_KCH_OPEN; i++) spans += span_is(l.r[i + 1], h[i], 3, 0);
  CHECK(spans == CL_KCH_OPEN, "%d of %d spans", spans, CL_KCH_OPEN);
}

TL_TEST(kernel_ch_is_one_record_when_only_a_digest_is_written) {
  cl_config_load();
  atomic_store(&cl_enabled, 1);
  atomic_store(&cl_capturing, 1);
  atomic_store(&cl_digest_only, 1);
  held_one_record(0);
  held_one_record(1);
  static whole_list l;
  /* the shims' entry goes the general way when nothing is held: a START at once; a lost parent */
  atomic_store(&cl_digest_only, 0);
  void *x = cl_event_kch_start(1, 0, 77, 5, 3, 1000);
  void *y = cl_event_kch_start(1, 0, CL_ID_DROPPED | 9, 5, 3, 1000);
  atomic_store(&cl_digest_only, 1);
  l.n = 0;
  l.serial = CL_ID_SERIAL((uint64_t)(uintptr_t)x);
  cl_rings_drain(collect_whole, &l);
  const cl_start_rec *xs = (const cl_start_rec *)l.r[0];
  CHECK(l.n == 1 && rec_is(l.r[0], CL_REC_START, x, 0) && xs->p.rank == 5 && xs->p.kernel_ch.ptimer == 1000 &&
        xs->p.kernel_ch.channel == 3 && l.r[0][0].ts, "not held: %d records", l.n);
  CHECK((uintptr_t)y == (uintptr_t)CL_ID_DROPPED, "a KernelCh of a lost parent is lost with it");
  cl_event_stop(x);
  l.n = 0;
  cl_rings_drain(collect_whole, &l);
  /* a thread that ends with one held: its start is written at the exit */
  pthread_t t;
  void *g = NULL;
  REQUIRE(pthread_create(&t, NULL, held_then_exit, &g) == 0, "thread");
  pthread_join(t, NULL);
  static whole_list m;
  m.serial = CL_ID_SERIAL((uint64_t)(uintptr_t)g);
  cl_rings_drain(collect_whole, &m);
  CHECK(m.n == 1 && rec_is(m.r[0], CL_REC_START, g, 0) && ((const cl_start_rec *)m.r[0])->p.kernel_ch.channel == 2 &&
        m.r[0][0].ts, "an ended thread's held KernelCh: %d records, its start at %llu", m.n,
        (unsigned long long)(m.n ? m.r[0][0].ts : 0));
  /* a quiet handle (a Group nothing reads) records nothing */
  cl_event_stop((void *)(uintptr_t)CL_ID_QUIET);
  cl_event_state((void *)(uintptr_t)CL_ID_QUIET, CL_ST_STEP_SEND_WAIT, 1);
  l.n = 0;
  cl_rings_drain(collect_whole, &l);
  CHECK(l.n == 0, "%d records for a quiet handle", l.n);
  atomic_store(&cl_digest_only, 0);
  atomic_store(&cl_enabled, 0);
}

/* When KernelCh events are held to their stop (and Group events go quiet): a digest alone, no
 * detailed flight recorder (the default one keeps what the digest records), and an NCCL whose
 * KernelCh events stop (ABI v4+; v3's never do). */
TL_TEST(kernel_ch_held_only_for_a_digest_alone_and_abi_4_on) {
  cl_config_load();
  struct { unsigned output; int flight_s, light, abi, want; } c[] = {
    {CL_OUT_DIGEST, 0, 0, 5, 1}, {CL_OUT_DIGEST, 0, 0, 4, 1}, {CL_OUT_DIGEST, 0, 0, 3, 0}, {CL_OUT_DIGEST, 30, 0, 5, 0},
    {CL_OUT_DIGEST, 60, 1, 5, 1}, {CL_OUT_TRACE | CL_OUT_DIGEST, 0, 0, 5, 0}, {CL_OUT_TRACE, 0, 0, 6, 0}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    cl_cfg.output = c[i].output;
    cl_cfg.flight_s = c[i].flight_s;
    cl_cfg.flight_light = c[i].light;
    cl_gate_setup(c[i].abi);
    CHECK(atomic_load(&cl_digest_only) == c[i].want, "output %u, flight %d s%s, ABI v%d: held %d, want %d", c[i].output,
          c[i].flight_s, c[i].light ? " (the default, light)" : "", c[i].abi, atomic_load(&cl_digest_only), c[i].want);
  }
  atomic_store(&cl_digest_only, 0);
  cl_config_load();
}
