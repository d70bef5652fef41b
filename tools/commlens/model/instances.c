/* instances.c: matches collective instances (comm, func, seq, occurrence) across ranks; the
 * clock alignment of those instances is the analyse stage's (analyse/clock_align.c). The
 * occurrence tells apart instances that share a seq on one rank: NCCL numbers CUDA-graph
 * replays all 0 (without KernelCh), and every rank replays its graphs in the same order, so the
 * k-th (comm, func, seq) on one rank is the k-th on every other. */
#include "tools/commlens/model/load.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint64_t comm; int64_t seq; uint32_t id; int32_t func; uint32_t occ; } inst_key;

static size_t key_hash(uint64_t comm, int64_t seq, uint16_t func, uint32_t occ, size_t cap) {
  return (size_t)cl_hash64(comm ^ ((uint64_t)seq * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)func << 52) ^
                           ((uint64_t)occ << 32)) & (cap - 1);
}

/* Numbers each rank's repeats of one (comm, func, seq): 0 for the first, 1 for the next... */
static void number_occurrences(cl_rank *r, uint32_t *occ) {
  size_t cap = 1024;
  while (cap < r->colls.n * 2) cap *= 2;
  inst_key *h = cl_xmalloc(cap * sizeof *h);
  for (size_t i = 0; i < cap; i++) h[i].id = UINT32_MAX;
  for (size_t k = 0; k < r->colls.n; k++) {
    const cl_coll *c = &r->colls.a[k];
    occ[k] = 0;
    if (c->p2p || c->seq < 0) continue;
    size_t s = key_hash(c->comm, c->seq, c->func, 0, cap);
    while (h[s].id != UINT32_MAX && !(h[s].comm == c->comm && h[s].seq == c->seq && h[s].func == c->func))
      s = (s + 1) & (cap - 1);
    if (h[s].id == UINT32_MAX) h[s] = (inst_key){c->comm, c->seq, 0, c->func, 0};
    occ[k] = h[s].id++;
  }
  free(h);
}

/* The instance table at twice its size, every key placed again (the table holds one key per
 * instance: sized by the members, it took 256 MiB at 8,192 ranks for 300 instances). */
static inst_key *grow_keys(inst_key *h, size_t *cap) {
  size_t nc = *cap * 2;
  inst_key *g = cl_xmalloc(nc * sizeof *g);
  for (size_t i = 0; i < nc; i++) g[i].id = UINT32_MAX;
  for (size_t i = 0; i < *cap; i++) {
    if (h[i].id == UINT32_MAX) continue;
    size_t s = key_hash(h[i].comm, h[i].seq, (uint16_t)h[i].func, h[i].occ, nc);
    while (g[s].id != UINT32_MAX) s = (s + 1) & (nc - 1);
    g[s] = h[i];
  }
  free(h); *cap = nc;
  return g;
}

void cl_job_instances(cl_job *job) {
  size_t cap = 1024;   /* grows with the instances, not the members (grow_keys) */
  inst_key *h = cl_xmalloc(cap * sizeof *h);
  for (size_t i = 0; i < cap; i++) h[i].id = UINT32_MAX;
  CL_VEC(uint32_t) last_rank = {0};     /* per instance: last rank index that joined */
  for (int ri = 0; ri < job->n; ri++) {
    cl_rank *r = job->r[ri];
    uint32_t *occ = cl_xmalloc((r->colls.n ? r->colls.n : 1) * sizeof *occ);
    number_occurrences(r, occ);
    for (size_t k = 0; k < r->colls.n; k++) {
      cl_coll *c = &r->colls.a[k];
      c->inst = UINT32_MAX;
      if (c->p2p || c->seq < 0) continue;
      size_t s = key_hash(c->comm, c->seq, c->func, occ[k], cap);
      while (h[s].id != UINT32_MAX &&
             !(h[s].comm == c->comm && h[s].seq == c->seq && h[s].func == c->func && h[s].occ == occ[k]))
        s = (s + 1) & (cap - 1);
      if (h[s].id == UINT32_MAX && 2 * (job->inst.n + 1) > cap) {
        h = grow_keys(h, &cap);
        for (s = key_hash(c->comm, c->seq, c->func, occ[k], cap); h[s].id != UINT32_MAX; s = (s + 1) & (cap - 1)) {}
      }
      if (h[s].id == UINT32_MAX) {
        h[s] = (inst_key){ c->comm, c->seq, (uint32_t)job->inst.n, c->func, occ[k] };
        CL_PUSH(job->inst, ((cl_inst){ c->comm, c->seq, c->bytes, c->func, c->nranks, 0, 0 }));
        CL_PUSH(last_rank, UINT32_MAX);
      }
      uint32_t id = h[s].id;
      if (last_rank.a[id] == (uint32_t)ri) continue;   /* cannot happen (occurrences differ): safety */
      last_rank.a[id] = (uint32_t)ri;
      c->inst = id; job->inst.a[id].count++;
    }
    free(occ);
  }
  free(h); free(last_rank.a);
  uint32_t off = 0;
  for (size_t i = 0; i < job->inst.n; i++) { job->inst.a[i].first = off; off += job->inst.a[i].count; job->inst.a[i].count = 0; }
  job->mem.a = cl_xmalloc((off ? off : 1) * sizeof(cl_member)); job->mem.n = job->mem.cap = off;
  for (int ri = 0; ri < job->n; ri++) {
    cl_rank *r = job->r[ri];
    for (size_t k = 0; k < r->colls.n; k++) {
      uint32_t id = r->colls.a[k].inst;
      if (id == UINT32_MAX) continue;
      cl_inst *in = &job->inst.a[id];
      r->colls.a[k].mem = in->first + in->count;
      job->mem.a[in->first + in->count++] = (cl_member){ (uint32_t)ri, (uint32_t)k };
    }
  }
}
