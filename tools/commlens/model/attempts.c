/* attempts.c: see attempts.h. A process is what its files' headers say (host, boot, pid,
 * start); processes in order of start make one attempt until a rank comes back. Must never
 * trust a file name: only headers and dumps. Says nothing itself (the loader does). */
#include "tools/commlens/model/attempts.h"
#include "tools/commlens/base/util.h"
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *host, *boot;
  int pid;
  int64_t start, t;        /* its start (header), -1 not said; t: start, else its first dump, else INT64_MIN */
  int attempt;             /* -1: t not known (kept with the newest) */
  CL_VEC(int) ranks;
} proc;
typedef CL_VEC(proc) procs;

/* A dump's time (its commlensFlight at_us) in ns, INT64_MAX when it does not say. */
static int64_t dump_at_ns(const char *flight) {
  json_object *o = flight ? json_tokener_parse(flight) : NULL, *v;
  int64_t at = INT64_MAX;
  if (o && json_object_object_get_ex(o, "at_us", &v) && (json_object_is_type(v, json_type_double) ||
                                                         json_object_is_type(v, json_type_int))) {
    double us = json_object_get_double(v);
    if (us > 0 && us < 4e15) at = (int64_t)(us * 1e3);   /* a Unix time before 2096, as clock offsets are */
  }
  json_object_put(o);
  return at;
}

static int same(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }
static proc *proc_of(procs *ps, const cl_info *in) {
  for (size_t i = 0; i < ps->n; i++) {
    proc *p = &ps->a[i];
    if (p->pid == in->os_pid && p->start == in->start_ns && same(p->host, in->host) && same(p->boot, in->boot_id)) return p;
  }
  CL_PUSH(*ps, ((proc){ in->host, in->boot_id, in->os_pid, in->start_ns, INT64_MIN, -1, {0} }));
  return &ps->a[ps->n - 1];
}
static int cmp_t(const void *a, const void *b) {
  const proc *x = *(proc *const *)a, *y = *(proc *const *)b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Numbers the processes with a known time into attempts; returns how many there are. */
static int number_attempts(procs *ps) {
  proc **ord = cl_xmalloc((ps->n + 1) * sizeof *ord);
  size_t n = 0;
  for (size_t i = 0; i < ps->n; i++) if (ps->a[i].t != INT64_MIN) ord[n++] = &ps->a[i];
  qsort(ord, n, sizeof *ord, cmp_t);
  int a = 0, added;
  cl_strtab seen = {0};   /* the ranks of the current attempt */
  for (size_t i = 0; i < n; i++) {
    int back = 0;
    for (size_t k = 0; k < ord[i]->ranks.n; k++) {
      cl_strtab_id(&seen, &ord[i]->ranks.a[k], sizeof(int), &added);
      back |= !added;
    }
    if (back) {   /* a rank that already has a process in this attempt: the next one begins */
      a++;
      cl_strtab_free(&seen);
      for (size_t k = 0; k < ord[i]->ranks.n; k++) cl_strtab_id(&seen, &ord[i]->ranks.a[k], sizeof(int), &added);
    }
    ord[i]->attempt = a;
  }
  cl_strtab_free(&seen);
  free(ord);
  return n ? a + 1 : 0;
}

int cl_attempts_of(const cl_info *const *info, const int *rank, size_t n, int *attempt, cl_attempt **out) {
  procs ps = {0};
  for (size_t i = 0; i < n; i++) {
    proc *p = proc_of(&ps, info[i]);
    size_t k = 0;
    while (k < p->ranks.n && p->ranks.a[k] != rank[i]) k++;
    if (k == p->ranks.n) CL_PUSH(p->ranks, rank[i]);   /* a process's ranks, each once */
    int64_t t = info[i]->start_ns >= 0 ? info[i]->start_ns : dump_at_ns(info[i]->flight);
    if (t != INT64_MAX && (p->t == INT64_MIN || t < p->t)) p->t = t;
  }
  int na = number_attempts(&ps);
  cl_attempt *at = cl_xcalloc((size_t)na + 1, sizeof *at);
  for (int a = 0; a < na; a++) at[a].start_ns = INT64_MAX;
  for (size_t i = 0; i < ps.n; i++) {
    int a = ps.a[i].attempt;
    if (a < 0) continue;
    at[a].nproc++;
    if (ps.a[i].t < at[a].start_ns) at[a].start_ns = ps.a[i].t;
  }
  for (size_t i = 0; i < n; i++) {
    int a = attempt[i] = proc_of(&ps, info[i])->attempt;   /* found: the vector does not grow */
    if (a < 0) continue;
    at[a].nfiles++;
    const char *fl = info[i]->flight;
    if (fl) { at[a].ndumps++; at[a].nhang += strstr(fl, "\"trigger\":\"hang\"") != NULL; }
  }
  for (size_t i = 0; i < ps.n; i++) free(ps.a[i].ranks.a);
  free(ps.a);
  *out = at;
  return na;
}
