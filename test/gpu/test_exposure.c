/* test_exposure.c: the exposed-communication engine and its aggregator, on small integer
 * timelines, against hand-computed answers and a brute-force per-unit reference. */
#include "tl.h"
#include "plugin/gpu/exposure.h"
#include "plugin/gpu/ivset.h"
#include "common/grow.h"

#define MAXR 4096
typedef struct { cl_expo_span span; uint64_t exposed; cl_expo_iv pieces[64]; size_t np; int incomplete; } rec;
static rec g_r[MAXR];
static int g_n;
static cl_expo_agg *g_agg;

static void on_report(void *arg, const cl_expo_result *r) {
  (void)arg;
  if (g_n < MAXR) {
    rec *x = &g_r[g_n++];
    x->span = r->span; x->exposed = r->exposed_ns; x->incomplete = r->incomplete;
    x->np = r->npieces < 64 ? r->npieces : 64;
    if (x->np) memcpy(x->pieces, r->pieces, x->np * sizeof *x->pieces);
  }
  if (g_agg) cl_expo_agg_add(g_agg, r);
}

static cl_expo *mk(void) { g_n = 0; g_agg = NULL; return cl_expo_new(NULL, on_report, NULL); }
static cl_expo_span sp(uint64_t s, uint64_t e, uint64_t tag) {
  cl_expo_span x; memset(&x, 0, sizeof x); x.start_ns = s; x.end_ns = e; x.tag = tag; x.comm = 0xc0; return x;
}

TL_TEST(full_overlap) {
  cl_expo *e = mk();
  cl_expo_add_compute(e, 0, 0, 100);
  cl_expo_span s = sp(10, 50, 1); cl_expo_add_span(e, &s);
  cl_expo_advance(e, 200);
  REQUIRE(g_n == 1, "n=%d", g_n);
  CHECK(g_r[0].exposed == 0 && g_r[0].np == 0, "exposed=%llu", (unsigned long long)g_r[0].exposed);
  cl_expo_free(e);
}

TL_TEST(no_overlap) {
  cl_expo *e = mk();
  cl_expo_add_compute(e, 0, 0, 10);
  cl_expo_add_compute(e, 1, 10, 50);            /* other device: does not hide */
  cl_expo_span s = sp(10, 50, 1); cl_expo_add_span(e, &s);
  cl_expo_advance(e, 200);
  REQUIRE(g_n == 1, "n=%d", g_n);
  CHECK(g_r[0].exposed == 40 && g_r[0].np == 1 && g_r[0].pieces[0].start_ns == 10 &&
        g_r[0].pieces[0].end_ns == 50, "exposed=%llu", (unsigned long long)g_r[0].exposed);
  cl_expo_free(e);
}

TL_TEST(partial_both_ends) {
  cl_expo *e = mk();
  cl_expo_add_compute(e, 0, 0, 20);
  cl_expo_add_compute(e, 0, 40, 70);
  cl_expo_span s = sp(10, 100, 1); cl_expo_add_span(e, &s);
  cl_expo_span t = sp(30, 45, 2); cl_expo_add_span(e, &t);
  cl_expo_advance(e, 200);
  REQUIRE(g_n == 2, "n=%d", g_n);
  CHECK(g_r[0].span.tag == 2 && g_r[0].exposed == 10, "first=%llu", (unsigned long long)g_r[0].exposed);
  CHECK(g_r[1].exposed == 20 + 30, "second=%llu", (unsigned long long)g_r[1].exposed);
  CHECK(g_r[1].np == 2 && g_r[1].pieces[0].start_ns == 20 && g_r[1].pieces[0].end_ns == 40 &&
        g_r[1].pieces[1].start_ns == 70 && g_r[1].pieces[1].end_ns == 100, "pieces");
  cl_expo_free(e);
}

TL_TEST(several_streams_union_not_sum) {
  cl_expo *e = mk();
  cl_expo_add_compute(e, 0, 0, 60);    /* stream A */
  cl_expo_add_compute(e, 0, 20, 80);   /* stream B overlaps A */
  cl_expo_add_compute(e, 0, 30, 40);   /* stream C inside both */
  cl_expo_span s = sp(0, 100, 1); cl_expo_add_span(e, &s);
  cl_expo_advance(e, 1000);
  REQUIRE(g_n == 1, "n=%d", g_n);
  CHECK(g_r[0].exposed == 20, "exposed=%llu", (unsigned long long)g_r[0].exposed);
  cl_expo_free(e);
}

TL_TEST(grouped_collectives_share_kernel) {
  cl_expo *e = mk();
  cl_expo_agg *a = cl_expo_agg_new(0, 1000, NULL, NULL);
  g_agg = a;
  cl_expo_add_compute(e, 0, 0, 30);
  cl_expo_span s1 = sp(10, 50, 1), s2 = sp(10, 50, 2);   /* one NCCL kernel, two collectives */
  s2.comm = 0xc1;
  cl_expo_add_span(e, &s1); cl_expo_add_span(e, &s2);
  cl_expo_advance(e, 100);
  REQUIRE(g_n == 2, "n=%d", g_n);
  CHECK(g_r[0].exposed == 20 && g_r[1].exposed == 20, "per span");
  cl_expo_totals t; cl_expo_agg_totals(a, &t);
  CHECK(t.comm_ns == 40 && t.exposed_ns == 20 && t.spans == 2, "totals comm=%llu exp=%llu",
        (unsigned long long)t.comm_ns, (unsigned long long)t.exposed_ns);
  CHECK(cl_expo_overlap_ppm(&t) == 500000, "ppm=%u", cl_expo_overlap_ppm(&t));
  cl_expo_comm_totals ct[4];
  size_t n = cl_expo_agg_comms(a, ct, 4);
  CHECK(n == 2 && ct[0].comm == 0xc0 && ct[0].t.comm_ns == 40 && ct[1].t.exposed_ns == 20, "comms n=%zu", n);
  cl_expo_agg_free(a); cl_expo_free(e);
}

TL_TEST(out_of_order_and_watermark) {
  cl_expo *e = mk();
  cl_expo_span s = sp(100, 200, 1); cl_expo_add_span(e, &s);
  cl_expo_advance(e, 150);                      /* span not finished below the watermark */
  CHECK(g_n == 0, "reported early");
  cl_expo_add_compute(e, 0, 150, 180);          /* arrives late, out of order */
  cl_expo_add_compute(e, 0, 90, 120);
  cl_expo_advance(e, 199);
  CHECK(g_n == 0, "reported before end");
  cl_expo_advance(e, 200);
  REQUIRE(g_n == 1, "n=%d", g_n);
  CHECK(g_r[0].exposed == 100 - 20 - 30, "exposed=%llu", (unsigned long long)g_r[0].exposed);
  cl_expo_advance(e, 300);
  CHECK(g_n == 1, "reported twice");
  cl_expo_stats st; cl_expo_get_stats(e, &st);
  CHECK(st.compute_late == 1 && st.spans_reported == 1, "late=%llu", (unsigned long long)st.compute_late);
  cl_expo_free(e);
}

TL_TEST(finish_reports_everything_in_end_order) {
  cl_expo *e = mk();
  cl_expo_span a = sp(0, 500, 1), b = sp(0, 300, 2);
  cl_expo_add_span(e, &a); cl_expo_add_span(e, &b);
  cl_expo_finish(e);
  REQUIRE(g_n == 2, "n=%d", g_n);
  CHECK(g_r[0].span.tag == 2 && g_r[1].span.tag == 1, "order");
  cl_expo_free(e);
}

TL_TEST(bounded_memory_and_late_spans) {
  cl_expo_limits lim = {.max_pending = 4, .max_intervals = 8, .retain_ns = 100};
  g_n = 0; g_agg = NULL;
  cl_expo *e = cl_expo_new(&lim, on_report, NULL);
  for (uint64_t i = 0; i < 100; i++) cl_expo_add_compute(e, 0, i * 10, i * 10 + 5);
  cl_expo_stats st; cl_expo_get_stats(e, &st);
  CHECK(st.compute_dropped == 92, "dropped=%llu", (unsigned long long)st.compute_dropped);
  for (int i = 0; i < 6; i++) { cl_expo_span s = sp(980, 990, (uint64_t)i); cl_expo_add_span(e, &s); }
  cl_expo_get_stats(e, &st);
  CHECK(st.spans_overflow == 2, "overflow=%llu", (unsigned long long)st.spans_overflow);
  cl_expo_advance(e, 2000);
  CHECK(g_n == 4 && g_r[0].exposed == 5 && !g_r[0].incomplete, "n=%d", g_n);
  cl_expo_span late = sp(0, 50, 9); cl_expo_add_span(e, &late);  /* history long gone */
  cl_expo_advance(e, 2001);
  REQUIRE(g_n == 5, "n=%d", g_n);
  CHECK(g_r[4].incomplete, "late span not flagged");
  cl_expo_free(e);
}

/* ---- aggregation windows ---- */
static cl_expo_window g_w[256];
static int g_nw;
static void on_win(void *arg, const cl_expo_window *w) { (void)arg; if (g_nw < 256) g_w[g_nw++] = *w; }

TL_TEST(buckets_and_steps) {
  cl_expo *e = mk();
  g_nw = 0;
  cl_expo_agg *a = cl_expo_agg_new(100, 10000, on_win, NULL);
  g_agg = a;
  cl_expo_add_compute(e, 0, 50, 150);
  cl_expo_span s = sp(80, 260, 1); cl_expo_add_span(e, &s);   /* buckets 0,1,2 */
  cl_expo_span t = sp(520, 540, 2); cl_expo_add_span(e, &t);  /* bucket 5; 3,4 empty */
  cl_expo_add_step(a, 0, 200, 7);
  cl_expo_add_step(a, 200, 600, 8);
  cl_expo_advance(e, 250); cl_expo_agg_advance(a, cl_expo_reported_upto(e));
  CHECK(cl_expo_reported_upto(e) == 80, "upto");
  CHECK(g_nw == 0, "closed before the span was reported: %d", g_nw);
  cl_expo_advance(e, 1000); cl_expo_agg_advance(a, cl_expo_reported_upto(e));
  REQUIRE(g_nw == 6, "windows=%d", g_nw);
  /* buckets in order: 0 [80,100) comm 20 exposed 0; 1 comm 100 exposed 50; 2 comm 60 exp 60 */
  CHECK(g_w[0].kind == CL_EXPO_WIN_BUCKET && g_w[0].id == 0 && g_w[0].comm_ns == 20 && g_w[0].exposed_ns == 0, "b0");
  CHECK(g_w[1].id == 1 && g_w[1].comm_ns == 100 && g_w[1].exposed_ns == 50, "b1");
  CHECK(g_w[2].id == 2 && g_w[2].comm_ns == 60 && g_w[2].exposed_ns == 60, "b2");
  CHECK(g_w[3].id == 5 && g_w[3].comm_ns == 20 && g_w[3].exposed_ns == 20, "b5 id=%llu", (unsigned long long)g_w[3].id);
  CHECK(g_w[4].kind == CL_EXPO_WIN_STEP && g_w[4].id == 7 && g_w[4].comm_ns == 120 && g_w[4].exposed_ns == 50, "step7 %llu %llu",
        (unsigned long long)g_w[4].comm_ns, (unsigned long long)g_w[4].exposed_ns);
  CHECK(g_w[5].id == 8 && g_w[5].comm_ns == 80 && g_w[5].exposed_ns == 80, "step8");
  cl_expo_agg_free(a); cl_expo_free(e);
}

/* ---- random cases against a per-unit reference ---- */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(uint64_t n) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng % n; }

TL_TEST(random_against_brute_force) {
  enum { T = 2000, NDEV = 2 };
  static unsigned char cov[NDEV][T], comm_cov[T], exp_cov[T];
  for (int round = 0; round < 200; round++) {
    cl_expo *e = mk();
    cl_expo_agg *a = cl_expo_agg_new(0, 1u << 30, NULL, NULL);
    g_agg = a;
    memset(cov, 0, sizeof cov); memset(comm_cov, 0, sizeof comm_cov); memset(exp_cov, 0, sizeof exp_cov);
    int nc = (int)rnd(60), ns = 1 + (int)rnd(20);
    struct { uint64_t s, e; uint32_t d; } cs[60];
    for (int i = 0; i < nc; i++) {
      cs[i].s = rnd(T); cs[i].e = cs[i].s + rnd(200); if (cs[i].e > T) cs[i].e = T; cs[i].d = (uint32_t)rnd(NDEV);
      for (uint64_t t = cs[i].s; t < cs[i].e; t++) cov[cs[i].d][t] = 1;
    }
    cl_expo_span spans[20];
    for (int i = 0; i < ns; i++) {
      spans[i] = sp(rnd(T), 0, (uint64_t)i);
      spans[i].end_ns = spans[i].start_ns + rnd(300); if (spans[i].end_ns > T) spans[i].end_ns = T;
      spans[i].device = 0;   /* the aggregator is per device: spans on device 0, compute on both */
    }
    /* feed everything in a random order, advancing the watermark in steps; compute interval
     * i may only arrive before the watermark passes its end */
    int ci = 0, si = 0;
    uint64_t wm = 0;
    while (ci < nc || si < ns) {
      if (si < ns && (ci >= nc || rnd(2))) { cl_expo_add_span(e, &spans[si++]); continue; }
      if (ci < nc) {
        cl_expo_add_compute(e, cs[ci].d, cs[ci].s, cs[ci].e);
        ci++;
      }
      if (rnd(4) == 0) { uint64_t lowest = T; for (int k = ci; k < nc; k++) if (cs[k].s < lowest) lowest = cs[k].s;
        if (lowest > wm) { wm = lowest; cl_expo_advance(e, wm); } }
    }
    cl_expo_advance(e, T + 1);
    REQUIRE(g_n == ns, "round %d: reported %d of %d", round, g_n, ns);
    for (int r = 0; r < g_n; r++) {
      const rec *x = &g_r[r];
      uint64_t want = 0;
      for (uint64_t t = x->span.start_ns; t < x->span.end_ns; t++) {
        if (!cov[x->span.device][t]) { want++; exp_cov[t] = 1; }
        comm_cov[t] = 1;
      }
      CHECK(x->exposed == want, "round %d span %llu: exposed %llu want %llu", round,
            (unsigned long long)x->span.tag, (unsigned long long)x->exposed, (unsigned long long)want);
      uint64_t psum = 0;
      for (size_t p = 0; p < x->np; p++) {
        psum += x->pieces[p].end_ns - x->pieces[p].start_ns;
        for (uint64_t t = x->pieces[p].start_ns; t < x->pieces[p].end_ns; t++)
          CHECK(!cov[x->span.device][t], "piece covers compute");
      }
      CHECK(x->np == 64 || psum == x->exposed, "pieces sum");
      CHECK(!x->incomplete, "incomplete");
    }
    uint64_t wc = 0, wx = 0;
    for (int t = 0; t < T; t++) { wc += comm_cov[t]; wx += exp_cov[t]; }
    cl_expo_totals tot; cl_expo_agg_totals(a, &tot);
    CHECK(tot.comm_ns == wc && tot.exposed_ns == wx, "round %d totals %llu/%llu want %llu/%llu", round,
          (unsigned long long)tot.comm_ns, (unsigned long long)tot.exposed_ns,
          (unsigned long long)wc, (unsigned long long)wx);
    cl_expo_agg_free(a); cl_expo_free(e);
    if (tl_cur_failed) return;
  }
}

TL_TEST(random_ivset_against_bitmap) {
  enum { T = 3000 };
  static unsigned char bm[T];
  for (int round = 0; round < 300; round++) {
    cl_ivset s; memset(&s, 0, sizeof s); s.max = 1 << 20;
    memset(bm, 0, sizeof bm);
    for (int i = 0; i < 80; i++) {
      uint64_t a = rnd(T), b = a + rnd(100); if (b > T) b = T;
      uint64_t want = 0;
      for (uint64_t t = a; t < b; t++) if (!bm[t]) { want++; bm[t] = 1; }
      uint64_t got = cl_iv_add(&s, a, b, NULL);
      CHECK(got == want, "add %llu-%llu got %llu want %llu", (unsigned long long)a, (unsigned long long)b,
            (unsigned long long)got, (unsigned long long)want);
      for (size_t k = 1; k < s.n; k++) CHECK(s.v[k - 1].end_ns < s.v[k].start_ns, "not disjoint");
      uint64_t qa = rnd(T), qb = qa + rnd(500), wc = 0;
      if (qb > T) qb = T;
      for (uint64_t t = qa; t < qb; t++) wc += bm[t];
      CHECK(cl_iv_covered(&s, qa, qb) == wc, "covered");
    }
    cl_iv_free(&s);
    if (tl_cur_failed) return;
  }
}

/* Order-only spans (sampled mode, outside CUPTI's windows) keep their end-time place among the
 * measured ones, and wait for nothing else: once no measured span is pending, they are all
 * reported at the next advance, whatever their end (before, a queue of them kept the engine
 * busy as long as collectives kept coming, each held for the whole lag). */
TL_TEST(order_only_spans_wait_only_for_measured_ones) {
  cl_expo *e = mk();
  cl_expo_span m = sp(10, 50, 1), o1 = sp(20, 40, 2), o2 = sp(60, 90, 3), o3 = sp(70, 1000, 4);
  o1.order_only = o2.order_only = o3.order_only = 1;
  cl_expo_add_span(e, &m); cl_expo_add_span(e, &o1); cl_expo_add_span(e, &o2); cl_expo_add_span(e, &o3);
  cl_expo_advance(e, 45);                       /* the measured one is not ready: nothing passes it */
  REQUIRE(g_n == 1 && g_r[0].span.tag == 2, "n=%d", g_n);
  CHECK(cl_expo_pending(e) == 3, "pending=%zu", cl_expo_pending(e));
  cl_expo_advance(e, 55);                       /* it goes, and with it every order-only span */
  REQUIRE(g_n == 4, "n=%d", g_n);
  CHECK(g_r[1].span.tag == 1 && g_r[2].span.tag == 3 && g_r[3].span.tag == 4, "order %llu %llu %llu",
        (unsigned long long)g_r[1].span.tag, (unsigned long long)g_r[2].span.tag, (unsigned long long)g_r[3].span.tag);
  CHECK(cl_expo_pending(e) == 0, "pending=%zu", cl_expo_pending(e));
  cl_expo_span o4 = sp(2000, 3000, 5);          /* alone: the next advance reports it */
  o4.order_only = 1;
  cl_expo_add_span(e, &o4);
  cl_expo_advance(e, 56);
  CHECK(g_n == 5 && g_r[4].span.tag == 5 && cl_expo_pending(e) == 0, "n=%d", g_n);
  cl_expo_free(e);
}

/* A full set forgets its oldest sixteenth at once (one move of the set per sixteenth of the cap
 * insertions, not one per insertion), never past the new interval, and says so. */
TL_TEST(full_ivset_forgets_a_sixteenth_at_once) {
  cl_ivset s; memset(&s, 0, sizeof s); s.max = 64;
  for (uint64_t i = 0; i < 64; i++) cl_iv_add(&s, i * 10, i * 10 + 5, NULL);
  REQUIRE(s.n == 64 && s.lost_below == 0, "n=%zu", s.n);
  size_t dropped = 0;
  cl_iv_add(&s, 640, 645, &dropped);
  CHECK(dropped == 4 && s.n == 61 && s.v[0].start_ns == 40 && s.lost_below == 35, "n=%zu first=%llu lost_below=%llu", s.n,
        (unsigned long long)s.v[0].start_ns, (unsigned long long)s.lost_below);
  dropped = 0;
  for (uint64_t i = 65; i < 68; i++) cl_iv_add(&s, i * 10, i * 10 + 5, &dropped);
  CHECK(!dropped && s.n == 64, "n=%zu", s.n);
  cl_iv_add(&s, 46, 47, &dropped);              /* after the oldest interval: only that one may go */
  CHECK(dropped == 1 && s.n == 64 && s.v[0].start_ns == 46 && s.lost_below == 45, "n=%zu first=%llu lost_below=%llu", s.n,
        (unsigned long long)s.v[0].start_ns, (unsigned long long)s.lost_below);
  dropped = 0;
  cl_iv_add(&s, 10, 12, &dropped);              /* older than all it keeps: refused, and said below */
  CHECK(dropped == 1 && s.n == 64 && s.v[0].start_ns == 46 && s.lost_below == 45,
        "n=%zu first=%llu lost_below=%llu", s.n, (unsigned long long)s.v[0].start_ns, (unsigned long long)s.lost_below);
  cl_iv_free(&s);
}

TL_MAIN("gpu/exposure")
