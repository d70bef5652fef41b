/* par.c: see par.h. Owns the CLI's worker threads for passes cut by index; must never share a
 * result between parts (each part writes its own indices or its own slot). */
#include "tools/commlens/base/par.h"
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

typedef struct {
  void (*fn)(size_t, size_t, int, void *); void *arg;
  size_t lo, hi; int part;
} par_job;

static void *run_part(void *p) {
  par_job *j = p;
  j->fn(j->lo, j->hi, j->part, j->arg);
  return NULL;
}

int cl_par_parts(size_t n, int threads, void (*fn)(size_t lo, size_t hi, int part, void *arg), void *arg) {
  if (!n) return 0;
  size_t parts = threads < 1 ? 1 : threads > CL_PAR_MAX ? CL_PAR_MAX : (size_t)threads;
  if (parts > n) parts = n;
  par_job job[CL_PAR_MAX];
  pthread_t th[CL_PAR_MAX];
  int started[CL_PAR_MAX] = {0};
  for (size_t p = 0; p < parts; p++)
    job[p] = (par_job){ fn, arg, n * p / parts, n * (p + 1) / parts, (int)p };
  for (size_t p = 1; p < parts; p++) started[p] = pthread_create(&th[p], NULL, run_part, &job[p]) == 0;
  run_part(&job[0]);
  for (size_t p = 1; p < parts; p++) {
    if (started[p]) pthread_join(th[p], NULL);
    else run_part(&job[p]);
  }
  return (int)parts;
}

int cl_par_threads(int requested) {
  int n = requested;
  if (n <= 0) {
    cpu_set_t set;
    n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  }
  return n < 1 ? 1 : n > CL_PAR_MAX ? CL_PAR_MAX : n;
}
