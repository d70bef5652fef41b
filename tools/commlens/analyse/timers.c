/* timers.c: see timers.h. Ranks are compared 64 instances at a time (their marks start at whole
 * words); only a word with a mixed instance is looked at rank by rank. */
#include "tools/commlens/analyse/timers.h"
#include <stdlib.h>
#include <string.h>

/* A rank's word `w` of (comm, func) on the common grid (word 0 at seq 0): its seen and left-out
 * bits, 0 where it has none. */
static void word_of(const cl_tmark *m, int64_t w, uint64_t *seen, uint64_t *out) {
  int64_t k = m ? w - m->base / 64 : -1;
  if (!m || k < 0 || (uint64_t)k >= m->words) { *seen = *out = 0; return; }
  *seen = m->seen[k];
  *out = m->out[k] & m->seen[k];
}

/* Instance by instance, in a word with mixed ones: who is not with most ranks. */
static void blame_word(const cl_job *job, const cl_tmark **ms, int64_t w, uint64_t mixed, cl_timers_an *t) {
  for (int b = 0; b < 64; b++) {
    if (!(mixed >> b & 1)) continue;
    int present = 0, out = 0;
    for (int i = 0; i < job->n; i++) {
      uint64_t s, o;
      word_of(ms[i], w, &s, &o);
      present += (int)(s >> b & 1);
      out += (int)(o >> b & 1);
    }
    int odd = 2 * out > present ? 0 : 1;   /* the minority's value (a tie: the ranks that left it out) */
    for (int i = 0; i < job->n; i++) {
      uint64_t s, o;
      word_of(ms[i], w, &s, &o);
      if ((s >> b & 1) && (int)(o >> b & 1) == odd) t->differ[i]++;
    }
  }
}

/* One (comm, func) over every rank. */
static void check_key(const cl_job *job, uint64_t comm, int32_t func, const cl_tmark **ms, cl_timers_an *t) {
  int64_t lo = INT64_MAX, hi = 0;
  for (int i = 0; i < job->n; i++) {
    ms[i] = cl_tmarks_find(&job->r[i]->tmarks, comm, func);
    if (!ms[i]) continue;
    if (ms[i]->base / 64 < lo) lo = ms[i]->base / 64;
    if ((int64_t)(ms[i]->base / 64 + (int64_t)ms[i]->words) > hi) hi = ms[i]->base / 64 + (int64_t)ms[i]->words;
  }
  for (int64_t w = lo; w < hi; w++) {
    uint64_t once = 0, twice = 0, any_out = 0, any_timed = 0;
    for (int i = 0; i < job->n; i++) {
      uint64_t s, o;
      word_of(ms[i], w, &s, &o);
      twice |= once & s;
      once |= s;
      any_out |= o;
      any_timed |= s & ~o;
    }
    uint64_t mixed = twice & any_out & any_timed;
    t->compared += __builtin_popcountll(twice);
    t->timed_all += __builtin_popcountll(twice & ~any_out);
    t->out_all += __builtin_popcountll(twice & ~any_timed);
    t->mixed += __builtin_popcountll(mixed);
    if (mixed) blame_word(job, ms, w, mixed, t);
  }
}

void cl_timers_check(const cl_job *job, cl_timers_an *t) {
  memset(t, 0, sizeof *t);
  t->differ = cl_xcalloc((size_t)(job->n ? job->n : 1), sizeof *t->differ);
  for (int i = 0; i < job->n; i++) {
    t->n_seen += job->r[i]->tmarks.n_seen;
    t->n_out += job->r[i]->tmarks.n_out;
    t->n_over += job->r[i]->tmarks.n_over;
  }
  t->sampled = t->n_out > 0;
  if (!t->sampled) return;
  const cl_tmark **ms = cl_xcalloc((size_t)job->n, sizeof *ms);
  CL_VEC(cl_tmark) keys = {0};       /* every (comm, func) once (its comm and func only) */
  for (int i = 0; i < job->n; i++)
    for (size_t k = 0; k < job->r[i]->tmarks.n; k++) {
      const cl_tmark *m = &job->r[i]->tmarks.m[k];
      size_t j = 0;
      while (j < keys.n && !(keys.a[j].comm == m->comm && keys.a[j].func == m->func)) j++;
      if (j == keys.n) CL_PUSH(keys, ((cl_tmark){.comm = m->comm, .func = m->func}));
    }
  for (size_t j = 0; j < keys.n; j++) check_key(job, keys.a[j].comm, keys.a[j].func, ms, t);
  free(keys.a);
  free(ms);
}

void cl_timers_an_free(cl_timers_an *t) {
  free(t->differ);
  memset(t, 0, sizeof *t);
}
