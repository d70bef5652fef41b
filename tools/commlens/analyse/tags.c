/* tags.c: see tags.h. Owns how collectives group by user tag, the cap on named tags, and
 * the exposure split of one collective (waiting for peers vs transferring). */
#include "tools/commlens/analyse/tags.h"
#include "tools/commlens/base/util.h"
#include <stdlib.h>
#include <string.h>

/* A collective's exposure split: how much of its exposed time the GPU spent waiting for its
 * peers (initial_sync opens the kernel: the exposed time up to its length), the rest
 * transferring. 0 and -1 when unknown (no exposure or no phases). */
static void split(const cl_rank *r, size_t k, double *waiting, double *transferring) {
  const cl_coll *c = &r->colls.a[k];
  if (!c->has_exposed || !c->has_phase) { *waiting = 0; *transferring = -1; return; }
  double ex = (double)c->exposed, w = (double)cl_coll_v7_of(r, k).gwait;
  *waiting = w < ex ? w : ex;
  *transferring = ex - *waiting;
}

static uint64_t tag_of(const cl_rank *r, size_t k) { return r->colls.a[k].has_tag ? cl_coll_v7_of(r, k).tag : 0; }
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static int cmp_row(const void *a, const void *b) {
  const cl_tag_row *x = a, *y = b;
  if (x->wait_caused_ns != y->wait_caused_ns) return x->wait_caused_ns < y->wait_caused_ns ? 1 : -1;
  if (x->gpu_ns != y->gpu_ns) return x->gpu_ns < y->gpu_ns ? 1 : -1;
  return x->tag < y->tag ? -1 : x->tag > y->tag;
}
static cl_tag_row *row_of(cl_tag_row *rows, size_t n, uint64_t tag) {
  size_t lo = 0, hi = n;
  while (lo < hi) { size_t m = (lo + hi) / 2; if (rows[m].tag < tag) lo = m + 1; else hi = m; }
  return lo < n && rows[lo].tag == tag ? &rows[lo] : NULL;
}
static void fold(cl_tag_row *into, const cl_tag_row *r) {
  into->n_colls += r->n_colls; into->n_inst += r->n_inst; into->gpu_ns += r->gpu_ns;
  into->exposed_ns += r->exposed_ns; into->exposed_wait_ns += r->exposed_wait_ns;
  into->exposed_xfer_ns += r->exposed_xfer_ns; into->sync_wait_ns += r->sync_wait_ns;
  into->compute_ns += r->compute_ns; into->wait_caused_ns += r->wait_caused_ns; into->n_called += r->n_called;
}

void cl_tags_compute(const cl_job *job, const cl_verdict_an *vd, cl_tags *t, FILE *note) {
  memset(t, 0, sizeof *t);
  t->exp_wait = cl_xmalloc(((size_t)job->n + 1) * sizeof *t->exp_wait);
  t->exp_xfer = cl_xmalloc(((size_t)job->n + 1) * sizeof *t->exp_xfer);
  size_t total = 0;
  int any = 0;
  for (int i = 0; i < job->n; i++) {
    const cl_rank *r = job->r[i];
    t->exp_wait[i] = 0; t->exp_xfer[i] = -1;
    for (size_t k = 0; k < r->colls.n; k++) {
      double w, x;
      split(r, k, &w, &x);
      if (x >= 0) { t->exp_wait[i] += w; t->exp_xfer[i] = (t->exp_xfer[i] < 0 ? 0 : t->exp_xfer[i]) + x; }
      any |= r->colls.a[k].has_tag;
    }
    total += r->colls.n;
  }
  if (!any) return;                             /* no v7 tags: no table */
  uint64_t *tags = cl_xmalloc((total + 1) * sizeof *tags);
  size_t n = 0;
  for (int i = 0; i < job->n; i++)
    for (size_t k = 0; k < job->r[i]->colls.n; k++) tags[n++] = tag_of(job->r[i], k);
  qsort(tags, n, sizeof *tags, cmp_u64);
  size_t nd = 0;
  for (size_t k = 0; k < n; k++) if (!nd || tags[k] != tags[nd - 1]) tags[nd++] = tags[k];
  cl_tag_row *rows = cl_xcalloc(nd + 1, sizeof *rows);
  for (size_t k = 0; k < nd; k++) rows[k].tag = tags[k];
  free(tags);
  for (int i = 0; i < job->n; i++)
    for (size_t k = 0; k < job->r[i]->colls.n; k++) {
      const cl_coll *c = &job->r[i]->colls.a[k];
      cl_tag_row *row = row_of(rows, nd, tag_of(job->r[i], k));
      double w, x;
      split(job->r[i], k, &w, &x);
      row->n_colls++;
      row->gpu_ns += (double)(c->end - c->start);
      if (c->has_exposed) row->exposed_ns += (double)c->exposed;
      if (x >= 0) { row->exposed_wait_ns += w; row->exposed_xfer_ns += x; }
      if (c->has_phase) {
        cl_coll_v7 v = cl_coll_v7_of(job->r[i], k);
        row->sync_wait_ns += (double)v.gwait; row->compute_ns += (double)v.gwork;
      }
    }
  for (size_t k = 0; k < job->inst.n; k++) {   /* an instance's tag: its first member's */
    const cl_inst *in = &job->inst.a[k];
    if (!in->count) continue;
    const cl_member *mb = &job->mem.a[in->first];
    cl_tag_row *row = row_of(rows, nd, tag_of(job->r[mb->rank_idx], mb->coll_idx));
    row->n_inst++;
    const cl_sg_inst_result *ir = vd && vd->v.inst ? &vd->v.inst[k] : NULL;
    if (ir && ir->last >= 0 && !ir->startup) { row->wait_caused_ns += ir->wait_ns; row->n_called += ir->called; }
  }
  qsort(rows, nd, sizeof *rows, cmp_row);
  t->n_distinct = (int64_t)nd;
  if (nd > CL_TAG_LABELS_MAX) {
    cl_tag_row other = {.other = 1};
    for (size_t k = CL_TAG_LABELS_MAX - 1; k < nd; k++) fold(&other, &rows[k]);
    rows[CL_TAG_LABELS_MAX - 1] = other;
    nd = CL_TAG_LABELS_MAX;
    t->capped = 1;
    if (note) fprintf(note, "commlens: %lld distinct user tags; the %d that caused the most waiting are named, "
                      "the other %lld are reported together as \"other\"\n", (long long)t->n_distinct,
                      CL_TAG_LABELS_MAX - 1, (long long)(t->n_distinct - (CL_TAG_LABELS_MAX - 1)));
  }
  t->row = rows; t->n = nd;
}

const char *cl_tag_label(const cl_tags *t, const cl_tag_row *r, char *buf, size_t n) {
  if (r->other) snprintf(buf, n, "other (%lld tags)", (long long)(t->n_distinct - (CL_TAG_LABELS_MAX - 1)));
  else if (!r->tag) snprintf(buf, n, "untagged");
  else snprintf(buf, n, "%llu", (unsigned long long)r->tag);
  return buf;
}

void cl_tags_free(cl_tags *t) {
  free(t->row); free(t->exp_wait); free(t->exp_xfer);
  memset(t, 0, sizeof *t);
}
