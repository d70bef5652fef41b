/* channels.c: see channels.h. Owns turning each rank's kernel_ch ends into the straggler
 * verdict's input (one instance per (comm, func, seq), channels as participants) and the
 * headline across ranks. Reads the loaded job and the rank verdict; never touches files. */
#include "tools/commlens/analyse/channels.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CH_MAX 4096   /* channel numbers beyond this are damage (NCCL has at most 64) */

static const cl_chend *g_ce;
static int cmp_chend(const void *a, const void *b) {
  const cl_chend *x = &g_ce[*(const uint32_t *)a], *y = &g_ce[*(const uint32_t *)b];
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  if (x->channel != y->channel) return x->channel < y->channel ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}
static const cl_coll *g_co;
static int cmp_coll(const void *a, const void *b) {
  const cl_coll *x = &g_co[*(const uint32_t *)a], *y = &g_co[*(const uint32_t *)b];
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}
/* The rank's first collective of (comm, func, seq) through ord (sorted by cmp_coll), or NULL. */
static const cl_coll *coll_of(const cl_rank *r, const uint32_t *ord, size_t n, const cl_chend *e) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const cl_coll *c = &r->colls.a[ord[mid]];
    int less = c->comm != e->comm ? c->comm < e->comm : c->func != e->func ? c->func < e->func : c->seq < e->seq;
    if (less) lo = mid + 1; else hi = mid;
  }
  if (lo == n) return NULL;
  const cl_coll *c = &r->colls.a[ord[lo]];
  return c->comm == e->comm && (int32_t)c->func == e->func && c->seq == e->seq ? c : NULL;
}

/* One rank: 0 when it has channel ends to judge (out filled), -1 when none. */
static int rank_channels(const cl_job *job, const cl_verdict_an *vd, int ri, cl_ch_rank *out) {
  const cl_rank *r = job->r[ri];
  size_t n = r->chends.n;
  if (!n) return -1;
  uint32_t *ord = cl_xmalloc(n * sizeof *ord), *co = cl_xmalloc((r->colls.n + 1) * sizeof *co);
  for (size_t k = 0; k < n; k++) ord[k] = (uint32_t)k;
  g_ce = r->chends.a;
  qsort(ord, n, sizeof *ord, cmp_chend);
  size_t nco = 0;
  for (size_t k = 0; k < r->colls.n; k++) if (!r->colls.a[k].p2p && r->colls.a[k].seq >= 0) co[nco++] = (uint32_t)k;
  g_co = r->colls.a;
  qsort(co, nco, sizeof *co, cmp_coll);
  cl_sg_inst *si = cl_xmalloc((n + 1) * sizeof *si);
  cl_sg_arrival *sa = cl_xmalloc((n + 1) * sizeof *sa);
  out->key = cl_xmalloc((n + 1) * sizeof *out->key);
  size_t ni = 0, na = 0;
  int nwho = 0;
  for (size_t a = 0, e; a < n; a = e) {
    const cl_chend *h = &r->chends.a[ord[a]];
    int dup = 0;
    for (e = a + 1; e < n; e++) {
      const cl_chend *x = &r->chends.a[ord[e]];
      if (x->comm != h->comm || x->func != h->func || x->seq != h->seq) break;
      if (x->channel == r->chends.a[ord[e - 1]].channel) dup = 1;
    }
    /* a channel twice in one (comm, func, seq) (CUDA-graph replays share seq 0): whose end is
     * whose is unknown, so the group is no evidence */
    if (dup || e - a < 2) continue;
    const cl_coll *c = coll_of(r, co, nco, h);
    int32_t step = c && c->inst != UINT32_MAX ? vd->inst_step[c->inst] : -1;
    int setup = vd->steps_source == CL_STEPS_PATTERN && step == 0;   /* the rank verdict's start-up step */
    si[ni] = (cl_sg_inst){ h->comm, h->seq, c ? c->bytes : 0, h->func, step, setup, (uint32_t)na, 0 };
    out->key[ni] = (struct cl_ch_key){ h->comm, h->seq, h->func };
    for (size_t k = a; k < e; k++) {
      const cl_chend *x = &r->chends.a[ord[k]];
      if (x->channel < 0 || x->channel >= CH_MAX) continue;
      sa[na++] = (cl_sg_arrival){ .who = x->channel, .value = x->end, .clock = 1 };
      si[ni].count++;
      if (x->channel + 1 > nwho) nwho = x->channel + 1;
    }
    ni++;
  }
  cl_sg_input in = { nwho, NULL, "channel", ni, si, sa, CL_SG_CHANNEL_END, 0, CL_CH_MIN_MARGIN_NS,
                     vd->v.job_ns > 0 ? (int64_t)vd->v.job_ns : 0, NULL, CL_SG_CHANNEL_END, 0 };
  out->rank_idx = ri;
  cl_sg_analyse(&in, &out->v);
  cl_sg_verdict_line(&out->v, out->line, sizeof out->line);
  free(ord); free(co); free(si); free(sa);
  return 0;
}

/* The headline: the costliest slow channel of any rank, else the largest stall, else the
 * strongest effect seen, each named with its rank. */
static void headline(const cl_job *job, cl_channels_an *out) {
  int best = -1;
  for (int i = 0; i < out->n; i++) {
    const cl_sg_verdict *v = &out->r[i].v, *b = best >= 0 ? &out->r[best].v : NULL;
    if (v->kind == CL_SG_STRAGGLER && (!b || b->kind != CL_SG_STRAGGLER || v->straggler[0].cost_ns > b->straggler[0].cost_ns)) best = i;
  }
  for (int i = 0; best < 0 && i < out->n; i++) {
    const cl_sg_verdict *v = &out->r[i].v;
    if (v->kind == CL_SG_STALLS_ONLY) best = i;
  }
  for (int i = 0; i < out->n && best >= 0 && out->r[best].v.kind == CL_SG_STALLS_ONLY; i++) {
    const cl_sg_verdict *v = &out->r[i].v, *b = &out->r[best].v;
    if (v->kind == CL_SG_STALLS_ONLY && v->stall[0].margin_ns > b->stall[0].margin_ns) best = i;
  }
  if (best >= 0) {
    out->head = best;
    snprintf(out->line, sizeof out->line, "rank %d: %s", job->r[out->r[best].rank_idx]->rank, out->r[best].line);
    return;
  }
  int judged = 0;
  for (int i = 0; i < out->n; i++) {
    const cl_sg_verdict *v = &out->r[i].v;
    if (v->kind == CL_SG_NO_DATA) continue;
    judged++;
    if (v->largest.who < 0) continue;
    const cl_sg_suspect *s = &v->largest, *b = best >= 0 ? &out->r[best].v.largest : NULL;
    if (!b || s->p_value < b->p_value || (s->p_value == b->p_value && s->last_count > b->last_count)) best = i;
  }
  if (!judged) {
    snprintf(out->line, sizeof out->line, "no verdict: no collective outside the start-up period had two or more channels");
    return;
  }
  char t1[32], t2[32];
  if (best < 0) {
    snprintf(out->line, sizeof out->line, "no slow channel found on %d rank(s): no channel ended last by more than %s",
             judged, cl_fmt_time(t1, sizeof t1, CL_CH_MIN_MARGIN_NS));
    return;
  }
  out->head = best;
  const cl_sg_verdict *v = &out->r[best].v;
  const cl_sg_suspect *s = &v->largest;
  snprintf(out->line, sizeof out->line,
           "no slow channel found on %d rank(s): the largest effect was channel %d of rank %d, late in %lld of %lld %s "
           "by a median %s; noise floor %s", judged, s->who, job->r[out->r[best].rank_idx]->rank,
           (long long)s->last_count, (long long)s->units, v->unit_is_step ? "steps" : "instances",
           cl_fmt_time(t1, sizeof t1, s->median_lateness_ns), cl_fmt_time(t2, sizeof t2, v->noise_floor_ns));
}

void cl_channels_compute(const cl_job *job, const cl_verdict_an *vd, cl_channels_an *out) {
  memset(out, 0, sizeof *out);
  out->head = -1;
  out->r = cl_xcalloc((size_t)job->n + 1, sizeof *out->r);
  for (int i = 0; i < job->n; i++) {
    out->n_over += job->r[i]->n_chend_over;
    if (rank_channels(job, vd, i, &out->r[out->n]) == 0) out->n++;
  }
  if (!out->n) {
    /* a digest keeps per-channel totals (the slow-channel table), not each instance's channel
     * ends: say which is missing, and what gives it */
    int totals = 0;
    for (int i = 0; i < job->n && !totals; i++)
      for (size_t k = 0; k < job->r[i]->chans.n; k++) totals |= job->r[i]->chans.a[k].n > 0;
    snprintf(out->line, sizeof out->line, "%s", totals
             ? "no per-instance channel times (digests keep per-channel totals only; COMMLENS_OUTPUT=both for the channel verdict)"
             : "no channel events in this trace (COMMLENS_EVENTS=default+kernelch)");
    return;
  }
  headline(job, out);
}

void cl_channels_free(cl_channels_an *out) {
  for (int i = 0; i < out->n; i++) { cl_sg_free(&out->r[i].v); free(out->r[i].key); }
  free(out->r);
  memset(out, 0, sizeof *out);
}
