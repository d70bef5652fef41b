/* test_gpu_join.c: the CUPTI join on synthetic activity: NVTX ranges named "step N" become
 * per-step exposure windows; a kernel whose launch record lies inside a KernelLaunch window is
 * NCCL's (by correlation, not by name); compute kernels hide part of a collective's span. */
#include "tl.h"
#include "gj_fixture.h"
#include "plugin/gpu/gpu_join.h"
#include "plugin/output/participants.h"
#include "exporters/summary.h"
#include "common/nccl.h"
#include "plugin/gpu/gpu_slices.h"
#include "plugin/output/tracks.h"
#include "plugin/gpu/exposure.h"
#include "common/grow.h"
#include "exporters/chrome_trace.h"
#include "exporters/strbuf.h"
#include "common/clock.h"
#include "common/utf8.h"

static uint64_t g_tag, g_exposed;
static int g_reports;
static void on_exp(void *arg, const cl_expo_result *r) {
  (void)arg;
  g_tag = r->span.tag; g_exposed = r->exposed_ns; g_reports++;
}

/* A KernelLaunch event as the assembler hands it over (stream unknown, not captured). */
static void launch(cl_gj *g, int tid, uint64_t s, uint64_t e, uint64_t group, uint32_t comm) {
  cl_gj_launch l = {.tid = tid, .start = s, .stop = e, .group = group, .comm = comm, .dev = -1};
  cl_gj_kernel_launch(g, &l);
}

TL_TEST(steps_launch_correlation_and_exposure) {
  cl_parts *ps = one_gpu();
  cl_ct *ct = cl_parts_of_dev(ps, -1)->ct;
  cl_gj *g = cl_gj_new(ps, 0);
  cl_gj_on_exposed(g, on_exp, NULL);
  REQUIRE(ct && g, "alloc");
  uint64_t T = 10000000000ull;                         /* 10 s */
  cl_gj_start(g, T);
  /* NCCL's launch: KernelLaunch window [T+100, T+200] on thread 42, group 77, comm 1 */
  launch(g, 42, T + 100, T + 200, 77, 1);
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
  cl_gj_counts n;
  cl_gj_totals(g, cl_parts_at(ps, 0), &n);
  CHECK(n.nccl_kernels == 1 && n.compute_kernels == 1 && n.by_name == 0, "nccl %llu compute %llu by-name %llu",
        (unsigned long long)n.nccl_kernels, (unsigned long long)n.compute_kernels, (unsigned long long)n.by_name);
  CHECK(n.launches_nccl == 1 && n.launches_other == 1, "launches matched %llu other %llu",
        (unsigned long long)n.launches_nccl, (unsigned long long)n.launches_other);
  cl_expo_comm_totals pc[4];
  size_t npc = cl_gj_comms(g, cl_parts_at(ps, 0), pc, 4);
  CHECK(npc == 1 && pc[0].comm == 0xabc && pc[0].t.comm_ns == 1000 && pc[0].t.exposed_ns == 400,
        "per communicator: %zu entries, first 0x%llx %llu/%llu", npc, (unsigned long long)pc[0].comm,
        (unsigned long long)pc[0].t.exposed_ns, (unsigned long long)pc[0].t.comm_ns);
  uint64_t sn, sx, sc, wid, wx;
  cl_gj_steps(g, cl_parts_at(ps, 0), &sn, &sx, &sc, &wid, &wx);
  CHECK(sn == 1 && wid == 5 && sx == 400 && sc == 1000, "steps %llu id %llu exposed %llu comm %llu",
        (unsigned long long)sn, (unsigned long long)wid, (unsigned long long)sx, (unsigned long long)sc);
  CHECK(strstr(ct_body(ct)->p, "\"cat\":\"step\",\"name\":\"step 5\""), "no step slice in the trace");
  cl_gj_free(g);
  cl_parts_free(ps);
}

TL_TEST(without_launch_events_names_decide) {
  cl_parts *ps = one_gpu();
  cl_gj *g = cl_gj_new(ps, 0);
  cl_gj_on_exposed(g, on_exp, NULL);
  cl_gpu_activity k = act(CL_GPU_KERNEL, 100, 200, 1, "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  cl_gj_activity(g, &k);                                /* mangled, as PyTorch's arrive */
  cl_gpu_activity c = act(CL_GPU_KERNEL, 100, 200, 2, "gemm");
  cl_gj_activity(g, &c);
  cl_gj_counts n;
  cl_gj_totals(g, cl_parts_at(ps, 0), &n);
  CHECK(n.nccl_kernels == 1 && n.compute_kernels == 1 && n.by_name == 1, "nccl %llu compute %llu by-name %llu",
        (unsigned long long)n.nccl_kernels, (unsigned long long)n.compute_kernels, (unsigned long long)n.by_name);
  cl_gj_free(g);
  cl_parts_free(ps);
}

/* Coverage and displacement: NCCL's launches keep coming but their launch records stop (another
 * CUPTI client took the records): detected after 8 misses in a row, 2 s old; coverage then ends
 * at the last launch that did get its record, and collectives after it do not wait for CUPTI. */
TL_TEST(lost_launch_records_end_coverage) {
  cl_parts *ps = one_gpu();
  cl_ct *ct = cl_parts_of_dev(ps, -1)->ct;
  cl_gj *g = cl_gj_new(ps, 0);
  cl_gj_on_exposed(g, on_exp, NULL);
  REQUIRE(ct && g, "alloc");
  uint64_t T = 10000000000ull, ms = 1000000ull, last = 0;
  cl_gj_start(g, T);
  CHECK(!cl_gj_covered(g, T - 1) && cl_gj_covered(g, T + 1), "coverage start");
  for (uint32_t i = 0; i < 20; i++) {       /* 20 launches 10 ms apart; records for the first 5 */
    uint64_t b = T + (uint64_t)i * 10 * ms;
    launch(g, 42, b, b + 100, 100 + i, 1);
    if (i < 5) { cl_gpu_activity l = act(CL_GPU_LAUNCH, b + 20, b + 80, 900 + i, NULL); cl_gj_activity(g, &l); }
  }
  uint64_t ok = 0;
  CHECK(!cl_gj_launches_lost(g, T + 1000 * ms, &ok), "lost before the records could have come");
  CHECK(cl_gj_launches_lost(g, T + 2300 * ms, &ok), "15 launches without records not seen as lost");
  CHECK(ok == T + 40 * ms + 100, "last ok %llu", (unsigned long long)(ok - T));
  /* the writer flushes CUPTI (forced) and asks again: the records were only late */
  for (uint32_t i = 5; i < 20; i++) {
    uint64_t b = T + (uint64_t)i * 10 * ms;
    cl_gpu_activity l = act(CL_GPU_LAUNCH, b + 20, b + 80, 900 + i, NULL);
    cl_gj_activity(g, &l);
  }
  CHECK(!cl_gj_launches_lost(g, T + 2300 * ms, &ok), "late records (a forced flush) still read as lost");
  for (uint32_t i = 20; i < 30; i++) {      /* then really gone */
    uint64_t b = T + (uint64_t)i * 10 * ms;
    launch(g, 42, b, b + 100, 100 + i, 1);
  }
  CHECK(cl_gj_launches_lost(g, T + 2400 * ms, &ok) && ok == T + 190 * ms + 100, "last ok %llu",
        (unsigned long long)(ok - T));
  cl_gj_stop(g, ok);
  CHECK(cl_gj_covered(g, T + 190 * ms) && !cl_gj_covered(g, T + 200 * ms), "coverage not ended at the last record");
  CHECK(!cl_gj_launches_lost(g, T + 9000 * ms, &last), "lost again while not covered");
  uint64_t cov = cl_gj_covered_ns(g, T + 9000 * ms);
  CHECK(cov == 190 * ms + 100, "covered %llu", (unsigned long long)cov);
  cl_gj_start(g, T + 10000 * ms);                       /* resumed (slot given back) */
  CHECK(cl_gj_covered(g, T + 10001 * ms) && !cl_gj_covered(g, T + 9999 * ms), "second interval");
  CHECK(cl_gj_covered_ns(g, T + 11000 * ms) == cov + 1000 * ms, "covered after resume");
  /* without any launch record (the driver API kind refused): launches say nothing */
  cl_gj *g2 = cl_gj_new(ps, 0);
  cl_gj_on_exposed(g2, on_exp, NULL);
  cl_gj_start(g2, T);
  for (uint32_t i = 0; i < 20; i++) launch(g2, 42, T + i * ms, T + i * ms + 100, 1 + i, 1);
  CHECK(!cl_gj_launches_lost(g2, T + 9000 * ms, &ok), "lost without ever a launch record");
  cl_gj_free(g2);
  cl_gj_free(g);
  cl_parts_free(ps);
}

/* CUDA-graph replays: the launch was recorded at capture (its launch record inside KernelLaunch
 * names a kernel that never runs); every replay runs NCCL's kernel under the graph launch's
 * correlation id, which is outside any KernelLaunch window. Intra-node replays fire no Coll
 * events: the replayed NCCL kernels count as communication on their own. */
static const char *k_ar = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
static uint64_t g_top_exposed;
static const char *g_top_name;
static void on_exp_graph(void *arg, const cl_expo_result *r) {
  (void)arg;
  g_reports++;
  if (r->span.tag & CL_GJ_TAG_GRAPH) { g_top_name = cl_gj_graph_name(r->span.tag); g_top_exposed += r->exposed_ns; }
}
static cl_gpu_activity graph_kernel(uint64_t s, uint64_t e, uint32_t corr, const char *name, uint32_t dev) {
  cl_gpu_activity k = act(CL_GPU_KERNEL, s, e, corr, name);
  k.graph_id = 3; k.graph_node = 17; k.device = dev;
  return k;
}

TL_TEST(graph_replays_without_coll_events_count_on_their_own) {
  cl_parts *ps = one_gpu();
  cl_ct *ct = cl_parts_of_dev(ps, -1)->ct;
  g_reports = 0; g_top_exposed = 0; g_top_name = NULL;
  cl_gj *g = cl_gj_new(ps, 0);
  cl_gj_on_exposed(g, on_exp_graph, NULL);
  REQUIRE(ct && g, "alloc");
  uint64_t T = 10000000000ull;
  cl_gj_start(g, T);
  launch(g, 42, T + 100, T + 200, 77, 1);           /* the capture */
  cl_gpu_activity cap = act(CL_GPU_LAUNCH, T + 120, T + 180, 600, NULL);
  cl_gj_activity(g, &cap);
  for (int i = 0; i < 3; i++) {
    uint64_t b = T + 1000000 + (uint64_t)i * 100000;
    cl_gpu_activity gl = act(CL_GPU_LAUNCH, b, b + 10, 700 + (uint32_t)i, NULL);   /* cudaGraphLaunch */
    cl_gj_activity(g, &gl);
    cl_gpu_activity k = graph_kernel(b + 1000, b + 2000, 700 + (uint32_t)i, k_ar, 0);
    cl_gpu_activity c = graph_kernel(b + 800, b + 1600, 700 + (uint32_t)i, "gemm_kernel", 0);
    cl_gj_activity(g, &k);
    cl_gj_activity(g, &c);
  }
  CHECK(cl_gj_graph_seen(g, 0) && !cl_gj_graph_seen(g, 1), "graph kernels seen on device 0 only");
  uint64_t s, e; uint32_t dev;
  CHECK(!cl_gj_span(g, 77, 1, &s, &e, &dev), "the captured launch's kernel never ran: no span");
  cl_gj_advance(g, T + 1500000000ull, 0);                         /* within the hold: kept */
  CHECK(g_reports == 0, "%d reports while the replayed kernels may still be claimed", g_reports);
  cl_gj_advance(g, T + 5000000000ull, 0);                         /* hold over, watermark past */
  CHECK(g_reports == 3, "%d reports, want 3 (one per replay)", g_reports);
  cl_gj_advance(g, T + 6000000000ull, 1);
  CHECK(g_top_exposed == 1200, "exposed %llu, want 3 x 400", (unsigned long long)g_top_exposed);
  CHECK(g_top_name == k_ar, "the replayed kernel's name names the collective");
  cl_gj_counts n;
  cl_gj_totals(g, cl_parts_at(ps, 0), &n);
  CHECK(n.nccl_kernels == 3 && n.graph_kernels == 3 && n.graph_claimed == 0 && n.compute_kernels == 3,
        "nccl %llu graph %llu claimed %llu compute %llu", (unsigned long long)n.nccl_kernels,
        (unsigned long long)n.graph_kernels, (unsigned long long)n.graph_claimed, (unsigned long long)n.compute_kernels);
  CHECK(n.t.comm_ns == 3000 && n.t.exposed_ns == 1200, "comm %llu exposed %llu", (unsigned long long)n.t.comm_ns,
        (unsigned long long)n.t.exposed_ns);
  CHECK(strstr(ct_body(ct)->p, "\"graph_node\":17"), "graph kernel slice lacks graph_node");
  cl_gj_free(g);
  cl_parts_free(ps);
}

/* A replayed collective whose events NCCL fires (KernelCh on, or proxy work) claims the
 * replayed kernel its own span overlaps, on its device only; a claimed kernel is not counted a
 * second time on its own. */
TL_TEST(replayed_collective_claims_its_kernel) {
  cl_parts *ps = one_gpu();
  cl_ct *ct = cl_parts_of_dev(ps, -1)->ct;
  g_reports = 0; g_top_exposed = 0;
  cl_gj *g = cl_gj_new(ps, 0);
  cl_gj_on_exposed(g, on_exp_graph, NULL);
  REQUIRE(ct && g, "alloc");
  uint64_t T = 10000000000ull;
  cl_gj_start(g, T);
  cl_gpu_activity k1 = graph_kernel(T + 1000, T + 2000, 700, k_ar, 0);
  cl_gpu_activity k2 = graph_kernel(T + 5000, T + 9000, 701, k_ar, 0);
  cl_gpu_activity k3 = graph_kernel(T + 1000, T + 2000, 702, k_ar, 1);   /* the other GPU */
  cl_gj_activity(g, &k1);
  cl_gj_activity(g, &k2);
  cl_gj_activity(g, &k3);
  uint64_t s = 0, e = 0;
  /* KernelCh span mapped from the GPU timer: a few ns outside the kernel is tolerated */
  REQUIRE(cl_gj_graph_claim(g, 0, T + 990, T + 1900, &s, &e), "no kernel for the KernelCh span");
  uint64_t s2, e2;
  CHECK(cl_gj_graph_claim(g, 0, T + 2010, T + 2040, &s2, &e2) && s2 == T + 1000,
        "a span just after the kernel (timer mapping error) takes the nearest kernel");
  CHECK(s == T + 1000 && e == T + 2000, "claimed %llu..%llu", (unsigned long long)(s - T), (unsigned long long)(e - T));
  REQUIRE(cl_gj_graph_claim(g, 0, T + 1100, T + 1200, &s, &e), "a grouped collective shares the kernel");
  CHECK(s == T + 1000, "second claim got %llu", (unsigned long long)(s - T));
  CHECK(!cl_gj_graph_claim(g, 0, T + 3000000, T + 3001000, &s, &e), "claimed a kernel far away in time");
  CHECK(!cl_gj_graph_claim(g, 2, T + 990, T + 1900, &s, &e), "claimed a kernel of another device");
  cl_gj_expose(g, 5, 0, 0xabc, T + 1000, T + 2000);    /* the collective, as the assembler queues it */
  cl_gj_advance(g, T + 6000000000ull, 1);
  cl_gj_counts n;
  cl_gj_totals(g, cl_parts_at(ps, 0), &n);
  CHECK(n.graph_kernels == 3 && n.graph_claimed == 1, "graph %llu claimed %llu", (unsigned long long)n.graph_kernels,
        (unsigned long long)n.graph_claimed);
  CHECK(g_reports == 3, "%d reports, want 3 (the collective, two unclaimed kernels)", g_reports);
  /* one timeline per rank: [1000, 2000) (the collective = k1, and k3) + [5000, 9000) (k2) */
  CHECK(n.t.comm_ns == 1000 + 4000, "comm %llu", (unsigned long long)n.t.comm_ns);
  CHECK(n.t.spans == 3, "spans %llu, want 3 (the collective, k2, k3: k1 is claimed)", (unsigned long long)n.t.spans);
  cl_gj_free(g);
  cl_parts_free(ps);
}

/* One process, two GPUs (one thread launches for both, as nccl-tests -g 2 and JAX do): each
 * GPU's NCCL kernel is exposed only by that GPU's compute, and each GPU's kernels, exposure and
 * totals go to its own participant. Before participants, compute on GPU 1 hid nothing of GPU
 * 0's collective but both were summed into one rank, and the union of both spans counted once. */
static uint32_t two_comms(void) { return 2; }
static int two_gpus(uint32_t serial, cl_comm_info *out) {
  if (serial < 1 || serial > 2) return -1;
  memset(out, 0, sizeof *out);
  out->serial = serial;
  out->cuda_dev = (int)serial - 1;   /* comm 1 on GPU 0, comm 2 on GPU 1 */
  out->d.rank = (int)serial - 1;
  out->d.nranks = 2;
  return 0;
}

TL_TEST(two_gpus_of_one_process_are_kept_apart) {
  static const cl_parts_deps d = {.comm_count = two_comms, .comm_lookup = two_gpus, .env_rank = -1,
                                  .env_source = "", .forced_rank = -1};
  cl_parts *ps = cl_parts_new(&d);
  cl_gj *g = cl_gj_new(ps, 0);
  REQUIRE(ps && g, "alloc");
  g_reports = 0;
  cl_gj_on_exposed(g, on_exp, NULL);
  uint64_t T = 10000000000ull;
  cl_gj_start(g, T);
  launch(g, 42, T + 100, T + 200, 10, 1);   /* GPU 0's launch, then GPU 1's */
  launch(g, 42, T + 300, T + 400, 11, 2);
  cl_gpu_activity l0 = act(CL_GPU_LAUNCH, T + 120, T + 180, 1, NULL);
  cl_gpu_activity l1 = act(CL_GPU_LAUNCH, T + 320, T + 380, 2, NULL);
  cl_gpu_activity lc = act(CL_GPU_LAUNCH, T + 500, T + 510, 3, NULL);   /* the app's, GPU 1 */
  cl_gj_activity(g, &l0); cl_gj_activity(g, &l1); cl_gj_activity(g, &lc);
  cl_gpu_activity k0 = act(CL_GPU_KERNEL, T + 1000, T + 2000, 1, "nccl0");
  cl_gpu_activity k1 = act(CL_GPU_KERNEL, T + 1000, T + 2000, 2, "nccl1");
  cl_gpu_activity c1 = act(CL_GPU_KERNEL, T + 900, T + 2100, 3, "gemm");
  k1.device = 1; c1.device = 1;
  cl_gj_activity(g, &k0); cl_gj_activity(g, &k1); cl_gj_activity(g, &c1);
  for (uint32_t comm = 1; comm <= 2; comm++) {
    uint64_t s, e; uint32_t dev;
    REQUIRE(cl_gj_span(g, 9 + comm, comm, &s, &e, &dev), "no span for comm %u", comm);
    CHECK(dev == comm - 1, "comm %u's kernel on GPU %u", comm, dev);
    cl_gj_expose(g, comm, dev, 0xab00 + comm, s, e);
  }
  cl_gj_advance(g, T + 5000, 1);
  CHECK(g_reports == 2, "%d exposure reports", g_reports);
  REQUIRE(cl_parts_count(ps) == 2, "%zu participants, want one per GPU", cl_parts_count(ps));
  for (int gpu = 0; gpu < 2; gpu++) {
    cl_part *p = cl_parts_of_dev(ps, gpu);
    cl_gj_counts n;
    cl_gj_totals(g, p, &n);
    uint64_t want_exposed = gpu == 0 ? 1000 : 0;
    CHECK(p->dev == gpu && p->rank == gpu, "participant of GPU %d: dev %d rank %d", gpu, p->dev, p->rank);
    CHECK(n.t.comm_ns == 1000 && n.t.exposed_ns == want_exposed, "GPU %d: comm %llu exposed %llu, want 1000/%llu",
          gpu, (unsigned long long)n.t.comm_ns, (unsigned long long)n.t.exposed_ns, (unsigned long long)want_exposed);
    CHECK(n.nccl_kernels == 1 && n.compute_kernels == (uint64_t)gpu, "GPU %d: nccl %llu compute %llu", gpu,
          (unsigned long long)n.nccl_kernels, (unsigned long long)n.compute_kernels);
    const char *body = ct_body(p->ct)->p;
    char mine[32], other[32];
    snprintf(mine, sizeof mine, "\"GPU %d stream", gpu);
    snprintf(other, sizeof other, "\"GPU %d stream", 1 - gpu);
    CHECK(body && strstr(body, mine) && !strstr(body, other), "GPU %d's trace: own kernels %s, other GPU's %s", gpu,
          body && strstr(body, mine) ? "yes" : "no", body && strstr(body, other) ? "yes" : "no");
  }
  cl_gj_free(g);
  cl_parts_free(ps);
}

/* ---- the join by stream and launch order (COMMLENS_CUPTI=kernels: no launch records) ---- */
static const char *k_nccl = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL";
static void launch_on(cl_gj *g, uint64_t s, uint64_t group, uint32_t stream, int captured) {
  cl_gj_launch l = {.tid = 42, .start = s, .stop = s + 100, .group = group, .comm = 1, .dev = 0,
                    .stream_id = stream + 1, .captured = captured};
  cl_gj_kernel_launch(g, &l);
}
/* A kernel record; `corr` is CUPTI's correlation id: launch order, process-wide. */
static cl_gpu_activity kern_on(uint64_t s, uint64_t e, uint32_t stream, const char *name, uint32_t corr) {
  cl_gpu_activity k = act(CL_GPU_KERNEL, s, e, corr, name);
  k.stream = stream;
  return k;
}
static int span_is(cl_gj *g, uint64_t group, uint64_t s, uint64_t e) {
  uint64_t gs, ge; uint32_t dev;
  return cl_gj_span(g, group, 1, &gs, &ge, &dev) && gs == s && ge == e;
}

/* Two streams, launches queued ahead of their kernels, a captured launch (its kernel runs at
 * replays only), a compute kernel between NCCL's, records arriving out of launch order, a kernel
 * record ahead of its launch event: each launch group gets the k-th NCCL kernel of its stream. */
TL_TEST(stream_order_joins_each_launch_to_its_kernel) {
  cl_parts *ps;
  uint64_t T = 10 * SEC;
  cl_gj *g = stream_join(&ps, T);
  REQUIRE(g && cl_gj_by_stream(g), "alloc");
  cl_gj_on_exposed(g, on_exp, NULL);
  launch_on(g, T + 100, 10, 4, 0);          /* stream 4: groups 10, then captured 13, then 12 */
  launch_on(g, T + 200, 11, 7, 0);          /* stream 7: group 11 */
  launch_on(g, T + 250, 13, 4, 1);
  launch_on(g, T + 300, 12, 4, 0);
  cl_gpu_activity k10 = kern_on(T + 2000, T + 3000, 4, k_nccl, 1);
  cl_gpu_activity k11 = kern_on(T + 1000, T + 1500, 7, k_nccl, 2);
  cl_gpu_activity c4 = kern_on(T + 1600, T + 1700, 4, "gemm", 3);
  cl_gpu_activity k12 = kern_on(T + 3000, T + 4000, 4, k_nccl, 5);
  cl_gj_activity(g, &k12); cl_gj_activity(g, &k11); cl_gj_activity(g, &c4); cl_gj_activity(g, &k10);
  uint64_t s, e; uint32_t dev;
  CHECK(!cl_gj_span(g, 10, 1, &s, &e, &dev), "joined before its stream's records settled");
  cl_gj_advance(g, T + SEC, 0);
  CHECK(span_is(g, 10, T + 2000, T + 3000), "group 10: not the first NCCL kernel of stream 4");
  CHECK(span_is(g, 11, T + 1000, T + 1500), "group 11: not stream 7's kernel");
  CHECK(span_is(g, 12, T + 3000, T + 4000), "group 12: not the second NCCL kernel of stream 4");
  CHECK(!cl_gj_span(g, 13, 1, &s, &e, &dev), "the captured launch took an eager kernel");
  /* a kernel record ahead of its launch event */
  cl_gpu_activity k14 = kern_on(T + 6000, T + 6500, 4, k_nccl, 7);
  cl_gj_activity(g, &k14);
  launch_on(g, T + 5000, 14, 4, 0);
  /* a kernel that started before the oldest waiting launch of its stream is not its kernel */
  launch_on(g, T + 9000, 15, 4, 0);
  cl_gpu_activity early = kern_on(T + 8000, T + 8500, 4, k_nccl, 8);
  cl_gpu_activity k15 = kern_on(T + 9500, T + 9900, 4, k_nccl, 9);
  cl_gj_activity(g, &early); cl_gj_activity(g, &k15);
  /* a kernel no launch ever comes for */
  cl_gpu_activity orphan = kern_on(T + 20000, T + 21000, 7, k_nccl, 10);
  cl_gj_activity(g, &orphan);
  cl_gj_advance(g, T + 2 * SEC, 0);
  CHECK(span_is(g, 14, T + 6000, T + 6500), "group 14: the kernel that came first was not joined");
  CHECK(span_is(g, 15, T + 9500, T + 9900), "group 15 took a kernel that ran before its launch");
  cl_gj_counts n;
  cl_gj_totals(g, cl_parts_at(ps, 0), &n);
  CHECK(n.by_stream == 5 && n.no_launch == 2 && n.nccl_kernels == 7 && n.compute_kernels == 1,
        "by stream %llu without launch %llu nccl %llu compute %llu, want 5 2 7 1", (unsigned long long)n.by_stream,
        (unsigned long long)n.no_launch, (unsigned long long)n.nccl_kernels, (unsigned long long)n.compute_kernels);
  cl_gj_advance(g, T + 5 * SEC, 1);
  cl_gj_totals(g, cl_parts_at(ps, 0), &n);
  CHECK(n.t.comm_ns == 500 + 1000, "kernels without a launch counted as communication: %llu ns, want 1500",
        (unsigned long long)n.t.comm_ns);
  done(g, ps);
}

/* A record that comes after later ones were joined (CUPTI's per-thread buffers): the joins are
 * redone, each launch gets its own kernel, and the next launch is not left one behind. */
TL_TEST(stream_order_repairs_a_late_record) {
  cl_parts *ps;
  uint64_t T = 10 * SEC;
  cl_gj *g = stream_join(&ps, T);
  REQUIRE(g, "alloc");
  for (int i = 0; i < 4; i++) launch_on(g, T + (uint64_t)i * 100, 30 + (uint64_t)i, 5, 0);   /* queued */
  cl_gpu_activity k[4];
  for (int i = 0; i < 4; i++) k[i] = kern_on(T + 1000 + (uint64_t)i * 1000, T + 1900 + (uint64_t)i * 1000, 5, k_nccl, 20 + (uint32_t)i);
  cl_gj_activity(g, &k[1]); cl_gj_activity(g, &k[2]);   /* the first one's record is late */
  cl_gj_advance(g, T + SEC, 0);
  CHECK(span_is(g, 30, T + 2000, T + 2900), "setup: the first launch took the second kernel");
  cl_gj_activity(g, &k[0]);
  CHECK(span_is(g, 30, T + 1000, T + 1900) && span_is(g, 31, T + 2000, T + 2900),
        "not repaired: the first two launches do not have their own kernels");
  uint64_t a, d, r;
  cl_gj_join_check(g, &a, &d, &r);
  CHECK(r == 1, "repairs %llu", (unsigned long long)r);
  cl_gj_activity(g, &k[3]);
  cl_gj_advance(g, T + 2 * SEC, 0);
  CHECK(span_is(g, 32, T + 3000, T + 3900) && span_is(g, 33, T + 4000, T + 4900), "later launches one behind");
  cl_gj_counts n;
  cl_gj_totals(g, cl_parts_at(ps, 0), &n);
  CHECK(n.no_launch == 0, "%llu kernels lost their launch", (unsigned long long)n.no_launch);
  /* the end of the run joins what has not settled yet */
  launch_on(g, T + 3 * SEC, 34, 5, 0);
  cl_gpu_activity k34 = kern_on(T + 3 * SEC + 500, T + 3 * SEC + 900, 5, k_nccl, 30);
  cl_gj_activity(g, &k34);
  cl_gj_join_all(g);
  CHECK(span_is(g, 34, T + 3 * SEC + 500, T + 3 * SEC + 900), "not joined at the end of the run");
  done(g, ps);
}

/* A job of small collectives: 30,000 launches in 0.3 s on two streams (100k per second), all
 * waiting together for their records to settle: every one is joined to its own kernel. */
TL_TEST(stream_order_keeps_up_with_100k_launches_a_second) {
  cl_parts *ps;
  uint64_t T = 10 * SEC;
  cl_gj *g = stream_join(&ps, T);
  REQUIRE(g, "alloc");
  const uint32_t n = 30000;
  for (uint32_t i = 0; i < n; i++) launch_on(g, T + (uint64_t)i * 10000, 1000 + i, 2 + i % 2, 0);
  for (uint32_t i = 0; i < n; i++) {
    cl_gpu_activity k = kern_on(T + (uint64_t)i * 10000 + 5000, T + (uint64_t)i * 10000 + 9000, 2 + i % 2, k_nccl, 100 + i);
    cl_gj_activity(g, &k);
  }
  cl_gj_advance(g, T + 2 * SEC, 0);
  cl_gj_counts c;
  cl_gj_totals(g, cl_parts_at(ps, 0), &c);
  CHECK(c.by_stream == n && c.no_launch == 0, "joined %llu of %u, %llu without a launch", (unsigned long long)c.by_stream,
        n, (unsigned long long)c.no_launch);
  CHECK(span_is(g, 1000 + n - 1, T + (uint64_t)(n - 1) * 10000 + 5000, T + (uint64_t)(n - 1) * 10000 + 9000) &&
        span_is(g, 1000 + n / 2, T + (uint64_t)(n / 2) * 10000 + 5000, T + (uint64_t)(n / 2) * 10000 + 9000),
        "a launch got another's kernel");
  done(g, ps);
}

/* With launch records on (full), the join by stream order runs as a check beside the
 * correlation's: here they agree on every launch. */
TL_TEST(stream_order_checked_against_correlation) {
  cl_parts *ps = one_gpu();
  cl_gj *g = cl_gj_new(ps, 0);
  REQUIRE(g && !cl_gj_by_stream(g), "alloc");
  uint64_t T = 10 * SEC;
  cl_gj_start(g, T);
  for (uint32_t i = 0; i < 3; i++) {
    uint64_t b = T + i * 1000;
    launch_on(g, b, 40 + i, 6, 0);
    cl_gpu_activity l = act(CL_GPU_LAUNCH, b + 20, b + 80, 60 + i, NULL);
    cl_gj_activity(g, &l);
  }
  for (uint32_t i = 3; i-- > 0;) {           /* out of order */
    cl_gpu_activity k = kern_on(T + 5000 + i * 1000, T + 5500 + i * 1000, 6, k_nccl, 60 + i);
    cl_gj_activity(g, &k);
  }
  cl_gj_advance(g, T + SEC, 0);
  uint64_t a, d, r;
  cl_gj_join_check(g, &a, &d, &r);
  CHECK(a == 3 && d == 0, "agree %llu differ %llu", (unsigned long long)a, (unsigned long long)d);
  CHECK(span_is(g, 41, T + 6000, T + 6500), "the correlation's span");
  done(g, ps);
}

/* A launch whose kernel record never came (lost) does not shift every later kernel by one:
 * once a kernel starts LAUNCH_KEEP_NS after it, the launch is passed. */
TL_TEST(stream_order_passes_a_launch_whose_kernel_never_came) {
  cl_parts *ps;
  uint64_t T = 10 * SEC, s6 = 6 * SEC;
  cl_gj *g = stream_join(&ps, T);
  REQUIRE(g, "alloc");
  launch_on(g, T, 20, 2, 0);                 /* its kernel record is lost */
  launch_on(g, T + s6, 21, 2, 0);
  cl_gpu_activity k21 = kern_on(T + s6 + 1000, T + s6 + 2000, 2, k_nccl, 5);
  cl_gj_activity(g, &k21);
  cl_gj_advance(g, T + s6 + SEC, 0);
  uint64_t s, e; uint32_t dev;
  CHECK(span_is(g, 21, T + s6 + 1000, T + s6 + 2000) && !cl_gj_span(g, 20, 1, &s, &e, &dev),
        "the kernel went to the launch 6 s before it");
  done(g, ps);
}

/* Displacement by stream order: launches that stay unjoined while CUPTI still delivers kernel
 * records (a kernel name we do not know) are not "records gone"; no kernel record at all is. */
TL_TEST(stream_order_tells_unknown_names_from_lost_records) {
  uint64_t T = 10 * SEC, ms = 1000000ull, ok = 0;
  for (int gone = 0; gone < 2; gone++) {
    cl_parts *ps;
    cl_gj *g = stream_join(&ps, T);
    REQUIRE(g, "alloc");
    for (uint32_t i = 0; i < 20; i++) {
      uint64_t b = T + (uint64_t)i * 10 * ms;
      launch_on(g, b, 100 + i, 3, 0);
      const char *name = i < 5 ? k_nccl : "newNcclKernelName";   /* from launch 5 on: unknown */
      cl_gpu_activity k = kern_on(b + 1000, b + 2000, 3, name, 100 + i);
      if (i < 5 || !gone) cl_gj_activity(g, &k);
    }
    cl_gj_advance(g, T + 2500 * ms, 0);
    int lost = cl_gj_launches_lost(g, T + 2500 * ms, &ok);
    CHECK(lost == gone, "%s: lost %d", gone ? "records gone" : "unknown names", lost);
    if (gone) CHECK(ok == T + 40 * ms + 100, "last ok %llu", (unsigned long long)(ok - T));
    done(g, ps);
  }
}

/* ---- compute kernels: exposure without a slice each (the default) ---- */
#define AGG_N 60                      /* collectives */
#define AGG_K 20                      /* compute kernels around each */
static uint64_t g_agg_exposed[AGG_N];
static void on_exp_agg(void *arg, const cl_expo_result *r) {
  (void)arg;
  if (r->span.tag < AGG_N) g_agg_exposed[r->span.tag] = r->exposed_ns;
}
/* "ts":<us>.<3 digits> and "dur":... of a slice, in ns: the trace's own text, exactly. */
static int slice_ns(const char *p, const char *key, uint64_t *ns) {
  const char *k = strstr(p, key);
  unsigned long long us, frac;
  if (!k || sscanf(k + strlen(key), "%llu.%3llu", &us, &frac) != 2) return -1;
  *ns = us * 1000 + frac;
  return 0;
}
/* |[s, e) - union(iv)|, iv sorted by start: what a reader of the trace computes. */
static uint64_t exposed_by_slices(uint64_t s, uint64_t e, const uint64_t (*iv)[2], size_t n) {
  uint64_t cur = s, out = 0;
  for (size_t i = 0; i < n && cur < e; i++) {
    if (iv[i][1] <= cur) continue;
    if (iv[i][0] >= e) break;
    if (iv[i][0] > cur) out += iv[i][0] - cur;
    cur = iv[i][1];
  }
  return out + (cur < e ? e - cur : 0);
}
static int cmp_iv(const void *a, const void *b) {
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The default keeps compute kernels as exposure's compute intervals and a count, without a
 * slice each (COMMLENS_CUPTI=full draws them). Driven with the same stream of 60 collectives
 * among 1,200 compute kernels (overlapping, touching, apart; NCCL's kernel partly hidden), the
 * default reports every collective's exposed time equal to full mode's and to what a reader
 * computes from full mode's compute slices (the span minus their union), the same totals, and
 * draws NCCL's kernels but no compute kernel. */
TL_TEST(exposure_without_compute_slices_equals_the_per_slice_computation) {
  const uint64_t T = 10 * SEC;
  uint64_t totals[2][2], exposed[2][AGG_N];
  uint64_t (*iv)[2] = calloc(AGG_N * AGG_K, sizeof *iv);
  size_t niv = 0;
  const char *body[2] = {NULL, NULL};
  cl_parts *ps[2];
  cl_gj *g[2];
  for (int full = 0; full < 2; full++) {
    g[full] = stream_join(&ps[full], T);
    REQUIRE(g[full] && iv, "alloc");
    cl_gj_draw_compute(g[full], full);
    cl_gj_on_exposed(g[full], on_exp_agg, NULL);
    uint32_t seed = 12345, corr = 0;
    for (uint64_t i = 0; i < AGG_N; i++) {
      uint64_t base = T + i * 100000;
      launch_on(g[full], base, i + 1, 5, 0);
      uint64_t cur = base + 1000;
      for (int k = 0; k < AGG_K; k++) {   /* 0.5 .. 3.5 us each; gaps of -0.5 .. 1.5 us */
        seed = seed * 1103515245u + 12345u;
        uint64_t dur = 500 + (seed >> 16) % 3000;
        seed = seed * 1103515245u + 12345u;
        int64_t gap = (int64_t)((seed >> 16) % 2000) - 500;
        uint64_t st = (int64_t)cur + gap > (int64_t)base ? (uint64_t)((int64_t)cur + gap) : cur;
        cl_gpu_activity c = kern_on(st, st + dur, 9, "void at::native::vectorized_elementwise_kernel<4>", ++corr);
        cl_gj_activity(g[full], &c);
        cur = st + dur;
        if (k == AGG_K / 2) {   /* NCCL's kernel starts among them */
          cl_gpu_activity n = kern_on(cur - 800, cur + 9000, 5, k_nccl, ++corr);
          cl_gj_activity(g[full], &n);
        }
      }
    }
    uint64_t end = T + AGG_N * 100000;
    cl_gj_advance(g[full], end + SEC, 0);          /* the joins settle */
    for (uint64_t i = 0; i < AGG_N; i++) {
      uint64_t s, e; uint32_t dev;
      REQUIRE(cl_gj_span(g[full], i + 1, 1, &s, &e, &dev), "collective %llu has no GPU span", (unsigned long long)i);
      cl_gj_expose(g[full], i, dev, 0xabc, s, e);
    }
    memset(g_agg_exposed, 0xff, sizeof g_agg_exposed);
    cl_gj_advance(g[full], end + 3 * SEC, 1);
    memcpy(exposed[full], g_agg_exposed, sizeof g_agg_exposed);
    cl_gj_counts n;
    cl_gj_totals(g[full], cl_parts_at(ps[full], 0), &n);
    CHECK(n.compute_kernels == AGG_N * AGG_K && n.nccl_kernels == AGG_N, "%s: compute %llu nccl %llu",
          full ? "full" : "default", (unsigned long long)n.compute_kernels, (unsigned long long)n.nccl_kernels);
    totals[full][0] = n.t.comm_ns;
    totals[full][1] = n.t.exposed_ns;
    body[full] = ct_body(cl_parts_of_dev(ps[full], -1)->ct)->p;
  }
  /* full mode's compute slices, as a reader of its trace sees them */
  int nccl_slices[2] = {0, 0}, compute_slices[2] = {0, 0};
  for (int full = 0; full < 2; full++)
    for (const char *p = body[full]; p && (p = strstr(p, "\"cat\":\"gpu_kernel\"")); p++) {
      const char *open = p;
      while (open > body[full] && *open != '{') open--;
      const char *nc = strstr(p, "\"nccl\":");
      if (!nc) break;
      if (!strncmp(nc + 7, "true", 4)) { nccl_slices[full]++; continue; }
      compute_slices[full]++;
      uint64_t ts, dur;
      if (full && niv < AGG_N * AGG_K && !slice_ns(open, "\"ts\":", &ts) && !slice_ns(open, "\"dur\":", &dur)) {
        iv[niv][0] = ts; iv[niv][1] = ts + dur; niv++;
      }
    }
  CHECK(compute_slices[0] == 0, "the default drew %d compute kernels, want none", compute_slices[0]);
  CHECK(compute_slices[1] == AGG_N * AGG_K && niv == AGG_N * AGG_K, "full mode drew %d compute kernels (%zu read), want %d",
        compute_slices[1], niv, AGG_N * AGG_K);
  CHECK(nccl_slices[0] == AGG_N && nccl_slices[1] == AGG_N, "NCCL kernels drawn: default %d, full %d, want %d each",
        nccl_slices[0], nccl_slices[1], AGG_N);
  qsort(iv, niv, sizeof *iv, cmp_iv);
  int differ = 0, hidden = 0;
  for (uint64_t i = 0; i < AGG_N; i++) {
    uint64_t s, e; uint32_t dev;
    REQUIRE(cl_gj_span(g[0], i + 1, 1, &s, &e, &dev), "span %llu", (unsigned long long)i);
    uint64_t want = exposed_by_slices(s, e, (const uint64_t (*)[2])iv, niv);
    if (exposed[0][i] != want || exposed[1][i] != want) {
      if (!differ++)
        fprintf(stderr, "  collective %llu: default %llu full %llu, from the slices %llu\n", (unsigned long long)i,
                (unsigned long long)exposed[0][i], (unsigned long long)exposed[1][i], (unsigned long long)want);
    }
    hidden += want < e - s;
  }
  CHECK(differ == 0, "%d of %d collectives' exposed time differs from the per-slice computation", differ, AGG_N);
  CHECK(hidden > AGG_N / 2, "only %d collectives were partly hidden: the stream does not test much", hidden);
  CHECK(totals[0][0] == totals[1][0] && totals[0][1] == totals[1][1],
        "totals: default %llu/%llu, full %llu/%llu (exposed/comm)", (unsigned long long)totals[0][1],
        (unsigned long long)totals[0][0], (unsigned long long)totals[1][1], (unsigned long long)totals[1][0]);
  free(iv);
  for (int full = 0; full < 2; full++) done(g[full], ps[full]);
}

TL_MAIN("gpu/gpu_join")

/* A launch as the assembler hands it over, with CUPTI's stream id + 1 (0: none offered). */
static void launch_sid(cl_gj *g, uint64_t s, uint64_t group, uint32_t sid) {
  cl_gj_launch l = {.tid = 42, .start = s, .stop = s + 100, .group = group, .comm = 1, .dev = 0, .stream_id = sid};
  cl_gj_kernel_launch(g, &l);
}
/* COMMLENS_CUPTI=sampled: a window of 50 launches, the last five of whose kernels ran after it
 * ended (no record), then a gap whose launches
 * (from `gap_from_ms` on: all of the gap, the lead before the next window, or none) carry no
 * stream id and get no kernel record, then a second window whose first two launches come before
 * stream ids are offered. Returns how many of the second window's launches got no span or
 * another launch's kernel. */
static int second_window_misjoins(uint64_t gap_from_ms) {
  cl_parts *ps;
  uint64_t T = 10 * SEC, MS = 1000000ull, grp = 1;
  uint32_t corr = 1;
  cl_gj *g = stream_join(&ps, T);
  for (int i = 0; i < 50; i++) {
    uint64_t t = T + (uint64_t)i * 10 * MS;
    launch_sid(g, t, grp++, 5);
    cl_gpu_activity k = kern_on(t + MS, t + MS + 100000, 4, k_nccl, corr++);
    if (i < 45) cl_gj_activity(g, &k);   /* the last five ran after CUPTI stopped recording */
  }
  cl_gj_advance(g, T + 500 * MS, 0);
  cl_gj_stop_window(g, T + 500 * MS);
  for (uint64_t t = T + gap_from_ms * MS; t < T + 3000 * MS; t += 10 * MS) { launch_sid(g, t, grp++, 0); corr++; }
  cl_gj_start(g, T + 3000 * MS);
  uint64_t first = grp;
  for (int i = 0; i < 50; i++) {
    uint64_t t = T + 3000 * MS + (uint64_t)i * 10 * MS + MS;
    launch_sid(g, t, grp++, i < 2 ? 0 : 5);
    cl_gpu_activity k = kern_on(t + MS, t + MS + 100000, 4, k_nccl, corr++);
    cl_gj_activity(g, &k);
  }
  cl_gj_advance(g, T + 6000 * MS, 0);
  int bad = 0;
  for (uint64_t gr = first; gr < grp; gr++) bad += !span_is(g, gr, T + 3000 * MS + (gr - first) * 10 * MS + 2 * MS,
                                                          T + 3000 * MS + (gr - first) * 10 * MS + 2 * MS + 100000);
  done(g, ps);
  return bad;
}
/* Launches made while CUPTI records no kernels never wait for one, nor do those of an earlier
 * window. Before, they took the next window's kernels in their place: with all of the gap's
 * launches recorded the window's own launches got no span at all (50 of 50); with only the
 * lead's, 30 got none and 20 another's kernel; with none, the five left over from the first
 * window put every launch of the second five kernels behind (seen on 2xH200, FSDP with windows
 * 3 s apart: GPU spans 280-450 ms off). */
TL_TEST(sampled_windows_launches_between_them_wait_for_no_kernel) {
  int all = second_window_misjoins(600), lead = second_window_misjoins(2700), none = second_window_misjoins(3000);
  CHECK(all == 0 && lead == 0 && none == 0, "second window: %d, %d, %d of 50 launches without their own kernel "
        "(launches all through the gap, in its last 300 ms, none)", all, lead, none);
}

/* Sampled windows, more of them than the join keeps (the oldest merge): times past the last
 * window's end are in none (answered without walking the windows), inside the last or an older
 * one in it, between two in none; a span is covered only inside one, past its guard. */
TL_TEST(coverage_of_many_windows_past_the_last_and_between) {
  cl_parts *ps;
  uint64_t T = 10 * SEC, MS = 1000000ull;
  cl_gj *g = stream_join(&ps, T);
  CHECK(g != NULL, "join");
  if (!g) return;
  for (int i = 0; i < 40; i++) {                  /* windows [T + i s, T + i s + 100 ms) */
    if (i) cl_gj_start(g, T + (uint64_t)i * SEC);
    cl_gj_stop_window(g, T + (uint64_t)i * SEC + 100 * MS);
  }
  uint64_t last = T + 39 * SEC;
  CHECK(!cl_gj_covered(g, last + 100 * MS) && !cl_gj_covered(g, last + 5 * SEC), "past the last window");
  CHECK(cl_gj_covered(g, last + 50 * MS) && cl_gj_covered(g, T + 20 * SEC + 50 * MS), "inside a window");
  CHECK(!cl_gj_covered(g, T + 20 * SEC + 500 * MS), "between two windows");
  CHECK(!cl_gj_covered_for(g, last + 200 * MS, last + 300 * MS, 0), "a span past the last window");
  CHECK(cl_gj_covered_for(g, last + 30 * MS, last + 60 * MS, 25 * MS) &&
        !cl_gj_covered_for(g, last + 10 * MS, last + 60 * MS, 25 * MS), "a span in the last window, past its guard or not");
  CHECK(!cl_gj_covered_for(g, last + 50 * MS, last + 150 * MS, 0), "a span that outlasts the last window");
  CHECK(!cl_gj_lost(g, last + 500 * MS), "after a window's end: not lost (a sampling gap)");
  cl_gj_start(g, T + 41 * SEC);                   /* open again: from its start on, covered */
  CHECK(cl_gj_covered(g, T + 60 * SEC) && !cl_gj_covered(g, T + 40 * SEC), "an open window");
  done(g, ps);
}
