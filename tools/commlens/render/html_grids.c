/* html_grids.c: the HTML report's two rank grids: who arrived late (rank x collective
 * instance, or x NVTX step when the job marks steps; colour = lateness vs the instance's median
 * arrival) and the slow channels (rank x channel; colour = mean duration vs the rank's median
 * channel, outline = the usual last to finish). Hundreds of ranks or thousands of instances
 * are bucketed so that a grid keeps at most HEAT_ROWS x HEAT_COLS cells; the note under the
 * grid says how, and each cell's tooltip names the rank it shows. */
#include "tools/commlens/render/html_page.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HEAT_COLS 150      /* columns at most: more instances or steps are bucketed */
#define HEAT_ROWS 64       /* rows at most: more ranks are bucketed */
#define CHAN_COLS 96       /* (comm, channel) columns at most */

static const cl_analysis *g_an;   /* for the qsort comparators below */
static void fmt_ratio(double v, char *b, size_t n) { snprintf(b, n, "%.2f" HP_TIMES, v); }

/* Rows of a rank chart: one per rank, or `per` consecutive ranks once there are too many. */
typedef struct { cl_job *job; int per, emph; } rank_rows;
static void row_span(const rank_rows *g, int r, int *a, int *z) {
  *a = r * g->per; *z = *a + g->per - 1;
  if (*z >= g->job->n) *z = g->job->n - 1;
}
static void row_label(void *arg, int r, char *b, size_t n) {
  rank_rows *g = arg; int a, z;
  row_span(g, r, &a, &z);
  if (a == z) snprintf(b, n, "rank %d", g->job->r[a]->rank);
  else snprintf(b, n, "r%d\xe2\x80\x93%d", g->job->r[a]->rank, g->job->r[z]->rank);
}
static int row_emph(void *arg, int r) {
  rank_rows *g = arg; int a, z;
  row_span(g, r, &a, &z);
  return g->emph >= a && g->emph <= z;
}
static void rank_rows_init(rank_rows *g, cl_job *job, int emph) {
  g->job = job; g->emph = emph; g->per = (job->n + HEAT_ROWS - 1) / HEAT_ROWS;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
/* q-th quantile (0..1) of v[0..n) (sorts v); 0 when n == 0. */
static double quantile(double *v, size_t n, double q) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_dbl);
  return v[(size_t)floor(q * (double)(n - 1))];
}

/* ---- who arrived late -------------------------------------------------------------------- */
typedef struct {
  rank_rows g;                      /* first: rank_label and row_label read it */
  cl_analysis *an;
  int cols, steps;                  /* steps: columns are NVTX steps, else instances in time order */
  double *sum; int *cnt;            /* [rank * cols + col]: Σ lateness (ns), members */
  int64_t *first, *last; int *nraw; /* per column: first/last instance id (or step), how many */
  hp_unit u;
} late_map;

/* The row's value: the latest rank of the row (mean lateness over the column's members). */
static double late_at(const late_map *m, int r, int c, int *who) {
  int a, z; double best = NAN;
  row_span(&m->g, r, &a, &z);
  *who = -1;
  for (int i = a; i <= z; i++) {
    int k = m->cnt[(size_t)i * (size_t)m->cols + (size_t)c];
    if (!k) continue;
    double v = m->sum[(size_t)i * (size_t)m->cols + (size_t)c] / k;
    if (isnan(best) || v > best) { best = v; *who = i; }
  }
  return best;
}
static double late_value(void *arg, int r, int c) { int w; late_map *m = arg; return late_at(m, r, c, &w) / m->u.div; }
static void late_col(void *arg, int c, char *b, size_t n) {
  late_map *m = arg;
  if (m->steps) snprintf(b, n, "%lld", (long long)m->first[c]);
  else snprintf(b, n, "#%lld", (long long)m->g.job->inst.a[m->first[c]].seq);
}
static void late_tip(void *arg, int r, int c, double v, char *b, size_t n) {
  late_map *m = arg; int who, a, z; char rk[96], col[160], t[32], f[48], l[48];
  double ns = late_at(m, r, c, &who);
  row_span(&m->g, r, &a, &z);
  if (who < 0) { row_label(&m->g, r, rk, sizeof rk); snprintf(b, n, "%s: not in this column's collectives", rk); return; }
  cl_rank *rr = m->g.job->r[who];
  if (a == z) snprintf(rk, sizeof rk, "rank %d (%s)", rr->rank, cl_rank_host(rr));
  else snprintf(rk, sizeof rk, "rank %d (the latest of ranks %d-%d)", rr->rank, m->g.job->r[a]->rank, m->g.job->r[z]->rank);
  if (m->steps && m->nraw[c] == 1) snprintf(col, sizeof col, "step %lld", (long long)m->first[c]);
  else if (m->steps) snprintf(col, sizeof col, "steps %lld-%lld", (long long)m->first[c], (long long)m->last[c]);
  else {
    hp_inst_label(m->g.job, (uint32_t)m->first[c], f, sizeof f);
    hp_inst_label(m->g.job, (uint32_t)m->last[c], l, sizeof l);
    if (m->nraw[c] == 1) snprintf(col, sizeof col, "%s", f);
    else snprintf(col, sizeof col, "%d instances, %s .. %s", m->nraw[c], f, l);
  }
  (void)v;
  snprintf(b, n, "%s, %s: %s%s vs the median arrival%s", rk, col, ns > 0 ? "+" : "", cl_fmt_time(t, sizeof t, ns),
           m->steps || m->nraw[c] > 1 ? " (mean)" : "");
}

static int cmp_arrival(const void *a, const void *b) {
  int64_t x = g_an->ia[*(const uint32_t *)a].med_arrival, y = g_an->ia[*(const uint32_t *)b].med_arrival;
  return x < y ? -1 : x > y;
}
static int cmp_step(const void *a, const void *b) {
  const cl_step *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}
static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return x < y ? -1 : x > y;
}
/* The NVTX step (of the rank's own step markers, sorted by start) holding time t, -1 if none. */
static long step_at(const cl_step *s, size_t n, int64_t t) {
  size_t lo = 0, hi = n;
  while (lo < hi) { size_t mid = (lo + hi) / 2; if (s[mid].start <= t) lo = mid + 1; else hi = mid; }
  for (size_t k = lo; k > 0 && lo - k < 2; k--)   /* the last step starting before t, or the one before it */
    if (t < s[k - 1].end) return s[k - 1].step;
  return -1;
}

void hp_chart_lateness(hp_page *p) {
  cl_job *job = p->job; cl_analysis *an = p->an; int n = job->n;
  late_map m;
  memset(&m, 0, sizeof m);
  rank_rows_init(&m.g, job, p->top);
  m.an = an;
  uint32_t *ord = cl_xmalloc((job->inst.n + 1) * sizeof *ord); size_t ni = 0;
  for (size_t i = 0; i < job->inst.n; i++) if (an->ia[i].culprit >= 0) ord[ni++] = (uint32_t)i;
  g_an = an;
  qsort(ord, ni, sizeof *ord, cmp_arrival);
  /* NVTX steps: each member goes to the step of its own rank that holds its arrival */
  cl_step **st = cl_xcalloc((size_t)n, sizeof *st);
  long *stepno = NULL; size_t nstep = 0;
  CL_VEC(long) seen = {0};
  for (int i = 0; i < n; i++) {
    cl_rank *r = job->r[i];
    if (!r->steps.n) continue;
    st[i] = cl_xmalloc(r->steps.n * sizeof(cl_step));
    memcpy(st[i], r->steps.a, r->steps.n * sizeof(cl_step));
    qsort(st[i], r->steps.n, sizeof(cl_step), cmp_step);
  }
  for (size_t k = 0; k < ni; k++) {
    cl_inst *in = &job->inst.a[ord[k]];
    for (uint32_t j = 0; j < in->count; j++) {
      cl_member *mb = &job->mem.a[in->first + j];
      if (!st[mb->rank_idx]) continue;
      long s = step_at(st[mb->rank_idx], job->r[mb->rank_idx]->steps.n, job->r[mb->rank_idx]->colls.a[mb->coll_idx].start);
      if (s >= 0) CL_PUSH(seen, s);
    }
  }
  if (seen.n) qsort(seen.a, seen.n, sizeof(long), cmp_long);   /* seen.a is NULL when none was pushed */
  for (size_t k = 0; k < seen.n; k++) if (!k || seen.a[k] != seen.a[k - 1]) seen.a[nstep++] = seen.a[k];
  stepno = seen.a;
  m.steps = nstep >= 2;
  size_t nraw = m.steps ? nstep : ni;
  m.cols = nraw > HEAT_COLS ? HEAT_COLS : (int)nraw;
  int rows = (n + m.g.per - 1) / m.g.per;
  /* fill: lateness = aligned arrival - the instance's median arrival */
  if (m.cols) {
    m.sum = cl_xcalloc((size_t)n * (size_t)m.cols, sizeof(double));
    m.cnt = cl_xcalloc((size_t)n * (size_t)m.cols, sizeof(int));
    m.first = cl_xmalloc((size_t)m.cols * sizeof(int64_t)); m.last = cl_xmalloc((size_t)m.cols * sizeof(int64_t));
    m.nraw = cl_xcalloc((size_t)m.cols, sizeof(int));
    for (size_t k = 0; k < nraw; k++) {
      int c = (int)(k * (size_t)m.cols / nraw);
      int64_t lab = m.steps ? stepno[k] : (int64_t)ord[k];
      if (!m.nraw[c]++) m.first[c] = lab;
      m.last[c] = lab;
    }
    for (size_t k = 0; k < ni; k++) {
      cl_inst *in = &job->inst.a[ord[k]];
      for (uint32_t j = 0; j < in->count; j++) {
        cl_member *mb = &job->mem.a[in->first + j];
        cl_rank *r = job->r[mb->rank_idx]; cl_coll *cc = &r->colls.a[mb->coll_idx];
        double late = (double)(cl_aligned(r, cc->start) - an->ia[ord[k]].med_arrival);
        size_t raw = k;
        if (m.steps) {
          long s = st[mb->rank_idx] ? step_at(st[mb->rank_idx], r->steps.n, cc->start) : -1;
          long *hit = s >= 0 ? bsearch(&s, stepno, nstep, sizeof(long), cmp_long) : NULL;
          if (!hit) continue;
          raw = (size_t)(hit - stepno);
        }
        size_t at = (size_t)mb->rank_idx * (size_t)m.cols + raw * (size_t)m.cols / nraw;
        m.sum[at] += late; m.cnt[at]++;
      }
    }
  }
  /* reading, colour domain */
  char *rd = p->reading[HP_LATENESS], b[32];
  size_t rn = sizeof p->reading[0];
  if (!ni) snprintf(rd, rn, n < 2 ? "one rank: arrivals need two or more ranks to compare"
                                  : "no collective instance was matched on two or more ranks");
  else {
    cl_rank_an *ra = &an->ra[p->top];
    if (p->top >= 0)   /* the verdict says who, if anyone, is a straggler: the reading repeats it */
      snprintf(rd, rn, "%.300s; rank %d (%s) arrived last in %lld/%lld instances, the others waited %s for it in all",
               an->vd.line, job->r[p->top]->rank, cl_rank_host(job->r[p->top]), (long long)ra->n_last,
               (long long)ra->n_inst, cl_fmt_time(b, sizeof b, ra->blame));
    else snprintf(rd, rn, "%.300s", an->vd.line);
  }
  hp_section(p, HP_LATENESS);
  if (!ni || !m.cols) hp_placeholder(p, n < 2 ? "One rank: there is no other rank to arrive earlier or later than it."
                                               : "No collective instance was matched on two or more ranks: nothing to compare arrivals in.");
  else {
    double *abs_v = cl_xmalloc((size_t)rows * (size_t)m.cols * sizeof(double)), maxv = 0; size_t nv = 0;
    m.u.div = 1;
    for (int r = 0; r < rows; r++)
      for (int c = 0; c < m.cols; c++) { double v = late_value(&m, r, c); if (!isnan(v)) { abs_v[nv++] = fabs(v); if (fabs(v) > maxv) maxv = fabs(v); } }
    double lim = quantile(abs_v, nv, 0.99);
    if (!(lim > 0)) lim = maxv > 0 ? maxv : 1;
    m.u = hp_unit_for(lim);
    char lt[48], xt[160];
    snprintf(lt, sizeof lt, "%s vs median", m.u.name);
    snprintf(xt, sizeof xt, m.steps ? "NVTX step (step number)" : "collective instances in time order (#seq of the first in each column)");
    cl_heatmap hm = {HP_CHART_W, rows, m.cols, late_value, NULL, row_label, late_col, late_tip, NULL, row_emph, &m,
                     -lim / m.u.div, 0, lim / m.u.div, maxv > lim, maxv > lim, hp_fmt_signed, xt, lt};
    cl_svg_heatmap(p->o, &hm);
    hp_note(p, "Colour: how late the rank arrived (aligned coll_gpu start) vs the median arrival of the same "
               "instance; red = later, blue = earlier (it waited), white = with the median, grey = not in it.%s%s%s",
            m.steps ? " Columns are NVTX steps; a cell is the mean over the rank's collectives in the step." : "",
            (int)nraw > m.cols ? " Columns are buckets of consecutive instances or steps (mean)." : "",
            m.g.per > 1 ? " Rows are buckets of consecutive ranks: a cell shows the latest of them (hover to see which)." : "");
    if ((int)nraw > m.cols) hp_note(p, "%zu %s in %d columns.", nraw, m.steps ? "steps" : "instances", m.cols);
    if (m.g.per > 1) hp_note(p, "%d ranks in %d rows of %d.", n, rows, m.g.per);
    free(abs_v);
  }
  fputs("</section>\n", p->o);
  for (int i = 0; i < n; i++) free(st[i]);
  free(st); free(stepno); free(ord);
  free(m.sum); free(m.cnt); free(m.first); free(m.last); free(m.nraw);
}

/* ---- slow channels ----------------------------------------------------------------------- */
typedef struct { uint64_t comm; int ch; } chan_key;
typedef struct {
  rank_rows g;
  int cols;
  chan_key *keys;
  const cl_chan_row **cell;         /* [rank * cols + col], NULL: no such channel */
  unsigned char *hot;               /* [rank * cols + col]: last to finish in half of its collectives or more */
} chan_map;

static int cmp_key(const void *a, const void *b) {
  const chan_key *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  return x->ch - y->ch;
}
/* The row's slowest channel in column c (largest mean vs the rank's median), NULL if none. */
static const cl_chan_row *chan_at(const chan_map *m, int r, int c) {
  int a, z; const cl_chan_row *best = NULL;
  row_span(&m->g, r, &a, &z);
  for (int i = a; i <= z; i++) {
    const cl_chan_row *x = m->cell[(size_t)i * (size_t)m->cols + (size_t)c];
    if (x && (!best || x->ratio > best->ratio)) best = x;
  }
  return best;
}
static double chan_value(void *arg, int r, int c) { const cl_chan_row *x = chan_at(arg, r, c); return x ? x->ratio : NAN; }
static int chan_outline(void *arg, int r, int c) {
  chan_map *m = arg; int a, z;
  row_span(&m->g, r, &a, &z);
  for (int i = a; i <= z; i++) if (m->hot[(size_t)i * (size_t)m->cols + (size_t)c]) return 1;
  return 0;
}
static void chan_col(void *arg, int c, char *b, size_t n) { snprintf(b, n, "ch %d", ((chan_map *)arg)->keys[c].ch); }
static void chan_text(void *arg, int r, int c, char *b, size_t n) {
  chan_map *m = arg; const cl_chan_row *x = chan_at(m, r, c);
  if (x && m->g.per == 1) snprintf(b, n, "%lld/%lld", (long long)x->c->tail, (long long)x->c->n); else b[0] = 0;
}
static void chan_tip(void *arg, int r, int c, double v, char *b, size_t n) {
  chan_map *m = arg; const cl_chan_row *x = chan_at(m, r, c); char cn[64], t[32];
  hp_comm_label(m->keys[c].comm, cn, sizeof cn);
  (void)v;
  if (!x) { char rk[64]; row_label(&m->g, r, rk, sizeof rk); snprintf(b, n, "%s, comm %s ch %d: no KernelCh", rk, cn, m->keys[c].ch); return; }
  cl_rank *rr = m->g.job->r[x->ri];
  snprintf(b, n, "rank %d (%s), comm %s ch %d: last to finish in %lld/%lld collectives; mean %s = %.2f" HP_TIMES
           " the rank's median channel%s", rr->rank, cl_rank_host(rr), cn, x->c->channel, (long long)x->c->tail,
           (long long)x->c->n, cl_fmt_time(t, sizeof t, x->mean), x->ratio, m->g.per > 1 ? " (the slowest of the row)" : "");
}

void hp_chart_channels(hp_page *p) {
  cl_job *job = p->job; cl_analysis *an = p->an; int n = job->n;
  chan_map m;
  memset(&m, 0, sizeof m);
  const cl_chan_row *first = NULL;   /* an->ch is slowest first */
  CL_VEC(chan_key) keys = {0};
  for (size_t k = 0; k < an->nch; k++) {
    if (!an->ch[k].c->n) continue;
    if (!first) first = &an->ch[k];
    CL_PUSH(keys, ((chan_key){an->ch[k].c->comm, an->ch[k].c->channel}));
  }
  if (keys.n) qsort(keys.a, keys.n, sizeof(chan_key), cmp_key);
  size_t nk = 0;
  for (size_t k = 0; k < keys.n; k++) if (!nk || cmp_key(&keys.a[k], &keys.a[nk - 1])) keys.a[nk++] = keys.a[k];
  rank_rows_init(&m.g, job, first ? first->ri : -1);
  m.keys = keys.a; m.cols = nk > CHAN_COLS ? CHAN_COLS : (int)nk;
  char *rd = p->reading[HP_CHANNELS], cn[64], t[32];
  size_t rn = sizeof p->reading[0];
  if (!first) snprintf(rd, rn, "no KernelCh events in the traces: no channel timings");
  else {
    hp_comm_label(first->c->comm, cn, sizeof cn);
    snprintf(rd, rn, "rank %d channel %d (comm %s) finished last in %lld/%lld of its collectives; mean %s, %.2f" HP_TIMES
             " its rank's median channel%s%s", job->r[first->ri]->rank, first->c->channel, cn, (long long)first->c->tail,
             (long long)first->c->n, cl_fmt_time(t, sizeof t, first->mean), first->ratio,
             first->c->nsteps ? "; its proxy steps " : "", first->c->nsteps ? cl_chan_verdict(first->c) : "");
  }
  hp_section(p, HP_CHANNELS);
  if (!first) hp_placeholder(p, "No KernelCh events: channel timings need NCCL's kernel-channel events "
                                "(COMMLENS_EVENTS=default+kernelch or full; profiler ABI v3 or later).");
  else {
    int rows = (n + m.g.per - 1) / m.g.per;
    m.cell = cl_xcalloc((size_t)n * (size_t)m.cols, sizeof *m.cell);
    m.hot = cl_xcalloc((size_t)n * (size_t)m.cols, 1);
    double lo = 1, hi = 1;
    for (size_t k = 0; k < an->nch; k++) {
      const cl_chan_row *x = &an->ch[k];
      chan_key key = {x->c->comm, x->c->channel};
      chan_key *hit = x->c->n ? bsearch(&key, keys.a, (size_t)m.cols, sizeof key, cmp_key) : NULL;
      if (!hit) continue;
      size_t at = (size_t)x->ri * (size_t)m.cols + (size_t)(hit - keys.a);
      m.cell[at] = x;
      if (x->ratio > hi) hi = x->ratio;
      if (x->ratio < lo) lo = x->ratio;
    }
    /* hot: the tail at least twice as often as its share among the rank's channels of that comm */
    for (int i = 0; i < n; i++)
      for (int c = 0; c < m.cols; c++) {
        const cl_chan_row *x = m.cell[(size_t)i * (size_t)m.cols + (size_t)c];
        if (!x) continue;
        int peers = 0;
        for (int d = 0; d < m.cols; d++) peers += m.keys[d].comm == x->c->comm && m.cell[(size_t)i * (size_t)m.cols + (size_t)d];
        double frac = (double)x->c->tail / (double)x->c->n;
        m.hot[(size_t)i * (size_t)m.cols + (size_t)c] = peers > 1 && frac >= 0.5 && frac >= 2.0 / peers;
      }
    if (hi < 1.1) hi = 1.1;
    if (lo > 0.9) lo = 0.9;
    cl_heatmap hm = {HP_CHART_W, rows, m.cols, chan_value, chan_outline, row_label, chan_col, chan_tip, chan_text,
                     row_emph, &m, lo, 1, hi, 0, 0, fmt_ratio,
                     "channel (grouped by communicator); text: times it finished last / its collectives", HP_TIMES " rank median"};
    cl_svg_heatmap(p->o, &hm);
    hp_note(p, "Colour: the channel's mean KernelCh duration vs the median channel of the same rank and "
               "communicator (red = slower). Outlined: the channel finished last in at least half of its "
               "collectives and twice its share.%s%s",
            m.g.per > 1 ? " Rows are buckets of consecutive ranks: a cell shows the slowest of them." : "",
            (int)nk > m.cols ? " Only the first columns are drawn: the table below lists the slowest channels." : "");
    free(m.cell); free(m.hot);
  }
  fputs("</section>\n", p->o);
  free(keys.a);
}

