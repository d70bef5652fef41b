/* svg.c: the HTML report's chart drawing (see svg.h). Writes SVG text only: no script, no
 * external reference, so a page of these charts renders the same offline. Styling comes from
 * classes the page's stylesheet defines (t: tick text, tt: axis title, g: grid line). */
#include "tools/commlens/render/svg.h"
#include "common/utf8.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIP_MAX 320

double cl_scale_px(const cl_scale *s, double v) {
  double a = s->d0, b = s->d1;
  if (s->log) { v = log(v > 0 ? v : a); a = log(a); b = log(b); }
  if (b == a) return (s->r0 + s->r1) / 2;
  return s->r0 + (v - a) / (b - a) * (s->r1 - s->r0);
}

void cl_html_esc(FILE *o, const char *s) {
  const unsigned char *e = s ? (const unsigned char *)s + strlen(s) : NULL;
  for (; s && *s; s++) {
    char shown[CL_UTF8_SHOWN_MAX];
    size_t adv, w = cl_utf8_shown((const unsigned char *)s, e, 0, shown, &adv);
    if (adv != 1 || w != 1) {   /* a whole UTF-8 sequence, U+FFFD, or a control (newline too) shown as \xNN */
      fwrite(shown, 1, w, o);
      s += adv - 1;
      continue;
    }
    switch (*s) {
    case '&': fputs("&amp;", o); break;
    case '<': fputs("&lt;", o); break;
    case '>': fputs("&gt;", o); break;
    case '"': fputs("&quot;", o); break;
    case '\'': fputs("&#39;", o); break;
    default: fputc(*s, o);
    }
  }
}

void cl_svg_begin(FILE *o, int w, int h, const char *label) {
  fprintf(o, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", w, h, w, h);
  cl_html_esc(o, label);
  fputs("\">\n", o);
}
void cl_svg_end(FILE *o) { fputs("</svg>\n", o); }

static void tip_out(FILE *o, const char *tip) {
  if (!tip || !*tip) return;
  fputs("<title>", o); cl_html_esc(o, tip); fputs("</title>", o);
}
void cl_svg_rect(FILE *o, double x, double y, double w, double h, const char *fill, const char *tip) {
  fprintf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">", x, y, w, h, fill);
  tip_out(o, tip);
  fputs("</rect>\n", o);
}
void cl_svg_dot(FILE *o, double x, double y, double r, const char *fill, const char *tip) {
  fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\">", x, y, r, fill);
  tip_out(o, tip);
  fputs("</circle>\n", o);
}
void cl_svg_line(FILE *o, double x0, double y0, double x1, double y1, const char *stroke, double width) {
  fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"/>\n",
          x0, y0, x1, y1, stroke, width);
}
static void text_at(FILE *o, double x, double y, const char *anchor, const char *cls, const char *s) {
  fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" class=\"%s\">", x, y, anchor, cls);
  cl_html_esc(o, s);
  fputs("</text>\n", o);
}

/* Tick values of s into t (at most max); returns how many. Linear: steps of 1, 2 or 5 x 10^k,
 * about five; log2: powers of two, every k-th so that at most eight show; log10: 1, 2, 5 x 10^k
 * (powers alone over wide ranges), linear steps when the range holds fewer than two. */
static int ticks(const cl_scale *s, double *t, int max) {
  double a = fmin(s->d0, s->d1), b = fmax(s->d0, s->d1);
  int n = 0;
  if (s->log == 2 && a > 0) {
    int e0 = (int)ceil(log2(a) - 1e-9), e1 = (int)floor(log2(b) + 1e-9), k = 1;
    while ((e1 - e0) / k + 1 > 8) k++;
    for (int e = e0; e <= e1 && n < max; e++)
      if (((e % k) + k) % k == 0) t[n++] = ldexp(1, e);
    if (n) return n;
  } else if (s->log == 10 && a > 0) {
    static const double m[3] = {1, 2, 5};
    int e0 = (int)floor(log10(a)), e1 = (int)ceil(log10(b)), only1 = e1 - e0 > 3;
    for (int e = e0; e <= e1; e++)
      for (int j = 0; j < 3 && n < max; j++) {
        double v = m[j] * pow(10, e);
        if ((!only1 || j == 0) && v >= a * (1 - 1e-9) && v <= b * (1 + 1e-9)) t[n++] = v;
      }
    if (n >= 2) return n;
    n = 0;
  }
  double raw = (b - a) / 5;
  if (!(raw > 0)) { t[0] = a; return 1; }
  double mag = pow(10, floor(log10(raw))), f = raw / mag;
  double step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
  for (double v = ceil(a / step - 1e-9) * step; v <= b + step * 1e-9 && n < max; v += step)
    t[n++] = fabs(v) < step * 1e-9 ? 0 : v;
  return n;
}

void cl_svg_axis(FILE *o, const cl_scale *s, int vertical, double x0, double y0, double x1, double y1,
                 cl_fmt_fn fmt, const char *title) {
  double t[32];
  cl_svg_axis_at(o, s, vertical, x0, y0, x1, y1, t, ticks(s, t, 32), fmt, title);
}

void cl_svg_axis_at(FILE *o, const cl_scale *s, int vertical, double x0, double y0, double x1, double y1,
                    const double *t, int n, cl_fmt_fn fmt, const char *title) {
  char b[48];
  for (int i = 0; i < n; i++) {
    double p = cl_scale_px(s, t[i]);
    fmt(t[i], b, sizeof b);
    if (vertical) {
      cl_svg_line(o, x0, p, x1, p, "#e3e3e3", 1);
      fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"t\">", x0 - 6, p + 4);
    } else {
      cl_svg_line(o, p, y0, p, y1, "#e3e3e3", 1);
      fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"t\">", p, y1 + 15);
    }
    cl_html_esc(o, b);
    fputs("</text>\n", o);
  }
  if (vertical) {
    fprintf(o, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\" class=\"tt\">",
            x0 - 52, (y0 + y1) / 2);
    cl_html_esc(o, title);
    fputs("</text>\n", o);
  } else text_at(o, (x0 + x1) / 2, y1 + 32, "middle", "tt", title);
}

void cl_svg_categories(FILE *o, int n, double x0, double x1, double y, cl_label_fn label, void *arg,
                       const char *title) {
  double slot = n ? (x1 - x0) / n : 0;
  int every = 1;
  char b[64];
  while (slot * every < 36) every++;
  for (int i = 0; i < n; i += every) {
    label(arg, i, b, sizeof b);
    text_at(o, x0 + (i + 0.5) * slot, y + 15, "middle", "t", b);
  }
  text_at(o, (x0 + x1) / 2, y + 32, "middle", "tt", title);
}

void cl_svg_legend(FILE *o, double x, double y, int n, const char *const *colour, const char *const *name) {
  for (int i = 0; i < n; i++) {
    cl_svg_rect(o, x, y - 9, 10, 10, colour[i], NULL);
    text_at(o, x + 14, y, "start", "t", name[i]);
    x += 24 + 6.5 * (double)strlen(name[i]);
  }
}

void cl_svg_bars(FILE *o, const cl_bars *b) {
  double x0 = 64, x1 = b->w - 12, y0 = 26, y1 = b->h - 46, max = 0;
  for (int i = 0; i < b->n; i++) {
    double tot = 0;
    for (int s = 0; s < b->nseries; s++) tot += b->v[s][i];
    if (tot > max) max = tot;
  }
  cl_scale sy = {0, max > 0 ? max * 1.05 : 1, y1, y0, 0};
  cl_svg_begin(o, b->w, b->h, b->y_title);
  cl_svg_axis(o, &sy, 1, x0, y0, x1, y1, b->yfmt, b->y_title);
  cl_svg_legend(o, x0, 14, b->nseries, b->colour, b->series);
  /* dense bars touch (a little overlap, no edge snapping: snapped edges leave white seams) */
  double slot = (x1 - x0) / (b->n ? b->n : 1), bw = slot >= 4 ? fmin(slot * 0.72, 48) : slot + 0.5;
  char tip[TIP_MAX];
  fputs(slot >= 4 ? "<g shape-rendering=\"crispEdges\">\n" : "<g>\n", o);
  for (int i = 0; i < b->n; i++) {
    double base = 0, x = x0 + i * slot + (slot - bw) / 2;
    fputs("<g>", o);
    if (b->tip) { b->tip(b->arg, i, tip, sizeof tip); tip_out(o, tip); }
    for (int s = 0; s < b->nseries; s++) {
      double v = b->v[s][i];
      if (v <= 0) continue;
      double ya = cl_scale_px(&sy, base + v), yb = cl_scale_px(&sy, base);
      cl_svg_rect(o, x, ya, bw, yb - ya, b->colour[s], NULL);
      base += v;
    }
    fputs("</g>\n", o);
  }
  fputs("</g>\n", o);
  cl_svg_line(o, x0, y1, x1, y1, "#888", 1);
  cl_svg_categories(o, b->n, x0, x1, y1, b->label, b->arg, b->x_title);
  cl_svg_end(o);
}

/* Blue (below mid) .. near-white (mid) .. red (above), linear in RGB on each side. */
static void diverging(double lo, double mid, double hi, double v, char b[8]) {
  static const double blue[3] = {33, 102, 172}, white[3] = {247, 247, 247}, red[3] = {178, 24, 43};
  double t = v >= mid ? (hi > mid ? (v - mid) / (hi - mid) : 0) : (mid > lo ? (mid - v) / (mid - lo) : 0);
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  const double *end = v >= mid ? red : blue;
  int c[3];
  for (int k = 0; k < 3; k++) c[k] = (int)lround(white[k] + (end[k] - white[k]) * t);
  snprintf(b, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

/* 1 when v's cell colour is dark enough for light text (far from mid on either side). */
static int dark(const cl_heatmap *m, double v) {
  if (isnan(v)) return 0;
  double span = v >= m->mid ? m->hi - m->mid : m->mid - m->lo;
  return span > 0 && fabs(v - m->mid) / span > 0.6;
}

void cl_svg_heatmap(FILE *o, const cl_heatmap *m) {
  static int serial;   /* gradient ids, unique within one page */
  double x0 = 84, x1 = m->w - 116, y0 = 8, ch = 420.0 / (m->rows ? m->rows : 1);
  ch = ch < 5 ? 5 : ch > 28 ? 28 : ch;
  double y1 = y0 + ch * m->rows, cw = (x1 - x0) / (m->cols ? m->cols : 1);
  double lh = y1 - y0 < 110 ? 110 : y1 - y0;
  int h = (int)ceil(y0 + lh + 46);
  char tip[TIP_MAX], col[8], b[64];
  cl_svg_begin(o, m->w, h, m->legend_title);
  fputs("<g shape-rendering=\"crispEdges\">\n", o);
  for (int r = 0; r < m->rows; r++)
    for (int c = 0; c < m->cols; c++) {
      double v = m->value(m->arg, r, c);
      if (isnan(v)) snprintf(col, sizeof col, "#d4d4d4"); else diverging(m->lo, m->mid, m->hi, v, col);
      tip[0] = 0;
      if (m->tip) m->tip(m->arg, r, c, v, tip, sizeof tip);
      cl_svg_rect(o, x0 + c * cw, y0 + r * ch, cw, ch, col, tip);
    }
  fputs("</g>\n", o);
  for (int r = 0; r < m->rows; r++)
    for (int c = 0; c < m->cols; c++) {
      if (m->outline && m->outline(m->arg, r, c))
        fprintf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#111\" "
                "stroke-width=\"1.5\"/>\n", x0 + c * cw + 0.75, y0 + r * ch + 0.75, cw - 1.5, ch - 1.5);
      if (m->text && ch >= 13) {
        m->text(m->arg, r, c, b, sizeof b);
        if (b[0] && 6.0 * (double)strlen(b) + 4 <= cw)   /* light text on the darkest cells */
          text_at(o, x0 + (c + 0.5) * cw, y0 + (r + 0.5) * ch + 3.5, "middle", dark(m, m->value(m->arg, r, c)) ? "c w" : "c", b);
      }
    }
  int every = 1, emph_row = -1;
  while (ch * every < 12) every++;
  for (int r = 0; r < m->rows && emph_row < 0; r++) if (m->row_emph && m->row_emph(m->arg, r)) emph_row = r;
  for (int r = 0; r < m->rows; r++) {   /* every k-th label, and the emphasised row's in place of its neighbours' */
    int emph = r == emph_row;
    if (!emph && (r % every || (emph_row >= 0 && abs(r - emph_row) < every))) continue;
    m->row_label(m->arg, r, b, sizeof b);
    text_at(o, x0 - 6, y0 + (r + 0.5) * ch + 4, "end", emph ? "t em" : "t", b);
  }
  every = 1;
  while (cw * every < 56) every++;
  for (int c = 0; c < m->cols; c += every) {
    m->col_label(m->arg, c, b, sizeof b);
    cl_svg_line(o, x0 + (c + 0.5) * cw, y1, x0 + (c + 0.5) * cw, y1 + 4, "#888", 1);
    text_at(o, x0 + (c + 0.5) * cw, y1 + 15, "middle", "t", b);
  }
  text_at(o, (x0 + x1) / 2, y1 + 32, "middle", "tt", m->x_title);
  /* legend: a vertical gradient, hi at the top */
  int id = ++serial;
  double lx = x1 + 22, ly0 = y0 + 14, ly1 = y0 + lh - 4, f = m->hi > m->lo ? (m->hi - m->mid) / (m->hi - m->lo) : 0.5;
  char chi[8], clo[8], cmid[8];
  diverging(m->lo, m->mid, m->hi, m->hi, chi); diverging(m->lo, m->mid, m->hi, m->lo, clo);
  diverging(m->lo, m->mid, m->hi, m->mid, cmid);
  fprintf(o, "<defs><linearGradient id=\"lg%d\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\"><stop offset=\"0\" stop-color=\"%s\"/>"
          "<stop offset=\"%.3f\" stop-color=\"%s\"/><stop offset=\"1\" stop-color=\"%s\"/></linearGradient></defs>\n",
          id, chi, f, cmid, clo);
  fprintf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"%.1f\" fill=\"url(#lg%d)\" stroke=\"#999\"/>\n",
          lx, ly0, ly1 - ly0, id);
  text_at(o, lx - 4, y0 + 6, "start", "t", m->legend_title);
  const double at[3] = {m->hi, m->mid, m->lo};
  for (int k = 0; k < 3; k++) {
    char v[40];
    m->fmt(at[k], v, sizeof v);
    snprintf(b, sizeof b, "%s%s", (k == 0 && m->clamp_hi) ? "\xe2\x89\xa5 " : (k == 2 && m->clamp_lo) ? "\xe2\x89\xa4 " : "", v);
    double y = k == 0 ? ly0 : k == 2 ? ly1 : ly0 + f * (ly1 - ly0);
    cl_svg_line(o, lx + 14, y, lx + 18, y, "#888", 1);
    text_at(o, lx + 20, y + 4, "start", "t", b);
  }
  cl_svg_rect(o, lx, ly1 + 12, 14, 10, "#d4d4d4", NULL);
  text_at(o, lx + 20, ly1 + 21, "start", "t", "no data");
  cl_svg_end(o);
}
