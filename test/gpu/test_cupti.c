/* test_cupti.c: the CUPTI bridge without a GPU, over the stand-in libcupti of
 * test/fakes/fake_cupti.c; environment variables pick its behaviour: busy subscriber slot, too
 * old, kernel activity refused, or a synthetic activity buffer on flush. */
#include "tl.h"
#include "harness.h"
#include "plugin/gpu/cupti.h"
#include "plugin/gpu/cupti_internal.h"
#include <dlfcn.h>
#include "common/log.h"
#include "common/clock.h"
#include "common/config.h"
#include <stdarg.h>
#include <unistd.h>

static char g_fake[512];
static int g_logs;                  /* messages but the NVTX hint, the last in g_last */
static char g_last[512];
static int g_nvtx_hints;            /* messages naming NVTX_INJECTION64_PATH, the last in g_hint */
static char g_hint[512];

static void counting_logger(int level, unsigned long flags, const char *file, int line,
                            const char *fmt, ...) {
  (void)level; (void)flags; (void)file; (void)line;
  char msg[512];
  va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof msg, fmt, ap); va_end(ap);
  /* the NVTX hint (one INFO line at a start with the injection unset) is counted apart */
  if (strstr(msg, "NVTX_INJECTION64_PATH=")) { g_nvtx_hints++; snprintf(g_hint, sizeof g_hint, "%s", msg); return; }
  snprintf(g_last, sizeof g_last, "%s", msg);
  g_logs++;
}

static void reset(void) {
  if (cl_cupti_g.state == CUPTI_ACTIVE || cl_cupti_g.state == CUPTI_SUSPENDED) cl_cupti_stop();
  cl_cupti_g.state = CUPTI_UNTRIED;
  cl_cupti_g.status[0] = 0;
  cl_cupti_g.dropped = cl_cupti_g.buffers = cl_cupti_g.records = 0;
  cl_cupti_g.retry_ns = cl_cupti_g.retry_at = cl_cupti_g.resumed = 0;
  cl_cupti_g.first_coll = 0;
  cl_cupti_g.first_cap = 0;
  cl_log_reset_once();
  g_logs = 0; g_last[0] = 0; g_nvtx_hints = 0; g_hint[0] = 0;
  cl_log_set_logger(counting_logger);
  unsetenv("FAKE_BUSY"); unsetenv("FAKE_OLD"); unsetenv("FAKE_NOKERNEL"); unsetenv("FAKE_NOINIT");
}

/* The stand-in libcupti (test/fakes/fake_cupti.c), built next to the library under test. */
static int find_fake(void) {
  if (!g_fake[0]) h_fake_path(NULL, "libcommlens-fakecupti.so", g_fake, sizeof g_fake);
  return access(g_fake, R_OK) == 0 ? 0 : -1;
}

static int *fake_int(const char *sym) {
  void *h = dlopen(g_fake, RTLD_NOW | RTLD_NOLOAD);
  int *p = h ? dlsym(h, sym) : NULL;
  if (h) dlclose(h);
  return p;
}

TL_TEST(missing_library_one_message) {
  reset();
  setenv("COMMLENS_CUPTI_LIB", "/nonexistent/dir/libcupti.so", 1); cl_config_load();
  CHECK(cl_cupti_start() == -1, "started");
  CHECK(cl_cupti_start() == -1, "second start");
  CHECK(g_logs == 1, "logs=%d", g_logs);
  CHECK(strstr(g_last, "not found") != NULL, "msg: %s", g_last);
  cl_cupti_stats st; cl_cupti_get_stats(&st);
  CHECK(!st.active && strstr(st.status, "libcupti not found"), "status: %s", st.status);
  cl_gpu_activity a[4];
  cl_cupti_flush(1);
  CHECK(cl_cupti_drain(a, 4) == 0, "drained from nothing");
  cl_cupti_stop();
}

TL_TEST(library_without_symbols) {
  reset();
  setenv("COMMLENS_CUPTI_LIB", "libz.so.1", 1); cl_config_load();
  CHECK(cl_cupti_start() == -1, "started");
  CHECK(g_logs == 1 && strstr(g_last, "lacks cuptiGetVersion"), "logs=%d %s", g_logs, g_last);
}

/* Another tool holds CUPTI when NCCL starts us: nothing of CUPTI's is touched (no callbacks,
 * no kinds, no flush) until it lets go; then GPU timing starts (a regression once: it never started). */
TL_TEST(busy_subscriber_backs_off) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s (make builds it)", g_fake);
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  setenv("FAKE_BUSY", "1", 1);
  int *reg = fake_int("fake_registered");
  int before = reg ? *reg : -1;
  CHECK(cl_cupti_start() == 0 && !cl_cupti_recording(), "start while busy: state %d", cl_cupti_g.state);
  CHECK(cl_cupti_wants_launches(cl_now(), 0), "launches not wanted while another tool holds CUPTI (it may let go at any poll)");
  CHECK(g_logs == 1 && strstr(g_last, "in use"), "logs=%d %s", g_logs, g_last);
  reg = fake_int("fake_registered");
  REQUIRE(reg != NULL, "fake not loaded");
  int r0 = before < 0 ? 0 : before;
  CHECK(*reg == r0, "registered callbacks over another tool");
  int *dis = fake_int("fake_disabled"), *flushes = fake_int("fake_flushes"), f0 = *flushes;
  int any = 0;
  for (int i = 0; i < 64; i++) any |= dis[i];
  CHECK(!any, "disabled kinds it never enabled");
  cl_cupti_g.next_probe = 0;
  cl_cupti_flush(1);                       /* still held: nothing touched */
  CHECK(!cl_cupti_recording() && *reg == r0 && *flushes == f0, "touched CUPTI while another tool holds it");
  cl_cupti_stats st; cl_cupti_get_stats(&st);
  CHECK(!st.active && strstr(st.status, "in use"), "status %s", st.status);
  /* the tool (a torch.profiler window open when NCCL started) lets go: GPU timing starts */
  unsetenv("FAKE_BUSY");
  cl_cupti_g.next_probe = 0;
  cl_cupti_flush(0);
  CHECK(cl_cupti_recording() && *reg == r0 + 1, "not taken up when the tool let go: %s", cl_cupti_g.status);
  cl_cupti_stop();
}

TL_TEST(not_initialized_and_too_old) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s", g_fake);
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  setenv("FAKE_NOINIT", "1", 1);
  CHECK(cl_cupti_start() == -1, "started");
  CHECK(g_logs == 1 && strstr(g_last, "could not start"), "logs=%d %s", g_logs, g_last);
  reset();
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  setenv("FAKE_OLD", "1", 1);
  CHECK(cl_cupti_start() == -1, "started");
  CHECK(g_logs == 1 && strstr(g_last, "too old"), "logs=%d %s", g_logs, g_last);
}

TL_TEST(kernel_activity_refused) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s", g_fake);
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  setenv("FAKE_NOKERNEL", "1", 1);
  int *dis = fake_int("fake_disabled");
  int d_memcpy = dis ? dis[CUPTI_ACTIVITY_KIND_MEMCPY] : 0, d_kernel = dis ? dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] : 0;
  CHECK(cl_cupti_start() == -1, "started");
  CHECK(g_logs == 1 && strstr(g_last, "kernel activity unavailable"), "logs=%d %s", g_logs, g_last);
  dis = fake_int("fake_disabled");
  REQUIRE(dis != NULL, "fake not loaded");
  CHECK(dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] == d_kernel, "disabled a kind it did not enable");
  CHECK(dis[CUPTI_ACTIVITY_KIND_MEMCPY] == d_memcpy, "memcpy was never enabled here");
}

/* The default (COMMLENS_CUPTI=sampled, its first window open): kernel and memcpy records (the
 * copies of copy-engine collectives) and NVTX ranges, no launch or memset records; NCCL's
 * launching threads get CUPTI's id of a stream (+1; 0 when unknown). */
TL_TEST(default_samples_kernel_records_only) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s", g_fake);
  REQUIRE(dlopen(g_fake, RTLD_NOW), "fake not loadable");   /* counters readable before start */
  int *en = fake_int("fake_enabled");
  REQUIRE(en, "fake not loaded");
  int before[64];
  memcpy(before, en, sizeof before);
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); unsetenv("COMMLENS_CUPTI"); cl_config_load();
  REQUIRE(cl_cfg.cupti == CL_CUPTI_SAMPLED, "default level %d", cl_cfg.cupti);   /* its first window opens at start */
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", cl_cupti_g.status);
  CHECK(en[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] > before[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] &&
        en[CUPTI_ACTIVITY_KIND_MEMCPY] > before[CUPTI_ACTIVITY_KIND_MEMCPY] &&
        en[CUPTI_ACTIVITY_KIND_MARKER] > before[CUPTI_ACTIVITY_KIND_MARKER], "kernel, memcpy and marker kinds not enabled");
  CHECK(en[CUPTI_ACTIVITY_KIND_DRIVER] == before[CUPTI_ACTIVITY_KIND_DRIVER] &&
        en[CUPTI_ACTIVITY_KIND_MEMSET] == before[CUPTI_ACTIVITY_KIND_MEMSET], "driver or memset enabled by default");
  CHECK(!cl_cupti_launch_records(), "launch records on by default");
  CHECK(cl_cupti_stream_id(0x1230) == 0x123 + 1 && cl_cupti_stream_id(0) == 0, "stream ids %u %u",
        cl_cupti_stream_id(0x1230), cl_cupti_stream_id(0));
  cl_cupti_stop();
  CHECK(cl_cupti_stream_id(0x1230) == 0, "stream ids asked after stop");
  /* on, 1: the same; full: launch records too (stream ids still: the join by stream checks) */
  setenv("COMMLENS_CUPTI", "on", 1); cl_config_load();
  CHECK(cl_cfg.cupti == CL_CUPTI_KERNELS, "on: level %d", cl_cfg.cupti);
  setenv("COMMLENS_CUPTI", "full", 1); cl_config_load();
  CHECK(cl_cfg.cupti == CL_CUPTI_FULL, "full: level %d", cl_cfg.cupti);
  reset();
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", cl_cupti_g.status);
  CHECK(cl_cupti_launch_records() && cl_cupti_stream_id(0x1230) == 0x124, "full: launch records %d stream id %u",
        cl_cupti_launch_records(), cl_cupti_stream_id(0x1230));
  cl_cupti_stop();
  unsetenv("COMMLENS_CUPTI");
}

/* COMMLENS_CUPTI=sampled: KernelCh is asked of NCCL; kernel records are on in the first window
 * (stream ids offered), off after it (the stream ids withdrawn, a sampling gap, not a loss),
 * and on again at the next period. A malformed window setting falls back to the default. */
TL_TEST(sampled_windows_open_and_close) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s", g_fake);
  REQUIRE(dlopen(g_fake, RTLD_NOW), "fake not loadable");
  int *en = fake_int("fake_enabled"), *dis = fake_int("fake_disabled");
  REQUIRE(en && dis, "fake not loaded");
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1);
  setenv("COMMLENS_CUPTI", "sampled", 1);
  setenv("COMMLENS_CUPTI_SAMPLE", "3:2", 1);
  cl_config_load();
  CHECK(cl_cfg.sample_on_ns == 1000000000ull && cl_cfg.sample_period_ns == 30000000000ull,
        "a window longer than its period was taken: %llu / %llu", (unsigned long long)cl_cfg.sample_on_ns,
        (unsigned long long)cl_cfg.sample_period_ns);
  setenv("COMMLENS_CUPTI_SAMPLE", "0.05:0.3", 1);
  cl_config_load();
  REQUIRE(cl_cfg.cupti == CL_CUPTI_SAMPLED && (cl_cfg.mask & (1u << 6)), "sampled: level %d, mask 0x%x",
          cl_cfg.cupti, cl_cfg.mask);
  int e0 = en[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL], d0 = dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL];
  CHECK(!cl_cupti_wants_launches(cl_now(), 0), "launches wanted before CUPTI started");
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", cl_cupti_g.status);
  CHECK(cl_cupti_wants_launches(cl_now(), 0), "launches not wanted in the first window");
  CHECK(cl_cupti_recording() && !cl_cupti_sampling_gap() && cl_cupti_stream_id(0x1230) == 0x124,
        "first window: recording %d, gap %d, stream id %u", cl_cupti_recording(), cl_cupti_sampling_gap(),
        cl_cupti_stream_id(0x1230));
  uint64_t t0 = cl_now();
  while (cl_cupti_recording() && cl_now() - t0 < 5000000000ull) { cl_cupti_flush(0); usleep(5000); }
  int *fin = fake_int("fake_finalized"), f0 = fin ? *fin : 0;
  for (int i = 0; i < 3; i++) { cl_cupti_flush(0); usleep(2000); }   /* the tick after: detached */
  CHECK(fin && *fin == f0 + 1 && cl_cupti_g.detached, "CUPTI not detached between windows (finalized %d)",
        fin ? *fin - f0 : -1);
  /* NCCL's launches (API and KernelLaunch events) feed nothing between the windows; they are
   * wanted again within the lead of the next window (capture/gate.h) */
  CHECK(!cl_cupti_wants_launches(cl_now(), 0) && cl_cupti_wants_launches(cl_now(), 1000000000ull),
        "between windows: launches wanted %d (no lead), %d (a lead past the next window)",
        cl_cupti_wants_launches(cl_now(), 0), cl_cupti_wants_launches(cl_now(), 1000000000ull));
  CHECK(!cl_cupti_recording() && cl_cupti_sampling_gap() && cl_cupti_stream_id(0x1230) == 0 &&
        dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] == d0 + 1,
        "after the window: recording %d, gap %d, stream id %u, kernel kind disabled %d times",
        cl_cupti_recording(), cl_cupti_sampling_gap(), cl_cupti_stream_id(0x1230),
        dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] - d0);
  while (!cl_cupti_recording() && cl_now() - t0 < 10000000000ull) { cl_cupti_flush(0); usleep(5000); }
  CHECK(cl_cupti_recording() && !cl_cupti_g.detached && en[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] == e0 + 2 &&
        cl_cupti_stream_id(0x1230) == 0x124,
        "next window: recording %d, kernel kind enabled %d times (want 2)", cl_cupti_recording(),
        en[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] - e0);
  cl_cupti_stop();
  unsetenv("COMMLENS_CUPTI"); unsetenv("COMMLENS_CUPTI_SAMPLE");
}

/* COMMLENS_CUPTI=sampled: the first window opens with CUPTI and waits for the job's first
 * collective (a job builds its model in between): it closes a whole window after that collective,
 * and the gap before the next is the usual one. With no collective for a whole period it closes
 * then, and a collective after that opens the next window at once. */
static int tick_until(int recording, double max_s) {
  uint64_t t0 = cl_now();
  while (cl_cupti_recording() != recording && cl_now() - t0 < (uint64_t)(max_s * 1e9)) { cl_cupti_flush(0); usleep(5000); }
  return cl_cupti_recording() == recording;
}
TL_TEST(sampled_first_window_waits_for_the_first_collective) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s", g_fake);
  REQUIRE(dlopen(g_fake, RTLD_NOW), "fake not loadable");
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1);
  setenv("COMMLENS_CUPTI", "sampled", 1);
  setenv("COMMLENS_CUPTI_SAMPLE", "0.1:1", 1);
  cl_config_load();
  uint64_t on = cl_cfg.sample_on_ns, gap = cl_cfg.sample_period_ns - on;
  REQUIRE(cl_cupti_start() == 0 && cl_cupti_recording(), "start failed: %s", cl_cupti_g.status);
  uint64_t t0 = cl_now();
  CHECK(!tick_until(0, 0.3), "the first window closed %.2f s after the start, before any collective",
        (double)(cl_now() - t0) / 1e9);
  uint64_t t1 = cl_now();
  cl_cupti_first_collective(t1);
  cl_cupti_first_collective(t1 + 5000000000ull);   /* once only */
  CHECK(cl_cupti_g.win_end == t1 + on, "the first window ends %+lld ns after the first collective (want %llu)",
        (long long)(cl_cupti_g.win_end - t1), (unsigned long long)on);
  REQUIRE(tick_until(0, 5), "the first window did not close after the first collective");
  CHECK(cl_now() >= t1 + on && cl_cupti_g.win_next >= t1 + on + gap,
        "closed %.3f s after the first collective, the next window %.3f s after it (want >= %.3f, %.3f)",
        (double)(cl_now() - t1) / 1e9, (double)(cl_cupti_g.win_next - t1) / 1e9, (double)on / 1e9,
        (double)(on + gap) / 1e9);
  cl_cupti_stop();

  reset();   /* no collective for a whole period: closed then; the first one opens the next at once */
  uint64_t t2 = cl_now();
  REQUIRE(cl_cupti_start() == 0 && cl_cupti_recording(), "restart failed: %s", cl_cupti_g.status);
  REQUIRE(tick_until(0, 5), "the first window never closed without a collective");
  CHECK(cl_now() - t2 >= cl_cfg.sample_period_ns, "closed %.3f s after the start (want a period, %.3f s)",
        (double)(cl_now() - t2) / 1e9, (double)cl_cfg.sample_period_ns / 1e9);
  for (int i = 0; i < 3; i++) { cl_cupti_flush(0); usleep(2000); }   /* the tick after: detached */
  uint64_t t3 = cl_now();
  cl_cupti_first_collective(t3);
  CHECK(tick_until(1, 0.5), "no window within 0.5 s of the first collective (the next was %.2f s away)",
        (double)(cl_cupti_g.win_next - t3) / 1e9);
  cl_cupti_stop();
  unsetenv("COMMLENS_CUPTI"); unsetenv("COMMLENS_CUPTI_SAMPLE");
}

/* NVTX ranges need the injection variable at the job's start; the plugin never sets it (see
 * docs/decisions/0046-nvtx-steps.md) but says once what to set: the libcupti it loaded, by its full path. */
TL_TEST(says_how_nvtx_ranges_reach_it_when_the_injection_is_unset) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s", g_fake);
  const char *was = getenv("NVTX_INJECTION64_PATH");
  char saved[1024] = "";
  if (was) snprintf(saved, sizeof saved, "%s", was);
  unsetenv("NVTX_INJECTION64_PATH");
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", cl_cupti_g.status);
  char want[600];
  snprintf(want, sizeof want, "NVTX_INJECTION64_PATH=%s;", g_fake);
  CHECK(g_nvtx_hints == 1 && strstr(g_hint, want) && strstr(g_hint, "repeating pattern"), "%d hints: %s",
        g_nvtx_hints, g_hint);
  CHECK(!getenv("NVTX_INJECTION64_PATH"), "the plugin set NVTX_INJECTION64_PATH");
  cl_cupti_stop();
  reset();
  setenv("NVTX_INJECTION64_PATH", "/opt/nsight/libToolsInjection64.so", 1);   /* a profiler's own */
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", cl_cupti_g.status);
  CHECK(g_nvtx_hints == 0, "a hint although the job set the injection: %s", g_hint);
  CHECK(!strcmp(getenv("NVTX_INJECTION64_PATH"), "/opt/nsight/libToolsInjection64.so"), "the job's injection changed");
  cl_cupti_stop();
  if (saved[0]) setenv("NVTX_INJECTION64_PATH", saved, 1); else unsetenv("NVTX_INJECTION64_PATH");
}

TL_TEST(delivers_records) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s", g_fake);
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); setenv("COMMLENS_CUPTI", "full", 1); cl_config_load();
  unsetenv("COMMLENS_CUPTI");
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", cl_cupti_g.status);
  CHECK(g_logs == 0, "logged on success: %s", g_last);
  int *en = fake_int("fake_enabled");
  CHECK(en[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] >= 1 && en[CUPTI_ACTIVITY_KIND_KERNEL] == 0 &&
        en[CUPTI_ACTIVITY_KIND_DRIVER] >= 1, "kinds (launch records come from KIND_DRIVER)");
  cl_gpu_activity a[16];
  CHECK(cl_cupti_drain(a, 16) == 0, "records before flush");
  cl_cupti_flush(0);
  size_t n = cl_cupti_drain(a, 2);       /* partial drains keep their place */
  n += cl_cupti_drain(a + n, 16 - n);
  REQUIRE(n == 5, "n=%zu", n);
  CHECK(a[0].kind == CL_GPU_KERNEL && a[0].start_ns == 1000 && a[0].end_ns == 2000 && a[0].device == 1 &&
        a[0].context == 2 && a[0].stream == 7 && a[0].correlation == 42 && !a[0].graph_node, "k0");
  CHECK(a[1].graph_node && a[1].correlation == 43 && strcmp(a[1].name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL") == 0, "k1");
  CHECK(a[2].name == a[0].name, "names not interned");
  /* each kernel says whether its name is NCCL's, the second record of a name too (from the
   * interned entry, not by searching the name again) */
  CHECK(a[0].name_class == CL_GPU_NAME_OTHER && a[1].name_class == CL_GPU_NAME_NCCL &&
        a[2].name_class == CL_GPU_NAME_OTHER, "name classes %d %d %d", a[0].name_class, a[1].name_class,
        a[2].name_class);
  CHECK(strcmp(a[0].name, "myGemm(float*, float*)") == 0 || strcmp(a[0].name, "_Z6myGemmPfS_") == 0, "name %s", a[0].name);
  CHECK(a[3].kind == CL_GPU_LAUNCH && a[3].thread == 1234 && a[3].correlation == 43 && a[3].start_ns == 900, "launch");
  CHECK(a[4].kind == CL_GPU_MEMCPY && a[4].stream == 3 && a[4].end_ns == 7100, "memcpy");
  cl_cupti_stats st; cl_cupti_get_stats(&st);
  CHECK(st.active && st.records == 5 && st.dropped == 3 && st.buffers == 1, "stats %llu %llu %llu",
        (unsigned long long)st.records, (unsigned long long)st.dropped, (unsigned long long)st.buffers);
  /* buffers are reused, not leaked: many flushes stay within the cap */
  for (int i = 0; i < 50; i++) { cl_cupti_flush(0); while (cl_cupti_drain(a, 16)) {} }
  CHECK(cl_cupti_g.nalloc <= 2, "nalloc=%d", cl_cupti_g.nalloc);
  /* the writer does not drain: CUPTI gets no buffer after the cap, and nothing grows */
  for (int i = 0; i < CL_CUPTI_MAX_BUFS + 4; i++) cl_cupti_flush(0);
  CHECK(cl_cupti_g.nalloc == CL_CUPTI_MAX_BUFS && cl_cupti_g.refused > 0, "cap nalloc=%d", cl_cupti_g.nalloc);
  cl_cupti_stop();
  int *dis = fake_int("fake_disabled");
  CHECK(dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] >= 1 && dis[CUPTI_ACTIVITY_KIND_DRIVER] >= 1, "stop disables ours only");
  cl_cupti_get_stats(&st);
  CHECK(!st.active, "active after stop");
}

TL_TEST(takeover_suspends_and_resumes) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s", g_fake);
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  uint64_t t0 = cl_now();
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", cl_cupti_g.status);
  CHECK(cl_cupti_taken_after() == 0, "taken while recording");
  int *flushes = fake_int("fake_flushes");
  setenv("FAKE_BUSY", "1", 1);           /* Nsight Systems attaches */
  cl_cupti_g.next_probe = 0;
  int f0 = *flushes;
  uint64_t t1 = cl_now();
  cl_cupti_flush(0);
  CHECK(cl_cupti_g.state == CUPTI_SUSPENDED && *flushes == f0, "flushed another tool's session");
  /* it took CUPTI after the slot was last seen free: at the start here, no probe since */
  uint64_t ta = cl_cupti_taken_after();
  CHECK(ta >= t0 && ta <= t1, "taken after %llu, want in [%llu, %llu]", (unsigned long long)ta,
        (unsigned long long)t0, (unsigned long long)t1);
  CHECK(cl_cupti_stream_id(0x1230) == 0, "stream ids asked of CUPTI while another tool has it");
  cl_cupti_stats st; cl_cupti_get_stats(&st);
  CHECK(!st.active && strstr(st.status, "suspended"), "status %s", st.status);
  unsetenv("FAKE_BUSY");                 /* and ends */
  cl_cupti_g.next_probe = 0;
  cl_cupti_flush(0);
  CHECK(cl_cupti_g.state == CUPTI_ACTIVE && *flushes == f0 + 1, "not resumed");
  CHECK(cl_cupti_taken_after() == 0, "taken after resuming");
  CHECK(cl_cupti_stream_id(0x1230) == 0x124, "no stream ids after resuming");
  cl_cupti_stop();
}

/* A client that registers its own buffer callbacks (unseen by the slot probe). Once the join
 * sees our records gone (displaced), nothing of CUPTI's is touched until the backoff has passed:
 * no flush (it would go to the other client), no re-arm, no disable at exit (the kinds are
 * global: disabling CONCURRENT_KERNEL would stop the other client's kernel records). */
TL_TEST(displaced_leaves_cupti_alone) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s", g_fake);
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", cl_cupti_g.status);
  CHECK(cl_cupti_recording(), "not recording after start");
  int *flushes = fake_int("fake_flushes"), *reg = fake_int("fake_registered"), *dis = fake_int("fake_disabled");
  int f0 = *flushes, r0 = *reg, d0 = dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL];
  cl_cupti_displaced();
  CHECK(!cl_cupti_recording(), "still recording");
  CHECK(cl_cupti_stream_id(0x1230) == 0, "stream ids asked of CUPTI after displacement");
  CHECK(g_logs == 1 && strstr(g_last, "another client"), "message: %d '%s'", g_logs, g_last);
  cl_cupti_displaced();
  CHECK(g_logs == 1, "said twice");
  CHECK(cl_cupti_g.retry_at >= cl_now() + CL_CUPTI_RETRY_NS / 2, "no backoff before re-arming");
  cl_cupti_g.retry_at = UINT64_MAX;      /* within the backoff, however slow this machine is */
  for (int i = 0; i < 3; i++) { cl_cupti_g.next_probe = 0; cl_cupti_flush(i == 2); }
  CHECK(*flushes == f0 && *reg == r0, "touched CUPTI after displacement: flushes %d->%d registered %d->%d",
        f0, *flushes, r0, *reg);
  cl_cupti_stats st; cl_cupti_get_stats(&st);
  CHECK(!st.active && strstr(st.status, "displaced"), "status %s", st.status);
  cl_cupti_stop();
  CHECK(dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] == d0 && *flushes == f0, "stop disabled or flushed");
  cl_cupti_get_stats(&st);
  CHECK(strstr(st.status, "displaced"), "the reason is gone after stop: %s", st.status);
}

static void fake_other_tool(int what) {
  void *h = dlopen(g_fake, RTLD_NOW | RTLD_NOLOAD);
  void (*fn)(int) = h ? (void (*)(int))dlsym(h, "commlens_fake_cupti_other_tool") : NULL;
  if (fn) fn(what);
  if (h) dlclose(h);
}

/* Kernel records that reach us on one flush (the fake hands three per flush). */
static size_t records_now(void) {
  cl_gpu_activity a[16];
  cl_cupti_flush(0);
  size_t n = 0, k;
  while ((k = cl_cupti_drain(a, 16)) > 0)
    for (size_t i = 0; i < k; i++) n += a[i].kind == CL_GPU_KERNEL;
  return n;
}

/* torch.profiler with TEARDOWN_CUPTI=1, a window too short for the probe to see: it takes the
 * slot, registers its own callbacks, and finalizes CUPTI at its end (our callbacks and kinds
 * gone). Our records stop; the join says displaced; once the slot is free and the backoff has
 * passed, we arm again and records reach us again (they never did before: displaced was for
 * good). A window long enough to be seen: suspended, and resumed at once when it finalizes. */
TL_TEST(other_tool_lets_go_and_gpu_timing_resumes) {
  reset();
  REQUIRE(find_fake() == 0, "no stand-in libcupti at %s", g_fake);
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", cl_cupti_g.status);
  REQUIRE(records_now() == 3, "records before the other tool");
  int *other = fake_int("fake_other_records"), *reg = fake_int("fake_registered");
  REQUIRE(other && reg, "fake not loaded");
  int o0 = *other, r0 = *reg;
  fake_other_tool(1);                      /* its window opens between two probes */
  size_t ours = records_now();
  CHECK(ours == 0 && *other == o0 + 3, "kernel records went to us %zu, to it %d", ours, *other - o0);
  fake_other_tool(0);                      /* ... and closes: CUPTI finalized */
  CHECK(records_now() == 0, "records without callbacks");
  cl_cupti_displaced();                    /* the join: launches without records */
  REQUIRE(cl_cupti_g.state == CUPTI_DISPLACED, "state %d", cl_cupti_g.state);
  cl_cupti_g.next_probe = 0;
  CHECK(records_now() == 0 && *reg == r0, "re-armed within the backoff");
  cl_cupti_g.retry_at = 0;                 /* the backoff has passed */
  cl_cupti_g.next_probe = 0;
  size_t after = records_now();            /* the probe, the re-arm, then the flush */
  CHECK(cl_cupti_recording() && *reg == r0 + 1, "not resumed after the other tool let go: state %d, status %s",
        cl_cupti_g.state, cl_cupti_g.status);
  CHECK(after == 3, "%zu kernel records after resuming, want 3", after);
  CHECK(cl_cupti_stream_id(0x1230) == 0x124, "no stream ids after resuming");
  cl_cupti_stats st; cl_cupti_get_stats(&st);
  CHECK(st.active && st.resumed == 1 && strstr(st.status, "resumed"), "stats: active %d resumed %llu status %s",
        st.active, (unsigned long long)st.resumed, st.status);

  /* a longer window, seen by the probe: suspended; without teardown it keeps the slot (we stay
   * out), with teardown we resume at the next probe, no backoff */
  fake_other_tool(1);
  cl_cupti_g.next_probe = 0;
  cl_cupti_flush(0);
  CHECK(cl_cupti_g.state == CUPTI_SUSPENDED, "not suspended: %d", cl_cupti_g.state);
  fake_other_tool(2);                      /* its window ends, TEARDOWN_CUPTI unset */
  cl_cupti_g.next_probe = 0;
  cl_cupti_flush(0);
  CHECK(cl_cupti_g.state == CUPTI_SUSPENDED && *reg == r0 + 1, "took CUPTI from a tool that still holds it");
  fake_other_tool(0);                      /* it finalizes after all */
  cl_cupti_g.next_probe = 0;
  after = records_now();
  CHECK(cl_cupti_recording() && after == 3, "not resumed after a seen window: %s, %zu records", cl_cupti_g.status, after);
  cl_cupti_stop();
}

TL_MAIN("gpu/cupti")
