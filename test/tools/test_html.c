/* test_html.c: `commlens report --html` on synthetic jobs (synth_gen.h) with a known late
 * rank, slow channel and clock offsets: the page is self-contained (no network reference),
 * its readings name what was injected, its outlier tables point at the right trace, and the
 * degenerate cases (one rank, no CUPTI, no KernelCh, hundreds of ranks, NVTX steps) say so in
 * the charts' place or bucket. Then a real browser: headless Chromium loads the page, the
 * page's own check says every chart drew a box and nothing failed, the console is clean, and
 * a screenshot is saved (build/test-html/report.png). Without Chromium (make test tries to
 * install it once) or under a sanitizer (its CLI is checked here, the browser is not), the
 * browser checks are skipped with a message. */
#include "harness.h"
#include "synth_gen.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#define BROWSER_TIMEOUT_S 180   /* a loaded 2-core machine can take a minute to start Chromium */

static void gen(synth_cfg *c, const char *dir) {
  char p[600];
  c->dir = dir;
  for (int r = 0; r < c->nranks; r++) synth_write_rank(c, r, p, sizeof p);
}
static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *q = s; (q = strstr(q, needle)); q += strlen(needle)) n++;
  return n;
}
/* `commlens report DIR --html OUT`; returns the page (malloc'd) or NULL after a failed CHECK. */
static char *report_html(const char *dir, const char *out) {
  char a[1400];
  int st;
  snprintf(a, sizeof a, "report '%s' --html '%s' 2>&1", dir, out);
  char *text = h_run_cli(a, &st);
  CHECK(st == 0, "report --html exited %d: %.400s", st, text ? text : "");
  CHECK(text && strstr(text, "Verdict: "), "the text report still goes to stdout: %.200s", text ? text : "");
  free(text);
  char *page = h_read_file(out, NULL);
  CHECK(page != NULL, "%s was not written", out);
  return page;
}
/* c's job written into a fresh directory d, and its page at OUT_DIR/name (OUT_DIR: d when NULL)
 * into html. Returns the page (malloc'd), NULL after a failed CHECK. */
static char *job_page(synth_cfg *c, char *d, size_t dn, const char *out_dir, const char *name, char *html, size_t hn) {
  h_fresh_dir(d, dn);
  CHECK(d[0], "no temp dir");
  if (!d[0]) return NULL;
  gen(c, d);
  snprintf(html, hn, "%s/%s", out_dir ? out_dir : d, name);
  return report_html(d, html);
}
/* Nothing in the page can reach the network or another file when it loads. */
static void check_self_contained_titled(const char *page, const char *title);
static void check_self_contained(const char *page) {
  check_self_contained_titled(page, "<title>commlens report: job job42</title>");
}
static void check_self_contained_titled(const char *page, const char *title) {
  CHECK(strstr(page, "<!DOCTYPE html>") == page, "not an HTML5 document");
  static const char *const bad[] = {"http://", "https://", "<link", " src=", "@import", "//fonts"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(!strstr(page, bad[i]), "the page references '%s'", bad[i]);
  CHECK(strstr(page, "Content-Security-Policy") && strstr(page, "default-src 'none'"), "no CSP forbidding loads");
  /* the title is markup, not escaped text (it once came out as "&lt;title&gt;") */
  CHECK(strstr(page, title), "title element missing or escaped");
}
/* The section with id `id`, up to its end (points into page; NULL if absent). */
static const char *section(const char *page, const char *id, size_t *len) {
  char key[64];
  snprintf(key, sizeof key, "<section id=\"%s\">", id);
  const char *s = strstr(page, key), *e = s ? strstr(s, "</section>") : NULL;
  if (!e) return NULL;
  *len = (size_t)(e - s);
  return s;
}
static int section_count(const char *page, const char *id, const char *needle) {
  size_t n;
  const char *s = section(page, id, &n);
  if (!s) return -1;
  char *copy = strndup(s, n);
  int k = count(copy, needle);
  free(copy);
  return k;
}

/* ---- the browser ------------------------------------------------------------------------ */
static int find_chromium(char *out, size_t n) {
  const char *e = getenv("COMMLENS_CHROMIUM");
  if (e && *e) { snprintf(out, n, "%s", e); return access(out, X_OK) == 0; }
  const char *path = getenv("PATH");
  static const char *const names[] = {"chromium", "chromium-browser"};
  for (size_t k = 0; k < 2; k++)
    for (const char *p = path ? path : "/usr/bin"; *p;) {
      size_t l = strcspn(p, ":");
      snprintf(out, n, "%.*s/%s", (int)l, p, names[k]);
      if (l && access(out, X_OK) == 0) return 1;
      p += l + (p[l] == ':');
    }
  return 0;
}
/* 1 when the browser checks should run; otherwise says why not (once). */
static int browser_ready(char *bin, size_t n) {
  static int said;
  const char *san = getenv("COMMLENS_SANITIZED");
  if (san && *san) {
    if (!said++) fprintf(stderr, "  browser checks skipped under %s (the plain run does them; the sanitized CLI wrote the pages)\n", san);
    return 0;
  }
  if (!find_chromium(bin, n)) {
    if (!said++) fprintf(stderr, "  skip: browser checks: no chromium found (make test tries `apt-get install chromium` once: "
                                 "see build/chromium-apt.log; COMMLENS_CHROMIUM=path names one)\n");
    return 0;
  }
  return 1;
}
/* Headless Chromium on file://html with `what` (--dump-dom, --screenshot=...), bounded in time,
 * its stdout into *out and stderr (console messages included) into *err. Returns the exit status. */
static int browse_once(const char *bin, const char *html, const char *what, char **out, char **err) {
  char ud[] = "/tmp/commlens-chromium-XXXXXX", cmd[4096], o[64], e[64];
  if (!mkdtemp(ud)) return -1;
  snprintf(o, sizeof o, "%s.out", ud);
  snprintf(e, sizeof e, "%s.err", ud);
  snprintf(cmd, sizeof cmd, "timeout -k 10 %d '%s' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
           "--disable-background-networking --disable-component-update --disable-sync --user-data-dir='%s' "
           "--enable-logging=stderr --v=0 %s 'file://%s' >'%s' 2>'%s' </dev/null",
           BROWSER_TIMEOUT_S, bin, ud, what, html, o, e);
  int st = system(cmd);
  *out = h_read_file(o, NULL);
  *err = h_read_file(e, NULL);
  remove(o); remove(e); h_rm_rf(ud);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
/* browse_once, started again once if it was killed at its bound: the browser never got going
 * (a start-up stalled by load), which says nothing about the page. */
static int browse(const char *bin, const char *html, const char *what, char **out, char **err) {
  int st = browse_once(bin, html, what, out, err);
  if (st != 124 && st != 137) return st;
  fprintf(stderr, "  note: chromium %s timed out after %d s; starting it once more\n", what, BROWSER_TIMEOUT_S);
  free(*out); free(*err);
  return browse_once(bin, html, what, out, err);
}
/* The value of attribute `name` in the dumped DOM (malloc'd), NULL if absent. */
static char *dom_attr(const char *dom, const char *name) {
  char key[64];
  snprintf(key, sizeof key, " %s=\"", name);
  const char *s = dom ? strstr(dom, key) : NULL;
  if (!s) return NULL;
  s += strlen(key);
  return strndup(s, strcspn(s, "\""));
}
/* Loads the page; its self-check must say every one of `charts` SVGs drew a box and nothing
 * failed; no console message; with png, a screenshot lands there. */
static void check_in_browser(const char *bin, const char *html_rel, int charts, const char *png) {
  char html[PATH_MAX], want[32], *out, *err;
  REQUIRE(realpath(html_rel, html), "%s: %s", html_rel, strerror(errno));
  int st = browse(bin, html, "--dump-dom", &out, &err);
  CHECK(st == 0, "chromium --dump-dom exited %d (124: timed out after %d s): %.600s", st, BROWSER_TIMEOUT_S, err ? err : "");
  char *drawn = dom_attr(out, "data-charts-drawn"), *errors = dom_attr(out, "data-errors");
  snprintf(want, sizeof want, "%d/%d", charts, charts);
  CHECK(drawn && !strcmp(drawn, want), "charts drawn in the browser: %s, want %s", drawn ? drawn : "(the page never loaded)", want);
  CHECK(errors && !errors[0], "errors in the page: %s", errors ? errors : "(none recorded: the page never loaded)");
  for (const char *l = err ? err : ""; *l;) {   /* a console message is a script error or a blocked load */
    size_t len = strcspn(l, "\n");
    CHECK(!memmem(l, len, ":CONSOLE", 8), "console: %.*s", (int)len, l);
    l += len + (l[len] == '\n');
  }
  free(drawn); free(errors); free(out); free(err);
  if (!png) return;
  char what[PATH_MAX + 64];
  remove(png);
  snprintf(what, sizeof what, "--screenshot='%s' --window-size=1400,3000 --hide-scrollbars", png);
  st = browse(bin, html, what, &out, &err);
  size_t n = 0;
  char *img = h_read_file(png, &n);
  CHECK(st == 0 && img && n > 20000 && !memcmp(img, "\x89PNG", 4), "screenshot %s: exit %d, %zu bytes: %.400s", png, st, n,
        err ? err : "");
  free(img); free(out); free(err);
}

/* Where the kept page and screenshot go: build/test-html in the plain run, else "" (the test's
 * own directory). */
static void out_dir(char *buf, size_t n) {
  const char *b = getenv("BUILD"), *san = getenv("COMMLENS_SANITIZED");
  buf[0] = 0;
  if (san && *san) return;
  snprintf(buf, n, "%s/test-html", b && *b ? b : "build");
  mkdir(b && *b ? b : "build", 0755);
  mkdir(buf, 0755);
}

/* ---- the cases ---------------------------------------------------------------------------- */
TL_TEST(four_ranks_late_rank_slow_channel_offsets) {
  char d[256], od[512], html[600], png[600], bin[PATH_MAX];
  synth_cfg c;
  synth_defaults(&c);
  c.nranks = 4; c.ncoll = 60; c.late_rank = 2; c.late_ns = 2000000; c.slow_rank = 1; c.slow_ch = 3; c.slow_factor = 3;
  out_dir(od, sizeof od);
  snprintf(png, sizeof png, "%s/report.png", od[0] ? od : "/tmp");
  char *page = job_page(&c, d, sizeof d, od[0] ? od : NULL, "report.html", html, sizeof html);
  REQUIRE(page, "no page");
  check_self_contained(page);
  /* six charts: exposure, lateness, channels, bandwidth, clocks, and three for the plugin */
  CHECK(count(page, "<svg ") == 8, "%d SVG charts, want 8", count(page, "<svg "));
  /* the verdict opens the page, and the lateness reading repeats it */
  static const char said[] = "rank 2 (host node0) is a straggler: late every step (59 of 59) ";
  const char *v = strstr(page, "<section id=\"verdict\">"), *f = strstr(page, "<section id=\"findings\">");
  CHECK(v && f && v < f && strstr(v, said) && strstr(v, said) < f, "the page does not open with the verdict naming rank 2");
  CHECK(count(page, said) >= 2, "the lateness reading does not repeat the verdict (%d)", count(page, said));
  CHECK(strstr(page, "class=\"t em\">rank 2<"), "the late rank's heatmap row is not emphasised");
  CHECK(strstr(page, "rank 1 channel 3 (comm world) finished last in 60/60"), "channel reading does not name rank 1 ch 3");
  CHECK(strstr(page, "<li>clock 0: host node0, rank(s) 0 1 2 3: one clock (same boot), offset 0 exactly; the reference</li>"),
        "the clock model does not put the four ranks of one host on one clock");
  CHECK(strstr(page, "exposes the most communication"), "exposure reading missing");
  CHECK(strstr(page, "ns per call on median; no records dropped"), "plugin reading missing");
  /* the outliers point at the late rank's trace, with the instance's func and seq */
  char trace[600], abs[PATH_MAX];
  snprintf(trace, sizeof trace, "%s/commlens-r2-node0-1002.trace.json", d);
  REQUIRE(realpath(trace, abs), "%s missing", trace);
  char link[PATH_MAX + 64];
  snprintf(link, sizeof link, "<code>file://%s</code>", abs);
  CHECK(section_count(page, "outliers", link) >= 10, "the worst instances do not link rank 2's trace %s", abs);
  CHECK(section_count(page, "outliers", "<td>AllReduce #") >= 10, "no (func, seq) in the outlier table");
  free(page);
  if (browser_ready(bin, sizeof bin)) {
    check_in_browser(bin, html, 8, png);
    fprintf(stderr, "  page %s, screenshot %s\n", html, png);
  }
  h_rm_rf(d);
}

/* A real run from the GPU machine: 4 ranks of the example job sharing one H200 as emulated
 * nodes over sockets, CUPTI on, rank 2 sleeping 3 ms before every collective
 * (examples/gpu_one_gpu.sh, run four_delay_cupti; the traces are kept in test/data/traces). The
 * page names rank 2 first, as the text report does (the largest effect: late in 10 of 11 steps
 * by about 0.5 ms, the others' hosts resuming a slice apart on the shared GPU; 0.4% of the job
 * by the step's longest wait, below the floor), and draws in the browser; its screenshot is kept
 * beside the synthetic one. */
TL_TEST(real_four_rank_straggler_run) {
  char od[512], html[600], png[600], bin[PATH_MAX];
  static const char dir[] = "test/data/traces/nccl2.28.3-h200x1-4rank-straggler";
  out_dir(od, sizeof od);
  char tmp[256];
  if (!od[0]) { h_fresh_dir(tmp, sizeof tmp); snprintf(od, sizeof od, "%s", tmp); }
  snprintf(html, sizeof html, "%s/real-4rank.html", od);
  snprintf(png, sizeof png, "%s/real-4rank.png", od);
  char *page = report_html(dir, html);
  REQUIRE(page, "no page");
  check_self_contained_titled(page, "<title>commlens report: job (no job id)</title>");
  CHECK(strstr(page, "4 rank(s) (0..3)"), "not the 4 ranks of the run");
  CHECK(strstr(page, "no straggler found: the largest effect was rank 2 (host vm), late in "),
        "the verdict does not name the delayed rank 2");
  CHECK(strstr(page, "class=\"t em\">rank 2<"), "the delayed rank's heatmap row is not emphasised");
  free(page);
  if (browser_ready(bin, sizeof bin)) {   /* 7 charts: no KernelCh in this run, no channel chart */
    check_in_browser(bin, html, 7, png);
    fprintf(stderr, "  page %s, screenshot %s\n", html, png);
  }
}

TL_TEST(one_rank_without_cupti_or_kernelch_says_so) {
  char d[256], html[400], bin[PATH_MAX];
  synth_cfg c;
  synth_defaults(&c);
  c.nranks = 1; c.ncoll = 30; c.nch = 0; c.no_exposed = 1;
  char *page = job_page(&c, d, sizeof d, NULL, "one.html", html, sizeof html);
  REQUIRE(page, "no page");
  check_self_contained(page);
  CHECK(section_count(page, "exposure", "class=\"na\">No exposure data") == 1, "no CUPTI: no placeholder");
  CHECK(section_count(page, "lateness", "class=\"na\">One rank") == 1, "one rank: no lateness placeholder");
  CHECK(section_count(page, "channels", "class=\"na\">No KernelCh events") == 1, "no KernelCh: no placeholder");
  CHECK(section_count(page, "clocks", "class=\"na\">One rank") == 1, "one rank: no clock placeholder");
  CHECK(section_count(page, "bandwidth", "class=\"na\">") == 1, "one rank: no bandwidth placeholder");
  CHECK(count(page, "<svg ") == 3, "%d SVGs, want the plugin's 3", count(page, "<svg "));
  free(page);
  if (browser_ready(bin, sizeof bin)) check_in_browser(bin, html, 3, NULL);
  h_rm_rf(d);
}

TL_TEST(hundreds_of_ranks_are_bucketed) {
  char d[256], html[400], bin[PATH_MAX];
  synth_cfg c;
  synth_defaults(&c);
  c.nranks = 300; c.ncoll = 30; c.nch = 2; c.nsteps = 1; c.late_rank = 137; c.late_ns = 1500000;
  char *page = job_page(&c, d, sizeof d, NULL, "many.html", html, sizeof html);
  REQUIRE(page, "no page");
  /* 38 hosts (8 ranks each, offsets planted per host): rank 137's 1.5 ms is inside the clock
   * intervals to the other hosts, so the verdict calls no one; the reading still shows who
   * arrived last */
  CHECK(strstr(page, "no straggler found: no rank was late by more than 50.0 us beyond the clock error and the timing resolution") &&
        strstr(page, "; rank 137 (node17") && strstr(page, ") arrived last in 30/30 instances"), "lateness reading does not name rank 137");
  CHECK(strstr(page, "300 ranks in 60 rows of 5."), "the heatmap does not say how it bucketed the ranks");
  /* one cell per (row, column): 60 rows x 30 instances, not 300 x 30 */
  int cells = section_count(page, "lateness", "<rect ");
  CHECK(cells > 60 * 30 && cells <= 60 * 30 + 8, "%d rects in the lateness heatmap", cells);
  CHECK(strstr(page, "class=\"t em\">r135\xe2\x80\x93" "139<"), "the bucket holding rank 137 is not emphasised");
  free(page);
  if (browser_ready(bin, sizeof bin)) check_in_browser(bin, html, 8, NULL);
  h_rm_rf(d);
}

TL_TEST(nvtx_steps_are_the_columns) {
  char d[256], html[400];
  synth_cfg c;
  synth_defaults(&c);
  c.nranks = 4; c.ncoll = 100; c.nvtx_every = 10; c.late_rank = 3; c.late_ns = 1000000;
  char *page = job_page(&c, d, sizeof d, NULL, "steps.html", html, sizeof html);
  REQUIRE(page, "no page");
  CHECK(section_count(page, "lateness", "NVTX step (step number)") == 1, "columns are not the NVTX steps");
  CHECK(section_count(page, "lateness", "<title>rank 3 (node0), step 9: +") == 1, "no cell for rank 3 in step 9");
  free(page);
  h_rm_rf(d);
}

TL_TEST(bad_html_target_exits_2) {
  char d[256], a[800];
  int st;
  h_fresh_dir(d, sizeof d);
  REQUIRE(d[0], "no temp dir");
  synth_cfg c;
  synth_defaults(&c);
  c.nranks = 2; c.ncoll = 10;
  gen(&c, d);
  snprintf(a, sizeof a, "report '%s' --html '%s/no/such/dir/x.html' 2>&1", d, d);
  char *out = h_run_cli(a, &st);
  CHECK(st == 2 && out && strstr(out, "cannot write"), "exit %d: %.300s", st, out ? out : "");
  free(out);
  snprintf(a, sizeof a, "report '%s' --html 2>&1", d);
  out = h_run_cli(a, &st);
  CHECK(st == 2 && out && strstr(out, "option '--html' needs a value"), "exit %d: %.300s", st, out ? out : "");
  free(out);
  h_rm_rf(d);
}

H_MAIN("tools/html")
