/* drain.c: see drain.h. Never formats, never writes a file: rings -> staging at memory speed,
 * when the format thread has not read them itself lately. */
#include "plugin/pipeline/drain.h"
#include "plugin/pipeline/pause.h"
#include "plugin/capture/ring.h"
#include "common/clock.h"
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

static pthread_t g_thr;
static _Atomic int g_stop;
static cl_pause g_pause;
static cl_stage *g_st;
/* The rings have one consumer at a time: this thread or the format thread (cl_drain_direct). */
static pthread_mutex_t g_consume = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_direct_ns;   /* when the format thread last read them (cl_mono_kernel_ns:
                                          not cl_now, which a replay's virtual clock stops) */

/* The format thread reads the rings itself every 20 to 50 ms (format.c); one that has not for
 * this long is busy (a long write, a CUPTI flush) or starved, and the drain copies again. */
#define DIRECT_FRESH_NS 100000000ull
/* A ring this full (its capacity >> RING_FILL_SHIFT) is copied at once, whoever reads it next. */
#define RING_FILL_SHIFT 4

static void to_stage(void *arg, const cl_rec *recs, size_t nslots) { cl_stage_append(arg, recs, nslots); }

/* `force`: copy whatever the rings hold (the last pass); else only when the format thread has
 * not read them lately or a ring fills, and never while it is reading them. */
static uint64_t drain_pass(cl_stage *st, int force) {
  if (!st) return 0;
  if (!force && cl_mono_kernel_ns() - atomic_load(&g_direct_ns) < DIRECT_FRESH_NS && !cl_rings_filling(RING_FILL_SHIFT))
    return 0;
  if (force) pthread_mutex_lock(&g_consume);
  else if (pthread_mutex_trylock(&g_consume) != 0) return 0;
  uint64_t n = cl_rings_drain(to_stage, st);
  pthread_mutex_unlock(&g_consume);
  return n;
}

typedef struct { cl_rec *buf; size_t n; } local_copy;
static void to_local(void *arg, const cl_rec *recs, size_t nslots) {
  local_copy *l = arg;
  memcpy(l->buf + l->n, recs, nslots * sizeof *recs);
  l->n += nslots;
}

size_t cl_drain_direct(cl_stage *st, cl_rec *buf, size_t cap) {
  if (!st || !cl_stage_empty(st)) return 0;
  if (pthread_mutex_trylock(&g_consume) != 0) return 0;
  local_copy l = {buf, 0};
  /* looked at again under the lock: a copy that was under way is complete now, and what it
   * staged must be taken first (a thread's records keep their order) */
  if (cl_stage_empty(st)) {
    cl_rings_drain_max(to_local, &l, cap);
    atomic_store(&g_direct_ns, cl_mono_kernel_ns());
  }
  pthread_mutex_unlock(&g_consume);
  return l.n;
}

/* A pass that moves this many records means more are coming fast: the next pass starts at once,
 * and the pause after a smaller one is short again. Fewer, and the pause doubles up to
 * DRAIN_MAX_US: a job whose collectives trickle in (a few per millisecond) was drained every
 * 20 to 40 us, a wake-up each time, for a record or two; at 2 ms, the wake-ups were still most
 * of the plugin threads' CPU at a few hundred collectives a second (bench/replay_cost.c, evenly
 * paced streams; in a VM, arming a timer traps). The rings hold tens of milliseconds of records
 * at any rate a thread can make, and grow when found a quarter full (ring.h). */
#define DRAIN_BATCH 256
#define DRAIN_MAX_US 10000

static void *drain_main(void *arg) {
  (void)arg;
  int idle_us = 50;
  while (!atomic_load(&g_stop)) {
    uint64_t got = drain_pass(g_st, 0);
    if (got >= DRAIN_BATCH) { idle_us = 20; continue; }
    idle_us = idle_us < DRAIN_MAX_US ? idle_us * 2 : DRAIN_MAX_US;
    cl_pause_us(&g_pause, idle_us);
  }
  drain_pass(g_st, 1);                 /* everything committed before the stop */
  return NULL;
}

int cl_drain_start(cl_stage *st) {
  g_st = st;
  atomic_store(&g_stop, 0);
  atomic_store(&g_direct_ns, 0);
  cl_pause_init(&g_pause);
  return pthread_create(&g_thr, NULL, drain_main, NULL) == 0 ? 0 : -1;
}

void cl_drain_after_fork_child(void) {
  /* A fork while the parent's format thread or drain copied hands the child a held lock that no
   * thread of the child will release: its rings would never be read. */
  pthread_mutex_init(&g_consume, NULL);
  atomic_store(&g_direct_ns, 0);
  g_st = NULL;
}

int cl_drain_stop(int timeout_ms) {
  struct timespec dl = cl_deadline_ms(timeout_ms);
  atomic_store(&g_stop, 1);
  cl_pause_wake(&g_pause);
  if (pthread_timedjoin_np(g_thr, NULL, &dl) == 0) return 0;
  pthread_detach(g_thr);
  return -1;
}
