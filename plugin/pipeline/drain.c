/* drain.c: see drain.h. Never formats, never writes a file: rings -> staging at memory speed. */
#include "plugin/pipeline/drain.h"
#include "plugin/pipeline/pause.h"
#include "plugin/capture/ring.h"
#include "common/clock.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static pthread_t g_thr;
static _Atomic int g_stop;
static cl_pause g_pause;
static cl_stage *g_st;

static void to_stage(void *arg, const cl_rec *recs, size_t nslots) { cl_stage_append(arg, recs, nslots); }

static uint64_t drain_pass(cl_stage *st) { return st ? cl_rings_drain(to_stage, st) : 0; }

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
    uint64_t got = drain_pass(g_st);
    if (got >= DRAIN_BATCH) { idle_us = 20; continue; }
    idle_us = idle_us < DRAIN_MAX_US ? idle_us * 2 : DRAIN_MAX_US;
    cl_pause_us(&g_pause, idle_us);
  }
  drain_pass(g_st);                    /* everything committed before the stop */
  return NULL;
}

int cl_drain_start(cl_stage *st) {
  g_st = st;
  atomic_store(&g_stop, 0);
  cl_pause_init(&g_pause);
  return pthread_create(&g_thr, NULL, drain_main, NULL) == 0 ? 0 : -1;
}

int cl_drain_stop(int timeout_ms) {
  struct timespec dl = cl_deadline_ms(timeout_ms);
  atomic_store(&g_stop, 1);
  cl_pause_wake(&g_pause);
  if (pthread_timedjoin_np(g_thr, NULL, &dl) == 0) return 0;
  pthread_detach(g_thr);
  return -1;
}
