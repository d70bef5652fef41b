/* pause.h: the pause of a writer thread (drain, format) between two passes, cut short by its
 * stop. The pauses are long (up to 10 and 50 ms: the waking is most of those threads' cost at a
 * few hundred collectives a second), and the job's exit waits for both threads to end: slept
 * out, each stop would add a whole pause to it. On the monotonic clock: a step of the wall
 * clock neither stretches nor skips a pause. Its deadline is read from the kernel
 * (cl_mono_kernel): under commlens-replay --virtual-clock, a deadline taken from clock_gettime
 * was already past, and both threads spun (15 s of system time for a 9 s replay). */
#ifndef COMMLENS_PAUSE_H
#define COMMLENS_PAUSE_H
#include "common/clock.h"
#include <pthread.h>
#include <time.h>

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int woken;            /* set by cl_pause_wake until the next cl_pause_init */
} cl_pause;

/* Before the thread starts (again): no thread may be in cl_pause_us. */
static inline void cl_pause_init(cl_pause *p) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, &a);
  pthread_condattr_destroy(&a);
  p->woken = 0;
}

/* Waits `us` microseconds (0 < us < 1 s), or less once cl_pause_wake is called. */
static inline void cl_pause_us(cl_pause *p, long us) {
  struct timespec dl;
  cl_mono_kernel(&dl);
  dl.tv_nsec += us * 1000L;
  if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
  pthread_mutex_lock(&p->mu);
  while (!p->woken && pthread_cond_timedwait(&p->cv, &p->mu, &dl) == 0) { /* spurious: wait on */ }
  pthread_mutex_unlock(&p->mu);
}

/* Ends the thread's pause now, and every later one. */
static inline void cl_pause_wake(cl_pause *p) {
  pthread_mutex_lock(&p->mu);
  p->woken = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}
#endif
