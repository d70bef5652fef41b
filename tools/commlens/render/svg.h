/* svg.h: inline SVG charts for the HTML report, drawn in C: scales with readable ticks (linear,
 * log2, log10), axes, bar charts (stacked series), heatmap grids with a colour legend, and the
 * few primitives the report's own charts combine. Knows nothing of NCCL or traces: callers hand
 * it numbers, labels (through callbacks, so nothing is allocated per cell) and colours. */
#ifndef COMMLENS_CLI_SVG_H
#define COMMLENS_CLI_SVG_H
#include <stddef.h>
#include <stdio.h>

/* A map from data values to pixels: [d0, d1] -> [r0, r1]; log: 0, 2 or 10 (ticks at powers). */
typedef struct { double d0, d1, r0, r1; int log; } cl_scale;
double cl_scale_px(const cl_scale *s, double v);

/* Formats a tick or value; writes into b (caller's buffer of n bytes). */
typedef void (*cl_fmt_fn)(double v, char *b, size_t n);
/* Label for item i (category, row, column) into b; the callback's own argument is `arg`. */
typedef void (*cl_label_fn)(void *arg, int i, char *b, size_t n);

/* Writes s with & < > " ' escaped for HTML text and attribute values. */
void cl_html_esc(FILE *o, const char *s);

/* <svg> of w x h px (scaled down with the page, never up) and its closing tag. `label` names
 * the chart for screen readers. */
void cl_svg_begin(FILE *o, int w, int h, const char *label);
void cl_svg_end(FILE *o);
/* Ticks and grid of a value axis along the plot [x0, x1] x [y0, y1]: vertical (y) or horizontal
 * (x) scale s, tick labels through fmt, the axis title beside it. */
void cl_svg_axis(FILE *o, const cl_scale *s, int vertical, double x0, double y0, double x1, double y1,
                 cl_fmt_fn fmt, const char *title);
/* The same with the caller's n ticks t (e.g. the values the data has). */
void cl_svg_axis_at(FILE *o, const cl_scale *s, int vertical, double x0, double y0, double x1, double y1,
                    const double *t, int n, cl_fmt_fn fmt, const char *title);
/* Category labels along the bottom of a plot of n slots from x0 to x1 (every k-th when they
 * would crowd), and the axis title under them. */
void cl_svg_categories(FILE *o, int n, double x0, double x1, double y, cl_label_fn label, void *arg,
                       const char *title);
/* A legend row of colour swatches and names at (x, y); n entries. */
void cl_svg_legend(FILE *o, double x, double y, int n, const char *const *colour, const char *const *name);
/* Rect/circle with a hover tooltip (tip may be NULL). */
void cl_svg_rect(FILE *o, double x, double y, double w, double h, const char *fill, const char *tip);
void cl_svg_dot(FILE *o, double x, double y, double r, const char *fill, const char *tip);
void cl_svg_line(FILE *o, double x0, double y0, double x1, double y1, const char *stroke, double width);

/* Bars per category, series stacked bottom-up (values >= 0). */
typedef struct {
  int w, h, n, nseries;
  const double *const *v;                    /* v[s][i] */
  const char *const *colour, *const *series; /* per series */
  cl_label_fn label; void *arg;              /* category names */
  cl_label_fn tip;                           /* tooltip of category i, or NULL */
  cl_fmt_fn yfmt; const char *y_title, *x_title;
} cl_bars;
void cl_svg_bars(FILE *o, const cl_bars *b);

/* A rows x cols grid coloured on a diverging scale: lo (blue) .. mid (white) .. hi (red);
 * values outside are clamped (the legend says so), NaN cells are left grey. */
typedef struct {
  int w, rows, cols;
  double (*value)(void *arg, int r, int c);
  int (*outline)(void *arg, int r, int c);   /* NULL, or 1 to outline the cell */
  cl_label_fn row_label, col_label;          /* col_label: drawn at spaced ticks */
  void (*tip)(void *arg, int r, int c, double v, char *b, size_t n);
  void (*text)(void *arg, int r, int c, char *b, size_t n);   /* NULL, or text inside cells (where it fits) */
  int (*row_emph)(void *arg, int r);         /* NULL, or 1: row label in bold */
  void *arg;
  double lo, mid, hi; int clamp_lo, clamp_hi;
  cl_fmt_fn fmt; const char *x_title, *legend_title;
} cl_heatmap;
void cl_svg_heatmap(FILE *o, const cl_heatmap *m);
#endif
