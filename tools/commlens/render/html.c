/* html.c: `commlens report --html FILE`: the report as one self-contained page: inline CSS,
 * the charts (html_charts.c, html_grids.c: SVG drawn in C), the outlier tables that point back into the
 * traces (file and seq), and one small inline script that records load errors and how many
 * charts drew (the browser test reads them). Nothing is fetched: the page's
 * Content-Security-Policy forbids every network load. Figures come from the analysis (analyse/analysis.c): it computes nothing. */
#include "tools/commlens/render/html.h"
#include "tools/commlens/render/html_page.h"
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* file:// link to a rank's trace: the absolute path, percent-encoded in the href. */
static void file_link(FILE *o, const cl_rank *r) {
  char abs[PATH_MAX];
  const char *p = realpath(r->path, abs) ? abs : r->path;
  fputs("<a href=\"file://", o);
  for (const unsigned char *s = (const unsigned char *)p; *s; s++) {
    if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("/-._~", *s)) fputc(*s, o);
    else fprintf(o, "%%%02X", *s);
  }
  fputs("\"><code>file://", o);
  cl_html_esc(o, p);
  fputs("</code></a>", o);
}

static void __attribute__((format(printf, 3, 4))) td(FILE *o, int num, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(num ? "<td class=\"n\">" : "<td>", o);
  hp_esc_v(o, fmt, ap);
  fputs("</td>", o);
  va_end(ap);
}
static void thead(FILE *o, const char *const *cols, int n) {
  fputs("<table><thead><tr>", o);
  for (int i = 0; i < n; i++) { fputs("<th>", o); cl_html_esc(o, cols[i]); fputs("</th>", o); }
  fputs("</tr></thead><tbody>\n", o);
}

static const cl_analysis *g_sort_an;
static int cmp_wait(const void *a, const void *b) {
  double x = g_sort_an->ia[*(const uint32_t *)a].wait, y = g_sort_an->ia[*(const uint32_t *)b].wait;
  return x < y ? 1 : x > y ? -1 : 0;
}

#define TABLE_ROWS 15
/* The outliers, each with the trace to open and the (func, seq) to look for there. */
static void outlier_tables(hp_page *p) {
  FILE *o = p->o; cl_job *job = p->job; cl_analysis *an = p->an;
  char t1[32], t2[32], t3[32], cn[64], lab[96];
  fputs("<section id=\"outliers\"><h2>Outliers and where to find them</h2>\n"
        "<p class=\"note\">Open the trace file in Perfetto (ui.perfetto.dev, or offline with its "
        "trace_processor) and search for the collective's <code>Seq</code>; the instance is the same "
        "(func, seq) on every rank of its communicator.</p>\n", o);
  uint32_t *ids = cl_xmalloc((job->inst.n + 1) * sizeof *ids); size_t n = 0;
  for (size_t i = 0; i < job->inst.n; i++) if (an->ia[i].culprit >= 0 && an->ia[i].wait > 0) ids[n++] = (uint32_t)i;
  g_sort_an = an;
  qsort(ids, n, sizeof *ids, cmp_wait);
  fputs("<h3>Instances that made the others wait the most</h3>\n", o);
  if (!n) hp_placeholder(p, "no collective instance was matched on two or more ranks");
  else {
    static const char *const cols[] = {"instance (func #seq)", "comm", "bytes", "last to arrive", "late by",
                                       "others waited", "transfer", "trace of the last rank"};
    thead(o, cols, 8);
    for (size_t k = 0; k < n && k < TABLE_ROWS; k++) {
      cl_inst *in = &job->inst.a[ids[k]]; cl_inst_an *ia = &an->ia[ids[k]]; cl_rank *r = job->r[ia->culprit];
      hp_inst_label(job, ids[k], lab, sizeof lab); hp_comm_label(in->comm, cn, sizeof cn);
      fputs("<tr>", o);
      td(o, 0, "%s", lab); td(o, 0, "%s", cn); td(o, 1, "%lld", (long long)in->bytes);
      td(o, 0, "rank %d (%s)", r->rank, cl_rank_host(r)); td(o, 1, "%s", cl_fmt_time(t1, sizeof t1, ia->late));
      td(o, 1, "%s", cl_fmt_time(t2, sizeof t2, ia->wait)); td(o, 1, "%s", cl_fmt_time(t3, sizeof t3, ia->transfer));
      fputs("<td class=\"f\">", o); file_link(o, r); fputs("</td></tr>\n", o);
    }
    fputs("</tbody></table>\n", o);
  }
  fputs("<h3>Lowest bus bandwidth for their size</h3>\n", o);
  if (!an->nlow) hp_placeholder(p, "none below the median of its (func, size), or fewer than 3 instances per (func, size)");
  else {
    static const char *const cols[] = {"instance (func #seq)", "comm", "bytes", "bus bw", "median", "ratio",
                                       "last to arrive", "trace of the last rank"};
    thead(o, cols, 8);
    for (size_t k = 0; k < an->nlow && k < TABLE_ROWS; k++) {
      uint32_t id = an->lowbw[k]; cl_inst *in = &job->inst.a[id]; cl_inst_an *ia = &an->ia[id];
      cl_rank *r = ia->culprit >= 0 ? job->r[ia->culprit] : job->r[0];
      hp_inst_label(job, id, lab, sizeof lab); hp_comm_label(in->comm, cn, sizeof cn);
      fputs("<tr>", o);
      td(o, 0, "%s", lab); td(o, 0, "%s", cn); td(o, 1, "%lld", (long long)in->bytes);
      td(o, 1, "%s", hp_fmt_bw(ia->busbw, t1, sizeof t1)); td(o, 1, "%s", hp_fmt_bw(ia->busbw / ia->ratio, t2, sizeof t2));
      td(o, 1, "%.2f\xc3\x97", ia->ratio);
      td(o, 0, "rank %d", r->rank);
      fputs("<td class=\"f\">", o); file_link(o, r); fputs("</td></tr>\n", o);
    }
    fputs("</tbody></table>\n", o);
  }
  fputs("<h3>Slowest channels</h3>\n", o);
  size_t shown = 0;
  for (size_t k = 0; k < an->nch && shown < TABLE_ROWS; k++) {
    cl_chan_row *c = &an->ch[k];
    if (!c->c->n) continue;
    if (!shown++) {
      static const char *const cols[] = {"rank", "channel", "comm", "last to finish", "mean", "vs rank median",
                                         "longest (seq)", "proxy steps say", "trace"};
      thead(o, cols, 9);
    }
    cl_rank *r = job->r[c->ri];
    hp_comm_label(c->c->comm, cn, sizeof cn);
    fputs("<tr>", o);
    td(o, 0, "rank %d (%s)", r->rank, cl_rank_host(r)); td(o, 1, "%d", c->c->channel); td(o, 0, "%s", cn);
    td(o, 1, "%lld/%lld", (long long)c->c->tail, (long long)c->c->n); td(o, 1, "%s", cl_fmt_time(t1, sizeof t1, c->mean));
    td(o, 1, "%.2f\xc3\x97", c->ratio);
    td(o, 1, "%s (#%lld)", cl_fmt_time(t2, sizeof t2, (double)c->c->max_dur), (long long)c->c->max_seq);
    td(o, 0, "%s", cl_chan_verdict(c->c));
    fputs("<td class=\"f\">", o); file_link(o, r); fputs("</td></tr>\n", o);
  }
  if (shown) fputs("</tbody></table>\n", o);
  else hp_placeholder(p, "no KernelCh events: no channel timings");
  fputs("<details><summary>Every rank's trace file</summary>\n", o);
  static const char *const cols[] = {"rank", "host:GPU", "ABI", "events", "status", "trace"};
  thead(o, cols, 6);
  for (int i = 0; i < job->n; i++) {
    cl_rank *r = job->r[i];
    fputs("<tr>", o);
    td(o, 1, "%d", r->rank); td(o, 0, "%s", cl_rank_host(r)); td(o, 1, "%d", r->info.abi);
    td(o, 1, "%lld", (long long)r->info.n_events);
    td(o, 0, "%s", r->info.bad ? "damaged mid-file" : r->info.truncated ? "truncated" : r->info.final ? "final" : "not final");
    fputs("<td class=\"f\">", o); file_link(o, r); fputs("</td></tr>\n", o);
  }
  fputs("</tbody></table></details>\n</section>\n", o);
  free(ids);
}

static const char CSS[] =
  "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;background:#f3f4f6;color:#1d1f23}\n"
  "main{max-width:1180px;margin:0 auto;padding:16px 20px 40px}\n"
  "section{background:#fff;border:1px solid #dcdfe4;border-radius:6px;padding:12px 18px 14px;margin:14px 0}\n"
  "h1{font-size:22px;margin:6px 0 2px}h2{font-size:17px;margin:0 0 2px}h3{font-size:14px;margin:14px 0 4px}\n"
  ".meta{color:#555;margin:0 0 6px}.reading{font-weight:600;margin:2px 0 8px;color:#1d1f23}\n"
  ".note{color:#555;font-size:12.5px;margin:6px 0 0}\n"
  ".na{padding:26px;background:#fafafa;border:1px dashed #bbb;color:#444;text-align:center;margin:4px 0}\n"
  "ul.find{margin:4px 0 0;padding-left:20px}ul.find li{margin:3px 0}\n"
  "svg{max-width:100%;height:auto;display:block;margin:2px 0}\n"
  "svg .t{font-size:11px;fill:#444}svg .tt{font-size:12px;fill:#222}svg .em{font-weight:700;fill:#b2182b}"
  "svg .c{font-size:10px;fill:#111}svg .w{fill:#fff}\n"
  ".row{display:flex;gap:14px;flex-wrap:wrap}\n"
  "table{border-collapse:collapse;font-size:12.5px;width:100%;margin:4px 0}\n"
  "th,td{padding:3px 8px;border-bottom:1px solid #eceef1;text-align:left;vertical-align:top}th{background:#f6f7f9}\n"
  "td{white-space:nowrap}td.f{white-space:normal;word-break:break-all}\n"
  "td.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:11.5px}\n"
  "a{color:#1f5fa8}details{margin-top:12px}\n";

/* Records script and load errors into data-errors and, after load, how many charts have a
 * drawn box into data-charts-drawn ("drawn/total"): the browser test reads both. */
static const char SELF_CHECK[] =
  "<script>(function(){var d=document.documentElement,e=[];"
  "function put(){d.setAttribute('data-errors',e.join(' | '));}"
  "window.addEventListener('error',function(v){e.push(v.message||('failed to load '+"
  "(v.target&&(v.target.src||v.target.href))));put();},true);"
  "window.addEventListener('load',function(){var s=document.querySelectorAll('svg'),n=0;"
  "for(var i=0;i<s.length;i++){var b=s[i].getBBox();if(b.width>0&&b.height>0)n++;}"
  "d.setAttribute('data-charts-drawn',n+'/'+s.length);put();});})();</script>\n";

/* Lines a text renderer writes, as a list: one rule for the text report and the page. */
typedef void (*text_lines)(cl_job *job, cl_analysis *an, FILE *o);
static void channel_lines(cl_job *job, cl_analysis *an, FILE *o) { cl_render_channel_lines(job, &an->chv, 4, o); }
static void clock_lines(cl_job *job, cl_analysis *an, FILE *o) { cl_render_clock_lines(job, an->cm, o); }
static void hang_lines(cl_job *job, cl_analysis *an, FILE *o) { cl_render_hang_text(job, &an->hang, o); }
static void lines_as_list(FILE *o, cl_job *job, cl_analysis *an, text_lines fn) {
  fputs("<ul>\n", o);
  char *buf = NULL; size_t n = 0;
  FILE *m = open_memstream(&buf, &n);
  if (m) {
    fn(job, an, m);
    fclose(m);
    for (char *line = buf, *e; line && *line; line = e ? e + 1 : NULL) {
      e = strchr(line, '\n');
      if (e) *e = 0;
      if (!line[strspn(line, " ")]) continue;
      fputs("<li>", o); cl_html_esc(o, line + strspn(line, " ")); fputs("</li>\n", o);
    }
    free(buf);
  }
  fputs("</ul>\n", o);
}

/* A hang first, as in the text: what the flight dumps say and the job's earlier attempts. */
static void hang_section(FILE *o, cl_job *job, cl_analysis *an) {
  if (!an->hang.comms.n && !an->hang.n_dumps && !job->earlier.n) return;
  fprintf(o, "<section id=\"hang\"><h2>%s</h2>\n", an->hang.comms.n ? "Hang" : "Flight dumps");
  lines_as_list(o, job, an, hang_lines);
  fputs("</section>\n", o);
}

/* The answer at the top of the page: the verdict line, its evidence, the channel verdict, the
 * clock model. */
static void verdict_section(FILE *o, cl_job *job, cl_analysis *an) {
  const cl_sg_verdict *v = &an->vd.v;
  fputs("<section id=\"verdict\"><h2>Verdict</h2>\n<p><b>", o);
  cl_html_esc(o, an->vd.line);
  fputs("</b></p>\n<p class=\"meta\">", o);
  hp_escf(o, "evidence: %s; %lld instance(s), %lld in the start-up period, %lld not called inside the clock error; "
          "false-accusation rate %.0f%% per job", cl_sg_evidence_name(v->evidence), (long long)v->n_inst,
          (long long)v->n_startup, (long long)v->n_within_clock, 100 * v->alpha);
  if (an->vd.n_not_causal || an->vd.n_impossible)
    hp_escf(o, "; left out: %lld Broadcast/Reduce-like instance(s), %lld with impossible times",
            (long long)an->vd.n_not_causal, (long long)an->vd.n_impossible);
  fputs("</p>\n", o);
  lines_as_list(o, job, an, channel_lines);
  fputs("<p>Clock model:</p>\n", o);
  lines_as_list(o, job, an, clock_lines);
  fputs("</section>\n", o);
}

int cl_report_html(cl_job *job, cl_analysis *an, const char *path) {
  if (cl_job_refuse_output(job, path, "--html") != 0) return -1;
  hp_page p;
  memset(&p, 0, sizeof p);
  p.job = job; p.an = an; p.top = -1;
  /* the rank the verdict names (else its largest effect, else the one that caused most wait) */
  const cl_sg_verdict *v = &an->vd.v;
  if (v->nstraggler) p.top = v->straggler[0].who;
  else if (v->largest.who >= 0) p.top = v->largest.who;
  else if (job->n && (an->bl.rank[an->bl.order[0]].n_sig || an->ra[an->bl.order[0]].n_last)) p.top = an->bl.order[0];
  /* the charts first, into memory: their readings open the page */
  char *body = NULL; size_t blen = 0;
  p.o = open_memstream(&body, &blen);
  if (!p.o) { fprintf(stderr, "commlens: --html: out of memory\n"); return -1; }
  hp_charts(&p);
  outlier_tables(&p);
  fclose(p.o);
  cl_outfile of;
  FILE *o = cl_out_open(&of, path, "--html") < 0 ? NULL : fdopen(of.fd, "w");
  if (!o) {
    if (of.path) { close(of.fd); cl_out_finish(&of, 0, "--html"); }
    free(body); return -1;
  }
  char span[32];
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'\">\n<meta name=\"viewport\" content=\"width=device-width\">\n", o);
  fputs(SELF_CHECK, o);
  fputs("<title>", o);
  const char *jid = job->job && job->job[0] ? job->job : NULL;
  hp_escf(o, "commlens report: job %s", jid ? jid : "(no job id)");
  fputs("</title>", o);
  fprintf(o, "\n<style>\n%s</style></head>\n<body><main>\n<h1>commlens report: ", CSS);
  hp_escf(o, jid ? "job \"%s\"" : "%s", jid ? jid : "a job without a job id");
  fputs("</h1>\n<p class=\"meta\">", o);
  hp_escf(o, "%d rank(s) (%d..%d), %d file(s) read, %d skipped; span %s on rank %d's clock; %lld collective "
          "instances matched on 2+ ranks; plugin %s.", job->n, job->r[0]->rank, job->r[job->n - 1]->rank,
          job->n_files_seen - job->n_files_skipped, job->n_files_skipped,
          cl_fmt_time(span, sizeof span, an->span), job->ref_rank, (long long)an->n_multi,
          job->r[0]->info.version ? job->r[0]->info.version : "?");
  fputs("</p>\n", o);
  hang_section(o, job, an);
  verdict_section(o, job, an);
  fputs("<section id=\"findings\"><h2>Findings</h2><ul class=\"find\">\n", o);
  for (int k = 0; k < HP_NCHARTS; k++) {
    fprintf(o, "<li><a href=\"#%s\">", hp_chart_id[k]);
    cl_html_esc(o, hp_chart_title[k]);
    fputs("</a>: ", o);
    cl_html_esc(o, p.reading[k]);
    fputs("</li>\n", o);
  }
  fputs("</ul></section>\n", o);
  fwrite(body, 1, blen, o);
  fputs("</main></body></html>\n", o);
  free(body);
  int bad = ferror(o);
  bad |= fclose(o) != 0;
  if (bad) fprintf(stderr, "commlens: --html: error writing %s (disk full?)\n", path);
  if (cl_out_finish(&of, !bad, "--html") != 0) return -1;
  fprintf(stderr, "commlens: wrote %s\n", path);
  return 0;
}
