/* report.c: `commlens report`: per-rank communication and exposure, slow ranks (who made
 * the others wait), slow channels, low-bandwidth collectives, clock offsets and plugin
 * health. Works only from the aggregates of load.h; every figure names the events it came
 * from (seq numbers, counts). Text is short (top N per table); --json has every row. */
#include "report.h"
#include "blame.h"
#include "common/nccl.h"
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

void cl_analyse(cl_job *job, cl_analysis *an) {
  memset(an, 0, sizeof *an);
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
  int64_t *tmp = cl_xmalloc(((size_t)job->n + 1) * sizeof(int64_t));
  for (size_t ii = 0; ii < job->inst.n; ii++) {
    cl_inst *in = &job->inst.a[ii]; cl_inst_an *ia = &an->ia[ii];
    ia->culprit = -1;
    if (in->count < 2) continue;
    an->n_multi++;
    int64_t last = INT64_MIN, mind = INT64_MAX; int culprit = -1;
    for (uint32_t m = 0; m < in->count; m++) {
      cl_member *mb = &job->mem.a[in->first + m];
      cl_rank *r = job->r[mb->rank_idx]; cl_coll *c = &r->colls.a[mb->coll_idx];
      int64_t s = cl_aligned(r, c->start);
      tmp[m] = s;
      if (s > last) { last = s; culprit = (int)mb->rank_idx; }
      if (c->end - c->start < mind) mind = c->end - c->start;
    }
    double wait = 0;
    for (uint32_t m = 0; m < in->count; m++) {
      cl_member *mb = &job->mem.a[in->first + m];
      cl_rank *r = job->r[mb->rank_idx]; cl_coll *c = &r->colls.a[mb->coll_idx];
      double w = (double)(last - tmp[m]);
      wait += w;
      cl_rank_an *ra = &an->ra[mb->rank_idx];
      ra->waited += w; ra->coll_time += (double)(c->end - c->start); ra->transfer += (double)mind; ra->n_inst++;
      an->tot_coll += (double)(c->end - c->start); an->tot_transfer += (double)mind;
    }
    an->tot_wait += wait;
    int64_t med = cl_median_i64(tmp, in->count);
    ia->culprit = culprit; ia->wait = wait; ia->transfer = (double)mind; ia->late = (double)(last - med);
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
      ia->busbw = (double)in->bytes * cl_busbw_factor(cl_func_name(in->func), n) / (double)mind;
    }
  }
  free(tmp);
  /* bandwidth vs the median of the same (func, bytes): sort instance ids by that key */
  uint32_t *ids = cl_xmalloc((job->inst.n + 1) * sizeof(uint32_t)); size_t nid = 0;
  for (size_t ii = 0; ii < job->inst.n; ii++) if (an->ia[ii].busbw > 0) ids[nid++] = (uint32_t)ii;
  /* group by (func, bytes) with a simple sort on a composite key */
  int64_t *keys = cl_xmalloc((nid + 1) * 2 * sizeof(int64_t));
  for (size_t k = 0; k < nid; k++) {
    cl_inst *in = &job->inst.a[ids[k]];
    keys[2 * k] = in->bytes * 1024 + in->func; keys[2 * k + 1] = ids[k];
  }
  qsort(keys, nid, 2 * sizeof(int64_t), cmp_i64pair);
  double *bw = cl_xmalloc((nid + 1) * sizeof(double));
  an->lowbw = cl_xmalloc((nid + 1) * sizeof(uint32_t));
  for (size_t a = 0; a < nid;) {
    size_t b = a;
    while (b < nid && keys[2 * b] == keys[2 * a]) b++;
    if (b - a >= 3) {
      for (size_t k = a; k < b; k++) bw[k - a] = an->ia[keys[2 * k + 1]].busbw;
      double med = cl_median_dbl(bw, b - a);
      for (size_t k = a; k < b; k++) {
        cl_inst_an *ia = &an->ia[keys[2 * k + 1]];
        ia->ratio = med > 0 ? ia->busbw / med : 1;
        if (ia->ratio < 0.999) an->lowbw[an->nlow++] = (uint32_t)keys[2 * k + 1];
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
  /* ratio: channel mean duration vs the median channel mean of the same rank and comm. Across
   * ranks the comparison would mix in waiting: every channel of a rank that waits for a late
   * peer lasts as long as the slow one, which hid a 3x slow channel as 1.0x. */
  double *m = cl_xmalloc((an->nch + 1) * sizeof(double));
  for (size_t k = 0; k < an->nch; k++) {
    if (!an->ch[k].c->n || an->ch[k].ratio) continue;
    size_t n = 0;
#define SAME_GROUP(j) (an->ch[j].c->n && an->ch[j].ri == an->ch[k].ri && an->ch[j].c->comm == an->ch[k].c->comm)
    for (size_t j = 0; j < an->nch; j++)
      if (SAME_GROUP(j)) m[n++] = an->ch[j].mean;
    double med = cl_median_dbl(m, n);
    for (size_t j = 0; j < an->nch; j++)
      if (SAME_GROUP(j)) an->ch[j].ratio = med > 0 ? an->ch[j].mean / med : 1;
#undef SAME_GROUP
  }
  free(m);
  qsort(an->ch, an->nch, sizeof(cl_chan_row), cmp_chan);
  cl_blame_compute(job, &an->bl);
}

void cl_analysis_free(cl_analysis *an) {
  free(an->ra); free(an->ia); free(an->ch); free(an->lowbw);
  cl_blame_free(&an->bl);
}

/* "host" or "host:GPU" (a process may drive several GPUs: each is a rank of its own). */
const char *cl_rank_host(const cl_rank *r) {
  static _Thread_local char buf[4][160];
  static _Thread_local int k;
  char *b = buf[k++ % 4];
  if (r->device >= 0) snprintf(b, sizeof buf[0], "%s:%d", r->info.host ? r->info.host : "?", r->device);
  else snprintf(b, sizeof buf[0], "%s", r->info.host ? r->info.host : "?");
  return b;
}
static void inst_label(cl_job *job, uint32_t id, char *buf, size_t n) {
  cl_inst *in = &job->inst.a[id];
  snprintf(buf, n, "%s #%lld", cl_func_name(in->func), (long long)in->seq);
}
/* The plugin's own total first: operations that share a kernel (a Send and a Recv of one
 * launch) carry the same exposed time each, so the per-operation sum counts it twice. */
const char *cl_rank_exposed(const cl_rank *r, double *out) {
  if (r->info.has_st_exposed) { *out = (double)r->info.st_exposed_ns; return "plugin totals"; }
  if (r->has_exposed_args) { *out = (double)r->exposed_args; return "exposed_ns"; }
  if (r->has_exposed_evs) { *out = (double)r->exposed_evs; return "exposed events"; }
  *out = -1; return NULL;
}
static void peer_top(const cl_chan *c, int *peer, int64_t *w) {
  *peer = -1; *w = 0;
  for (size_t i = 0; i < c->peers.n; i++) if (c->peers.a[i].wait > *w) { *w = c->peers.a[i].wait; *peer = c->peers.a[i].peer; }
}
const char *cl_chan_verdict(const cl_chan *c) {
  int64_t pw = c->w_peer + c->w_recv, gw = c->w_gpu + c->w_recv_gpu;
  if (!c->nsteps) return "-";
  if (pw == 0 && gw == 0) return "no waits";
  return pw >= gw ? "waited on peer" : "waited on local GPU";
}

static void print_text(cl_job *job, cl_analysis *an, int top, FILE *o) {
  char b1[32], b2[32], b3[32], b4[32], b5[32];
  fprintf(o, "commlens report: %d rank(s) of job \"%s\" (ranks %d..%d), %d file(s) read, %d skipped\n",
          job->n, job->job, job->r[0]->rank, job->r[job->n - 1]->rank, job->n_files_seen - job->n_files_skipped,
          job->n_files_skipped);
  int gaps = 0;
  for (int i = 1; i < job->n; i++) gaps += job->r[i]->rank - job->r[i - 1]->rank - 1;
  if (gaps || job->r[0]->rank != 0) fprintf(o, "  missing ranks: %d between 0 and %d\n", gaps + job->r[0]->rank, job->r[job->n - 1]->rank);
  if (job->n_utf8) fprintf(o, "  %lld invalid UTF-8 byte(s) in the traces' strings, shown as U+FFFD\n", (long long)job->n_utf8);
  fprintf(o, "  span %s on rank %d's clock; %lld collective instances matched on 2+ ranks\n\n",
          cl_fmt_time(b1, sizeof b1, an->span), job->ref_rank, (long long)an->n_multi);

  /* ranks */
  int *ord = cl_xmalloc((size_t)job->n * sizeof(int));
  for (int i = 0; i < job->n; i++) ord[i] = i;
  fprintf(o, "Ranks (communication = union of coll_gpu spans; exposed from %s)\n", "the plugin's totals, else coll_gpu exposed_ns / exposed events");
  fprintf(o, "  %5s  %-16s %12s %12s %8s %12s %8s\n", "rank", "host", "comm time", "exposed", "overlap", "waited", "colls");
  int shown = 0;
  /* short: ranks with the most exposed (else most communication) first */
  for (int i = 0; i < job->n && shown < top; i++) {
    int best = -1; double bv = -2;
    for (int j = 0; j < job->n; j++) {
      if (ord[j] < 0) continue;
      double ex; cl_rank_exposed(job->r[j], &ex);
      double v = ex >= 0 ? ex * 1e3 + an->ra[j].comm_union * 1e-9 : an->ra[j].comm_union * 1e-9;
      if (v > bv) { bv = v; best = j; }
    }
    if (best < 0) break;
    ord[best] = -1; shown++;
    cl_rank *r = job->r[best]; double ex; cl_rank_exposed(r, &ex);
    char ov[16];
    if (ex >= 0 && an->ra[best].comm_union > 0) snprintf(ov, sizeof ov, "%.1f%%", 100.0 * (1 - ex / an->ra[best].comm_union));
    else snprintf(ov, sizeof ov, "n/a");
    fprintf(o, "  %5d  %-16.16s %12s %12s %8s %12s %8zu\n", r->rank, cl_rank_host(r), cl_fmt_time(b1, sizeof b1, an->ra[best].comm_union),
            ex >= 0 ? cl_fmt_time(b2, sizeof b2, ex) : "n/a", ov, cl_fmt_time(b3, sizeof b3, an->ra[best].waited), r->colls.n);
  }
  if (job->n > shown) fprintf(o, "  ... %d more rank(s) (--top N)\n", job->n - shown);

  /* slow ranks: persistent stragglers first (blame.h) */
  const cl_blame *bl = &an->bl;
  fprintf(o, "\nSlow ranks (last to arrive by a clear margin, again and again, first; warm-up apart)\n");
  fprintf(o, "  %5s  %-16s %11s %11s %12s %12s %12s  %s\n", "rank", "host", "late (sig)", "median by", "wait caused",
          "all waits", "in warm-up", "worst instances (wait caused)");
  int shown_sr = 0;
  for (int k = 0; k < job->n && shown_sr < top; k++) {
    int ri = bl->order[k];
    const cl_blame_rank *br = &bl->rank[ri];
    if (!br->n_sig && !an->ra[ri].n_last) continue;
    shown_sr++;
    char late[32], worst[160] = ""; size_t wl = 0;
    snprintf(late, sizeof late, "%lld/%lld%s", (long long)br->n_sig, (long long)br->n_eligible, br->persistent ? "" : " *");
    for (int w = 0; w < 3 && w < br->n_sig; w++) {
      char lab[64]; inst_label(job, br->worst[w], lab, sizeof lab);
      wl += (size_t)snprintf(worst + wl, sizeof worst - wl, "%s%s (%s)", w ? ", " : "", lab, cl_fmt_time(b4, sizeof b4, br->worst_w[w]));
      if (wl >= sizeof worst) break;
    }
    fprintf(o, "  %5d  %-16.16s %11s %11s %12s %12s %12s  %s\n", job->r[ri]->rank, cl_rank_host(job->r[ri]), late,
            br->n_sig ? cl_fmt_time(b1, sizeof b1, br->median_margin) : "-", cl_fmt_time(b2, sizeof b2, br->wait_sig),
            cl_fmt_time(b3, sizeof b3, br->wait_all), cl_fmt_time(b5, sizeof b5, br->wait_warmup), worst);
  }
  if (!shown_sr) fprintf(o, "  (no rank was last on any instance matched on 2+ ranks)\n");
  else {
    fprintf(o, "  (late (sig) = instances it was last by > max(50 us, 1/10 of the transfer) over the next-latest rank, of the\n"
            "   instances outside warm-up it took part in; * = fewer than 2: a one-off, ranked after the persistent ones)\n");
    fprintf(o, "  warm-up: %lld instance(s) (the leading outliers of each collective and size)", (long long)bl->n_warmup);
    if (job->n >= 2 && bl->confidence > 0) {
      if (isinf(bl->confidence)) fprintf(o, "; the top rank is the only one to blame\n");
      else fprintf(o, "; the top rank's figure is %.1fx the next one's\n", bl->confidence);
    } else fputc('\n', o);
  }
  if (bl->nsteps) {
    fprintf(o, "\nSteps that lost the most time (NVTX steps; lost = waits for the last arrival within the step)\n");
    fprintf(o, "  %8s %12s %8s %12s %6s\n", "step", "lost", "by rank", "its share", "colls");
    for (size_t k = 0; k < bl->nsteps && (int)k < top; k++) {
      const cl_blame_step *st = &bl->steps[k];
      fprintf(o, "  %8ld %12s %8d %11.0f%% %6lld\n", st->step, cl_fmt_time(b1, sizeof b1, st->lost),
              st->culprit >= 0 ? job->r[st->culprit]->rank : -1, st->lost > 0 ? 100 * st->culprit_wait / st->lost : 0,
              (long long)st->n_inst);
    }
  }
  if (an->tot_coll > 0)
    fprintf(o, "  collective time, all ranks: %s = waiting for the last arrival %s (%.1f%%) + transfer ~%s (%.1f%%) + other %.1f%%\n"
            "  (transfer = shortest coll_gpu duration of the instance)\n",
            cl_fmt_time(b1, sizeof b1, an->tot_coll), cl_fmt_time(b2, sizeof b2, an->tot_wait), 100 * an->tot_wait / an->tot_coll,
            cl_fmt_time(b3, sizeof b3, an->tot_transfer), 100 * an->tot_transfer / an->tot_coll,
            fabs(100 * (an->tot_coll - an->tot_wait - an->tot_transfer) / an->tot_coll) < 0.05 ? 0.0 : 100 * (an->tot_coll - an->tot_wait - an->tot_transfer) / an->tot_coll);

  /* channels */
  fprintf(o, "\nSlow channels (tail = the channel that finished last within its collective on that rank, from kernel_ch)\n");
  fprintf(o, "  %5s %4s %-10s %13s %11s %7s %18s %20s %11s  %s\n", "rank", "ch", "comm", "tail", "mean dur", "vs rank",
          "longest (seq)", "peer wait [peer]", "gpu wait", "proxy steps say");
  for (size_t k = 0; k < an->nch && (int)k < top; k++) {
    cl_chan_row *c = &an->ch[k]; int peer; int64_t pw; peer_top(c->c, &peer, &pw);
    char tail[32], lng[40], pws[40], cn[11];
    snprintf(tail, sizeof tail, "%lld/%lld", (long long)c->c->tail, (long long)c->c->n);
    snprintf(lng, sizeof lng, "%s (#%lld)", cl_fmt_time(b1, sizeof b1, (double)c->c->max_dur), (long long)c->c->max_seq);
    snprintf(pws, sizeof pws, peer >= 0 ? "%s [%d]" : "%s", cl_fmt_time(b2, sizeof b2, (double)(c->c->w_peer + c->c->w_recv)), peer);
    const char *nm = cl_comm_name(c->c->comm);
    if (nm[0]) snprintf(cn, sizeof cn, "%.10s", nm); else snprintf(cn, sizeof cn, "%08llx", (unsigned long long)(c->c->comm & 0xffffffffull));
    fprintf(o, "  %5d %4d %-10s %13s %11s %6.2fx %18s %20s %11s  %s\n", job->r[c->ri]->rank, c->c->channel, cn, tail,
            c->c->n ? cl_fmt_time(b3, sizeof b3, c->mean) : "-", c->ratio, c->c->n ? lng : "-", pws,
            cl_fmt_time(b4, sizeof b4, (double)(c->c->w_gpu + c->c->w_recv_gpu)), cl_chan_verdict(c->c));
  }
  if (!an->nch) fprintf(o, "  (no kernel_ch or proxy_step events)\n");

  /* bandwidth */
  fprintf(o, "\nLowest bus bandwidth (nccl-tests factors; time = shortest duration across ranks; vs median of same func+size)\n");
  fprintf(o, "  %-16s %-10s %12s %11s %11s %7s %8s\n", "collective", "comm", "bytes", "busbw", "median", "ratio", "last in");
  for (size_t k = 0; k < an->nlow && (int)k < top; k++) {
    uint32_t id = an->lowbw[k]; cl_inst_an *ia = &an->ia[id]; cl_inst *in = &job->inst.a[id];
    char lab[64], cn[11]; inst_label(job, id, lab, sizeof lab);
    const char *nm = cl_comm_name(in->comm);
    if (nm[0]) snprintf(cn, sizeof cn, "%.10s", nm); else snprintf(cn, sizeof cn, "%08llx", (unsigned long long)(in->comm & 0xffffffffull));
    fprintf(o, "  %-16s %-10s %12lld %6.2f GB/s %6.2f GB/s %6.2fx %8d\n", lab, cn, (long long)in->bytes, ia->busbw,
            ia->busbw / ia->ratio, ia->ratio, ia->culprit >= 0 ? job->r[ia->culprit]->rank : -1);
  }
  if (!an->nlow) fprintf(o, "  (none below the median, or fewer than 3 instances per func+size)\n");

  /* clocks */
  int64_t maxerr = 0, maxoff = 0; int unal = 0;
  for (int i = 0; i < job->n; i++) {
    cl_rank *r = job->r[i];
    if (!r->aligned) { unal++; continue; }
    if (llabs(r->offset_ns) > llabs(maxoff)) maxoff = r->offset_ns;
    if (r->off_err_ns > maxerr) maxerr = r->off_err_ns;
  }
  fprintf(o, "\nClock alignment vs rank %d (median of coll_gpu end differences; err = 1.25*MAD/sqrt(n)): largest |offset| %s, largest err %s%s\n",
          job->ref_rank, cl_fmt_time(b1, sizeof b1, (double)maxoff), cl_fmt_time(b2, sizeof b2, (double)maxerr), unal ? ", some ranks unaligned" : "");
  fprintf(o, "  %5s %14s %11s %11s %8s %5s\n", "rank", "offset", "err", "spread", "samples", "via");
  for (int i = 0; i < job->n; i++) ord[i] = i;
  for (int k = 0; k < job->n && k < top; k++) {
    int best = k;
    for (int j = k + 1; j < job->n; j++)
      if (llabs(job->r[ord[j]]->offset_ns) > llabs(job->r[ord[best]]->offset_ns)) best = j;
    int t = ord[k]; ord[k] = ord[best]; ord[best] = t;
    cl_rank *r = job->r[ord[k]];
    if (!r->aligned) { fprintf(o, "  %5d %14s\n", r->rank, "unaligned"); continue; }
    fprintf(o, "  %5d %14s %11s %11s %8d %5d\n", r->rank, cl_fmt_time(b1, sizeof b1, (double)r->offset_ns),
            cl_fmt_time(b2, sizeof b2, (double)r->off_err_ns), cl_fmt_time(b3, sizeof b3, (double)r->off_mad_ns), r->off_samples, r->off_via);
  }

  /* plugin health */
  int64_t drops = 0; double maxov = 0; int maxov_r = -1, ntrunc = 0, nfinal = 0, abi0 = job->r[0]->info.abi, abimix = 0;
  for (int i = 0; i < job->n; i++) {
    cl_info *in = &job->r[i]->info;
    drops += in->st_dropped; if (in->st_overhead_pct > maxov) { maxov = in->st_overhead_pct; maxov_r = job->r[i]->rank; }
    ntrunc += in->truncated || in->bad; nfinal += in->final; abimix |= in->abi != abi0;
  }
  fprintf(o, "\nPlugin: ABI %s%d, version %s; %lld records dropped; overhead max %.3f%% (rank %d); %d/%d final, %d truncated\n",
          abimix ? "mixed, rank 0: " : "", abi0, job->r[0]->info.version ? job->r[0]->info.version : "?", (long long)drops,
          maxov, maxov_r, nfinal, job->n, ntrunc);
  fprintf(o, "  %5s %4s %-9s %10s %10s %9s %12s  %s\n", "rank", "abi", "version", "events", "dropped", "overhead", "ns/call p50", "status");
  for (int i = 0; i < job->n; i++) ord[i] = i;
  for (int k = 0; k < job->n && k < top; k++) {   /* worst first: truncated, dropped, overhead */
    int best = k;
    for (int j = k + 1; j < job->n; j++) {
      cl_info *a = &job->r[ord[j]]->info, *b = &job->r[ord[best]]->info;
      double sa = (a->truncated || a->bad) * 1e18 + (double)a->st_dropped * 1e3 + a->st_overhead_pct;
      double sb = (b->truncated || b->bad) * 1e18 + (double)b->st_dropped * 1e3 + b->st_overhead_pct;
      if (sa > sb) best = j;
    }
    int t = ord[k]; ord[k] = ord[best]; ord[best] = t;
    cl_info *in = &job->r[ord[k]]->info;
    fprintf(o, "  %5d %4d %-9.9s %10lld %10lld %8.3f%% %12lld  %s\n", job->r[ord[k]]->rank, in->abi, in->version ? in->version : "?",
            (long long)in->n_events, (long long)in->st_dropped, in->st_overhead_pct,
            (long long)(in->st_overhead_med_ns ? in->st_overhead_med_ns : in->st_overhead_ns),   /* older traces: the mean */
            in->bad ? "damaged mid-file" : in->truncated ? "truncated" : in->final ? "final" : "not final (no exit flush)");
  }
  (void)b5;
  free(ord);
}

static json_object *jd(double v) { return json_object_new_double(round(v * 1000) / 1000); }
static json_object *ji(int64_t v) { return json_object_new_int64(v); }
static json_object *js(const char *s) { return json_object_new_string(s ? s : ""); }
/* A file name (bytes, not necessarily UTF-8) as a JSON string: invalid bytes as U+FFFD. */
static json_object *jpath(const char *p) {
  char *c = cl_utf8_dup(p, strlen(p), NULL);
  json_object *o = json_object_new_string(c);
  free(c);
  return o;
}
static json_object *jcomm(uint64_t c) { char b[24]; snprintf(b, sizeof b, "0x%llx", (unsigned long long)c); return js(b); }

static void print_json(cl_job *job, cl_analysis *an, FILE *o) {
  json_object *root = json_object_new_object(), *ranks = json_object_new_array();
  json_object_object_add(root, "job", js(job->job));
  json_object_object_add(root, "ref_rank", ji(job->ref_rank));
  json_object_object_add(root, "instances_matched", ji(an->n_multi));
  json_object_object_add(root, "files_skipped", ji(job->n_files_skipped));
  json_object_object_add(root, "utf8_replaced", ji(job->n_utf8));
  for (int i = 0; i < job->n; i++) {
    cl_rank *r = job->r[i]; cl_rank_an *ra = &an->ra[i]; json_object *x = json_object_new_object();
    double ex; const char *src = cl_rank_exposed(r, &ex);
    json_object_object_add(x, "rank", ji(r->rank));
    json_object_object_add(x, "host", js(r->info.host));
    json_object_object_add(x, "gpu", ji(r->device));
    json_object_object_add(x, "file", jpath(r->path));
    json_object_object_add(x, "comm_ns", jd(ra->comm_union));
    json_object_object_add(x, "exposed_ns", src ? jd(ex) : NULL);
    json_object_object_add(x, "exposed_source", src ? js(src) : NULL);
    json_object_object_add(x, "overlap", src && ra->comm_union > 0 ? jd(1 - ex / ra->comm_union) : NULL);
    json_object_object_add(x, "colls", ji((int64_t)r->colls.n));
    json_object_object_add(x, "instances", ji(ra->n_inst));
    json_object_object_add(x, "waited_ns", jd(ra->waited));
    json_object_object_add(x, "blame_ns", jd(ra->blame));
    json_object_object_add(x, "last_arrivals", ji(ra->n_last));
    json_object_object_add(x, "late_mean_ns", jd(ra->n_last ? ra->late_sum / (double)ra->n_last : 0));
    json_object *w = json_object_new_array();
    for (int k = 0; k < 3 && k < ra->n_last; k++) {
      cl_inst *in = &job->inst.a[ra->worst[k]]; json_object *e = json_object_new_object();
      json_object_object_add(e, "comm", jcomm(in->comm)); json_object_object_add(e, "func", js(cl_func_name(in->func)));
      json_object_object_add(e, "seq", ji(in->seq)); json_object_object_add(e, "wait_ns", jd(ra->worst_w[k]));
      json_object_array_add(w, e);
    }
    json_object_object_add(x, "worst_instances", w);
    json_object_object_add(x, "coll_time_ns", jd(ra->coll_time));
    json_object_object_add(x, "transfer_ns", jd(ra->transfer));
    json_object *c = json_object_new_object();
    cl_clock_json(c, r);
    json_object_object_add(x, "clock", c);
    json_object *p = json_object_new_object();
    json_object_object_add(p, "abi", ji(r->info.abi));
    json_object_object_add(p, "version", js(r->info.version));
    json_object_object_add(p, "events", ji(r->info.n_events));
    json_object_object_add(p, "events_reported", ji(r->info.st_events));
    json_object_object_add(p, "dropped", ji(r->info.st_dropped));
    json_object_object_add(p, "overhead_pct", json_object_new_double(r->info.st_overhead_pct));
    json_object_object_add(p, "overhead_ns_per_call", ji(r->info.st_overhead_ns));
    json_object_object_add(p, "overhead_ns_per_call_median", ji(r->info.st_overhead_med_ns));
    json_object_object_add(p, "final", json_object_new_boolean(r->info.final));
    json_object_object_add(p, "truncated", json_object_new_boolean(r->info.truncated || r->info.bad));
    json_object_object_add(x, "plugin", p);
    json_object_array_add(ranks, x);
  }
  json_object_object_add(root, "ranks", ranks);
  int *ord = cl_xmalloc(((size_t)job->n + 1) * sizeof(int));
  const cl_blame *bl = &an->bl;
  json_object *sl = json_object_new_array();
  for (int k = 0; k < job->n; k++) {
    int ri = bl->order[k];
    cl_rank_an *ra = &an->ra[ri];
    const cl_blame_rank *br = &bl->rank[ri];
    if (!ra->n_last) continue;
    json_object *x = json_object_new_object();
    json_object_object_add(x, "rank", ji(job->r[ri]->rank));
    json_object_object_add(x, "persistent", json_object_new_boolean(br->persistent));
    json_object_object_add(x, "late_significant", ji(br->n_sig));
    json_object_object_add(x, "instances_outside_warmup", ji(br->n_eligible));
    json_object_object_add(x, "median_margin_ns", jd(br->median_margin));
    json_object_object_add(x, "wait_caused_ns", jd(br->wait_sig));
    json_object_object_add(x, "wait_warmup_ns", jd(br->wait_warmup));
    json_object_object_add(x, "last_in_warmup", ji(br->n_last_warmup));
    json_object_object_add(x, "blame_ns", jd(ra->blame));
    json_object_object_add(x, "last_arrivals", ji(ra->n_last));
    json_object_object_add(x, "instances", ji(ra->n_inst));
    json_object_object_add(x, "late_mean_ns", jd(ra->late_sum / (double)ra->n_last));
    json_object *w = json_object_new_array();
    for (int k2 = 0; k2 < 3 && k2 < br->n_sig; k2++) {
      cl_inst *in = &job->inst.a[br->worst[k2]]; json_object *e = json_object_new_object();
      json_object_object_add(e, "func", js(cl_func_name(in->func)));
      json_object_object_add(e, "seq", ji(in->seq));
      json_object_object_add(e, "comm", jcomm(in->comm));
      json_object_object_add(e, "wait_ns", jd(br->worst_w[k2]));
      json_object_object_add(e, "margin_ns", jd(bl->inst[br->worst[k2]].margin));
      json_object_object_add(e, "step", bl->inst[br->worst[k2]].step >= 0 ? ji(bl->inst[br->worst[k2]].step) : NULL);
      json_object_array_add(w, e);
    }
    json_object_object_add(x, "worst_significant", w);
    json_object_array_add(sl, x);
  }
  json_object *at = json_object_new_object();
  json_object_object_add(at, "warmup_instances", ji(bl->n_warmup));
  json_object_object_add(at, "instances_outside_warmup", ji(bl->n_eligible));
  json_object_object_add(at, "confidence", isinf(bl->confidence) ? NULL : jd(bl->confidence));
  json_object_object_add(at, "top_is_alone", json_object_new_boolean(isinf(bl->confidence)));
  json_object *sj = json_object_new_array();
  for (size_t k = 0; k < bl->nsteps; k++) {
    const cl_blame_step *st = &bl->steps[k]; json_object *e = json_object_new_object();
    json_object_object_add(e, "step", ji(st->step));
    json_object_object_add(e, "lost_ns", jd(st->lost));
    json_object_object_add(e, "culprit", st->culprit >= 0 ? ji(job->r[st->culprit]->rank) : NULL);
    json_object_object_add(e, "culprit_wait_ns", jd(st->culprit_wait));
    json_object_object_add(e, "instances", ji(st->n_inst));
    json_object_array_add(sj, e);
  }
  json_object_object_add(at, "steps", sj);
  json_object_object_add(root, "attribution", at);
  json_object_object_add(root, "slow_ranks", sl);
  json_object *tot = json_object_new_object();
  json_object_object_add(tot, "coll_ns", jd(an->tot_coll));
  json_object_object_add(tot, "wait_ns", jd(an->tot_wait));
  json_object_object_add(tot, "transfer_ns", jd(an->tot_transfer));
  json_object_object_add(root, "collective_time", tot);
  json_object *ch = json_object_new_array();
  for (size_t k = 0; k < an->nch; k++) {
    cl_chan_row *c = &an->ch[k]; json_object *x = json_object_new_object(); int peer; int64_t pw; peer_top(c->c, &peer, &pw);
    json_object_object_add(x, "rank", ji(job->r[c->ri]->rank));
    json_object_object_add(x, "comm", jcomm(c->c->comm));
    json_object_object_add(x, "channel", ji(c->c->channel));
    json_object_object_add(x, "kernel_ch", ji(c->c->n));
    json_object_object_add(x, "tail", ji(c->c->tail));
    json_object_object_add(x, "tail_frac", jd(c->c->n ? (double)c->c->tail / (double)c->c->n : 0));
    json_object_object_add(x, "mean_dur_ns", jd(c->mean));
    json_object_object_add(x, "vs_median", jd(c->ratio));
    json_object_object_add(x, "max_dur_ns", ji(c->c->max_dur));
    json_object_object_add(x, "max_dur_seq", ji(c->c->max_seq));
    json_object_object_add(x, "proxy_steps", ji(c->c->nsteps));
    json_object_object_add(x, "peer_wait_ns", ji(c->c->w_peer + c->c->w_recv));
    json_object_object_add(x, "top_peer", peer >= 0 ? ji(peer) : NULL);
    json_object_object_add(x, "top_peer_wait_ns", ji(pw));
    json_object_object_add(x, "gpu_wait_ns", ji(c->c->w_gpu + c->c->w_recv_gpu));
    json_object_object_add(x, "send_wait_ns", ji(c->c->w_send));
    json_object_object_add(x, "verdict", js(cl_chan_verdict(c->c)));
    json_object_array_add(ch, x);
  }
  json_object_object_add(root, "slow_channels", ch);
  json_object *bw = json_object_new_array();
  for (size_t k = 0; k < an->nlow; k++) {
    uint32_t id = an->lowbw[k]; cl_inst_an *ia = &an->ia[id]; cl_inst *in = &job->inst.a[id];
    json_object *x = json_object_new_object();
    json_object_object_add(x, "comm", jcomm(in->comm)); json_object_object_add(x, "func", js(cl_func_name(in->func)));
    json_object_object_add(x, "seq", ji(in->seq)); json_object_object_add(x, "bytes", ji(in->bytes));
    json_object_object_add(x, "busbw_gbs", jd(ia->busbw)); json_object_object_add(x, "median_gbs", jd(ia->busbw / ia->ratio));
    json_object_object_add(x, "ratio", jd(ia->ratio));
    json_object_object_add(x, "last_arrival_rank", ji(ia->culprit >= 0 ? job->r[ia->culprit]->rank : -1));
    json_object_array_add(bw, x);
  }
  json_object_object_add(root, "low_bandwidth", bw);
  fputs(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE), o);
  fputc('\n', o);
  json_object_put(root);
  free(ord);
}

int cl_report(cl_job *job, int json, int top, FILE *out) {
  cl_analysis an;
  cl_analyse(job, &an);
  if (json) print_json(job, &an, out); else print_text(job, &an, top, out);
  cl_analysis_free(&an);
  return 0;
}
