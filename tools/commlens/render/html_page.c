/* html_page.c: what the HTML report's writers (html.c, html_charts.c, html_grids.c) share:
 * the charts' ids and titles, section openings, notes and placeholders, HTML-escaped printf,
 * and the formats of numbers, units, bandwidths and labels. Writes text only; decides nothing. */
#include "tools/commlens/render/html_page.h"
#include <stdlib.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

const char *const hp_chart_id[HP_NCHARTS] = {"exposure", "lateness", "channels", "bandwidth", "clocks", "plugin"};
const char *const hp_chart_title[HP_NCHARTS] = {
  "Exposed vs hidden communication per rank", "Who arrived late: lateness per rank over the run",
  "Slow channels per rank", "Bus bandwidth against the median for its size", "Clock offsets per rank",
  "The plugin's cost and drops per rank"};

#define MICRO "\xc2\xb5"

/* ---- formats ----------------------------------------------------------------------------- */
/* ms from 0.1 ms up, else µs (else ns): axes keep a few significant digits. */
hp_unit hp_unit_for(double max_ns) {
  if (max_ns >= 1e5) return (hp_unit){"ms", 1e6};
  if (max_ns >= 100) return (hp_unit){MICRO "s", 1e3};
  return (hp_unit){"ns", 1};
}
void hp_fmt_num(double v, char *b, size_t n) {
  double a = fabs(v);
  if (a > 0 && a < 0.001) { snprintf(b, n, "%.3g", v); return; }
  int d = a >= 100 || a == 0 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  snprintf(b, n, "%.*f", d, v);
  if (d) {   /* 1.50 -> 1.5, 2.00 -> 2 */
    char *e = b + strlen(b);
    while (e > b && e[-1] == '0') *--e = 0;
    if (e > b && e[-1] == '.') e[-1] = 0;
  }
}
void hp_fmt_signed(double v, char *b, size_t n) {
  char t[40];
  hp_fmt_num(v, t, sizeof t);
  snprintf(b, n, "%s%s", v > 0 ? "+" : "", t);
}
void hp_esc_v(FILE *o, const char *fmt, va_list ap) {
  char *b = NULL;   /* the whole text, however long the names in it */
  if (vasprintf(&b, fmt, ap) < 0) return;
  cl_html_esc(o, b);
  free(b);
}
void hp_escf(FILE *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hp_esc_v(o, fmt, ap);
  va_end(ap);
}

void hp_section(hp_page *p, int k) {
  fprintf(p->o, "<section id=\"%s\"><h2>", hp_chart_id[k]);
  cl_html_esc(p->o, hp_chart_title[k]);
  fputs("</h2>\n<p class=\"reading\">", p->o);
  cl_html_esc(p->o, p->reading[k]);
  fputs("</p>\n", p->o);
}
void hp_placeholder(hp_page *p, const char *why) {
  fputs("<p class=\"na\">", p->o); cl_html_esc(p->o, why); fputs("</p>\n", p->o);
}
void hp_note(hp_page *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("<p class=\"note\">", p->o);
  hp_esc_v(p->o, fmt, ap);
  fputs("</p>\n", p->o);
  va_end(ap);
}

const char *hp_fmt_bw(double gbs, char *b, size_t n) {
  if (gbs >= 1) snprintf(b, n, "%.2f GB/s", gbs);
  else if (gbs >= 1e-3) snprintf(b, n, "%.3g MB/s", gbs * 1e3);
  else snprintf(b, n, "%.3g KB/s", gbs * 1e6);
  return b;
}

void hp_comm_label(uint64_t comm, char *b, size_t n) {
  const char *nm = cl_comm_name(comm);
  if (nm[0]) snprintf(b, n, "%s", nm); else snprintf(b, n, "0x%08llx", (unsigned long long)(comm & 0xffffffffull));
  cl_utf8_cut(b);   /* a label in a table: cut at a character */
}
void hp_inst_label(const cl_job *job, uint32_t id, char *b, size_t n) {
  const cl_inst *in = &job->inst.a[id];
  snprintf(b, n, "%s #%lld", cl_func_name(in->func), (long long)in->seq);
  cl_utf8_cut(b);
}

