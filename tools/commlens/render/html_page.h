/* html_page.h: what html.c (the page, its tables), html_charts.c and html_grids.c (its
 * charts) share: the page being written and the small text helpers of html_page.c. Internal
 * to the HTML report. */
#ifndef COMMLENS_CLI_HTML_PAGE_H
#define COMMLENS_CLI_HTML_PAGE_H
#include "tools/commlens/render/report.h"
#include "tools/commlens/render/svg.h"
#include <stdarg.h>
#include <stdio.h>

enum { HP_EXPOSURE, HP_LATENESS, HP_CHANNELS, HP_BANDWIDTH, HP_CLOCKS, HP_PLUGIN, HP_NCHARTS };
extern const char *const hp_chart_id[HP_NCHARTS], *const hp_chart_title[HP_NCHARTS];

typedef struct {
  FILE *o; cl_job *job; cl_analysis *an;
  int top;                          /* rank index others waited for the most, -1: none */
  char reading[HP_NCHARTS][400];    /* each chart's one-line reading, also listed at the top */
} hp_page;

#define HP_CHART_W 1120         /* a full-width chart, px */
#define HP_TIMES "\xc3\x97"     /* the multiplication sign (UTF-8) */

/* Writes every chart section (html_charts.c), filling p->reading; the two rank grids come
 * from html_grids.c. */
void hp_charts(hp_page *p);
void hp_chart_lateness(hp_page *p);
void hp_chart_channels(hp_page *p);

/* The display unit for times up to max_ns (ms, µs or ns) and its divisor. */
typedef struct { const char *name; double div; } hp_unit;
hp_unit hp_unit_for(double max_ns);
/* A number with a few significant digits ("1.5", "0.25", "120"), and with its sign ("+1.5"). */
void hp_fmt_num(double v, char *b, size_t n);
void hp_fmt_signed(double v, char *b, size_t n);
/* printf into HTML-escaped text (1 KiB at most). */
void hp_esc_v(FILE *o, const char *fmt, va_list ap);
void hp_escf(FILE *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Section opening (id, title, reading) for chart k; the caller closes it with </section>. */
void hp_section(hp_page *p, int k);
/* What stands in a chart's place when its data is missing, and a note under a chart. */
void hp_placeholder(hp_page *p, const char *why);
void hp_note(hp_page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Bus bandwidth given in GB/s as "12.34 GB/s", "0.56 MB/s" or "7.8 KB/s" into b. */
const char *hp_fmt_bw(double gbs, char *b, size_t n);
/* A communicator's name, else its short hash; an instance as "func #seq". */
void hp_comm_label(uint64_t comm, char *b, size_t n);
void hp_inst_label(const cl_job *job, uint32_t id, char *b, size_t n);
#endif
