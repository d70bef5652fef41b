/* html_charts.c: the HTML report's charts, each with a title, axis units and a one-line
 * reading: exposed vs hidden communication per rank, bus bandwidth against its size's median,
 * clock offsets with their errors, the plugin's cost; the two rank grids (lateness, slow
 * channels) are html_grids.c's. Missing data (one rank, no CUPTI) is said in the chart's
 * place; a large job keeps every outlier and a sample of the rest. Draws through svg.c; every
 * number comes from cl_analyse or the job. */
#include "tools/commlens/render/html_page.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POINTS 4000    /* bandwidth scatter points at most */
#define MICRO "\xc2\xb5"

static void fmt_bytes(double v, char *b, size_t n) {
  static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int k = 0;
  while (v >= 1024 && k < 4) { v /= 1024; k++; }
  if (v == floor(v)) snprintf(b, n, "%.0f %s", v, u[k]); else snprintf(b, n, "%.3g %s", v, u[k]);
}

/* Category label of a per-rank chart; arg points at a context whose first member is the job. */
static void rank_label(void *arg, int i, char *b, size_t n) { snprintf(b, n, "%d", (*(cl_job **)arg)->r[i]->rank); }

/* ---- exposed vs hidden communication ----------------------------------------------------- */
typedef struct { cl_job *job; double *v[3]; hp_unit u; } expo_ctx;
static void expo_tip(void *arg, int i, char *b, size_t n) {
  expo_ctx *x = arg; cl_rank *r = x->job->r[i]; char e[32], h[32], c[32];
  double d = x->u.div;
  if (x->v[2][i] > 0) snprintf(b, n, "rank %d (%s): %s communication, no exposure data", r->rank, cl_rank_host(r),
                               cl_fmt_time(c, sizeof c, x->v[2][i] * d));
  else snprintf(b, n, "rank %d (%s): exposed %s, hidden %s of %s communication", r->rank, cl_rank_host(r),
                cl_fmt_time(e, sizeof e, x->v[0][i] * d), cl_fmt_time(h, sizeof h, x->v[1][i] * d),
                cl_fmt_time(c, sizeof c, (x->v[0][i] + x->v[1][i]) * d));
}
static void chart_exposure(hp_page *p) {
  cl_job *job = p->job; int n = job->n, have = 0, most = -1;
  expo_ctx x = {job, {0}, {0}};
  for (int s = 0; s < 3; s++) x.v[s] = cl_xcalloc((size_t)n, sizeof(double));
  double *ex = cl_xcalloc((size_t)n, sizeof(double)), maxc = 0;
  for (int i = 0; i < n; i++) {
    double e, c = p->an->ra[i].comm_union;
    if (c > maxc) maxc = c;
    if (!cl_rank_exposed(job->r[i], &e)) { x.v[2][i] = c; continue; }
    x.v[0][i] = e; x.v[1][i] = c > e ? c - e : 0; ex[have++] = e;
    if (most < 0 || e > x.v[0][most]) most = i;
  }
  char *rd = p->reading[HP_EXPOSURE], a[32], b[32], c[32];
  size_t rn = sizeof p->reading[0];
  if (!have) snprintf(rd, rn, "no exposure data: the traces were recorded without CUPTI (COMMLENS_CUPTI=off, or CUPTI unavailable)");
  else {
    double cu = p->an->ra[most].comm_union;
    snprintf(rd, rn, "rank %d (%s) exposes the most communication: %s of %s (%.0f%% hidden); the median rank exposes %s",
             job->r[most]->rank, cl_rank_host(job->r[most]), cl_fmt_time(a, sizeof a, x.v[0][most]),
             cl_fmt_time(b, sizeof b, cu), cu > 0 ? 100 * (1 - x.v[0][most] / cu) : 0,
             cl_fmt_time(c, sizeof c, cl_median_dbl(ex, (size_t)have)));
  }
  hp_section(p, HP_EXPOSURE);
  if (!have) {
    hp_placeholder(p, "No exposure data in any trace: exposed communication needs the GPU's kernels from CUPTI. "
                      "It is on by default: check that COMMLENS_CUPTI is not off and the summary's \"GPU timing\" line for why CUPTI was unavailable.");
  } else {
    x.u = hp_unit_for(maxc);
    for (int s = 0; s < 3; s++) for (int i = 0; i < n; i++) x.v[s][i] /= x.u.div;
    static const char *const col[] = {"#d9622b", "#8fb3d9", "#bdbdbd"};
    static const char *const ser[] = {"exposed (compute did not hide it)", "hidden behind compute", "no exposure data"};
    char yt[48];
    snprintf(yt, sizeof yt, "communication per rank (%s)", x.u.name);
    cl_bars bars = {HP_CHART_W, 300, n, have < n ? 3 : 2, (const double *const *)x.v, col, ser, rank_label, &x,
                    expo_tip, hp_fmt_num, yt, "rank"};
    cl_svg_bars(p->o, &bars);
    hp_note(p, "Communication = union of the rank's coll_gpu spans; exposed = the part of it no compute kernel "
               "overlapped (coll_gpu exposed_ns, else the exposed slices).%s",
            have < n ? " Grey: ranks whose trace has no exposure data." : "");
  }
  fputs("</section>\n", p->o);
  for (int s = 0; s < 3; s++) free(x.v[s]);
  free(ex);
}

/* ---- bus bandwidth ----------------------------------------------------------------------- */
#define LOW_RATIO 0.8   /* drawn as an outlier below this fraction of its size's median */
static const char *const FUNC_COLOUR[] = {"#3b6fb6", "#2e9a5b", "#b38f00", "#7a4fb0", "#1a9aa6", "#8c6d4f"};
#define NFUNC_COLOUR 6

typedef struct { int func; int64_t bytes; double median; } bw_median;
static int cmp_bw_median(const void *a, const void *b) {
  const bw_median *x = a, *y = b;
  if (x->func != y->func) return x->func - y->func;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

static void chart_bandwidth(hp_page *p) {
  cl_job *job = p->job; cl_analysis *an = p->an; FILE *o = p->o;
  uint32_t *pts = cl_xmalloc((job->inst.n + 1) * sizeof *pts); size_t np = 0, nlow = 0, nmed = 0;
  double bmin = INFINITY, bmax = 0, ymin = INFINITY, ymax = 0;
  int funcs[NFUNC_COLOUR], nf = 0;
  for (size_t i = 0; i < job->inst.n; i++) {
    cl_inst_an *ia = &an->ia[i];
    if (!(ia->busbw > 0)) continue;
    pts[np++] = (uint32_t)i;
    nlow += ia->ratio > 0 && ia->ratio < LOW_RATIO;
    nmed += ia->ratio > 0;
  }
  /* at most MAX_POINTS: every outlier, then an even sample of the others */
  size_t keep = np;
  if (np > MAX_POINTS) {
    size_t k = 0, others = np - nlow, room = MAX_POINTS > nlow ? MAX_POINTS - nlow : 0, seen = 0;
    for (size_t j = 0; j < np; j++) {
      cl_inst_an *ia = &an->ia[pts[j]];
      int take;
      if (ia->ratio > 0 && ia->ratio < LOW_RATIO) take = k < MAX_POINTS;
      else { size_t s0 = seen++; take = (s0 * room) / others != (seen * room) / others; }
      if (take) pts[k++] = pts[j];
    }
    keep = k;
  }
  bw_median *med = cl_xmalloc((keep + 1) * sizeof *med); size_t nm = 0;
  for (size_t j = 0; j < keep; j++) {
    cl_inst *in = &job->inst.a[pts[j]]; cl_inst_an *ia = &an->ia[pts[j]];
    bmin = fmin(bmin, (double)in->bytes); bmax = fmax(bmax, (double)in->bytes);
    ymin = fmin(ymin, ia->busbw); ymax = fmax(ymax, ia->busbw);
    if (ia->ratio > 0) { med[nm++] = (bw_median){in->func, in->bytes, ia->busbw / ia->ratio}; }
    int f = 0;
    while (f < nf && funcs[f] != in->func) f++;
    if (f == nf && nf < NFUNC_COLOUR) funcs[nf++] = in->func;
  }
  char *rd = p->reading[HP_BANDWIDTH], a[32], b[32], g1[32], g2[32];
  size_t rn = sizeof p->reading[0];
  if (!np) snprintf(rd, rn, "no collective with a size and a duration on two or more ranks");
  else if (!an->nlow) snprintf(rd, rn, "%zu instances; %s", np, nmed ? "none below the median of its (func, size)"
                                                                : "fewer than 3 instances per (func, size): no median to compare with");
  else {
    uint32_t id = an->lowbw[0]; cl_inst *in = &job->inst.a[id]; cl_inst_an *ia = &an->ia[id];
    hp_inst_label(job, id, a, sizeof a);
    fmt_bytes((double)in->bytes, b, sizeof b);
    snprintf(rd, rn, "%s (%s) reached %s, %.2f" HP_TIMES " the median %s for its size; %zu of %zu instances "
             "below %.1f" HP_TIMES " their median", a, b, hp_fmt_bw(ia->busbw, g1, sizeof g1), ia->ratio,
             hp_fmt_bw(ia->busbw / ia->ratio, g2, sizeof g2), nlow, np, LOW_RATIO);
  }
  hp_section(p, HP_BANDWIDTH);
  if (!np) {
    hp_placeholder(p, "No bandwidth to plot: bus bandwidth needs collectives matched on two or more ranks, "
                      "with their sizes (bytes) and durations.");
    fputs("</section>\n", o);
    free(pts); free(med);
    return;
  }
  int w = HP_CHART_W, h = 340;
  double x0 = 64, x1 = w - 16, y0 = 26, y1 = h - 46;
  cl_scale sx = {bmin / 1.6, bmax * 1.6, x0, x1, 2}, sy = {ymin / 1.5, ymax * 1.5, y1, y0, 10};
  cl_svg_begin(o, w, h, hp_chart_title[HP_BANDWIDTH]);
  cl_svg_axis(o, &sy, 1, x0, y0, x1, y1, hp_fmt_num, "bus bandwidth (GB/s, log scale)");
  /* size ticks at the sizes there are while they fit (sorted, distinct), else at powers of two */
  double sizes[13]; int ns = 0;
  for (size_t j = 0; j < keep && ns <= 12; j++) {
    double v = (double)job->inst.a[pts[j]].bytes; int k = ns;
    while (k > 0 && sizes[k - 1] > v) k--;
    if (k > 0 && sizes[k - 1] == v) continue;
    memmove(sizes + k + 1, sizes + k, (size_t)(ns - k) * sizeof *sizes);
    sizes[k] = v; ns++;
  }
  if (ns <= 12) cl_svg_axis_at(o, &sx, 0, x0, y0, x1, y1, sizes, ns, fmt_bytes, "message size (bytes, log scale)");
  else cl_svg_axis(o, &sx, 0, x0, y0, x1, y1, fmt_bytes, "message size (bytes, log scale)");
  const char *lc[NFUNC_COLOUR + 1], *ln[NFUNC_COLOUR + 1];
  for (int f = 0; f < nf; f++) { lc[f] = FUNC_COLOUR[f]; ln[f] = cl_func_name(funcs[f]); }
  lc[nf] = "#d7301f"; ln[nf] = "below 0.8" HP_TIMES " its median";
  cl_svg_legend(o, x0, 14, nf + 1, lc, ln);
  char tip[320], lab[64], sz[32];
  for (size_t j = 0; j < keep; j++) {
    cl_inst *in = &job->inst.a[pts[j]]; cl_inst_an *ia = &an->ia[pts[j]];
    int f = 0, low = ia->ratio > 0 && ia->ratio < LOW_RATIO;
    while (f < nf && funcs[f] != in->func) f++;
    double jit = (double)(cl_hash64(pts[j]) % 1000) / 1000.0 * 12 - 6;   /* spread the points of one size */
    hp_inst_label(job, pts[j], lab, sizeof lab);
    fmt_bytes((double)in->bytes, sz, sizeof sz);
    hp_fmt_bw(ia->busbw, g1, sizeof g1);
    if (ia->ratio > 0)
      snprintf(tip, sizeof tip, "%s, %s: %s, %.2f" HP_TIMES " the median %s; last to arrive: rank %d", lab, sz, g1, ia->ratio,
               hp_fmt_bw(ia->busbw / ia->ratio, g2, sizeof g2), job->r[ia->culprit]->rank);
    else snprintf(tip, sizeof tip, "%s, %s: %s (fewer than 3 of this size: no median)", lab, sz, g1);
    cl_svg_dot(o, cl_scale_px(&sx, (double)in->bytes) + jit, cl_scale_px(&sy, ia->busbw), low ? 4.5 : 2.8,
               low ? "#d7301f" : f < nf ? FUNC_COLOUR[f] : "#999", tip);
  }
  qsort(med, nm, sizeof *med, cmp_bw_median);
  for (size_t k = 0; k < nm; k++) {   /* one dash per (func, size): its median */
    if (k && !cmp_bw_median(&med[k], &med[k - 1])) continue;
    double x = cl_scale_px(&sx, (double)med[k].bytes), y = cl_scale_px(&sy, med[k].median);
    cl_svg_line(o, x - 14, y, x + 14, y, "#111", 2.5);
  }
  cl_svg_end(o);
  hp_note(p, "Each dot is one collective instance: bus bandwidth = bytes " HP_TIMES " the nccl-tests factor / its shortest "
             "duration across ranks. Black dash: the median of the same (func, size), drawn where there are 3 or more.%s",
          keep < np ? " Large job: every outlier is drawn, with an even sample of the others." : "");
  if (keep < np) hp_note(p, "%zu of %zu instances drawn.", keep, np);
  fputs("</section>\n", o);
  free(pts); free(med);
}

/* ---- clock offsets ----------------------------------------------------------------------- */
static void chart_clocks(hp_page *p) {
  cl_job *job = p->job; FILE *o = p->o; int n = job->n, unal = 0, worst = -1;
  double lo = 0, hi = 0;
  for (int i = 0; i < n; i++) {
    cl_rank *r = job->r[i];
    if (!r->aligned) { unal++; continue; }
    lo = fmin(lo, (double)(r->offset_ns - r->off_mad_ns)); hi = fmax(hi, (double)(r->offset_ns + r->off_mad_ns));
    if (worst < 0 || llabs(r->offset_ns) > llabs(job->r[worst]->offset_ns)) worst = i;
  }
  char *rd = p->reading[HP_CLOCKS], a[32], b[32], c[32];
  size_t rn = sizeof p->reading[0];
  if (n < 2) snprintf(rd, rn, "one rank: its clock is the reference");
  else if (worst < 0 || !job->r[worst]->offset_ns) snprintf(rd, rn, "no offset found against rank %d%s", job->ref_rank,
                                                           unal ? "; some ranks could not be aligned" : "");
  else {
    cl_rank *r = job->r[worst];
    snprintf(rd, rn, "largest offset: rank %d, %s%s " "\xc2\xb1" " %s (spread %s, %d samples) vs rank %d; %s", r->rank,
             r->offset_ns > 0 ? "+" : "", cl_fmt_time(a, sizeof a, (double)r->offset_ns), cl_fmt_time(b, sizeof b, (double)r->off_err_ns),
             cl_fmt_time(c, sizeof c, (double)r->off_mad_ns), r->off_samples, job->ref_rank,
             unal ? "some ranks could not be aligned (grey)" : "every rank aligned");
  }
  hp_section(p, HP_CLOCKS);
  if (n < 2) { hp_placeholder(p, "One rank: there is no other clock to align."); fputs("</section>\n", o); return; }
  hp_unit u = hp_unit_for(fmax(-lo, hi));
  double pad = (hi - lo) * 0.08 + u.div * 0.001;
  int w = HP_CHART_W, h = 300;
  double x0 = 64, x1 = w - 16, y0 = 26, y1 = h - 46, slot = (x1 - x0) / n;
  cl_scale sy = {(lo - pad) / u.div, (hi + pad) / u.div, y1, y0, 0};
  char yt[64], tip[320];
  snprintf(yt, sizeof yt, "offset vs rank %d (%s)", job->ref_rank, u.name);
  cl_svg_begin(o, w, h, hp_chart_title[HP_CLOCKS]);
  cl_svg_axis(o, &sy, 1, x0, y0, x1, y1, hp_fmt_signed, yt);
  cl_svg_line(o, x0, cl_scale_px(&sy, 0), x1, cl_scale_px(&sy, 0), "#777", 1);
  static const char *const lc[] = {"#1f4e8c", "#1f4e8c", "#b9d3ee", "#aaa"};
  static const char *const ln[] = {"offset", "\xc2\xb1 error (std. error of the median)", "\xc2\xb1 spread (1.4826 MAD)", "unaligned"};
  cl_svg_legend(o, x0, 14, unal ? 4 : 3, lc, ln);
  for (int i = 0; i < n; i++) {
    cl_rank *r = job->r[i];
    double x = x0 + (i + 0.5) * slot, bw = fmax(2, fmin(18, slot * 0.5));
    if (!r->aligned) {
      snprintf(tip, sizeof tip, "rank %d (%s): unaligned (no instance shared with an aligned rank)", r->rank, cl_rank_host(r));
      cl_svg_dot(o, x, cl_scale_px(&sy, 0), 4, "#aaa", tip);
      continue;
    }
    double off = (double)r->offset_ns / u.div, err = (double)r->off_err_ns / u.div, mad = (double)r->off_mad_ns / u.div;
    double ys = cl_scale_px(&sy, off + mad), ye = cl_scale_px(&sy, off - mad);
    cl_svg_rect(o, x - bw / 2, ys, bw, fmax(ye - ys, 0.5), "#b9d3ee", NULL);
    double ya = cl_scale_px(&sy, off + err), yb = cl_scale_px(&sy, off - err);
    cl_svg_line(o, x, ya, x, yb, "#1f4e8c", 1.5);
    cl_svg_line(o, x - bw / 3, ya, x + bw / 3, ya, "#1f4e8c", 1.5);
    cl_svg_line(o, x - bw / 3, yb, x + bw / 3, yb, "#1f4e8c", 1.5);
    char a2[32], b2[32], c2[32];
    snprintf(tip, sizeof tip, "rank %d (%s): offset %s \xc2\xb1 %s, spread %s, %d samples%s", r->rank, cl_rank_host(r),
             cl_fmt_time(a2, sizeof a2, (double)r->offset_ns), cl_fmt_time(b2, sizeof b2, (double)r->off_err_ns),
             cl_fmt_time(c2, sizeof c2, (double)r->off_mad_ns), r->off_samples, i == 0 ? " (reference)" : "");
    cl_svg_dot(o, x, cl_scale_px(&sy, off), slot >= 6 ? 3.5 : 1.8, "#1f4e8c", tip);
  }
  cl_svg_line(o, x0, y1, x1, y1, "#888", 1);
  cl_svg_categories(o, n, x0, x1, y1, rank_label, &job, "rank");
  cl_svg_end(o);
  hp_note(p, "Offset of a rank = the median over shared instances of (its end - the reference's end); subtracted "
             "from its times before any comparison above. Constant offset only (no drift).");
  fputs("</section>\n", o);
}

/* ---- the plugin's cost ------------------------------------------------------------------- */
typedef struct { cl_job *job; } cost_ctx;
static void cost_tip(void *arg, int i, char *b, size_t n) {
  cl_rank *r = ((cost_ctx *)arg)->job->r[i];
  snprintf(b, n, "rank %d (%s): overhead %.3f%% of the wall time, %lld ns per call, %lld records dropped of %lld events",
           r->rank, cl_rank_host(r), r->info.st_overhead_pct, (long long)r->info.st_overhead_ns,
           (long long)r->info.st_dropped, (long long)r->info.st_events);
}
static void chart_plugin(hp_page *p) {
  cl_job *job = p->job; int n = job->n, worst = 0, ndrop = 0, mostdrop = -1;
  double *v[3];
  for (int s = 0; s < 3; s++) v[s] = cl_xcalloc((size_t)n, sizeof(double));
  double *ns = cl_xcalloc((size_t)n, sizeof(double));
  int64_t drops = 0;
  for (int i = 0; i < n; i++) {
    cl_info *in = &job->r[i]->info;
    v[0][i] = in->st_overhead_pct; v[1][i] = (double)in->st_overhead_ns; v[2][i] = (double)in->st_dropped;
    ns[i] = v[1][i];
    if (v[0][i] > v[0][worst]) worst = i;
    if (in->st_dropped) { ndrop++; drops += in->st_dropped; if (mostdrop < 0 || v[2][i] > v[2][mostdrop]) mostdrop = i; }
  }
  char *rd = p->reading[HP_PLUGIN], dr[160] = "no records dropped";
  if (ndrop)
    snprintf(dr, sizeof dr, "%d rank(s) dropped %lld records, most rank %d (%lld)", ndrop, (long long)drops,
             job->r[mostdrop]->rank, (long long)job->r[mostdrop]->info.st_dropped);
  snprintf(rd, sizeof p->reading[0], "overhead at most %.3f%% of the wall time (rank %d), %.0f ns per call on median; %s",
           v[0][worst], job->r[worst]->rank, cl_median_dbl(ns, (size_t)n), dr);
  hp_section(p, HP_PLUGIN);
  fputs("<div class=\"row\">\n", p->o);
  static const char *const col[3][1] = {{"#6b7f99"}, {"#6b7f99"}, {"#c44e52"}};
  static const char *const ser[3][1] = {{"overhead (% of wall time)"}, {"ns per call"}, {"records dropped"}};
  static const char *const yt[3] = {"overhead (%)", "cost per call (ns)", "records dropped"};
  cost_ctx x = {job};
  for (int s = 0; s < 3; s++) {
    const double *one[1] = {v[s]};
    cl_bars bars = {360, 240, n, 1, one, col[s], ser[s], rank_label, &x, cost_tip, hp_fmt_num, yt[s], "rank"};
    cl_svg_bars(p->o, &bars);
  }
  fputs("</div>\n", p->o);
  hp_note(p, "From each trace's commlensStats: the plugin's own measured time per call and its share of the wall "
             "time; records dropped when its buffers were full (those events are missing from the trace).");
  fputs("</section>\n", p->o);
  for (int s = 0; s < 3; s++) free(v[s]);
  free(ns);
}

void hp_charts(hp_page *p) {
  chart_exposure(p);
  hp_chart_lateness(p);
  hp_chart_channels(p);
  chart_bandwidth(p);
  chart_clocks(p);
  chart_plugin(p);
}
