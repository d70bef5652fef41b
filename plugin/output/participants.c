/* participants.c: see participants.h. A small array searched linearly (a process drives a
 * handful of GPUs); the registry is read through the lookups it is given, never written. */
#include "plugin/output/participants.h"
#include "common/config.h"
#include "common/loghist.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cl_parts {
  cl_parts_deps deps;
  cl_part *p[CL_MAX_PARTS];
  size_t n;
  uint64_t no_comm;          /* devices (< 64) no communicator used when the registry held... */
  uint32_t no_comm_at;       /* ...this many: a compute-only GPU's kernels do not rescan it */
};

cl_parts *cl_parts_new(const cl_parts_deps *deps) {
  cl_parts *ps = calloc(1, sizeof *ps);
  if (ps) ps->deps = *deps;
  return ps;
}

void cl_parts_free(cl_parts *ps) {
  if (!ps) return;
  for (size_t i = 0; i < ps->n; i++) {
    ct_free(ps->p[i]->ct);
    cl_summary_free(ps->p[i]->sum);
    cl_digest_free(ps->p[i]->dg);
    free(ps->p[i]);
  }
  free(ps);
}

size_t cl_parts_count(const cl_parts *ps) { return ps ? ps->n : 0; }
cl_part *cl_parts_at(cl_parts *ps, size_t i) { return i < ps->n ? ps->p[i] : NULL; }

/* The devices registered communicators use, sorted, distinct (at most `max`). */
static int comm_devices(const cl_parts *ps, int *devs, int max) {
  int n = 0;
  uint32_t nc = ps->deps.comm_count();
  cl_comm_info ci;
  for (uint32_t s = 1; s <= nc; s++) {
    if (ps->deps.comm_lookup(s, &ci) != 0 || ci.cuda_dev < 0) continue;
    int k = 0;
    while (k < n && devs[k] < ci.cuda_dev) k++;
    if (k < n && devs[k] == ci.cuda_dev) continue;
    if (n == max) continue;
    memmove(&devs[k + 1], &devs[k], (size_t)(n - k) * sizeof *devs);
    devs[k] = ci.cuda_dev;
    n++;
  }
  return n;
}

/* The GPU's rank in the largest communicator on device `dev` that says its rank, -1 if none;
 * *nranks that communicator's size. */
static int largest_comm_rank(const cl_parts *ps, int dev, int *nranks) {
  uint32_t nc = ps->deps.comm_count();
  cl_comm_info ci;
  int rank = -1;
  *nranks = 0;
  for (uint32_t s = 1; s <= nc; s++) {
    if (ps->deps.comm_lookup(s, &ci) != 0 || ci.cuda_dev != dev || ci.d.rank < 0) continue;
    if (ci.d.nranks > *nranks) { *nranks = ci.d.nranks; rank = ci.d.rank; }
  }
  return rank;
}

void cl_parts_settle_rank(cl_parts *ps, cl_part *p) {
  int devs[CL_MAX_PARTS];
  int ndev = comm_devices(ps, devs, CL_MAX_PARTS), place = 0;
  while (place < ndev && devs[place] != p->dev) place++;
  if (place == ndev) place = 0;
  int nranks, crank = largest_comm_rank(ps, p->dev, &nranks);
  const cl_parts_deps *d = &ps->deps;
  p->comm_rank_max = 0;
  if (d->forced_rank >= 0) {
    p->rank = d->forced_rank + place;
    snprintf(p->rank_source, sizeof p->rank_source, "COMMLENS_RANK");
  } else if (ndev <= 1 && d->env_rank >= 0) {
    p->rank = d->env_rank;
    snprintf(p->rank_source, sizeof p->rank_source, "%s", d->env_source);
  } else if (crank >= 0) {
    p->rank = crank;
    p->comm_rank_max = nranks;
    snprintf(p->rank_source, sizeof p->rank_source, "comm");
  } else if (d->env_rank >= 0) {
    p->rank = d->env_rank + place;
    snprintf(p->rank_source, sizeof p->rank_source, "%s+gpu", d->env_source);
  } else {
    p->rank = d->os_pid;
    snprintf(p->rank_source, sizeof p->rank_source, "pid");
  }
}

static cl_part *create(cl_parts *ps, int dev) {
  if (ps->n == CL_MAX_PARTS) return ps->p[ps->n - 1];
  cl_part *p = calloc(1, sizeof *p);
  if (!p) return ps->n ? ps->p[0] : NULL;
  p->index = (int)ps->n;
  p->dev = dev;
  cl_parts_settle_rank(ps, p);
  p->ct = ct_new(p->rank, ps->deps.epoch_offset_ns);
  p->sum = cl_summary_new();
  /* 0: the settings were never loaded (a unit test that builds participants itself): the trace */
  unsigned out = ps->deps.output ? ps->deps.output : cl_cfg.output ? cl_cfg.output : CL_OUT_TRACE;
  p->trace = (out & CL_OUT_TRACE) != 0;
  p->dg = out & CL_OUT_DIGEST ? cl_digest_new() : NULL;
  if (!p->ct || !p->sum || (!p->dg && (out & CL_OUT_DIGEST))) {
    cl_digest_free(p->dg);
    ct_free(p->ct);
    cl_summary_free(p->sum);
    free(p);
    return ps->n ? ps->p[0] : NULL;
  }
  ps->p[ps->n++] = p;
  return p;
}

static cl_part *find(cl_parts *ps, int dev) {
  for (size_t i = 0; i < ps->n; i++)
    if (ps->p[i]->dev == dev) return ps->p[i];
  return NULL;
}

cl_part *cl_parts_of_comm(cl_parts *ps, uint32_t serial) {
  cl_comm_info ci;
  if (!serial || ps->deps.comm_lookup(serial, &ci) != 0) return cl_parts_of_dev(ps, -1);
  cl_part *p = find(ps, ci.cuda_dev);
  return p ? p : create(ps, ci.cuda_dev);
}

void cl_parts_discover(cl_parts *ps) {
  int devs[CL_MAX_PARTS];
  int ndev = comm_devices(ps, devs, CL_MAX_PARTS);
  for (int i = 0; i < ndev; i++)
    if (!find(ps, devs[i])) create(ps, devs[i]);
  if (!ps->n) {   /* communicators with no known device: one participant for the process */
    uint32_t nc = ps->deps.comm_count();
    if (nc) cl_parts_of_comm(ps, 1);
  }
}

cl_part *cl_parts_of_dev(cl_parts *ps, int dev) {
  cl_part *p = find(ps, dev);
  if (p) return p;
  uint32_t nc = ps->deps.comm_count();
  int known_none = dev >= 0 && dev < 64 && (ps->no_comm >> dev & 1) && ps->no_comm_at == nc;
  if (dev >= 0 && !known_none) {
    int devs[CL_MAX_PARTS];
    int ndev = comm_devices(ps, devs, CL_MAX_PARTS);
    for (int i = 0; i < ndev; i++)
      if (devs[i] == dev) return create(ps, dev);
    if (ps->no_comm_at != nc) { ps->no_comm = 0; ps->no_comm_at = nc; }
    if (dev < 64) ps->no_comm |= 1ull << dev;
  }
  return ps->n ? ps->p[0] : create(ps, -1);
}

size_t cl_parts_pending_bytes(cl_parts *ps) {
  size_t b = 0;
  for (size_t i = 0; i < ps->n; i++) b += ct_body(ps->p[i]->ct)->len;
  return b;
}

void cl_part_top_add(cl_part *p, const char *func, uint64_t seq, uint64_t comm, uint64_t exposed, uint64_t dur) {
  int k = CL_NTOP - 1;
  if (!exposed || exposed <= p->top[k].exposed) return;
  while (k > 0 && p->top[k - 1].exposed < exposed) { p->top[k] = p->top[k - 1]; k--; }
  p->top[k] = (cl_top){func, seq, comm, exposed, dur};
}

void cl_part_spread_add(cl_part *p, uint64_t start_spread, uint64_t end_spread) {
  p->ch_spread_hist[cl_loghist_bucket(start_spread > end_spread ? start_spread : end_spread, CL_SPREAD_BUCKETS)]++;
}
