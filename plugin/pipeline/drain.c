/* drain.c: see drain.h. Never formats, never writes a file: rings -> staging at memory speed. */
#include "plugin/pipeline/drain.h"
#include "plugin/capture/ring.h"
#include "common/clock.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static pthread_t g_thr;
static _Atomic int g_stop;
static cl_stage *g_st;

static void to_stage(void *arg, const cl_rec *recs, size_t nslots) { cl_stage_append(arg, recs, nslots); }

static uint64_t drain_pass(cl_stage *st) { return st ? cl_rings_drain(to_stage, st) : 0; }

static void *drain_main(void *arg) {
  (void)arg;
  int idle_us = 50;
  while (!atomic_load(&g_stop)) {
    if (drain_pass(g_st)) { idle_us = 20; continue; }
    idle_us = idle_us < 2000 ? idle_us * 2 : 2000;
    struct timespec ts = {0, idle_us * 1000L};
    nanosleep(&ts, NULL);
  }
  drain_pass(g_st);                    /* everything committed before the stop */
  return NULL;
}

int cl_drain_start(cl_stage *st) {
  g_st = st;
  atomic_store(&g_stop, 0);
  return pthread_create(&g_thr, NULL, drain_main, NULL) == 0 ? 0 : -1;
}

int cl_drain_stop(int timeout_ms) {
  struct timespec dl = cl_deadline_ms(timeout_ms);
  atomic_store(&g_stop, 1);
  if (pthread_timedjoin_np(g_thr, NULL, &dl) == 0) return 0;
  pthread_detach(g_thr);
  return -1;
}
