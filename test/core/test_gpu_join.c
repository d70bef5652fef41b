/* test_gpu_join.c: the CUPTI join on synthetic activity: NVTX ranges named "step N" become
 * per-step exposure windows; a kernel whose launch record lies inside a KernelLaunch window is
 * NCCL's (by correlation, not by name); compute kernels hide part of a collective's span. */
#include "tl.h"
#include "../../plugin/gpu_join.c"
#include "../../exporters/exposure.c"
#include "../../exporters/chrome_trace.c"
#include "../../exporters/strbuf.c"
#include "../../plugin/clock.c"

static uint64_t g_tag, g_exposed;
static int g_reports;
static void on_exp(void *arg, uint64_t tag, uint64_t exposed, const cl_expo_iv *p, size_t n, int inc) {
  (void)arg; (void)p; (void)n; (void)inc;
  g_tag = tag; g_exposed = exposed; g_reports++;
}

static cl_gpu_activity act(int kind, uint64_t s, uint64_t e, uint32_t corr, const char *name) {
  cl_gpu_activity a = {0};
  a.kind = (uint8_t)kind; a.start_ns = s; a.end_ns = e; a.correlation = corr; a.name = name;
  a.thread = 42; a.stream = 7;
  return a;
}

TL_TEST(steps_launch_correlation_and_exposure) {
  cl_ct *ct = ct_new(0, 0);
  cl_gj *g = cl_gj_new(ct, on_exp, NULL);
  REQUIRE(ct && g, "alloc");
  uint64_t T = 10000000000ull;                         /* 10 s */
  cl_gj_start(g, T);
  /* NCCL's launch: KernelLaunch window [T+100, T+200] on thread 42, group 77, comm 1 */
  cl_gj_kernel_launch(g, 42, T + 100, T + 200, 77, 1);
  cl_gpu_activity l = act(CL_GPU_LAUNCH, T + 120, T + 180, 501, NULL);
  cl_gj_activity(g, &l);
  cl_gpu_activity l2 = act(CL_GPU_LAUNCH, T + 300, T + 310, 502, NULL);   /* the app's launch */
  cl_gj_activity(g, &l2);
  /* the NCCL kernel (a name that does not look like NCCL's: correlation decides) */
  cl_gpu_activity k = act(CL_GPU_KERNEL, T + 1000, T + 2000, 501, "some_kernel");
  cl_gj_activity(g, &k);
  /* a compute kernel covering the first 600 ns of it */
  cl_gpu_activity c = act(CL_GPU_KERNEL, T + 800, T + 1600, 502, "ncclDevKernel_looks_like_nccl");
  cl_gj_activity(g, &c);
  uint64_t s, e; uint32_t dev;
  REQUIRE(cl_gj_span(g, 77, 1, &s, &e, &dev), "no span for the launch group");
  CHECK(s == T + 1000 && e == T + 2000, "span %llu..%llu", (unsigned long long)(s - T), (unsigned long long)(e - T));
  /* NVTX step 5 covers the collective */
  cl_gpu_activity ms = act(CL_GPU_MARK_START, T + 500, T + 500, 9, "step 5");
  cl_gpu_activity me = act(CL_GPU_MARK_END, T + 3000, T + 3000, 9, NULL);
  cl_gj_activity(g, &ms);
  cl_gj_activity(g, &me);
  cl_gj_expose(g, 1234, dev, 0xabc, s, e);
  cl_gj_advance(g, T + 5000, 1);
  CHECK(g_reports == 1 && g_tag == 1234, "reports %d tag %llu", g_reports, (unsigned long long)g_tag);
  CHECK(g_exposed == 400, "exposed %llu, want 400 (1000 ns span, 600 hidden)", (unsigned long long)g_exposed);
  uint64_t nk, ck, bn, lm, lo;
  cl_expo_totals t;
  cl_gj_totals(g, &t, &nk, &ck, &bn, &lm, &lo);
  CHECK(nk == 1 && ck == 1 && bn == 0, "nccl %llu compute %llu by-name %llu", (unsigned long long)nk,
        (unsigned long long)ck, (unsigned long long)bn);
  CHECK(lm == 1 && lo == 1, "launches matched %llu other %llu", (unsigned long long)lm, (unsigned long long)lo);
  uint64_t sn, sx, sc, wid, wx;
  cl_gj_steps(g, &sn, &sx, &sc, &wid, &wx);
  CHECK(sn == 1 && wid == 5 && sx == 400 && sc == 1000, "steps %llu id %llu exposed %llu comm %llu",
        (unsigned long long)sn, (unsigned long long)wid, (unsigned long long)sx, (unsigned long long)sc);
  CHECK(strstr(ct_body(ct)->p, "\"cat\":\"step\",\"name\":\"step 5\""), "no step slice in the trace");
  cl_gj_free(g);
  ct_free(ct);
}

TL_TEST(without_launch_events_names_decide) {
  cl_ct *ct = ct_new(0, 0);
  cl_gj *g = cl_gj_new(ct, on_exp, NULL);
  cl_gpu_activity k = act(CL_GPU_KERNEL, 100, 200, 1, "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  cl_gj_activity(g, &k);                                /* mangled, as PyTorch's arrive */
  cl_gpu_activity c = act(CL_GPU_KERNEL, 100, 200, 2, "gemm");
  cl_gj_activity(g, &c);
  uint64_t nk, ck, bn, lm, lo;
  cl_expo_totals t;
  cl_gj_totals(g, &t, &nk, &ck, &bn, &lm, &lo);
  CHECK(nk == 1 && ck == 1 && bn == 1, "nccl %llu compute %llu by-name %llu", (unsigned long long)nk,
        (unsigned long long)ck, (unsigned long long)bn);
  cl_gj_free(g);
  ct_free(ct);
}

TL_MAIN("core/gpu_join")
