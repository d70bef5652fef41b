/* analysis.c: what the report concludes, computed once for every output form (text, JSON,
 * HTML): per-rank communication, waits and blame, per-instance waits, lateness and bus
 * bandwidth against its size's median, the channels ranked slowest first; the verdict
 * (verdict.c decides each instance's last arrival: its culprit) and the waits it caused per
 * rank (blame.c). Pure functions
 * over the aligned job (model/); prints nothing. */
#include "tools/commlens/analyse/analysis.h"
#include "common/nccl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int64_t bytes; uint16_t func; uint32_t id; } bw_key;
static int cmp_bw_key(const void *a, const void *b) {
  const bw_key *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
  return (x->func > y->func) - (x->func < y->func);
}

static int cmp_i64pair(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Union of [start, end) spans of all coll_gpu slices of a rank. */
static double comm_union(const cl_rank *r) {
  if (!r->colls.n) return 0;
  int64_t *v = cl_xmalloc(r->colls.n * 2 * sizeof(int64_t));
  for (size_t k = 0; k < r->colls.n; k++) { v[2 * k] = r->colls.a[k].start; v[2 * k + 1] = r->colls.a[k].end; }
  qsort(v, r->colls.n, 2 * sizeof(int64_t), cmp_i64pair);
  double tot = 0; int64_t cs = v[0], ce = v[1];
  for (size_t k = 1; k < r->colls.n; k++) {
    if (v[2 * k] > ce) { tot += (double)(ce - cs); cs = v[2 * k]; ce = v[2 * k + 1]; }
    else if (v[2 * k + 1] > ce) ce = v[2 * k + 1];
  }
  tot += (double)(ce - cs);
  free(v);
  return tot;
}

static const cl_analysis *g_an;
static int cmp_chan(const void *a, const void *b) {
  const cl_chan_row *x = a, *y = b;
  double fx = x->c->n ? (double)x->c->tail / (double)x->c->n : 0, fy = y->c->n ? (double)y->c->tail / (double)y->c->n : 0;
  if (fx != fy) return fx < fy ? 1 : -1;
  if (x->ratio != y->ratio) return x->ratio < y->ratio ? 1 : -1;
  return (int)(x->c->w_peer + x->c->w_recv < y->c->w_peer + y->c->w_recv) - (int)(x->c->w_peer + x->c->w_recv > y->c->w_peer + y->c->w_recv);
}
static int cmp_lowbw(const void *a, const void *b) {
  double x = g_an->ia[*(const uint32_t *)a].ratio, y = g_an->ia[*(const uint32_t *)b].ratio;
  return x < y ? -1 : x > y;
}

/* ratio: channel mean duration vs the median channel mean of the same rank and comm. Across
 * ranks the comparison would mix in waiting: every channel of a rank that waits for a late
 * peer lasts as long as the slow one, which hid a 3x slow channel as 1.0x. The rows are in
 * rank order; each rank's are grouped by comm after a sort of their indices (n log n: a scan
 * of every row per row took 6 of 14 s at 8,192 ranks). A median is of a set, so the order in
 * which a group's means are gathered does not change it. */
static const cl_chan_row *g_rows;
static int cmp_row_comm(const void *a, const void *b) {
  uint64_t x = g_rows[*(const size_t *)a].c->comm, y = g_rows[*(const size_t *)b].c->comm;
  return x < y ? -1 : x > y;
}
static void chan_ratios(cl_analysis *an) {
  size_t *idx = cl_xmalloc((an->nch + 1) * sizeof *idx);
  double *m = cl_xmalloc((an->nch + 1) * sizeof(double));
  g_rows = an->ch;
  for (size_t lo = 0, hi; lo < an->nch; lo = hi) {
    size_t n = 0;
    for (hi = lo; hi < an->nch && an->ch[hi].ri == an->ch[lo].ri; hi++)
      if (an->ch[hi].c->n) idx[n++] = hi;
    qsort(idx, n, sizeof *idx, cmp_row_comm);
    for (size_t a = 0, b; a < n; a = b) {
      for (b = a; b < n && an->ch[idx[b]].c->comm == an->ch[idx[a]].c->comm; b++) m[b - a] = an->ch[idx[b]].mean;
      double med = cl_median_dbl(m, b - a);
      for (size_t k = a; k < b; k++) an->ch[idx[k]].ratio = med > 0 ? an->ch[idx[k]].mean / med : 1;
    }
  }
  free(m); free(idx);
}

void cl_analyse(cl_job *job, const cl_clock_model *cm, cl_analysis *an) {
  memset(an, 0, sizeof *an);
  an->cm = cm;
  cl_verdict_compute(job, cm, &an->vd);
  cl_channels_compute(job, &an->vd, &an->chv);
  cl_hang_analyse(job, &an->hang);
  an->ra = cl_xcalloc((size_t)job->n, sizeof(cl_rank_an));
  an->ia = cl_xcalloc(job->inst.n ? job->inst.n : 1, sizeof(cl_inst_an));
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (int i = 0; i < job->n; i++) {
    cl_rank *r = job->r[i];
    an->ra[i].comm_union = comm_union(r);
    if (!r->info.n_events) continue;
    if (cl_aligned(r, r->t_min) < t0) t0 = cl_aligned(r, r->t_min);
    if (cl_aligned(r, r->t_max) > t1) t1 = cl_aligned(r, r->t_max);
  }
  an->span = t1 > t0 ? (double)(t1 - t0) : 0;
  /* each instance's last arrival (its culprit) and its waits are decided once, by the verdict
   * (verdict.c), and summed per rank by blame.c; the figures below build on them */
  cl_blame_compute(job, &an->vd.v, &an->bl);
  int64_t *tmp = cl_xmalloc(((size_t)job->n + 1) * sizeof(int64_t));
  for (size_t ii = 0; ii < job->inst.n; ii++) {
    cl_inst *in = &job->inst.a[ii]; cl_inst_an *ia = &an->ia[ii];
    const cl_blame_inst *bi = &an->bl.inst[ii];
    ia->culprit = -1;
    if (in->count < 2) continue;
    an->n_multi++;
    if (bi->culprit < 0) continue;
    int64_t last = INT64_MIN; int culprit = bi->culprit; double wait = bi->wait, mind = bi->transfer;
    for (uint32_t m = 0; m < in->count; m++) if (an->vd.arrival[in->first + m] > last) last = an->vd.arrival[in->first + m];
    for (uint32_t m = 0; m < in->count; m++) {
      cl_member *mb = &job->mem.a[in->first + m];
      cl_rank *r = job->r[mb->rank_idx]; cl_coll *c = &r->colls.a[mb->coll_idx];
      tmp[m] = an->vd.arrival[in->first + m];
      double w = (double)(last - tmp[m]);
      cl_rank_an *ra = &an->ra[mb->rank_idx];
      ra->waited += w; ra->coll_time += (double)(c->end - c->start); ra->transfer += mind; ra->n_inst++;
      an->tot_coll += (double)(c->end - c->start); an->tot_transfer += mind;
    }
    an->tot_wait += wait;
    int64_t med = cl_median_i64(tmp, in->count);
    ia->culprit = culprit; ia->wait = wait; ia->transfer = mind; ia->late = (double)(last - med);
    ia->med_arrival = med;
    cl_rank_an *ca = &an->ra[culprit];
    ca->blame += wait; ca->n_last++; ca->late_sum += ia->late;
    for (int k = 0; k < 3; k++) {
      if (ca->worst_w[k] < wait || (k == 0 && ca->n_last == 1)) {
        for (int j = 2; j > k; j--) { ca->worst[j] = ca->worst[j - 1]; ca->worst_w[j] = ca->worst_w[j - 1]; }
        ca->worst[k] = (uint32_t)ii; ca->worst_w[k] = wait; break;
      }
    }
    if (in->bytes > 0 && mind > 0) {
      int n = in->nranks > 0 ? in->nranks : (int)in->count;
      ia->busbw = (double)in->bytes * cl_busbw_factor(cl_func_name(in->func), n) / mind;
    }
  }
  free(tmp);
  /* bandwidth vs the median of the same (func, bytes): sort instance ids by that key */
  uint32_t *ids = cl_xmalloc((job->inst.n + 1) * sizeof(uint32_t)); size_t nid = 0;
  for (size_t ii = 0; ii < job->inst.n; ii++) if (an->ia[ii].busbw > 0) ids[nid++] = (uint32_t)ii;
  /* group by (bytes, func): sorted on both fields (a composite bytes * 1024 + func overflowed on
   * a trace's huge byte count: fuzz_cli) */
  bw_key *keys = cl_xmalloc((nid + 1) * sizeof(bw_key));
  for (size_t k = 0; k < nid; k++) {
    cl_inst *in = &job->inst.a[ids[k]];
    keys[k] = (bw_key){ in->bytes, in->func, ids[k] };
  }
  qsort(keys, nid, sizeof(bw_key), cmp_bw_key);
  double *bw = cl_xmalloc((nid + 1) * sizeof(double));
  an->lowbw = cl_xmalloc((nid + 1) * sizeof(uint32_t));
  for (size_t a = 0; a < nid;) {
    size_t b = a;
    while (b < nid && keys[b].bytes == keys[a].bytes && keys[b].func == keys[a].func) b++;
    if (b - a >= 3) {
      for (size_t k = a; k < b; k++) bw[k - a] = an->ia[keys[k].id].busbw;
      double med = cl_median_dbl(bw, b - a);
      for (size_t k = a; k < b; k++) {
        cl_inst_an *ia = &an->ia[keys[k].id];
        ia->ratio = med > 0 ? ia->busbw / med : 1;
        if (ia->ratio < 0.999) an->lowbw[an->nlow++] = keys[k].id;
      }
    }
    a = b;
  }
  free(bw); free(keys); free(ids);
  g_an = an;
  qsort(an->lowbw, an->nlow, sizeof(uint32_t), cmp_lowbw);
  /* channels */
  size_t nch = 0;
  for (int i = 0; i < job->n; i++) nch += job->r[i]->chans.n;
  an->ch = cl_xmalloc((nch + 1) * sizeof(cl_chan_row));
  for (int i = 0; i < job->n; i++)
    for (size_t k = 0; k < job->r[i]->chans.n; k++) {
      cl_chan *c = &job->r[i]->chans.a[k];
      an->ch[an->nch++] = (cl_chan_row){ i, c, c->n ? (double)c->sum_dur / (double)c->n : 0, 0 };
    }
  chan_ratios(an);
  qsort(an->ch, an->nch, sizeof(cl_chan_row), cmp_chan);
  cl_tags_compute(job, &an->vd, &an->tags, stderr);
  cl_timers_check(job, &an->timers);
}

void cl_analysis_free(cl_analysis *an) {
  free(an->ra); free(an->ia); free(an->ch); free(an->lowbw);
  cl_blame_free(&an->bl);
  cl_verdict_free(&an->vd);
  cl_channels_free(&an->chv);
  cl_hang_free(&an->hang);
  cl_tags_free(&an->tags);
  cl_timers_an_free(&an->timers);
}

/* The plugin's own total first: operations that share a kernel (a Send and a Recv of one
 * launch) carry the same exposed time each, so the per-operation sum counts it twice. */
const char *cl_rank_exposed(const cl_rank *r, double *out) {
  if (r->info.has_st_exposed && r->info.st_est_colls > 0) {   /* sampled: measured in windows + estimated */
    *out = (double)r->info.st_exposed_ns + (double)r->info.st_est_exposed_ns;
    return "plugin totals, part estimated (sampled)";
  }
  if (r->info.has_st_exposed) { *out = (double)r->info.st_exposed_ns; return "plugin totals"; }
  if (r->has_exposed_args) { *out = (double)r->exposed_args; return "exposed_ns"; }
  if (r->has_exposed_evs) { *out = (double)r->exposed_evs; return "exposed events"; }
  *out = -1; return NULL;
}
void cl_chan_top_peer(const cl_chan *c, int *peer, int64_t *w) {
  *peer = -1; *w = 0;
  for (size_t i = 0; i < c->peers.n; i++) if (c->peers.a[i].wait > *w) { *w = c->peers.a[i].wait; *peer = c->peers.a[i].peer; }
}
const char *cl_chan_verdict(const cl_chan *c) {
  int64_t pw = c->w_peer + c->w_recv, gw = c->w_gpu + c->w_recv_gpu;
  if (!c->nsteps) return "-";
  if (pw == 0 && gw == 0) return "no waits";
  return pw >= gw ? "waited on peer" : "waited on local GPU";
}

