/* gpu_share.c: see gpu_share.h. Owns grouping ranks by (host, boot id, clock id, device), the
 * gaps between their GPU starts that confirm a time-shared GPU, and the slice. Reads the loaded
 * job; never touches files. */
#include "tools/commlens/analyse/gpu_share.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *nz(const char *s) { return s ? s : ""; }
static const cl_job *g_job;
/* One host boot (the host name alone where no boot id was recorded, as the clock model
 * groups), one clock id, one device number. */
static int same_gpu(const cl_rank *a, const cl_rank *b) {
  return a->device >= 0 && a->device == b->device && a->info.host && a->info.host[0] && b->info.host &&
         !strcmp(a->info.host, b->info.host) && !strcmp(nz(a->info.boot_id), nz(b->info.boot_id)) &&
         !strcmp(nz(a->info.clock_id), nz(b->info.clock_id));
}
static int cmp_gpu(const void *x, const void *y) {
  const cl_rank *a = g_job->r[*(const int *)x], *b = g_job->r[*(const int *)y];
  int c = strcmp(nz(a->info.host), nz(b->info.host));
  if (!c) c = strcmp(nz(a->info.boot_id), nz(b->info.boot_id));
  if (!c) c = strcmp(nz(a->info.clock_id), nz(b->info.clock_id));
  if (!c) c = (a->device > b->device) - (a->device < b->device);
  return c ? c : *(const int *)x - *(const int *)y;
}
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Candidate groups: group[ri] = its group (-1: alone), returns the number of groups. */
static int group_ranks(const cl_job *job, int *group, int *size) {
  int n = job->n, ng = 0, *ord = cl_xmalloc(((size_t)n + 1) * sizeof *ord);
  for (int i = 0; i < n; i++) { ord[i] = i; group[i] = -1; }
  g_job = job;
  qsort(ord, (size_t)n, sizeof *ord, cmp_gpu);
  for (int a = 0, e; a < n; a = e) {
    for (e = a + 1; e < n && same_gpu(job->r[ord[a]], job->r[ord[e]]); e++) {}
    if (e - a < 2) continue;
    for (int j = a; j < e; j++) group[ord[j]] = ng;
    size[ng++] = e - a;
  }
  free(ord);
  return ng;
}

void cl_gpu_share_find(const cl_job *job, cl_gpu_share *s) {
  memset(s, 0, sizeof *s);
  s->slice_ns = CL_GPU_SLICE_NS;
  s->k = cl_xmalloc(((size_t)job->n + 1) * sizeof *s->k);
  for (int i = 0; i < job->n; i++) s->k[i] = 1;
  int *group = cl_xmalloc(((size_t)job->n + 1) * sizeof *group), *size = cl_xcalloc((size_t)job->n + 1, sizeof *size);
  int ng = group_ranks(job, group, size);
  if (!ng) { free(group); free(size); return; }
  /* per group: the gaps between consecutive GPU starts of its members in one instance */
  int64_t *small = cl_xcalloc((size_t)ng, sizeof *small), *gaps = cl_xcalloc((size_t)ng, sizeof *gaps);
  CL_VEC(int64_t) near = {0};    /* gaps near one slice, and their group */
  CL_VEC(int) near_g = {0};
  int64_t *t = cl_xmalloc(((size_t)job->n + 1) * sizeof *t);
  int *gm = cl_xmalloc(((size_t)job->n + 1) * sizeof *gm);
  for (size_t k = 0; k < job->inst.n; k++) {
    const cl_inst *in = &job->inst.a[k];
    for (int g = 0; g < ng; g++) {
      size_t n = 0;
      for (uint32_t j = 0; j < in->count; j++) {
        const cl_member *mb = &job->mem.a[in->first + j];
        if (group[mb->rank_idx] == g) t[n++] = job->r[mb->rank_idx]->colls.a[mb->coll_idx].start;
      }
      if (n < 2) continue;
      qsort(t, n, sizeof *t, cmp_i64);
      for (size_t j = 1; j < n; j++) {
        int64_t d = t[j] - t[j - 1];
        gaps[g]++;
        small[g] += d < CL_GPU_SLICE_NS / 2;
        if (d >= CL_GPU_SLICE_NS / 2 && d <= 1.5 * CL_GPU_SLICE_NS) { CL_PUSH(near, d); CL_PUSH(near_g, g); }
      }
    }
  }
  for (int g = 0; g < ng; g++) gm[g] = gaps[g] < 10 || small[g] <= CL_GPU_SHARE_SMALL * (double)gaps[g];
  for (int i = 0; i < job->n; i++)
    if (group[i] >= 0 && gm[group[i]]) {
      s->k[i] = size[group[i]]; s->n_shared++;
      if (s->k[i] > s->kmax) s->kmax = s->k[i];
    }
  size_t nn = 0;
  for (size_t j = 0; j < near.n; j++) if (gm[near_g.a[j]]) near.a[nn++] = near.a[j];
  if (s->n_shared && nn >= 10) s->slice_ns = (double)cl_median_i64(near.a, nn);
  free(near.a); free(near_g.a); free(t); free(gm); free(small); free(gaps); free(group); free(size);
}

int64_t cl_gpu_share_res(const cl_gpu_share *s, int ri) {
  int k = s->k ? s->k[ri] : 1;
  return k > 1 ? (int64_t)llround(((double)k - 1 + 0.1) * s->slice_ns) : 0;
}

void cl_gpu_share_free(cl_gpu_share *s) {
  free(s->k);
  memset(s, 0, sizeof *s);
}
